"""The system-wide reply shortcut, for real: a private Xvfb (with the RECORD extension
pynput listens through), key presses injected with xdotool (XTEST), Qt offscreen."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget

from captioner.ui.app import CaptionerApp
from captioner.ui.global_shortcut import (
    NOT_SET,
    GlobalShortcuts,
    HookStatus,
    ShortcutError,
    to_pynput,
)
from tests.ui.conftest import run_async, wait_until
from tests.ui.xvfb import Xvfb as XServer

ATTEMPTS = 20  # a key pressed before RECORD is enabled is not seen: press again


def _session(monkeypatch: pytest.MonkeyPatch, display: str | None) -> None:
    for name in ("WAYLAND_DISPLAY", "XDG_SESSION_TYPE"):
        monkeypatch.delenv(name, raising=False)
    if display is None:
        monkeypatch.delenv("DISPLAY", raising=False)
    else:
        monkeypatch.setenv("DISPLAY", display)


@pytest.fixture
def xserver(qapp, monkeypatch: pytest.MonkeyPatch) -> Iterator[XServer]:
    """A session whose keyboard pynput watches (DISPLAY points at it; Qt stays offscreen).

    Windows an earlier test left open are hidden first: Qt would make one of them the
    active window, and then every press counts as made inside Captioner."""
    for widget in QApplication.topLevelWidgets():
        if widget.isVisible():
            widget.hide()
    QApplication.processEvents()
    if shutil.which("xdotool") is None:
        raise RuntimeError("xdotool is not installed (Debian: xdotool)")
    server = XServer(extra=("+extension", "RECORD"))
    server.start()
    _session(monkeypatch, server.display)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def keys(qapp, xserver) -> Iterator[GlobalShortcuts]:
    """Stopped before the X server goes (so the hook does not see it vanish)."""
    shortcuts = GlobalShortcuts({"reply": "Ctrl+Shift+R", "marker": "Ctrl+Shift+M"},
                                app_has_focus=lambda: False)
    try:
        yield shortcuts
    finally:
        shortcuts.stop()


def press_until_seen(qtbot, server: XServer, signal, chord: str) -> None:
    """Press ``chord`` until ``signal`` fires (the first presses may come before the
    listener's RECORD context is enabled)."""
    for _ in range(ATTEMPTS):
        with qtbot.waitSignal(signal, timeout=500, raising=False) as blocker:
            server.press(chord)
        if blocker.signal_triggered:
            return
    raise AssertionError(f"{chord} was never seen")


# --- converting the settings' shortcut text --------------------------------------

@pytest.mark.parametrize(("qt", "platform", "expected"), [
    ("Ctrl+Shift+R", "linux", "<ctrl>+<shift>+r"),
    ("ctrl+alt+r", "linux", "<ctrl>+<alt>+r"),
    ("Ctrl+Alt+=", "linux", "<ctrl>+<alt>+="),
    ("Ctrl+Alt+-", "linux", "<ctrl>+<alt>+-"),
    ("Ctrl++", "linux", "<ctrl>++"),
    ("Meta+Space", "linux", "<cmd>+<space>"),
    ("Shift+Ctrl+PgUp", "linux", "<ctrl>+<shift>+<page_up>"),
    ("F9", "linux", "<f9>"),
    ("Ctrl+Alt+R", "darwin", "<cmd>+<alt>+r"),  # Qt's Ctrl is ⌘ on macOS …
    ("Meta+R", "darwin", "<ctrl>+r"),  # … and its Meta is Control
])
def test_qt_shortcut_text_becomes_pynput_hotkey_text(qapp, qt, platform, expected):
    assert to_pynput(qt, platform) == expected


@pytest.mark.parametrize(("qt", "says"), [
    ("", "No shortcut"),
    ("Ctrl+Foo", "not a key combination"),
    ("Ctrl+K, Ctrl+R", "one key combination"),
    ("R", "needs Ctrl, Alt or Meta"),
    ("Shift+R", "needs Ctrl, Alt or Meta"),
    ("Ctrl", "not a key combination"),
])
def test_shortcuts_that_cannot_be_global_are_a_clear_error(qapp, qt, says):
    with pytest.raises(ShortcutError, match=says) as caught:
        to_pynput(qt)
    if qt:
        assert qt in str(caught.value)


def test_converted_text_is_what_pynput_parses(qapp, xserver):
    from pynput.keyboard import HotKey, Key, KeyCode  # needs a display to import

    assert set(HotKey.parse(to_pynput("Ctrl+Shift+R"))) == {
        Key.ctrl, Key.shift, KeyCode.from_char("r")}
    assert set(HotKey.parse(to_pynput("Ctrl++"))) == {Key.ctrl, KeyCode.from_char("+")}
    assert len(HotKey.parse(to_pynput("Shift+Ctrl+PgUp"))) == 3


# --- the hook, end to end -------------------------------------------------------

def test_chord_pressed_in_another_app_opens_the_reply_box(qapp, store, xserver):
    store.settings.shortcuts.reply = "Ctrl+Shift+R"

    async def scenario():
        app = CaptionerApp(store, tray_available=False, source_factory=lambda a: None)
        status = app.global_keys.start()  # what app.start() does, without captioning
        assert status == HookStatus(True, "Works in every app.")
        app.show_settings()
        assert "Works in every app." in app.settings_dialog.shortcuts.global_note.text()
        app.settings_dialog.hide()  # (closing the last window would quit the test app)
        # Activation changes arrive as events: let the loop run them. (Never call
        # processEvents() inside a coroutine on a qasync loop: it runs other tasks'
        # steps re-entrantly, asyncio refuses them, and those tasks never run again.)
        await wait_until(lambda: not _visible(QApplication.activeWindow()), 5, "deactivation")
        assert not app.reply_box.isVisible()
        for _ in range(ATTEMPTS):
            xserver.press("ctrl+shift+r")
            try:
                await wait_until(app.reply_box.isVisible, 0.5, "the reply box")
                break
            except AssertionError:
                continue
        assert app.reply_box.isVisible()
        # Now Captioner is active: Qt's app-wide shortcut and the hook both see the
        # next press, and only one of them acts on it.
        await wait_until(lambda: QApplication.activeWindow() is app.reply_box, 5, "focus")
        opened: list[str] = []
        app.actions.reply.triggered.connect(lambda: opened.append("qt"))
        app.global_keys.activated.connect(opened.append)
        hook_saw: list[str] = []
        app.global_keys.pressed.connect(hook_saw.append)
        xserver.press("ctrl+shift+r")  # what the hook sees …
        QTest.keyClick(app.reply_box.text_edit, Qt.Key.Key_R,  # … and what Qt gets
                       Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
        await wait_until(lambda: hook_saw, 5, "the hook to see the press")
        assert opened == ["qt"]
        thread = app.global_keys.listener_thread
        assert thread is not None and thread.is_alive()
        await app.shutdown()
        assert not thread.is_alive()  # quitting leaves no listener behind

    run_async(qapp, scenario)


def _visible(window) -> bool:
    """Qt may still name a just-hidden window active: only a visible one has the focus."""
    return window is not None and window.isVisible()


def test_other_chords_do_not_fire(qtbot, keys, xserver):
    seen: list[str] = []
    keys.activated.connect(seen.append)
    assert keys.start().available
    press_until_seen(qtbot, xserver, keys.activated, "ctrl+shift+m")  # listening now
    # The listener handles presses in order and one signal carries them over in
    # order, so the second marker arriving means everything before it was handled.
    xserver.press("ctrl+shift+t", "ctrl+r", "shift+r", "r", "alt+shift+r", "ctrl+shift+m")
    qtbot.waitUntil(lambda: seen.count("marker") >= 2, timeout=5000)
    assert "reply" not in seen
    xserver.press("ctrl+shift+r", "ctrl+shift+m")
    qtbot.waitUntil(lambda: seen.count("marker") >= 3, timeout=5000)
    assert seen.count("reply") == 1


def test_a_press_while_captioner_is_active_is_left_to_qt(qtbot, xserver):
    keys = GlobalShortcuts({"reply": "Ctrl+Shift+R"})  # the real focus check
    window = QWidget()
    qtbot.addWidget(window)
    window.show()
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    activated: list[str] = []
    keys.activated.connect(activated.append)
    try:
        assert keys.start().available
        press_until_seen(qtbot, xserver, keys.pressed, "ctrl+shift+r")
        assert activated == []  # Qt's own app-wide shortcut gets this press: one action
        window.hide()
        qtbot.waitUntil(lambda: QApplication.activeWindow() is None, timeout=5000)
        with qtbot.waitSignal(keys.activated, timeout=5000):
            xserver.press("ctrl+shift+r")
        assert activated == ["reply"]
    finally:
        keys.stop()


def test_stop_ends_the_listener_thread_and_new_keys_restart_it(qtbot, keys, xserver):
    assert keys.start().available
    first = keys.listener_thread
    assert first is not None and first.is_alive()
    keys.set_shortcuts({"reply": "Ctrl+Alt+R", "marker": "Ctrl+Alt+M"})
    assert not first.is_alive()
    second = keys.listener_thread
    assert second is not None and second.is_alive() and keys.status.available
    press_until_seen(qtbot, xserver, keys.activated, "ctrl+alt+m")  # the new keys work
    keys.stop()
    assert not second.is_alive()
    assert keys.listener_thread is None and not keys.status.available


def test_turned_off_the_hook_stops_and_says_so_and_comes_back_when_turned_on(
        qtbot, keys, xserver):
    assert keys.start().available
    thread = keys.listener_thread
    keys.set_enabled(False)
    assert thread is not None and not thread.is_alive()
    assert keys.listener_thread is None
    assert not keys.status.available and "Turned off" in keys.status.reason
    assert not keys.start().available  # stays off until turned on
    keys.set_enabled(True)
    assert keys.status.available and keys.listener_thread is not None
    press_until_seen(qtbot, xserver, keys.activated, "ctrl+shift+m")


def test_the_hook_ends_however_soon_it_is_turned_off(qtbot, keys, xserver):
    """pynput says it listens just before it enables the recording, and its control
    connection belongs to its thread: turned off at once, its thread lingered (6 of
    40 tries) until a key was pressed. Every one must end, at once."""
    lingered = []
    for attempt in range(30):
        assert keys.start().available
        thread = keys.listener_thread
        keys.set_enabled(False)
        if thread.is_alive():
            lingered.append(attempt)
        keys.set_enabled(True)
        keys.stop()
    assert lingered == []


def test_the_shortcuts_page_turns_the_global_reply_shortcut_off(qapp, qtbot, tmp_path):
    from captioner.settings import Settings
    from captioner.ui.settings.other_pages import ShortcutsPage

    page = ShortcutsPage()
    qtbot.addWidget(page)
    settings = Settings()
    page.load(settings)
    assert page.global_reply.isChecked()
    page.global_reply.setChecked(False)
    assert page.write(settings) == {}
    assert settings.shortcuts.global_reply is False


# --- where there is no hook -----------------------------------------------------

def _free_display() -> str:
    for n in range(300, 1000):
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
            return f":{n}"
    raise RuntimeError("no free display number")


def test_a_display_without_a_server_is_a_status_not_an_exception(qapp, monkeypatch, caplog):
    display = _free_display()
    _session(monkeypatch, display)
    keys = GlobalShortcuts({"reply": "Ctrl+Alt+R"})
    status = keys.start()
    assert not status.available
    assert status.reason.startswith("Works only while a Captioner window is active")
    assert f"cannot reach the X display {display}" in status.reason
    assert keys.listener_thread is None
    warnings = [r for r in caplog.records
                if r.name == "captioner.ui.global_shortcut" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and display in warnings[0].getMessage()
    keys.stop()  # harmless


def test_an_x_server_without_record_is_a_status(qapp, monkeypatch):
    server = XServer(extra=("-extension", "RECORD"))
    server.start()
    try:
        _session(monkeypatch, server.display)
        status = GlobalShortcuts({"reply": "Ctrl+Alt+R"}).start()
    finally:
        server.stop()
    assert not status.available
    assert "lacks the RECORD extension" in status.reason


@pytest.mark.parametrize(("wayland", "says"), [
    (True, "Wayland session lets no app watch keys"),
    (False, "DISPLAY is not set"),
])
def test_no_x_display_is_a_status(qapp, monkeypatch, wayland, says):
    _session(monkeypatch, None)
    if wayland:
        monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    status = GlobalShortcuts({"reply": "Ctrl+Alt+R"}).start()
    assert not status.available and says in status.reason


def test_a_shortcut_that_cannot_be_global_is_a_status(qapp, monkeypatch):
    _session(monkeypatch, None)
    keys = GlobalShortcuts({"reply": "R"})
    assert keys.start() == HookStatus(
        False, "“R” needs Ctrl, Alt or Meta: on its own it would fire while you type in "
               "other apps. It works only while a Captioner window is active.")
    assert GlobalShortcuts({"reply": ""}).start() == HookStatus(False, NOT_SET)
