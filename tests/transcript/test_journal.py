import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from captioner.realtime.captions import CaptionLine, LineKind
from captioner.transcript.journal import (
    Journal,
    JournalError,
    journal_files,
    mark_recovered,
    read_journal,
    unfinished_journals,
)
from tests.support.disk import file_size_limit

WRITER = """
import sys, itertools
from captioner.realtime.captions import CaptionLine
from captioner.transcript.journal import Journal
journal = Journal.create(sys.argv[1], source="system")
print(journal.path, flush=True)
for i in itertools.count():
    journal.append(CaptionLine(f"line number {i}", i * 1.0, i + 0.5))
    print(i, flush=True)
"""


def test_round_trip_with_end_marker(tmp_path):
    journal = Journal.create(tmp_path, source="mic", endpoint="On this computer")
    lines = [CaptionLine("Hello “world”.", 0.0, 1.25),
             CaptionLine("[3 s of audio not transcribed]", 1.5, 4.5, kind=LineKind.GAP),
             CaptionLine("typed reply", 5.0, 5.0, kind=LineKind.TYPED)]
    for line in lines:
        journal.append(line)
    journal.close()
    contents = read_journal(journal.path)
    assert contents.lines == lines
    assert contents.finished and contents.skipped == 0
    assert contents.header["source"] == "mic"
    assert unfinished_journals(tmp_path) == []


def test_a_restart_goes_on_in_the_same_journal(tmp_path):
    journal = Journal.create(tmp_path, source="system", endpoint="On this computer")
    journal.append(CaptionLine("before the restart", 0.2, 1.5))
    journal.restarted(4.25, source="both", endpoint="On this computer")
    journal.append(CaptionLine("after it", 4.5, 5.0, speaker="Others"))
    journal.close()
    contents = read_journal(journal.path)
    assert [line.text for line in contents.lines] == ["before the restart", "after it"]
    assert contents.finished and contents.skipped == 0  # the restart record is not damage
    records = [json.loads(raw) for raw in journal.path.read_text().splitlines()]
    assert {k: records[2][k] for k in ("type", "at", "source")} == {
        "type": "restart", "at": 4.25, "source": "both"}


def test_killed_writer_leaves_a_recoverable_journal(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    path = Path(proc.stdout.readline().strip())
    acknowledged = -1
    while acknowledged < 40:
        acknowledged = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    proc.stdout.close()

    found = unfinished_journals(tmp_path)
    assert [c.path for c in found] == [path]
    texts = [line.text for line in found[0].lines]
    # every line the writer confirmed is on disk, in order, none twice
    assert len(texts) >= acknowledged + 1
    assert texts == [f"line number {i}" for i in range(len(texts))]

    mark_recovered(path)
    assert read_journal(path).finished
    assert unfinished_journals(tmp_path) == []


def test_torn_last_line_is_ignored_and_recovery_still_works(tmp_path):
    journal = Journal.create(tmp_path)
    journal.append(CaptionLine("whole line", 0, 1))
    path = journal.path
    with open(path, "ab") as f:  # power loss in the middle of the next record
        f.write(b'{"type": "line", "text": "half a li')
    contents = read_journal(path)
    assert [line.text for line in contents.lines] == ["whole line"]
    assert contents.skipped == 1 and not contents.finished

    mark_recovered(path)
    again = read_journal(path)
    assert again.finished and [line.text for line in again.lines] == ["whole line"]
    last = path.read_bytes().splitlines()[-1]
    assert json.loads(last)["recovered"] is True


def test_garbage_and_unknown_records_never_crash(tmp_path):
    path = tmp_path / "captions-20260101-000000-1.jsonl"
    path.write_bytes(b'\xff\xfe not json\n{"type": "line"}\n[1, 2]\n{"type": "mystery"}\n'
                     b'{"type": "line", "text": "ok", "start": 1, "end": 2, "kind": "speech"}\n')
    contents = read_journal(path)
    assert [line.text for line in contents.lines] == ["ok"]
    assert contents.skipped == 4
    assert journal_files(tmp_path) == [path]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_full_disk_is_a_readable_error():
    with pytest.raises(JournalError, match="full"):
        Journal(Path("/dev/full"))


def texts(path: Path) -> list[str]:
    contents = read_journal(path)
    assert contents.skipped == 0, "a torn or garbled line is on disk"
    return [line.text for line in contents.lines]


def test_disk_full_midway_loses_and_doubles_nothing(tmp_path):
    journal = Journal.create(tmp_path)
    for i in range(3):
        journal.append(CaptionLine(f"line {i}", i, i + 0.5))
    whole = journal.path.stat().st_size
    long = "a long caption line that will not fit " * 3
    with file_size_limit(whole + 40):  # the next line gets cut part-way
        with pytest.raises(JournalError, match="full"):
            journal.append(CaptionLine(long, 3, 4))
        assert journal.path.stat().st_size == whole  # the partial line was cut back
        with pytest.raises(JournalError):
            journal.append(CaptionLine("line 4", 4, 5))
        assert journal.pending == 2
    journal.append(CaptionLine("line 5", 5, 6))  # space again: everything kept, once
    assert journal.pending == 0
    journal.close()
    assert texts(journal.path) == ["line 0", "line 1", "line 2", long,
                                   "line 4", "line 5"]
    assert read_journal(journal.path).finished


def test_a_journal_the_disk_has_no_room_for_leaves_no_file_and_is_made_later(tmp_path):
    """Full as the session starts: no empty file to be "recovered" as a transcript of
    nothing; made once there is room, it is named and headed by when the session began,
    and the lines kept meanwhile go in with one write."""
    began = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    with file_size_limit(16), pytest.raises(JournalError, match="full"):
        Journal.create(tmp_path, started=began, source="system")
    assert journal_files(tmp_path) == []
    journal = Journal.create(tmp_path, started=began, source="system")
    journal.append(*(CaptionLine(f"line {i}", i, i + 0.5) for i in range(3)))
    journal.close()
    assert journal.path.name.startswith(f"captions-{began.astimezone():%Y%m%d-%H%M%S}-")
    assert read_journal(journal.path).header["started"] == "2026-01-02T03:04:05+00:00"
    assert texts(journal.path) == ["line 0", "line 1", "line 2"]


def test_an_empty_journal_file_is_not_recovered(tmp_path):
    """One an older version left when the disk had no room for its first line."""
    (tmp_path / "captions-20260101-120000-1.jsonl").touch()
    assert unfinished_journals(tmp_path) == []


def test_a_failed_reopen_is_a_journal_error_and_never_writes_a_closed_file(tmp_path):
    folder = tmp_path / "transcripts"
    journal = Journal.create(folder)
    journal.append(CaptionLine("before", 0, 1))
    with file_size_limit(journal.path.stat().st_size + 10), pytest.raises(JournalError):
        journal.append(CaptionLine("during the outage", 1, 2))
    folder.rename(tmp_path / "away")  # the reopen on the next append fails (ENOENT)
    with pytest.raises(JournalError):
        journal.append(CaptionLine("while the folder is gone", 2, 3))
    with pytest.raises(JournalError):  # again typed, not "I/O operation on closed file"
        journal.append(CaptionLine("still gone", 3, 4))
    (tmp_path / "away").rename(folder)
    journal.append(CaptionLine("after", 4, 5))
    journal.close()
    assert texts(journal.path) == ["before", "during the outage", "while the folder is gone",
                                   "still gone", "after"]


def test_a_lone_surrogate_is_written_as_a_replacement_character(tmp_path):
    broken = json.loads('"caf\\ud800 au lait"')  # valid JSON, not encodable as UTF-8
    journal = Journal.create(tmp_path)
    journal.append(CaptionLine(broken, 0, 1))
    journal.append(CaptionLine("next line", 1, 2))
    assert journal.pending == 0
    journal.close()
    assert texts(journal.path) == ["caf\ufffd au lait", "next line"]


def test_journals_are_private(tmp_path):
    journal = Journal.create(tmp_path / "new" / "folder")
    journal.close()
    assert journal.path.stat().st_mode & 0o777 == 0o600
    assert journal.path.parent.stat().st_mode & 0o777 == 0o700


def test_unwritable_folder_is_a_readable_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(JournalError):
        Journal.create(blocker / "sub")


def test_a_line_whose_time_is_not_a_finite_number_is_skipped(tmp_path):
    """Python's JSON reads NaN and Infinity, float() reads "nan": such a time would make
    every label and export of the session fail, so the line is damage, not a line."""
    path = tmp_path / "captions-20260101-120000-1.jsonl"
    path.write_text('{"type": "start", "version": 1, "started": "2026-01-01T12:00:00+00:00"}\n'
                    '{"type": "line", "text": "kept", "start": 1.0, "end": 2.0}\n'
                    '{"type": "line", "text": "nan", "start": NaN, "end": 3.0}\n'
                    '{"type": "line", "text": "inf", "start": 3.0, "end": Infinity}\n'
                    '{"type": "line", "text": "-inf", "start": -Infinity, "end": 4.0}\n'
                    '{"type": "line", "text": "text", "start": "nan", "end": "inf"}\n'
                    '{"type": "line", "text": "also kept", "start": "5", "end": 6}\n')
    contents = read_journal(path)
    assert [(line.text, line.start, line.end) for line in contents.lines] == [
        ("kept", 1.0, 2.0), ("also kept", 5.0, 6.0)]
    assert contents.skipped == 4
