"""The compact strip under the captions: state, source, endpoint, audio level, notices,
and the cloud endpoints' progress ("Captions endpoint: Creating — 0:03:12"), which many
desktops would otherwise show nowhere (no tray balloons)."""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPaintEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QToolButton, QWidget

STATE_COLORS = {
    "idle": "#9E9E9E",
    "loading": "#42A5F5",
    "connecting": "#42A5F5",
    "listening": "#43A047",
    "reconnecting": "#FFA000",
    "error": "#E53935",
}
LEVEL_FLOOR = -60.0
LABEL_MIN_WIDTH = 80  # px: a few words stay readable however narrow the overlay


class LevelMeter(QWidget):
    """A small horizontal audio level bar (dBFS, -60…0)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.level = LEVEL_FLOOR
        self.setAccessibleName("Audio level")
        self.setFixedSize(QSize(60, 8))

    def set_level(self, dbfs: float) -> None:
        level = max(LEVEL_FLOOR, min(0.0, float(dbfs)))
        if abs(level - self.level) >= 0.5:
            self.level = level
            self.setAccessibleDescription(f"{level:.0f} dBFS")
            self.update()

    def fraction(self) -> float:
        return (self.level - LEVEL_FLOOR) / -LEVEL_FLOOR

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(QColor(255, 255, 255, 50))
        p.drawRoundedRect(QRectF(self.rect()), 3, 3)
        fill = self.fraction()
        color = "#43A047" if self.level < -12 else "#FFA000" if self.level < -3 else "#E53935"
        p.setBrush(QColor(color))
        p.drawRoundedRect(QRectF(0, 0, self.width() * fill, self.height()), 3, 3)
        p.end()


class ElidedLabel(QLabel):
    """A one-line label that ends in "…" where its text does not fit, instead of being
    clipped mid-word: the reader sees that there is more (the tooltip has it all)."""

    def shown_text(self) -> str:
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight,
                                             self.contentsRect().width())

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setPen(self.palette().color(self.foregroundRole()))
        p.drawText(self.contentsRect(), int(self.alignment()), self.shown_text())
        p.end()


class StatusStrip(QWidget):
    """State dot + text, source, endpoint, level meter, a notice, and the menu button
    (shown only when the platform has no system tray)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Caption status")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 2, 8, 2)
        layout.setSpacing(8)
        font = QFont()
        font.setPointSize(9)
        self.setFont(font)
        self.dot = QLabel("●")
        self.dot.setAccessibleName("Connection state indicator")
        self.state_label = ElidedLabel("idle")
        self.state_label.setAccessibleName("Connection state")
        self.source_label = QLabel()
        self.source_label.setAccessibleName("Audio source")
        self.endpoint_label = QLabel()
        self.endpoint_label.setAccessibleName("Recognition endpoint")
        self.meter = LevelMeter()
        self.cloud_label = ElidedLabel()
        self.cloud_label.setAccessibleName("Cloud endpoints")
        self.cloud_label.hide()
        self._cloud: dict[str, str] = {}
        self.notice_label = ElidedLabel()
        self.notice_label.setAccessibleName("Notice")
        self.notice_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.menu_button = QToolButton()
        self.menu_button.setText("☰")
        self.menu_button.setAccessibleName("Captioner menu")
        self.menu_button.setToolTip("Captioner menu")
        self.menu_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.menu_button.setAutoRaise(True)
        self.menu_button.hide()
        self.reply_button = QToolButton()  # type-to-speak, always one click away
        self.reply_button.setText("✎ Reply")
        self.reply_button.setAccessibleName("Type a reply to speak")
        self.reply_button.setToolTip("Type a reply and have it spoken")
        self.reply_button.setAutoRaise(True)
        # Long texts (an error, a cloud step) must not widen the overlay past the screen:
        # these labels take a share of the width and show the whole text as a tooltip.
        for label in (self.state_label, self.cloud_label):
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
            label.setMinimumWidth(LABEL_MIN_WIDTH)
        layout.addWidget(self.dot)
        layout.addWidget(self.state_label, 2)
        for w in (self.source_label, self.endpoint_label, self.meter):
            layout.addWidget(w)
        layout.addWidget(self.cloud_label, 2)
        layout.addWidget(self.notice_label, 1)
        layout.addWidget(self.reply_button)
        layout.addWidget(self.menu_button)
        self.state = "idle"
        self.set_colors(QColor("#FFFFFF"))

    def set_colors(self, text: QColor) -> None:
        self._text = QColor(text)
        dim = QColor(text)
        dim.setAlphaF(0.85)
        self.setStyleSheet(f"QLabel {{ color: {dim.name(QColor.NameFormat.HexArgb)}; }}"
                           f"QToolButton {{ color: {text.name()}; border: none; }}")
        self._paint_dot()

    def set_state(self, state: str, text: str) -> None:
        self.state = state
        self.state_label.setText(text)
        self.state_label.setToolTip(text)
        self._paint_dot()

    def _paint_dot(self) -> None:
        self.dot.setStyleSheet(f"color: {STATE_COLORS.get(self.state, '#9E9E9E')};")

    def set_source(self, text: str) -> None:
        self.source_label.setText(text)

    def set_endpoint(self, text: str) -> None:
        self.endpoint_label.setText(text)

    def set_notice(self, text: str) -> None:
        self.notice_label.setText(text)
        self.notice_label.setToolTip(text)

    def set_cloud(self, key: str, text: str) -> None:
        """One cloud endpoint's progress line (per ``key``); "" removes it."""
        if text:
            self._cloud[key] = text
        else:
            self._cloud.pop(key, None)
        joined = " · ".join(self._cloud.values())
        self.cloud_label.setText(joined)
        self.cloud_label.setToolTip(joined)
        self.cloud_label.setAccessibleDescription(joined)
        self.cloud_label.setVisible(bool(joined))
