"""Settings → Recognition: the on-device model and language controls drive the settings."""

from __future__ import annotations

import json

from captioner import settings as settings_io
from captioner.settings import Settings
from captioner.ui.settings.recognition_page import RecognitionPage
from captioner.ui.settings_store import SettingsStore
from tests.ui.test_settings_dialog import MemoryKeys, make


def choose(combo, data) -> None:
    index = combo.findData(data)
    assert index >= 0, data
    combo.setCurrentIndex(index)


def test_multilingual_model_and_language_round_trip_through_the_file(qtbot, store, config_dir):
    dialog = make(qtbot, store)
    page = dialog.recognition
    assert page.whisper_model.currentData() == "tiny.en"
    assert not page.whisper_language.isEnabled()  # English-only model
    assert page.language_note.isVisibleTo(page)
    choose(page.whisper_model, "base")
    assert page.whisper_language.isEnabled() and not page.language_note.isVisibleTo(page)
    assert page.whisper_language.currentData() is None  # detect by default
    choose(page.whisper_language, "de")
    assert dialog.apply()
    saved = json.loads((config_dir / "settings.json").read_text())["recognition"]
    assert (saved["whisper_model"], saved["whisper_language"]) == ("base", "de")
    loaded = settings_io.load()
    assert (loaded.recognition.whisper_model, loaded.recognition.whisper_language) == (
        "base", "de")
    again_dialog = make(qtbot, SettingsStore(loaded))
    again = again_dialog.recognition
    assert again.whisper_model.currentData() == "base"
    assert again.whisper_language.currentText() == "German"


def test_auto_detect_and_back_to_english(qtbot, store):
    dialog = make(qtbot, store)
    page = dialog.recognition
    choose(page.whisper_model, "base")
    choose(page.whisper_language, "fr")
    assert dialog.apply()
    page.whisper_language.setCurrentIndex(0)
    assert page.whisper_language.currentText() == "Detect automatically"
    assert dialog.apply()
    assert store.settings.recognition.whisper_language is None
    choose(page.whisper_model, "tiny.en")
    assert dialog.apply()
    assert store.settings.recognition.whisper_model == "tiny.en"
    assert not page.whisper_language.isEnabled()


def test_without_the_extra_the_model_choice_is_disabled_and_explained(qtbot):
    page = RecognitionPage(MemoryKeys(), multilingual_available=lambda: False)
    qtbot.addWidget(page)
    page.load(Settings())
    assert not page.whisper_model.isEnabled()
    assert page.model_note.isVisibleTo(page)
    assert "captioner[multilingual]" in page.model_note.text()
    out = Settings()
    assert page.write(out) == {}
    assert out.recognition.whisper_model == "tiny.en"


def test_with_the_extra_there_is_no_note(qtbot):
    page = RecognitionPage(MemoryKeys(), multilingual_available=lambda: True)
    qtbot.addWidget(page)
    page.load(Settings())
    assert page.whisper_model.isEnabled() and not page.model_note.isVisibleTo(page)


def test_model_controls_only_apply_to_the_on_device_engine(qtbot, store):
    dialog = make(qtbot, store)
    page = dialog.recognition
    assert page.local_box.isEnabled()
    page.websocket.setChecked(True)
    assert not page.local_box.isEnabled()
