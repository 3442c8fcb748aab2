"""System-wide keyboard shortcuts: the reply box opens while another app has focus.

Qt's shortcuts (``AppActions``) fire only while a Captioner window is active. Here
pynput watches the keyboard of the whole session (X11 RECORD, a Windows hook, a
macOS event tap) on a thread of its own; a queued signal carries each press to
the GUI thread, so nothing Qt is touched from that thread. Where no such hook
exists (a Wayland session without X, no display, an X server without RECORD,
macOS without the Accessibility permission, pynput missing) :attr:`status` says
why in one sentence, one log line records it, and the app-wide Qt shortcut
still works: the feature narrows, nothing breaks.

One press, one action: the hook and Qt both see a key pressed while a Captioner
window is active, so :attr:`GlobalShortcuts.activated` stays quiet then and leaves
that press to Qt's app-wide shortcut (``pressed`` still reports it). That relies
on every Captioner window carrying the app's keyboard actions
(``AppActions.keyboard()``); it also keeps the hook out of the way while the
Shortcuts page records a new key combination.

The hook sees every key the user types; nothing here logs or keeps keys.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication

from captioner.errors import CaptionerError

log = logging.getLogger(__name__)

JOIN_SECONDS = 2.0
_DISABLE_EVERY_SECONDS = 0.05
READY_SECONDS = 2.0

WORKS_EVERYWHERE = "Works in every app."
XWAYLAND_ONLY = ("Works while an X11 app has focus; Wayland apps do not share their keys, "
                 "so there it works only in Captioner.")
ONLY_HERE = "Works only while a Captioner window is active: "
ONLY_HERE_SENTENCE = "It works only while a Captioner window is active."
NOT_SET = "No shortcut is set."
TURNED_OFF = "Turned off: works only while a Captioner window is active."

_MODIFIERS = (  # Qt modifier → pynput key; on macOS Qt's Ctrl is ⌘ and its Meta is Control
    (Qt.KeyboardModifier.ControlModifier, "<ctrl>", "<cmd>"),
    (Qt.KeyboardModifier.AltModifier, "<alt>", "<alt>"),
    (Qt.KeyboardModifier.ShiftModifier, "<shift>", "<shift>"),
    (Qt.KeyboardModifier.MetaModifier, "<cmd>", "<ctrl>"),
)
_NAMED_KEYS = {
    Qt.Key.Key_Space: "<space>", Qt.Key.Key_Tab: "<tab>", Qt.Key.Key_Return: "<enter>",
    Qt.Key.Key_Enter: "<enter>", Qt.Key.Key_Escape: "<esc>",
    Qt.Key.Key_Backspace: "<backspace>", Qt.Key.Key_Delete: "<delete>",
    Qt.Key.Key_Insert: "<insert>", Qt.Key.Key_Home: "<home>", Qt.Key.Key_End: "<end>",
    Qt.Key.Key_PageUp: "<page_up>", Qt.Key.Key_PageDown: "<page_down>",
    Qt.Key.Key_Left: "<left>", Qt.Key.Key_Right: "<right>", Qt.Key.Key_Up: "<up>",
    Qt.Key.Key_Down: "<down>", Qt.Key.Key_Pause: "<pause>",
    Qt.Key.Key_Print: "<print_screen>", Qt.Key.Key_Menu: "<menu>",
}
_FUNCTION_KEYS = {getattr(Qt.Key, f"Key_F{n}"): f"<f{n}>" for n in range(1, 21)}


class ShortcutError(CaptionerError, ValueError):
    """A shortcut that cannot be watched system-wide; the message says why."""


def to_pynput(sequence: str, platform: str = sys.platform) -> str:
    """Qt's portable shortcut text (``"Ctrl+Shift+R"``, as settings store it) →
    pynput's hotkey text (``"<ctrl>+<shift>+r"``); :class:`ShortcutError` if it
    is empty, not one key combination, or one that would fire while typing."""
    text = sequence.strip()
    if not text:
        raise ShortcutError(NOT_SET)
    keys = QKeySequence(text, QKeySequence.SequenceFormat.PortableText)
    if keys.count() != 1:
        raise ShortcutError(f"“{text}” is a sequence of key presses; a system-wide shortcut "
                            "must be one key combination.")
    combo = keys[0]
    key, mods = combo.key(), combo.keyboardModifiers()
    mac = platform == "darwin"
    parts = [mac_name if mac else name for flag, name, mac_name in _MODIFIERS if mods & flag]
    token = _key_token(key)
    if token is None:
        raise ShortcutError(f"“{text}” is not a key combination Captioner can watch "
                            "system-wide (use letters, digits, punctuation, F1–F20 or "
                            "keys like Space, Home, arrows).")
    if key not in _FUNCTION_KEYS and not mods & ~Qt.KeyboardModifier.ShiftModifier & (
            Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
            | Qt.KeyboardModifier.MetaModifier):
        raise ShortcutError(f"“{text}” needs Ctrl, Alt or Meta: on its own it would fire "
                            "while you type in other apps.")
    return "+".join([*parts, token])


def _key_token(key: Qt.Key) -> str | None:
    if key in _NAMED_KEYS:
        return _NAMED_KEYS[key]
    if key in _FUNCTION_KEYS:
        return _FUNCTION_KEYS[key]
    code = key.value
    if 0x21 <= code <= 0x7E or 0xA1 <= code <= 0xFF:  # Qt's codes for these are Latin-1
        return chr(code).lower()
    return None


@dataclass(frozen=True, slots=True)
class HookStatus:
    """Whether the system-wide hook runs, and a sentence for the settings page."""

    available: bool
    reason: str


def _app_has_focus() -> bool:
    # Qt can still name a window active after it was hidden (its activation event came
    # late); a hidden window has no keyboard focus to give Qt's shortcut.
    window = QApplication.activeWindow()
    return window is not None and window.isVisible()


class GlobalShortcuts(QObject):
    """Named shortcuts (``{"reply": "Ctrl+Alt+R"}``) watched across the whole session.

    ``pressed(name)``: the combination was pressed anywhere. ``activated(name)``:
    pressed while no Captioner window was active (otherwise Qt's own shortcut
    handles it). Call :meth:`start` once the app runs and :meth:`stop` on quit.
    """

    pressed = Signal(str)
    activated = Signal(str)
    status_changed = Signal(object)  # HookStatus
    _hit = Signal(str)  # from the listener thread
    _died = Signal(object, str)  # from the listener thread: listener, reason

    def __init__(self, shortcuts: Mapping[str, str] | None = None, *,
                 app_has_focus: Callable[[], bool] = _app_has_focus,
                 platform: str = sys.platform, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._shortcuts = dict(shortcuts or {})
        self._app_has_focus = app_has_focus
        self._platform = platform
        self._listener: Any = None  # a pynput listener (a threading.Thread)
        self._enabled = True
        self._wanted = False  # start() was called and stop() not since
        self._status = HookStatus(False, "Not started.")
        self._hit.connect(self._on_hit, Qt.ConnectionType.QueuedConnection)
        self._died.connect(self._on_died, Qt.ConnectionType.QueuedConnection)

    @property
    def status(self) -> HookStatus:
        return self._status

    @property
    def listener_thread(self) -> threading.Thread | None:
        """The listener's thread while one runs."""
        return self._listener

    def set_shortcuts(self, shortcuts: Mapping[str, str]) -> None:
        """Use new key combinations; a running hook restarts with them."""
        if dict(shortcuts) == self._shortcuts:
            return
        self._shortcuts = dict(shortcuts)
        if self._listener is not None:
            self.stop()
            self.start()

    def set_enabled(self, enabled: bool) -> None:
        """Turn the hook off (it sees every key typed) or back on; off also stops it,
        and on starts it again if the app had started it."""
        if enabled == self._enabled:
            return
        self._enabled = enabled
        if enabled:
            if self._wanted:
                self.start()
            return
        wanted = self._wanted
        self.stop()
        self._wanted = wanted
        self._set_status(HookStatus(False, TURNED_OFF))

    def start(self) -> HookStatus:
        """Start watching; never raises: a hook that cannot run is a status."""
        self._wanted = True
        if self._listener is not None:
            return self._status
        if not self._enabled:
            self._set_status(HookStatus(False, TURNED_OFF))
            return self._status
        hotkeys, problems = {}, []
        for name, sequence in self._shortcuts.items():
            if not sequence.strip():
                continue
            try:
                hotkeys[to_pynput(sequence, self._platform)] = name
            except ShortcutError as exc:
                problems.append(str(exc))
        if not hotkeys:
            reason = f"{problems[0]} {ONLY_HERE_SENTENCE}" if problems else NOT_SET
            self._set_status(HookStatus(False, reason))
            return self._status
        blocker = _platform_blocker(self._platform)
        if blocker is None:
            try:
                self._listener = _start_listener(hotkeys, self._hit.emit, self._died.emit)
            except Exception as exc:  # ImportError, Xlib errors, pynput's ValueError
                blocker = f"the keyboard hook failed to start ({_first_line(exc)})."
        if blocker is not None:
            self._set_status(HookStatus(False, ONLY_HERE + blocker))
        else:
            reason = XWAYLAND_ONLY if _wayland_session() else WORKS_EVERYWHERE
            self._set_status(HookStatus(True, " ".join([reason, *problems])))
        return self._status

    def stop(self) -> None:
        """Stop watching and wait (briefly) for the listener's thread to end."""
        self._wanted = False
        listener, self._listener = self._listener, None
        if listener is None:
            return
        deadline = time.monotonic() + JOIN_SECONDS  # one wait in all: X11's stop waits too
        try:
            listener.stop()
            listener.join(max(0.0, deadline - time.monotonic()))
        except Exception as exc:  # a listener that already failed re-raises here
            log.debug("= keyboard hook ended with %s", _first_line(exc))
        if listener.is_alive():
            log.warning("! the keyboard hook's thread did not end within %s s", JOIN_SECONDS)
        self._set_status(HookStatus(False, "Stopped."), quiet=True)

    def _on_hit(self, name: str) -> None:
        self.pressed.emit(name)
        if self._app_has_focus():
            log.debug("= %s shortcut pressed in Captioner: Qt's shortcut handles it", name)
            return
        self.activated.emit(name)

    def _on_died(self, listener: threading.Thread, reason: str) -> None:
        if listener is not self._listener:
            return  # an earlier listener's news
        self._listener = None
        self._set_status(HookStatus(False, ONLY_HERE + f"the keyboard hook stopped ({reason})."))

    def _set_status(self, status: HookStatus, *, quiet: bool = False) -> None:
        if status == self._status:
            return
        self._status = status
        names = ", ".join(f"{k} ({v})" for k, v in self._shortcuts.items() if v.strip())
        if not quiet:
            if status.available:
                log.info("= system-wide shortcuts on: %s. %s", names, status.reason)
            else:
                log.warning("! system-wide shortcuts off (%s): %s", names or "none",
                            status.reason)
        self.status_changed.emit(status)


# --- the platform's hook -------------------------------------------------------

def _wayland_session() -> bool:
    return bool(os.environ.get("WAYLAND_DISPLAY")) or \
        os.environ.get("XDG_SESSION_TYPE", "").lower() == "wayland"


def _platform_blocker(platform: str) -> str | None:
    """Why the hook cannot run here (a sentence ending), or None: checked before
    starting because pynput's listener blocks forever when its thread fails early."""
    if platform == "win32":
        return None
    if platform == "darwin":
        try:
            import HIServices  # pyobjc, installed with pynput on macOS
        except ImportError as exc:
            return f"pynput's macOS parts are missing ({_first_line(exc)})."
        if not HIServices.AXIsProcessTrusted():
            return ("macOS has not allowed Captioner to watch the keyboard: add it in "
                    "System Settings → Privacy & Security → Accessibility (and Input "
                    "Monitoring), then restart Captioner.")
        return None
    display = os.environ.get("DISPLAY", "")
    if not display:
        if _wayland_session():
            return ("this Wayland session lets no app watch keys system-wide (and there "
                    "is no X display to use instead).")
        return "there is no X display (DISPLAY is not set)."
    try:
        import Xlib.display  # python-xlib, installed with pynput on Linux
    except ImportError as exc:
        return f"python-xlib is missing ({_first_line(exc)})."
    try:
        connection = Xlib.display.Display(display)
    except Exception as exc:
        return f"cannot reach the X display {display} ({_first_line(exc)})."
    try:
        if not connection.has_extension("RECORD"):
            return f"the X server at {display} lacks the RECORD extension."
    finally:
        connection.close()
    return None


def _start_listener(hotkeys: Mapping[str, str], hit: Callable[[str], None],
                    died: Callable[[threading.Thread, str], None]) -> threading.Thread:
    """Start a pynput hotkey listener calling ``hit(name)`` from its thread; raises
    if it cannot listen. Waits (briefly) until it listens, so that stopping it
    right away works too."""
    listener_class = _listener_class()

    def report(name: str) -> Callable[[], None]:
        def on_activate() -> None:
            with contextlib.suppress(RuntimeError):  # the Qt object is gone (quitting)
                hit(name)
        return on_activate

    listener = listener_class({combo: report(name) for combo, name in hotkeys.items()},
                              died=died)
    listener.start()
    if not listener.started.wait(READY_SECONDS):
        raise TimeoutError(f"it did not start within {READY_SECONDS} s")
    if listener.failure is not None:
        raise RuntimeError(listener.failure)
    return listener


@functools.cache
def _listener_class() -> type:
    # Imported here, not at the top: importing pynput.keyboard on Linux connects to
    # the X display at once and raises without one, and the app must run without.
    from pynput import keyboard

    xorg = keyboard.Listener.__module__.endswith("._xorg")

    class Listener(keyboard.GlobalHotKeys):
        """pynput's hotkey listener that says when it listens or why it failed,
        and (X11) stops without waiting for the next key press."""

        def __init__(self, hotkeys: dict[str, Callable[[], None]], *,
                     died: Callable[[threading.Thread, str], None]) -> None:
            super().__init__(hotkeys)
            self.started = threading.Event()  # listening, or failed (see failure)
            self.failure: str | None = None
            self._died = died

        def _mark_ready(self) -> None:  # pynput calls this once it listens
            super()._mark_ready()
            self.started.set()

        def run(self) -> None:
            try:
                super().run()
            except Exception as exc:
                if self.started.is_set():
                    if self.running:  # the hook died while in use
                        with contextlib.suppress(RuntimeError):  # Qt object gone
                            self._died(self, _first_line(exc))
                else:
                    self.failure = _first_line(exc)
                    super()._mark_ready()  # release pynput's own wait()
                    self.started.set()

        def _stop_platform(self) -> None:
            if not xorg:
                super()._stop_platform()
                return
            # pynput 1.8's X11 stop queues RECORD's disable on the recording
            # connection without flushing it, so the thread lingers until a key is
            # pressed (pynput PR #583). Two more traps: pynput says it is ready
            # *before* it enables the recording, so a disable that reaches the X
            # server first is a no-op and the enable then waits forever; and its
            # control connection is the listener thread's, which python-xlib does
            # not share safely. So: a connection of our own, and the disable sent
            # again until the thread ends.
            context = getattr(self, "_context", None)
            if context is None:
                return
            deadline = time.monotonic() + JOIN_SECONDS
            with contextlib.closing(_xlib_display()) as control:
                while True:
                    control.record_disable_context(context)
                    control.flush()
                    if threading.current_thread() is self or time.monotonic() > deadline:
                        return
                    self.join(_DISABLE_EVERY_SECONDS)
                    if not self.is_alive():
                        return

    return Listener


def _xlib_display() -> Any:
    """A connection of our own to the X display; its errors (a disable that comes
    after the recording ended names a context already freed) are expected."""
    import Xlib.display

    display = Xlib.display.Display()
    display.set_error_handler(lambda *_: None)
    return display


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
