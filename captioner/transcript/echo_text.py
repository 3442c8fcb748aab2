"""Text-level echo suppression: a "You" line that repeats what "Others" just said.

The fallback behind acoustic echo cancellation (captioner/audio/echo.py): when
echo still gets through (the canceller converging, a loud room, cancellation
off), the microphone's transcript repeats the other side's words at the same
moment. :func:`suppress_echo` matches a finalized mic line against the "Others"
lines of the same moment and drops it, or trims the repeated words from it.

Echo and a genuine reply differ in three ways this relies on:
- time: echo is heard while the others speak (both streams count audio time
  from the same start), a reply after; only "Others" lines within
  ``WINDOW_SECONDS`` of the mic line are compared, and matched words must have
  been said at about the same time (word times spread evenly over each line);
- order: echo repeats a run of words in order (local alignment of word
  sequences, tolerant of a recognition error or two: similar words match, an
  odd word may be missing or extra);
- substance: a run counts only with enough content words ("I think we should"
  is shared by half of all replies). A whole line repeated word for word at the
  same time counts even when short.

Sans-I/O and pure: a function of the line and the recent "Others" lines, with
the signature the two-stream captioner's mic-line filter expects.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from difflib import SequenceMatcher

from captioner.realtime.captions import CaptionLine

WINDOW_SECONDS = 3.0  # an "Others" line this close in time to the mic line is compared
COINCIDE_SECONDS = 1.0  # echoed words are heard this close to when they were said
MIN_RUN_WORDS = 3  # matched words in a run for it to count as echo…
MIN_RUN_CONTENT_WORDS = 2  # …of which content words…
LONG_RUN_WORDS = 5  # …unless the run is this long
MIN_RUN_DENSITY = 0.6  # matched words over the mic words the run spans
MIN_KEPT_WORDS = 2  # a trimmed line keeps at least this many words, or goes
SIMILAR_WORD = 0.75  # difflib ratio at which two words count as the same (one error)

# Alignment scores (Smith-Waterman over words).
_MATCH, _MISMATCH, _GAP = 2, -1, -1

_WORD = re.compile(r"[a-z0-9]+")
# Words too common to tell a repeat from a reply on their own.
STOPWORDS = frozenset({
    "a", "an", "the", "and", "or", "but", "so", "if", "then", "than", "that", "this", "these",
    "those", "there", "here", "of", "to", "in", "on", "at", "by", "for", "with", "from", "as",
    "into", "onto", "about", "over", "under", "up", "down", "out", "off", "not", "no", "yes",
    "yeah", "okay", "ok", "oh", "i", "me", "my", "mine", "we", "us", "our", "you", "your",
    "yours", "he", "him", "his", "she", "her", "it", "its", "they", "them", "their", "am", "is",
    "are", "was", "were", "be", "been", "being", "do", "does", "did", "done", "have", "has",
    "had", "will", "would", "can", "could", "shall", "should", "may", "might", "must", "just",
    "very", "really", "too", "also", "well", "now", "think", "know", "mean", "like", "get",
    "got", "go", "going", "say", "said", "what", "who", "whom", "which", "when", "where", "why",
    "how", "all", "any", "some"
})


@dataclasses.dataclass(frozen=True, slots=True)
class _Token:
    """One word of a line as written, with its normalised form(s)."""

    text: str
    words: tuple[str, ...]  # "self-substantial" → ("self", "substantial"); "—" → ()


def _tokens(text: str) -> list[_Token]:
    out = []
    for raw in text.split():
        plain = raw.lower().replace("'", "").replace("’", "")
        out.append(_Token(raw, tuple(_WORD.findall(plain))))
    return out


def _words(tokens: Sequence[_Token]) -> tuple[list[str], list[int]]:
    """The normalised words and, for each, the index of its token."""
    words, owner = [], []
    for i, token in enumerate(tokens):
        for word in token.words:
            words.append(word)
            owner.append(i)
    return words, owner


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    if min(len(a), len(b)) < 3:  # short words: exact only ("a"/"i", "to"/"do")
        return False
    return SequenceMatcher(None, a, b).ratio() >= SIMILAR_WORD


def _best_run(mic: Sequence[str], others: Sequence[str], masked: set[int]
              ) -> list[tuple[int, int]]:
    """The (mic, others) word index pairs matched in the best local alignment
    (Smith-Waterman: fuzzy word matches, gaps allowed); masked mic words never match."""
    rows, cols = len(mic) + 1, len(others) + 1
    hits = [[(i not in masked) and _same(mic[i], others[j]) for j in range(cols - 1)]
            for i in range(rows - 1)]
    score = [[0] * cols for _ in range(rows)]
    best, best_at = 0, (0, 0)
    for i in range(1, rows):
        for j in range(1, cols):
            diag = score[i - 1][j - 1] + (_MATCH if hits[i - 1][j - 1] else _MISMATCH)
            value = max(0, diag, score[i - 1][j] + _GAP, score[i][j - 1] + _GAP)
            score[i][j] = value
            if value > best:
                best, best_at = value, (i, j)
    pairs: list[tuple[int, int]] = []
    i, j = best_at
    while i > 0 and j > 0 and score[i][j] > 0:  # trace back
        hit = hits[i - 1][j - 1]
        if score[i][j] == score[i - 1][j - 1] + (_MATCH if hit else _MISMATCH):
            if hit:
                pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif score[i][j] == score[i - 1][j] + _GAP:
            i -= 1
        else:
            j -= 1
    return pairs[::-1]


def _word_times(line: CaptionLine, count: int) -> list[float]:
    """When each of ``count`` words was said, spread evenly over the line (lines carry
    no word times)."""
    step = (line.end - line.start) / max(count, 1)
    return [line.start + (k + 0.5) * step for k in range(count)]


def _coincide(pairs: Sequence[tuple[int, int]], mic_times: Sequence[float],
              other_times: Sequence[float]) -> bool:
    """Echo is heard while the words are said; a reply comes after them."""
    gaps = sorted(abs(mic_times[i] - other_times[j]) for i, j in pairs)
    return bool(gaps) and gaps[len(gaps) // 2] <= COINCIDE_SECONDS


def _is_echo_run(mic: Sequence[str], matched: Sequence[int]) -> bool:
    if len(matched) < MIN_RUN_WORDS:
        return False
    span = matched[-1] - matched[0] + 1
    if len(matched) / span < MIN_RUN_DENSITY:
        return False
    content = sum(1 for i in matched if mic[i] not in STOPWORDS)
    return content >= MIN_RUN_CONTENT_WORDS or len(matched) >= LONG_RUN_WORDS


def echo_words(line: CaptionLine, recent_others: Sequence[CaptionLine]) -> set[int]:
    """Indices of the line's whitespace-separated words that repeat the others' words."""
    nearby = sorted((o for o in recent_others if o.start - WINDOW_SECONDS <= line.end
                     and o.end + WINDOW_SECONDS >= line.start), key=lambda o: o.start)
    others: list[str] = []
    other_times: list[float] = []
    for other in nearby:
        words = _words(_tokens(other.text))[0]
        others += words
        other_times += _word_times(other, len(words))
    mic, owner = _words(_tokens(line.text))
    mic_times = _word_times(line, len(mic))
    masked = _repeated(mic, others, lambda pairs: _coincide(pairs, mic_times, other_times))
    return {owner[i] for i in masked}


def repeated_words(text: str, said: str) -> set[int]:
    """Indices of ``text``'s whitespace-separated words that repeat runs of ``said``
    (the same rules as echo, without the timing: for a caller that knows the two were
    heard at one moment)."""
    mic, owner = _words(_tokens(text))
    return {owner[i] for i in _repeated(mic, _words(_tokens(said))[0], lambda _pairs: True)}


def _repeated(mic: Sequence[str], others: Sequence[str],
              coincide: Callable[[list[tuple[int, int]]], bool]) -> set[int]:
    """Indices into ``mic`` of the runs that repeat ``others``, best run first."""
    masked: set[int] = set()
    while mic and others and len(masked) < len(mic):
        pairs = _best_run(mic, others, masked)
        matched = [i for i, _ in pairs]
        if not pairs or not coincide(pairs):
            break
        whole_line = len(matched) == len(mic) and any(mic[i] not in STOPWORDS for i in matched)
        if not (whole_line or _is_echo_run(mic, matched)):
            break
        masked.update(range(matched[0], matched[-1] + 1))
    return masked


def suppress_echo(line: CaptionLine, recent_others: Sequence[CaptionLine]
                  ) -> CaptionLine | None:
    """``line`` (a finalized mic line) without the words that repeat ``recent_others``;
    None when nothing of it is left worth showing."""
    return without_words(line, echo_words(line, recent_others))


def without_words(line: CaptionLine, drop: set[int]) -> CaptionLine | None:
    """``line`` without its whitespace-separated words at ``drop``; None when fewer
    than ``MIN_KEPT_WORDS`` words would be left."""
    if not drop:
        return line
    tokens = _tokens(line.text)
    kept = [t for i, t in enumerate(tokens) if i not in drop]
    if sum(len(t.words) for t in kept) < MIN_KEPT_WORDS:
        return None
    return dataclasses.replace(line, text=" ".join(t.text for t in kept))


__all__ = ["STOPWORDS", "WINDOW_SECONDS", "echo_words", "repeated_words", "suppress_echo",
           "without_words"]
