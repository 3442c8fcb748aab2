"""Remove the words a replayed request repeats from the text already shown.

After a drop, a stall or a forced rotation, the next request re-transcribes a
few seconds of audio the previous one had already covered (so that words in
flight are not lost). Its first words then repeat the tail of the old text.
``SeamMerger`` holds the new request's text until it can line it up with that
tail, then lets through only what is new. Plain logic, no I/O.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\S+")


def _norm(word: str) -> str:
    return re.sub(r"[^\w']", "", word.lower())


class SeamMerger:
    def __init__(self, tail: list[str], *, slack_words: int = 2) -> None:
        """``tail``: the last words of the old text that the replay may repeat."""
        self.tail = [_norm(w) for w in tail if _norm(w)]
        self.slack = slack_words
        self._held = ""
        self.done = not self.tail
        self.dropped = 0

    def feed(self, delta: str) -> str:
        """Text of the new request in; text safe to show out (may be "")."""
        if self.done:
            return delta
        self._held += delta
        if len(_WORD.findall(self._held)) <= len(self.tail) + self.slack:
            return ""
        return self.release()

    def release(self) -> str:
        """Decide now (pause, end of request, timeout) with what has been held."""
        if self.done:
            return ""
        self.done = True
        words = list(_WORD.finditer(self._held))
        skip = self._overlap([_norm(m.group()) for m in words])
        self.dropped = skip
        if skip == 0:
            return self._held
        if skip >= len(words):
            return ""
        return " " + self._held[words[skip].start():]

    def _overlap(self, held: list[str]) -> int:
        """How many leading held words repeat the tail (0 if no convincing match)."""
        best = 0
        for lead in (0, 1):  # the replay may start inside a word: allow one fragment
            rest = held[lead:]
            for k in range(min(len(self.tail), len(rest)), 0, -1):
                if self.tail[-k:] == rest[:k]:
                    if k + lead > best and (lead == 0 or k >= 2 or self._fragment(held[0], k)):
                        best = k + lead
                    break
        return best

    def _fragment(self, word: str, k: int) -> bool:
        """Is ``word`` the end of the tail word just before the k matched ones?"""
        return len(self.tail) > k and bool(word) and self.tail[-k - 1].endswith(word)
