"""Model directory resolution: local folders only, clear errors otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from captioner.engine.model_paths import (
    REQUIRED_FILES,
    ModelDirError,
    bundled_model_dir,
    resolve_model_dir,
)
from captioner.engine.whisper import WhisperEngine
from captioner.settings import RecognitionSettings


def test_default_is_the_bundled_tiny_en_model() -> None:
    path = resolve_model_dir(None)
    assert path == bundled_model_dir().resolve()
    assert all((path / name).is_file() for name in REQUIRED_FILES)


def test_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelDirError, match="not found"):
        resolve_model_dir(tmp_path / "nowhere")


def test_hub_model_names_are_not_downloaded() -> None:
    with pytest.raises(ModelDirError, match="not found"):
        resolve_model_dir("tiny.en")


def test_incomplete_folder_names_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "model.bin").write_bytes(b"x")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelDirError, match=r"tokenizer\.json"):
        resolve_model_dir(tmp_path)


def test_unloadable_model_is_a_model_dir_error(tmp_path: Path) -> None:
    for name in REQUIRED_FILES:
        (tmp_path / name).write_bytes(b"not a model")
    with pytest.raises(ModelDirError, match="could not be loaded"):
        WhisperEngine(tmp_path)


def test_engine_from_settings_uses_the_configured_folder(tmp_path: Path) -> None:
    settings = RecognitionSettings(whisper_model_dir=str(tmp_path / "gone"), whisper_threads=1)
    with pytest.raises(ModelDirError, match="gone"):
        WhisperEngine.from_settings(settings)
