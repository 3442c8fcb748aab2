"""A caption session: audio in, Realtime events over any transport, caption lines out.

The asyncio driver around :class:`~captioner.realtime.client_protocol.ClientConnection`
(what may be sent when, what the server's frames mean) and
:mod:`captioner.session.policy` (when to retry, rotate, call a stall, where to resume).
It only moves data: audio from the capture into the audio log and out to the
transport, frames from the transport into the protocol, events into captions.

Each connection ends with one :data:`Outcome`, set once by whichever side saw it
first (the sender: end of audio, a stall; the receiver: an error, impossible text,
the stream closing; either: a broken transport). Transport-agnostic, so the
embedded engine, a WebSocket and SageMaker all get the same recovery.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from captioner.realtime.captions import CaptionModel, CaptionUpdate
from captioner.realtime.client_protocol import (
    BadFrame,
    ClientConnection,
    ReceivedEvent,
    Refused,
    RejectedText,
    RequestEnded,
    RequestFailed,
    StreamEnded,
)
from captioner.realtime.events import (
    ServerError,
    SessionCreated,
    TranscriptionDelta,
    TranscriptionDone,
    TranscriptionLive,
)
from captioner.session import policy
from captioner.session.audio_log import AudioLog, seconds, to_bytes
from captioner.session.errors import SessionFailed
from captioner.session.seam import Seam, WordTimeline
from captioner.transport.base import Connector, Transport, TransportError

log = logging.getLogger(__name__)

FATAL_SERVER_CODES = frozenset({"invalid_event", "unknown_event"})  # we speak another dialect
SEAM_HOLD_SECONDS = 5.0  # of live audio after a restart: show what the seam still holds
BACKLOG_SECONDS = 0.5  # audio waiting beyond this = catching up, not live (no stall count)
HEALTHY_CONNECTION_SECONDS = 5.0  # a connection that lasted this long was no failure


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
    rotate_grace_seconds: float = 60.0  # once due, wait this long for a pause
    pause_seconds: float = 0.3  # quiet this long = a safe place to cut
    stall_seconds: float = policy.STALL_SPEECH_SECONDS
    outage_buffer_seconds: float = 60.0
    backoff_initial: float = policy.BACKOFF_INITIAL_SECONDS
    backoff_max: float = policy.BACKOFF_MAX_SECONDS
    done_timeout: float = 10.0  # s without a word from the server before giving up on it
    finish_limit: float = 60.0  # s at most that Stop or a rotation waits for the last words
    fail_fast: bool = False  # first connection: fail unless the endpoint is just starting
    max_model_len: int | None = None  # the server's context in tokens, when known


@dataclass
class SessionStats:
    audio_seconds: float = 0.0
    protocol_errors: int = 0
    rejected_texts: int = 0
    server_errors: int = 0
    context_limits: int = 0
    reconnects: int = 0
    rotations: int = 0
    stalls: int = 0
    gap_seconds: float = 0.0
    repeated_words_dropped: int = 0
    dropped_frames: int = 0  # filled in by the capture side

    def summary(self) -> str:
        return ", ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in vars(self).items())


# --- how one connection ended -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Finished:
    """All audio was transcribed and the last request closed."""


@dataclass(frozen=True, slots=True)
class Restart:
    """Start the request again on a fresh connection, from a resume point."""

    reason: str
    stall: bool = False
    switch: bool = False  # to another endpoint (:meth:`CaptionSession.switch`)


@dataclass(frozen=True, slots=True)
class Failed:
    error: SessionFailed


Outcome = Finished | Restart | Failed


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
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.connector = connector
        self.options = options
        self.captions = captions or CaptionModel()
        self.on_update = on_update
        self.on_status = on_status
        self._sleep = sleep
        self._jitter = jitter
        self._clock = clock
        self.stats = SessionStats()
        self.status = SessionStatus(SessionState.CONNECTING)
        self.audio = AudioLog(options.outage_buffer_seconds)
        self.timeline = WordTimeline()
        self._watch(options)
        self._audio_changed = asyncio.Event()
        self._audio_ended = False
        self._stop = asyncio.Event()
        self._switched = asyncio.Event()  # a switch ends a wait to reconnect
        # per request
        self._sent = 0  # byte offset of the next audio to send
        self._heard = False  # text (or live text) came on the current connection
        self._heard_at = 0.0  # loop time of the last frame
        self._fresh_from = 0  # audio before this was sent once already (a replay)
        self._request_start = 0.0  # seconds
        self._seam: Seam | None = None
        self._seam_until = 0.0
        self._quiet_since: float | None = None  # start of the pause the sent audio is in
        self._unheard_sound: float | None = None  # first sound sent since a word came back
        self._levels = policy.Levels()
        self._request_done = asyncio.Event()
        self._outcome: asyncio.Future[Outcome] | None = None
        self._shown_unconfirmed = ""  # what the last update showed as unconfirmed

    # --- public -----------------------------------------------------------

    async def run(self, audio: AsyncIterator[bytes]) -> CaptionModel:
        """Caption ``audio`` until it ends or :meth:`stop`; returns the captions.
        Raises :class:`SessionFailed` when the session cannot go on."""
        pump = asyncio.create_task(self._pump(audio))
        try:
            await self._connection_loop()
        finally:
            pump.cancel()
            try:
                with contextlib.suppress(asyncio.CancelledError):
                    await pump  # raises the audio's own error (a device gone) …
            finally:  # … after the words heard before it are shown
                self._emit(self.captions.flush())
                log.info("= session ended: %s", self.stats.summary())
        return self.captions

    def switch(self, connector: Connector, options: SessionOptions) -> None:
        """Go on on another endpoint, or with other options, without a new session.

        The request in flight ends as after a broken connection, and the audio from
        a pause before its last returned word is sent to the new endpoint, with the
        words shown twice left out at the seam. So what was said during the switch,
        and what an unreachable endpoint was holding (up to the outage buffer), is
        captioned by the new one, each word once.
        """
        log.info("= switching the session to another endpoint")
        self.connector = connector
        self.options = options
        self.audio.keep_bytes = to_bytes(options.outage_buffer_seconds)
        self._watch(options)
        self._switched.set()
        self._conclude(Restart("switched to another endpoint", switch=True))

    def stop(self) -> None:
        """Graceful stop: send what is captured, final commit, wait for the last text."""
        self._stop.set()
        self._audio_ended = True
        self._audio_changed.set()

    def _watch(self, options: SessionOptions) -> None:
        """The rotation and stall policies ``options`` ask for."""
        self.rotation = policy.RotationPolicy(options.rotate_after_seconds,
                                              options.rotate_grace_seconds)
        if options.max_model_len:
            self.rotation.learn_context(options.max_model_len, 0.0)
        self.stall = policy.StallWatch(options.stall_seconds, options.stall_seconds)

    # --- audio side -------------------------------------------------------

    async def _pump(self, audio: AsyncIterator[bytes]) -> None:
        try:
            async for chunk in audio:
                if self._stop.is_set():
                    break
                self._append(chunk)
                self._audio_changed.set()
        finally:
            self._audio_ended = True
            self._audio_changed.set()

    def _append(self, chunk: bytes) -> None:
        begin = self.audio.end_seconds
        self.audio.append(chunk)
        end = self.stats.audio_seconds = self.audio.end_seconds
        if (self._unheard_since() is None
                and self.audio.last_sound(begin, end, self._levels.pause) is not None):
            self._unheard_sound = begin

    def _unheard_since(self) -> float | None:
        """Where the first sound captured after the last word came back began; None when
        a word came back after every sound captured (only silence since)."""
        since, heard = self._unheard_sound, self.timeline.last_arrival
        return None if since is None or (heard is not None and since < heard) else since

    # --- connections --------------------------------------------------------

    async def _connection_loop(self) -> None:
        attempt = 0
        resume = False  # False: start where sending stopped
        ever_connected = False
        first_try = self._clock()
        while True:
            if self._switched.is_set():  # a new endpoint gets its own retry budget
                self._switched.clear()
                attempt, ever_connected, first_try = 0, False, self._clock()
            try:
                transport = await self.connector()
            except TransportError as exc:
                if self._stop.is_set():
                    self._unsent_gap()
                    self._set_status(SessionState.STOPPED, f"stopped while offline: {exc}")
                    return
                if self._switched.is_set():  # the old endpoint's refusal no longer matters
                    continue
                waited = self._clock() - first_try
                if not policy.retry_connect(exc, ever_connected=ever_connected, waited=waited,
                                            fail_fast=self.options.fail_fast):
                    reason = str(exc)
                    if exc.retryable and attempt:
                        reason += f" (still refusing after {waited:.0f} s of retrying)"
                    self._set_status(SessionState.FAILED, reason)
                    raise SessionFailed(reason) from exc
                attempt += 1
                await self._backoff(attempt, str(exc), ever_connected)
                continue
            if self._switched.is_set():  # switched while this connection was being made
                await transport.close()
                continue
            ever_connected, self._heard = True, False
            opened = asyncio.get_running_loop().time()
            try:
                plan = self._resume_plan() if resume else None  # the outage is over now
                outcome = await self._serve(transport, plan)
            finally:
                await transport.close()
            # A connection that closed at once without a word of text failed like a
            # refused one (a server overloaded, or crashing on the first audio): the next
            # try backs off. One that served a while, even through silence, was healthy.
            failed = (not self._heard and asyncio.get_running_loop().time() - opened
                      < HEALTHY_CONNECTION_SECONDS)
            if not failed:
                attempt = 0
            if isinstance(outcome, Finished):
                self._set_status(SessionState.STOPPED)
                return
            if isinstance(outcome, Failed):
                self._set_status(SessionState.FAILED, str(outcome.error))
                raise outcome.error
            self._emit(self.captions.set_unconfirmed(""))  # the replay says it again, or not
            resume = True
            if outcome.switch:
                self._set_status(SessionState.CONNECTING)
                continue
            log.warning("! restarting the request: %s", outcome.reason)
            self.stats.reconnects += 1
            self._note_restart(outcome)
            self._set_status(SessionState.RECONNECTING, outcome.reason)
            if failed:  # no tight loop of connections that die at once
                attempt += 1
                await self._backoff(attempt, outcome.reason, ever_connected)

    def _skip_trimmed(self) -> None:
        """The first connection came after more audio than the log keeps (a model still
        loading, an endpoint still starting): what it no longer has is shown as a hole,
        if it held sound, and sending goes on from the oldest audio kept."""
        start, end = seconds(self._sent), self.audio.start_seconds
        since = self._unheard_since()
        if since is not None and since < end:
            start = max(start, since)  # the hole begins with the first sound in it
            log.warning("! %.1f s of audio captured before the endpoint answered are no "
                        "longer kept", end - start)
            self.stats.gap_seconds += end - start
            self._emit(self.captions.gap(start, end))
        self._sent = self._fresh_from = self.audio.base

    def _unsent_gap(self) -> None:
        """Stopped with audio no endpoint ever heard: show the hole, if it held sound
        (known also for sound the outage buffer no longer keeps)."""
        start, end = seconds(self._sent), self.audio.end_seconds
        since = self._unheard_since()
        if since is not None and (
                since >= start
                or self.audio.last_sound(start, end, self._levels.pause) is not None):
            self.stats.gap_seconds += end - start
            self._emit(self.captions.gap(start, end))

    async def _backoff(self, attempt: int, reason: str, ever_connected: bool) -> None:
        delay = policy.backoff_delay(attempt, initial=self.options.backoff_initial,
                                     cap=self.options.backoff_max, jitter=self._jitter())
        state = SessionState.RECONNECTING if ever_connected else SessionState.CONNECTING
        self._set_status(state, reason, retry_in=delay)
        waits = {asyncio.ensure_future(self._sleep(delay)),  # stop() or switch() ends it
                 asyncio.ensure_future(self._stop.wait()),
                 asyncio.ensure_future(self._switched.wait())}
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    def _note_restart(self, outcome: Restart) -> None:
        if outcome.stall:
            self.stats.stalls += 1
            heard = self.timeline.last_arrival
            stopped_at = heard - self._request_start if heard is not None else 0.0
            self.rotation.learn_stall(max(0.0, stopped_at))
            self.stall.restarted()

    def _resume_plan(self) -> policy.ResumePlan:
        sent = seconds(self._sent)
        plan = policy.resume_plan(self.audio, self.timeline, sent=sent, levels=self._levels,
                                  sound_since=self._unheard_since())
        log.info("= resume at %.2f s (sent %.2f s); %d to %d shown words repeat, likely %d",
                 plan.position, sent, plan.repeated.low, len(plan.repeated.words),
                 plan.repeated.estimate)
        return plan

    async def _serve(self, transport: Transport, plan: policy.ResumePlan | None) -> Outcome:
        """One connection, until its outcome."""
        conn = ClientConnection()
        self._outcome = asyncio.get_running_loop().create_future()
        conn.send_session_update(self.options.model)
        self._begin_request(conn, plan)
        try:
            await self._flush(transport, conn)
        except TransportError as exc:  # accepted, then closed before the first frame went
            self._fault(exc)
            return await self._outcome
        receiver = asyncio.create_task(self._receive(transport, conn))
        sender = asyncio.create_task(self._send(transport, conn))
        try:
            await asyncio.wait({receiver, sender, self._outcome},
                               return_when=asyncio.FIRST_COMPLETED)
            for task in (receiver, sender):
                if task.done() and not task.cancelled() and task.exception() is not None:
                    self._fault(task.exception())
            return await self._outcome
        finally:
            for task in (receiver, sender):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, TransportError):
                    await task

    def _conclude(self, outcome: Outcome) -> None:
        if self._outcome is not None and not self._outcome.done():
            self._outcome.set_result(outcome)

    def _fault(self, exc: BaseException | None) -> None:
        """A task ended with an exception: a broken transport restarts, the rest is a bug."""
        if isinstance(exc, TransportError):
            if exc.retryable:
                self._conclude(Restart(str(exc)))
            else:
                error = SessionFailed(str(exc))
                error.__cause__ = exc
                self._conclude(Failed(error))
        elif exc is not None and self._outcome is not None and not self._outcome.done():
            self._outcome.set_exception(exc)

    @staticmethod
    async def _flush(transport: Transport, conn: ClientConnection) -> None:
        for frame in conn.data_to_send():
            await transport.send_text(frame)

    def _begin_request(self, conn: ClientConnection, plan: policy.ResumePlan | None) -> None:
        """Start a request at ``plan``'s resume point, or where sending stopped."""
        self._seam = None
        if plan is not None:
            if plan.lost is not None:
                start, end = plan.lost
                self.stats.gap_seconds += end - start
                self._emit(self.captions.gap(start, end))
            self._fresh_from = max(self._fresh_from, self._sent)
            self._sent = to_bytes(plan.position)
            if plan.repeated.words:
                self._seam = Seam(plan.repeated)
                # counted from all audio captured by now: the replay and the outage's
                # audio go out in one burst, long before the server can answer it
                self._seam_until = self.audio.end_seconds + SEAM_HOLD_SECONDS
            self.captions.new_request()
        self._request_start = seconds(self._sent)
        self._quiet_since = None
        self._request_done = asyncio.Event()
        conn.send_commit()

    # --- sending -------------------------------------------------------------

    async def _send(self, transport: Transport, conn: ClientConnection) -> None:
        assert self._outcome is not None
        while not self._outcome.done():
            if self._sent < self.audio.end:
                if self._sent < self.audio.base:
                    self._skip_trimmed()
                chunk = self.audio.read(self._sent, self.options.chunk_bytes)
                conn.send_audio(chunk)
                await self._flush(transport, conn)
                start = self._sent
                self._sent += len(chunk)
                if self._after_send(start):
                    return
                at_pause = self.at_pause
                age = seconds(self._sent) - self._request_start
                if self.rotation.decide(age, at_pause) and not await self._rotate(
                        transport, conn, at_pause):
                    return
                continue
            if self._audio_ended:
                await self._finish(transport, conn)
                self._conclude(Finished())
                return
            self._audio_changed.clear()
            await self._audio_changed.wait()

    def _after_send(self, start: int) -> bool:
        """Book-keeping after a chunk went out; True when the request has stalled."""
        begin, end = seconds(start), seconds(self._sent)
        self._levels = policy.Levels.over(
            self.audio.noise_floor(end - policy.NOISE_WINDOW_SECONDS, end))
        sound_ends = self.audio.last_sound(begin, end, self._levels.pause)
        if sound_ends is None:
            self._quiet_since = begin if self._quiet_since is None else self._quiet_since
        else:
            self._quiet_since = sound_ends if sound_ends < end else None
        level = self.audio.level(begin, end)
        # Audio that waited for the connection (a model still loading) goes out faster
        # than real time; the server cannot have answered it yet, so it is no stall.
        live = seconds(self.audio.end - self._sent) <= BACKLOG_SECONDS
        if (start >= self._fresh_from and live
                and self.stall.audio(end - begin, level, self._levels)):
            self._conclude(Restart(f"no text for {self.stall.limit:.0f} s of sound",
                                   stall=True))
            return True
        self._emit(self.captions.tick(end, self._quiet_seconds()))
        if (self._seam is not None and not self._seam.done and live
                and end >= self._seam_until):
            self._show(self._seam.release())
            self._seam_until = end + SEAM_HOLD_SECONDS  # if it held nothing: wait on
        return False

    @property
    def at_pause(self) -> bool:
        """Whether the audio sent last is a pause: a safe place to cut it."""
        return self._quiet_seconds() >= self.options.pause_seconds

    def _quiet_seconds(self) -> float:
        return 0.0 if self._quiet_since is None else seconds(self._sent) - self._quiet_since

    async def _rotate(self, transport: Transport, conn: ClientConnection, at_pause: bool) -> bool:
        """End this request and start a fresh one on the same connection. At a pause the
        final commit brings back every word before the cut, so the next request starts
        right there; without one it replays from the last pause, like a restart."""
        cut = seconds(self._sent)
        if not conn.generating:  # the server ended the request itself: a restart follows
            return False
        conn.send_commit(final=True)  # its transcription.done also settles the seam
        await self._flush(transport, conn)
        if not await self._finished_answering():
            self._conclude(Restart("the server did not finish the request for rotation"))
            return False
        self.stats.rotations += 1
        log.info("= rotated the request at %.1f s (%s)", cut,
                 "pause" if at_pause else "forced, with a replay")
        plan = None
        if not at_pause:
            floor = self._request_start + self.rotation.due_after / 2  # always move on
            plan = policy.resume_plan(self.audio, self.timeline, sent=cut,
                                      levels=self._levels, floor=floor)
        self._begin_request(conn, plan)
        if plan is None:
            self.captions.new_request()
        await self._flush(transport, conn)
        return True

    async def _finish(self, transport: Transport, conn: ClientConnection) -> None:
        self._set_status(SessionState.STOPPING)
        if not conn.generating:  # nothing runs: a final commit would start an empty request
            return
        conn.send_commit(final=True)
        await self._flush(transport, conn)
        if not await self._finished_answering():
            log.warning("! no transcription.done (%.0f s quiet, or %.0f s in all); stopping "
                        "anyway", self.options.done_timeout, self.options.finish_limit)
            if self._seam is not None:
                self._show(self._seam.release())
            self._unanswered_gap()

    async def _finished_answering(self) -> bool:
        """Wait for the final commit's ``transcription.done`` while the server keeps
        answering: a busy on-device engine works through seconds of queued audio after
        Stop or a rotation's cut, and those are words said before it. False once it has
        been quiet for ``done_timeout`` or ``finish_limit`` has passed."""
        loop = asyncio.get_running_loop()
        began = self._heard_at = loop.time()
        while not self._request_done.is_set():
            left = min(self._heard_at + self.options.done_timeout,
                       began + self.options.finish_limit) - loop.time()
            if left <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._request_done.wait(), left)
        return True

    def _unanswered_gap(self) -> None:
        """Stopped before the server answered the end of the audio: show the hole (from
        about where the last word shown was said) instead of ending without a word."""
        start = self._request_start
        if self.timeline.last_arrival is not None:
            start = max(start, self.timeline.last_arrival - self.timeline.latency)
        end = seconds(self._sent)
        if end > start and self.audio.last_sound(start, end, self._levels.pause) is not None:
            self.stats.gap_seconds += end - start
            self._emit(self.captions.gap(start, end))

    # --- receiving -----------------------------------------------------------

    async def _receive(self, transport: Transport, conn: ClientConnection) -> None:
        while True:
            frame = await transport.recv()
            if frame is None:
                conn.receive_eof()
            else:
                self._heard_at = asyncio.get_running_loop().time()
                conn.receive_text(frame)
            for event in conn.events_received():
                self._on_event(event, conn)
            if frame is None:
                return

    def _on_event(self, event: ReceivedEvent, conn: ClientConnection) -> None:
        if isinstance(event, TranscriptionDelta | TranscriptionLive | TranscriptionDone):
            self._heard = True
        if isinstance(event, TranscriptionDelta):
            self._on_text(event.delta)
        elif isinstance(event, TranscriptionLive):
            self._on_live(event.text)
        elif isinstance(event, TranscriptionDone):
            if self._seam is not None:
                self._show(self._seam.release())
            self._emit(self.captions.set_unconfirmed(""))  # nothing left to confirm it
            self._request_done.set()
        elif isinstance(event, SessionCreated):
            log.debug("< session.created %s", event.id)
            self._set_status(SessionState.LIVE)
        elif isinstance(event, RejectedText):
            self.stats.protocol_errors += 1
            self.stats.rejected_texts += 1
            self._conclude(Restart(f"impossible text from the server: {event.reason}"))
        elif isinstance(event, BadFrame):
            self.stats.protocol_errors += 1
        elif isinstance(event, RequestFailed):
            self.stats.server_errors += 1
            if event.context_limit:
                self.stats.context_limits += 1
                self.rotation.learn_context(event.max_model_len, conn.request_seconds)
                log.warning("! context limit after %.1f s of audio; rotating after %.1f s now",
                            conn.request_seconds, self.rotation.due_after)
            self._conclude(Restart(f"server processing error: {event.message}"))
        elif isinstance(event, Refused):
            self.stats.server_errors += 1
            self._conclude(Failed(SessionFailed(f"the server refused the session: "
                                                f"{event.message}")))
        elif isinstance(event, ServerError):
            self.stats.server_errors += 1
            if event.code in FATAL_SERVER_CODES:
                self._conclude(Failed(SessionFailed(f"the server refused the session: "
                                                    f"{event.error}")))
        elif isinstance(event, RequestEnded):
            self._conclude(Restart("the server ended the request by itself"))
        elif isinstance(event, StreamEnded):
            self._conclude(Restart("the server closed the stream"))

    def _on_text(self, text: str) -> None:
        if text.strip():  # the server is alive, even if the seam holds this text back
            self.stall.text()
        if self._seam is not None:
            text = self._seam.feed(text)
        self._show(text)

    def _on_live(self, text: str) -> None:
        """The server's unconfirmed text: shown after the confirmed text, never kept.

        New live words are progress (the stall watch counts them like text: a local
        engine that is merely behind shows its hypothesis before it commits). While
        a replayed request's seam still decides which of its words repeat shown
        ones, the live text is what it would let through now (with the words it
        holds): an engine that confirms whole utterances keeps a seam open for one.
        """
        if text.strip() and " ".join(text.split()) != self.captions.unconfirmed:
            self.stall.text()
        if self._seam is not None and not self._seam.done:
            text = self._seam.preview(text)
        self._emit(self.captions.set_unconfirmed(text, seconds(self._sent)))

    def _show(self, text: str) -> None:
        """Show ``text`` and place its words in the audio (latency is learned only
        from live audio: during a replay burst text lags what was sent)."""
        if self._seam is not None:
            self.stats.repeated_words_dropped += self._seam.dropped
            self._seam.dropped = 0
        if not text:
            return
        live = self._sent > self._fresh_from
        self.timeline.add(text, seconds(self._sent), self._quiet_since if live else None)
        self._emit(self.captions.add_text(text, seconds(self._sent)))

    def _emit(self, update: CaptionUpdate) -> None:
        cleared = update.unconfirmed != self._shown_unconfirmed
        self._shown_unconfirmed = update.unconfirmed
        if self.on_update is not None and (update.finalized or update.live is not None
                                           or cleared):
            self.on_update(update)

    def _set_status(self, state: SessionState, detail: str = "",
                    retry_in: float | None = None) -> None:
        status = SessionStatus(state, detail, retry_in)
        if status != self.status:
            log.info("= %s", status)
            self.status = status
            if self.on_status is not None:
                self.on_status(status)
