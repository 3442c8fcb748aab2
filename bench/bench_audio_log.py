"""The caption session's per-chunk questions to its audio log, CPU per chunk.

After every 80 ms chunk it sends, the session asks its audio log for the noise
floor of the last 10 s, where the chunk's sound ends, and its level
(``CaptionSession._after_send``); an idle app asks them 12.5 times a second for
as long as captions are on. The log measures each 20 ms frame's level once, as
it arrives. Baseline in the same run: the same questions starting one sample off
the frame grid, which the log answers by measuring the frames afresh (what every
question cost before).

Usage: .venv/bin/python bench/bench_audio_log.py [--seconds 600]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from captioner.session.audio_log import AudioLog, seconds, to_bytes
from captioner.session.policy import NOISE_WINDOW_SECONDS
from captioner.settings import AudioSettings

CHUNK = AudioSettings().chunk_bytes


def per_chunk(total: float, off_grid: bool) -> float:
    """CPU µs per chunk: append it, then ask what the session asks."""
    rng = np.random.default_rng(0)
    chunk = (rng.standard_normal(CHUNK // 2) * 300).astype("<i2").tobytes()
    log = AudioLog(60.0)
    skew = seconds(2) if off_grid else 0.0
    count = int(total / seconds(CHUNK))
    start = time.process_time()
    for i in range(count):
        log.append(chunk)
        begin, end = seconds(i * CHUNK), seconds((i + 1) * CHUNK)
        floor = log.noise_floor(end - NOISE_WINDOW_SECONDS + skew, end)
        log.last_sound(begin + skew, end, 2 * floor)
        log.level(begin, end)
    assert log.end == to_bytes(seconds(count * CHUNK))
    return (time.process_time() - start) / count * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600.0, help="audio to feed")
    args = parser.parse_args()
    per_chunk(10.0, False)  # warm up
    measured = min(per_chunk(args.seconds, False) for _ in range(3))
    afresh = min(per_chunk(args.seconds, True) for _ in range(3))
    share = measured * (1 / seconds(CHUNK)) / 1e4  # % of a core at real time
    print(f"{args.seconds:.0f} s of audio in {CHUNK}-byte chunks (best of 3):")
    print(f"  levels measured on arrival: {measured:6.1f} µs per chunk ({share:.2f} % of a core)")
    print(f"  frames measured afresh:     {afresh:6.1f} µs per chunk "
          f"({afresh / measured:.1f}× the cost)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
