"""Caption rows: whole rows at phrase boundaries, stable as text is appended."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from captioner.realtime.rows import DEFAULT_ROW_CHARS, WEAK_ENDINGS, break_rows

# Real transcripts (public-domain texts as people read them aloud).
DICKENS = (
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was "
    "the age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it "
    "was the season of Light, it was the season of Darkness, it was the spring of hope, it "
    "was the winter of despair, we had everything before us, we had nothing before us, we "
    "were all going direct to Heaven, we were all going direct the other way"
)
KENNEDY = (
    "And so, my fellow Americans: ask not what your country can do for you, ask what you "
    "can do for your country. My fellow citizens of the world: ask not what America will do "
    "for you, but what together we can do for the freedom of man."
)


def _greedy(words: list[str], limit: int = DEFAULT_ROW_CHARS) -> list[list[str]]:
    rows: list[list[str]] = [[]]
    for word in words:
        if rows[-1] and len(" ".join([*rows[-1], word])) > limit:
            rows.append([])
        rows[-1].append(word)
    return rows


def _weak_endings(rows: list[list[str]]) -> int:
    return sum(row[-1].casefold() in WEAK_ENDINGS for row in rows[:-1])


def _always(_: str) -> bool:
    return True


def test_real_transcripts_break_at_phrases_not_after_function_words():
    for text in (DICKENS, KENNEDY):
        words = text.split()
        rows = break_rows(words, _always)
        assert [w for row in rows for w in row] == words, "nothing lost or reordered"
        assert all(len(" ".join(row)) <= DEFAULT_ROW_CHARS for row in rows)
        assert _weak_endings(rows) == 0
        assert _weak_endings(_greedy(words)) >= 1, "the greedy fill does end rows weakly"
        assert len(rows) <= len(_greedy(words)) + 2, "rows stay well filled"


def test_break_at_punctuation_when_the_row_keeps_most_of_its_length():
    text = "we had everything before us, we had nothing before us"
    rows = break_rows(text.split(" "), _always)
    assert [" ".join(r) for r in rows] == ["we had everything before us,",
                                           "we had nothing before us"]


def test_width_limit_and_a_word_longer_than_a_row():
    rows = break_rows(["Pneumonoultramicroscopicsilicovolcanoconiosis", "is", "long"],
                      lambda text: len(text) <= 20, 42)
    assert rows == [["Pneumonoultramicrosc"], ["opicsilicovolcanocon"], ["iosis", "is", "long"]]
    narrow = break_rows(KENNEDY.split(), lambda text: len(text) <= 25, 42)
    assert all(len(" ".join(r)) <= 25 for r in narrow)


@given(st.lists(st.sampled_from([*DICKENS.split(), "a", "of", "the", "x" * 30]),
                min_size=1, max_size=80),
       st.integers(min_value=20, max_value=60))
def test_appending_never_changes_complete_rows(words, limit):
    full = break_rows(words, _always, limit)
    for n in range(1, len(words)):
        prefix_rows = break_rows(words[:n], _always, limit)
        assert prefix_rows[:-1] == full[: len(prefix_rows) - 1]
