"""The caption text area of the overlay: finalized lines, the live line, alert highlights.

No flicker: a finalized line is laid out once (rows as cached QPainterPaths, for
the current width and font) and never again; each update only lays out the live
line. The live (unconfirmed) line is italic and dimmer. After ``linger_seconds``
without an update the text fades out (a QPropertyAnimation on ``fade``) and the
finalized lines are dropped from the view (the history keeps them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import (
    Property,
    QEasingCurve,
    QPointF,
    QPropertyAnimation,
    QRectF,
    QSize,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QPainter,
    QPainterPath,
    QPaintEvent,
    QPen,
    QPixmap,
)
from PySide6.QtWidgets import QSizePolicy, QWidget

from captioner.alerts import AlertMatcher
from captioner.realtime.captions import CaptionLine, CaptionUpdate, LineKind
from captioner.settings import AppearanceSettings
from captioner.ui.appearance import caption_font, clamp_lines, colors, palette

PADDING = 10
FADE_MS = 700
KEEP_LINES = 50  # finalized lines held for re-layout after a resize
MARGIN = 6  # room for the outline around a cached row


@dataclass
class _Row:
    path: QPainterPath  # finalized rows only (empty for the live row)
    highlights: list[QRectF] = field(default_factory=list)
    pixmap: QPixmap | None = None  # finalized rows: rendered once, then only blitted
    text: str = ""
    baseline: float = 0.0


@dataclass
class _Laid:
    """One caption line laid out for one width/font: its rows, top to bottom."""

    rows: list[_Row]
    live: bool
    kind: LineKind


class CaptionView(QWidget):
    painted = Signal()  # emitted when a paintEvent has completed (benchmarks, tests)
    faded = Signal()  # the text has faded out after the linger time

    def __init__(self, appearance: AppearanceSettings, matcher: AlertMatcher | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Captions")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, False)
        self.matcher = matcher or AlertMatcher()
        self.finalized: list[CaptionLine] = []
        self.live: CaptionLine | None = None
        self._cache: dict[int, _Laid] = {}  # id(CaptionLine) → layout
        self._live_laid: _Laid | None = None
        self._layout_key: tuple = ()
        self.layouts_made = 0  # finalized-line layouts computed (tests check no re-layout)
        self._fade = 1.0
        self.linger_timer = QTimer(self)
        self.linger_timer.setSingleShot(True)
        self.linger_timer.timeout.connect(self._start_fade)
        self.fade_animation = QPropertyAnimation(self, b"fade", self)
        self.fade_animation.setDuration(FADE_MS)
        self.fade_animation.setEasingCurve(QEasingCurve.Type.InOutQuad)
        self.fade_animation.finished.connect(self._faded)
        self.apply_appearance(appearance)

    # --- public -------------------------------------------------------------

    def apply_appearance(self, appearance: AppearanceSettings) -> None:
        self.appearance = appearance
        self.font_final = caption_font(appearance)
        self.font_live = caption_font(appearance, live=True)
        self.metrics = QFontMetricsF(self.font_final)
        self.text_color, self.background = colors(appearance)
        self.palette_colors = palette(appearance)
        self.linger_timer.setInterval(max(1, int(appearance.linger_seconds * 1000)))
        self._invalidate()
        self.updateGeometry()
        self.update()

    def set_matcher(self, matcher: AlertMatcher) -> None:
        self.matcher = matcher
        self._invalidate()
        self.update()

    def show_update(self, update: CaptionUpdate) -> None:
        """Apply a CaptionUpdate: new finalized lines are laid out once, the live line anew."""
        for line in update.finalized:
            self.finalized.append(line)
        if len(self.finalized) > KEEP_LINES:
            for old in self.finalized[:-KEEP_LINES]:
                self._cache.pop(id(old), None)
            del self.finalized[:-KEEP_LINES]
        self.live = update.live
        self._live_laid = None
        if update.finalized or update.live is not None:
            self._wake()
        self.update()

    def clear(self) -> None:
        self.finalized.clear()
        self.live = None
        self._cache.clear()
        self._live_laid = None
        self.update()

    @property
    def line_height(self) -> float:
        return self.metrics.lineSpacing()

    def visible_rows(self) -> list[tuple[str, bool]]:
        """(row text, is live) of the rows on screen, top to bottom (tests, debug hook)."""
        return [(text, live) for text, live, _ in self._rows_on_screen(texts=True)]

    def visible_text(self) -> str:
        return "\n".join(text for text, _ in self.visible_rows())

    def sizeHint(self) -> QSize:
        rows = clamp_lines(self.appearance.lines)
        return QSize(600, int(rows * self.line_height + 2 * PADDING + 1))

    def minimumSizeHint(self) -> QSize:
        return QSize(120, int(self.line_height + 2 * PADDING))

    # --- fade ---------------------------------------------------------------

    def _get_fade(self) -> float:
        return self._fade

    def _set_fade(self, value: float) -> None:
        self._fade = float(value)
        self.update()

    fade = Property(float, _get_fade, _set_fade)

    def _wake(self) -> None:
        self.fade_animation.stop()
        self._fade = 1.0
        self.linger_timer.start()

    def _start_fade(self) -> None:
        self.fade_animation.stop()
        self.fade_animation.setStartValue(self._fade)
        self.fade_animation.setEndValue(0.0)
        self.fade_animation.start()

    def _faded(self) -> None:
        if self._fade <= 0.0:
            self.finalized.clear()
            self._cache.clear()
            self.live = None
            self._live_laid = None
            self.faded.emit()

    # --- layout -------------------------------------------------------------

    def _invalidate(self) -> None:
        self._cache.clear()
        self._live_laid = None
        self._layout_key = ()

    def _text_width(self) -> float:
        return max(40.0, self.width() - 2 * PADDING)

    def _check_key(self) -> None:
        key = (self.width(), self.font_final.key(), self.matcher.words)
        if key != self._layout_key:
            self._cache.clear()
            self._live_laid = None
            self._layout_key = key

    def _wrap(self, text: str, metrics: QFontMetricsF, width: float) -> list[str]:
        rows: list[str] = []
        row = ""
        for word in text.split():
            candidate = f"{row} {word}" if row else word
            if not row or metrics.horizontalAdvance(candidate) <= width:
                row = candidate
                continue
            rows.append(row)
            row = word
        if row:
            rows.append(row)
        return rows

    def _lay_out(self, line: CaptionLine, live: bool) -> _Laid:
        font = self.font_live if live else self.font_final
        metrics = QFontMetricsF(font)
        text = line.text if line.kind is not LineKind.TYPED else f"» {line.text}"
        rows = []
        for row_text in self._wrap(text, metrics, self._text_width()):
            path = QPainterPath()  # its bounding box sizes a finalized row's pixmap
            if not live:
                path.addRect(QRectF(0, 0, metrics.horizontalAdvance(row_text),
                                    metrics.height()))
            rects = []
            for m in self.matcher.find(row_text):
                x0 = metrics.horizontalAdvance(row_text[: m.start])
                x1 = metrics.horizontalAdvance(row_text[: m.end])
                rects.append(QRectF(x0 - 3, 0, x1 - x0 + 6, metrics.lineSpacing()))
            rows.append(_Row(path, rects, text=row_text, baseline=metrics.ascent()))
            path.setFillRule(Qt.FillRule.WindingFill)
        return _Laid(rows, live, line.kind)

    def _laid(self, line: CaptionLine) -> _Laid:
        laid = self._cache.get(id(line))
        if laid is None:
            laid = self._lay_out(line, live=False)
            self._cache[id(line)] = laid
            self.layouts_made += 1
        return laid

    def _rows_on_screen(self, texts: bool = False) -> list[tuple]:
        """The last ``lines`` rows (finalized then live), as (text|row, live, kind)."""
        self._check_key()
        limit = clamp_lines(self.appearance.lines)
        out: list[tuple] = []
        if self.live is not None:
            if self._live_laid is None:
                self._live_laid = self._lay_out(self.live, live=True)
            out = self._entries(self.live, self._live_laid, texts)
        for line in reversed(self.finalized):
            if len(out) >= limit:
                break
            out = self._entries(line, self._laid(line), texts) + out
        return out[-limit:]

    def _entries(self, line: CaptionLine, laid: _Laid, texts: bool) -> list[tuple]:
        if texts:
            font = self.font_live if laid.live else self.font_final
            words = self._wrap(line.text if line.kind is not LineKind.TYPED
                               else f"» {line.text}", QFontMetricsF(font), self._text_width())
            return [(w, laid.live, laid.kind) for w in words]
        return [(row, laid.live, laid.kind) for row in laid.rows]

    # --- painting -----------------------------------------------------------

    def _outline_pen(self) -> QPen:
        width = max(2.0, self.font_final.pointSizeF() / 9)
        pen = QPen(QColor(self.background.rgb()), width)
        pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
        return pen

    def _draw_row(self, painter: QPainter, row: _Row, live: bool, kind: LineKind) -> None:
        colours = self.palette_colors
        font = self.font_live if live else self.font_final
        dim = live or kind is LineKind.GAP
        self._draw_text(painter, row, QColor(colours.live if dim else colours.text), font)
        for rect in row.highlights:
            # inverse video: the word in the background colour on a highlight 7:1 off it
            painter.save()
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(colours.alert))
            painter.drawRoundedRect(rect, 4, 4)
            painter.setClipRect(rect)
            painter.setPen(QColor(colours.alert_text))
            painter.setFont(font)
            painter.drawText(QPointF(0, row.baseline), row.text)
            painter.restore()

    def _draw_text(self, painter: QPainter, row: _Row, color: QColor, font: QFont) -> None:
        """Cached glyphs, with the outline as offset copies of the text.

        Stroking a glyph path costs ~10 ms per row at large sizes; eight offset
        copies of the text in the outline colour look the same and cost a fraction.
        """
        painter.setFont(font)
        if self.appearance.outline:
            w = self._outline_pen().widthF() / 2
            painter.setPen(QColor(self.background.rgb()))
            for dx, dy in ((-w, 0), (w, 0), (0, -w), (0, w),
                           (-w * 0.7, -w * 0.7), (w * 0.7, -w * 0.7),
                           (-w * 0.7, w * 0.7), (w * 0.7, w * 0.7)):
                painter.drawText(QPointF(dx, row.baseline + dy), row.text)
        painter.setPen(color)
        painter.drawText(QPointF(0, row.baseline), row.text)

    def _row_pixmap(self, row: _Row, kind: LineKind) -> QPixmap:
        """A finalized row rendered once (outline stroking is the expensive part)."""
        if row.pixmap is None:
            ratio = self.devicePixelRatioF()
            box = row.path.boundingRect().united(QRectF(0, 0, 1, self.line_height))
            for rect in row.highlights:
                box = box.united(rect)
            width, height = box.right() + 2 * MARGIN, box.bottom() + 2 * MARGIN
            pix = QPixmap(int(width * ratio) + 1, int(height * ratio) + 1)
            pix.setDevicePixelRatio(ratio)
            pix.fill(Qt.GlobalColor.transparent)
            p = QPainter(pix)
            p.setRenderHint(QPainter.RenderHint.Antialiasing)
            p.translate(MARGIN, MARGIN)
            self._draw_row(p, row, False, kind)
            p.end()
            row.pixmap = pix
        return row.pixmap

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setOpacity(self._fade)
        rows = self._rows_on_screen()
        if rows and self._fade > 0:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(self.background))
            painter.drawRoundedRect(QRectF(self.rect()), 8, 8)
            y = self.height() - PADDING - len(rows) * self.line_height
            for row, live, kind in rows:
                if live:
                    painter.save()
                    painter.translate(PADDING, y)
                    self._draw_row(painter, row, live, kind)
                    painter.restore()
                else:
                    painter.drawPixmap(QPointF(PADDING - MARGIN, y - MARGIN),
                                       self._row_pixmap(row, kind))
                y += self.line_height
        painter.end()
        self.painted.emit()


__all__ = ["CaptionView"]
