"""Which audio each shown word came from, and how a replayed request joins the old text.

A Realtime server sends a word a roughly constant time after the word's audio
(Voxtral: about 480 ms). :class:`WordTimeline` keeps the words shown with the
audio position at which each arrived, learns that latency at pauses (text that
still arrives during a pause belongs to the speech before it), and so knows in
seconds where each word's audio ended.

When a request must be started again from an earlier audio position ``R`` (a
pause), the words whose audio lies after ``R`` are exactly the ones the new
request will say again. :class:`Seam` drops that many words from the start of the
new request's text — a count fixed by audio position, so a phrase the speaker
repeats ("it was the …") is neither dropped nor doubled. The text is only used to
confirm the count within a word or two (a word cut at ``R`` may come back as two).
Plain logic, no I/O.
"""

from __future__ import annotations

import re
import statistics
from collections import deque
from dataclasses import dataclass

DEFAULT_LATENCY_SECONDS = 0.5  # Voxtral's delay is 480 ms; learned per server at pauses
MIN_LATENCY_SAMPLE_SECONDS = 0.1  # a shorter "pause" is a flicker of the level
MAX_LATENCY_SECONDS = 4.0  # for learning: longer gaps at a pause are something else
MAX_LAG_SECONDS = 10.0  # a word never arrives later than this after its audio
LATENCY_SAMPLES = 9  # median over the last few pauses
KEEP_WORDS = 400  # enough for any replay window
SEAM_LOOKAHEAD_WORDS = 3  # held beyond the expected repeat before deciding

_WORD = re.compile(r"\S+")


def norm(word: str) -> str:
    return re.sub(r"[^\w']", "", word.lower())


@dataclass(frozen=True, slots=True)
class ShownWord:
    text: str
    arrived: float  # seconds of session audio sent when it arrived


class WordTimeline:
    """Words shown so far (the recent ones), each placed in the audio."""

    def __init__(self, latency: float = DEFAULT_LATENCY_SECONDS) -> None:
        self.words: deque[ShownWord] = deque(maxlen=KEEP_WORDS)
        self._latency_samples: deque[float] = deque([latency], maxlen=LATENCY_SAMPLES)
        self.last_arrival: float | None = None
        self._sampled_pause: float | None = None

    @property
    def latency(self) -> float:
        return statistics.median(self._latency_samples)

    def add(self, text: str, arrived: float, quiet_since: float | None) -> None:
        """Text shown when ``arrived`` s of audio had been sent; ``quiet_since``: start
        of the pause the audio is in at that moment (None while there is sound)."""
        words = _WORD.findall(text)
        if not words:
            return
        self.words.extend(ShownWord(w, arrived) for w in words)
        self.last_arrival = arrived
        if quiet_since is not None and (
                MIN_LATENCY_SAMPLE_SECONDS <= arrived - quiet_since <= MAX_LATENCY_SECONDS):
            # the last word to arrive in a pause ended where the pause began
            if quiet_since == self._sampled_pause:
                self._latency_samples.pop()
            self._latency_samples.append(arrived - quiet_since)
            self._sampled_pause = quiet_since

    def after(self, position: float) -> Repeat:
        """The shown words whose audio may lie after ``position``, and how many do.

        A word arrives at least 0 and at most MAX_LAG_SECONDS after its audio ended
        (longer than the model's latency when the sender runs ahead of the server), so
        the count is a range around the estimate that the learned latency gives.
        """
        words, low, estimate = [], 0, 0
        for word in reversed(self.words):
            if word.arrived <= position:
                break
            words.append(word.text)
            estimate += word.arrived - self.latency > position
            low += word.arrived - MAX_LAG_SECONDS > position
        return Repeat(words[::-1], low, estimate)


@dataclass(frozen=True, slots=True)
class Repeat:
    """Shown words that a replay from some position may say again: between ``low`` and
    ``len(words)`` of the last ``words``, most likely ``estimate``."""

    words: list[str]
    low: int
    estimate: int


class Seam:
    """Filters the first text of a request replayed from a known audio position."""

    def __init__(self, repeat: Repeat) -> None:
        self.repeat = repeat
        self.expected = [norm(w) for w in repeat.words]
        self._held = ""
        self.done = not self.expected
        self.dropped = 0

    def feed(self, delta: str) -> str:
        """Text of the new request in; text safe to show out (may be "")."""
        if self.done:
            return delta
        self._held += delta
        if len(_WORD.findall(self._held)) < len(self.expected) + SEAM_LOOKAHEAD_WORDS:
            return ""
        return self.release()

    def release(self) -> str:
        """Decide now (enough text, end of request, replay over) with what is held."""
        if self.done:
            return ""
        self.done = True
        words = list(_WORD.finditer(self._held))
        skip = min(self._skip([norm(m.group()) for m in words]), len(words))
        self.dropped = skip
        if skip == 0:
            return self._held
        if skip >= len(words):
            return ""
        return " " + self._held[words[skip].start():]

    def _skip(self, held: list[str]) -> int:
        """How many held words repeat the shown ones: of the counts the audio allows,
        those whose words match the end of the shown text (one slip in four words is
        forgiven), the closest to the audio's estimate; with no match, the estimate."""
        estimate = self.repeat.estimate
        fits = [k for k in range(max(1, self.repeat.low), len(self.expected) + 1)
                if k <= len(held) and self._mismatches(held, k) <= k // 4]
        if estimate == 0:
            fits.append(0)
        if not fits:
            return estimate  # the text cannot tell: trust the audio
        return min(fits, key=lambda k: (abs(k - estimate), -k))

    def _mismatches(self, held: list[str], k: int) -> int:
        tail = self.expected[len(self.expected) - k:]
        return sum(a != b for a, b in zip(held[:k], tail, strict=True))
