"""Overlay benchmarks (offscreen Qt).

1. Delta received → overlay painted: feed CaptionUpdates (a growing live line,
   a finalized line every few updates) and time until the caption view's
   paintEvent has completed. Target p99 ≤ 16 ms. Baseline in the same run: the
   same feed with the finalized-line layout cache dropped before every update
   (what a naive overlay that re-lays out everything would cost).
2. Idle RSS of the app while captioning through a "remote" endpoint: a local
   Realtime server with a trivial transcriber in a thread, a paced silent
   source; reported next to the RSS of a bare QApplication.

Usage: .venv/bin/python bench/bench_overlay.py [--updates N] [--seconds S]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import threading
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import qasync
from PySide6.QtWidgets import QApplication

from captioner.engine.server import RealtimeServer
from captioner.realtime.captions import CaptionLine, CaptionUpdate
from captioner.settings import Settings
from captioner.ui.app import CaptionerApp
from captioner.ui.overlay import Overlay
from captioner.ui.settings_store import SettingsStore

TEXT = ("the quick brown fox jumps over the lazy dog while seven wizards quietly "
        "box jumping frogs near a large river bank")
WORDS = TEXT.split()


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def feed(n: int):
    """CaptionUpdates like a session emits: live line grows a word per update."""
    live: list[str] = []
    t = 0.0
    for i in range(n):
        t += 0.08
        live.append(WORDS[i % len(WORDS)])
        if len(live) >= 9:
            yield CaptionUpdate((CaptionLine(" ".join(live) + ".", t - 1, t),), None)
            live = []
        else:
            yield CaptionUpdate((), CaptionLine(" ".join(live), t - 0.5, t, final=False))


def measure_paint(app: QApplication, updates: int, naive: bool) -> list[float]:
    settings = Settings()
    settings.appearance.lines = 3
    overlay = Overlay(settings.appearance)
    overlay.show()
    overlay.resize(1200, overlay.preferred_height())
    app.processEvents()
    painted_at: list[float] = []
    overlay.view.painted.connect(lambda: painted_at.append(time.perf_counter()))
    samples = []
    for update in feed(updates):
        if naive:
            overlay.view._invalidate()  # re-lay out every kept line, as a naive view would
        painted_at.clear()
        t0 = time.perf_counter()
        overlay.show_update(update)
        while not painted_at:
            app.processEvents()
        samples.append((painted_at[0] - t0) * 1000)
    overlay.close()
    overlay.deleteLater()
    app.processEvents()
    return samples


def describe(name: str, ms: list[float]) -> tuple[float, float]:
    ms = sorted(ms)
    q = statistics.quantiles(ms, n=100)
    p50, p90, p99 = q[49], q[89], q[98]
    print(f"{name:>28}: n={len(ms)} p50={p50:.2f} ms p90={p90:.2f} ms p99={p99:.2f} ms "
          f"max={ms[-1]:.2f} ms")
    return p50, p99


class _Silent:
    def push(self, pcm: bytes) -> str:
        return ""

    def finish(self) -> str:
        return ""


class _SilentSource:
    """A paced source of silence (the app captioning a quiet room)."""

    level_dbfs = -100.0

    def __init__(self, chunk_bytes: int) -> None:
        self.chunk_bytes = chunk_bytes
        self._stop = asyncio.Event()

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        self._stop.set()

    async def chunks(self):
        chunk = bytes(self.chunk_bytes)
        while not self._stop.is_set():
            await asyncio.sleep(self.chunk_bytes / 32000)
            yield chunk


def measure_idle_rss(seconds: float) -> float:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = asyncio.run_coroutine_threadsafe(
        RealtimeServer(_Silent, models={"bench"}).start(), loop).result(10)

    async def run() -> float:
        settings = Settings()
        settings.recognition.endpoint = server.url
        settings.recognition.model = "bench"
        settings.transcript.folder = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                  "captioner-bench-transcripts")
        settings.first_run = False
        store = SettingsStore(settings, path=None)
        store.save = lambda: True  # the benchmark never touches the user's settings file
        app = CaptionerApp(store, tray_available=False,
                           source_factory=lambda a: _SilentSource(a.chunk_bytes))
        app.start()
        deadline = time.monotonic() + 10
        while app.controller.current.state != "listening" and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(seconds)
        rss = rss_mb()
        print(f"{'state while measuring':>28}: {app.controller.current.state}")
        await app.shutdown()
        return rss

    try:
        return asyncio.run(run(), loop_factory=qasync.QEventLoop)
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=600)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    base_rss = rss_mb()
    print("delta received → overlay painted (offscreen)")
    measure_paint(app, 50, naive=False)  # warm-up (fonts, glyph caches)
    cached = measure_paint(app, args.updates, naive=False)
    naive = measure_paint(app, args.updates, naive=True)
    _, p99 = describe("cached finalized lines", cached)
    _, p99_naive = describe("baseline: re-layout all", naive)
    print(f"{'p99 target 16 ms':>28}: {'met' if p99 <= 16 else 'NOT met'}; "
          f"baseline/cached p99 ratio {p99_naive / p99:.2f}")
    rss = measure_idle_rss(args.seconds)
    print(f"{'RSS bare QApplication':>28}: {base_rss:.0f} MB")
    print(f"{'RSS captioning (remote)':>28}: {rss:.0f} MB "
          f"(+{rss - base_rss:.0f} MB over the bare QApplication)")


if __name__ == "__main__":
    main()
