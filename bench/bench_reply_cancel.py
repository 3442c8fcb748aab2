"""The app's spoken replies cancelled from a capture: how much of the reply is left, and
what it costs.

Run: PYTHONPATH=. .venv/bin/python bench/bench_reply_cancel.py  (prints figures; asserts
nothing)

The scene: a capture of system audio at 16 kHz in 80 ms chunks that arrive 30–50 ms
after their last sample. Kennedy's clip plays through it; three espeak-ng replies are
played by the reply player (its 10 ms blocks at 44.1 kHz, as the player's callback
hands them to ``PlayedAudio``) and come back into the capture 120 ms later at -4 dB,
one of them while Kennedy speaks.

Figures:
- residual (dB): reply power left over reply power in, where only the reply plays;
- Kennedy's words (tiny.en, the streaming engine as the app runs it) on his clip
  alone, with the replies uncancelled, and cancelled;
- CPU ms per audio second of ``ReplyCanceller.process`` (process_time, LiveKit's
  native threads included) over the whole scene, with a pass-through filter over the
  same chunks as the baseline in the same process.
"""

from __future__ import annotations

import time

import numpy as np
import soxr

from captioner.audio.reply_cancel import PlayedAudio, ReplyCanceller
from captioner.audio.resample import TARGET_RATE
from captioner.engine.whisper import WhisperEngine
from tests.support.speech import load_wav, make_speech
from tests.support.speech_set import WordErrors, clip, word_errors

DEVICE_RATE = 44_100
BLOCK = 441
CHUNK = 1280
DELAY = 0.12
GAIN = 0.63
REPLIES = ((2.0, "Hello there. I will be right back after this call."),
           (14.0, "Sorry, one moment please."),
           (25.0, "Thanks, that is all from me today."))
KENNEDY_AT = 12.0
T0 = 1000.0


def espeak(text: str) -> np.ndarray:
    """espeak-ng's default voice and pace (175 words a minute) at the device's rate."""
    audio, rate = load_wav(make_speech(text, speed=175))
    return soxr.resample(audio, rate, DEVICE_RATE).astype(np.float32)


def scene() -> tuple[np.ndarray, np.ndarray, PlayedAudio, list[tuple[int, int]]]:
    """(capture with the replies, capture without them, what was played, reply spans)."""
    kennedy = clip("jfk").samples()
    length = round(30.0 * TARGET_RATE)
    others = np.zeros(length, dtype=np.float32)
    at = round(KENNEDY_AT * TARGET_RATE)
    others[at:at + kennedy.size] = kennedy
    echo = np.zeros(length, dtype=np.float32)
    played = PlayedAudio(keep_seconds=40.0)
    spans = []
    for start, text in REPLIES:
        reply = espeak(text)
        for i in range(0, reply.size, BLOCK):
            played.played(reply[i:i + BLOCK], DEVICE_RATE, T0 + start + i / DEVICE_RATE)
        heard = soxr.resample(reply, DEVICE_RATE, TARGET_RATE) * GAIN
        first = round((start + DELAY) * TARGET_RATE)
        echo[first:first + heard.size] += heard
        spans.append((first, first + heard.size))
    return others + echo, others, played, spans


def pcm16(x: np.ndarray) -> bytes:
    return (np.clip(x, -1, 1) * 32767).astype("<i2").tobytes()


def feed(process, captured: np.ndarray) -> tuple[np.ndarray, float]:
    """The capture through ``process`` as the capture hands it chunks; CPU seconds."""
    rng = np.random.default_rng(3)
    raw = pcm16(captured)
    out = bytearray()
    cpu = time.process_time()
    for i in range(0, len(raw), CHUNK * 2):
        chunk = raw[i:i + CHUNK * 2]
        end = (i // 2 + len(chunk) // 2) / TARGET_RATE
        out += process(chunk, T0 + end + 0.03 + rng.uniform(0, 0.02))
    cpu = time.process_time() - cpu
    return np.frombuffer(bytes(out), "<i2").astype(np.float32) / 32768, cpu


def power(x: np.ndarray) -> float:
    return float(np.mean(np.square(x))) + 1e-12


def main() -> None:
    captured, others, played, spans = scene()
    seconds = captured.size / TARGET_RATE
    _, base_cpu = feed(lambda chunk, _now: chunk, captured)
    cleaned, cpu = feed(ReplyCanceller(played).process, captured)
    alone = [(a, b) for a, b in spans if not np.any(others[a:b])]
    left = [10 * np.log10(power(cleaned[a:b]) / power(captured[a:b])) for a, b in alone]
    print(f"scene: {seconds:.0f} s, {len(REPLIES)} replies ({len(alone)} alone), "
          f"echo {DELAY * 1000:.0f} ms later at {20 * np.log10(GAIN):.0f} dB")
    print("residual of a reply alone: " + ", ".join(f"{x:.1f} dB" for x in left))
    engine = WhisperEngine()
    kennedy = clip("jfk")

    def words(x: np.ndarray) -> tuple[WordErrors, str]:
        pcm = pcm16(x[round((KENNEDY_AT - 1) * TARGET_RATE):])
        t = engine.new_transcriber()
        text = "".join(t.push(pcm[i:i + 3200]) for i in range(0, len(pcm), 3200))
        text += t.finish()
        return word_errors(kennedy.reference, text), text

    for name, audio in (("Kennedy alone", others), ("replies uncancelled", captured),
                        ("replies cancelled", cleaned)):
        errors, text = words(audio)
        print(f"{name:20s} Kennedy: {errors.errors}/{errors.words} words wrong "
              f"({errors.insertions} inserted): {text.strip()!r}")
    print(f"CPU per audio second: canceller {cpu / seconds * 1000:.1f} ms, "
          f"pass-through {base_cpu / seconds * 1000:.2f} ms "
          f"(ratio {cpu / max(base_cpu, 1e-9):.0f}×)")


if __name__ == "__main__":
    main()
