"""A caption session: audio in, Realtime events over any transport, caption lines out.

Transport-agnostic, so the embedded engine, a WebSocket and SageMaker all get:
- reconnection with capped, jittered backoff, replaying the audio captured
  during the outage (bounded; beyond it a visible gap line);
- a stall watchdog (speech flowing, no text for N s → restart the request);
- rotation before the server's context limit, cut at a pause, with no word lost
  or repeated at the seam (``SeamMerger`` removes the words a replay repeats).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from captioner.realtime.captions import CaptionModel, CaptionUpdate
from captioner.realtime.events import (
    AudioAppend,
    AudioCommit,
    ProtocolError,
    ServerError,
    SessionCreated,
    SessionUpdate,
    TranscriptionDelta,
    TranscriptionDone,
    decode_server_event,
    encode,
)
from captioner.session.audio_log import BYTES_PER_SECOND, AudioLog, seconds
from captioner.session.seam import SeamMerger
from captioner.transport.base import ConnectionLost, Connector, Transport, TransportError

log = logging.getLogger(__name__)

SPEECH_RMS = 0.01  # ≈ -40 dBFS: above it a chunk counts as sound for the stall watchdog
PAUSE_RMS = 0.006
FATAL_SERVER_CODES = {"model_not_found", "model_not_validated", "invalid_event", "unknown_event"}


class SessionState(enum.Enum):
    CONNECTING = "connecting"
    LIVE = "live"
    RECONNECTING = "reconnecting"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class SessionStatus:
    state: SessionState
    detail: str = ""
    retry_in: float | None = None

    def __str__(self) -> str:
        text = self.state.value
        if self.retry_in is not None:
            text += f" in {self.retry_in:.0f} s"
        return f"{text}: {self.detail}" if self.detail else text


@dataclass
class SessionOptions:
    model: str
    chunk_bytes: int = 4096
    rotate_after_seconds: float = 45 * 60.0
    rotate_grace_seconds: float = 60.0  # after that, rotate even without a pause
    pause_seconds: float = 0.3  # quiet this long = a safe place to cut
    stall_seconds: float = 15.0
    outage_buffer_seconds: float = 60.0
    overlap_seconds: float = 3.0  # replayed before a resume point so no word in flight is lost
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    done_timeout: float = 10.0
    fail_fast: bool = False  # the first connection failing raises instead of retrying


@dataclass
class SessionStats:
    audio_seconds: float = 0.0
    protocol_errors: int = 0
    server_errors: int = 0
    reconnects: int = 0
    rotations: int = 0
    stalls: int = 0
    gap_seconds: float = 0.0
    repeated_words_dropped: int = 0
    dropped_frames: int = 0  # filled in by the capture side

    def summary(self) -> str:
        return ", ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in vars(self).items())


class SessionFailed(Exception):
    """The session cannot go on (bad credentials, unknown model, refused endpoint)."""


class _Restart(Exception):
    """Internal: end this request and resume from the audio log."""


@dataclass
class _Request:
    start: int  # audio offset where this request's audio begins
    seam: SeamMerger | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)


class CaptionSession:
    def __init__(
        self,
        connector: Connector,
        options: SessionOptions,
        *,
        captions: CaptionModel | None = None,
        on_update: Callable[[CaptionUpdate], None] | None = None,
        on_status: Callable[[SessionStatus], None] | None = None,
        sleep: Callable[[float], object] = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.connector = connector
        self.options = options
        self.captions = captions or CaptionModel()
        self.on_update = on_update
        self.on_status = on_status
        self._sleep = sleep
        self._jitter = jitter
        self.stats = SessionStats()
        self.status = SessionStatus(SessionState.CONNECTING)
        keep = options.outage_buffer_seconds + options.overlap_seconds
        self.audio = AudioLog(keep)
        self._audio_changed = asyncio.Event()
        self._audio_ended = False
        self._sent = 0
        self._request: _Request | None = None
        self._words: list[tuple[str, int]] = []  # recent words shown, with arrival offset
        self._last_text_at = 0  # audio offset when the last non-empty delta arrived
        self._sound_since_text = 0  # bytes of audio above SPEECH_RMS since then
        self._rotate_due_at = int(options.rotate_after_seconds * BYTES_PER_SECOND)
        self._fresh_from = 0  # replayed audio before this offset was sent once already
        self._quiet = 0  # bytes of quiet audio just sent: a pause ends the caption line
        self._stop = asyncio.Event()

    # --- public -----------------------------------------------------------

    async def run(self, audio: AsyncIterator[bytes]) -> CaptionModel:
        """Caption ``audio`` until it ends or :meth:`stop`; returns the captions."""
        pump = asyncio.create_task(self._pump(audio))
        try:
            await self._connection_loop()
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
            self._emit(self.captions.flush())
            log.info("= session ended: %s", self.stats.summary())
        return self.captions

    def stop(self) -> None:
        """Graceful stop: send what is captured, final commit, wait for the last text."""
        self._stop.set()
        self._audio_ended = True
        self._audio_changed.set()

    # --- audio side -------------------------------------------------------

    async def _pump(self, audio: AsyncIterator[bytes]) -> None:
        try:
            async for chunk in audio:
                if self._stop.is_set():
                    break
                self.audio.append(chunk)
                self.stats.audio_seconds = seconds(self.audio.end)
                self._audio_changed.set()
        finally:
            self._audio_ended = True
            self._audio_changed.set()

    # --- connection side --------------------------------------------------

    async def _connection_loop(self) -> None:
        attempt = 0
        resume: int | None = None  # None: first connection
        while True:
            self._set_status(SessionState.CONNECTING if resume is None and attempt == 0
                             else SessionState.RECONNECTING)
            try:
                transport = await self.connector()
            except TransportError as exc:
                if not exc.retryable or (self.options.fail_fast and resume is None):
                    self._set_status(SessionState.FAILED, str(exc))
                    raise SessionFailed(str(exc)) from exc
                if self._stop.is_set():
                    self._set_status(SessionState.STOPPED, f"stopped while offline: {exc}")
                    return
                attempt += 1
                await self._backoff(attempt, str(exc))
                continue
            try:
                finished = await self._serve(transport, resume)
            except SessionFailed as exc:
                self._set_status(SessionState.FAILED, str(exc))
                raise
            except _Restart as exc:
                finished = False
                log.warning("! restarting the request: %s", exc)
                self._set_status(SessionState.RECONNECTING, str(exc))
            except TransportError as exc:
                finished = False
                if not exc.retryable:
                    self._set_status(SessionState.FAILED, str(exc))
                    raise SessionFailed(str(exc)) from exc
                log.warning("! connection lost: %s", exc)
                self._set_status(SessionState.RECONNECTING, str(exc))
            finally:
                await transport.close()
            if finished:
                self._set_status(SessionState.STOPPED)
                return
            self.stats.reconnects += 1
            resume = self._resume_point()
            attempt = 1
            await self._backoff(attempt, self.status.detail, first_delay=0.0)

    async def _backoff(self, attempt: int, reason: str, first_delay: float | None = None) -> None:
        if first_delay is not None:
            delay = first_delay
        else:
            growth = 2 ** min(attempt - 1, 20)
            cap = min(self.options.backoff_max, self.options.backoff_initial * growth)
            delay = cap * (0.5 + 0.5 * self._jitter())
        self._set_status(SessionState.RECONNECTING, reason, retry_in=delay)
        if delay > 0:
            await self._sleep(delay)

    async def _serve(self, transport: Transport, resume: int | None) -> bool:
        """One connection: returns True after a clean final, raises to reconnect."""
        await transport.send_text(encode(SessionUpdate(model=self.options.model)))
        if resume is not None:
            self._begin_request(resume, replay=True)
        else:
            self._begin_request(self._sent, replay=False)
        await transport.send_text(encode(AudioCommit()))
        receiver = asyncio.create_task(self._receive(transport))
        sender = asyncio.create_task(self._send(transport))
        try:
            done, _ = await asyncio.wait({receiver, sender}, return_when=asyncio.FIRST_COMPLETED)
            if receiver in done and not sender.done():
                receiver.result()  # raises the reason the receiver stopped
                raise ConnectionLost("the server closed the stream")
            return sender.result()
        finally:
            for task in (receiver, sender):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    def _begin_request(self, start: int, *, replay: bool) -> None:
        seam = None
        if replay:
            if start < self.audio.base:  # the outage outlasted the buffer
                lost_from = max(start, self._sent)
                if self.audio.base > lost_from:
                    self.stats.gap_seconds += seconds(self.audio.base - lost_from)
                    self._emit(self.captions.gap(seconds(lost_from), seconds(self.audio.base)))
                start = self.audio.base
            if start < self._sent:
                seam = SeamMerger([w for w, at in self._words if at >= start - 2 * 6400])
            self.captions.new_request()
        fresh_audio_from = max(start, self._sent)  # a replay's overlap doesn't count
        self._fresh_from = fresh_audio_from
        self._sent = start
        self._request = _Request(start=start, seam=seam)
        self._rotate_due_at = fresh_audio_from + int(
            self.options.rotate_after_seconds * BYTES_PER_SECOND
        )
        self._last_text_at = start
        self._sound_since_text = 0

    def _resume_point(self) -> int:
        """Where the next request starts: before any audio whose words may be in flight."""
        overlap = int(self.options.overlap_seconds * BYTES_PER_SECOND)
        target = max(0, min(self._sent - overlap, self._last_text_at - overlap // 2))
        floor = self._request.start if self._request else 0
        target = max(target, floor)
        window = 10 * 640  # cut at the quietest 20 ms in the 200 ms before the target
        return self.audio.quietest(max(floor, target - window), target + 640)

    async def _send(self, transport: Transport) -> bool:
        opts = self.options
        while True:
            if self._sent < self.audio.end:
                chunk = self.audio.read(self._sent, opts.chunk_bytes)
                await transport.send_text(encode(AudioAppend(chunk)))
                self._after_send(chunk)
                if self._sent >= self._rotate_due_at and self._safe_to_cut():
                    await self._rotate(transport)
                continue
            if self._audio_ended:
                return await self._finish(transport)
            self._audio_changed.clear()
            await self._audio_changed.wait()

    def _after_send(self, chunk: bytes) -> None:
        start = self._sent
        self._sent += len(chunk)
        level = self.audio.rms(start, self._sent)
        self._quiet = self._quiet + len(chunk) if level < PAUSE_RMS else 0
        if start >= self._fresh_from and level >= SPEECH_RMS:
            self._sound_since_text += len(chunk)
        if seconds(self._sound_since_text) >= self.options.stall_seconds:
            self.stats.stalls += 1
            raise _Restart(f"no text for {self.options.stall_seconds:.0f} s of sound")
        self._emit(self.captions.tick(seconds(self._sent), seconds(self._quiet)))
        request = self._request
        held_too_long = int((self.options.overlap_seconds + 3) * BYTES_PER_SECOND)
        if request and request.seam and not request.seam.done and (
            self._sent - request.start > held_too_long
        ):
            self._show(request.seam.release())

    def _safe_to_cut(self) -> bool:
        grace = int(self.options.rotate_grace_seconds * BYTES_PER_SECOND)
        if self._sent >= self._rotate_due_at + grace:
            return True
        quiet = int(self.options.pause_seconds * BYTES_PER_SECOND)
        return self.audio.rms(self._sent - quiet, self._sent) < PAUSE_RMS

    async def _rotate(self, transport: Transport) -> None:
        """Close this request at a pause and start a fresh one, on the same connection."""
        assert self._request is not None
        cut = self._sent
        at_pause = self.audio.rms(cut - int(self.options.pause_seconds * BYTES_PER_SECOND),
                                  cut) < PAUSE_RMS
        await transport.send_text(encode(AudioCommit(final=True)))
        try:
            await asyncio.wait_for(self._request.done.wait(), self.options.done_timeout)
        except TimeoutError as exc:
            raise _Restart("the server did not finish the request for rotation") from exc
        self.stats.rotations += 1
        log.info("= rotated the request at %.1f s (%s)", seconds(cut),
                 "pause" if at_pause else "forced, with overlap")
        if at_pause:
            self._begin_request(cut, replay=False)
            self.captions.new_request()
        else:
            self._begin_request(self._resume_point_for_rotation(cut), replay=True)
        await transport.send_text(encode(AudioCommit()))

    def _resume_point_for_rotation(self, cut: int) -> int:
        overlap = int(self.options.overlap_seconds * BYTES_PER_SECOND)
        target = max(self.audio.base, cut - overlap)
        return self.audio.quietest(max(self.audio.base, target - 6400), target + 640)

    async def _finish(self, transport: Transport) -> bool:
        self._set_status(SessionState.STOPPING)
        assert self._request is not None
        await transport.send_text(encode(AudioCommit(final=True)))
        try:
            await asyncio.wait_for(self._request.done.wait(), self.options.done_timeout)
        except TimeoutError:
            log.warning("! no transcription.done within %.0f s; stopping anyway",
                        self.options.done_timeout)
        return True

    async def _receive(self, transport: Transport) -> None:
        while True:
            frame = await transport.recv()
            if frame is None:
                return
            try:
                event = decode_server_event(frame)
            except ProtocolError as exc:
                self.stats.protocol_errors += 1
                log.warning("! bad event from server (%s): %.200r", exc.code, frame)
                continue
            self._on_event(event)

    def _on_event(self, event: object) -> None:
        request = self._request
        if isinstance(event, TranscriptionDelta):
            if request is None:
                return
            text = event.delta
            if text.strip():  # the server is alive, even if the seam holds this text back
                self._last_text_at = self._sent
                self._sound_since_text = 0
            if request.seam is not None:
                text = request.seam.feed(text)
                self.stats.repeated_words_dropped = request.seam.dropped
            self._show(text)
        elif isinstance(event, TranscriptionDone):
            if request is not None:
                if request.seam is not None:
                    self._show(request.seam.release())
                request.done.set()
        elif isinstance(event, SessionCreated):
            log.debug("< session.created %s", event.id)
            self._set_status(SessionState.LIVE)
        elif isinstance(event, ServerError):
            self.stats.server_errors += 1
            log.warning("! server error %s: %s", event.code, event.error)
            if event.code in FATAL_SERVER_CODES:
                raise SessionFailed(f"the server refused the session: {event.error}")
            if event.code == "processing_error":
                raise _Restart(f"server processing error: {event.error}")

    def _show(self, text: str) -> None:
        if not text:
            return
        if text.strip():
            for word in text.split():
                self._words.append((word, self._sent))
            del self._words[:-64]
        self._emit(self.captions.add_text(text, seconds(self._sent)))

    def _emit(self, update: CaptionUpdate) -> None:
        if self.on_update is not None and (update.finalized or update.live is not None):
            self.on_update(update)

    def _set_status(self, state: SessionState, detail: str = "",
                    retry_in: float | None = None) -> None:
        status = SessionStatus(state, detail, retry_in)
        if status != self.status:
            log.info("= %s", status)
            self.status = status
            if self.on_status is not None:
                self.on_status(status)
