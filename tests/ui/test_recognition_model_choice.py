"""Settings → Recognition: the on-device model and language controls drive the settings."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile

from captioner import settings as settings_io
from captioner.audio.files import FileSource
from captioner.captioning import EmbeddedEngine
from captioner.engine.model_integrity import ModelIntegrityError
from captioner.settings import Settings
from captioner.ui.app import CaptionerApp
from captioner.ui.settings.recognition_page import (
    DAMAGED,
    INSTALLED,
    INSTALLING,
    NOT_INSTALLED_BUTTON,
    REINSTALL,
    RecognitionPage,
)
from captioner.ui.settings_store import SettingsStore
from tests.support.speech import write_wav
from tests.support.transcribers import RecordingFactory
from tests.ui.conftest import run_async, wait_until
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
    page = RecognitionPage(MemoryKeys(), multilingual_available=lambda: False,
                           installer=lambda: None)  # an installer's copy: no way from here
    qtbot.addWidget(page)
    page.load(Settings())
    assert not page.whisper_model.isEnabled()
    assert page.model_note.isVisibleTo(page) and not page.install_button.isVisibleTo(page)
    assert "scripts/bootstrap.sh --multilingual" in page.model_note.text()
    out = Settings()
    assert page.write(out) == {}
    assert out.recognition.whisper_model == "tiny.en"


def install_page(qtbot, command: list[str], flag) -> RecognitionPage:
    page = RecognitionPage(MemoryKeys(), multilingual_available=flag.exists,
                           installer=lambda: command)
    qtbot.addWidget(page)
    page.load(Settings())
    page.show()
    assert page.install_button.isVisible() and not page.whisper_model.isEnabled()
    assert page.model_note.text() == NOT_INSTALLED_BUTTON
    return page


def test_a_checkout_installs_the_model_from_the_page_and_it_can_be_chosen(qtbot, tmp_path,
                                                                        announced):
    """The button runs the installer (a checkout's bootstrap; here a stand-in that makes
    the model findable): no terminal, no restart."""
    flag = tmp_path / "installed"
    page = install_page(qtbot, ["sh", "-c", f"sleep 0.3; echo fetched; touch {flag}"], flag)
    page.install_button.click()
    assert not page.install_button.isEnabled() and page.model_note.text() == INSTALLING
    qtbot.waitUntil(lambda: page.model_note.text() == INSTALLED, timeout=10000)
    assert page.whisper_model.isEnabled() and not page.install_button.isVisible()
    assert page.model_note.isVisible() and not page.install_error.isVisible()
    assert [text for text, _ in announced] == [INSTALLING, INSTALLED]
    choose(page.whisper_model, "base")
    out = Settings()
    assert page.write(out) == {} and out.recognition.whisper_model == "base"


@pytest.mark.parametrize(("command", "shown"), [
    (["sh", "-c", "echo Collecting; echo 'ERROR: network is unreachable' >&2; exit 1"],
     "The install failed: ERROR: network is unreachable"),
    (["sh", "-c", "exit 0"], "The install failed: exit status 0"),  # and still not there
    (["/nonexistent/bootstrap.sh"], "Could not run /nonexistent/bootstrap.sh: "),
])
def test_a_failed_install_says_why_and_can_be_tried_again(qtbot, tmp_path, command, shown):
    page = install_page(qtbot, command, tmp_path / "never")
    page.install_button.click()
    qtbot.waitUntil(lambda: page.install_error.isVisible(), timeout=10000)
    assert page.install_error.text().startswith(shown)
    assert page.install_button.isEnabled() and page.install_button.isVisible()
    assert not page.whisper_model.isEnabled()
    assert page.model_note.text() == NOT_INSTALLED_BUTTON


def test_with_the_extra_there_is_no_note(qtbot):
    page = RecognitionPage(MemoryKeys(), multilingual_available=lambda: True,
                           multilingual_broken=lambda: False, installer=lambda: ["true"])
    qtbot.addWidget(page)
    page.load(Settings())
    assert page.whisper_model.isEnabled() and not page.model_note.isVisibleTo(page)
    assert not page.install_button.isVisibleTo(page)


@pytest.mark.parametrize("repairs", [True, False])
def test_an_install_cut_off_half_way_can_be_done_again_from_the_page(qtbot, tmp_path,
                                                                    announced, repairs):
    """A logout or a full disk that ended the install left the model's files short:
    the page says so and offers the install again (the bootstrap puts the wheels in
    again even when present); until that works, it keeps saying so."""
    damage = tmp_path / "damaged"
    damage.touch()
    fix = f"rm {damage}" if repairs else "true"
    page = RecognitionPage(MemoryKeys(), multilingual_available=lambda: True,
                           multilingual_broken=damage.exists,
                           installer=lambda: ["sh", "-c", f"sleep 0.2; {fix}"])
    qtbot.addWidget(page)
    page.load(Settings())
    page.show()
    assert page.model_note.isVisible() and page.model_note.text() == DAMAGED
    assert page.install_button.isVisible() and page.install_button.text() == REINSTALL
    assert page.install_button.accessibleName() == REINSTALL.replace("&", "")
    page.install_button.click()
    qtbot.waitUntil(lambda: not page.installing, timeout=10000)
    if repairs:
        assert page.model_note.text() == INSTALLED and not page.install_button.isVisible()
        assert not page.install_error.isVisible()
    else:
        assert page.install_error.text() == "The install failed: exit status 0"
        assert page.model_note.text() == DAMAGED and page.install_button.isVisible()
        assert page.install_button.text() == REINSTALL and page.install_button.isEnabled()


def test_damage_found_after_the_page_was_built_shows_when_it_opens_again(qtbot, tmp_path):
    """Settings stays built once opened; a load that then found the model's parts changed
    (their SHA-256 remembered) must show on the page the next time it opens."""
    damage = tmp_path / "damaged"
    page = RecognitionPage(MemoryKeys(), multilingual_available=lambda: True,
                           multilingual_broken=damage.exists, installer=lambda: ["true"])
    qtbot.addWidget(page)
    page.load(Settings())
    page.show()
    assert not page.model_note.isVisible() and not page.install_button.isVisible()
    damage.touch()  # the engine's load found it
    page.load(Settings())
    assert page.model_note.isVisible() and page.model_note.text() == DAMAGED
    assert page.install_button.isVisible() and page.install_button.text() == REINSTALL


def test_model_controls_only_apply_to_the_on_device_engine(qtbot, store):
    dialog = make(qtbot, store)
    page = dialog.recognition
    assert page.local_box.isEnabled()
    page.websocket.setChecked(True)
    assert not page.local_box.isEnabled()


def test_choosing_another_model_while_captioning_loads_it(qapp, store, tone_wav, tmp_path):
    """The engine runs what Settings → Recognition says now, not what it first loaded."""
    pcm, rate = soundfile.read(tone_wav, dtype="float32")
    wav = write_wav(tmp_path / "long.wav", np.concatenate([pcm, np.zeros(30 * rate, "f4")]),
                    rate)
    loads: list[tuple[str, str | None]] = []
    factories: list[RecordingFactory] = []

    def load(recognition):
        loads.append((recognition.whisper_model, recognition.whisper_language))
        factories.append(RecordingFactory())
        return factories[-1]

    async def scenario():
        app = CaptionerApp(store, embedded=EmbeddedEngine(store.settings, load),
                           source_factory=lambda _audio: FileSource(
                               wav, chunk_bytes=2048, realtime=True),
                           tray_available=False)
        statuses: list[str] = []
        app.controller.status.connect(lambda s: statuses.append(s.state))
        app.start()
        try:
            await wait_until(lambda: app.controller.current.state == "listening", 20, "listening")
            new = store.copy()
            new.recognition.whisper_model, new.recognition.whisper_language = "base", "de"
            store.replace(new)
            await wait_until(lambda: len(loads) == 2, 20, "the chosen model to load")
            await wait_until(lambda: app.controller.current.state == "listening" and bool(
                factories[1].made) and len(factories[1].received) > 0, 20, "audio for it")
            assert "loading" in statuses[statuses.index("listening"):]  # said so
            new = store.copy()
            new.recognition.stall_seconds = 9.0  # a restart for another reason: no load
            store.replace(new)
            await wait_until(lambda: app.controller.current.state == "listening"
                             and len(factories[1].made) == 2, 20, "the restart")
        finally:
            await app.shutdown()
        assert loads == [("tiny.en", None), ("base", "de")]

    run_async(qapp, scenario, timeout=90)


def test_captions_stopped_by_a_damaged_model_start_again_once_it_is_installed(
        qapp, store, tone_wav, tmp_path):
    """The overlay said the multilingual model's files were cut short; Settings →
    Recognition → Reinstall put them back, and the captions came back with them (they
    stayed stopped until Retry before)."""
    damage = tmp_path / "damaged"
    damage.touch()
    store.settings.recognition.whisper_model = "base"
    factories: list[RecordingFactory] = []

    def load(_recognition):
        if damage.exists():
            raise ModelIntegrityError("The multilingual model's files are missing or "
                                      "incomplete (was its install cut off?)")
        factories.append(RecordingFactory())
        return factories[-1]

    async def scenario():
        app = CaptionerApp(store, embedded=EmbeddedEngine(store.settings, load),
                           source_factory=lambda _audio: FileSource(
                               tone_wav, chunk_bytes=2048, realtime=True),
                           tray_available=False)
        app.start()
        try:
            await wait_until(lambda: app.controller.current.failed, 20, "the load error")
            assert "cut off" in app.controller.current.text
            app.show_settings()
            page = app.settings_dialog.recognition
            page._multilingual_available, page._multilingual_broken = (lambda: True,
                                                                      damage.exists)
            page._installer = ["sh", "-c", f"sleep 0.2; rm {damage}"]  # a real process
            page._start_install()
            await wait_until(lambda: app.controller.current.state == "listening"
                             and bool(factories) and bool(factories[0].made), 20,
                             "captions again")
            assert page.model_note.text() == INSTALLED
        finally:
            await app.shutdown()

    run_async(qapp, scenario, timeout=60)
