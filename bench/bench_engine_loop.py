"""Event-loop responsiveness while the embedded engine transcribes, and peak memory.

1. In one process, as the app runs it: the embedded engine behind its loopback
   Realtime server, a CaptionSession fed by an espeak-ng recording at real-time
   pace, and a probe task that asks to wake every 10 ms. A stall is how late the
   probe wakes. Baseline in the same run: the same probe with nothing else going on.
2. Peak RSS of `captioner transcribe --realtime FILE` (the embedded engine, the same
   session path as `captioner listen`, with a file instead of a sound card).

    .venv/bin/python bench/bench_engine_loop.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from captioner.audio.files import FileSource
from captioner.captioning import Captioner, EmbeddedEngine
from captioner.settings import Settings

TEXT = ("Captions help people follow every word of a meeting. The quick brown fox jumps "
        "over the lazy dog. Please remember to bring your notes to the next session, "
        "and send the summary to everyone before Friday afternoon.")
PERIOD = 0.010


def make_speech(folder: Path) -> Path:
    wav = folder / "speech.wav"
    subprocess.run(["espeak-ng", "-s", "160", "-w", str(wav), TEXT], check=True)
    return wav


async def probe(stop: asyncio.Event, lags: list[float]) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        t = loop.time()
        await asyncio.sleep(PERIOD)
        lags.append(max(0.0, loop.time() - t - PERIOD))


async def stalls_while_transcribing(wav: Path, engine: EmbeddedEngine) -> tuple[list[float], str]:
    settings = Settings()
    text: list[str] = []
    captioner = Captioner(settings, FileSource(wav, realtime=True), embedded=engine,
                          on_update=lambda u: text.extend(line.text for line in u.finalized))
    await engine.url()  # model loaded before measuring
    lags: list[float] = []
    stop = asyncio.Event()
    task = asyncio.create_task(probe(stop, lags))
    await captioner.run()
    stop.set()
    await task
    return lags, " ".join(text)


async def idle_stalls(seconds: float) -> list[float]:
    lags: list[float] = []
    stop = asyncio.Event()
    task = asyncio.create_task(probe(stop, lags))
    await asyncio.sleep(seconds)
    stop.set()
    await task
    return lags


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1000 if len(values) > 2 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wav = make_speech(Path(tmp))
        duration = FileSource(wav).duration

        async def run() -> None:
            base = await idle_stalls(duration)
            engine = EmbeddedEngine(Settings())
            try:
                for i in range(args.repeat):
                    lags, text = await stalls_while_transcribing(wav, engine)
                    print(f"run {i + 1}: {len(lags)} probes over {duration:.1f} s of speech; "
                          f"stall p50 {pct(lags, 50):.1f} ms, p99 {pct(lags, 99):.1f} ms, "
                          f"max {max(lags) * 1000:.1f} ms (target p99 ≤ 20 ms)")
                    print(f"   text: {text[:90]}…")
            finally:
                await engine.close()
            print(f"baseline (idle loop, same process): p50 {pct(base, 50):.1f} ms, "
                  f"p99 {pct(base, 99):.1f} ms")

        asyncio.run(run())
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "captioner", "transcribe", "--realtime", str(wav)],
                       check=True, capture_output=True)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"captioner transcribe --realtime (embedded engine): peak RSS {peak:.0f} MB, "
              f"wall {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
