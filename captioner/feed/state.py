"""What a feed page shows, as JSON messages (plain Python, no I/O).

A page that connects gets a ``snapshot`` (the last finalized lines and the live
line with the engine's unconfirmed words after it), then one ``update`` per
CaptionUpdate, so a browser source added mid-call shows the current captions at once.
"""

from __future__ import annotations

import json
from collections import deque

from captioner.realtime.captions import CaptionLine, CaptionUpdate, LineKind, labelled

KEEP_LINES = 3  # finalized lines a newly connected page starts with


def _line(line: CaptionLine) -> dict[str, object]:
    """A line for the page: its text carries the speaker's name in two-stream mode."""
    record: dict[str, object] = {"text": labelled(line), "start": round(line.start, 3),
                                 "end": round(line.end, 3), "kind": line.kind.value}
    if line.speaker:
        record["speaker"] = line.speaker
    return record


def _live(line: CaptionLine | None, unconfirmed: str) -> str:
    """The page's live line: the open line, then the engine's unconfirmed words."""
    return " ".join(part for part in (labelled(line) if line else "", unconfirmed) if part)


class FeedState:
    def __init__(self, keep: int = KEEP_LINES) -> None:
        self._lines: deque[CaptionLine] = deque(maxlen=keep)
        self._live: CaptionLine | None = None
        self._unconfirmed = ""

    def apply(self, update: CaptionUpdate) -> str:
        """Record an update; return the message that tells connected pages about it."""
        shown = [line for line in update.finalized if line.kind is not LineKind.GAP]
        self._lines.extend(shown)
        self._live, self._unconfirmed = update.live, update.unconfirmed
        return json.dumps({"type": "update", "final": [_line(x) for x in shown],
                           "live": _live(update.live, update.unconfirmed)})

    def snapshot(self) -> str:
        return json.dumps({"type": "snapshot", "final": [_line(x) for x in self._lines],
                           "live": _live(self._live, self._unconfirmed)})


__all__ = ["FeedState"]
