"""Client side of one ``/v1/audio/speech/stream`` session, as plain state (sans-I/O).

Two pairs of verbs carry everything, as in python-websockets:

- ``send_config()`` / ``send_text()`` / ``send_input_done()`` / ``send_close()`` queue
  frames; ``data_to_send()`` drains them — write each one as a text message.
- ``receive_text()`` / ``receive_bytes()`` / ``receive_eof()`` feed what arrived;
  ``events_received()`` returns the resulting events.

The connection never raises on peer input: a malformed frame becomes a
:class:`BadFrame` event and parsing goes on. Sends that the state forbids raise
:class:`InvalidState` (a caller bug). Works with servers that close after
``input.done`` and with servers that wait for ``session.close``: after
:class:`SessionDone`, call ``send_close()`` and write what it queues.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

from captioner.sansio import TableConnection
from captioner.tts.errors import InvalidState, ProtocolError
from captioner.tts.events import (
    AudioChunk,
    AudioDone,
    AudioStart,
    ClientEvent,
    InputDone,
    InputText,
    ServerEvent,
    SessionClose,
    SessionConfig,
    SessionDone,
    decode_server_event,
    encode,
)
from captioner.tts.text import split_text

log = logging.getLogger(__name__)


class State(enum.Enum):
    NEW = "new"  # send_config() first
    STREAMING = "streaming"  # config sent; send text, then input.done
    INPUT_DONE = "input_done"  # all text sent; audio is arriving
    DONE = "done"  # session.done received; send_close()
    CLOSED = "closed"  # session.close sent or the peer closed


# --- local events (not on the wire) -----------------------------------------


@dataclass(frozen=True, slots=True)
class BadFrame:
    """A frame that was not a valid event; it was skipped."""

    reason: str
    code: str = "invalid_event"


@dataclass(frozen=True, slots=True)
class StreamEnded:
    """The peer closed the stream; ``complete`` if ``session.done`` came first."""

    complete: bool


ReceivedEvent = ServerEvent | BadFrame | StreamEnded

# (state, what happened) → next state. Sends missing here raise InvalidState;
# receives missing here leave the state alone.
_TRANSITIONS: dict[tuple[State, str], State] = {
    (State.NEW, "send config"): State.STREAMING,
    (State.STREAMING, "send text"): State.STREAMING,
    (State.STREAMING, "send input.done"): State.INPUT_DONE,
    (State.STREAMING, "send close"): State.CLOSED,
    (State.INPUT_DONE, "send close"): State.CLOSED,
    (State.DONE, "send close"): State.CLOSED,
    (State.STREAMING, "recv session.done"): State.DONE,
    (State.INPUT_DONE, "recv session.done"): State.DONE,
    (State.NEW, "recv eof"): State.CLOSED,
    (State.STREAMING, "recv eof"): State.CLOSED,
    (State.INPUT_DONE, "recv eof"): State.CLOSED,
    (State.DONE, "recv eof"): State.CLOSED,
}


class ClientConnection(TableConnection[State, ReceivedEvent]):
    """One TTS session seen from the client."""

    def __init__(self, name: str = "tts") -> None:
        super().__init__(State.NEW, _TRANSITIONS, InvalidState,
                         logging.getLogger(f"{__name__}.{name}"))
        self._odd = b""  # half of a PCM16 sample split across frames
        self._sentence: int | None = None
        self._sentence_bytes = 0
        self.sample_rate: int | None = None
        self.session_done = False

    # --- sending ---------------------------------------------------------------

    def _queue(self, event: ClientEvent) -> None:
        frame = encode(event)
        if self._debug:
            self.log.debug("> %s", frame if len(frame) < 200 else frame[:200] + "…")
        self._outgoing.append(frame)

    def send_config(self, config: SessionConfig) -> None:
        """Queue ``session.config``; the server wants it within 10 s of connecting."""
        self._move("send config")
        self._queue(config)

    def send_text(self, text: str) -> None:
        """Queue ``text`` as one or more ``input.text`` messages (≤128 KiB each)."""
        self._move("send text")
        for piece in split_text(text):
            self._queue(InputText(piece))

    def send_input_done(self) -> None:
        """Queue ``input.done``: no more text; the server flushes its last sentence."""
        self._move("send input.done")
        self._queue(InputDone())

    def send_close(self) -> None:
        """Queue ``session.close``; then close the transport. Skipped once closed."""
        if self.state is State.CLOSED:
            return
        self._move("send close")
        self._queue(SessionClose())

    # --- receiving -------------------------------------------------------------

    def receive_text(self, frame: str) -> None:
        """Feed one text message; then call :meth:`events_received`."""
        if self._debug:
            self.log.debug("< %s", frame if len(frame) < 200 else frame[:200] + "…")
        try:
            event = decode_server_event(frame)
        except ProtocolError as exc:
            self.log.warning("! skipped a bad frame: %s", exc)
            self._events.append(BadFrame(str(exc), exc.code))
            return
        self._handle(event)

    def receive_bytes(self, data: bytes) -> None:
        """Feed one binary message (raw PCM s16le); then call :meth:`events_received`."""
        if self._debug:
            self.log.debug("< %d bytes of PCM", len(data))
        self._audio(bytes(data), self._sentence)

    def receive_eof(self) -> None:
        """The peer closed the stream; a :class:`StreamEnded` event follows."""
        if self._move("recv eof"):
            self._events.append(StreamEnded(complete=self.session_done))

    def _handle(self, event: ServerEvent) -> None:
        if isinstance(event, AudioChunk):
            index = event.sentence_index if event.sentence_index is not None else self._sentence
            self._audio(event.audio, index)
            return
        if isinstance(event, AudioStart):
            self._sentence, self._sentence_bytes = event.sentence_index, 0
            self.sample_rate = event.sample_rate
            if event.format != "pcm":
                self._events.append(BadFrame(f"unexpected audio format {event.format!r}"))
        elif isinstance(event, AudioDone):
            if not event.error and event.total_bytes and event.total_bytes != self._sentence_bytes:
                self.log.warning("! sentence %d: server sent %d bytes, we got %d",
                                 event.sentence_index, event.total_bytes, self._sentence_bytes)
            self._sentence = None
        elif isinstance(event, SessionDone):
            if not self._move("recv session.done"):
                self._events.append(BadFrame(f"session.done in state {self.state.value}"))
                return
            self.session_done = True
        self._events.append(event)

    def _audio(self, data: bytes, index: int | None) -> None:
        if self.state is State.CLOSED or not data:
            return
        self._sentence_bytes += len(data)
        data = self._odd + data
        cut = len(data) - len(data) % 2
        self._odd = data[cut:]
        if cut:
            self._events.append(AudioChunk(data[:cut], index))
