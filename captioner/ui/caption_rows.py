"""One caption row: its layout (text, where live words begin, alert highlights) and
how it is drawn. The caption view decides which rows are on screen and when; this
module only makes and paints them.

A finalized row is rendered once into a pixmap and then only blitted; a row with
live (unconfirmed) words is drawn anew each paint. Text is outlined with offset
copies of itself in the background colour.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPainterPath, QPen, QPixmap

from captioner.alerts import AlertMatcher
from captioner.realtime.captions import LineKind
from captioner.settings import DEFAULT_MIC_LABEL, AppearanceSettings
from captioner.ui.appearance import caption_font, colors, palette

MARGIN = 6  # room for the outline around a cached row


@dataclass
class Row:
    path: QPainterPath  # finalized rows only (empty for the live row)
    highlights: list[QRectF] = field(default_factory=list)
    pixmap: QPixmap | None = None  # finalized rows: rendered once, then only blitted
    text: str = ""
    baseline: float = 0.0
    live_from: int = 0  # offset in ``text`` where live (unconfirmed) words begin
    first: int = 0  # index of its first word in the flow since the last re-layout
    speaker: str | None = None  # two-stream mode: whose words (a row holds one speaker's)


def make_row(words: list[str], final_words: int, first: int, speaker: object,
             metrics: QFontMetricsF, matcher: AlertMatcher) -> Row:
    """A row of ``words`` starting at word ``first``; ``final_words`` are finalized."""
    text = " ".join(words)
    live_from = len(" ".join(words[:final_words]))
    if 0 < final_words < len(words):
        live_from += 1  # the space before the first live word
    path = QPainterPath()  # its bounding box sizes a finalized row's pixmap
    if live_from >= len(text):
        path.addRect(QRectF(0, 0, metrics.horizontalAdvance(text), metrics.height()))
    rects = []
    for m in matcher.find(text):
        x0 = metrics.horizontalAdvance(text[: m.start])
        x1 = metrics.horizontalAdvance(text[: m.end])
        rects.append(QRectF(x0 - 3, 0, x1 - x0 + 6, metrics.lineSpacing()))
    return Row(path, rects, text=text, baseline=metrics.ascent(), live_from=live_from,
               first=first, speaker=speaker if isinstance(speaker, str) else None)


class RowPainter:
    """Fonts and colours of the captions, and the drawing of one row with them."""

    def __init__(self, appearance: AppearanceSettings, you: str = DEFAULT_MIC_LABEL) -> None:
        self.appearance = appearance
        self.you = you  # two-stream mode: this speaker's rows get "You" colours
        self.font_final = caption_font(appearance)
        self.font_live = caption_font(appearance, live=True)
        self.metrics = QFontMetricsF(self.font_final)
        self.metrics_live = QFontMetricsF(self.font_live)
        self.text_color, self.background = colors(appearance)
        self.palette_colors = palette(appearance)

    def outline_pen(self) -> QPen:
        width = max(2.0, self.font_final.pointSizeF() / 9)
        pen = QPen(QColor(self.background.rgb()), width)
        pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
        return pen

    def segments(self, row: Row, kind: LineKind) -> list[tuple[str, float, QFont, str]]:
        """(text, x, font, colour) runs of a row: finalized words, then live ones."""
        text, live = self.row_colours(row)
        runs = []
        if row.live_from > 0:
            colour = live if kind is LineKind.GAP else text
            runs.append((row.text[: row.live_from], 0.0, self.font_final, colour))
        if row.live_from < len(row.text):
            x = self.metrics.horizontalAdvance(row.text[: row.live_from])
            runs.append((row.text[row.live_from :], x, self.font_live, live))
        return runs

    def row_colours(self, row: Row) -> tuple[str, str]:
        """(finalized, live) text colours of a row: its speaker's in two-stream mode."""
        colours = self.palette_colors
        if row.speaker is None:
            return colours.text, colours.live
        index = 0 if row.speaker == self.you else 1
        return colours.speakers[index], colours.speakers_live[index]

    def draw_row(self, painter: QPainter, row: Row, kind: LineKind) -> None:
        runs = self.segments(row, kind)
        for text, x, font, colour in runs:
            self.draw_text(painter, text, QPointF(x, row.baseline), QColor(colour), font)
        for rect in row.highlights:
            # inverse video: the word in the background colour on a highlight 7:1 off it
            painter.save()
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(self.palette_colors.alert))
            painter.drawRoundedRect(rect, 4, 4)
            painter.setClipRect(rect)
            painter.setPen(QColor(self.palette_colors.alert_text))
            for text, x, font, _ in runs:
                painter.setFont(font)
                painter.drawText(QPointF(x, row.baseline), text)
            painter.restore()

    def draw_text(self, painter: QPainter, text: str, at: QPointF, color: QColor,
                  font: QFont) -> None:
        """Cached glyphs, with the outline as offset copies of the text.

        Stroking a glyph path costs ~10 ms per row at large sizes; eight offset
        copies of the text in the outline colour look the same and cost a fraction.
        """
        painter.setFont(font)
        if self.appearance.outline:
            w = self.outline_pen().widthF() / 2
            painter.setPen(QColor(self.background.rgb()))
            for dx, dy in ((-w, 0), (w, 0), (0, -w), (0, w),
                           (-w * 0.7, -w * 0.7), (w * 0.7, -w * 0.7),
                           (-w * 0.7, w * 0.7), (w * 0.7, w * 0.7)):
                painter.drawText(at + QPointF(dx, dy), text)
        painter.setPen(color)
        painter.drawText(at, text)

    def row_pixmap(self, row: Row, kind: LineKind, line_height: float,
                   ratio: float) -> QPixmap:
        """A finalized row rendered once (outline stroking is the expensive part)."""
        if row.pixmap is None:
            box = row.path.boundingRect().united(QRectF(0, 0, 1, line_height))
            for rect in row.highlights:
                box = box.united(rect)
            width, height = box.right() + 2 * MARGIN, box.bottom() + 2 * MARGIN
            pix = QPixmap(int(width * ratio) + 1, int(height * ratio) + 1)
            pix.setDevicePixelRatio(ratio)
            pix.fill(Qt.GlobalColor.transparent)
            p = QPainter(pix)
            p.setRenderHint(QPainter.RenderHint.Antialiasing)
            p.translate(MARGIN, MARGIN)
            self.draw_row(p, row, kind)
            p.end()
            row.pixmap = pix
        return row.pixmap


__all__ = ["MARGIN", "Row", "RowPainter", "make_row"]
