"""A question box that never nests an event loop: ``open()`` and a Future, not ``exec()``."""

from __future__ import annotations

import asyncio

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
    box.open()
    try:
        return await answer
    finally:
        box.deleteLater()
