"""A shortcut field a keyboard user can also leave.

A plain QKeySequenceEdit records every key, so Shift+Tab, Esc, Enter and Alt+letter end up
as app-wide shortcuts and the focus stays put. Here the keys that move around keep doing
so and are never recorded; Backspace and Delete clear the field (its clear button needs
the mouse).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QKeyEvent, QKeySequence
from PySide6.QtWidgets import QKeySequenceEdit, QWidget

from captioner.ui.settings.common import describe

DESCRIPTION = ("Press the new shortcut, with Ctrl or Alt, e.g. Ctrl+Alt+C. Backspace or "
               "Delete clears it. Tab and Shift+Tab move on; Esc and Enter act on the dialog.")
COMMAND = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier \
    | Qt.KeyboardModifier.MetaModifier
TO_DIALOG = (Qt.Key.Key_Escape, Qt.Key.Key_Return, Qt.Key.Key_Enter)  # cancel / OK
CLEARS = (Qt.Key.Key_Backspace, Qt.Key.Key_Delete)
# Qt clears the field as soon as any key goes down, so Shift of Shift+Tab would wipe it
MODIFIER_KEYS = (Qt.Key.Key_Shift, Qt.Key.Key_Control, Qt.Key.Key_Alt, Qt.Key.Key_AltGr,
                 Qt.Key.Key_Meta)


def _modifiers(event: QKeyEvent) -> Qt.KeyboardModifier:
    return event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier


def _mnemonic(event: QKeyEvent) -> bool:
    """Alt+letter or Alt+digit: the key that jumps to a labelled field or a button."""
    return _modifiers(event) == Qt.KeyboardModifier.AltModifier \
        and (Qt.Key.Key_0 <= event.key() <= Qt.Key.Key_9
             or Qt.Key.Key_A <= event.key() <= Qt.Key.Key_Z)


class ShortcutEdit(QKeySequenceEdit):
    """One key combination; the keys for moving around are passed on, not recorded."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMaximumSequenceLength(1)
        self.setClearButtonEnabled(True)
        # Qt exposes the shortcut to screen readers only on an inner line edit that never
        # has focus, so moving here read the label alone: the description says it.
        self.keySequenceChanged.connect(self._describe)
        self._describe(self.keySequence())

    def _describe(self, keys: QKeySequence) -> None:
        now = keys.toString(QKeySequence.SequenceFormat.NativeText)
        describe(self, (f"Now {now}. " if now else "No shortcut. ") + DESCRIPTION)

    def event(self, event: QEvent) -> bool:
        kind = event.type()
        if kind not in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress) \
                or not isinstance(event, QKeyEvent):
            return super().event(event)
        key, command = event.key(), bool(_modifiers(event) & COMMAND)
        tab = key in (Qt.Key.Key_Tab, Qt.Key.Key_Backtab)
        passed_on = _mnemonic(event) or (tab and command) or (key in TO_DIALOG and not command)
        if passed_on:  # to the mnemonic's shortcut, Ctrl+Tab's tab widget or the dialog
            event.ignore()
            return False
        if kind == QEvent.Type.ShortcutOverride:  # everything else is ours to record
            return super().event(event)
        if key in MODIFIER_KEYS:  # wait for the key they go with
            return True
        if tab:
            backwards = key == Qt.Key.Key_Backtab \
                or bool(_modifiers(event) & Qt.KeyboardModifier.ShiftModifier)
            self.focusNextPrevChild(not backwards)
            return True
        if key in CLEARS and _modifiers(event) == Qt.KeyboardModifier.NoModifier:
            self.clear()
            return True
        return super().event(event)
