"""Settings → Replies, Alert words, Transcript, Shortcuts, and the reserved Endpoints tab."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from captioner.alerts import parse_word_list
from captioner.settings import Settings
from captioner.tts.connect import tts_endpoint
from captioner.ui.settings import validation as v
from captioner.ui.settings.common import ErrorLabel, Errors, Page
from captioner.ui.settings.shortcut_edit import ShortcutEdit


class RepliesPage(Page):
    """Where typed replies are spoken: a voice endpoint of one's own, or the computer's
    voice. (One the app starts on the Endpoints tab is used while it serves.)"""

    title = "Replies"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        form = QFormLayout(self)
        self.endpoint = QLineEdit()
        self.endpoint.setPlaceholderText("empty: this computer's voice")
        self.add_row(form, "endpoint", "&Voice endpoint:", self.endpoint)
        note = QLabel("A Qwen3-TTS server speaking the vLLM-Omni speech stream: "
                      "ws://host:8091/v1/audio/speech/stream, or a SageMaker endpoint as "
                      "sagemaker://NAME?region=REGION. Leave it empty to use this computer's "
                      "voice. A replies endpoint started on the Endpoints tab is used while it "
                      "serves. Voice, language and output are chosen in the reply box.")
        note.setWordWrap(True)
        form.addRow(note)

    def load(self, settings: Settings) -> None:
        self.endpoint.setText(settings.tts.endpoint)

    def write(self, out: Settings) -> Errors:
        text = self.endpoint.text().strip()
        if text:
            try:
                tts_endpoint(text)
            except ValueError as exc:
                return {"endpoint": str(exc)}
        out.tts.endpoint = text
        return {}


class AlertsPage(Page):
    title = "Alert words"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        label = QLabel("Words or phrases that make the captions flash and notify you, one per "
                       "line (your &name, “question”, …). Case does not matter; whole words "
                       "only.")
        label.setWordWrap(True)
        self.words = QPlainTextEdit()
        self.words.setAccessibleName("Alert words, one per line")
        self.words.setTabChangesFocus(True)
        label.setBuddy(self.words)
        layout.addWidget(label)
        layout.addWidget(self.words)
        self.errors["words"] = ErrorLabel("Alert words")
        self.fields["words"] = self.words  # focused, and described, when it is wrong
        layout.addWidget(self.errors["words"])

    def load(self, settings: Settings) -> None:
        self.words.setPlainText("\n".join(settings.alert_words))

    def write(self, out: Settings) -> Errors:
        words = parse_word_list(self.words.toPlainText())
        too_long = [w for w in words if len(w) > 60]
        if too_long:
            return {"words": f"“{too_long[0][:30]}…” is too long for an alert word."}
        out.alert_words = words
        return {}


class TranscriptPage(Page):
    title = "Transcript"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        form = QFormLayout(self)
        row = QWidget()
        h = QHBoxLayout(row)
        h.setContentsMargins(0, 0, 0, 0)
        self.folder = QLineEdit()
        self.browse = QPushButton("&Browse…")
        self.browse.setAccessibleName("Choose the transcript folder")
        h.addWidget(self.folder, 1)
        h.addWidget(self.browse)
        self.add_row(form, "folder", "Transcript &folder:", self.folder)
        form.addRow("", row)
        note = QLabel("Every finalized line is saved here as it is captioned, so a crash "
                      "loses nothing. Open History to search and export.")
        note.setWordWrap(True)
        form.addRow(note)
        self.browse.clicked.connect(self._ask_folder)

    def _ask_folder(self) -> None:
        dialog = QFileDialog(self, "Transcript folder", self.folder.text())
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.setOption(QFileDialog.Option.ShowDirsOnly)
        dialog.fileSelected.connect(self.folder.setText)
        dialog.open()  # never exec() inside the asyncio loop

    def load(self, settings: Settings) -> None:
        self.folder.setText(settings.transcript.folder)

    def write(self, out: Settings) -> Errors:
        if (e := v.folder_error(self.folder.text())) is not None:
            return {"folder": e}
        out.transcript.folder = str(Path(self.folder.text().strip()).expanduser())
        return {}


SHORTCUTS = (("start_stop", "&Live captions on / off:"),
             ("click_through", "&Click-through on / off:"),
             ("font_bigger", "&Bigger text:"), ("font_smaller", "S&maller text:"),
             ("reply", "&Reply box:"))


class ShortcutsPage(Page):
    title = "Shortcuts"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        form = QFormLayout(self)
        self.edits: dict[str, ShortcutEdit] = {}
        for key, label in SHORTCUTS:
            edit = ShortcutEdit()
            self.edits[key] = edit
            self.add_row(form, key, label, edit)
        note = QLabel("Shortcuts work while any Captioner window is active.")
        note.setWordWrap(True)
        form.addRow(note)
        self.global_reply = QCheckBox("The reply shortcut also works in &other apps")
        self.global_reply.setAccessibleName("Reply shortcut works in other apps")
        why = ("Captioner then watches every key press in your session to spot the "
               "shortcut; it neither keeps nor logs them.")
        self.global_reply.setToolTip(why)
        self.global_reply.setAccessibleDescription(why)
        form.addRow(self.global_reply)
        self.global_note = QLabel()  # whether the reply shortcut works in every app
        self.global_note.setWordWrap(True)  # no fixed name: it would hide the text
        self.global_note.hide()
        form.addRow(self.global_note)

    def set_global_note(self, text: str) -> None:
        self.global_note.setText(text)
        self.global_note.setVisible(bool(text))

    def load(self, settings: Settings) -> None:
        for key, edit in self.edits.items():
            edit.setKeySequence(QKeySequence(getattr(settings.shortcuts, key)))
        self.global_reply.setChecked(settings.shortcuts.global_reply)

    def write(self, out: Settings) -> Errors:
        values = {key: edit.keySequence().toString() for key, edit in self.edits.items()}
        labels = {key: label.replace("&", "").rstrip(":") for key, label in SHORTCUTS}
        errors = v.shortcut_errors(values, labels)
        if not errors:
            for key, seq in values.items():
                setattr(out.shortcuts, key, seq)
            out.shortcuts.global_reply = self.global_reply.isChecked()
        return errors


class EndpointsPlaceholder(Page):
    """Reserved for the endpoint controls (deploy / status / stop SageMaker endpoints).

    The endpoint-control work replaces this tab with
    :meth:`SettingsDialog.set_endpoints_page`.
    """

    title = "Endpoints"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        label = QLabel("Deploying and stopping your own SageMaker endpoints will be "
                       "available here.")
        label.setWordWrap(True)
        layout.addWidget(label)
        layout.addStretch(1)

    def load(self, settings: Settings) -> None:
        pass

    def write(self, out: Settings) -> Errors:
        return {}
