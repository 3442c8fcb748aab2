"""Break caption text into display rows at phrase boundaries (plain Python, no Qt).

Captions roll up by whole rows, as broadcast roll-up captions do: text flows from
row to row, and a row is complete once the next word does not fit. A greedy fill
can leave a row ending in "of" or "the" with its phrase on the next row, which
slows reading; so a row gives up its last words to the next one when that ends it
at punctuation or on a content word, as long as it keeps most of its length.

A complete row depends only on its own words and the one that overflowed it, so
appending text never changes the rows before the last: finished rows stay still
on screen while the live text grows below them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

DEFAULT_ROW_CHARS = 42  # broadcast practice for a caption row
MIN_FILL = 0.6  # a phrase-aware break keeps at least this share of the greedy row
PUNCTUATION_FILL = 0.75  # ... and a break at punctuation at least this share

# Words a row should not end with when a better break exists: articles, prepositions,
# conjunctions, and the like (English; other languages fall back to greedy breaks).
WEAK_ENDINGS = frozenset((
    "a", "an", "the", "and", "or", "but", "nor", "so", "yet", "if", "as", "of", "to", "in",
    "on", "at", "by", "for", "from", "with", "into", "onto", "upon", "about", "over", "under",
    "than", "that", "which", "who", "whom", "whose", "whether", "because", "while", "although",
    "though", "until", "unless", "since", "after", "before", "between", "among", "through",
    "during", "without", "within", "my", "your", "his", "her", "its", "our", "their", "this",
    "these", "those", "i", "we", "you", "he", "she", "they", "it", "is", "are", "was", "were",
    "be", "been", "not", "no", "very", "just", "mr", "mrs", "ms", "dr", "st",
))
_PUNCTUATION = (",", ";", ":", ".", "!", "?", "…", "—", ")", '"', "”")


def _key(word: str) -> str:
    return word.strip("\"'“”‘’()[]").casefold()


def _ends_phrase(word: str) -> bool:
    return word.endswith(_PUNCTUATION)


def phrase_break(words: Sequence[str], start: int, end: int, *,
                 punctuation_fill: float = PUNCTUATION_FILL) -> int:
    """Where to end the row ``words[start:end]`` (a greedy fill): ``end`` or earlier,
    at punctuation keeping ``punctuation_fill`` of it, else off a weak word."""
    if _ends_phrase(words[end - 1]) or end - start < 2:
        return end
    full = len(" ".join(words[start:end]))

    def kept(j: int) -> float:
        return len(" ".join(words[start:j])) / full

    for j in range(end - 1, start, -1):
        if kept(j) < punctuation_fill:
            break
        if _ends_phrase(words[j - 1]):
            return j
    if _key(words[end - 1]) not in WEAK_ENDINGS:
        return end
    for j in range(end - 1, start, -1):
        if kept(j) < MIN_FILL:
            break
        if _key(words[j - 1]) not in WEAK_ENDINGS:
            return j
    return end


def break_cost(word: str) -> float:
    """How bad a break after ``word`` is: none after punctuation, most after a weak word."""
    if _ends_phrase(word):
        return 0.0
    return 1.0 if _key(word) in WEAK_ENDINGS else 0.5


def break_rows(words: Sequence[str], fits: Callable[[str], bool],
               max_chars: int = DEFAULT_ROW_CHARS) -> list[list[str]]:
    """Rows of ``words``; each row fits (``fits`` and ``max_chars``) unless one word alone
    does not, and none ends on a weak word when a break keeping most of it exists."""
    rows: list[list[str]] = []
    start = 0
    while start < len(words):
        end = start + 1
        while end < len(words):
            candidate = " ".join(words[start : end + 1])
            if len(candidate) > max_chars or not fits(candidate):
                break
            end += 1
        if end < len(words):  # the row is complete: the next word overflowed it
            end = phrase_break(words, start, end)
        rows.append(list(words[start:end]))
        start = end
    return rows
