"""Server side of one /v1/realtime connection, as plain state (sans-I/O).

The I/O layer (captioner.engine.server) feeds it frames and transcriber output
and carries out the actions it returns. The rules are those of docs/realtime-protocol.md:

- ``session.created`` on accept; text frames only;
- appends are queued even before the first commit;
- the first commit (after a valid ``session.update``) starts a request; later
  non-final commits while generating are ignored;
- ``final`` ends the audio: the server finishes, sends ``transcription.done``,
  and drops audio appended meanwhile; a later commit starts a fresh request.

Our extension: after each delta, and whenever it changes, the transcriber's
unconfirmed text follows as ``captioner.transcription.live`` (replacing the
previous one), so a reader sees words before they are confirmed.

Limits of our own (:class:`Limits`), so one client cannot exhaust the computer: a
frame larger than ``max_message_bytes`` and audio queued before a commit beyond
``max_queued_bytes`` get an ``error`` event (codes :data:`MESSAGE_TOO_LARGE`,
:data:`AUDIO_BUFFER_FULL`) and then :class:`Close`.
"""

from __future__ import annotations

import enum
import logging
import uuid
from collections.abc import Collection
from dataclasses import dataclass

from captioner.realtime.events import (
    AudioAppend,
    AudioCommit,
    ProtocolError,
    ServerError,
    ServerEvent,
    SessionCreated,
    SessionUpdate,
    TranscriptionDelta,
    TranscriptionDone,
    TranscriptionLive,
    Usage,
    decode_client_event,
)

log = logging.getLogger(__name__)

BYTES_PER_SECOND = 32_000  # 16 kHz × 2 bytes
TOKENS_PER_SECOND = 12.5  # Voxtral: one token per 80 ms frame

MESSAGE_TOO_LARGE = "message_too_large"
AUDIO_BUFFER_FULL = "audio_buffer_full"
CLOSE_TOO_BIG = 1009  # WebSocket close code "message too big"
CLOSE_POLICY = 1008  # WebSocket close code "policy violation"
MIB = 2**20


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-connection caps. A real-time client sends ~0.1–0.3 s of audio per frame and
    commits within seconds, so both defaults leave a wide margin."""

    max_message_bytes: int = MIB  # one text frame: ~24 s of audio in base64
    max_queued_bytes: int = 60 * BYTES_PER_SECOND  # audio appended before the first commit


DEFAULT_LIMITS = Limits()


class RequestState(enum.Enum):
    IDLE = "idle"  # no request; appends are queued
    GENERATING = "generating"  # request running; appends feed it
    FINISHING = "finishing"  # final commit seen; appends are dropped until done


# --- actions for the I/O layer ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Send:
    event: ServerEvent


@dataclass(frozen=True, slots=True)
class StartRequest:
    """Create a fresh transcriber (fresh context)."""


@dataclass(frozen=True, slots=True)
class Feed:
    pcm: bytes


@dataclass(frozen=True, slots=True)
class FinishRequest:
    """Flush the transcriber, then call :meth:`ServerConnection.finished`."""


@dataclass(frozen=True, slots=True)
class Close:
    """Close the connection with this WebSocket code and reason (after the sends before it)."""

    code: int
    reason: str


Action = Send | StartRequest | Feed | FinishRequest | Close


class ServerConnection:
    def __init__(self, models: Collection[str] | None = None, *, created: int = 0,
                 limits: Limits = DEFAULT_LIMITS) -> None:
        """``models``: ids accepted by ``session.update`` (None accepts any)."""
        self.models = set(models) if models is not None else None
        self.limits = limits
        self.closed = False
        self.session_id = f"sess-{uuid.uuid4().hex[:20]}"
        self.created = created
        self.model: str | None = None
        self.state = RequestState.IDLE
        self._queued: list[bytes] = []
        self._queued_bytes = 0
        self._text: list[str] = []
        self._live = ""  # unconfirmed text last sent for the running request
        self._audio_bytes = 0
        self.protocol_errors = 0
        self.final_without_request = 0  # a client bug: nothing was generating

    def accept(self) -> list[Action]:
        return [Send(SessionCreated(id=self.session_id, created=self.created))]

    def receive(self, frame: str | bytes) -> list[Action]:
        """One WebSocket frame in; actions out. Never raises on bad input."""
        if self.closed:
            return []
        if len(frame) > self.limits.max_message_bytes:
            return self._refuse(
                f"a frame of {len(frame):,} bytes exceeds this server's limit of "
                f"{self.limits.max_message_bytes:,} bytes; send audio in smaller appends",
                MESSAGE_TOO_LARGE, CLOSE_TOO_BIG)
        if isinstance(frame, bytes | bytearray):
            return self._error("binary frames are not supported; send JSON text", "invalid_json")
        try:
            event = decode_client_event(frame)
        except ProtocolError as exc:
            return self._error(str(exc), exc.code)
        if isinstance(event, SessionUpdate):
            return self._on_update(event)
        if isinstance(event, AudioAppend):
            return self._on_append(event.audio)
        return self._on_commit(event)

    def transcribed(self, text: str, live: str | None = None) -> list[Action]:
        """Text the transcriber committed for the current request, and (when it has
        one) its unconfirmed text after that: a delta, then the live text when it
        changed or a delta may have confirmed some of it."""
        if self.state is RequestState.IDLE:
            return []
        actions: list[Action] = []
        if text:
            self._text.append(text)
            actions.append(Send(TranscriptionDelta(delta=text)))
        if live is not None and (live != self._live or (text and live)):
            self._live = live
            actions.append(Send(TranscriptionLive(text=live)))
        return actions

    def finished(self, text: str = "") -> list[Action]:
        """The transcriber flushed after a final commit: close the request."""
        actions = self.transcribed(text)
        full = "".join(self._text)
        prompt = round(self._audio_bytes / BYTES_PER_SECOND * TOKENS_PER_SECOND)
        completion = len(full.split())
        actions.append(Send(TranscriptionDone(
            text=full,
            usage=Usage(prompt, completion, prompt + completion),
        )))
        self._set_state(RequestState.IDLE)
        self._text = []
        self._live = ""
        self._audio_bytes = 0
        return actions

    def failed(self, message: str) -> list[Action]:
        """The transcriber raised: report it and end the request."""
        self._text = []
        self._live = ""
        self._audio_bytes = 0
        self._set_state(RequestState.IDLE)
        return self._error(message, "processing_error")

    # --- event handlers --------------------------------------------------

    def _on_update(self, event: SessionUpdate) -> list[Action]:
        if self.models is not None and event.model not in self.models:
            return self._error(f"model {event.model!r} not found", "model_not_found")
        self.model = event.model
        log.debug("= model validated: %s", event.model)
        return []

    def _on_append(self, pcm: bytes) -> list[Action]:
        if self.state is RequestState.FINISHING:
            return []  # dropped, as vLLM does after a final commit
        if self.state is RequestState.IDLE:
            if self._queued_bytes + len(pcm) > self.limits.max_queued_bytes:
                return self._refuse(
                    f"more than {self.limits.max_queued_bytes / BYTES_PER_SECOND:g} s of audio "
                    "appended without a commit; commit to start transcribing",
                    AUDIO_BUFFER_FULL, CLOSE_POLICY)
            self._queued.append(pcm)
            self._queued_bytes += len(pcm)
            return []
        self._audio_bytes += len(pcm)
        return [Feed(pcm)]

    def _on_commit(self, event: AudioCommit) -> list[Action]:
        if self.model is None:
            return self._error("commit before a valid session.update", "model_not_validated")
        actions: list[Action] = []
        if event.final and self.state is RequestState.IDLE:
            self.final_without_request += 1
            log.warning("! final commit with no generation running")
        if self.state is RequestState.IDLE:
            actions.append(StartRequest())
            self._set_state(RequestState.GENERATING)
            queued, self._queued, self._queued_bytes = b"".join(self._queued), [], 0
            if queued:
                self._audio_bytes += len(queued)
                actions.append(Feed(queued))
        if event.final and self.state is RequestState.GENERATING:
            self._set_state(RequestState.FINISHING)
            actions.append(FinishRequest())
        return actions

    def _error(self, message: str, code: str) -> list[Action]:
        self.protocol_errors += 1
        log.info("! %s: %s", code, message)
        return [Send(ServerError(error=message, code=code))]

    def _refuse(self, message: str, code: str, close_code: int) -> list[Action]:
        """A limit was crossed: say why, then close; later frames are ignored."""
        self.closed = True
        self._queued, self._queued_bytes = [], 0
        return [*self._error(message, code), Close(close_code, code)]

    def _set_state(self, state: RequestState) -> None:
        if state is not self.state:
            log.debug("= request %s → %s", self.state.value, state.value)
            self.state = state
