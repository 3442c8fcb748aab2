"""A question box that never nests an event loop: ``open()`` and a Future, not ``exec()``."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget


async def ask(parent: QWidget | None, title: str, text: str,
              choices: list[tuple[str, str]], *, default: str) -> str:
    """Show ``text`` with one button per (key, label); returns the key clicked.

    Escape or closing the box answers ``default`` (the safe choice).
    """
    box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.NoButton,
                      parent)
    box.setAccessibleName(title)
    buttons = {}
    for key, label in choices:
        role = (QMessageBox.ButtonRole.RejectRole if key == default
                else QMessageBox.ButtonRole.AcceptRole)
        button = box.addButton(label, role)
        button.setAccessibleName(label.replace("&", ""))
        buttons[button] = key
        if key == default:
            box.setDefaultButton(button)
            box.setEscapeButton(button)
    answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def done(_result: int) -> None:
        if not answer.done():
            answer.set_result(buttons.get(box.clickedButton(), default))

    box.finished.connect(done)
    over_overlay = parent is not None and bool(
        parent.window().windowFlags() & Qt.WindowType.WindowStaysOnTopHint)
    if over_overlay:  # else the overlay, always on top, hides the box centred on it
        box.setWindowFlag(Qt.WindowType.WindowStaysOnTopHint, True)
    box.open()
    if over_overlay:
        _centre_on_screen(box, parent)
    try:
        return await answer
    finally:
        box.deleteLater()


def _centre_on_screen(box: QWidget, parent: QWidget) -> None:
    """Centre ``box`` on its parent's screen: centred on the caption strip at the bottom
    of the screen, it would hang half off the screen."""
    screen = (parent.screen() or box.screen()).availableGeometry()
    box.adjustSize()
    frame = box.frameGeometry()
    frame.moveCenter(screen.center())
    box.move(frame.topLeft())
