"""Speak typed replies through a vLLM-Omni (Qwen3-TTS) endpoint, else the computer's voice.

One reply at a time from a queue: open a transport (direct WebSocket or
SageMaker bidi — the :data:`Connector` decides), send ``session.config``, the
text and ``input.done``, and hand each PCM chunk to the :class:`AudioSink` as it
arrives, so playback starts on the first chunk. After ``session.done`` the
speaker sends ``session.close`` (servers that keep the session open wait for
it; the others have already closed) and waits for the audio to drain.

When the endpoint is missing, unreachable, silent for too long, or fails
mid-reply, the status says so in plain words and the part of the reply not yet
spoken goes to the :class:`LocalVoice`. When the audio output goes away the reply
ends at once, without that fallback (it would play on the same gone output).
Nothing here raises into the caller: every outcome is a :class:`ReplyResult` plus
status callbacks.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from captioner.audio.errors import AudioError
from captioner.transport.base import Connector, Transport, TransportError
from captioner.tts.errors import (
    EndpointUnavailable,
    GenerationFailed,
    IdleTimeout,
    LocalVoiceError,
    OutputGone,
    SpeechFailure,
    StreamBroken,
    TtsError,
)
from captioner.tts.events import (
    AudioChunk,
    AudioDone,
    AudioStart,
    Error,
    SessionConfig,
    SessionDone,
)
from captioner.tts.fallback import LocalVoice
from captioner.tts.protocol import BadFrame, ClientConnection, StreamEnded
from captioner.tts.sink import AudioSink

log = logging.getLogger(__name__)

Via = Literal["endpoint", "local", "none"]


class SpeakerState(enum.Enum):
    IDLE = "idle"
    CONNECTING = "connecting"
    SPEAKING = "speaking"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class SpeakerStatus:
    state: SpeakerState
    message: str  # a sentence for the user
    error: TtsError | None = None
    local_voice: bool = False  # speaking with the computer's voice


@dataclass(frozen=True, slots=True)
class SpokenReply:
    """A reply that started playing, for the transcript (typed by the user)."""

    text: str
    via: Via


@dataclass(frozen=True, slots=True)
class ReplyResult:
    text: str
    via: Via  # who spoke the end of it
    completed: bool  # the whole text was spoken
    cancelled: bool = False
    error: TtsError | None = None  # the first failure, if any
    sentences: int = 0  # sentences the endpoint finished
    pcm_bytes: int = 0  # endpoint audio received
    first_audio_at: float | None = None  # monotonic time of the first PCM byte


class _Progress:
    """How much of the reply the endpoint has finished, to hand the rest to the local voice."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.done_upto = 0  # offset after the last finished sentence
        self._current_end: int | None = None

    def sentence_started(self, sentence: str) -> None:
        needle = sentence.strip()
        pos = self.text.find(needle, self.done_upto) if needle else -1
        self._current_end = pos + len(needle) if pos >= 0 else None

    def sentence_finished(self) -> None:
        if self._current_end is not None:
            self.done_upto = self._current_end
        self._current_end = None

    def rest(self) -> str:
        return self.text[self.done_upto:].strip()


class Speaker:
    """Speaks replies one after another; observe it through ``on_status``/``on_spoken``."""

    def __init__(
        self,
        connector: Connector | None,
        sink: AudioSink | None,
        config: SessionConfig,
        *,
        local_voice: LocalVoice | None = None,
        on_status: Callable[[SpeakerStatus], None] | None = None,
        on_spoken: Callable[[SpokenReply], None] | None = None,
        connect_timeout: float = 10.0,
        idle_timeout: float = 30.0,
        close_timeout: float = 2.0,
    ) -> None:
        """``connector`` None means no endpoint: every reply goes to ``local_voice``.

        ``sink`` must already be open. ``idle_timeout``: give up when the server
        sends nothing for this long while a reply is under way.
        """
        self.connector = connector
        self.sink = sink
        self.config = config
        self.local_voice = local_voice
        self.on_status = on_status
        self.on_spoken = on_spoken
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self.close_timeout = close_timeout
        self._background: set[asyncio.Future[None]] = set()
        self.status = SpeakerStatus(SpeakerState.IDLE, "Ready.")
        self.results: list[ReplyResult] = []
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        self._current: asyncio.Task[ReplyResult] | None = None

    @property
    def state(self) -> SpeakerState:
        return self.status.state

    # --- queue -------------------------------------------------------------------

    def say(self, text: str) -> None:
        """Queue a reply; it is spoken after those before it. Needs a running loop."""
        if not text.strip():
            return
        self._queue.put_nowait(text)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._run_queue())

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    async def wait_idle(self) -> None:
        """Wait until every queued reply has been spoken (or dropped by ``stop``)."""
        await self._queue.join()

    def stop(self) -> None:
        """Stop the reply being spoken, mid-sentence, and drop the queue."""
        while not self._queue.empty():
            self._queue.get_nowait()
            self._queue.task_done()
        if self._current is not None and not self._current.done():
            self._current.cancel()
            self._cleanup_after_cancel()  # silence now; the stream closes in the background
            self._current = None

    async def aclose(self) -> None:
        self.stop()
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker

    async def _run_queue(self) -> None:
        while True:
            text = await self._queue.get()
            try:
                await self.speak(text)
            finally:
                self._queue.task_done()

    # --- one reply ---------------------------------------------------------------

    async def speak(self, text: str) -> ReplyResult:
        """Speak ``text`` now and return how it went; ``stop()`` cancels it."""
        task = asyncio.get_running_loop().create_task(self._speak(text.strip()))
        self._current = task
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            await asyncio.wait({task})
            raise
        finally:
            stopped = self._current is not task  # stop() already silenced it
            self._current = None
        if task.cancelled():
            if not stopped:
                self._cleanup_after_cancel()
            result = ReplyResult(text, via="none", completed=False, cancelled=True)
            self._set(SpeakerState.IDLE, "Stopped.")
        else:
            result = task.result()
        self.results.append(result)
        return result

    def _cleanup_after_cancel(self) -> None:
        if self.sink is not None:
            self.sink.cancel()
        if self.local_voice is not None:
            self.local_voice.stop()

    async def _speak(self, text: str) -> ReplyResult:
        if not text:
            return ReplyResult(text, via="none", completed=True)
        if self.connector is None:
            return await self._speak_local(text, text, None, "No voice endpoint is set up")
        progress = _Progress(text)
        stats = _EndpointStats()
        try:
            await self._speak_endpoint(text, progress, stats)
        except AudioError as exc:  # the stream is closed; the fallback would play nowhere
            return self._output_gone(text, "endpoint", exc, stats)
        except SpeechFailure as exc:
            log.warning("! %s", exc)
            self._set(SpeakerState.ERROR, str(exc), exc)
            if self.sink is not None and stats.started:
                self.sink.finish_reply()
                await self.sink.drained()
            rest = progress.rest()
            result = (await self._speak_local(text, rest, exc, str(exc),
                                              announce=not stats.started) if rest else None)
            if result is not None and isinstance(result.error, OutputGone):
                return result
            if result is not None:
                return ReplyResult(text, result.via, result.completed, error=exc,
                                   sentences=stats.sentences, pcm_bytes=stats.pcm_bytes,
                                   first_audio_at=stats.first_audio_at)
            return ReplyResult(text, "endpoint", completed=True, error=exc,
                               sentences=stats.sentences, pcm_bytes=stats.pcm_bytes,
                               first_audio_at=stats.first_audio_at)
        if self.sink is not None and stats.started:
            self.sink.finish_reply()
            await self.sink.drained()
        self._set(SpeakerState.IDLE, "Ready.")
        return ReplyResult(text, "endpoint", completed=True, sentences=stats.sentences,
                           pcm_bytes=stats.pcm_bytes, first_audio_at=stats.first_audio_at)

    async def _speak_local(self, text: str, rest: str, error: TtsError | None,
                           reason: str, *, announce: bool = True) -> ReplyResult:
        """Speak ``rest`` (all or the unspoken end of ``text``) with the local voice.

        ``announce``: report it through ``on_spoken`` (not when the endpoint already
        reported this reply)."""
        voice = self.local_voice
        if voice is None:
            failure = error or LocalVoiceError("No voice endpoint is set up and this computer "
                                               "has no voice to speak with.")
            message = (f"{reason} — and this computer has no voice to fall back on."
                       if error else str(failure))
            self._set(SpeakerState.ERROR, message, failure)
            return ReplyResult(text, "none", completed=False, error=failure)
        self._set(SpeakerState.SPEAKING, f"{reason}. Speaking with the computer's voice "
                  f"({voice.name}).", error, local_voice=True)

        def started() -> None:
            if announce:
                self._spoken(SpokenReply(rest, "local"))

        try:
            await voice.say(rest, on_start=started)  # a reply never said is not reported
        except LocalVoiceError as exc:
            self._set(SpeakerState.ERROR, f"The computer's voice failed: {exc}", exc)
            return ReplyResult(text, "local", completed=False, error=error or exc)
        except AudioError as exc:
            return self._output_gone(text, "local", exc, None)
        self._set(SpeakerState.IDLE, "Ready.", error)
        return ReplyResult(text, "local", completed=True, error=error)

    def _output_gone(self, text: str, via: Via, exc: AudioError,
                     stats: _EndpointStats | None) -> ReplyResult:
        """End the reply now: its output went away (the caller opens one again)."""
        log.warning("! reply stopped: %s", exc)
        gone = OutputGone(f"The reply stopped: {exc}.")
        self._set(SpeakerState.ERROR, str(gone), gone)
        stats = stats or _EndpointStats()
        return ReplyResult(text, via, completed=False, error=gone, sentences=stats.sentences,
                           pcm_bytes=stats.pcm_bytes, first_audio_at=stats.first_audio_at)

    async def _speak_endpoint(self, text: str, progress: _Progress,
                              stats: _EndpointStats) -> None:
        assert self.connector is not None
        self._set(SpeakerState.CONNECTING, "Connecting to the voice service…")
        try:
            transport = await asyncio.wait_for(self.connector(), self.connect_timeout)
        except TimeoutError as exc:
            raise EndpointUnavailable(
                f"The voice service did not answer within {self.connect_timeout:g} s") from exc
        except TransportError as exc:
            raise EndpointUnavailable(f"The voice service is unavailable: {exc}") from exc
        conn = ClientConnection()
        recv: asyncio.Future[str | bytes | None] | None = None
        try:
            conn.send_config(self.config)
            conn.send_text(text)
            conn.send_input_done()
            await self._flush(conn, transport)
            server_error = ""
            while True:
                recv = asyncio.ensure_future(transport.recv())
                # Never cancel a pending receive on a live stream (SageMaker): on
                # timeout the stream is abandoned and closed first.
                done, _ = await asyncio.wait({recv}, timeout=self.idle_timeout)
                if not done:
                    raise IdleTimeout(f"The voice service went silent for "
                                      f"{self.idle_timeout:g} s")
                try:
                    message = recv.result()
                except TransportError as exc:
                    raise StreamBroken(f"The voice service connection broke: {exc}") from exc
                recv = None
                if message is None:
                    conn.receive_eof()
                elif isinstance(message, str):
                    conn.receive_text(message)
                else:
                    conn.receive_bytes(message)
                for event in conn.events_received():
                    if isinstance(event, AudioChunk):
                        await self._audio(event.audio, conn, stats, text)
                    elif isinstance(event, AudioStart):
                        progress.sentence_started(event.sentence_text)
                        if stats.started and self.sink is not None:
                            self.sink.set_input_rate(event.sample_rate)
                    elif isinstance(event, AudioDone):
                        if event.error:
                            detail = f": {server_error}" if server_error else ""
                            raise GenerationFailed(
                                f"The voice service failed on sentence "
                                f"{event.sentence_index + 1}{detail}")
                        progress.sentence_finished()
                        stats.sentences += 1
                    elif isinstance(event, Error):
                        server_error = event.message
                        log.warning("! voice service: %s", event.message)
                    elif isinstance(event, BadFrame):
                        continue
                    elif isinstance(event, SessionDone):
                        conn.send_close()
                        with contextlib.suppress(TransportError):
                            await self._flush(conn, transport)
                        if server_error:  # e.g. an input.text it refused, then dropped
                            raise GenerationFailed(f"The voice service failed: {server_error}")
                        if not stats.pcm_bytes:  # the text was not empty: it went unsaid
                            progress.done_upto = 0  # sentences "done" silently: say them all
                            raise GenerationFailed("The voice service sent no audio for "
                                                   "the reply")
                        return
                    elif isinstance(event, StreamEnded):
                        detail = f" ({server_error})" if server_error else ""
                        raise StreamBroken(
                            f"The voice service ended the reply before finishing{detail}")
        except TransportError as exc:
            raise StreamBroken(f"The voice service connection broke: {exc}") from exc
        finally:
            await self._close(transport, recv)

    async def _close(self, transport: Transport,
                     recv: asyncio.Future[str | bytes | None] | None) -> None:
        """Close, reading and dropping what is still queued so the closing handshake can
        get through (a client that stopped reading mid-reply would otherwise wait for the
        transport's close timeout). Gives up after ``close_timeout``; never raises."""
        closing = asyncio.ensure_future(transport.close())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.close_timeout
        try:
            while not closing.done():
                if recv is None:
                    recv = asyncio.ensure_future(transport.recv())
                left = deadline - loop.time()
                if left <= 0:
                    break
                done, _ = await asyncio.wait({recv, closing}, timeout=left,
                                             return_when=asyncio.FIRST_COMPLETED)
                if recv in done:
                    finished = recv.cancelled() or recv.exception() is not None or (
                        recv.result() is None)
                    recv = None
                    if finished:
                        break
            left = max(0.0, deadline - loop.time())
            await asyncio.wait({closing}, timeout=left)
        finally:
            if recv is not None and not recv.done():
                recv.cancel()
            if not closing.done():
                self._background.add(closing)
                closing.add_done_callback(self._background.discard)

    async def _audio(self, pcm: bytes, conn: ClientConnection, stats: _EndpointStats,
                     text: str) -> None:
        if not stats.started:
            stats.started = True
            stats.first_audio_at = time.monotonic()
            if self.sink is not None:
                self.sink.start_reply(conn.sample_rate or self.default_rate)
            self._set(SpeakerState.SPEAKING, "Speaking.")
            self._spoken(SpokenReply(text, "endpoint"))
        stats.pcm_bytes += len(pcm)
        if self.sink is not None:
            await self.sink.write(pcm)

    default_rate = 24_000

    @staticmethod
    async def _flush(conn: ClientConnection, transport: Transport) -> None:
        for frame in conn.data_to_send():
            await transport.send_text(frame)

    # --- observers ---------------------------------------------------------------

    def _set(self, state: SpeakerState, message: str, error: TtsError | None = None,
             *, local_voice: bool = False) -> None:
        self.status = SpeakerStatus(state, message, error, local_voice)
        log.info("= %s: %s", state.value, message)
        if self.on_status is not None:
            try:
                self.on_status(self.status)
            except Exception:
                log.exception("! status observer failed")

    def _spoken(self, reply: SpokenReply) -> None:
        if self.on_spoken is not None:
            try:
                self.on_spoken(reply)
            except Exception:
                log.exception("! spoken-reply observer failed")


@dataclass
class _EndpointStats:
    started: bool = False
    sentences: int = 0
    pcm_bytes: int = 0
    first_audio_at: float | None = None
