"""The system-tray icon: the app's menu, its state at a glance, notifications.

The icon is drawn (no image files needed): a speech-bubble disc whose colour
says idle / busy / listening / error, plus an optional corner badge that other
parts (the endpoint controls) set with :meth:`Tray.set_badge`; they add tooltip
lines with :meth:`Tray.set_tooltip_line`. Where the platform has no tray
(``available`` False) the same menu is reachable from the overlay's menu button
and context menu, and notifications fall back to the overlay's notice line.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPainterPath, QPixmap
from PySide6.QtWidgets import QSystemTrayIcon

from captioner.ui.actions import AppActions
from captioner.ui.status_strip import STATE_COLORS

log = logging.getLogger(__name__)

ICON_SIZE = 64


def state_icon(state: str, badge: str | None = None, badge_color: str = "#E53935") -> QIcon:
    """A tray icon for ``state`` with an optional one- or two-character badge."""
    pix = QPixmap(ICON_SIZE, ICON_SIZE)
    pix.fill(Qt.GlobalColor.transparent)
    p = QPainter(pix)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QColor(STATE_COLORS.get(state, STATE_COLORS["idle"])))
    bubble = QPainterPath()
    bubble.addRoundedRect(QRectF(4, 8, 56, 40), 10, 10)
    tail = QPainterPath()
    tail.moveTo(QPointF(16, 46))
    tail.lineTo(QPointF(12, 60))
    tail.lineTo(QPointF(30, 46))
    p.drawPath(bubble.united(tail))
    p.setBrush(QColor("#FFFFFF"))
    for y in (18, 30):
        p.drawRoundedRect(QRectF(12, y, 40, 6), 3, 3)
    if badge:
        p.setBrush(QColor(badge_color))
        p.drawEllipse(QRectF(34, 0, 30, 30))
        p.setPen(QColor("#FFFFFF"))
        font = QFont()
        font.setPixelSize(18)
        font.setBold(True)
        p.setFont(font)
        p.drawText(QRectF(34, 0, 30, 30), Qt.AlignmentFlag.AlignCenter, badge[:2])
    p.end()
    return QIcon(pix)


class Tray(QObject):
    activated = Signal()  # the icon was clicked (the app shows the overlay)

    def __init__(self, actions: AppActions, parent: QObject | None = None, *,
                 available: bool | None = None) -> None:
        super().__init__(parent)
        self.actions = actions
        self.available = (QSystemTrayIcon.isSystemTrayAvailable() if available is None
                          else available)
        self.menu = actions.build_menu()
        self.state = "idle"
        self.state_text = "idle"
        self.badge: str | None = None
        self.badge_color = "#E53935"
        self.tooltip_lines: dict[str, str] = {}
        self.messages: list[tuple[str, str]] = []  # shown notifications (tests, no-tray)
        self.icon: QSystemTrayIcon | None = None
        if self.available:
            self.icon = QSystemTrayIcon(self)
            self.icon.setContextMenu(self.menu)
            self.icon.activated.connect(self._on_activated)
            self._refresh()
            self.icon.show()
        else:
            log.info("= no system tray: the menu is on the overlay")
            self._refresh()

    def set_state(self, state: str, text: str) -> None:
        """idle | loading | connecting | listening | reconnecting | error, with its text."""
        self.state, self.state_text = state, text
        self._refresh()

    def set_badge(self, text: str | None, color: str = "#E53935") -> None:
        """A small corner badge (e.g. "$" while a paid endpoint runs); None removes it."""
        self.badge, self.badge_color = text, color
        self._refresh()

    def set_tooltip_line(self, key: str, line: str | None) -> None:
        """An extra tooltip line owned by ``key`` (e.g. "endpoint"); None removes it."""
        if line:
            self.tooltip_lines[key] = line
        else:
            self.tooltip_lines.pop(key, None)
        self._refresh()

    def tooltip(self) -> str:
        return "\n".join(["Captioner — " + self.state_text, *self.tooltip_lines.values()])

    def current_icon(self) -> QIcon:
        return state_icon(self.state, self.badge, self.badge_color)

    def notify(self, title: str, message: str, *, critical: bool = False) -> bool:
        """Show a tray message; False when there is no tray (the caller shows it instead)."""
        self.messages.append((title, message))
        if self.icon is None or not QSystemTrayIcon.supportsMessages():
            return False
        kind = (QSystemTrayIcon.MessageIcon.Critical if critical
                else QSystemTrayIcon.MessageIcon.Information)
        self.icon.showMessage(title, message, kind, 5000)
        return True

    def _refresh(self) -> None:
        if self.icon is not None:
            self.icon.setIcon(self.current_icon())
            self.icon.setToolTip(self.tooltip())

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason in (QSystemTrayIcon.ActivationReason.Trigger,
                      QSystemTrayIcon.ActivationReason.DoubleClick):
            self.activated.emit()
