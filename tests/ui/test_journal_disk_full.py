"""A disk that is full as the captions start (a real one: the file-size limit) costs
the transcript nothing once space is freed: the lines said meanwhile are kept, and
the journal, made with a later line, has the whole run."""

from pathlib import Path
from typing import Any

from captioner.audio.files import FileSource
from captioner.transcript.journal import Journal, journal_files, read_journal
from captioner.ui.app import CaptionerApp
from tests.support.disk import file_size_limit
from tests.ui.conftest import WORDS, run_async, wait_until


def test_a_disk_full_as_the_run_starts_loses_no_line_once_space_is_freed(
        qapp, store, realtime_server, tone_wav):
    folder = Path(store.settings.transcript.folder)
    disk_full = True

    def journal_on_a_full_disk(where: Path, header: dict[str, Any]) -> Journal:
        """The app's own journal, on a disk with no room until the test frees some."""
        if not disk_full:
            return Journal.create(where, **header)
        with file_size_limit(16):  # the start record is cut short, then EFBIG
            return Journal.create(where, **header)

    async def scenario():
        nonlocal disk_full
        store.settings.recognition.endpoint = realtime_server.url
        app = CaptionerApp(store, tray_available=False,
                           source_factory=lambda a: FileSource(tone_wav, chunk_bytes=2048,
                                                              realtime=True))
        app.controller._journal_factory = journal_on_a_full_disk
        app.start()
        notice = app.overlay.strip.notice_label
        await wait_until(lambda: "full" in notice.text(), 10, "the user to be told")
        app.controller.add_typed("Typed while the disk is full.")
        assert journal_files(folder) == [], "no empty journal is left to be 'recovered'"
        disk_full = False  # the user frees space
        app.controller.add_typed("Typed once there is room.")  # the journal is made now
        journal = app.history.current_journal
        assert journal is not None and notice.text() == ""
        assert [line.text for line in read_journal(journal).lines] == [
            "Typed while the disk is full.", "Typed once there is room."]
        await wait_until(lambda: all(w in " ".join(line.text for line in app.controller.lines)
                                     for w in WORDS), 20, "the captions")
        said = [line.text for line in app.controller.lines]
        await app.shutdown()
        return said, journal

    said, journal = run_async(qapp, scenario)
    assert journal_files(folder) == [journal]
    contents = read_journal(journal)
    assert [line.text for line in contents.lines] == said  # the whole run, once each
    assert contents.finished and contents.skipped == 0
