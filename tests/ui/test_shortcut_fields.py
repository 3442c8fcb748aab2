"""Settings → Shortcuts from the keyboard alone: the keys that move around a dialog keep
moving around in a shortcut field and are never recorded, and a shortcut that would take a
key typing or moving needs (Esc, Shift+Tab, a plain letter, Alt+letter) is refused."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible, QKeySequence
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QDialog

from captioner.settings import Settings, ShortcutSettings
from captioner.ui.actions import AppActions
from captioner.ui.settings.dialog import SettingsDialog
from captioner.ui.settings.other_pages import ShortcutsPage
from captioner.ui.settings.validation import shortcut_error

NONE = Qt.KeyboardModifier.NoModifier
SHIFT = Qt.KeyboardModifier.ShiftModifier
ALT = Qt.KeyboardModifier.AltModifier
CTRL = Qt.KeyboardModifier.ControlModifier


class NoKeys:
    def has_keys(self) -> bool:
        return False

    def store(self, access_key_id: str, secret_access_key: str) -> None:
        pass


@pytest.fixture
def dialog(qtbot, store) -> SettingsDialog:
    dialog = SettingsDialog(store, devices=lambda: [], keys=NoKeys())
    qtbot.addWidget(dialog)
    dialog.tabs.setCurrentWidget(dialog.shortcuts)
    with qtbot.waitExposed(dialog):
        dialog.show()
    dialog.activateWindow()
    return dialog


def press(key: Qt.Key, modifiers: Qt.KeyboardModifier = NONE) -> None:
    """A key pressed where the focus is, its modifier keys going down first (as QTest and
    a real keyboard do)."""
    QTest.keyClick(QApplication.focusWidget(), key, modifiers)
    QApplication.processEvents()


def focus(qtbot, field) -> None:
    field.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is field)


def values(dialog: SettingsDialog) -> dict[str, str]:
    return {key: edit.keySequence().toString() for key, edit in dialog.shortcuts.edits.items()}


def test_tab_and_shift_tab_move_on_without_recording_anything(qtbot, dialog) -> None:
    edits, before = dialog.shortcuts.edits, values(dialog)
    focus(qtbot, edits["font_bigger"])
    press(Qt.Key.Key_Backtab, SHIFT)
    assert QApplication.focusWidget() is edits["click_through"]
    press(Qt.Key.Key_Tab)
    press(Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is edits["font_smaller"]
    assert values(dialog) == before


def test_alt_letter_goes_to_the_field_it_names_and_ctrl_tab_to_the_next_page(
        qtbot, dialog) -> None:
    edits, before = dialog.shortcuts.edits, values(dialog)
    focus(qtbot, edits["start_stop"])
    press(Qt.Key.Key_B, ALT)  # "&Bigger text:"
    assert QApplication.focusWidget() is edits["font_bigger"]
    press(Qt.Key.Key_Tab, CTRL)
    assert dialog.tabs.currentWidget() is not dialog.shortcuts
    assert values(dialog) == before


def test_esc_closes_the_dialog_and_nothing_is_recorded_or_saved(qtbot, dialog, store) -> None:
    focus(qtbot, dialog.shortcuts.edits["reply"])
    press(Qt.Key.Key_Escape)
    assert not dialog.isVisible() and dialog.result() == QDialog.DialogCode.Rejected
    assert dialog.shortcuts.edits["reply"].keySequence().toString() == "Ctrl+Alt+R"
    assert store.settings.shortcuts.reply == "Ctrl+Alt+R"


def test_enter_presses_ok_instead_of_becoming_the_shortcut(qtbot, dialog, store) -> None:
    focus(qtbot, dialog.shortcuts.edits["start_stop"])
    press(Qt.Key.Key_Return)
    assert not dialog.isVisible() and dialog.result() == QDialog.DialogCode.Accepted
    assert store.settings.shortcuts.start_stop == "Ctrl+Alt+C"


@pytest.mark.parametrize("key", [Qt.Key.Key_Backspace, Qt.Key.Key_Delete])
def test_backspace_or_delete_clears_the_field_as_its_description_says(qtbot, dialog,
                                                                       store, key) -> None:
    edit = dialog.shortcuts.edits["reply"]
    focus(qtbot, edit)
    press(key)
    assert edit.keySequence().isEmpty() and QApplication.focusWidget() is edit
    described = QAccessible.queryAccessibleInterface(edit).text(QAccessible.Text.Description)
    assert "Backspace or Delete clears it" in described
    assert dialog.apply() and store.settings.shortcuts.reply == ""


def test_a_new_shortcut_is_still_recorded(qtbot, dialog, store) -> None:
    focus(qtbot, dialog.shortcuts.edits["reply"])
    press(Qt.Key.Key_Y, CTRL | ALT)
    assert dialog.apply() and store.settings.shortcuts.reply == "Ctrl+Alt+Y"


def test_a_screen_reader_hears_the_shortcut_a_field_holds(qtbot, dialog) -> None:
    """The focused field's own text is empty to assistive technology (Qt keeps the keys on
    an inner line edit), so its description says them, and follows a change."""
    edit = dialog.shortcuts.edits["reply"]
    focus(qtbot, edit)

    def heard() -> str:
        return QAccessible.queryAccessibleInterface(QApplication.focusWidget()).text(
            QAccessible.Text.Description)

    before = edit.keySequence().toString(QKeySequence.SequenceFormat.NativeText)
    assert before and heard().startswith(f"Now {before}. ")
    press(Qt.Key.Key_Y, CTRL | ALT)
    assert heard().startswith("Now Ctrl+Alt+Y. ")
    press(Qt.Key.Key_Backspace)
    assert heard().startswith("No shortcut. ") and "Backspace or Delete clears it" in heard()


@pytest.mark.parametrize("typed", ["Esc", "Shift+Backtab", "Return", "Backspace", "Del", "Y",
                                   "Shift+A", "F5", "Left", "Alt+B"])
def test_a_shortcut_taking_a_key_that_typing_or_moving_needs_is_refused(qtbot, dialog,
                                                                         store, typed) -> None:
    dialog.shortcuts.edits["font_bigger"].setKeySequence(typed)  # e.g. from an old file
    assert not dialog.apply()
    error = dialog.shortcuts.error_text("font_bigger")
    assert error.startswith(typed) and ("Ctrl" in error), error
    assert store.settings.shortcuts.font_bigger == "Ctrl+Alt+="


@pytest.mark.parametrize("allowed", ["Ctrl+Alt+C", "Ctrl++", "Meta+X", "Alt+F9", "Alt+Shift+B",
                                     "Ctrl+Shift+Left", ""])
def test_shortcuts_with_ctrl_alt_or_meta_are_accepted(allowed) -> None:
    assert shortcut_error(allowed) is None


def test_a_saved_shortcut_the_page_would_refuse_gives_way_to_the_default(qapp):
    """From an older version or a hand-edited file: Shift+Tab as "Bigger text" would take
    moving back from every window."""
    actions = AppActions(ShortcutSettings(font_bigger="Shift+Tab", reply="R",
                                          start_stop="Ctrl+Shift+K"))
    assert actions.font_bigger.shortcut().toString() == ShortcutSettings().font_bigger
    assert actions.reply.shortcut().toString() == ShortcutSettings().reply
    assert actions.start_stop.shortcut().toString() == "Ctrl+Shift+K"  # a fine one stays


def test_a_shortcut_used_twice_names_the_command_as_the_page_does(qtbot):
    page = ShortcutsPage()
    qtbot.addWidget(page)
    page.load(Settings())
    page.edits["reply"].setKeySequence(QKeySequence("Ctrl+Alt+C"))
    errors = page.write(Settings())
    assert errors["reply"] == "Ctrl+Alt+C is already used for “Live captions on / off”."
