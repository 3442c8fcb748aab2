"""Which audio each shown word came from, and how a replayed request joins the old text.

A Realtime server sends a word a roughly constant time after the word's audio
(Voxtral: about 480 ms). :class:`WordTimeline` keeps the words shown with the
audio position at which each arrived, learns that latency at pauses (text that
still arrives during a pause belongs to the speech before it), and so knows in
seconds where each word's audio ended.

When a request must be started again from an earlier audio position ``R`` (a
pause), the words whose audio lies after ``R`` are exactly the ones the new
request will say again. :class:`Seam` drops that many words from the start of the
new request's text. The audio bounds the count and gives its likely value, so a
phrase the speaker repeats ("it was the …") is neither dropped nor doubled; the
text picks the count within those bounds. Where the text confirms no count, only
what the audio is sure of is dropped: arrival times can be far off (an engine that
confirms a whole utterance at its end stamps all of it late), and a word shown
twice costs a reader less than a word lost. Plain logic, no I/O.
"""

from __future__ import annotations

import re
import statistics
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher

DEFAULT_LATENCY_SECONDS = 0.5  # Voxtral's delay is 480 ms; learned per server at pauses
MIN_LATENCY_SAMPLE_SECONDS = 0.1  # a shorter "pause" is a flicker of the level
MAX_LATENCY_SECONDS = 4.0  # for learning: longer gaps at a pause are something else
MAX_LAG_SECONDS = 10.0  # a word never arrives later than this after its audio
LATENCY_SAMPLES = 9  # median over the last few pauses
KEEP_WORDS = 400  # enough for any replay window
SEAM_LOOKAHEAD_WORDS = 3  # held beyond the expected repeat before deciding
ALIKE_RATIO = 0.5  # spelling this close = the same word heard again ("stone"/"tone")

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

    def preview(self, live: str) -> str:
        """The words the seam would let through if it decided now on what it holds and
        the request's ``live`` (unconfirmed) words after them: live text while the seam
        is open, which may be revised. Words the replay is still likely to be repeating
        are not shown."""
        if self.done:
            return live
        words = _WORD.findall(f"{self._held} {live}")
        if len(words) <= self.repeat.estimate:
            return ""
        skip = min(self._skip([norm(w) for w in words]), len(words))
        return " ".join(words[skip:])

    def release(self) -> str:
        """Decide now (enough text, end of request, replay over) with what is held.
        With no word held yet there is nothing to decide: the seam stays open, so the
        replay's words, when they come, are still checked against the shown ones."""
        if self.done:
            return ""
        words = list(_WORD.finditer(self._held))
        if not words:
            return ""
        self.done = True
        skip = min(self._skip([norm(m.group()) for m in words]), len(words))
        self.dropped = skip
        if skip == 0:
            return self._held
        if skip >= len(words):
            return ""
        return " " + self._held[words[skip].start():]

    def _skip(self, held: list[str]) -> int:
        """How many held words repeat the shown ones.

        Of the counts the audio allows, those whose words match the end of the shown
        text (one slip in four words forgiven), the closest to the audio's estimate;
        failing that, those whose words are alike (a word misheard or cut at the resume
        point: one unlike word in three forgiven); failing that, the count the audio is
        sure of (``low``). Never the estimate alone: it rests on arrival times, which an
        engine confirming whole utterances makes late for every word of the last one,
        so trusting it dropped new words. The price: a replay that reads its repeated
        words differently shows them twice, which a reader can skip, unlike a lost word.
        """
        counts = [k for k in range(max(1, self.repeat.low), len(self.expected) + 1)
                  if k <= len(held)]
        fits = [k for k in counts if self._unlike(held, k, _same) <= k // 4]
        if self.repeat.estimate == 0:
            fits.append(0)
        if not fits:
            fits = [k for k in counts if self._unlike(held, k, _alike) <= k // 3]
        if not fits:
            return self.repeat.low  # the text cannot tell: only what the audio is sure of
        return min(fits, key=lambda k: (abs(k - self.repeat.estimate), -k))

    def _unlike(self, held: list[str], k: int, alike: Callable[[str, str], bool]) -> int:
        """How many of the first ``k`` held words differ from the last ``k`` shown."""
        tail = self.expected[len(self.expected) - k:]
        return sum(not alike(a, b) for a, b in zip(held[:k], tail, strict=True))


def _same(a: str, b: str) -> bool:
    return a == b


def _alike(a: str, b: str) -> bool:
    return a == b or SequenceMatcher(None, a, b).ratio() >= ALIKE_RATIO
