"""Export figures: how long a long session takes to become subtitles.

Run: .venv/bin/python bench/bench_export.py [--lines N]  (prints figures; asserts nothing)

A session of N caption lines (default 3,000: about three hours of a meeting), each of
5 to 40 words, is exported as TXT, SRT and WebVTT. SRT and WebVTT share their words out
over cues of two balanced rows, a search over where to cut each line; TXT needs none
and shows the floor. The baseline is the same search laying out every run of words
(what the export did before it ruled out, by their width alone, the runs too short for
two rows or too long for a cue), re-created here and run on the same lines.
"""

from __future__ import annotations

import argparse
import itertools
import random
import tempfile
import time
from pathlib import Path

from captioner.realtime.captions import CaptionLine
from captioner.realtime.rows import break_rows
from captioner.transcript import exports

TEXT = ("we were all going direct to Heaven, we were all going direct the other way. "
         "In short, the period was so far like the present period, that some of its "
         "noisiest authorities insisted on its being received for good or for evil")


def session(n: int) -> list[CaptionLine]:
    rng = random.Random(1)
    words = TEXT.split()
    lines, t = [], 0.0
    for _ in range(n):
        count = rng.randint(5, 40)
        lines.append(CaptionLine(" ".join(rng.choice(words) for _ in range(count)),
                                 t, t + count * 0.4))
        t += count * 0.4 + 1.0
    return lines


def full_search(text: str, width: int = exports.MAX_CHARS,
                max_lines: int = exports.MAX_LINES) -> list[list[str]]:
    """The baseline: every run of words laid out to learn whether it fits a cue."""
    words = [p for word in text.split() for p in exports._pieces(word, width)]
    if not words:
        return []
    cache: dict[tuple[int, int], list[str]] = {}

    def rows(i: int, j: int) -> list[str]:
        if (i, j) not in cache:
            cache[i, j] = [" ".join(r) for r in break_rows(words[i:j], lambda _r: True, width)]
        return cache[i, j]

    count = -(-len(rows(0, len(words))) // max_lines)
    while (cuts := exports._balanced_cuts(
            words, count, lambda i, j: len(rows(i, j)) <= max_lines)) is None:
        count += 1
    return [rows(i, j) for i, j in itertools.pairwise(cuts)]


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=3000)
    n = parser.parse_args().lines
    lines = session(n)
    words = sum(len(line.text.split()) for line in lines)
    print(f"{n} lines, {words} words")
    with tempfile.TemporaryDirectory() as folder:
        for fmt in ("txt", "srt", "vtt"):
            seconds = timed(lambda fmt=fmt: exports.export(lines, fmt, Path(folder) / f"x.{fmt}"))
            print(f"export {fmt}: {seconds:6.2f} s  ({seconds / n * 1000:.2f} ms per line)")
    ours = timed(lambda: [exports.cue_rows(line.text) for line in lines])
    base = timed(lambda: [full_search(line.text) for line in lines])
    same = all(exports.cue_rows(line.text) == full_search(line.text) for line in lines[:300])
    print(f"cue layout: {ours:.2f} s, baseline (every run laid out) {base:.2f} s: "
          f"{base / ours:.1f}x faster; same cues on the first 300 lines: {same}")


if __name__ == "__main__":
    main()
