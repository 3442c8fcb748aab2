"""installer/quantize_model.py: the bundle's int8 model gives the same output, in half the bytes."""

from __future__ import annotations

import importlib.util
import shutil
import wave
from pathlib import Path

import numpy as np
import pytest
from faster_whisper import WhisperModel

from captioner.engine.model_integrity import (
    TINY_EN,
    TINY_EN_INT8,
    DigestCache,
    verify_model_dir,
)
from captioner.engine.model_paths import bundled_model_dir

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "resources" / "sample" / "speech.wav"

_spec = importlib.util.spec_from_file_location("quantize_model",
                                               ROOT / "installer" / "quantize_model.py")
quantize_model = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(quantize_model)


@pytest.fixture(scope="module")
def int8_dir(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("model") / "int8"
    assert quantize_model.main([str(bundled_model_dir()), str(target)]) == 0
    return target


def load(folder: Path) -> WhisperModel:
    # As captioner.engine.whisper loads it.
    return WhisperModel(str(folder), device="cpu", compute_type="int8", cpu_threads=2,
                        local_files_only=True)


def sample_features(model: WhisperModel) -> np.ndarray:
    with wave.open(str(SAMPLE)) as w:
        audio = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
    features = model.feature_extractor(audio)
    return np.pad(features, ((0, 0), (0, 3000 - features.shape[-1])))[None]


def test_reading_and_writing_a_model_file_changes_no_byte(tmp_path):
    source = bundled_model_dir() / "model.bin"
    model = quantize_model.ModelFile.read(source)
    model.write(tmp_path / "model.bin")
    assert (tmp_path / "model.bin").read_bytes() == source.read_bytes()


def test_int8_copy_is_about_half_the_size_with_the_same_side_files(int8_dir):
    source = bundled_model_dir()
    assert (int8_dir / "model.bin").stat().st_size < 0.55 * (source / "model.bin").stat().st_size
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        assert (int8_dir / name).read_bytes() == (source / name).read_bytes()
    model = quantize_model.ModelFile.read(int8_dir / "model.bin")
    assert model.variables["decoder/embeddings/weight"].dtype == np.int8
    assert model.variables["encoder/layer_0/ffn/linear_0/weight"].dtype == np.int8
    assert model.variables["encoder/conv1/weight"].dtype == np.float16


def test_int8_copy_computes_exactly_what_the_float16_model_computes(int8_dir):
    original, int8 = load(bundled_model_dir()), load(int8_dir)
    features = sample_features(original)
    encoded = [original.encode(features), int8.encode(features)]
    assert np.array_equal(np.asarray(encoded[0]), np.asarray(encoded[1]))
    prompt = [original.hf_tokenizer.encode("<|startoftranscript|><|notimestamps|>",
                                           add_special_tokens=False).ids]
    results = [model.model.generate(enc, prompt, beam_size=5, num_hypotheses=3,
                                    return_scores=True)[0]
               for model, enc in zip((original, int8), encoded, strict=True)]
    assert results[0].sequences_ids == results[1].sequences_ids
    assert results[0].scores == results[1].scores
    text = original.hf_tokenizer.decode(results[1].sequences_ids[0]).lower()
    expected = (ROOT / "resources" / "sample" / "speech.txt").read_text().lower().split()
    misses = sum(word.strip(".,") not in text for word in expected)
    assert misses <= 0.3 * len(expected), text  # the self-test's word error bound


def test_refuses_a_model_that_is_not_whisper(tmp_path):
    source = bundled_model_dir()
    other = quantize_model.ModelFile.read(source / "model.bin")
    other.name = "TransformerSpec"
    other.write(tmp_path / "model.bin")
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(source / name, tmp_path / name)
    with pytest.raises(ValueError, match="not a Whisper model"):
        quantize_model.main([str(tmp_path), str(tmp_path / "out")])


def test_int8_copy_is_the_model_the_app_pins(int8_dir, tmp_path):
    """The installers' model passes the app's SHA-256 check (the build is reproducible)."""
    cache = DigestCache(tmp_path / "digests.json")
    assert verify_model_dir(int8_dir, (TINY_EN, TINY_EN_INT8), cache) == TINY_EN_INT8
