"""Text without spaces (Chinese and Japanese as the multilingual engine writes them, a
URL) is broken across rows between grapheme clusters, and cut into lines after "。"."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from captioner.realtime.captions import CaptionModel
from captioner.realtime.rows import break_rows, columns, graphemes

# Whisper's Chinese and Japanese (no spaces), and an English line with a URL.
ZH = ("我们今天讨论的是关于气候变化对农业生产的影响以及各国政府应该采取什么样的措施来应对"
      "这一挑战因为这个问题关系到每一个人的生活和未来的发展所以非常重要")
JA = "本日は気候変動が農業生産に与える影響、各国政府がどのような対策を取るべきかを話し合います"
URL = "see https://example.com/a/very/long/path/to/the/document/we/discussed/today.html ok"

# Clusters that must never be split: accents as combining marks, emoji ZWJ sequences,
# skin tones, flags, Hangul jamo, a surrogate pair left in the text.
CLUSTERS = ["e\u0301", "n\u0303", "👨\u200d👩\u200d👧\u200d👦", "👍🏽", "🇯🇵", "🇫🇷",
            "\u1100\u1161\u11a8", "\ud83d\ude00", "❤\ufe0f", "我", "。", "x"]


def _always(_: str) -> bool:
    return True


def _rows(text: str, fits=_always, limit: int = 42) -> list[str]:
    return [" ".join(row) for row in break_rows(text.split(), fits, limit)]


def _rejoin(text: str, rows: list[str]) -> list[int]:
    """Asserts the rows are ``text`` in order, nothing lost or repeated, a break either
    at a space (dropped) or inside a word; returns where each row starts in ``text``."""
    at, starts = 0, []
    for row in rows:
        if text[at : at + 1] == " ":
            at += 1
        assert text.startswith(row, at), (row, text[at:])
        starts.append(at)
        at += len(row)
    assert at == len(text)
    return starts


def test_chinese_fills_rows_of_the_row_length_in_columns():
    rows = _rows(ZH)
    _rejoin(ZH, rows)
    assert [len(row) for row in rows] == [21, 21, 21, 10]  # 42 columns: 21 wide characters
    assert columns("我们") == 4 and columns("ab") == 2 and columns("e\u0301") == 1


def test_text_without_spaces_fits_a_narrow_view():
    narrow = _rows(ZH, lambda text: columns(text) <= 30)
    assert [len(row) for row in narrow][:3] == [15, 15, 15]
    _rejoin(ZH, narrow)
    url = _rows(URL, lambda text: len(text) <= 30)
    _rejoin(URL, url)
    assert url == ["see", "https://example.com/a/very/lon", "g/path/to/the/document/we/disc",
                   "ussed/today.html ok"]


def test_chinese_after_other_words_fills_their_row():
    text = "You: " + ZH
    rows = _rows(text)
    _rejoin(text, rows)
    assert rows[0] == "You: 我们今天讨论的是关于气候变化对农业生"


def test_japanese_breaks_after_punctuation_and_no_row_starts_with_it():
    rows = _rows(JA)
    _rejoin(JA, rows)
    assert rows[0] == "本日は気候変動が農業生産に与える影響、"  # not "…影響、各国政府が" | "どの"
    kana = "あいうえおかきくけこさしすせそたちつてとな"  # a full row: 21 wide characters
    for text in (f"{kana}。なにぬねの", f"{kana}っなにぬねの"):
        rows = _rows(text)
        _rejoin(text, rows)
        assert rows[1][0] not in "。っ", rows


@given(st.lists(st.lists(st.sampled_from(CLUSTERS), min_size=1, max_size=50),
                min_size=1, max_size=8),
       st.integers(min_value=20, max_value=60))
def test_breaks_never_split_a_cluster_nor_lose_text(words, limit):
    text = " ".join("".join(word) for word in words)
    between = set()  # offsets in ``text`` between two clusters of a word
    at = 0
    for word in words:
        for cluster in word[:-1]:
            at += len(cluster)
            between.add(at)
        at += len(word[-1]) + 1
    rows = _rows(text, limit=limit)
    for row, start in zip(rows, _rejoin(text, rows), strict=True):
        assert start == 0 or text[start - 1] == " " or start in between, (row, start)
        assert columns(row) <= limit


@given(st.lists(st.sampled_from(["we", "had", "of", "the", ZH[:30], JA[:25], URL.split()[1],
                                 "e\u0301" * 30, "👍🏽" * 25]), min_size=1, max_size=40),
       st.integers(min_value=20, max_value=60))
def test_appending_never_changes_complete_rows(words, limit):
    full = break_rows(words, _always, limit)
    for n in range(1, len(words)):
        prefix_rows = break_rows(words[:n], _always, limit)
        assert prefix_rows[:-1] == full[: len(prefix_rows) - 1]


def test_graphemes_agree_with_unicode_segmentation():
    regex = pytest.importorskip("regex")
    text = "".join(CLUSTERS[:-6]) + "가각" + "\U0001f3f4\U000e0067\U000e0062\U000e007f" + "a\u200db"
    assert list(graphemes(text)) == regex.findall(r"\X", text)


def test_chinese_sentences_end_lines_without_a_space():
    model = CaptionModel()
    lines = ["我们今天讨论的是关于气候变化对农业生产的影响。",
             "他说：“这个问题关系到每一个人的生活。”",  # not cut before the closing quote
             "所以各国政府应该尽快采取有效的措施！"]
    text = "".join(lines) + "然后"
    finalized = [line.text for char in text for line in model.add_text(char, 1.0).finalized]
    assert finalized == lines
    assert model.live.text == "然后"


def test_a_line_without_spaces_is_cut_between_characters():
    model = CaptionModel(max_chars=20)
    text = "café\u0301" + "👨\u200d👩\u200d👧" * 4 + "e\u0301" * 10
    lines = [line.text for line in model.add_text(text, 1.0).finalized]
    lines += [line.text for line in model.flush().finalized]
    assert "".join(lines) == text
    assert all(len(line) <= 20 for line in lines)
    assert [c for line in lines for c in graphemes(line)] == list(graphemes(text))
