"""`captioner --self-test` from a checkout: the real engine, sample, audio stack and Qt."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import jiwer
import pytest
from hypothesis import given
from hypothesis import strategies as st

from captioner import selftest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "resources" / "sample" / "speech.wav"


def run_cli(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m captioner --self-test` from a folder outside the checkout."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CAPTIONER_SELFTEST")}
    environ.update(CAPTIONER_CONFIG_DIR=str(tmp_path / "config"),
                   CAPTIONER_LOG_DIR=str(tmp_path / "log"), QT_QPA_PLATFORM="offscreen",
                   **env)
    return subprocess.run([sys.executable, "-m", "captioner", "--self-test"], cwd=tmp_path,
                          env=environ, capture_output=True, text=True, timeout=240)


def lines_of(out: str) -> dict[str, str]:
    """check name → its whole report line, for the PASS/FAIL lines."""
    result = {}
    for line in out.splitlines():
        status, _, rest = line.partition("  ")
        if status in ("PASS", "FAIL"):
            result[rest.split()[0]] = line
    return result


def test_self_test_passes_from_a_checkout(tmp_path):
    proc = run_cli(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checks = lines_of(proc.stdout)
    assert set(checks) == {"sample", "model", "captions", "audio", "echo", "qt", "voice"}
    assert all(line.startswith("PASS") for line in checks.values()), proc.stdout
    assert "(source," in proc.stdout.splitlines()[0]
    assert "caption-ready:" in proc.stdout
    assert proc.stdout.rstrip().endswith("self-test passed")


def test_missing_sample_fails_with_a_clear_line(tmp_path):
    missing = tmp_path / "nowhere" / "speech.wav"
    proc = run_cli(tmp_path, CAPTIONER_SELFTEST_SAMPLE=str(missing))
    assert proc.returncode == 1
    checks = lines_of(proc.stdout)
    assert checks["sample"].startswith("FAIL") and str(missing) in checks["sample"]
    assert checks["captions"].startswith("FAIL") and "not run" in checks["captions"]
    assert checks["model"].startswith("PASS")  # the other checks still run and report
    assert proc.stdout.rstrip().endswith("self-test FAILED")
    assert "Traceback" not in proc.stderr


def test_broken_model_dir_fails_with_a_clear_line(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")  # no model.bin, no tokenizer.json
    proc = run_cli(tmp_path, CAPTIONER_SELFTEST_MODEL_DIR=str(model))
    assert proc.returncode == 1
    checks = lines_of(proc.stdout)
    assert checks["model"].startswith("FAIL")
    assert "model.bin" in checks["model"] and str(model) in checks["model"]
    assert checks["captions"].startswith("FAIL")
    assert "Traceback" not in proc.stderr


def test_wrong_words_fail_the_caption_check(tmp_path):
    """The real engine hears the sample's sentence, which is not the one expected here."""
    sample = tmp_path / "speech.wav"
    shutil.copy(SAMPLE, sample)
    sample.with_suffix(".txt").write_text("The quick brown fox jumps over the lazy dog.\n")
    sample_check, expected = selftest.check_sample(sample)
    assert sample_check.ok
    check = selftest.check_captions(sample, expected, None, selftest.Timings())
    assert not check.ok
    assert "captions" in check.line() and check.line().startswith("FAIL")
    assert "WER" in check.detail


def test_timings_are_measured_in_order(tmp_path):
    _, expected = selftest.check_sample(SAMPLE)
    timings = selftest.Timings()
    check = selftest.check_captions(SAMPLE, expected, None, timings)
    assert check.ok, check.detail
    assert 0 < timings.model_ready <= timings.first_caption <= timings.done


def test_shipped_sample_is_small_16k_mono_speech():
    assert SAMPLE.stat().st_size < 200_000
    with wave.open(str(SAMPLE)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (16000, 1, 2)
        assert 2.0 <= wav.getnframes() / 16000 <= 5.0
    assert len(selftest.words_of(SAMPLE.with_suffix(".txt").read_text())) >= 5


def test_resources_come_from_the_bundle_when_frozen(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert selftest.default_sample() == tmp_path / "resources" / "sample" / "speech.wav"


@pytest.mark.parametrize(("ref", "hyp", "expected"), [
    ("Live captions are ready.", "live captions are ready", 0.0),
    ("Live captions are ready.", "Live caption are ready", 0.25),
    ("one two three four", "one two three four five six", 0.5),
    ("one two", "", 1.0),
    ("quick brown-fox", "quick brown fox", 0.0),
])
def test_word_error_rate_examples(ref, hyp, expected):
    assert selftest.word_error_rate(ref, hyp) == pytest.approx(expected)


words = st.lists(st.sampled_from(["live", "captions", "are", "ready", "on", "this"]),
                 min_size=1, max_size=8)


@given(words, words)
def test_word_error_rate_matches_jiwer(ref, hyp):
    assert selftest.word_error_rate(" ".join(ref), " ".join(hyp)) == pytest.approx(
        jiwer.wer(" ".join(ref), " ".join(hyp)))
