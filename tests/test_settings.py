"""Loading settings: an unreadable file is never overwritten, out-of-range values fall
back to their field's default with a message naming the field and the range."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

from captioner import settings as settings_io
from captioner.cloud.deploy_plan import MAX_LIFETIME_HOURS
from captioner.cloud.scaling import MAX_INSTANCES
from captioner.settings import RANGE, AppearanceSettings, EndpointDeploySettings, Settings
from captioner.ui import appearance as ui

REPO = Path(__file__).resolve().parent.parent
BROKEN = '{\n  "audio": {"source": "mic"},\n  "cloud": {"idle_stop_minutes": 12,}\n}\n'


def test_out_of_range_values_fall_back_field_by_field(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"cloud": {"idle_stop_minutes": -1, "stt": {"autoscale_max": 4}},
                                "appearance": {"font_size": 500, "lines": 3,
                                               "background_opacity": float("nan")},
                                "audio": {"chunk_bytes": 0, "source": "mic"}}))
    result = settings_io.read(path)
    s = result.settings
    assert s.cloud.idle_stop_minutes == 30 and s.cloud.stt.autoscale_max == 4
    assert s.appearance.font_size == 28 and s.appearance.lines == 3
    assert s.appearance.background_opacity == 0.8
    assert s.audio.chunk_bytes == 2560 and s.audio.source == "mic"
    text = "\n".join(result.problems)
    assert "cloud.idle_stop_minutes = -1 is outside the accepted range 5–1440" in text
    assert "the default 30 is used" in text
    assert "appearance.font_size = 500 is outside the accepted range 8–72" in text
    assert "audio.chunk_bytes = 0" in text and "appearance.background_opacity" in text
    assert len(result.problems) == 4


def test_wrong_types_are_reported_too(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"appearance": {"font_size": "big"}, "cloud": 3}))
    result = settings_io.read(path)
    assert result.settings == Settings()
    assert any("appearance.font_size = 'big' ignored: wrong type" in p for p in result.problems)
    assert any("Setting cloud ignored" in p for p in result.problems)


def test_an_unreadable_file_is_kept_aside_before_defaults_are_used(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(BROKEN)
    result = settings_io.read(path, keep_unreadable=True)
    assert result.settings == Settings() and result.writable
    assert result.kept_as == tmp_path / "settings.json.bak"
    assert result.kept_as.read_text() == BROKEN and not path.exists()
    assert "line 3, column 37" in result.problems[0] and "settings.json.bak" in result.problems[0]
    path.write_text("[1, 2]")  # broken again: the first .bak is not overwritten
    again = settings_io.read(path, keep_unreadable=True)
    assert again.kept_as is not None and again.kept_as.name.startswith("settings.json.2")
    assert again.kept_as.read_text() == "[1, 2]"
    assert (tmp_path / "settings.json.bak").read_text() == BROKEN


def test_plain_load_leaves_the_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(BROKEN)
    assert settings_io.load(path) == Settings()
    assert path.read_text() == BROKEN and list(tmp_path.iterdir()) == [path]


def test_a_file_that_cannot_be_read_is_never_written(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.mkdir()  # reading fails with an OSError, not a parse error
    result = settings_io.read(path, keep_unreadable=True)
    assert result.settings == Settings() and not result.writable
    assert "changes are not saved" in result.problems[0]


def test_the_cli_says_so_in_one_line_and_keeps_the_file(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text(BROKEN)
    proc = subprocess.run(
        [sys.executable, "-m", "captioner.cli", "serve", "--host", "0.0.0.0"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "CAPTIONER_CONFIG_DIR": str(tmp_path),
             "CAPTIONER_LOG_DIR": str(tmp_path / "log")})
    lines = [line for line in proc.stderr.splitlines() if "could not be read" in line]
    assert len(lines) == 1 and "line 3, column 37" in lines[0]
    assert (tmp_path / "settings.json").read_text() == BROKEN


def test_ranges_agree_with_the_widgets_and_the_cloud_limits() -> None:
    """The loader accepts exactly what the settings pages let a user choose."""
    def bounds(cls: type, name: str) -> tuple[float, float]:
        return next(f for f in dataclasses.fields(cls) if f.name == name).metadata[RANGE]

    assert bounds(AppearanceSettings, "font_size") == (ui.MIN_FONT_PT, ui.MAX_FONT_PT)
    assert bounds(AppearanceSettings, "lines") == (ui.MIN_LINES, ui.MAX_LINES)
    assert bounds(AppearanceSettings, "row_chars") == (ui.MIN_ROW_CHARS, ui.MAX_ROW_CHARS)
    assert bounds(EndpointDeploySettings, "autoscale_max") == (1, MAX_INSTANCES)
    assert bounds(EndpointDeploySettings, "max_lifetime_hours") == (0, MAX_LIFETIME_HOURS)
