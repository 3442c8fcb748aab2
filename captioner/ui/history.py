"""Transcript history: this session's lines live, past and recovered sessions from
their journals; search, copy, export (TXT, SRT, WebVTT).

File dialogs are opened with ``open()`` and answered through a signal, never with
the blocking static helpers (we run inside the asyncio loop). An export is written in
a thread of its own: a long session takes seconds to lay out as cues, and captions and
the window must go on meanwhile.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from captioner.realtime.captions import CaptionLine, LineKind, labelled
from captioner.realtime.speakers import time_index
from captioner.transcript.exports import ExportError, clock, export
from captioner.transcript.journal import (
    JournalContents,
    journal_files,
    journal_started,
    journal_title,
    read_journal,
)
from captioner.ui.actions import AppActions
from captioner.ui.settings.common import StatusLabel

log = logging.getLogger(__name__)

CURRENT = "current"
_LIST_PADDING = 24  # px around a session's name in its list (item margins, a scroll bar)
_LIST_MAX_WIDTH = 420  # px: past this the splitter is the user's to move


@dataclass
class HistorySession:
    key: str
    title: str
    lines: list[CaptionLine] = field(default_factory=list)
    path: Path | None = None
    loaded: bool = True


def line_label(line: CaptionLine) -> str:
    mark = "(reply) " if line.kind is LineKind.TYPED else ""
    return f"[{clock(line.start)}] {mark}{labelled(line)}"


MIN_TEXT_POINTS, MAX_TEXT_POINTS = 8, 40


def _lines(n: int) -> str:
    return f"{n} line{'s' * (n != 1)}"


class HistoryWindow(QWidget):
    exported = Signal(str)  # path written
    _export_done = Signal(str, str)  # from the export's thread: path, why not ("": saved)
    message = Signal(str)  # a readable result or error
    text_size_changed = Signal(int)  # points of the transcript text; 0: the system's

    def __init__(self, folder: Path, actions: AppActions | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Transcript history — Captioner")
        self.setAccessibleName("Transcript history")
        self.resize(820, 520)
        self.folder = folder
        self.current_journal: Path | None = None
        self._run_journals: list[Path] = []  # every journal this app run wrote, oldest first
        self.last_export_folder: Path | None = None
        self.sessions: dict[str, HistorySession] = {
            CURRENT: HistorySession(CURRENT, "This session")}
        self._selected = CURRENT

        self.session_list = QListWidget()
        self.session_list.setAccessibleName("Sessions")
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search the transcript")
        self.search.setAccessibleName("Search the transcript")
        self.search.setClearButtonEnabled(True)
        search_label = QLabel("&Search:")
        search_label.setBuddy(self.search)
        self.lines = QListWidget()
        self.lines.setAccessibleName("Transcript lines")
        self.lines.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.lines.setWordWrap(True)
        self._system_points = self.lines.font().pointSize()
        if self._system_points <= 0:  # a font sized in pixels: start from a usual size
            self._system_points = 10
        self.text_points = 0  # 0: the system's size
        self.smaller_button = self._size_button("A−", "Smaller transcript text", -2,
                                                QKeySequence.StandardKey.ZoomOut)
        self.bigger_button = self._size_button("A+", "Bigger transcript text", 2,
                                               QKeySequence.StandardKey.ZoomIn)
        QShortcut(QKeySequence("Ctrl+="), self, lambda: self.step_text_size(2))
        QShortcut(QKeySequence("Ctrl+0"), self, lambda: self.set_text_points(0))
        self.count_label = StatusLabel("Match count")
        self.status_label = StatusLabel("Export status")
        self.copy_button = QPushButton("&Copy")
        self.copy_button.setAccessibleName("Copy selected lines, or all shown lines")
        self.export_buttons = {}
        for fmt, text in (("txt", "Export &TXT…"), ("srt", "Export S&RT…"),
                          ("vtt", "Export &WebVTT…")):
            button = QPushButton(text)
            button.setAccessibleName(f"Export as {fmt.upper()}")
            button.clicked.connect(lambda _=False, f=fmt: self.ask_export(f))
            self.export_buttons[fmt] = button
        sessions_label = QLabel("S&essions:")
        sessions_label.setBuddy(self.session_list)

        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addWidget(sessions_label)
        lv.addWidget(self.session_list)
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        top.addWidget(search_label)
        top.addWidget(self.search, 1)
        top.addWidget(self.count_label)
        rv.addLayout(top)
        rv.addWidget(self.lines, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.copy_button)
        for b in self.export_buttons.values():
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.smaller_button)
        buttons.addWidget(self.bigger_button)
        rv.addLayout(buttons)
        rv.addWidget(self.status_label)
        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.addWidget(splitter)

        QWidget.setTabOrder(self.session_list, self.search)
        QWidget.setTabOrder(self.search, self.lines)
        QWidget.setTabOrder(self.lines, self.copy_button)
        prev = self.copy_button
        for b in self.export_buttons.values():
            QWidget.setTabOrder(prev, b)
            prev = b
        QShortcut(QKeySequence.StandardKey.Find, self, self.search.setFocus)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self._escape)
        QShortcut(QKeySequence.StandardKey.Copy, self.lines, self.copy)
        if actions is not None:
            self.addActions(actions.keyboard())

        self.search.textChanged.connect(self._refill)
        self.copy_button.clicked.connect(self.copy)
        self._export_done.connect(self._on_export_done)
        self.session_list.currentRowChanged.connect(self._on_session_row)
        # a copy's or an export's result (or why it failed) is also spoken
        self.message.connect(lambda text: self.status_label.show_status(text, spoken=True))
        self._refresh_sessions()

    # --- text size ----------------------------------------------------------

    def _size_button(self, text: str, name: str, step: int,
                     key: QKeySequence.StandardKey) -> QPushButton:
        button = QPushButton(text)
        shortcut = QKeySequence(key).toString(QKeySequence.SequenceFormat.NativeText)
        button.setAccessibleName(name)
        button.setToolTip(f"{name} ({shortcut}; Ctrl+0: normal size)")
        button.clicked.connect(lambda: self.step_text_size(step))
        QShortcut(key, self, lambda: self.step_text_size(step))
        return button

    def step_text_size(self, step: int) -> None:
        self.set_text_points((self.text_points or self._system_points) + step)

    def set_text_points(self, points: int) -> None:
        """The transcript lines' size in points (0: the system's), kept in range."""
        if points:
            points = max(MIN_TEXT_POINTS, min(MAX_TEXT_POINTS, points))
            points = 0 if points == self._system_points else points
        font = self.lines.font()
        font.setPointSize(points or self._system_points)
        self.lines.setFont(font)
        self.smaller_button.setEnabled((points or self._system_points) > MIN_TEXT_POINTS)
        self.bigger_button.setEnabled((points or self._system_points) < MAX_TEXT_POINTS)
        if points != self.text_points:
            self.text_points = points
            self.text_size_changed.emit(points)

    # --- sessions -----------------------------------------------------------

    def set_folder(self, folder: Path) -> None:
        self.folder = folder
        self._refresh_sessions()

    def set_current_journal(self, path: Path) -> None:
        """The journal this run now writes (a restart goes on in it; a start after Stop
        or a failure opens another): its lines, and those of this app run's earlier
        journals, are "This session", not past ones."""
        self.current_journal = Path(path)
        self._run_journals.append(self.current_journal)
        if self.sessions.pop(str(path), None) is not None and self._selected == str(path):
            self._selected = CURRENT
        self._refresh_sessions()

    def add_recovered(self, contents: JournalContents) -> None:
        key = str(contents.path)
        # Named as past sessions are (local time, read as words): the stored start is UTC.
        title = self._distinct(f"Recovered: {journal_title(contents.path)}")
        self.sessions[key] = HistorySession(key, title, list(contents.lines), contents.path)
        self._refresh_sessions()

    def _distinct(self, title: str) -> str:
        """Sessions started in the same second (the app restarted at once) are told apart."""
        taken = {session.title for session in self.sessions.values()}
        if title not in taken:
            return title
        n = 2
        while f"{title} ({n})" in taken:
            n += 1
        return f"{title} ({n})"

    def _refresh_sessions(self) -> None:
        for path in journal_files(self.folder):
            key = str(path)
            if key in self.sessions or path in self._run_journals:
                continue
            self.sessions[key] = HistorySession(key, self._distinct(journal_title(path)),
                                                path=path, loaded=False)
        self.session_list.blockSignals(True)
        self.session_list.clear()
        order = [CURRENT, *sorted((k for k in self.sessions if k != CURRENT), reverse=True)]
        for key in order:
            item = QListWidgetItem(self.sessions[key].title)
            item.setData(Qt.ItemDataRole.UserRole, key)
            self.session_list.addItem(item)
            if key == self._selected:
                self.session_list.setCurrentItem(item)
        self.session_list.blockSignals(False)
        widest = max(self.session_list.fontMetrics().horizontalAdvance(session.title)
                     for session in self.sessions.values())
        # Room for the longest name (a recovered session's is long), not the window's width.
        self.session_list.setMinimumWidth(min(widest + 2 * self.session_list.frameWidth()
                                              + _LIST_PADDING, _LIST_MAX_WIDTH))
        self._refill()

    def _escape(self) -> None:
        """Esc clears a search typed in its field, else closes the window (as a dialog)."""
        if self.search.hasFocus() and self.search.text():
            self.search.clear()
        else:
            self.close()

    def _on_session_row(self, row: int) -> None:
        item = self.session_list.item(row)
        if item is not None:
            self.select_session(item.data(Qt.ItemDataRole.UserRole))

    def select_session(self, key: str) -> None:
        session = self.sessions[key]
        if not session.loaded and session.path is not None:
            self._load(session)
        self._selected = key
        self._refill()

    def _load(self, session: HistorySession) -> None:
        """Read a past session's journal, and say so when it is gone or lines were lost:
        an empty or short transcript must not look like all that was said."""
        assert session.path is not None
        if not session.path.is_file():  # stays unread: shown if it comes back
            self.message.emit(f"The transcript of {session.title} is gone: "
                              f"{session.path} was moved or deleted.")
            return
        contents = read_journal(session.path)
        session.lines, session.loaded = contents.lines, True
        if contents.skipped:
            n, shown = contents.skipped, len(contents.lines)
            self.message.emit(f"{n} damaged line{'s' * (n != 1)} of {session.title} could "
                              f"not be read; the {_lines(shown)} around "
                              f"{'them' if n != 1 else 'it'} are shown.")

    @property
    def session(self) -> HistorySession:
        return self.sessions[self._selected]

    # --- lines ----------------------------------------------------------------

    def append_line(self, line: CaptionLine) -> None:
        lines = self.sessions[CURRENT].lines
        index = time_index(lines, line)  # two streams: where it was said, not finalized
        lines.insert(index, line)
        if index < len(lines) - 1:
            if self._selected == CURRENT:
                self._refill()
            return
        if self._selected == CURRENT and self._matches(line):
            at_end = self.lines.verticalScrollBar().value() >= \
                self.lines.verticalScrollBar().maximum() - 2
            self.lines.addItem(line_label(line))
            if at_end:
                self.lines.scrollToBottom()
            self._count()

    def set_query(self, text: str) -> None:
        self.search.setText(text)

    def _matches(self, line: CaptionLine) -> bool:
        query = self.search.text().strip().casefold()
        return not query or query in line.text.casefold()

    def shown_lines(self) -> list[CaptionLine]:
        return [line for line in self.session.lines if self._matches(line)]

    def _refill(self) -> None:
        self.lines.clear()
        self.lines.addItems([line_label(line) for line in self.shown_lines()])
        self._count()

    def _count(self) -> None:
        shown, total = self.lines.count(), len(self.session.lines)
        # "lines": read aloud alone, a bare number says nothing
        self.count_label.show_status(f"{shown} of {_lines(total)}" if self.search.text()
                                     else _lines(total))

    def copy(self) -> str:
        """Copy the selected lines (all shown lines when none is selected)."""
        items = self.lines.selectedItems() or [self.lines.item(i)
                                                for i in range(self.lines.count())]
        text = "\n".join(item.text() for item in items)
        QGuiApplication.clipboard().setText(text)
        self.message.emit(f"Copied {_lines(len(items))}.")
        return text

    # --- export ---------------------------------------------------------------

    def ask_export(self, fmt: str) -> QFileDialog:
        dialog = QFileDialog(self, f"Export transcript as {fmt.upper()}")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setDefaultSuffix(fmt)
        dialog.setNameFilter(f"{fmt.upper()} files (*.{fmt})")
        dialog.setDirectory(str(self.export_folder()))
        dialog.selectFile(self.export_name(fmt))
        dialog.fileSelected.connect(lambda path: self.export_to(Path(path), fmt))
        dialog.open()
        return dialog

    def export_folder(self) -> Path:
        """Where the save dialog opens: the last export's folder, else the transcripts'
        (not the folder the app happened to start in)."""
        for folder in (self.last_export_folder, self.folder):
            if folder is not None and folder.is_dir():
                return folder
        return Path.home()

    def export_name(self, fmt: str) -> str:
        """A file name that says which session it is: when it started."""
        session = self.session
        path = session.path or (self._run_journals[0]
                                if session.key == CURRENT and self._run_journals else None)
        started = (journal_started(path) if path is not None else None) or datetime.now()
        return f"Captions {started:%Y-%m-%d %H.%M}.{fmt}"

    def export_to(self, path: Path, fmt: str) -> threading.Thread:
        """Export the whole selected session (not only the search hits) in a thread; its
        result comes as ``message`` ("Saved …" or why not) and, if saved, ``exported``."""
        lines = list(self.session.lines)  # the current session goes on growing meanwhile
        for button in self.export_buttons.values():
            button.setEnabled(False)  # one export at a time
        self.status_label.show_status(f"Exporting {_lines(len(lines))}…")

        def run() -> None:
            try:
                export(lines, fmt, path)
                error = ""
            except ExportError as exc:
                error = str(exc)
            except Exception as exc:  # a bug still gets an answer, not a stuck "Exporting…"
                log.exception("! export to %s failed", path)
                error = f"Could not export to {path}: {exc}."
            with contextlib.suppress(RuntimeError):  # the window is gone: the app quit
                self._export_done.emit(str(path), error)

        thread = threading.Thread(target=run, name="export", daemon=True)
        thread.start()
        return thread

    def _on_export_done(self, path: str, error: str) -> None:
        for button in self.export_buttons.values():
            button.setEnabled(True)
        if error:
            self.message.emit(error)
            return
        self.last_export_folder = Path(path).parent
        self.message.emit(f"Saved {path}.")
        self.exported.emit(path)
