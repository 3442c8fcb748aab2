"""The compact strip under the captions: state, source, endpoint, audio level, notices,
and the cloud endpoints' progress ("Captions endpoint: Creating — 0:03:12"), which many
desktops would otherwise show nowhere (no tray balloons).

Its text grows with the captions (a reader who needs 72 pt captions cannot read 9 pt
status), and the state, cloud and notice lines wrap instead of being cut: in
click-through mode, or from the keyboard, there is no tooltip to hover for the rest.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSignalBlocker, QSize, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QGuiApplication,
    QPainter,
    QPaintEvent,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from captioner.ui.a11y import show_text

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
SPACING, MARGIN = 8, 8  # px between the strip's parts, and at its ends
STRIP_SCALE = 0.45  # of the caption size: readable beside big captions, still secondary
METER_SIZE = QSize(60, 8)  # at the platform's normal text size; grows with the text


def normal_point_size() -> float:
    """The desktop's normal text size (a pixel-sized application font has none: 9 pt)."""
    size = QGuiApplication.font().pointSizeF()
    return size if size > 0 else 9.0


def strip_point_size(caption_points: int) -> int:
    """The strip's text size for captions of ``caption_points``: a share of it, never
    below the desktop's normal size."""
    return max(round(normal_point_size()), round(caption_points * STRIP_SCALE))


class LevelMeter(QWidget):
    """A small horizontal audio level bar (dBFS, -60…0)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.level = LEVEL_FLOOR
        self.setAccessibleName("Audio level")
        self.setFixedSize(METER_SIZE)

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
    """A one-line label for short facts (the source, the endpoint) that ends in "…" where
    its text does not fit, instead of being clipped mid-word or widening the overlay; the
    whole text is its tooltip and accessible description."""

    def __init__(self, keep: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.keep = keep  # characters always shown (the rest may give way to "…")

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        keep = self.fontMetrics().averageCharWidth() * self.keep
        return QSize(min(keep, hint.width()), hint.height())

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setToolTip(text)
        self.setAccessibleDescription(text)

    def shown_text(self) -> str:
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight,
                                             self.contentsRect().width())

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setPen(self.palette().color(self.foregroundRole()))
        p.drawText(self.contentsRect(), int(self.alignment()), self.shown_text())
        p.end()


def wrapping_label(name: str) -> QLabel:
    """A label that wraps onto more lines rather than widen the overlay or lose words."""
    label = QLabel()
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setAccessibleName(name)
    policy = QSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    policy.setHeightForWidth(True)
    label.setSizePolicy(policy)
    label.setMinimumWidth(LABEL_MIN_WIDTH)
    return label


class StatusStrip(QWidget):
    """State dot + text, source, endpoint, level meter, the reply and menu buttons (the
    menu only when the platform has no system tray); below them, when there are any, the
    cloud endpoints' line and a notice."""

    text_changed = Signal()  # a text changed: the strip may need more (or less) height

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Caption status")
        self.dot = QLabel("●")
        self.dot.setAccessibleName("Connection state indicator")
        self.state_label = wrapping_label("Connection state")
        self.source_label = ElidedLabel(keep=12)  # "System audio"
        self.source_label.setAccessibleName("Audio source")
        self.endpoint_label = ElidedLabel(keep=5)
        self.endpoint_label.setAccessibleName("Recognition endpoint")
        for label in (self.source_label, self.endpoint_label):
            label.hide()  # until there is something to say
        self.meter = LevelMeter()
        self.cloud_label = wrapping_label("Cloud endpoints")
        self.cloud_label.hide()
        self._cloud: dict[str, str] = {}
        self.notice_label = wrapping_label("Notice")
        self.notice_label.hide()
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
        self._row = QHBoxLayout()  # the state, and beside it the details while it fits
        self._row.setSpacing(SPACING)
        self._row.addWidget(self.dot)
        self._row.addWidget(self.state_label, 1)
        self._details = QHBoxLayout()  # else the details' own line, under the state
        self._details.setSpacing(SPACING)
        self._details.addStretch(1)
        for w in self._detail_widgets():
            self._row.addWidget(w)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(MARGIN, 2, MARGIN, 2)
        layout.setSpacing(2)
        for line in (self._row, self._details):
            layout.addLayout(line)
        layout.addWidget(self.cloud_label)  # whole lines of their own: long texts
        layout.addWidget(self.notice_label)
        self.set_state("idle", "idle")
        self.set_text_size(0)
        self.set_colors(QColor("#FFFFFF"))

    def set_text_size(self, caption_points: int) -> None:
        """Size the strip's text (and meter) for captions of ``caption_points``."""
        self.wanted_points = strip_point_size(caption_points)
        self._apply_points(self.wanted_points)
        self.text_changed.emit()

    def fit(self, width: int, height: int) -> None:
        """Take the wanted text size, or the largest smaller one (down to the normal size)
        at which the whole strip fits ``height`` at ``width``: long notices then stay
        whole without pushing the captions off a small screen."""
        with QSignalBlocker(self):  # a fit is no change of text
            for points in range(self.wanted_points, round(normal_point_size()) - 1, -1):
                self._apply_points(points, width)
                if self.heightForWidth(width) <= height:
                    break

    def _apply_points(self, points: int, width: int | None = None) -> None:
        if self.font().pointSize() != points:
            font = QFont(self.font())
            font.setPointSize(points)
            # each widget by itself: a style sheet stops a parent's font reaching children
            for widget in (self, *self.findChildren(QWidget)):
                widget.setFont(font)
            scale = min(points / normal_point_size(), 1.5)  # a bigger bar only takes room
            self.meter.setFixedSize(round(METER_SIZE.width() * scale),
                                    round(METER_SIZE.height() * scale))
            for line in (self._row, self._details):  # their cached sizes are the old font's
                line.invalidate()
        self.arrange(width)

    def _detail_widgets(self) -> tuple[QWidget, ...]:
        return (self.source_label, self.endpoint_label, self.meter, self.reply_button,
                self.menu_button)

    def _one_line_width(self) -> int:
        """The width the state (unwrapped) and all the details need on one line."""
        shown = [w for w in (self.dot, *self._detail_widgets()) if not w.isHidden()]
        state = self.state_label.fontMetrics().horizontalAdvance(self.state_label.text())
        return (state + sum(w.sizeHint().width() for w in shown)
                + SPACING * len(shown) + 2 * MARGIN)

    def arrange(self, width: int | None = None) -> None:
        """The details (source, endpoint, meter, buttons) go beside the state while all
        fit on one line (of ``width``, by default the strip's); else onto a line of their
        own, so that a long state wraps over the whole width, not down a narrow column."""
        fits = self._one_line_width() <= (self.width() if width is None else width)
        target = self._row if fits else self._details
        if target.indexOf(self.meter) >= 0:
            return
        for w in self._detail_widgets():
            (self._details if target is self._row else self._row).removeWidget(w)
        for i, w in enumerate(self._detail_widgets()):
            target.insertWidget(target.count() - 1 if target is self._details else i + 2, w)
        self.text_changed.emit()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.arrange()

    def set_colors(self, text: QColor) -> None:
        self._text = QColor(text)
        dim = QColor(text)
        dim.setAlphaF(0.85)
        self.setStyleSheet(f"QLabel {{ color: {dim.name(QColor.NameFormat.HexArgb)}; }}"
                           f"QToolButton {{ color: {text.name()}; border: none; }}")
        self._paint_dot()

    def _show(self, label: QLabel, text: str) -> None:
        """Show ``text`` in ``label``; screen readers get it as the label's description
        (a label's fixed accessible name hides its text from them)."""
        show_text(label, text)
        self.arrange()
        self.text_changed.emit()

    def set_state(self, state: str, text: str) -> None:
        self.state = state
        self._show(self.state_label, text)
        self._paint_dot()

    def _paint_dot(self) -> None:
        self.dot.setStyleSheet(f"color: {STATE_COLORS.get(self.state, '#9E9E9E')};")
        self.dot.setAccessibleDescription(self.state)  # what its colour says

    def set_source(self, text: str) -> None:
        self.source_label.setVisible(bool(text))
        self._show(self.source_label, text)

    def set_endpoint(self, text: str) -> None:
        self.endpoint_label.setVisible(bool(text))
        self._show(self.endpoint_label, text)

    def set_notice(self, text: str) -> None:
        self.notice_label.setVisible(bool(text))
        self._show(self.notice_label, text)

    def set_cloud(self, key: str, text: str) -> None:
        """One cloud endpoint's progress line (per ``key``); "" removes it."""
        if text:
            self._cloud[key] = text
        else:
            self._cloud.pop(key, None)
        joined = " · ".join(self._cloud.values())
        self.cloud_label.setVisible(bool(joined))
        self._show(self.cloud_label, joined)
