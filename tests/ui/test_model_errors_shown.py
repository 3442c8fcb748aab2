"""A model that fails its checks reaches the user as the engine's own sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from captioner.audio.files import FileSource
from captioner.captioning import EmbeddedEngine
from captioner.engine.model_integrity import (
    TINY_EN,
    TINY_EN_INT8,
    DigestCache,
    verify_model_dir,
)
from captioner.engine.model_paths import bundled_model_dir
from captioner.engine.multilingual import EXTRA_HINT, base_model_dir
from captioner.ui.controller import CaptionController
from tests.ui.conftest import run_async, wait_until


def status_after_failed_load(qapp, store, tone_wav, load) -> str:
    result: list[str] = []

    async def scenario():
        controller = CaptionController(
            store, embedded=EmbeddedEngine(store.settings, load),
            source_factory=lambda _audio: FileSource(tone_wav, chunk_bytes=2048,
                                                     realtime=True))
        controller.start()
        await wait_until(lambda: not controller.running, 30, "the run to end")
        assert controller.current.state == "error"
        result.append(controller.current.text)
        await controller.shutdown()

    run_async(qapp, scenario)
    return result[0]


@pytest.fixture
def tampered(tmp_path: Path) -> Path:
    """tiny.en with a model.bin that is not the pinned one."""
    folder = tmp_path / "tiny.en"
    folder.mkdir()
    source = bundled_model_dir() / "model.bin"
    with source.open("rb") as f:
        (folder / "model.bin").write_bytes(f.read(1 << 20))
    return folder


def test_tampered_model_is_reported_as_a_sentence(qapp, store, tone_wav, tampered, tmp_path):
    def load(_recognition):
        verify_model_dir(tampered, (TINY_EN, TINY_EN_INT8), DigestCache(tmp_path / "d.json"))
        raise AssertionError("a tampered model got past the check")

    text = status_after_failed_load(qapp, store, tone_wav, load)
    assert text.startswith(f"The speech model file {tampered / 'model.bin'} is not the")
    assert "SHA-256" in text and "not loaded" in text and "Error" not in text


def test_missing_multilingual_extra_is_reported_with_the_fix(qapp, store, tone_wav, tmp_path):
    def load(_recognition):
        base_model_dir(tmp_path, packages=("no_such_wheel_1", "no_such_wheel_2"))
        raise AssertionError("found a model that is not installed")

    text = status_after_failed_load(qapp, store, tone_wav, load)
    assert text == f"The multilingual speech model is not installed: {EXTRA_HINT}."
    assert "bootstrap.sh --multilingual, then restart Captioner" in text  # run from source
