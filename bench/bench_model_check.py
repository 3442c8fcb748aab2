"""What checking the model's SHA-256 digests adds to start-up.

Run: .venv/bin/python bench/bench_model_check.py  (prints figures; asserts nothing)

Three ways to get the bundled tiny.en folder ready for loading, in this process:
- baseline: ``resolve_model_dir`` alone (no digests; what start-up did before);
- first start: ``checked_model_dir`` with an empty digest cache (hashes every file);
- later starts: the same with the cache the first start wrote (stats the files only).
Each is the median of several runs, wall and CPU time; the model load itself
(``WhisperModel``, same process) is printed for scale.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from faster_whisper import WhisperModel

from captioner.engine.model_integrity import DigestCache, checked_model_dir
from captioner.engine.model_paths import resolve_model_dir

RUNS = 5


def timed(action: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    action()
    return time.perf_counter() - wall, time.process_time() - cpu


def median_of(action: Callable[[], object], runs: int = RUNS) -> tuple[float, float]:
    results = [timed(action) for _ in range(runs)]
    return (statistics.median(r[0] for r in results),
            statistics.median(r[1] for r in results))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cache_file = Path(tmp) / "digests.json"

        def first_start() -> None:
            cache_file.unlink(missing_ok=True)
            checked_model_dir(None, DigestCache(cache_file))

        rows = {
            "baseline (no check)": median_of(lambda: resolve_model_dir(None)),
            "first start (hash all)": median_of(first_start),
            "later start (cached)": median_of(
                lambda: checked_model_dir(None, DigestCache(cache_file))),
            "model load, for scale": median_of(lambda: WhisperModel(
                str(resolve_model_dir()), device="cpu", compute_type="int8",
                cpu_threads=2, local_files_only=True), runs=3),
        }
    base_wall = rows["baseline (no check)"][0]
    print(f"{'step':<26}{'wall ms':>10}{'CPU ms':>10}{'vs baseline':>14}")
    for name, (wall, cpu) in rows.items():
        print(f"{name:<26}{wall * 1e3:>10.2f}{cpu * 1e3:>10.2f}"
              f"{'+' + format((wall - base_wall) * 1e3, '.2f') + ' ms':>14}")


if __name__ == "__main__":
    main()
