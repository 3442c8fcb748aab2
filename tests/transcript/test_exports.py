import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.bench_export import full_search
from captioner.realtime.captions import CaptionLine
from captioner.realtime.rows import graphemes
from captioner.transcript.exports import (
    MAX_CHARS,
    MIN_MS,
    ExportError,
    build_cues,
    cue_rows,
    export,
    timestamp,
    to_srt,
    to_txt,
)
from tests.support.disk import file_size_limit
from tests.transcript.lines import LINES

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("fmt", ["srt", "vtt", "txt"])
def test_export_matches_golden_file_byte_for_byte(tmp_path, fmt):
    out = export(LINES, fmt, tmp_path / f"out.{fmt}")
    assert out.read_bytes() == (GOLDEN / f"meeting.{fmt}").read_bytes()


def test_timestamps_use_comma_for_srt_and_dot_for_vtt():
    assert timestamp(3_723_004) == "01:02:03,004"
    assert timestamp(3_723_004, ".") == "01:02:03.004"


def test_cue_rows_never_exceed_the_width_and_keep_every_word():
    text = "a" * 50 + " short words here " + "b" * 10
    rows = [row for cue in cue_rows(text, 42) for row in cue]
    assert all(len(r) <= 42 for r in rows)
    assert "".join(rows).replace(" ", "") == text.replace(" ", "")


def test_cue_rows_never_cut_inside_a_grapheme_cluster():
    """An accented letter written as letter + combining mark, or an emoji sequence, is one
    character to a reader: a subtitle must not split it (its mark then sits on a space)."""
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    text = "xyz" + "cafe\u0301" * 9 + " " + family * 14  # cuts at 42 fall inside both
    rows = [row for cue in cue_rows(text, 42) for row in cue]
    assert "".join(rows).replace(" ", "") == text.replace(" ", "")
    whole = set(graphemes(text))
    assert all(c in whole for row in rows for c in graphemes(row))


def test_a_long_line_is_cut_into_even_cues_at_a_phrase_not_a_stray_word():
    text = "1 From fairest creatures we desire increase, that thereby beauty's rose might never"
    cues = cue_rows(text, 42, 2)  # greedy rows: 34 + 42 characters, then "never" alone
    assert [" ".join(rows) for rows in cues] == [
        "1 From fairest creatures we desire increase,",
        "that thereby beauty's rose might never"]
    assert cue_rows("Yes, we can.", 42, 2) == [["Yes, we can."]]


def test_unknown_format_and_unwritable_path_are_readable_errors(tmp_path):
    with pytest.raises(ExportError, match="Unknown export format"):
        export(LINES, "docx", tmp_path / "x.docx")
    with pytest.raises(ExportError, match="Could not write"):
        export(LINES, "srt", tmp_path / "missing-folder" / "x.srt")


@pytest.mark.parametrize("fmt", ["srt", "vtt", "txt"])
def test_a_lone_surrogate_is_exported_as_a_replacement_character(tmp_path, fmt):
    broken = CaptionLine(json.loads('"caf\\ud800 au lait"'), 0.0, 2.0)
    out = export([broken, CaptionLine("next line", 2.0, 4.0)], fmt, tmp_path / f"x.{fmt}")
    text = out.read_text(encoding="utf-8")
    assert "caf\ufffd au lait" in text and "next line" in text
    assert out.stat().st_mode & 0o777 == 0o600  # transcripts are private


def test_a_full_disk_is_an_export_error_and_leaves_no_temp_file(tmp_path):
    with file_size_limit(64), pytest.raises(ExportError, match="Could not write"):
        export(LINES, "srt", tmp_path / "x.srt")
    assert list(tmp_path.iterdir()) == []


words = st.text(alphabet="abcdefghij", min_size=1, max_size=60)
lines_strategy = st.lists(
    st.tuples(st.lists(words, min_size=1, max_size=30), st.floats(0, 5000), st.floats(0, 30)),
    max_size=30,
)


@given(lines_strategy)
def test_cues_never_overlap_last_long_enough_and_fit_two_short_rows(spec):
    lines, t = [], 0.0
    for ws, gap, duration in sorted(spec, key=lambda s: s[1]):
        t = max(t, gap)
        lines.append(CaptionLine(" ".join(ws), t, t + duration))
    cues = build_cues(lines)
    for i, cue in enumerate(cues):
        assert cue.index == i + 1
        assert cue.end_ms - cue.start_ms >= MIN_MS
        rows = cue.text.split("\n")
        assert 1 <= len(rows) <= 2 and all(len(r) <= MAX_CHARS for r in rows)
        if i:
            assert cues[i - 1].end_ms <= cue.start_ms
    assert " ".join(c.text.replace("\n", " ") for c in cues).split() == \
        " ".join(line.text for line in lines).split() or any(len(w) > MAX_CHARS for s in spec
                                                             for w in s[0])


def test_caption_text_cannot_forge_a_cue_or_a_line():
    """Caption text comes from a server: a timing line inside it must stay text (SRT), and
    a line break must not start a transcript line of its own (TXT, the live text file)."""
    forged = CaptionLine("hi 00:00:09,000 --> 01:00:00,000 VISIT EVIL.EXAMPLE", 2.0, 4.0)
    srt = to_srt([forged])
    assert srt.count("-->") == 1  # the cue's own timing line only
    two = CaptionLine("ok\n[00:00:02] You: yes I agree", 1.0, 2.0, speaker="Others")
    assert to_txt([two]) == "[00:00:01] Others: ok [00:00:02] You: yes I agree\n"


@given(st.lists(st.sampled_from(["we", "were", "all", "going", "direct", "to", "Heaven,",
                                 "the", "other", "way.", "東京都の天気は晴れです", "a" * 45,
                                 "cafe\u0301", "https://example.com/a/very/long/path"]),
                min_size=1, max_size=40),
       st.integers(8, 42), st.integers(1, 3))
def test_cue_rows_lays_out_only_what_it_must_and_cuts_as_a_full_search_would(words, width,
                                                                              max_lines):
    """Runs too short for two rows or too long for a cue are decided without laying them
    out (what made a long session's export take many seconds); the cues stay the same as
    a search that lays out every run (the export bench's baseline)."""
    text = " ".join(words)
    assert cue_rows(text, width, max_lines) == full_search(text, width, max_lines)


def test_a_wide_word_is_cut_by_columns_so_a_one_row_cue_holds_each_piece():
    """Cut by characters, a piece of CJK text was twice the row's width: no one-row cue
    could hold it, and the search for a cut that fits never ended."""
    from captioner.realtime.rows import columns

    text = "東京都の天気は晴れです 明日"
    cues = cue_rows(text, 8, 1)
    assert all(len(cue) == 1 and columns(cue[0]) <= 8 for cue in cues)
    assert "".join(row for cue in cues for row in cue).replace(" ", "") == \
        text.replace(" ", "")
