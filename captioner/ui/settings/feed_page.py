"""Settings → Feed: captions for other apps (a browser-source page, live files)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from captioner.feed.outputs import ensure_token, file_paths
from captioner.feed.web import PAGE_PATH
from captioner.settings import FeedSettings, Settings
from captioner.ui.settings.common import Errors, Page


class FeedPage(Page):
    title = "Feed"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._defaults: dict[str, Path] = {}
        form = QFormLayout(self)
        intro = QLabel("Send the captions to other apps as they are made: a page for an OBS "
                       "browser source (or any browser on this computer), and files another "
                       "tool can follow. Each is off until you turn it on.")
        intro.setWordWrap(True)
        form.addRow(intro)
        self.web_page = QCheckBox("Live caption &page on this computer")
        self.web_page.setAccessibleName("Live caption page on this computer")
        form.addRow(self.web_page)
        self.port = QSpinBox()
        self.port.setRange(1024, 65535)
        self.add_row(form, "web_port", "P&ort:", self.port, "Caption page port")
        row = QWidget()
        h = QHBoxLayout(row)
        h.setContentsMargins(0, 0, 0, 0)
        self.url = QLineEdit()
        self.url.setReadOnly(True)
        self.url.setAccessibleName("Caption page address")
        self.copy = QPushButton("&Copy")
        self.copy.setAccessibleName("Copy the caption page address")
        h.addWidget(self.url, 1)
        h.addWidget(self.copy)
        form.addRow("Address:", row)
        self.text_file = QCheckBox("Live &text file")
        self.text_file.setAccessibleName("Live text file")
        form.addRow(self.text_file)
        self.text_path = QLineEdit()
        self.add_row(form, "text_path", "Text file:", self.text_path, "Live text file path")
        self.vtt_file = QCheckBox("Live &WebVTT file")
        self.vtt_file.setAccessibleName("Live WebVTT file")
        form.addRow(self.vtt_file)
        self.vtt_path = QLineEdit()
        self.add_row(form, "vtt_path", "WebVTT file:", self.vtt_path, "Live WebVTT file path")
        self._token = ""
        self.copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.url.text()))
        for box in (self.web_page, self.text_file, self.vtt_file):
            box.toggled.connect(self._enable)
        self.port.valueChanged.connect(self._show_url)

    def _enable(self) -> None:
        on = self.web_page.isChecked()
        for widget in (self.port, self.url, self.copy):
            widget.setEnabled(on)
        self.text_path.setEnabled(self.text_file.isChecked())
        self.vtt_path.setEnabled(self.vtt_file.isChecked())
        self._show_url()

    def _show_url(self) -> None:
        if self.web_page.isChecked() and self._token:
            self.url.setText(f"http://127.0.0.1:{self.port.value()}{PAGE_PATH}"
                             f"?token={self._token}")
        else:
            self.url.setText("" if not self.web_page.isChecked()
                             else "(shown once you apply)")

    def load(self, settings: Settings) -> None:
        feed = settings.feed
        self._token = feed.token
        self.web_page.setChecked(feed.web_page)
        self.port.setValue(feed.web_port)
        text, vtt = file_paths(feed, settings.transcript.folder)
        # Paths shown as the defaults are stored as "" again, so they keep following
        # the transcript folder (and an untouched page changes nothing).
        self._defaults = dict(zip(("text_path", "vtt_path"),
                                  file_paths(FeedSettings(), settings.transcript.folder),
                                  strict=True))
        self.text_file.setChecked(feed.text_file)
        self.text_path.setText(str(text))
        self.vtt_file.setChecked(feed.vtt_file)
        self.vtt_path.setText(str(vtt))
        self._enable()

    def write(self, out: Settings) -> Errors:
        errors: Errors = {}
        feed = out.feed
        feed.web_page = self.web_page.isChecked()
        feed.web_port = self.port.value()
        if feed.web_page:
            ensure_token(feed)
            self._token = feed.token
        for key, box, edit in (("text_path", self.text_file, self.text_path),
                               ("vtt_path", self.vtt_file, self.vtt_path)):
            path = edit.text().strip()
            if box.isChecked() and (not path or Path(path).expanduser().is_dir()):
                errors[key] = "Name a file (not a folder) for the live captions."
            chosen = Path(path).expanduser() if path else None
            setattr(feed, key, "" if chosen in (None, self._defaults.get(key))
                    else str(chosen))
        feed.text_file = self.text_file.isChecked()
        feed.vtt_file = self.vtt_file.isChecked()
        self._show_url()
        return errors


__all__ = ["FeedPage"]
