"""The embedded engine with the real bundled tiny.en model on espeak-ng speech."""

from __future__ import annotations

import re
import subprocess
import wave
from pathlib import Path

import jiwer
import numpy as np
import pytest

from captioner.engine.streaming import SAMPLE_RATE, StreamingTranscriber
from captioner.engine.whisper import WhisperEngine, is_hallucination

CHUNK = 4096  # 128 ms pushes, as the app sends them

# (voice, words per minute, text)
SENTENCES = [
    ("en-us", 160, "The weather today is sunny with a light breeze from the west."),
    ("en", 150, "Please remember to buy milk, eggs and bread on your way home."),
    ("en+f3", 170, "Our meeting starts at ten o'clock in the large conference room."),
    ("en+m3", 140, "She sells sea shells by the sea shore every summer morning."),
    ("en-us", 180, "Technology has changed the way people communicate with each other."),
    ("en", 165, "The children played football in the park until it got dark."),
    ("en-us", 145, "Can you send me the report before the end of the week?"),
    ("en+m3", 175, "The train to the airport leaves every twenty minutes from platform two."),
]


def normalise(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s']", " ", text.casefold()).split())


def speak(folder: Path, name: str, voice: str, wpm: int, text: str) -> bytes:
    """espeak-ng speech as 16 kHz mono PCM16 (sox resamples)."""
    raw, out = folder / f"{name}.wav", folder / f"{name}-16k.wav"
    subprocess.run(["espeak-ng", "-w", str(raw), "-v", voice, "-s", str(wpm), text], check=True)
    subprocess.run(
        ["sox", str(raw), "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(out)], check=True
    )
    with wave.open(str(out)) as f:
        return f.readframes(f.getnframes())


def stream(transcriber: StreamingTranscriber, pcm: bytes) -> list[str]:
    deltas = [transcriber.push(pcm[i : i + CHUNK]) for i in range(0, len(pcm), CHUNK)]
    return [*deltas, transcriber.finish()]


def as_float(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0


def pcm16(signal: np.ndarray) -> bytes:
    return (np.clip(signal, -1.0, 1.0) * 32767).astype("<i2").tobytes()


@pytest.fixture(scope="module")
def engine() -> WhisperEngine:
    return WhisperEngine(threads=2)


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, bytes]]:
    folder = tmp_path_factory.mktemp("speech")
    return [
        (text, speak(folder, f"s{i}", v, wpm, text)) for i, (v, wpm, text) in enumerate(SENTENCES)
    ]


def test_streaming_word_error_rate_is_close_to_offline(
    engine: WhisperEngine, speech: list[tuple[str, bytes]]
) -> None:
    refs, streamed, offline = [], [], []
    early = 0
    for text, pcm in speech:
        transcriber = engine.new_transcriber()
        deltas = stream(transcriber, pcm)
        early += sum(len(d) for d in deltas[:-1])
        refs.append(normalise(text))
        streamed.append(normalise("".join(deltas)))
        offline.append(normalise(engine.transcribe(as_float(pcm))))
    stream_wer, offline_wer = jiwer.wer(refs, streamed), jiwer.wer(refs, offline)
    print(f"streaming WER {stream_wer:.3f}, offline WER {offline_wer:.3f}")
    assert stream_wer <= 0.25, list(zip(refs, streamed, strict=True))
    # CTranslate2's int8 kernels decode a few words differently from one process to the
    # next (streaming 0.143–0.198 over these 91 words in repeated runs, offline
    # 0.143–0.165), so the 1.2× ratio gets a slack of 3 words; the 0.25 bound is exact.
    slack = 3 / sum(len(r.split()) for r in refs)
    assert stream_wer <= 1.2 * offline_wer + slack, (stream_wer, offline_wer, streamed, offline)
    assert early > 0  # text arrived while audio was still coming, not only at finish


def test_deltas_are_append_only_and_add_up(
    engine: WhisperEngine, speech: list[tuple[str, bytes]]
) -> None:
    pcm = b"".join(p for _, p in speech[:3])  # ~12 s: crosses sentence trims
    transcriber = engine.new_transcriber()
    deltas, seen = [], ""
    for i in range(0, len(pcm), CHUNK):
        delta = transcriber.push(pcm[i : i + CHUNK])
        deltas.append(delta)
        seen += delta
        assert transcriber.text == seen  # what was shown never changes
    deltas.append(transcriber.finish())
    text = "".join(deltas)
    assert text == transcriber.text
    assert text == text.strip() and "  " not in text
    assert transcriber.buffer_start > 0  # the buffer was trimmed on the way
    words = normalise(text).split()
    for sentence in ("today is sunny", "conference room"):
        assert sentence in " ".join(words), text
    # No word run repeated across a trim seam.
    assert all(words[i : i + 3] != words[i + 3 : i + 6] for i in range(len(words) - 5)), text


def chords(seconds: float) -> np.ndarray:
    """Music-like: major triads changing every half second, with a swell."""
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    roots = [261.63, 293.66, 329.63, 349.23, 392.0, 440.0]
    out = np.zeros_like(t)
    for k in range(int(seconds * 2)):
        part = slice(k * SAMPLE_RATE // 2, (k + 1) * SAMPLE_RATE // 2)
        root = roots[k % len(roots)]
        for ratio in (1.0, 1.26, 1.5):
            out[part] += np.sin(2 * np.pi * root * ratio * t[part])
    return 0.2 * out * (0.6 + 0.4 * np.sin(2 * np.pi * 0.25 * t))


def sweeps(seconds: float) -> np.ndarray:
    """Rising tone sweeps 200 Hz → 3 kHz, one per second."""
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    phase_t = t % 1.0
    freq = 200.0 * (15.0**phase_t)
    phase = 2 * np.pi * np.cumsum(freq) / SAMPLE_RATE
    return 0.4 * np.sin(phase)


@pytest.mark.parametrize(
    "make",
    [
        lambda s: np.zeros(int(s * SAMPLE_RATE)),
        lambda s: np.random.default_rng(7).normal(0.0, 0.1, int(s * SAMPLE_RATE)),
        chords,
        sweeps,
    ],
    ids=["silence", "white-noise", "chords", "sweeps"],
)
def test_non_speech_produces_no_text(engine: WhisperEngine, make) -> None:
    transcriber = engine.new_transcriber()
    text = "".join(stream(transcriber, pcm16(make(20.0))))
    assert text == "", f"{transcriber.decodes} decodes"


def test_speech_after_noise_is_still_heard(
    engine: WhisperEngine, speech: list[tuple[str, bytes]]
) -> None:
    _text, pcm = speech[4]
    noise = pcm16(np.random.default_rng(3).normal(0.0, 0.05, 5 * SAMPLE_RATE))
    heard = "".join(stream(engine.new_transcriber(), noise + pcm))
    assert "communicate" in normalise(heard), heard


@pytest.mark.parametrize(
    ("text", "no_speech", "logprob", "ratio", "dropped"),
    [
        (" Thanks for watching!", 0.5, -0.5, 1.0, True),
        (" Thank you.", 0.1, -0.9, 1.0, True),
        (" Thank you.", 0.05, -0.2, 1.0, False),  # said clearly: keep it
        (" [Music]", 0.0, -0.1, 1.0, True),
        (" ♪ ♪", 0.0, -0.1, 1.0, True),
        (" the the the the the the", 0.0, -0.2, 3.1, True),
        (" Anything at all", 0.7, -1.2, 1.0, True),
        (" See you at the station.", 0.3, -0.6, 1.1, False),
    ],
)
def test_hallucination_filter(text, no_speech, logprob, ratio, dropped) -> None:
    assert is_hallucination(text, no_speech, logprob, ratio) is dropped
