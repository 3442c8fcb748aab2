"""Break caption text into display rows at phrase boundaries (plain Python, no Qt).

Captions roll up by whole rows, as broadcast roll-up captions do: text flows from
row to row, and a row is complete once the next word does not fit. A greedy fill
can leave a row ending in "of" or "the" with its phrase on the next row, which
slows reading; so a row gives up its last words to the next one when that ends it
at punctuation or on a content word, as long as it keeps most of its length.

A complete row depends only on its own words and the one that overflowed it, so
appending text never changes the rows before the last: finished rows stay still
on screen while the live text grows below them.

Text need not have spaces: Chinese and Japanese are written without them, and a URL
is one long word. Such text is broken between grapheme clusters (what a reader sees
as one character: a letter with its accents, an emoji sequence), never inside one,
so no row is wider than the view and every character is seen. Row length counts
columns, an East Asian wide character taking two, as it takes about twice the width
of a Latin letter.
"""

from __future__ import annotations

import bisect
import functools
import unicodedata
from collections.abc import Callable, Sequence

import regex

DEFAULT_ROW_CHARS = 42  # broadcast practice for a caption row
_CLUSTER = regex.compile(r"\X")  # one extended grapheme cluster
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
_PUNCTUATION = (",", ";", ":", ".", "!", "?", "…", "—", ")", '"', "”",
                "。", "，", "！", "？", "、", "；", "：", "」", "』", "）")
# CJK text breaks between any two characters (UAX #14), but a row does not start with
# closing punctuation nor end with an opening bracket (kinsoku).
_CJK_PUNCTUATION = frozenset("。，！？、；：")
_NO_ROW_START = frozenset("。，！？、；：」』）】〉》”’・ー…"
                          "ぁぃぅぇぉっゃゅょゎァィゥェォッャュョヮ")
_NO_ROW_END = frozenset("「『（【〈《“‘")


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
    full = row_columns(words[start:end])

    def kept(j: int) -> float:
        return row_columns(words[start:j]) / full

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
    """Rows of ``words``; each fits (``fits`` and ``max_chars`` columns) and none ends on a
    weak word when a break keeping most of it exists. A word too long for a row of its
    own is broken across rows, and so is CJK text, which may break between any two
    characters and so fills its row; a row then holds a piece of the word."""
    words = list(words)

    def row_fits(row: Sequence[str]) -> bool:
        return row_columns(row) <= max_chars and fits(" ".join(row))

    rows: list[list[str]] = []
    start = 0
    while start < len(words):
        end = start + 1
        while end < len(words) and row_fits(words[start : end + 1]):
            end += 1
        end = _row_end(words, start, end, row_fits)
        rows.append(words[start:end])
        start = end
    return rows


def _row_end(words: list[str], start: int, end: int,
             row_fits: Callable[[Sequence[str]], bool]) -> int:
    """Where the row ``words[start:end]`` (a greedy fill) ends; a word it ends in the
    middle of is replaced in ``words`` by its two pieces."""
    alone = end == start + 1 and not row_fits(words[start:end])  # too long for any row
    if alone or (end < len(words) and _breaks_anywhere(words[end])):
        at = start if alone else end
        head = _head(words[start:at], words[at], row_fits, anywhere=alone)
        if head and head != words[at]:
            words[at : at + 1] = [head, words[at][len(head) :]]
            return at + 1
    return end if end == len(words) else phrase_break(words, start, end)


def _head(row: list[str], word: str, row_fits: Callable[[Sequence[str]], bool], *,
          anywhere: bool) -> str:
    """The first piece of ``word`` that ends ``row`` ("" if none may): after CJK
    punctuation when that keeps most of the row, else as much as fits."""
    clusters = graphemes(word)
    fitting = bisect.bisect_left(range(1, len(clusters) + 1), True,
                                 key=lambda k: not row_fits([*row, "".join(clusters[:k])]))
    before = row_columns(row) + 1 if row else 0
    full = before + columns("".join(clusters[:fitting]))

    def kept(k: int) -> float:
        return (before + columns("".join(clusters[:k]))) / full

    places = [k for k in range(min(fitting, len(clusters) - 1), 0, -1)
              if _may_break(clusters[k - 1], clusters[k])]
    for k in places:
        if kept(k) < PUNCTUATION_FILL:
            break
        if clusters[k - 1] in _CJK_PUNCTUATION:
            return "".join(clusters[:k])
    if places:
        return "".join(clusters[: places[0]])
    return "".join(clusters[: max(fitting, 1)]) if anywhere else ""


def _may_break(before: str, after: str) -> bool:
    """Whether a row may end between these clusters of a word: next to CJK text (which
    has no spaces), but not before closing punctuation nor after an opening bracket."""
    return ((_wide(before) or _wide(after))
            and after not in _NO_ROW_START and before not in _NO_ROW_END)


# --- characters as a reader sees them ------------------------------------------------


def row_columns(words: Sequence[str]) -> int:
    """Columns of ``words`` as one row, a space between each two."""
    return sum(map(columns, words)) + max(0, len(words) - 1)


@functools.lru_cache(maxsize=4096)
def columns(text: str) -> int:
    """Display columns of ``text``: two for an East Asian wide cluster, else one."""
    return sum(2 if _wide(cluster) else 1 for cluster in graphemes(text))


def _wide(cluster: str) -> bool:
    return any(unicodedata.east_asian_width(ch) in ("W", "F") for ch in cluster)


@functools.lru_cache(maxsize=4096)
def _breaks_anywhere(word: str) -> bool:
    return any(map(_wide, graphemes(word)))


def cluster_cut(text: str, limit: int) -> int:
    """The last grapheme cluster boundary of ``text`` at or before offset ``limit`` (the
    end of the first cluster if it is longer)."""
    end = 0
    for cluster in graphemes(text):
        if end and end + len(cluster) > limit:
            break
        end += len(cluster)
    return end


@functools.lru_cache(maxsize=4096)
def graphemes(text: str) -> tuple[str, ...]:
    """``text`` as extended grapheme clusters (UAX #29), what a break must never split."""
    return tuple(_CLUSTER.findall(text))
