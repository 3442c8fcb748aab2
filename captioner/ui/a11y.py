"""What screen readers get: a label's changing text, and announcements of what a reader
should hear though its focus is elsewhere."""

from __future__ import annotations

from PySide6.QtGui import QAccessible, QAccessibleAnnouncementEvent
from PySide6.QtWidgets import QLabel, QWidget


def announce(source: QWidget, text: str, *, assertive: bool = False) -> None:
    """Have screen readers speak ``text`` now (a label that changes is not read out);
    ``assertive`` interrupts what they are saying (failures), else it waits its turn."""
    if text and QAccessible.isActive():
        event = QAccessibleAnnouncementEvent(source, text)
        event.setPoliteness(QAccessible.AnnouncementPoliteness.Assertive if assertive
                            else QAccessible.AnnouncementPoliteness.Polite)
        QAccessible.updateAccessibility(event)


def show_text(label: QLabel, text: str) -> None:
    """``text`` in ``label`` and in its accessible description: a label with a fixed
    accessible name offers screen readers that name instead of its text."""
    label.setText(text)
    label.setAccessibleDescription(text)
