"""The app always starts: a settings file with a syntax error survives a start (kept as
settings.json.bak, the user told on the overlay), out-of-range values fall back."""

from __future__ import annotations

import json
from pathlib import Path

from captioner import settings as settings_io
from captioner.audio.files import FileSource
from captioner.ui.app import CaptionerApp
from captioner.ui.settings_store import SettingsStore
from tests.ui.conftest import run_async, wait_until

BROKEN = '{\n  "audio": {"source": "mic"},\n  "cloud": {"idle_stop_minutes": 12,}\n}\n'


def start_and_quit(qapp, store: SettingsStore, tone_wav: Path) -> str:
    async def scenario():
        app = CaptionerApp(store, tray_available=False,
                           source_factory=lambda a: FileSource(tone_wav, realtime=True))
        app.start()
        notice = app.overlay.strip.notice_label.text()
        saved = settings_io.settings_path()
        # first_run is saved soon after start: wait for that save to happen
        await wait_until(lambda: saved.is_file() and not json.loads(saved.read_text())
                         .get("first_run", True), 10, "the first save")
        await app.shutdown()
        return notice

    return run_async(qapp, scenario, timeout=60)


def test_a_settings_file_with_a_syntax_error_survives_a_start(qapp, config_dir: Path,
                                                              tmp_path: Path, tone_wav) -> None:
    config_dir.mkdir(parents=True)
    (config_dir / "settings.json").write_text(BROKEN)
    store = SettingsStore(save_delay_ms=10)
    store.settings.transcript.folder = str(tmp_path / "transcripts")
    notice = start_and_quit(qapp, store, tone_wav)
    assert (config_dir / "settings.json.bak").read_text() == BROKEN
    assert notice.startswith("Settings reset: settings.json could not be read and is kept as "
                             "settings.json.bak (line 3, column 37")
    assert json.loads((config_dir / "settings.json").read_text())["audio"]["source"] == "system"


def test_an_out_of_range_value_starts_the_app_with_that_field_reset(
        qapp, config_dir: Path, tmp_path: Path, tone_wav) -> None:
    config_dir.mkdir(parents=True)
    (config_dir / "settings.json").write_text(json.dumps({
        "cloud": {"idle_stop_minutes": -1}, "audio": {"source": "mic"},
        "transcript": {"folder": str(tmp_path / "transcripts")}}))
    store = SettingsStore(save_delay_ms=10)
    notice = start_and_quit(qapp, store, tone_wav)
    assert "cloud.idle_stop_minutes = -1 is outside the accepted range 5–1440" in notice
    saved = json.loads((config_dir / "settings.json").read_text())
    assert saved["cloud"]["idle_stop_minutes"] == 30 and saved["audio"]["source"] == "mic"
    assert not (config_dir / "settings.json.bak").exists()
