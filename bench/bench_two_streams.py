"""Two-stream captioning ("You" and "Others") on the embedded engine: CPU and word
latency with both streams live at once, beside one stream at a time, in one run.

Run: .venv/bin/python bench/bench_two_streams.py  (prints figures; asserts nothing)

Two different real recordings from the speech set play at real-time pace, one per
stream, through two streaming transcribers of the one loaded model, as the app's
engine serves the two sessions (the model runs one decode at a time, so the two
streams take turns on it; here each stream is a thread, there the server's worker).

- one stream: each recording alone, one after the other (the baseline);
- both live: the two at once, from the same start.

Figures: whole-process CPU (time.process_time) per second of audio of the run;
word errors against the references; word latency per stream as in
bench_engine.py (wall time from the word's end in the audio to its first display
as live text, and to its commit), matched to the offline word timings.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_engine import BYTES_PER_SECOND, Run, paced, pct
from captioner.engine.whisper import WhisperEngine
from tests.support.speech_set import clip, word_errors

# (stream name, clips played back to back): about 33 s each
STREAMS = {"You": ("sonnet_cut",), "Others": ("jfk", "jfk_cut", "jfk_phone")}


class Stream:
    def __init__(self, engine: WhisperEngine, names: tuple[str, ...]) -> None:
        clips = [clip(name) for name in names]
        self.samples = np.concatenate([c.samples() for c in clips])
        self.pcm = (np.clip(self.samples, -1, 1) * 32767).astype("<i2").tobytes()
        self.reference = " ".join(c.reference for c in clips)
        self.timings = engine.timed_words(self.samples)
        self.seconds = len(self.pcm) / BYTES_PER_SECOND


def summary(label: str, runs: list[tuple[Stream, Run]], cpu: float, audio: float) -> None:
    errors = [word_errors(s.reference, r.text) for s, r in runs]
    wrong, words = sum(e.errors for e in errors), sum(e.words for e in errors)
    shown = [v for _, r in runs for v in r.shown]
    done = [v for _, r in runs for v in r.committed]
    print(f"{label:<22} CPU {cpu / audio * 1000:5.0f} ms per audio s | WER {wrong / words:5.1%} | "
          f"latency shown median {pct(shown, 50):.2f} s p90 {pct(shown, 90):.2f} s, "
          f"committed median {pct(done, 50):.2f} s p90 {pct(done, 90):.2f} s "
          f"({len(shown)} words)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    engine = WhisperEngine(threads=args.threads)
    streams = {name: Stream(engine, clips) for name, clips in STREAMS.items()}
    audio = sum(s.seconds for s in streams.values())
    print(f"tiny.en, {args.threads} threads; streams: "
          + ", ".join(f"{n} {s.seconds:.1f} s" for n, s in streams.items())
          + f"; load average {os.getloadavg()[0]:.1f} (other work slows both runs)")

    alone: list[tuple[Stream, Run]] = []
    cpu0 = time.process_time()
    for stream in streams.values():
        alone.append((stream, paced(engine, stream.pcm, stream.timings)))
    alone_cpu = time.process_time() - cpu0

    together: dict[str, Run] = {}
    start = threading.Barrier(len(streams))

    def play(name: str, stream: Stream) -> None:
        start.wait()
        together[name] = paced(engine, stream.pcm, stream.timings)

    threads = [threading.Thread(target=play, args=item) for item in streams.items()]
    cpu0, wall0 = time.process_time(), time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    both_cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0

    summary("one stream at a time", alone, alone_cpu, audio)
    summary("both live at once", [(streams[n], r) for n, r in together.items()], both_cpu, audio)
    for name, run in together.items():
        print(f"  {name:<8} shown median {pct(run.shown, 50):.2f} s p90 "
              f"{pct(run.shown, 90):.2f} s, committed median {pct(run.committed, 50):.2f} s "
              f"p90 {pct(run.committed, 90):.2f} s")
    print(f"both at once: {both_cpu / wall:.2f} cores busy on average over {wall:.0f} s "
          f"(CPU {both_cpu / alone_cpu:.2f}× the same audio one stream at a time)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
