"""The reply box: type a reply and have it spoken (issue 8).

A small always-on-top window: the text field (Enter speaks, Shift+Enter starts a
new line), Speak and Stop, the voice, language and output-device pickers bound
to ``settings.tts``, the saved phrases (one click, or Enter on the selected one,
speaks it; add, edit in place, remove, reorder with the buttons, Alt+Up/Down or
drag), and a status line. Everything works from the keyboard (Tab order, Alt
mnemonics, Esc stops the reply or, when idle, hides the box) and every control
has an accessible name. No dialogs: phrases are edited in place, so nothing
here ever runs a nested event loop.

The box never saves settings itself: with a :class:`SettingsStore` it calls
``touched("tts")`` (debounced save) and follows changes made elsewhere.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from captioner.audio.playback import OutputDevice, PlaybackError, list_output_devices
from captioner.settings import Settings, TtsSettings
from captioner.tts.events import LANGUAGES, VOICES
from captioner.ui.reply_controller import ReplyController, ReplyStatus
from captioner.ui.settings_store import SettingsStore

log = logging.getLogger(__name__)

SYSTEM_DEFAULT = "System default"
COMPUTER_VOICE = "This computer's voice"
NO_VOICE_CHOICE = ("Replies use this computer's voice. The voices to choose from come with a "
                   "voice endpoint (Settings → Replies).")
NEW_PHRASE = "New phrase"
_ENTER_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter)
_PHRASE_FLAGS = (Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEnabled
                 | Qt.ItemFlag.ItemIsEditable | Qt.ItemFlag.ItemIsDragEnabled)


def voice_label(voice: str) -> str:
    """``uncle_fu`` → ``Uncle Fu`` (the setting keeps the Qwen3-TTS name)."""
    return voice.replace("_", " ").title()


class ReplyEdit(QPlainTextEdit):
    """The reply text: Enter submits, Shift+Enter inserts a new line, Tab leaves."""

    submitted = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTabChangesFocus(True)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in _ENTER_KEYS:
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.textCursor().insertText("\n")
            else:
                self.submitted.emit(self.toPlainText())
            event.accept()
            return
        super().keyPressEvent(event)


class PhraseList(QListWidget):
    """Saved phrases; Enter on the selected one (when not editing it) chooses it."""

    chosen = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.setDefaultDropAction(Qt.DropAction.MoveAction)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed)
        self.itemClicked.connect(lambda item: self.chosen.emit(item.text()))

    def keyPressEvent(self, event: QKeyEvent) -> None:
        item = self.currentItem()
        if (event.key() in _ENTER_KEYS and item is not None
                and self.state() != QAbstractItemView.State.EditingState):
            self.chosen.emit(item.text())
            event.accept()
            return
        super().keyPressEvent(event)

    def phrases(self) -> list[str]:
        return [self.item(i).text() for i in range(self.count())]


class ReplyBox(QWidget):
    """Type-to-speak panel; talk to it through ``controller`` (a :class:`ReplyController`)."""

    phrases_changed = Signal(list)  # the saved phrases, after an edit

    def __init__(self, controller: ReplyController, store_or_settings: SettingsStore | Settings,
                 parent: QWidget | None = None, *,
                 output_devices: Callable[[], list[OutputDevice]] = list_output_devices) -> None:
        super().__init__(parent, Qt.WindowType.Tool | Qt.WindowType.WindowStaysOnTopHint)
        self.controller = controller
        if isinstance(store_or_settings, SettingsStore):
            self.store: SettingsStore | None = store_or_settings
            self.settings = store_or_settings.settings
            self.store.changed.connect(self._settings_changed)
        else:
            self.store, self.settings = None, store_or_settings
        self._output_devices = output_devices
        self._syncing = False
        self.setWindowTitle("Reply — Captioner")
        self.setAccessibleName("Reply box")
        self._build()
        self.sync_from_settings()
        controller.status_changed.connect(self.show_status)
        controller.endpoint_changed.connect(self._show_voice_choice)
        self.show_status(controller.status)

    @property
    def tts(self) -> TtsSettings:
        return self.settings.tts

    # --- layout --------------------------------------------------------------------

    def _build(self) -> None:
        self.text_edit = ReplyEdit(self)
        self.text_edit.setPlaceholderText("Type a reply — Enter speaks, Shift+Enter new line")
        self.text_edit.setAccessibleName("Reply text")
        self.text_edit.setAccessibleDescription("Enter speaks it; Shift+Enter starts a new line.")
        self.text_edit.setFixedHeight(self.text_edit.fontMetrics().lineSpacing() * 4)
        self.text_edit.submitted.connect(self.speak_text)

        self.speak_button = self._button("&Speak", "Speak the reply", self._speak_clicked)
        self.stop_button = self._button("S&top", "Stop speaking", self.controller.stop)
        buttons = QHBoxLayout()
        buttons.addWidget(self.speak_button)
        buttons.addWidget(self.stop_button)
        buttons.addStretch(1)

        self.voice_combo = self._combo("Voice")  # filled by _show_voice_choice
        self.language_combo = self._combo("Language")
        for language in LANGUAGES:
            self.language_combo.addItem(language, language)
        self.output_combo = self._combo("Output device")
        self.voice_combo.currentIndexChanged.connect(self._voice_picked)
        self.language_combo.currentIndexChanged.connect(self._language_picked)
        self.output_combo.currentIndexChanged.connect(self._output_picked)
        form = QFormLayout()
        for text, combo in (("&Voice:", self.voice_combo), ("&Language:", self.language_combo),
                            ("&Output:", self.output_combo)):
            label = QLabel(text, self)
            label.setBuddy(combo)
            form.addRow(label, combo)

        phrases_label = QLabel("Saved &phrases (click or Enter speaks):", self)
        self.phrase_list = PhraseList(self)
        self.phrase_list.setAccessibleName("Saved phrases")
        self.phrase_list.setAccessibleDescription(
            "Click or press Enter to speak a phrase; F2 edits it; Alt+Up and Alt+Down move it.")
        phrases_label.setBuddy(self.phrase_list)
        self.phrase_list.chosen.connect(self.speak_phrase)
        self.phrase_list.itemChanged.connect(self._phrase_edited)
        self.phrase_list.model().rowsMoved.connect(self._phrases_reordered)
        self.add_button = self._button("&Add", "Add phrase (the typed reply, else a new one)",
                                       self.add_phrase)
        self.edit_button = self._button("&Edit", "Edit phrase", self.edit_phrase)
        self.remove_button = self._button("Re&move", "Remove phrase", self.remove_phrase)
        self.up_button = self._button("Move &up", "Move phrase up", lambda: self.move_phrase(-1))
        self.down_button = self._button("Move do&wn", "Move phrase down",
                                        lambda: self.move_phrase(1))
        phrase_buttons = QHBoxLayout()
        for button in (self.add_button, self.edit_button, self.remove_button, self.up_button,
                       self.down_button):
            phrase_buttons.addWidget(button)

        self.status_label = QLabel(self)
        self.status_label.setWordWrap(True)
        self.status_label.setAccessibleName("Reply status")
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByKeyboard
                                                  | Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status_label.setFocusPolicy(Qt.FocusPolicy.TabFocus)

        layout = QVBoxLayout(self)
        layout.addWidget(self.text_edit)
        layout.addLayout(buttons)
        layout.addLayout(form)
        layout.addWidget(phrases_label)
        layout.addWidget(self.phrase_list, 1)
        layout.addLayout(phrase_buttons)
        layout.addWidget(self.status_label)

        for keys, slot in ((QKeySequence(Qt.Key.Key_Escape), self._escape),
                           (QKeySequence("Alt+Up"), lambda: self.move_phrase(-1)),
                           (QKeySequence("Alt+Down"), lambda: self.move_phrase(1)),
                           (QKeySequence(QKeySequence.StandardKey.Delete), self._delete_key)):
            QShortcut(keys, self, slot, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)

    def _button(self, text: str, name: str, slot: Callable[[], object]) -> QPushButton:
        button = QPushButton(text, self)
        button.setAccessibleName(name)
        button.setAutoDefault(False)
        button.clicked.connect(slot)
        return button

    def _combo(self, name: str) -> QComboBox:
        combo = QComboBox(self)
        combo.setAccessibleName(name)
        return combo

    # --- showing -------------------------------------------------------------------

    def show_and_focus(self) -> None:
        """Show the box on top with the cursor in the reply field (tray, shortcut)."""
        self.refresh_outputs()
        self.show()
        self.raise_()
        self.activateWindow()
        self.text_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def show_status(self, status: ReplyStatus) -> None:
        self.status_label.setText(status.text)
        self.status_label.setToolTip(status.detail)
        self.status_label.setAccessibleDescription(status.detail or status.text)

    # --- speaking ------------------------------------------------------------------

    def speak_text(self, text: str) -> None:
        """Speak the reply field's text and clear it (kept when there is nothing to say)."""
        if self.controller.say(text):
            self.text_edit.clear()

    def _speak_clicked(self) -> None:
        self.speak_text(self.text_edit.toPlainText())
        self.text_edit.setFocus()

    def speak_phrase(self, text: str) -> None:
        self.controller.say(text)

    def _escape(self) -> None:
        if self.controller.busy:  # a reply still opening the output counts: Esc stops it
            self.controller.stop()
        else:
            self.hide()

    def _delete_key(self) -> None:
        if self.phrase_list.hasFocus():
            self.remove_phrase()

    # --- phrases ---------------------------------------------------------------------

    def add_phrase(self) -> None:
        """Save the typed reply as a phrase; with nothing typed, add one to edit."""
        text = self.text_edit.toPlainText().strip()
        item = self._new_item(text or NEW_PHRASE)
        self.phrase_list.addItem(item)
        self.phrase_list.setCurrentItem(item)
        self._save_phrases()
        if not text:
            self.phrase_list.setFocus()
            self.phrase_list.editItem(item)

    def edit_phrase(self) -> None:
        item = self.phrase_list.currentItem()
        if item is not None:
            self.phrase_list.setFocus()
            self.phrase_list.editItem(item)

    def remove_phrase(self) -> None:
        row = self.phrase_list.currentRow()
        if row < 0:
            return
        self.phrase_list.takeItem(row)
        self._save_phrases()

    def move_phrase(self, step: int) -> None:
        row = self.phrase_list.currentRow()
        target = row + step
        if row < 0 or not 0 <= target < self.phrase_list.count():
            return
        with _blocked(self.phrase_list):
            item = self.phrase_list.takeItem(row)
            self.phrase_list.insertItem(target, item)
        self.phrase_list.setCurrentRow(target)
        self._save_phrases()

    def _new_item(self, text: str) -> QListWidgetItem:
        item = QListWidgetItem(text)
        item.setFlags(_PHRASE_FLAGS)
        return item

    def _phrase_edited(self, item: QListWidgetItem) -> None:
        if self._syncing:
            return
        text = item.text().strip()
        if not text:  # emptied in place: the phrase goes
            self.phrase_list.takeItem(self.phrase_list.row(item))
        elif text != item.text():
            with _blocked(self.phrase_list):
                item.setText(text)
        self._save_phrases()

    def _phrases_reordered(self, *_args: QModelIndex | int) -> None:
        if not self._syncing:
            self._save_phrases()

    def _save_phrases(self) -> None:
        phrases = self.phrase_list.phrases()
        if phrases == self.tts.phrases:
            return
        self.tts.phrases = phrases
        self._touched()
        self.phrases_changed.emit(phrases)

    # --- pickers ---------------------------------------------------------------------

    def _voice_picked(self, index: int) -> None:
        if (voice := self.voice_combo.itemData(index)) is not None:  # not the computer's
            self._set_tts("voice", voice)

    def _language_picked(self, index: int) -> None:
        self._set_tts("language", self.language_combo.itemData(index))

    def _output_picked(self, index: int) -> None:
        self._set_tts("output_device", self.output_combo.itemData(index))

    def _set_tts(self, name: str, value: str | None) -> None:
        if self._syncing or getattr(self.tts, name) == value:
            return
        setattr(self.tts, name, value)
        log.info("= reply %s: %s", name.replace("_", " "), value or "default")
        self._touched()

    def refresh_outputs(self) -> None:
        """List the output devices now (they come and go)."""
        try:
            devices = self._output_devices()
            problem = ""
        except PlaybackError as exc:
            devices, problem = [], str(exc)
        wanted = self.tts.output_device
        with self._syncing_widgets():
            self.output_combo.clear()
            self.output_combo.addItem(SYSTEM_DEFAULT, None)
            names = []
            for dev in devices:
                if dev.name not in names:
                    names.append(dev.name)
                    self.output_combo.addItem(dev.name, dev.name)
            if wanted and wanted not in names:
                self.output_combo.addItem(f"{wanted} (not connected)", wanted)
            self.output_combo.setCurrentIndex(max(0, self.output_combo.findData(wanted)))
            self.output_combo.setToolTip(problem)

    def sync_from_settings(self) -> None:
        """Show ``settings.tts`` as it is now (after a change made elsewhere)."""
        with self._syncing_widgets():
            self._show_voice_choice()
            for combo, value in ((self.voice_combo, self.tts.voice),
                                 (self.language_combo, self.tts.language)):
                index = combo.findData(value)
                combo.setCurrentIndex(index if index >= 0 else 0)
            if self.phrase_list.phrases() != self.tts.phrases:
                self.phrase_list.clear()
                for phrase in self.tts.phrases:
                    self.phrase_list.addItem(self._new_item(phrase))
        self.refresh_outputs()

    def _show_voice_choice(self) -> None:
        """The voices are a voice endpoint's; without one the picker names the computer's
        voice instead of going grey, so Tab still reaches it and a screen reader says
        what speaks and why there is no choice."""
        endpoint = bool(self.controller.endpoint)
        combo = self.voice_combo
        if combo.count() and (combo.itemData(0) is not None) == endpoint:
            return
        with self._syncing_widgets():
            combo.clear()
            if endpoint:
                for voice in VOICES:
                    combo.addItem(voice_label(voice), voice)
                combo.setCurrentIndex(max(0, combo.findData(self.tts.voice)))
            else:
                combo.addItem(COMPUTER_VOICE, None)
        why = "" if endpoint else NO_VOICE_CHOICE
        combo.setToolTip(why)
        combo.setAccessibleDescription(why)

    def _settings_changed(self, sections: frozenset[str]) -> None:
        if "tts" in sections:
            self.sync_from_settings()

    def _touched(self) -> None:
        if self.store is not None:
            self.store.touched("tts")

    @contextlib.contextmanager
    def _syncing_widgets(self) -> Iterator[None]:
        """While settings are shown in the widgets, their change signals are not edits."""
        outer = not self._syncing
        self._syncing = True
        try:
            yield
        finally:
            if outer:
                self._syncing = False


@contextlib.contextmanager
def _blocked(widget: QWidget) -> Iterator[None]:
    """Block a widget's signals for a moment (a move is saved once, at the end)."""
    was = widget.blockSignals(True)
    try:
        yield
    finally:
        widget.blockSignals(was)
