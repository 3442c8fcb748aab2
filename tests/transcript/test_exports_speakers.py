"""Two-stream transcripts: speaker names in every format, lines in spoken order."""

from pathlib import Path

import pytest

from captioner.realtime.captions import CaptionLine
from captioner.transcript.exports import build_cues, export, to_srt, to_txt, to_vtt
from captioner.transcript.journal import Journal, read_journal
from tests.transcript.lines import CALL, LINES

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("fmt", ["srt", "vtt", "txt"])
def test_call_export_matches_golden_file_byte_for_byte(tmp_path, fmt):
    out = export(CALL, fmt, tmp_path / f"call.{fmt}")
    assert out.read_bytes() == (GOLDEN / f"call.{fmt}").read_bytes()


def test_txt_prefixes_each_line_with_its_speaker_in_spoken_order():
    rows = to_txt(CALL).splitlines()
    assert rows[0] == "[00:00:00] Others: Can everyone hear me?"
    assert rows[1] == "[00:00:01] You: Yes, loud and clear."
    assert [row.split("] ")[1].split(":")[0] for row in rows] == [
        "Others", "You", "Others", "You"]


def test_vtt_names_the_voice_of_every_cue_and_escapes_it():
    text = to_vtt([CaptionLine("hi", 0.0, 1.0, speaker="Ann <host>")])
    assert "<v Ann &lt;host&gt;>hi" in text
    cues = [block for block in to_vtt(CALL).split("\n\n")[1:] if block.strip()]
    assert all("<v You>" in cue or "<v Others>" in cue for cue in cues)


def test_srt_names_the_speaker_at_the_start_of_each_line():
    srt = to_srt(CALL)
    assert "\nOthers: Can everyone hear me?\n" in srt
    assert "\nYou: Yes, loud and clear.\n" in srt
    assert all(len(row) <= 42 for row in srt.splitlines())


def test_single_stream_lines_carry_no_name_and_keep_their_order():
    typed_first = [CaptionLine("late start", 5.0, 6.0), CaptionLine("earlier", 1.0, 2.0)]
    assert to_txt(typed_first).splitlines() == ["[00:00:05] late start",
                                                "[00:00:01] earlier"]
    assert all(cue.speaker is None for cue in build_cues(LINES))
    assert ":" not in to_srt(LINES).split("-->")[1].split("\n", 2)[1]


def test_journal_keeps_speakers_and_reads_lines_back_in_spoken_order(tmp_path):
    journal = Journal.create(tmp_path, source="both")
    for line in CALL:
        journal.append(line)
    journal.append(CaptionLine("no speaker", 12.0, 13.0))
    journal.close()
    back = read_journal(journal.path).lines
    assert [(line.speaker, line.start) for line in back] == [
        ("Others", 0.4), ("You", 1.2), ("Others", 3.0), ("You", 9.5), (None, 12.0)]


def test_journal_refuses_a_speaker_that_is_not_text(tmp_path):
    path = tmp_path / "captions-x.jsonl"
    path.write_text('{"type": "line", "text": "a", "start": 0, "end": 1, "speaker": 5}\n'
                    '{"type": "line", "text": "b", "start": 1, "end": 2, "speaker": "You"}\n')
    contents = read_journal(path)
    assert contents.skipped == 1
    assert [line.text for line in contents.lines] == ["b"]
