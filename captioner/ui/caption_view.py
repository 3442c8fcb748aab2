"""The caption text area of the overlay: finalized lines, the live line, alert highlights.

No flicker: a finalized line is laid out once (rows as cached QPainterPaths, for
the current width and font) and never again; each update only lays out the live
line (confirmed text not yet cut into a line) and the unconfirmed words after it.
Unconfirmed words (a hypothesis the engine may still revise) are italic and dimmer;
confirmed words look final wherever they are. After ``linger_seconds``
without an update the text fades out (a QPropertyAnimation on ``fade``) and the
finalized lines are dropped from the view (the history keeps them).

This module decides which rows there are and which are on screen when (roll-up,
reading time, fade); :mod:`captioner.ui.caption_rows` makes and paints one row.
"""

from __future__ import annotations

import time
from collections.abc import Callable

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
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

from captioner.alerts import AlertMatcher
from captioner.realtime.captions import CaptionLine, CaptionUpdate, LineKind
from captioner.realtime.rows import break_rows
from captioner.settings import DEFAULT_MIC_LABEL, AppearanceSettings
from captioner.ui.appearance import MAX_LINES, clamp_lines, clamp_row_chars
from captioner.ui.caption_rows import MARGIN, Row, RowPainter, make_row

PADDING = 10
FADE_MS = 700
KEEP_LINES = 50  # finalized lines held for re-layout after a resize
MIN_ROW_SECONDS = 1.5  # a row seen on screen stays at least this long (reading time)
MAX_HELD_ROWS = 4  # rows further up than this are never waited for
KEEP_ROWS = 2 * MAX_LINES  # complete rows kept laid out (more than can be on screen)

_NO_TAIL = object()  # no speech row is being filled: the next speech starts a row


class CaptionView(QWidget):
    painted = Signal()  # emitted when a paintEvent has completed (benchmarks, tests)
    faded = Signal()  # the text has faded out after the linger time

    def __init__(self, appearance: AppearanceSettings, matcher: AlertMatcher | None = None,
                 parent: QWidget | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(parent)
        self.setAccessibleName("Captions")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, False)
        self.matcher = matcher or AlertMatcher()
        self.finalized: list[CaptionLine] = []
        self.live: CaptionLine | None = None
        self.unconfirmed = ""  # words after the live line that may still change
        self.live_speaker: str | None = None  # whose live and unconfirmed words (two streams)
        self._layout_key: tuple = ()
        self._rows: list[tuple[Row, LineKind]] = []
        self._tail: list[str] = []
        self._tail_rows: dict[tuple[str, ...], Row] = {}
        self._live_rows: list[tuple[Row, LineKind]] | None = None
        self._tail_speaker: object = _NO_TAIL
        self.you = DEFAULT_MIC_LABEL  # two-stream mode: this speaker's rows get "You" colours
        self.layouts_made = 0  # finalized-line layouts computed (tests check no re-layout)
        self._fade = 1.0
        self._clock = clock
        self._seen: dict[int, float] = {}  # row's first word → when it was first on screen
        self.hold_timer = QTimer(self)  # repaints when a held row has had its time
        self.hold_timer.setSingleShot(True)
        self.hold_timer.timeout.connect(self.update)
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
        self.row_painter = RowPainter(appearance, self.you)
        style = self.row_painter  # the fonts and colours the layout measures with
        self.font_final, self.font_live = style.font_final, style.font_live
        self.metrics, self.metrics_live = style.metrics, style.metrics_live
        self.text_color, self.background = style.text_color, style.background
        self.palette_colors = style.palette_colors
        self.linger_timer.setInterval(max(1, int(appearance.linger_seconds * 1000)))
        self._invalidate()
        self.updateGeometry()
        self.update()

    def set_you(self, name: str) -> None:
        """The microphone's speaker name (its rows get the "You" colour, others' the text's)."""
        if name != self.you:
            self.you = self.row_painter.you = name
            self._invalidate()
            self.update()

    def set_matcher(self, matcher: AlertMatcher) -> None:
        self.matcher = matcher
        self._invalidate()
        self.update()

    def show_update(self, update: CaptionUpdate) -> None:
        """Apply a CaptionUpdate: new finalized lines are laid out once, the live line anew.

        Painted at once when it changes what is shown; the session repeats an unchanged
        live line with every chunk of audio, which only keeps the text from fading.
        """
        changed = (bool(update.finalized) or update.live != self.live
                   or update.unconfirmed != self.unconfirmed or self._fade < 1.0)
        self._check_key()
        for line in update.finalized:
            self.finalized.append(line)
            self._add_final(line)
        del self.finalized[:-KEEP_LINES]
        self.live = update.live
        self.unconfirmed = update.unconfirmed
        self.live_speaker = update.speaker or (update.live.speaker if update.live else None)
        if changed:  # the rows after the complete ones hold the tail and the live text
            self._live_rows = None
        if update.finalized or update.live is not None or update.unconfirmed:
            self._wake()
        if changed:
            # Now rather than when the event loop next gets to it: a reader waits for
            # every word, and one paint costs a few ms (bench/bench_overlay.py).
            self.repaint()

    def clear(self) -> None:
        self.finalized.clear()
        self.live = None
        self.unconfirmed = ""
        self._seen.clear()
        self._reflow()
        self.update()

    @property
    def line_height(self) -> float:
        return self.metrics.lineSpacing()

    def visible_colours(self) -> list[str]:
        """The finalized-text colour of each row on screen, top to bottom (tests)."""
        return [self.row_colours(row)[0] for row, _, _ in self._rows_on_screen()]

    def visible_rows(self) -> list[tuple[str, bool]]:
        """(row text, has unconfirmed words) of the rows on screen, top to bottom (tests,
        debug hook)."""
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
            self.live = None
            self.unconfirmed = ""
            self._seen.clear()
            self._reflow()
            self.faded.emit()

    # --- layout -------------------------------------------------------------
    #
    # Captions roll up by whole rows: the text of consecutive speech lines flows from
    # row to row (captioner.realtime.rows breaks it at phrase boundaries), so the top
    # row is never the stray tail of a line. Complete finalized rows are laid out once;
    # only the rows holding the last finalized words and the live text are redone.

    def _invalidate(self) -> None:
        self._layout_key = ()

    def _text_width(self) -> float:
        return max(40.0, self.width() - 2 * PADDING)

    def _row_chars(self) -> int:
        return clamp_row_chars(self.appearance.row_chars)

    def _check_key(self) -> None:
        key = (self.width(), self.font_final.key(), self.matcher.words, self._row_chars())
        if key != self._layout_key:
            self._layout_key = key
            self._reflow()

    def _reflow(self) -> None:
        self._rows: list[tuple[Row, LineKind]] = []  # complete finalized rows, oldest first
        self._tail: list[str] = []  # finalized words of the speech row still being filled
        self._tail_first = 0  # index of the tail's first word in the flow
        self._tail_speaker = _NO_TAIL  # whose words the tail holds
        self._seen.clear()  # row identities start again
        self._tail_rows: dict[tuple[object, ...], Row] = {}
        self._live_rows = None
        for line in self.finalized:
            self._add_final(line)
        for row, _ in self._rows:  # re-laid out, not new: nothing to hold for
            self._seen[row.first] = float("-inf")

    def _fits(self, text: str) -> bool:
        width = self._text_width()
        return (self.metrics.horizontalAdvance(text) <= width
                and self.metrics_live.horizontalAdvance(text) <= width)

    def _break(self, words: list[str]) -> list[list[str]]:
        return break_rows(words, self._fits, self._row_chars())

    def _add_final(self, line: CaptionLine) -> None:
        words = (line.text if line.kind is not LineKind.TYPED else f"» {line.text}").split()
        if not words:
            return
        closed = [(self._tail, self._tail_speaker)] if self._tail else []
        if line.kind is LineKind.SPEECH:
            if line.speaker == self._tail_speaker:  # the same voice flows on
                closed = []
            else:  # another voice starts a row of its own, with its name
                words = _named(line.speaker, words)
                self._tail, self._tail_speaker = [], line.speaker
            rows = self._break(self._tail + words)
            self._tail = rows.pop()
        else:  # a gap note or a typed reply stands on rows of its own
            rows = self._break(words)
            self._tail, self._tail_speaker = [], _NO_TAIL
        self._tail_rows.clear()
        for row, speaker in [*closed, *((row, line.speaker) for row in rows)]:
            kind = LineKind.SPEECH if (row, speaker) in closed else line.kind
            self._rows.append((self._final_row(row, self._tail_first, speaker), kind))
            self._tail_first += len(row)
        del self._rows[:-KEEP_ROWS]

    def _final_row(self, words: list[str], first: int, speaker: object = None) -> Row:
        self.layouts_made += 1
        return self._make_row(words, len(words), first, speaker)

    def _make_row(self, words: list[str], final_words: int, first: int,
                  speaker: object = None) -> Row:
        """A row of ``words`` starting at word ``first``; ``final_words`` are finalized."""
        return make_row(words, final_words, first, speaker, self.metrics, self.matcher)

    def _current_rows(self) -> list[tuple[Row, LineKind]]:
        """The rows after the complete ones: the tail of finalized words, the live line's
        (confirmed) words, then the unconfirmed ones."""
        if self._live_rows is not None:
            return self._live_rows
        live = self.live.text.split() if self.live is not None else []
        unconfirmed = self.unconfirmed.split()
        speaker = self.live_speaker
        tail = _chars(self._tail)
        if (live or unconfirmed) and speaker != self._tail_speaker:
            # another voice: its words start a row of their own, after the tail, named
            named = _named(speaker, live)
            flows = [(self._tail, tail, tail, self._tail_speaker),
                     (named + unconfirmed, 0, _chars(named), speaker)]
        else:
            flows = [(self._tail + live + unconfirmed, tail, tail + _chars(live),
                      self._tail_speaker)]
        out = []
        first = self._tail_first
        # Finalized and confirmed words are counted by their characters: a word too
        # long for a row comes back from the row breaker in pieces on several rows.
        for words, final_left, confirmed_left, who in flows:
            for row in self._break(words) if words else []:
                final_words = _words_within(row, final_left)
                confirmed_words = _words_within(row, confirmed_left)
                final_left = max(0, final_left - _chars(row))
                confirmed_left = max(0, confirmed_left - _chars(row))
                if final_words == len(row):  # finalized words only: laid out once, kept
                    key = (first, *row)
                    if key not in self._tail_rows:
                        self._tail_rows[key] = self._final_row(row, first, who)
                    out.append((self._tail_rows[key], LineKind.SPEECH))
                else:
                    out.append((self._make_row(row, confirmed_words, first, who),
                                LineKind.SPEECH))
                first += len(row)
        self._live_rows = out
        return out

    def _rows_on_screen(self, texts: bool = False) -> list[tuple]:
        """The last ``lines`` rows, as (text|row, has unconfirmed words, kind).

        A row on screen stays there for ``MIN_ROW_SECONDS``: when a burst of text
        (catching up after start-up or a reconnect) would roll it off sooner, the
        newest rows wait and the timer rolls them in as the older ones have had their
        time, so each row shown gets its reading time. Rows of a burst that were never
        on screen are not waited for (the history keeps them): captions stay live.
        """
        self._check_key()
        limit = clamp_lines(self.appearance.lines)
        rows = self._rows + self._current_rows()  # at most KEEP_ROWS complete ones
        start = max(0, len(rows) - limit)
        now = self._clock()
        for index in range(max(0, start - MAX_HELD_ROWS), start):
            seen = self._seen.get(rows[index][0].first)
            if seen is not None and now - seen < MIN_ROW_SECONDS:  # on screen, not yet read
                start = index
                self.hold_timer.start(int((seen + MIN_ROW_SECONDS - now) * 1000) + 1)
                break
        shown = rows[start : start + limit]
        return [(row.text if texts else row, row.live_from < len(row.text), kind)
                for row, kind in shown]

    def _mark_seen(self, rows: list[tuple]) -> None:
        now = self._clock()
        for row, _, _ in rows:
            self._seen.setdefault(row.first, now)  # a row is the same row as it fills
        if len(self._seen) > 4 * KEEP_ROWS:
            recent = {row.first for row, _ in self._rows}
            self._seen = {t: at for t, at in self._seen.items() if t in recent}

    # --- painting -----------------------------------------------------------

    def row_colours(self, row: Row) -> tuple[str, str]:
        """(finalized, live) text colours of a row: its speaker's in two-stream mode."""
        return self.row_painter.row_colours(row)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setOpacity(self._fade)
        rows = self._rows_on_screen()
        self._mark_seen(rows)
        if rows and self._fade > 0:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(self.background))
            painter.drawRoundedRect(QRectF(self.rect()), 8, 8)
            y = self.height() - PADDING - len(rows) * self.line_height
            for row, live, kind in rows:
                if live:
                    painter.save()
                    painter.translate(PADDING, y)
                    self.row_painter.draw_row(painter, row, kind)
                    painter.restore()
                else:
                    pixmap = self.row_painter.row_pixmap(row, kind, self.line_height,
                                                         self.devicePixelRatioF())
                    painter.drawPixmap(QPointF(PADDING - MARGIN, y - MARGIN), pixmap)
                y += self.line_height
        painter.end()
        self.painted.emit()


def _named(speaker: str | None, words: list[str]) -> list[str]:
    """A speaker's words as they start a row: "You:" first in two-stream mode."""
    return [f"{speaker}:", *words] if speaker else words


def _chars(words: list[str]) -> int:
    return sum(map(len, words))


def _words_within(row: list[str], chars: int) -> int:
    """How many of ``row``'s words (or pieces of words) are in its first ``chars``
    characters, spaces aside."""
    count = 0
    for word in row:
        chars -= len(word)
        if chars < 0:
            break
        count += 1
    return count


__all__ = ["CaptionView"]
