"""Embedded engine figures: real-time factor and word latency per update interval.

Run: .venv/bin/python bench/bench_engine.py  (prints figures; asserts nothing)

- RTF: engine CPU seconds (time.process_time) per second of audio, audio pushed
  as fast as possible in 128 ms chunks. Target ≤ 0.5 on 2 cores.
- Word latency: audio pushed at real-time pace; for each streamed word matched
  to the offline transcription, wall time from the word's end in the audio
  (offline word timestamps) to the delta carrying it. Targets: median ≤ 2.0 s,
  p90 ≤ 3.5 s.
"""

from __future__ import annotations

import argparse
import difflib
import subprocess
import tempfile
import time
import wave
from pathlib import Path

import numpy as np

from captioner.engine.streaming import SAMPLE_RATE, StreamingOptions, Word
from captioner.engine.whisper import WhisperEngine

CHUNK = 4096  # 128 ms
PASSAGE = [
    ("en-us", 160, "Good morning everyone, and thank you for joining the call today."),
    ("en", 150, "First we will look at the sales figures from the last quarter."),
    ("en+f3", 170, "Then Maria will explain the new schedule for the support team."),
    ("en+m3", 145, "Please keep your questions until the end of the presentation."),
    ("en-us", 175, "The slides will be shared by email after the meeting."),
]


def speak_passage(folder: Path) -> bytes:
    parts = []
    for i, (voice, wpm, text) in enumerate(PASSAGE):
        raw, out = folder / f"p{i}.wav", folder / f"p{i}-16k.wav"
        subprocess.run(["espeak-ng", "-w", str(raw), "-v", voice, "-s", str(wpm), text], check=True)
        subprocess.run(
            ["sox", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(out)], check=True
        )
        with wave.open(str(out)) as f:
            parts.append(f.readframes(f.getnframes()))
        parts.append(bytes(int(0.4 * SAMPLE_RATE) * 2))  # a short breath between sentences
    return b"".join(parts)


def rtf(engine: WhisperEngine, pcm: bytes) -> tuple[float, int]:
    transcriber = engine.new_transcriber()
    start = time.process_time()
    for i in range(0, len(pcm), CHUNK):
        transcriber.push(pcm[i : i + CHUNK])
    transcriber.finish()
    cpu = time.process_time() - start
    return cpu / (len(pcm) / 2 / SAMPLE_RATE), transcriber.decodes


def latencies(engine: WhisperEngine, pcm: bytes, reference: list[Word]) -> list[float]:
    """Real-time paced run; seconds from each matched word's end to its delta."""
    transcriber = engine.new_transcriber()
    arrivals: list[tuple[Word, float]] = []
    t0 = time.monotonic()
    for i in range(0, len(pcm), CHUNK):
        chunk = pcm[i : i + CHUNK]
        deadline = t0 + (i + len(chunk)) / 2 / SAMPLE_RATE
        pause = deadline - time.monotonic()
        if pause > 0:
            time.sleep(pause)  # a benchmark paces like a microphone; tests never sleep
        before = len(transcriber.committed)
        transcriber.push(chunk)
        now = time.monotonic()
        arrivals += [(w, now) for w in transcriber.committed[before:]]
    before = len(transcriber.committed)
    transcriber.finish()
    now = time.monotonic()
    arrivals += [(w, now) for w in transcriber.committed[before:]]

    streamed = [w.key for w, _ in arrivals]
    offline = [w.key for w in reference]
    out = []
    matcher = difflib.SequenceMatcher(a=streamed, b=offline, autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            _, arrived = arrivals[block.a + k]
            out.append(arrived - (t0 + reference[block.b + k].end))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--intervals", default="0.5,0.75,1.0")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--beam", type=int, default=None, help="streaming beam size")
    args = parser.parse_args()
    engine = WhisperEngine(threads=args.threads)
    if args.beam:
        engine.beam_size = args.beam
    print(f"streaming beam {engine.beam_size}; careful decodes at pauses use beam 5")
    with tempfile.TemporaryDirectory() as tmp:
        pcm = speak_passage(Path(tmp))
    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    seconds = len(audio) / SAMPLE_RATE
    start = time.process_time()
    reference = engine.timed_words(audio)
    offline_cpu = time.process_time() - start
    print(
        f"audio {seconds:.1f} s, {len(reference)} words; offline transcription "
        f"RTF {offline_cpu / seconds:.3f} (baseline, beam 5, 30 s window)"
    )
    print(
        f"{'interval':>8} {'RTF':>6} {'decodes':>7} {'median':>7} {'p90':>6} {'max':>6} "
        f"{'matched':>7}"
    )
    for interval in (float(x) for x in args.intervals.split(",")):
        engine.options = StreamingOptions(update_interval=interval)
        factor, decodes = rtf(engine, pcm)
        lat = np.array(latencies(engine, pcm, reference))
        print(
            f"{interval:8.2f} {factor:6.3f} {decodes:7d} {np.median(lat):7.2f} "
            f"{np.percentile(lat, 90):6.2f} {lat.max():6.2f} {len(lat):4d}/{len(reference)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
