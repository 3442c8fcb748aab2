from datetime import UTC, datetime
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible, QGuiApplication

from captioner import settings as settings_io
from captioner.realtime.captions import CaptionLine
from captioner.transcript.journal import Journal, read_journal
from captioner.ui.app import CaptionerApp
from captioner.ui.history import HistoryWindow
from captioner.ui.settings_store import SettingsStore
from tests.transcript.lines import CALL, LINES

GOLDEN = Path(__file__).parents[1] / "transcript" / "golden"


def filled(qtbot, tmp_path):
    window = HistoryWindow(tmp_path / "transcripts")
    qtbot.addWidget(window)
    for line in LINES:
        window.append_line(line)
    return window


def export(qtbot, window: HistoryWindow, path: Path, fmt: str) -> str:
    """Export (in its thread) and wait for the answer: "Saved …", or why not."""
    with qtbot.waitSignal(window.message, timeout=30_000) as blocker:
        window.export_to(path, fmt)
    return blocker.args[0]


def test_search_filters_case_insensitively_and_counts(qtbot, tmp_path):
    window = filled(qtbot, tmp_path)
    assert window.lines.count() == len(LINES)
    window.set_query("CUE")
    assert [line.text for line in window.shown_lines()] == [LINES[1].text]
    assert window.lines.item(0).text().startswith("[00:00:03] This is a much longer")
    assert window.count_label.text() == f"1 of {len(LINES)} lines"
    window.set_query("")
    assert window.lines.count() == len(LINES)


def test_copy_puts_the_shown_lines_with_timestamps_on_the_clipboard(qtbot, tmp_path):
    window = filled(qtbot, tmp_path)
    window.set_query("hour")
    assert window.copy() == "[01:00:00] One hour later."
    assert QGuiApplication.clipboard().text() == "[01:00:00] One hour later."


def test_export_writes_the_whole_session_not_only_search_hits(qtbot, tmp_path):
    window = filled(qtbot, tmp_path)
    window.set_query("Yes")
    for fmt in ("srt", "vtt", "txt"):
        target = tmp_path / f"out.{fmt}"
        with qtbot.waitSignal(window.exported):
            assert export(qtbot, window, target, fmt) == f"Saved {target}."
        assert target.read_bytes() == (GOLDEN / f"meeting.{fmt}").read_bytes()
    assert export(qtbot, window, tmp_path / "nowhere" / "x.srt", "srt").startswith(
        "Could not write")
    assert "Could not write" in window.status_label.text()


def test_the_save_dialog_opens_in_the_transcripts_folder_with_the_sessions_name(
        qtbot, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the app happened to start: not where to save
    folder = tmp_path / "transcripts"
    journal = Journal.create(folder, source="system")
    journal.close()
    window = filled(qtbot, tmp_path)
    window.set_current_journal(journal.path)
    dialog = window.ask_export("srt")
    started = journal.path.stem.split("-")  # captions-YYYYMMDD-HHMMSS-…
    day, time = started[1], started[2]
    name = f"Captions {day[:4]}-{day[4:6]}-{day[6:]} {time[:2]}.{time[2:4]}.srt"
    assert Path(dialog.directory().absolutePath()) == folder
    assert [Path(f).name for f in dialog.selectedFiles()] == [name]
    dialog.reject()
    other = tmp_path / "elsewhere"
    other.mkdir()
    assert export(qtbot, window, other / name, "srt").startswith("Saved")
    dialog = window.ask_export("vtt")  # the next export opens where the last one went
    assert Path(dialog.directory().absolutePath()) == other
    assert Path(dialog.selectedFiles()[0]).name == name.replace(".srt", ".vtt")
    dialog.reject()


def test_a_restarts_journals_are_this_session_not_past_ones(qtbot, tmp_path):
    folder = tmp_path / "transcripts"
    old = Journal.create(folder, source="system")  # another app run, earlier
    old.close()
    window = HistoryWindow(folder)
    qtbot.addWidget(window)
    first = Journal.create(folder, source="system")
    window.set_current_journal(first.path)
    first.close()  # a settings change restarted the captions: a second journal
    second = Journal.create(folder, source="both")
    window.set_current_journal(second.path)
    window.set_folder(folder)  # the list is read again
    assert [window.session_list.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(window.session_list.count())] == ["current", str(old.path)]
    second.close()


def test_the_last_export_folder_is_remembered_across_app_runs(qtbot, store, tmp_path):
    app = CaptionerApp(store, tray_available=False)
    app.history.append_line(LINES[0])
    elsewhere = tmp_path / "subtitles"
    elsewhere.mkdir()
    assert export(qtbot, app.history, elsewhere / "talk.srt", "srt").startswith("Saved")
    store.flush()
    saved = settings_io.load()
    assert saved.transcript.export_folder == str(elsewhere)
    again = CaptionerApp(SettingsStore(saved), tray_available=False)  # the next launch
    assert again.history.export_folder() == elsewhere


def test_unfinished_journal_is_recovered_and_offered_once(qtbot, store, tmp_path):
    folder = Path(store.settings.transcript.folder)
    crashed = Journal.create(folder, source="system")
    for line in LINES[:3]:
        crashed.append(line)
    crashed._close_fd()  # the process died: no end marker
    with open(crashed.path, "ab") as f:
        f.write(b'{"type": "line", "te')  # and a torn last line

    app = CaptionerApp(store, tray_available=False)
    assert app.recover_journals() == [crashed.path]
    key = str(crashed.path)
    assert app.history.sessions[key].title.startswith("Recovered:")
    app.history.select_session(key)
    assert [line.text for line in app.history.shown_lines()] == [line.text for line in LINES[:3]]
    assert "Recovered 1 unfinished transcript" in app.overlay.strip.notice_label.text()
    assert read_journal(crashed.path).finished

    second = CaptionerApp(store, tray_available=False)
    assert second.recover_journals() == []
    second.history.select_session(key)  # still listed as a past session
    assert len(second.history.shown_lines()) == 3


def test_a_past_session_with_a_time_that_is_not_a_number_still_shows_and_exports(
        qtbot, tmp_path):
    """A NaN time (JSON allows it) costs that line only, not the whole session."""
    folder = tmp_path / "transcripts"
    journal = Journal.create(folder, source="system")
    for line in LINES[:3]:
        journal.append(line)
    journal.close()
    with open(journal.path, "ab") as f:
        f.write(b'{"type": "line", "text": "bad", "start": NaN, "end": Infinity}\n')
    window = HistoryWindow(folder)
    qtbot.addWidget(window)
    window.session_list.setCurrentRow(1)  # the user picks the past session
    assert window.session.path == journal.path
    shown = [window.lines.item(i).text() for i in range(window.lines.count())]
    assert shown == ["[00:00:00] Hello and welcome to the meeting.",
                     f"[00:00:03] {LINES[1].text}", "[00:00:11] Yes."]
    assert window.status_label.text() == (  # not taken for all that was said
        f"1 damaged line of {window.session.title} could not be read; "
        "the 3 lines around it are shown.")
    assert export(qtbot, window, tmp_path / "out.srt", "srt").startswith("Saved")
    assert "Hello and welcome" in (tmp_path / "out.srt").read_text()


def test_a_call_is_listed_in_spoken_order_with_names(qtbot, tmp_path):
    """Two streams finalize out of order; the history shows the lines as they were said."""
    window = HistoryWindow(tmp_path / "transcripts")
    qtbot.addWidget(window)
    for line in CALL:  # in the order finalized
        window.append_line(line)
    shown = [window.lines.item(i).text() for i in range(window.lines.count())]
    assert shown == ["[00:00:00] Others: Can everyone hear me?",
                     "[00:00:01] You: Yes, loud and clear.",
                     "[00:00:03] Others: Great, then let us start with the budget for the next "
                     "quarter, which is a long line.",
                     "[00:00:09] You: Sounds good <to> me & the team."]
    window.append_line(CaptionLine("Late to finalize.", 2.0, 2.5, speaker="You"))
    assert window.lines.item(2).text() == "[00:00:02] You: Late to finalize."


def test_past_sessions_are_listed_by_when_they_started_newest_first(qtbot, tmp_path):
    folder = tmp_path / "transcripts"
    folder.mkdir()
    for stamp in ("20261205-192511-9076", "20261204-080102-11", "not-a-stamp"):
        (folder / f"captions-{stamp}.jsonl").write_text("")
    window = HistoryWindow(folder)
    qtbot.addWidget(window)
    titles = [window.session_list.item(i).text() for i in range(window.session_list.count())]
    assert titles == ["This session", "not-a-stamp", "Sat 5 Dec 2026, 19:25:11",
                      "Fri 4 Dec 2026, 08:01:02"]
    assert window.windowTitle() == "Transcript history — Captioner"


def test_sessions_started_in_the_same_second_are_told_apart(qtbot, tmp_path):
    folder = tmp_path / "transcripts"
    folder.mkdir()
    for pid in ("11", "12", "13-2"):  # the app restarted at once, twice
        (folder / f"captions-20261205-192511-{pid}.jsonl").write_text("")
    window = HistoryWindow(folder)
    qtbot.addWidget(window)
    titles = [window.session_list.item(i).text() for i in range(window.session_list.count())]
    assert titles[0] == "This session"
    assert sorted(titles[1:]) == ["Sat 5 Dec 2026, 19:25:11", "Sat 5 Dec 2026, 19:25:11 (2)",
                                  "Sat 5 Dec 2026, 19:25:11 (3)"]


def test_recovered_sessions_are_named_like_past_ones_told_apart_and_shown_whole(
        qtbot, tmp_path):
    folder = tmp_path / "transcripts"
    started = datetime(2026, 12, 7, 14, 2, 11, tzinfo=UTC)
    crashed = [Journal.create(folder, started=started) for _ in range(3)]  # restarts at once
    window = HistoryWindow(folder)
    qtbot.addWidget(window)
    for journal in crashed:
        journal.append(LINES[0])
        window.add_recovered(read_journal(journal.path))
    local = started.astimezone()
    when = f"{local:%a} {local.day} {local:%b %Y, %H:%M:%S}"  # as past sessions are named
    titles = [window.sessions[str(j.path)].title for j in crashed]
    assert sorted(titles) == [f"Recovered: {when}", f"Recovered: {when} (2)",
                              f"Recovered: {when} (3)"]
    widest = max(window.session_list.fontMetrics().horizontalAdvance(t) for t in titles)
    assert window.session_list.minimumWidth() > widest


def test_the_transcript_text_size_changes_by_keyboard_and_buttons_within_bounds(qtbot,
                                                                                tmp_path):
    window = filled(qtbot, tmp_path)
    window.show()
    window.lines.activateWindow()
    window.lines.setFocus()
    qtbot.waitUntil(window.lines.hasFocus, timeout=2000)
    normal = window.lines.font().pointSize()
    qtbot.keyClick(window.lines, Qt.Key.Key_Plus, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(window.lines, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    assert window.lines.font().pointSize() == normal + 4 == window.text_points
    window.smaller_button.click()
    assert window.lines.font().pointSize() == normal + 2
    for _ in range(30):
        window.bigger_button.click()
    assert window.lines.font().pointSize() == 40 and not window.bigger_button.isEnabled()
    qtbot.keyClick(window.lines, Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier)
    assert window.lines.font().pointSize() == normal and window.text_points == 0
    assert window.bigger_button.accessibleName() == "Bigger transcript text"


def test_the_transcript_text_size_is_kept_across_app_runs(qtbot, store):
    app = CaptionerApp(store, tray_available=False)
    normal = app.history.lines.font().pointSize()
    app.history.bigger_button.click()
    app.history.bigger_button.click()
    store.flush()
    saved = settings_io.load()
    assert saved.transcript.history_text_points == normal + 4
    again = CaptionerApp(SettingsStore(saved), tray_available=False)  # the next launch
    assert again.history.lines.font().pointSize() == normal + 4


def test_a_font_sized_in_pixels_still_steps_in_points(qtbot, tmp_path, qapp):
    old = qapp.font()
    pixels = qapp.font()
    pixels.setPixelSize(14)  # some desktops size the default font in pixels
    qapp.setFont(pixels)
    try:
        window = HistoryWindow(tmp_path / "transcripts")
        qtbot.addWidget(window)
        window.bigger_button.click()
        assert window.lines.font().pointSize() == 12 == window.text_points
    finally:
        qapp.setFont(old)


def test_the_export_result_and_match_count_reach_screen_readers(qtbot, tmp_path,
                                                                announced):
    window = filled(qtbot, tmp_path)
    window.set_query("hour")
    assert export(qtbot, window, tmp_path / "nowhere" / "x.srt", "srt").startswith("Could not")
    for label in (window.status_label, window.count_label):
        iface = QAccessible.queryAccessibleInterface(label)
        heard = f"{iface.text(QAccessible.Text.Name)} {iface.text(QAccessible.Text.Description)}"
        assert label.text() and label.text() in heard
    assert len(announced) == 1 and announced[0][0].startswith("Could not write")


def test_a_long_session_exports_in_a_thread_while_the_window_answers(qtbot, tmp_path):
    window = HistoryWindow(tmp_path / "transcripts")
    qtbot.addWidget(window)
    text = "we were all going direct to Heaven, we were all going direct the other way"
    for n in range(400):  # hours of speech: seconds to lay out as cues
        window.append_line(CaptionLine(f"{text[n % 5:]} {n}.", n * 9.0, n * 9.0 + 8))
    target = tmp_path / "long.srt"
    thread = window.export_to(target, "srt")
    # it returned at once: the buttons wait for this export, the window says what it does
    assert not any(b.isEnabled() for b in window.export_buttons.values())
    assert window.status_label.text() == "Exporting 400 lines…"
    with qtbot.waitSignal(window.message, timeout=30_000) as blocker:
        pass
    assert blocker.args == [f"Saved {target}."]
    assert all(b.isEnabled() for b in window.export_buttons.values())
    assert target.read_text(encoding="utf-8").count(" --> ") >= 400
    thread.join(5)
    assert not thread.is_alive()


def test_an_export_that_fails_unexpectedly_is_still_answered(qtbot, tmp_path, monkeypatch):
    window = filled(qtbot, tmp_path)

    def broken(*_args):
        raise ValueError("a bug")

    monkeypatch.setattr("captioner.ui.history.export", broken)
    text = export(qtbot, window, tmp_path / "out.srt", "srt")
    assert text == f"Could not export to {tmp_path / 'out.srt'}: a bug."
    assert all(b.isEnabled() for b in window.export_buttons.values())


def test_a_past_session_whose_file_is_gone_says_so_and_shows_it_when_back(qtbot, tmp_path):
    folder = tmp_path / "transcripts"
    journal = Journal.create(folder, source="system")
    journal.append(LINES[0])
    journal.close()
    window = HistoryWindow(folder)
    qtbot.addWidget(window)
    aside = tmp_path / "aside.jsonl"
    journal.path.rename(aside)  # moved away while the window lists it
    window.session_list.setCurrentRow(1)
    assert window.lines.count() == 0
    assert window.status_label.text() == (
        f"The transcript of {window.session.title} is gone: {journal.path} was moved "
        "or deleted.")
    aside.rename(journal.path)
    window.session_list.setCurrentRow(0)
    window.session_list.setCurrentRow(1)
    assert [line.text for line in window.shown_lines()] == [LINES[0].text]


def test_escape_clears_a_typed_search_then_closes_the_window(qtbot, tmp_path):
    window = filled(qtbot, tmp_path)
    window.show()
    window.search.activateWindow()
    window.search.setFocus()
    qtbot.waitUntil(window.search.hasFocus, timeout=2000)
    qtbot.keyClicks(window.search, "hour")
    assert window.lines.count() == 1
    qtbot.keyClick(window.search, Qt.Key.Key_Escape)
    assert window.search.text() == "" and window.lines.count() == len(LINES)
    assert window.isVisible()
    qtbot.keyClick(window.search, Qt.Key.Key_Escape)
    assert not window.isVisible()
