"""Alert words: the user's name, "question", … found in caption text.

Matching is case-insensitive and on word boundaries ("Ann" matches "ann," but
not "planning"); a phrase ("action item") matches with any run of spaces. Plain
Python so the overlay, the tray notice and the tests share one rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AlertMatch:
    start: int
    end: int
    word: str  # the alert word as the user wrote it


class AlertMatcher:
    """Finds alert words in text; an empty list matches nothing."""

    def __init__(self, words: Iterable[str] = ()) -> None:
        cleaned: dict[str, str] = {}
        for word in words:
            w = " ".join(word.split())
            if w and w.casefold() not in cleaned:
                cleaned[w.casefold()] = w
        self.words = tuple(cleaned.values())
        self._by_key = cleaned
        if self.words:
            # Longest first, so "action item" wins over "action".
            parts = sorted(self.words, key=len, reverse=True)
            body = "|".join(r"\s+".join(map(re.escape, p.split())) for p in parts)
            self._pattern: re.Pattern[str] | None = re.compile(
                rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE
            )
        else:
            self._pattern = None

    def find(self, text: str) -> list[AlertMatch]:
        if self._pattern is None:
            return []
        out = []
        for m in self._pattern.finditer(text):
            key = " ".join(m.group(0).split()).casefold()
            out.append(AlertMatch(m.start(), m.end(), self._by_key.get(key, m.group(0))))
        return out

    def __bool__(self) -> bool:
        return bool(self.words)


def parse_word_list(text: str) -> list[str]:
    """One alert word or phrase per line or comma; blanks dropped, order kept."""
    items = re.split(r"[,\n]", text)
    seen: set[str] = set()
    out = []
    for item in items:
        w = " ".join(item.split())
        if w and w.casefold() not in seen:
            seen.add(w.casefold())
            out.append(w)
    return out


__all__ = ["AlertMatch", "AlertMatcher", "parse_word_list"]
