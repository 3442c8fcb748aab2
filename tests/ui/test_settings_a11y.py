"""What a screen reader gets from Settings: the text of its notes and status, the error of
the field the focus is moved to, and a spoken summary; and error text readable on light
and dark themes."""

from __future__ import annotations

from collections import Counter

import pytest
from PySide6.QtGui import QAccessible, QColor, QPalette
from PySide6.QtWidgets import QApplication, QLabel

from captioner.ui.contrast import contrast
from captioner.ui.settings.dialog import SettingsDialog
from captioner.ui.settings.shortcut_edit import DESCRIPTION


class NoKeys:
    def has_keys(self) -> bool:
        return False

    def store(self, access_key_id: str, secret_access_key: str) -> None:
        pass


def texts(announced: list) -> list[str]:
    """What was announced to screen readers, the text only."""
    return [text for text, _ in announced]


def make(qtbot, store) -> SettingsDialog:
    dialog = SettingsDialog(store, devices=lambda: [], keys=NoKeys())
    qtbot.addWidget(dialog)
    return dialog


def read(widget, what: QAccessible.Text) -> str:
    return QAccessible.queryAccessibleInterface(widget).text(what)


def heard(widget) -> str:
    """Everything a screen reader can get from a widget's name and description."""
    return f"{read(widget, QAccessible.Text.Name)} {read(widget, QAccessible.Text.Description)}"


def bad_colour(dialog: SettingsDialog) -> None:
    page = dialog.appearance
    page.preset.setCurrentIndex(page.preset.findData("custom"))
    page.text_color.setText("yelow")


def test_every_label_with_text_has_it_reachable_by_screen_readers(qtbot, store) -> None:
    dialog = make(qtbot, store)
    dialog.audio.device_note.setText("Audio devices could not be listed: no sound server")
    dialog.recognition.keys_note.setText("Keys are stored in the OS keyring.")
    dialog.shortcuts.set_global_note("Works in every app.")
    bad_colour(dialog)
    assert not dialog.apply()
    lost = [label.text() for label in dialog.findChildren(QLabel)  # mnemonics are not read
            if label.text().strip() and label.text().replace("&", "") not in heard(label)]
    assert lost == []


def test_a_failed_apply_ties_the_error_to_the_focused_field_and_says_so(qapp, qtbot, store,
                                                                         announced) -> None:
    dialog = make(qtbot, store)
    with qtbot.waitExposed(dialog):
        dialog.show()
    dialog.activateWindow()
    field = dialog.appearance.text_color
    plain = read(field, QAccessible.Text.Description)
    bad_colour(dialog)
    assert not dialog.apply()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is field)
    assert "is not a colour" in read(field, QAccessible.Text.Description)
    summary = "1 setting needs fixing before they can be applied."
    assert summary in heard(dialog.summary)
    assert texts(announced) == [summary]
    field.setText("#FFFF00")  # fixed: the field is described as before
    assert dialog.apply()
    assert read(field, QAccessible.Text.Description) == plain
    assert texts(announced)[-1] == "Settings applied."


def test_a_shortcut_fields_own_description_comes_back_once_it_is_fixed(qtbot, store) -> None:
    dialog = make(qtbot, store)
    edit = dialog.shortcuts.edits["reply"]
    edit.setKeySequence("Esc")
    assert not dialog.apply()
    assert edit.accessibleDescription().startswith("Esc is needed for typing")
    edit.setKeySequence("Ctrl+Alt+J")  # the error stays until Apply checks again
    assert edit.accessibleDescription().startswith("Esc is needed for typing")
    assert dialog.apply()
    assert edit.accessibleDescription() == f"Now Ctrl+Alt+J. {DESCRIPTION}"


def _palette(window: str, button: str, text: str) -> QPalette:
    palette = QPalette()
    for role, colour in ((QPalette.ColorRole.Window, window), (QPalette.ColorRole.Base, window),
                         (QPalette.ColorRole.Button, button),
                         (QPalette.ColorRole.WindowText, text), (QPalette.ColorRole.Text, text),
                         (QPalette.ColorRole.ButtonText, text)):
        palette.setColor(role, QColor(colour))
    return palette


@pytest.mark.parametrize(("window", "button", "text"), [("#2D2D2D", "#3C3C3C", "#FFFFFF"),
                                                       ("#EFEFEF", "#EFEFEF", "#000000"),
                                                       ("#1E1E1E", "#353535", "#FFFFFF")],
                         ids=["dark", "light", "darker"])
def test_error_text_is_readable_on_the_background_it_is_painted_on(qtbot, store, window,
                                                                   button, text) -> None:
    dialog = make(qtbot, store)
    dialog.setPalette(_palette(window, button, text))  # a desktop theme, light or dark
    dialog.tabs.setCurrentWidget(dialog.transcript)
    dialog.transcript.folder.setText("")
    with qtbot.waitExposed(dialog):
        dialog.show()
    assert not dialog.apply()
    label = dialog.transcript.errors["folder"]
    assert label.isVisible()
    shot = dialog.grab().toImage()
    corner = label.mapTo(dialog, label.rect().topLeft())
    pixels = Counter(QColor(shot.pixel(corner.x() + x, corner.y() + y)).name()
                     for x in range(label.width()) for y in range(label.height()))
    background = pixels.most_common(1)[0][0]  # text covers far less than the label
    ink = label.palette().color(label.foregroundRole()).name()
    assert contrast(ink, background) >= 4.5, (ink, background)
