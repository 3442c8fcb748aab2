"""Real speech and comparison helpers for audio tests.

``make_speech`` renders text with espeak-ng into a WAV (cached per text/voice/
speed for the session); ``load_wav`` reads one as float32; ``resample_poly16k``
converts with scipy (independent of the soxr code under test); ``align`` finds
where a reference sits inside a capture and how well it matches there.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import wave
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import signal

_cache_dir: Path | None = None


def make_speech(text: str, voice: str = "en", speed: int = 160,
                folder: Path | None = None) -> Path:
    """A WAV of ``text`` spoken by espeak-ng (22.05 kHz mono PCM16), made once per text."""
    global _cache_dir
    if folder is None:
        if _cache_dir is None:
            _cache_dir = Path(tempfile.mkdtemp(prefix="captioner-speech-"))
        folder = _cache_dir
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise RuntimeError("espeak-ng is not installed (Debian: espeak-ng)")
    key = hashlib.sha1(f"{voice}|{speed}|{text}".encode()).hexdigest()[:16]
    path = folder / f"speech-{key}.wav"
    if not path.exists():
        tmp = path.with_suffix(".tmp.wav")
        subprocess.run([exe, "-v", voice, "-s", str(speed), "-w", str(tmp), text],
                       check=True, capture_output=True, timeout=60)
        tmp.replace(path)
    return path


def load_wav(path: Path) -> tuple[np.ndarray, int]:
    """(float32 samples, rate) of a PCM16 WAV; mono as 1-D, else frames × channels."""
    with wave.open(str(path), "rb") as wav:
        if wav.getsampwidth() != 2:
            raise ValueError(f"{path}: only 16-bit WAV supported here")
        rate, channels = wav.getframerate(), wav.getnchannels()
        data = np.frombuffer(wav.readframes(wav.getnframes()), "<i2").astype(np.float32) / 32768
    return (data if channels == 1 else data.reshape(-1, channels)), rate


def write_wav(path: Path, samples: np.ndarray, rate: int) -> Path:
    """Write float32 samples (1-D mono or frames × channels) as PCM16."""
    data = samples if samples.ndim == 2 else samples[:, None]
    pcm = np.clip(np.rint(data * 32767), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(data.shape[1])
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(pcm.tobytes())
    return path


def resample_poly16k(samples: np.ndarray, rate: int, target: int = 16_000) -> np.ndarray:
    """Mono float32 at ``target`` Hz via scipy's polyphase filter (reference path)."""
    mono = samples.mean(axis=1) if samples.ndim == 2 else samples
    ratio = Fraction(target, rate).limit_denominator(1000)
    return signal.resample_poly(mono, ratio.numerator, ratio.denominator).astype(np.float32)


def pcm16_to_float(data: bytes) -> np.ndarray:
    return np.frombuffer(data, "<i2").astype(np.float32) / 32768


def align(captured: np.ndarray, reference: np.ndarray) -> tuple[int, float]:
    """(offset of ``reference`` inside ``captured``, normalised cross-correlation there)."""
    corr = signal.correlate(captured, reference, mode="valid", method="fft")
    offset = int(np.argmax(corr))
    segment = captured[offset:offset + reference.size]
    denom = float(np.linalg.norm(segment) * np.linalg.norm(reference))
    return offset, (float(np.dot(segment, reference)) / denom if denom else 0.0)


def active_span(samples: np.ndarray, rate: int, threshold_db: float = -40.0) -> float:
    """Seconds from the first to the last 10 ms frame within ``threshold_db`` of the peak."""
    frame = rate // 100
    n = samples.size // frame
    rms = np.sqrt((samples[:n * frame].reshape(n, frame) ** 2).mean(axis=1)) + 1e-12
    db = 20 * np.log10(rms / rms.max())
    active = np.flatnonzero(db > threshold_db)
    return 0.0 if active.size == 0 else (active[-1] - active[0] + 1) * frame / rate


@pytest.fixture(scope="session")
def speech(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``speech(text, voice="en", speed=160) -> Path``: espeak-ng WAVs in a session folder."""
    folder = tmp_path_factory.mktemp("speech")

    def make(text: str, voice: str = "en", speed: int = 160) -> Path:
        return make_speech(text, voice, speed, folder)

    return make
