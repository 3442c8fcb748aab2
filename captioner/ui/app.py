"""The GUI's composition root and start-up (`captioner` with no arguments).

One asyncio loop runs on Qt through qasync: ``asyncio.run(main(app),
loop_factory=qasync.QEventLoop)``; ``main`` waits for an event set on quit
(the Quit action or ``aboutToQuit``), then stops captioning and awaits every task
it started. Uncaught exceptions (Qt slots, the loop) are logged, never shown as a
traceback dialog. First run needs no wizard: the overlay appears and captions
system audio with the embedded engine, with a small hint on how to change that.
Importing this module has no side effects.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import tempfile
from collections.abc import Coroutine
from functools import partial
from pathlib import Path
from typing import Any

import qasync
from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QApplication

from captioner.aiotasks import cancel_and_wait
from captioner.alerts import AlertMatcher
from captioner.audio.playback import Player
from captioner.audio.reply_cancel import PlayedAudio
from captioner.captioning import EmbeddedEngine
from captioner.cloud.deploy_plan import Kind
from captioner.cloud.endpoints import cloud_configured, control_from_settings
from captioner.cloud.manager import EndpointManager
from captioner.cloud.preflight import Preflight
from captioner.feed.outputs import FeedOutputs
from captioner.feed.page import render_page
from captioner.realtime.captions import CaptionUpdate, labelled
from captioner.transcript.journal import mark_recovered, unfinished_journals
from captioner.two_streams import open_source
from captioner.ui.actions import AppActions
from captioner.ui.appearance import palette
from captioner.ui.confirm import ask
from captioner.ui.controller import (
    CaptionController,
    CaptionStatus,
    SourceFactory,
    describe_endpoint,
    describe_source,
)
from captioner.ui.endpoint_tray import EndpointTray
from captioner.ui.endpoints.aws_setup import AccountSetupService
from captioner.ui.endpoints.runner import Runner
from captioner.ui.endpoints.service import SetupService
from captioner.ui.endpoints.start_flow import GuardedStart, StartFlow
from captioner.ui.endpoints_page import EndpointsPage
from captioner.ui.first_run import first_run_hint
from captioner.ui.global_shortcut import GlobalShortcuts
from captioner.ui.history import HistoryWindow
from captioner.ui.instance import SingleInstance
from captioner.ui.main_thread_gc import MainThreadGc
from captioner.ui.overlay import Overlay
from captioner.ui.reply_box import ReplyBox
from captioner.ui.reply_controller import ReplyController
from captioner.ui.settings.dialog import SettingsDialog
from captioner.ui.settings.recognition_page import RecognitionPage
from captioner.ui.settings_store import SettingsStore
from captioner.ui.tray import Tray

log = logging.getLogger(__name__)

DEBUG_STATE_ENV = "CAPTIONER_DEBUG_STATE_FILE"
HINT_SECONDS = 20
FONT_STEP = 2


class CaptionerApp(QObject):
    """Builds the windows and the controller and wires them; owns the app's tasks."""

    quit_requested = Signal()

    def __init__(self, store: SettingsStore, *, embedded: EmbeddedEngine | None = None,
                 source_factory: SourceFactory | None = None,
                 tray_available: bool | None = None, debug_state_file: str | None = None,
                 endpoints: EndpointManager | None = None,
                 endpoint_setup: SetupService | None = None,
                 replies: ReplyController | None = None,
                 global_keys: GlobalShortcuts | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.store = store
        settings = store.settings
        self.tasks: set[asyncio.Task[Any]] = set()
        self.actions = AppActions(settings.shortcuts, self)
        self.matcher = AlertMatcher(settings.alert_words)
        self.overlay = Overlay(settings.appearance, self.actions, self.matcher)
        # What replies play, so the captures can cancel it (captioner.audio.reply_cancel).
        self.played = PlayedAudio()
        self.controller = CaptionController(
            store, embedded=embedded, parent=self,
            source_factory=source_factory or partial(open_source, played=self.played))
        self.tray = Tray(self.actions, self, available=tray_available)
        self.overlay.set_menu_button_visible(not self.tray.available)
        if not self.tray.available and self.overlay.click_through:
            # Without a tray nothing could be clicked to turn it off again: start clickable.
            self.overlay.set_click_through(False)
        self.history = HistoryWindow(Path(settings.transcript.folder), self.actions)
        if settings.transcript.export_folder:
            self.history.last_export_folder = Path(settings.transcript.export_folder)
        self.history.exported.connect(self._remember_export_folder)
        self.history.set_text_points(settings.transcript.history_text_points)
        self.history.text_size_changed.connect(self._remember_history_text_size)
        self.feed = FeedOutputs(self._on_notice)
        self.endpoint_setup = endpoint_setup or AccountSetupService()
        self.endpoints = endpoints or EndpointManager(
            lambda: control_from_settings(self.store.settings),
            lambda kind: getattr(self.store.settings.cloud, kind),
            region_control=lambda region: control_from_settings(self.store.settings,
                                                                region=region),
            idle_minutes=settings.cloud.idle_stop_minutes,
            preflight=lambda kind: self.endpoint_setup.preflight(self.store.settings, kind))
        self.setup_runner = Runner()
        self.endpoint_trays = {kind: self._endpoint_tray(kind) for kind in ("stt", "tts")}
        self.endpoint_tray = self.endpoint_trays["stt"]
        self.replies = replies or ReplyController(
            store, sink_factory=self._reply_player, parent=self)
        self.reply_box = ReplyBox(self.replies, store)
        self.reply_box.addActions(self.actions.keyboard())  # Qt's keys work there too
        # the reply box opens from any app too (issue #8); started in start()
        self.global_keys = GlobalShortcuts(parent=self) if global_keys is None else global_keys
        self.global_keys.set_shortcuts({"reply": settings.shortcuts.reply})
        self.global_keys.set_enabled(settings.shortcuts.global_reply)
        self.settings_dialog: SettingsDialog | None = None
        self.debug_state_file = debug_state_file
        self._hint_timer = QTimer(self)
        self._hint_timer.setSingleShot(True)
        self._hint_timer.timeout.connect(lambda: self.overlay.set_hint(""))
        self._wire()
        self._show_source()

    # --- wiring -------------------------------------------------------------

    def _wire(self) -> None:
        a, c, o = self.actions, self.controller, self.overlay
        a.start_stop.toggled.connect(self._on_start_stop)
        a.show_overlay.toggled.connect(o.setVisible)
        a.click_through.setChecked(o.click_through)
        a.click_through.toggled.connect(self._on_click_through)
        a.font_bigger.triggered.connect(lambda: o.change_font_size(FONT_STEP))
        a.font_smaller.triggered.connect(lambda: o.change_font_size(-FONT_STEP))
        a.retry.triggered.connect(lambda: self.spawn(c.restart()))
        a.history.triggered.connect(self.show_history)
        a.settings.triggered.connect(self.show_settings)
        a.reply.triggered.connect(self.reply_box.show_and_focus)
        self.global_keys.activated.connect(self._on_global_key)
        self.global_keys.status_changed.connect(lambda _status: self._show_key_scope())
        self.replies.spoken.connect(self._on_spoken)
        self.endpoints.endpoint_changed.connect(c.set_endpoint_override)
        self.endpoints.endpoint_changed.connect(lambda _url: self._show_source())
        self.endpoints.replies_endpoint_changed.connect(self.replies.set_endpoint_override)
        self.replies.endpoint_used.connect(lambda: self.endpoints.activity("tts"))
        self.endpoints.orphans_changed.connect(self._on_orphans)
        a.quit.triggered.connect(self.quit_requested.emit)
        self.tray.activated.connect(self.bring_to_front)
        c.update.connect(self._on_update)
        c.status.connect(self._on_status)
        c.level.connect(o.set_level)
        c.notice.connect(self._on_notice)
        c.device_lost.connect(self._on_device_lost)
        c.running_changed.connect(self._on_running)
        c.journal_opened.connect(self.history.set_current_journal)
        o.alert.connect(self._on_alert)
        o.geometry_saved.connect(lambda: self.store.touched())
        o.appearance_changed.connect(lambda: self.store.touched("appearance"))
        self.store.changed.connect(self.apply_settings)
        self.store.changed.connect(self._cloud_settings_changed)
        self.store.save_failed.connect(self._on_notice)

    def _reply_player(self, device: str | None) -> Player:
        """The player for replies. On the default output, what it plays is kept for the
        captures to cancel. A device picked instead (a call's virtual microphone, a
        headset) is one the captures do not hear, and a canceller given a reference that
        never comes back still changes the others' words it hears meanwhile ("And so my
        fellow Americans" read as "And so much to America")."""
        return Player(device, tap=None if device else self.played)

    def _endpoint_tray(self, kind: Kind) -> EndpointTray:
        """Start/Stop of one kind, above Quit; progress also on the overlay's strip."""
        gate = GuardedStart(StartFlow(self.endpoints), self.setup_runner, self.endpoint_setup,
                            lambda: self.store.settings, lambda *_: None)
        item = EndpointTray(self.endpoints, list(self.actions.menus), tray=self.tray, kind=kind,
                            before=self.actions.quit, gate=gate,
                            open_setup=self.open_endpoint_setup)
        item.progress.connect(self.overlay.strip.set_cloud)
        return item

    def _cloud_settings_changed(self, sections: frozenset[str]) -> None:
        if sections & {"aws", "cloud"}:
            for item in self.endpoint_trays.values():
                item.settings_changed()
        if "cloud" in sections:  # a running countdown follows a new idle period at once
            self.endpoints.set_idle_minutes(self.store.settings.cloud.idle_stop_minutes)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` as a task the app keeps a reference to and awaits on quit."""
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            log.error("! background task failed: %s", exc, exc_info=exc)
            self.overlay.set_notice(f"Internal error: {exc}")

    # --- life cycle ---------------------------------------------------------

    def start(self) -> None:
        settings = self.store.settings
        self.overlay.show()
        if settings.first_run:
            self.overlay.set_hint(first_run_hint(settings))
            self._hint_timer.start(HINT_SECONDS * 1000)
            settings.first_run = False
            self.store.touched()
        self.recover_journals()
        self.spawn(self._configure_feed())
        if self.store.problems:  # a broken settings file (kept as .bak), values out of range
            self.overlay.set_notice(" ".join(self.store.problems))
        self.global_keys.start()
        if cloud_configured(settings, self.endpoints.state_path):  # left running? (by tag)
            self.endpoints.spawn(self.endpoints.attach())
        self.actions.start_stop.setChecked(True)  # starts captioning
        self.write_debug_state()

    def recover_journals(self) -> list[Path]:
        found = unfinished_journals(self.store.settings.transcript.folder)
        for contents in found:
            self.history.add_recovered(contents)
            mark_recovered(contents.path)
        if found:
            n = len(found)
            self.overlay.set_notice(f"Recovered {n} unfinished transcript{'s' * (n > 1)}"
                                    " — see History")
        return [c.path for c in found]

    async def _configure_feed(self) -> None:
        """Start, stop or restyle the caption outputs to match the settings."""
        s = self.store.settings
        colours = palette(s.appearance)
        page = render_page(text=colours.text, background=colours.background,
                           live=colours.live, font=s.appearance.font_family,
                           size_px=round(s.appearance.font_size * 4 / 3))
        await self.feed.configure(s.feed, s.transcript.folder, page)

    async def shutdown(self) -> None:
        """Stop captioning, then cancel and await every task still running."""
        self.global_keys.stop()
        await self.controller.shutdown()
        await self.feed.close()
        await self.replies.aclose()
        await self.endpoints.close()  # stops watching; the endpoints keep what the user chose
        await self.setup_runner.close()
        await cancel_and_wait(self.tasks)
        self.store.flush()
        self.overlay.close()
        self.history.close()
        self.reply_box.close()
        if self.settings_dialog is not None:
            self.settings_dialog.close()

    def bring_to_front(self) -> None:
        self.actions.show_overlay.setChecked(True)
        self.overlay.show()
        self.overlay.raise_()

    # --- reactions ----------------------------------------------------------

    def _on_start_stop(self, on: bool) -> None:
        if on != self.controller.running:
            self.controller.toggle(on)

    def _on_running(self, running: bool) -> None:
        if self.actions.start_stop.isChecked() != running:
            self.actions.start_stop.blockSignals(True)
            self.actions.start_stop.setChecked(running)
            self.actions.start_stop.blockSignals(False)

    def _on_click_through(self, on: bool) -> None:
        self.overlay.set_click_through(on)
        if on and not self.tray.available:
            keys = self.actions.click_through.shortcut().toString() or "its shortcut"
            self.overlay.set_notice(f"Click-through is on: {keys} turns it off "
                                    "(or restart Captioner)")
        self.store.touched("appearance")

    async def confirm_quit(self) -> bool:
        """Ask before quitting while a managed endpoint bills; False = stay.

        Asked again while a stop fails: quitting would cancel its retry and leave it billing.
        """
        if not await self._let_install_finish():
            return False
        prompt = self.endpoints.quit_decision()
        if prompt is None:
            return True
        self.bring_to_front()
        answer = await ask(self.overlay, "Captioner endpoints are running", prompt.message,
                           [("stop", "&Stop and quit"), ("keep", "&Keep running and quit"),
                            ("cancel", "Cancel")], default="cancel")
        while answer in ("stop", "retry"):
            self.overlay.set_notice("Stopping endpoints… (deleting endpoint, config and model)")
            reasons = await self.endpoints.stop_all()
            left = self.endpoints.quit_decision()
            if left is None:
                return True
            names = ", ".join(s.name for s in left.endpoints)
            running = f"Still running, and may still be billing: {names}."
            self.overlay.set_notice(f"The stop failed. {running}")
            why = "".join(f"\n• {reason}" for reason in reasons)
            answer = await ask(
                self.overlay, "Endpoints could not be stopped",
                f"The stop failed. {running}{why}\n\nTry again, quit anyway (then stop "
                f"{'it' if len(left.endpoints) == 1 else 'them'} in "
                "Settings → Endpoints or the AWS console), or cancel to stay.",
                [("retry", "&Try again"), ("quit", "&Quit anyway"), ("cancel", "Cancel")],
                default="cancel")
        return answer != "cancel"

    async def _let_install_finish(self) -> bool:
        """Quitting while the multilingual model installs would cut pip off half-way
        (its output pipe closes under it): quit when it is done, or stay. False = stay."""
        page = self._recognition_page()
        if page is None or not page.installing:
            return True
        self.bring_to_front()
        answer = await ask(
            self.overlay, "The multilingual model is still installing",
            "Quitting now would cut its install off half-way. Captioner can quit as soon "
            "as the install is done (it downloads 145 MB), or stay open.",
            [("wait", "&Quit when it is done"), ("cancel", "Cancel")], default="cancel")
        if answer != "wait":
            return False
        ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def end() -> None:
            if not ended.done():
                ended.set_result(None)

        page.install_ended.connect(end)
        try:
            if page.installing:
                self.overlay.set_notice("Quitting when the multilingual model's install is "
                                        "done…")
                await ended
        finally:
            page.install_ended.disconnect(end)
        return True

    def _on_global_key(self, name: str) -> None:
        if name == "reply":
            self.reply_box.show_and_focus()

    def _show_key_scope(self) -> None:
        """Say on the Shortcuts page whether the reply shortcut works in every app."""
        if self.settings_dialog is not None:
            self.settings_dialog.shortcuts.set_global_note(
                f"Reply box shortcut: {self.global_keys.status.reason}")

    def _remember_export_folder(self, path: str) -> None:
        """The next export's dialog opens where this one went, after a restart too."""
        self.store.settings.transcript.export_folder = str(Path(path).parent)
        self.store.touched()  # saved soon; nothing else depends on it

    def _remember_history_text_size(self, points: int) -> None:
        self.store.settings.transcript.history_text_points = points
        self.store.touched()

    def _on_spoken(self, text: str) -> None:
        self.controller.add_typed(text)

    def _on_orphans(self, orphans: list[Any]) -> None:
        if not orphans:
            return
        names = ", ".join(o.name for o in orphans)
        text = (f"{len(orphans)} Captioner endpoint{'s' * (len(orphans) > 1)} still running "
                f"and billing: {names}. Stop from Settings → Endpoints.")
        if not self.tray.notify("Endpoints still running", text, critical=True):
            self.overlay.set_notice(text)

    def _on_update(self, update: CaptionUpdate) -> None:
        if self.controller.endpoint_override and (update.finalized or update.live):
            self.endpoints.activity("stt")
        self.overlay.show_update(update)
        for line in update.finalized:
            self.history.append_line(line)
        self.feed.publish(update)
        self.write_debug_state()

    def _on_status(self, status: CaptionStatus) -> None:
        self.overlay.set_status(status.state, status.text)
        self.tray.set_state(status.state, status.text)
        self.actions.retry.setEnabled(status.failed or status.state == "reconnecting")
        if status.failed:
            self.tray.notify("Captions stopped", status.text, critical=True)
            self.overlay.announce(f"Captions stopped. {status.text}")
        self.write_debug_state()

    def _on_device_lost(self, reason: str) -> None:
        text = f"Captions go on when it is back. Why: {reason}"
        self.tray.notify("Audio device lost", text)
        self.overlay.announce(f"Audio device lost. {text}")

    def _on_notice(self, text: str) -> None:
        self.overlay.set_notice(text)
        if text:
            self.tray.notify("Captioner", text)
        self.write_debug_state()

    def _on_alert(self, word: str, text: str) -> None:
        if not self.tray.notify(f"“{word}” was said", text):
            self.overlay.set_notice(f"Alert: “{word}”")

    def _show_source(self) -> None:
        s = self.store.settings
        self.overlay.strip.set_source(describe_source(s.audio))
        self.overlay.view.set_you(s.audio.labels()[0])  # two streams: whose rows are "You"
        endpoint = describe_endpoint(self.controller.endpoint)
        self.overlay.strip.set_endpoint(endpoint)
        self.tray.set_tooltip_line("source", f"{describe_source(s.audio)} → {endpoint}")

    def apply_settings(self, sections: frozenset[str]) -> None:
        """React to changed settings: appearance and gains at once, the rest by a restart."""
        s = self.store.settings
        if "appearance" in sections:
            self.overlay.apply_appearance(s.appearance)
            self.actions.click_through.blockSignals(True)
            self.actions.click_through.setChecked(self.overlay.click_through)
            self.actions.click_through.blockSignals(False)
        if "alert_words" in sections:
            self.matcher = AlertMatcher(s.alert_words)
            self.overlay.set_matcher(self.matcher)
        if "shortcuts" in sections:
            self.actions.apply_shortcuts(s.shortcuts)
            self.global_keys.set_shortcuts({"reply": s.shortcuts.reply})
            self.global_keys.set_enabled(s.shortcuts.global_reply)
        if "transcript" in sections:
            self.history.set_folder(Path(s.transcript.folder))
        if sections & {"feed", "appearance", "transcript"}:
            self.spawn(self._configure_feed())
        if "aws" in sections:
            self.endpoints.reset_control()
        if sections & {"audio", "recognition", "aws"}:
            self._show_source()
            self.controller.apply_gains(s.audio)  # at once, on the running capture
            if ((self.controller.running or self.controller.current.failed)
                    and self.controller.needs_restart()):
                self.spawn(self.controller.restart())

    # --- windows ------------------------------------------------------------

    def show_history(self) -> None:
        self.history.show()
        self.history.raise_()
        self.history.activateWindow()

    def show_settings(self) -> None:
        if self.settings_dialog is None:
            self.settings_dialog = SettingsDialog(self.store, self.actions)
            self.settings_dialog.set_endpoints_page(EndpointsPage(
                self.endpoints, self.store, self.endpoint_setup, runner=self.setup_runner))
            self._show_key_scope()
            self.settings_dialog.recognition.install_ended.connect(self._after_model_install)
        self.settings_dialog.reload()
        self.settings_dialog.show()  # never exec(): we run inside the asyncio loop
        self.settings_dialog.raise_()
        self.settings_dialog.activateWindow()

    def _recognition_page(self) -> RecognitionPage | None:
        return self.settings_dialog.recognition if self.settings_dialog is not None else None

    def _after_model_install(self) -> None:
        """Captions stopped by a missing or damaged multilingual model start again once
        Settings has installed it: no Retry to find, no restart."""
        page = self._recognition_page()
        recognition = self.store.settings.recognition
        if (page is not None and page.model_ready and self.controller.current.failed
                and recognition.endpoint == "embedded" and recognition.whisper_model == "base"):
            log.info("= the multilingual model is installed: captions start again")
            self.spawn(self.controller.restart())

    def open_endpoint_setup(self, kind: Kind, preflight: Preflight) -> None:
        """The tray's Start was refused: open Settings → Endpoints at the failing check."""
        self.show_settings()
        dialog = self.settings_dialog
        assert dialog is not None and isinstance(dialog.endpoints, EndpointsPage)
        dialog.tabs.setCurrentWidget(dialog.endpoints)
        dialog.endpoints.show_preflight(kind, preflight)

    # --- debug hook ---------------------------------------------------------

    def write_debug_state(self) -> None:
        """With CAPTIONER_DEBUG_STATE_FILE set, write what the overlay shows (tests)."""
        path = self.debug_state_file
        if not path:
            return
        state = {
            "visible": self.overlay.view.visible_text(),
            "lines": [labelled(line) for line in self.controller.lines],
            "status": {"state": self.controller.current.state,
                       "text": self.controller.current.text},
            "notice": self.overlay.strip.notice_label.text(),
            "journal": str(self.history.current_journal or ""),
            "overlay_visible": self.overlay.isVisible(),
        }
        target = Path(path)
        try:
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".state-")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(state, f)
            os.replace(tmp, target)
        except OSError as exc:
            log.warning("! debug state file: %s", exc)


# --- start-up -----------------------------------------------------------------

def _excepthook(exc_type, exc, tb) -> None:
    log.error("! uncaught exception", exc_info=(exc_type, exc, tb))


def _loop_exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    exc = context.get("exception")
    log.error("! asyncio: %s", context.get("message", "error"), exc_info=exc)


async def main(app: QApplication, instance: SingleInstance | None = None,
               store: SettingsStore | None = None) -> int:
    """The app's life on the qasync loop; returns the exit status."""
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(_loop_exception_handler)
    quit_event = asyncio.Event()
    app.aboutToQuit.connect(quit_event.set)
    store = store or SettingsStore()
    captioner_app = CaptionerApp(store, debug_state_file=os.environ.get(DEBUG_STATE_ENV))
    captioner_app.quit_requested.connect(quit_event.set)
    for signum in (signal.SIGINT, signal.SIGTERM):  # e.g. logout, kill: quit cleanly
        signal.signal(signum, lambda *_: loop.call_soon_threadsafe(quit_event.set))
    if instance is not None:
        instance.activated.connect(captioner_app.bring_to_front)
    captioner_app.start()
    log.info("= Captioner is running")
    while True:
        await quit_event.wait()
        if app.closingDown() or await captioner_app.confirm_quit():
            break
        quit_event.clear()  # the user chose to stay
    log.info("= quitting")
    await captioner_app.shutdown()
    if instance is not None:
        instance.close()
    return 0


def run_app(args: argparse.Namespace | None = None) -> int:
    """Start the GUI; returns 0 also when another instance was asked to show itself."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    app.setApplicationName("Captioner")
    app.setApplicationDisplayName("Captioner")
    app.setQuitOnLastWindowClosed(False)
    instance = SingleInstance()
    if not instance.claim():
        return 0
    sys.excepthook = _excepthook
    collector = MainThreadGc()
    collector.start()
    try:
        return asyncio.run(main(app, instance), loop_factory=qasync.QEventLoop)
    except KeyboardInterrupt:
        return 130
    finally:
        collector.stop()
