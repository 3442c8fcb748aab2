"""Two labelled caption streams ("You" and "Others") merged into one (sans-I/O).

In two-stream mode the microphone and the system audio are captioned by two
sessions, each stamping its own speaker name on its lines. Their updates
arrive interleaved and each stream finalizes with its own delay, so:

- the overlay takes finalized lines as they arrive (a reader sees each as soon as
  it is ready) and one live line with its unconfirmed words: that of the stream
  that spoke last, falling back to the other's while it still has one
  (:class:`SpeakerMerge`);
- the history, the journal's readers and the exports put lines in the order they
  were spoken (:func:`in_time_order`), since both sessions count audio time from
  the same start.

With one stream (no speaker on any line) nothing is reordered: single-stream
transcripts stay exactly as they were.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

from captioner.realtime.captions import CaptionLine, CaptionUpdate


def has_speakers(lines: Iterable[CaptionLine]) -> bool:
    return any(line.speaker for line in lines)


def in_time_order(lines: Iterable[CaptionLine]) -> list[CaptionLine]:
    """Lines of two streams by start time (stable: one stream's order is kept)."""
    lines = list(lines)
    if not has_speakers(lines):
        return lines
    return sorted(lines, key=lambda line: line.start)


def time_index(lines: Sequence[CaptionLine], line: CaptionLine) -> int:
    """Where ``line`` belongs in ``lines`` (already in time order): after every line
    that started no later, so one stream's lines never swap."""
    if not line.speaker:
        return len(lines)
    return bisect.bisect_right([other.start for other in lines], line.start)


class SpeakerMerge:
    """Per-stream caption updates in, the overlay's single update stream out."""

    def __init__(self) -> None:
        self._live: dict[str, tuple[CaptionLine | None, str]] = {}  # live line, unconfirmed
        self._order: list[str] = []  # speakers by the last time they had live text

    def apply(self, speaker: str, update: CaptionUpdate) -> CaptionUpdate:
        """``update`` from ``speaker``'s session → what the overlay should show now."""
        self._live[speaker] = (update.live, update.unconfirmed)
        speaking = update.live is not None or bool(update.unconfirmed)
        if speaking and (not self._order or self._order[-1] != speaker):
            if speaker in self._order:
                self._order.remove(speaker)
            self._order.append(speaker)
        who, line, unconfirmed = self._current()
        return CaptionUpdate(update.finalized, line, unconfirmed, who)

    @property
    def live(self) -> CaptionLine | None:
        """The live line of whoever spoke last and still has one."""
        return self._current()[1]

    def _current(self) -> tuple[str | None, CaptionLine | None, str]:
        """Who spoke last and still has live words: (speaker, live line, unconfirmed)."""
        for speaker in reversed(self._order):
            line, unconfirmed = self._live.get(speaker, (None, ""))
            if line is not None or unconfirmed:
                return speaker, line, unconfirmed
        return None, None, ""


__all__ = ["SpeakerMerge", "has_speakers", "in_time_order", "time_index"]
