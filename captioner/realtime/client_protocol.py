"""Client side of one ``/v1/realtime`` connection, as plain state (sans-I/O).

Two pairs of verbs carry everything, as in python-websockets:

- ``send_session_update()`` / ``send_audio()`` / ``send_commit()`` queue frames;
  ``data_to_send()`` drains them — write each one as a text message, in order.
- ``receive_text()`` / ``receive_eof()`` feed what arrived; ``events_received()``
  returns the resulting events.

The connection never raises on the peer's input: a malformed frame becomes a
:class:`BadFrame` event, text the audio could not have carried becomes
:class:`RejectedText` (and the rest of that request's text is withheld), and
parsing goes on. Live (unconfirmed) text, our local server's extension
(:class:`~captioner.realtime.events.TranscriptionLive`), is held to the same budget;
impossible live text is a :class:`BadFrame` followed by an empty live event that
clears it, and the request goes on. Sends that the state forbids raise :class:`InvalidState` (a bug
in the driver), e.g. a final commit with no generation running, or audio after a
final commit (the server would discard it).

Audio is counted per request in samples, so a driver can tell how much audio a
request has consumed (:attr:`ClientConnection.request_seconds`).
"""

from __future__ import annotations

import enum
import logging
import re
from dataclasses import dataclass

from captioner.realtime.errors import InvalidRequest, InvalidState, ProtocolError
from captioner.realtime.events import (
    AudioAppend,
    AudioCommit,
    ClientEvent,
    ServerError,
    ServerEvent,
    SessionCreated,
    SessionUpdate,
    TranscriptionDelta,
    TranscriptionDone,
    TranscriptionLive,
    decode_server_event,
    encode,
)
from captioner.sansio import TableConnection

log = logging.getLogger(__name__)

SAMPLE_RATE = 16_000
BYTES_PER_SAMPLE = 2
TOKENS_PER_SECOND = 12.5  # Voxtral: one token per 80 ms frame of audio
MAX_CHARS_PER_TOKEN = 12  # generous: English tokens average about 4 characters
TEXT_ALLOWANCE_CHARS = 200  # what a request may say before its audio "pays" for it
FATAL_CODES = frozenset({"model_not_found", "model_not_validated"})
IMPOSSIBLE_LIVE_TEXT = "impossible_live_text"  # BadFrame code: live text over the budget
_MODEL_LENGTH = re.compile(r"maximum (?:model|context) length (?:of |is )?(\d+)", re.I)
_PROMPT_LENGTH = re.compile(r"\(length (\d+)\)|prompt length (?:of )?(\d+)", re.I)


class State(enum.Enum):
    NEW = "new"  # send_session_update() first
    IDLE = "idle"  # no request: appended audio waits; send_commit() starts a request
    GENERATING = "generating"  # a request runs on the audio; send_commit(final=True) ends it
    FINISHING = "finishing"  # final commit sent: wait for transcription.done
    CLOSED = "closed"  # we closed, or the peer did


# (state, what happened) → next state. Sends missing here raise InvalidState;
# receives missing here leave the state alone.
_TRANSITIONS: dict[tuple[State, str], State] = {
    (State.NEW, "send session.update"): State.IDLE,
    (State.IDLE, "send audio"): State.IDLE,
    (State.GENERATING, "send audio"): State.GENERATING,
    (State.IDLE, "send commit"): State.GENERATING,
    (State.GENERATING, "send final commit"): State.FINISHING,
    (State.GENERATING, "recv done"): State.IDLE,
    (State.FINISHING, "recv done"): State.IDLE,
    (State.GENERATING, "recv request error"): State.IDLE,
    (State.FINISHING, "recv request error"): State.IDLE,
    **{(s, "recv eof"): State.CLOSED for s in State if s is not State.CLOSED},
    **{(s, "send close"): State.CLOSED for s in State if s is not State.CLOSED},
}


# --- local events (not on the wire) -------------------------------------------


@dataclass(frozen=True, slots=True)
class BadFrame:
    """A frame that was not a valid event; it was skipped."""

    reason: str
    code: str = "invalid_event"


@dataclass(frozen=True, slots=True)
class RejectedText:
    """A delta that could not be true (e.g. 64 KiB of text for a few seconds of audio).

    It was not passed on, nor is any later text of the same request: the request's
    output can no longer be trusted, so the driver should start it again.
    """

    reason: str
    chars: int


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """The server ended the running request with ``processing_error``.

    ``max_model_len`` (tokens) is set when the error says the context limit was hit.
    """

    message: str
    max_model_len: int | None = None
    prompt_tokens: int | None = None

    @property
    def context_limit(self) -> bool:
        return self.max_model_len is not None


@dataclass(frozen=True, slots=True)
class Refused:
    """The server refused the session (unknown model…); retrying cannot help."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class RequestEnded:
    """The server ended the running request without a final commit (vLLM's generation
    loop sends ``transcription.done`` whenever it stops, e.g. at its token limit). Audio
    sent since no longer goes to any request: the driver should start it again."""


@dataclass(frozen=True, slots=True)
class StreamEnded:
    """The peer closed the stream; ``idle`` if no request was running."""

    idle: bool


ReceivedEvent = (SessionCreated | TranscriptionDelta | TranscriptionLive | TranscriptionDone
                 | ServerError | BadFrame | RejectedText | RequestFailed | Refused
                 | RequestEnded | StreamEnded)


def text_budget(audio_seconds: float) -> int:
    """Most characters a request can produce from ``audio_seconds`` of audio."""
    return TEXT_ALLOWANCE_CHARS + int(audio_seconds * TOKENS_PER_SECOND * MAX_CHARS_PER_TOKEN)


def parse_context_limit(message: str) -> tuple[int | None, int | None]:
    """(max model length, prompt length) named in a context-limit error, else Nones."""
    limit = _MODEL_LENGTH.search(message)
    if limit is None:
        return None, None
    prompt = _PROMPT_LENGTH.search(message)
    length = next((int(g) for g in prompt.groups() if g), None) if prompt else None
    return int(limit.group(1)), length


class ClientConnection(TableConnection[State, ReceivedEvent]):
    """One Realtime connection seen from the client."""

    def __init__(self, name: str = "realtime") -> None:
        super().__init__(State.NEW, _TRANSITIONS, InvalidState,
                         logging.getLogger(f"{__name__}.{name}"))
        self.request_samples = 0  # audio appended for the running (or next) request
        self.request_chars = 0  # text received in the running request
        self._withholding = False  # this request produced impossible text
        self.rejected_texts = 0
        self.bad_frames = 0

    @property
    def request_seconds(self) -> float:
        return self.request_samples / SAMPLE_RATE

    @property
    def generating(self) -> bool:
        return self.state is State.GENERATING

    def _new_request(self) -> None:
        self.request_samples = 0
        self.request_chars = 0
        self._withholding = False

    # --- sending ---------------------------------------------------------------

    def _queue(self, event: ClientEvent) -> None:
        frame = encode(event)
        if self._debug and not isinstance(event, AudioAppend):
            self.log.debug("> %s", frame)
        self._outgoing.append(frame)

    def send_session_update(self, model: str) -> None:
        """Queue ``session.update`` naming the model; required before any commit."""
        if not isinstance(model, str) or not model:
            raise InvalidRequest("session.update needs a non-empty model id")
        self._move("send session.update")
        self._queue(SessionUpdate(model=model))

    def send_audio(self, pcm: bytes) -> None:
        """Queue PCM16 mono 16 kHz audio. Before a commit the server keeps it for the
        next request; after a final commit it would be discarded, so that raises."""
        if len(pcm) % BYTES_PER_SAMPLE:
            raise InvalidRequest("PCM16 audio must have an even byte count")
        self._move("send audio")
        self.request_samples += len(pcm) // BYTES_PER_SAMPLE
        self._queue(AudioAppend(bytes(pcm)))

    def send_commit(self, *, final: bool = False) -> None:
        """Queue a commit: the first starts a request (with the audio queued so far);
        ``final`` ends it — then wait for :class:`TranscriptionDone` before more audio."""
        if final:
            self._move("send final commit")
            self.log.debug("= final commit after %.2f s of request audio", self.request_seconds)
        else:
            queued = self.request_samples
            self._move("send commit")
            self._new_request()
            self.request_samples = queued
        self._queue(AudioCommit(final=final))

    def send_close(self) -> None:
        """We are closing the transport; nothing more may be sent."""
        if self.state is not State.CLOSED:
            self._move("send close")

    # --- receiving ---------------------------------------------------------------

    def receive_text(self, frame: str | bytes) -> None:
        """Feed one message; then call :meth:`events_received`."""
        if self._debug:
            self.log.debug("< %.200s", frame)
        try:
            event = decode_server_event(frame)
        except ProtocolError as exc:
            self._bad(str(exc), exc.code)
            return
        self._handle(event)

    def receive_eof(self) -> None:
        """The peer closed the stream; a :class:`StreamEnded` event follows."""
        idle = self.state in (State.NEW, State.IDLE)
        if self._move("recv eof"):
            self._events.append(StreamEnded(idle=idle))

    def _bad(self, reason: str, code: str) -> None:
        self.bad_frames += 1
        self.log.warning("! skipped a bad frame (%s): %s", code, reason)
        self._events.append(BadFrame(reason, code))

    def _handle(self, event: ServerEvent) -> None:
        if isinstance(event, TranscriptionDelta):
            self._delta(event)
        elif isinstance(event, TranscriptionLive):
            self._live(event)
        elif isinstance(event, TranscriptionDone):
            asked = self.state is State.FINISHING
            if not self._move("recv done"):
                self._bad(f"transcription.done with no request ({self.state.value})",
                          "unexpected_event")
                return
            if self._withholding:
                event = TranscriptionDone(text="", usage=event.usage)
            self._events.append(event)
            if not asked:
                self.log.warning("! the server ended the request without a final commit")
                self._events.append(RequestEnded())
        elif isinstance(event, ServerError):
            self._error(event)
        else:
            self._events.append(event)

    def _delta(self, event: TranscriptionDelta) -> None:
        if self.state not in (State.GENERATING, State.FINISHING):
            self._bad(f"transcription.delta with no request ({self.state.value})",
                      "unexpected_event")
            return
        if self._withholding:
            return
        chars = self.request_chars + len(event.delta)
        budget = text_budget(self.request_seconds)
        if chars > budget:
            self._withholding = True
            self.rejected_texts += 1
            reason = (f"{len(event.delta)} characters in one delta make {chars} for "
                      f"{self.request_seconds:.1f} s of audio (at most {budget})")
            self.log.warning("! rejected impossible text: %s", reason)
            self._events.append(RejectedText(reason, len(event.delta)))
            return
        self.request_chars = chars
        self._events.append(event)

    def _live(self, event: TranscriptionLive) -> None:
        """Unconfirmed text (our server's extension): bounded like deltas, never counted.

        The same budget applies to the confirmed text plus this one, since both come
        from the request's audio. Impossible live text is skipped as a bad frame and
        clears what was shown (the confirmed text stays trustworthy, so the request
        goes on).
        """
        if self.state not in (State.GENERATING, State.FINISHING):
            self._bad(f"{event.type} with no request ({self.state.value})", "unexpected_event")
            return
        if self._withholding:
            return
        budget = text_budget(self.request_seconds)
        if self.request_chars + len(event.text) > budget:
            self._bad(f"{len(event.text)} characters of live text after {self.request_chars} "
                      f"for {self.request_seconds:.1f} s of audio (at most {budget})",
                      IMPOSSIBLE_LIVE_TEXT)
            self._events.append(TranscriptionLive(""))
            return
        self._events.append(event)

    def _error(self, event: ServerError) -> None:
        code = event.code or ""
        if code in FATAL_CODES:
            self.log.warning("! refused (%s): %s", code, event.error)
            self._events.append(Refused(code, event.error))
            return
        if code == "processing_error":
            limit, prompt = parse_context_limit(event.error)
            if self._move("recv request error"):
                self.log.warning("! request failed: %s", event.error)
                self._events.append(RequestFailed(event.error, limit, prompt))
                return
        self.log.warning("! server error (%s): %s", code or "no code", event.error)
        self._events.append(event)
