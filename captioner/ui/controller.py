"""Runs captioning for the GUI: start/stop/restart a :class:`Captioner`, report its state.

The controller owns no protocol or audio logic: it builds the audio source and the
Captioner from the settings, runs it as an asyncio task on the qasync loop, and
turns its callbacks into Qt signals. Every failure ends in a readable, persistent
``error`` state with the reason (and Retry), never in silence. Finalized lines go
to the crash-safe journal; a journal that cannot be written (full disk) becomes a
notice while the captions keep going.

An audio device that goes away (unplugged, a sound server restarted) is not a
failure. When a device opens within a second (the same one again, or the default
standing in for a device picked in Settings until that one is back) the same session
goes on, so a phrase said across the loss is read whole. Else the words heard
before it are shown, and the captions wait and go on by themselves when a device
opens, in the same transcript; either way a line says there was no audio.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from captioner.audio.capture import (
    RECOVER_SECONDS,
    missing_devices,
    reopen_delays,
    stand_in,
)
from captioner.audio.dual import DualCapture
from captioner.audio.echo import EchoCanceller
from captioner.audio.errors import AudioError, DeviceNotFound
from captioner.audio.handover import KeptSource
from captioner.captioning import AudioSource, Captioner, EmbeddedEngine
from captioner.realtime.captions import (
    CaptionLine,
    CaptionUpdate,
    LineKind,
    moved,
    shifted,
)
from captioner.session import CaptionSession, SessionFailed, SessionState, SessionStatus
from captioner.settings import AudioSettings, Settings
from captioner.transcript.journal import Journal, JournalError
from captioner.transcript.reply_echo import ReplyEcho
from captioner.transport.endpoint_url import parse_endpoint
from captioner.two_streams import TwoStreamCaptioner, captioner_for, open_source
from captioner.ui.settings_store import SettingsStore

log = logging.getLogger(__name__)

SourceFactory = Callable[[AudioSettings], AudioSource | DualCapture]
JournalFactory = Callable[[Path, dict[str, Any]], Journal]
LEVEL_INTERVAL_MS = 100
RETURN_CHECK_SECONDS = 3.0  # how often a stood-in-for device is looked for
LOSS_SETTLE_SECONDS = 0.5  # after a loss, no alarm while a device is still going away
STOP_GRACE_SECONDS = 12.0
HANDOVER_PAUSE_WAIT = 3.0  # s a restart waits for a pause in speech before it switches
# Lines kept for a journal the disk refuses to make: more than a day of speech (~15 MB);
# beyond, the oldest go (History's "This session" still has them all, to export).
MAX_UNSAVED_LINES = 50_000


@dataclass(frozen=True, slots=True)
class CaptionStatus:
    """What the overlay strip and the tray show: a coarse state and a readable text."""

    state: str  # idle | loading | connecting | listening | reconnecting | error
    text: str

    @property
    def failed(self) -> bool:
        return self.state == "error"


LOADING = CaptionStatus("loading", "Loading speech model…")


def _default_source(audio: AudioSettings) -> AudioSource | DualCapture:
    return open_source(audio)


def _default_journal(folder: Path, header: dict[str, Any]) -> Journal:
    return Journal.create(folder, **header)


def describe_source(audio: AudioSettings) -> str:
    if audio.two_streams:
        return " + ".join(audio.labels())
    return {"mic": "Microphone", "system": "System audio",
            "both": "Mic + system"}.get(audio.source, audio.source)


def describe_endpoint(endpoint: str) -> str:
    try:
        spec = parse_endpoint(endpoint)
    except ValueError:
        return "invalid endpoint"
    if spec.kind == "embedded":
        return "On this computer"
    if spec.kind == "websocket":
        return spec.url or "WebSocket"
    return f"SageMaker {spec.endpoint_name}"


def _sessions(captioner: Captioner | TwoStreamCaptioner) -> list[CaptionSession]:
    if isinstance(captioner, TwoStreamCaptioner):
        return list(captioner.sessions.values())
    return [captioner.session]


def _audio_seconds(captioner: Captioner | TwoStreamCaptioner) -> float:
    """How far a run's audio clock got (two streams: the further one)."""
    return max((session.stats.audio_seconds for session in _sessions(captioner)), default=0.0)


def _without_gains(audio: AudioSettings) -> AudioSettings:
    return replace(audio, mic_gain=0.0, system_gain=0.0)


def _gap_text(seconds: float, *, standing_in: bool) -> str:
    """The line that marks a time without audio after a device went away."""
    if seconds >= 1.0:
        return f"[no audio for {seconds:.0f} s: the audio device was gone]"
    if standing_in:
        return "[the audio device went away: the default device stands in]"
    return "[the audio device was gone for a moment]"


def status_from_session(status: SessionStatus) -> CaptionStatus:
    state = {
        SessionState.CONNECTING: "connecting",
        SessionState.LIVE: "listening",
        SessionState.RECONNECTING: "reconnecting",
        SessionState.STOPPING: "listening",
        SessionState.STOPPED: "idle",
        SessionState.FAILED: "error",
    }[status.state]
    text = {"listening": "listening", "idle": "stopped"}.get(state, str(status))
    if status.state is SessionState.STOPPING:
        text = "stopping…"
    return CaptionStatus(state, text)


class CaptionController(QObject):
    update = Signal(object)  # CaptionUpdate
    status = Signal(object)  # CaptionStatus
    level = Signal(float)  # dBFS of the latest audio chunk
    notice = Signal(str)  # non-fatal problems (journal, echo canceller), "" clears
    running_changed = Signal(bool)
    journal_opened = Signal(object)  # Path of this run's journal
    device_lost = Signal(str)  # captions wait for an audio device; the text says why

    def __init__(self, store: SettingsStore, *, embedded: EmbeddedEngine | None = None,
                 source_factory: SourceFactory = _default_source,
                 journal_factory: JournalFactory = _default_journal,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.embedded = embedded or EmbeddedEngine(store.settings)
        self._source_factory = source_factory
        self._journal_factory = journal_factory
        self._task: asyncio.Task[None] | None = None
        self._captioner: Captioner | TwoStreamCaptioner | None = None
        self._source: KeptSource | None = None
        self._kept: KeptSource | None = None  # a running capture handed to the next run
        self._restarting = asyncio.Lock()
        self._run_settings: Settings | None = None  # what the current run started with
        self._journal: Journal | None = None
        self._journal_failed = False
        # A journal the disk refused at the start of a run (folder, header): it is made
        # with a later line, and the lines said meanwhile are kept for it, in order.
        self._journal_wanted: tuple[Path, dict[str, Any]] | None = None
        self._unsaved: deque[CaptionLine] = deque(maxlen=MAX_UNSAVED_LINES)
        # Caption times go on from run to run (each session's clock starts at 0), so
        # "This session" in the history stays in the order said. A restart goes on in
        # the same journal; a start after Stop opens one whose times start at 0.
        self._go_on = False  # the next run is a restart of this one
        self._clock_offset = 0.0  # added to this run's caption times
        self._clock_end = 0.0  # where the last run's clock stopped (with its offset)
        self._journal_base = 0.0  # the clock when the open journal began
        self._loading = False  # the embedded model is loading while capture runs
        self.current = CaptionStatus("idle", "stopped")
        self.lines: list[CaptionLine] = []  # finalized lines of this app run
        self._reply_echo = ReplyEcho()  # replies spoken in this run, on its audio clock
        self.endpoint_override: str | None = None  # an endpoint the app started and serves
        self._stop_asked = False  # stop() was called in this run
        self._returning: asyncio.Task[None] | None = None  # a picked device is looked for
        self._level_timer = QTimer(self)
        self._level_timer.setInterval(LEVEL_INTERVAL_MS)
        self._level_timer.timeout.connect(self._poll_level)

    # --- public -------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def task(self) -> asyncio.Task[None] | None:
        return self._task

    def start(self) -> None:
        """Start captioning with the current settings (no-op when running)."""
        if self.running:
            return
        self._task = asyncio.get_running_loop().create_task(self._run(), name="captioning")
        self.running_changed.emit(True)

    def stop(self) -> None:
        """Graceful stop: the last words are still transcribed and journaled."""
        self._stop_asked = True
        if self._captioner is not None:
            self._captioner.stop()
        elif self._task is not None and not self._task.done():
            self._task.cancel()

    def toggle(self, on: bool | None = None) -> None:
        if on is None:
            on = not self.running
        if on:
            self.start()
        else:
            self.stop()

    async def wait_stopped(self, timeout: float = STOP_GRACE_SECONDS) -> None:
        task = self._task
        if task is None or task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout)
        except TimeoutError:
            log.warning("! captioning did not stop within %.0f s; cancelling", timeout)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def restart(self) -> None:
        """Apply new settings to the captions.

        Only the endpoint or recognition options changed: the running session
        switches over (its audio, held while an endpoint was unreachable too, goes
        on to the new one). Else the session is stopped and a new one started;
        unless the capture's own settings changed, the capture runs on from one
        session to the next, so what is said meanwhile is captioned by the new one.
        A new device is opened before the old one closes (opening can take a second
        or two), and the new session goes on from where the old one stopped.
        Restarts run one at a time, each with the settings saved by then.
        """
        async with self._restarting:
            await self._restart()

    async def _restart(self) -> None:
        if self._switch():
            return
        was_running = self.running or self.current.failed
        source, started, now = self._source, self._run_settings, self.store.settings
        successor: KeptSource | None = None  # the capture the next run goes on with
        if self.running and source is not None and source.started and started is not None:
            successor = (source if started.audio.capture_key() == now.audio.capture_key()
                         else await self._open_beside(now.audio))
        try:
            if successor is not None:
                await self._pause_in_speech()
                if not self.running:  # the run ended meanwhile: a new one opens its own
                    if successor is not source:
                        await successor.close()
                    successor = None
            if successor is not None and successor is source:
                successor.hand_over()
            self._go_on = was_running
            self.stop()
            if successor is not None and successor is not source:  # a device change
                dropped = successor.discard_held()  # the old capture heard that
                log.info("= the new capture goes on from where the old one stopped "
                         "(%.2f s it heard meanwhile left out)", dropped)
            await self.wait_stopped()
        except BaseException:
            self._go_on = False
            self._close_journal()
            if successor is not None and successor is not source:
                await successor.close()
            raise
        self._kept = successor
        if was_running:
            self.start()

    async def _open_beside(self, audio: AudioSettings) -> KeptSource | None:
        """The capture ``audio`` asks for, opened while the running one still captions;
        None if it cannot open now (the next run opens it, or says why not)."""
        try:
            source = KeptSource(self._source_factory(audio))
        except Exception as exc:
            log.info("= the new capture is opened after the old one closes: %s", exc)
            return None
        try:
            await source.start()
        except asyncio.CancelledError:
            await source.close()
            raise
        except Exception as exc:  # e.g. a device that cannot be opened twice
            log.info("= the new capture could not open beside the old one (%s); "
                     "it is opened after the old one closes", exc)
            with contextlib.suppress(Exception):
                await source.close()
            return None
        return source

    def _switch(self) -> bool:
        """Move the running session to the endpoint and options the settings now ask
        for, when nothing else changed. Whether it did."""
        captioner, started, now = self._captioner, self._run_settings, self.store.settings
        if not (self.running and captioner is not None and started is not None
                and _without_gains(started.audio) == _without_gains(now.audio)):
            return False
        endpoint = self.endpoint
        try:
            spec = parse_endpoint(endpoint)
        except ValueError:
            return False  # a new run reports it
        self._run_settings = copy.deepcopy(now)
        self._loading = spec.kind == "embedded" and not self.embedded.ready
        if self._loading:
            self._set(LOADING)
        captioner.switch(now, endpoint)
        return True

    async def _pause_in_speech(self) -> None:
        """Wait (briefly) for a pause, so the switch does not cut a word in two: each
        half alone was misheard ("to thy sweet" + "itself to cruel" for "…sweet self
        too cruel")."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + HANDOVER_PAUSE_WAIT
        while self._captioner is not None and loop.time() < give_up:
            captioner = self._captioner
            if all(session.at_pause for session in _sessions(captioner)):
                return
            await asyncio.sleep(0.02)

    def needs_restart(self) -> bool:
        """Whether the saved settings differ from the running ones in more than the
        input gains (which :meth:`apply_gains` changes on the running capture)."""
        started, now = self._run_settings, self.store.settings
        if started is None:
            return True
        return (_without_gains(started.audio) != _without_gains(now.audio)
                or started.recognition != now.recognition
                or (started.aws != now.aws and self._on_sagemaker()))

    def _on_sagemaker(self) -> bool:
        """Whether the captions use AWS (its settings change nothing on other endpoints)."""
        try:
            return parse_endpoint(self.endpoint).kind == "sagemaker"
        except ValueError:
            return False

    def apply_gains(self, audio: AudioSettings) -> None:
        if self._source is not None:
            self._source.set_gains(audio.mic_gain, audio.system_gain)

    @property
    def endpoint(self) -> str:
        """The endpoint captions use now: an app-started one while it serves, else settings."""
        return self.endpoint_override or self.store.settings.recognition.endpoint

    def set_endpoint_override(self, endpoint: str | None) -> None:
        """Switch to (or, with None, fall back from) an endpoint the app manages."""
        if endpoint == self.endpoint_override:
            return
        log.info("= captions endpoint: %s", endpoint or "from settings")
        self.endpoint_override = endpoint
        if self.running or self.current.failed:
            asyncio.get_running_loop().create_task(self.restart())

    def add_typed(self, text: str) -> None:
        """A reply the user typed and had spoken: into the captions and the journal."""
        captioner = self._captioner
        if captioner is not None:
            session = captioner.session
            update = session.captions.add_typed(text, session.stats.audio_seconds)
            self._reply_echo.spoken(text, session.stats.audio_seconds)
        else:
            at = self._clock_end - self._clock_offset  # after the last run's lines
            update = CaptionUpdate((CaptionLine(text, at, at, kind=LineKind.TYPED),), None)
        self._on_update(update)

    async def shutdown(self) -> None:
        self.stop()
        await self.wait_stopped(timeout=5.0)
        await self._close_kept()
        await self.embedded.close()

    # --- the run ------------------------------------------------------------

    async def _run(self) -> None:
        settings = self.store.settings
        self._run_settings = copy.deepcopy(settings)  # the store updates its objects in place
        self._stop_asked = False
        try:
            await self._run_once(settings)
        except asyncio.CancelledError:
            self._set(CaptionStatus("idle", "stopped"))
            raise
        finally:
            self._stop_returning()
            await self._close_kept()  # a handed-over capture this run never took
            if not self._go_on:
                self._close_journal()
            self.running_changed.emit(False)

    async def _run_once(self, settings: Settings) -> None:
        going_on, self._go_on = self._go_on, False
        self._clock_offset = self._clock_end
        try:
            endpoint = self.endpoint
            spec = parse_endpoint(endpoint)
        except ValueError as exc:
            return self._fail(f"Endpoint setting is wrong: {exc}")
        source, self._kept = self._kept, None
        # Capture starts now, even while the model loads (seconds on a cold start): the
        # session keeps what is heard meanwhile (bounded, like an outage) and sends it
        # as soon as the engine is ready, so no word said after the user asked is lost.
        self._loading = spec.kind == "embedded" and not self.embedded.ready
        if self._loading or not going_on or self.current.state != "listening":
            self._set(LOADING if self._loading else CaptionStatus("connecting", "connecting"))
        self._open_journal(settings, going_on)  # a restart that goes on stays "listening"
        gone_since: float | None = None  # when the audio device went away
        lost = ""  # why
        while True:
            if source is None:
                source = await self._open_capture(settings.audio, lost)
                if source is None:
                    return  # failed for good; the reason is shown
            else:
                log.info("= the capture goes on into the new session")
                source.set_gains(settings.audio.mic_gain, settings.audio.system_gain)
            if gone_since is not None:
                self._no_audio_gap(asyncio.get_running_loop().time() - gone_since)
                gone_since = None
            try:
                await self._caption(settings, source, endpoint)
            except AudioError as exc:
                if self._stop_asked:
                    break
                log.warning("! the audio device went away: %s", exc)
                gone_since, lost, source = asyncio.get_running_loop().time(), str(exc), None
                self.level.emit(-100.0)
                continue
            except SessionFailed as exc:
                return self._fail(str(exc))
            except Exception as exc:
                log.exception("! captioning failed")
                return self._fail(f"Captioning stopped unexpectedly: {exc}")
            break
        if not self._go_on:  # a restart goes on at once
            self._set(CaptionStatus("idle", "stopped"))

    async def _caption(self, settings: Settings, source: KeptSource, endpoint: str) -> None:
        """One session on ``source`` until it stops or its audio fails (AudioError)."""
        self._source = source
        source.recover = functools.partial(self._recover, settings.audio)
        if isinstance(source.inner, DualCapture):
            self._watch_echo(source.inner, settings.audio)
        self._reply_echo = ReplyEcho()  # a new session counts audio time from 0
        captioner = captioner_for(settings, source, embedded=self.embedded,
                                  endpoint=endpoint, on_update=self._on_update,
                                  on_status=self._on_status)
        self._captioner = captioner
        self._level_timer.start()
        try:
            await captioner.run()
        finally:
            self._level_timer.stop()
            self._clock_end = self._clock_offset + _audio_seconds(captioner)
            self._captioner = None
            self._source = None

    # --- a device that goes away ----------------------------------------------

    async def _open_capture(self, audio: AudioSettings, lost: str) -> KeptSource | None:
        """The capture ``audio`` asks for, open and started. A device picked in Settings
        that is not there has the default stand in (and is looked for); with no device
        to open, this waits and tries again until one opens or the user stops. ``lost``:
        why the device before went away. None: a failure that waiting will not mend
        (shown)."""
        delays = reopen_delays()
        loop = asyncio.get_running_loop()
        # Right after a loss the first tries can meet a device still listed but half
        # gone, which a moment later is stood in for: no alarm for that.
        alarm_at = loop.time() + (LOSS_SETTLE_SECONDS if lost else 0.0)
        alarmed = False
        while True:
            try:
                return await self._open_or_stand_in(audio)
            except AudioError as exc:
                reason = str(exc)
            except Exception as exc:  # PortAudio reports many things as plain errors
                log.exception("! opening the audio source")
                self._fail(f"Audio source unavailable: {exc}")
                return None
            if loop.time() >= alarm_at:
                if not alarmed:
                    alarmed = True
                    self.device_lost.emit(lost or reason)
                self._set(CaptionStatus("reconnecting", "Waiting for the audio device; "
                                        f"captions go on when it is back. Why: {reason}"))
            await asyncio.sleep(next(delays))

    async def _recover(self, audio: AudioSettings, error: AudioError) -> Any | None:
        """A device gone mid-session: a started source for the session to go on with
        (the picked device open again, or the default standing in), if one opens within
        RECOVER_SECONDS; None ends the session and :meth:`_open_capture` waits."""
        if self._stop_asked:
            return None
        log.warning("! the audio device went away: %s; trying to go on at once", error)
        loop = asyncio.get_running_loop()
        lost_at = loop.time()
        delays = reopen_delays()
        while True:
            try:
                source = await self._open_or_stand_in(audio)
                break
            except Exception as exc:  # a device still half there, a driver in trouble
                log.info("= not open yet: %s", exc)
            delay = next(delays)
            if self._stop_asked or loop.time() + delay - lost_at > RECOVER_SECONDS:
                return None
            await asyncio.sleep(delay)
        if isinstance(source.inner, DualCapture):
            self._watch_echo(source.inner, audio)
        self._device_gap(loop.time() - lost_at)
        return source.inner

    def _device_gap(self, seconds: float) -> None:
        """The running session's line where its device went away."""
        captioner = self._captioner
        if captioner is None:
            return
        session = captioner.session
        text = _gap_text(seconds, standing_in=self._returning is not None)
        self._on_update(session.captions.mark_gap(text, session.stats.audio_seconds))

    async def _open_or_stand_in(self, audio: AudioSettings) -> KeptSource:
        """The capture ``audio`` asks for, started; a picked device that is not there has
        the default stand in. Raises what opening raised when neither opens."""
        try:
            return await self._start_capture(audio)
        except DeviceNotFound:
            standing_in = await self._stand_in(audio)
            if standing_in is None:
                raise
            return standing_in

    async def _start_capture(self, audio: AudioSettings) -> KeptSource:
        return await KeptSource.open_started(self._source_factory(audio))

    async def _stand_in(self, audio: AudioSettings) -> KeptSource | None:
        """The default device(s) for picked ones that are not there, or None."""
        missing = await asyncio.to_thread(missing_devices, audio)
        default = stand_in(audio, missing)
        if default is None:
            return None
        try:
            source = await self._start_capture(default)
        except Exception as exc:
            log.info("= no default device stands in either: %s", exc)
            return None
        names = " and ".join(f"“{name}”" for name in missing)
        log.warning("! %s not there: the default device stands in", names)
        self.notice.emit(f"{names} {'are' if len(missing) > 1 else 'is'} not there: "
                         "captioning the default device until it is back.")
        if self._run_settings is not None:  # what runs now, so a restart hands over
            self._run_settings = replace(self._run_settings, audio=default)
        self._stop_returning()
        self._returning = asyncio.get_running_loop().create_task(
            self._watch_for_return(audio), name="picked device watch")
        return source

    async def _watch_for_return(self, audio: AudioSettings) -> None:
        """Go back to the picked device once it is there again (at a pause in speech)."""
        while True:
            try:
                if not await asyncio.to_thread(missing_devices, audio):
                    break
            except Exception:  # a driver that cannot list now: look again later
                log.exception("! listing the audio devices")
            await asyncio.sleep(RETURN_CHECK_SECONDS)
        log.info("= the picked audio device is back")
        self.notice.emit("")
        self._returning = None
        asyncio.get_running_loop().create_task(self.restart(), name="device returned")

    def _stop_returning(self) -> None:
        watch, self._returning = self._returning, None
        if watch is not None:
            watch.cancel()

    def _no_audio_gap(self, seconds: float) -> None:
        """A line where the device was gone, and the clock moved on by as much."""
        at = self._clock_end
        text = _gap_text(seconds, standing_in=self._returning is not None)
        line = CaptionLine(text, at, at + seconds, kind=LineKind.GAP)
        self._clock_end = self._clock_offset = at + seconds
        self.lines.append(line)
        self._journal_line(line)
        self.update.emit(CaptionUpdate((line,), None))

    # --- callbacks ----------------------------------------------------------

    def _on_update(self, update: CaptionUpdate) -> None:
        update = shifted(self._without_reply_echo(update), self._clock_offset)
        for line in update.finalized:
            self.lines.append(line)
            self._journal_line(line)
        self.update.emit(update)

    def _without_reply_echo(self, update: CaptionUpdate) -> CaptionUpdate:
        """The update without caption words that repeat a reply just spoken (heard back
        through the output the captions listen to): it shows once, as the typed line."""
        captioner = self._captioner
        echo = self._reply_echo
        kept = tuple(k for k in map(echo.filter, update.finalized) if k is not None)
        now = captioner.session.stats.audio_seconds if captioner is not None else 0.0
        live, unconfirmed = echo.filter_live(update.live, update.unconfirmed, now)
        if (kept, live, unconfirmed) == (update.finalized, update.live, update.unconfirmed):
            return update
        if kept != update.finalized:
            log.info("= caption words that repeat a reply just spoken left out")
        return replace(update, finalized=kept, live=live, unconfirmed=unconfirmed)

    def _on_status(self, status: SessionStatus) -> None:
        if status.state is SessionState.FAILED:
            return  # _run reports it with the reason, once
        if status.state in (SessionState.STOPPING, SessionState.STOPPED) and (
                self._go_on or not self._stop_asked):
            return  # a restart, or the audio ended (a device gone?): _run_once says
        if self._loading and status.state is SessionState.CONNECTING:
            return  # still loading the model; "loading" says more than "connecting"
        self._loading = False
        self._set(status_from_session(status))

    async def _close_kept(self) -> None:
        source, self._kept = self._kept, None
        if source is not None:
            await source.close()

    def _poll_level(self) -> None:
        source = self._source
        if source is not None:
            self.level.emit(float(getattr(source, "level_dbfs", -100.0)))

    def _set(self, status: CaptionStatus) -> None:
        if status != self.current:
            self.current = status
            log.info("= caption status %s: %s", status.state, status.text)
            self.status.emit(status)

    def _fail(self, reason: str) -> None:
        log.warning("! %s", reason)
        self._set(CaptionStatus("error", reason))

    def _watch_echo(self, source: DualCapture, audio: AudioSettings) -> None:
        """An echo canceller that cannot load leaves the mic uncancelled: say so once,
        on the notice line, while the captions go on."""
        canceller = source.mic_filter
        if not isinstance(canceller, EchoCanceller):
            return
        you = audio.labels()[0]

        def off(reason: str) -> None:
            # what it means first (the strip is narrow; the tooltip shows it all), then why
            self.notice.emit(f"Echo cancellation off, captions go on: without headphones "
                             f"the others' words may also show as “{you}”. Why: {reason}.")

        canceller.on_failure = off
        if canceller.failure is not None:
            off(canceller.failure)

    # --- journal ------------------------------------------------------------

    def _open_journal(self, settings: Settings, going_on: bool) -> None:
        """A new journal, or after a restart the run before's, noting what changed."""
        header = {"source": settings.audio.source, "endpoint": describe_endpoint(self.endpoint)}
        if going_on and (self._journal is not None or self._journal_wanted is not None):
            if not self._make_journal():
                return  # still none: the lines go on being kept for it, without this note
            assert self._journal is not None
            try:
                self._journal.restarted(self._clock_offset - self._journal_base, **header)
            except JournalError as exc:
                self._journal_problem(str(exc))
            return
        self._journal_failed = False
        self._journal_base = self._clock_offset  # a new file's times start at 0
        self._journal_wanted = (Path(settings.transcript.folder),
                                {"started": datetime.now(UTC), **header})
        self._unsaved.clear()
        self._make_journal()

    def _make_journal(self) -> bool:
        """Whether this run has its journal, making it now if the disk refused it so far
        (full when the run started): then with every line said since, so none is lost."""
        if self._journal is not None:
            return True
        if self._journal_wanted is None:
            return False
        folder, header = self._journal_wanted
        try:
            self._journal = self._journal_factory(folder, header)
        except JournalError as exc:
            self._journal_problem(str(exc))
            return False
        self._journal_wanted = None
        self.journal_opened.emit(self._journal.path)
        unsaved = list(self._unsaved)
        self._unsaved.clear()
        self._append(*unsaved)
        return True

    def _journal_line(self, line: CaptionLine) -> None:
        line = moved(line, -self._journal_base)
        if self._journal is None and self._journal_wanted is not None:
            if len(self._unsaved) == self._unsaved.maxlen:
                log.warning("! still no journal after %d lines: the oldest is dropped",
                            len(self._unsaved))
            self._unsaved.append(line)
            self._make_journal()  # retried with every line; writes the kept ones too
        elif self._journal is not None:
            self._append(line)

    def _append(self, *lines: CaptionLine) -> None:
        """Into the journal (kept there if the disk refuses); once saved, the notice goes."""
        assert self._journal is not None
        try:
            if lines:
                self._journal.append(*lines)
        except JournalError as exc:
            self._journal_problem(str(exc))
            return
        if self._journal_failed:
            self._journal_failed = False
            self.notice.emit("")

    def _journal_problem(self, message: str) -> None:
        if not self._journal_failed:
            self._journal_failed = True
            self.notice.emit(message)

    def _close_journal(self) -> None:
        if not self._make_journal() and self._unsaved:  # a last try for the kept lines
            log.warning("! %d caption lines were never journaled (the disk refused)",
                        len(self._unsaved))
        self._journal_wanted = None
        self._unsaved.clear()
        journal, self._journal = self._journal, None
        if journal is not None:
            try:
                journal.close()
            except JournalError as exc:
                self._journal_problem(str(exc))
