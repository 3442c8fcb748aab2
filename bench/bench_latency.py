"""Speech-to-screen latency of the app, stage by stage, the way a reader meets it.

Real audio is played (paplay) into a private PulseAudio null sink — the system
output — while the real app (CaptionerApp: capture of the sink's monitor,
controller, session, overlay; offscreen Qt) captions it. Each word is timed from
its end in the audio to its first appearance in a painted overlay.

Clock: a separate low-latency recorder on the same monitor ("tap") stamps when
each sample leaves the sink; its earliest-arrival envelope (min over blocks of
arrival − samples/rate) is the sink's play-out clock. Word end times in the clip
come from faster-whisper's word timestamps on the whole clip (offline).

Endpoints:
- ``timed`` (default): a Voxtral-like local server (tests/support/timed_server.py)
  that sends each word exactly 480 ms of audio after its end, rounded up to an
  80 ms model frame, and costs no compute. Everything above 480 ms is the
  client's own share (target ≤ 0.25 s). Per-stage breakdown for the sample
  480 ms after each word's end ("trigger"): sink → app's capture callback →
  chunk handed to the session → server has it → server has its whole model
  frame and sends the word → update reaches the controller → overlay painted.
- ``embedded``: the on-device engine, as the app ships (target: median ≤ 1.2 s,
  p90 ≤ 2.0 s from word end to screen).

Usage: .venv/bin/python bench/bench_latency.py [--endpoint timed|embedded]
       [--clip FILE | --espeak] [--no-tap] [--chunk-bytes N]
CPU: the whole process's CPU seconds per audio second while the clip plays.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import qasync
import sounddevice as sd
import soundfile as sf
from PySide6.QtWidgets import QApplication

from captioner.audio.capture import AudioCapture
from captioner.audio.devices import find_device, list_devices, pulse_route, refresh_portaudio
from captioner.audio.streams import open_input
from captioner.realtime.captions import CaptionUpdate
from captioner.settings import Settings
from captioner.ui.app import CaptionerApp
from captioner.ui.settings_store import SettingsStore
from tests.support.pulse import SINK, PulseDaemon
from tests.support.timed_server import (
    ONSET_THRESHOLD,
    VOXTRAL_DELAY,
    ScriptWord,
    TimedFactory,
    onset_seconds,
)
from tests.support.transcribers import ThreadedServer

PASSAGE = ("Good morning everyone, and thank you for joining the call today. "
           "First we will look at the sales figures from the last quarter. "
           "Then Maria will explain the new schedule for the support team. "
           "Please keep your questions until the end of the presentation.")
SONNET = Path(__file__).resolve().parents[1] / "tests" / "data" / "speech" / "sonnet.flac"
TAP_BLOCK = 256  # frames per callback of the reference recorder
LEAD_IN = 1.0  # seconds of capture before the clip plays
SETTLE = 4.0  # seconds after the clip for the last words


def norm(word: str) -> str:
    return re.sub(r"[^\w']", "", word.lower())


# --- the clip and its word times ----------------------------------------------------


def espeak_clip(folder: Path) -> Path:
    raw = folder / "passage.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "160", "-w", str(raw), PASSAGE],
                   check=True, capture_output=True)
    return raw


def read_audio(path: Path) -> tuple[np.ndarray, int]:
    """(float32 frames × channels, rate) of a WAV or FLAC."""
    data, rate = sf.read(str(path), dtype="float32", always_2d=True)
    return data, int(rate)


def word_times(samples: np.ndarray, rate: int) -> list[ScriptWord]:
    """Offline faster-whisper words (beam 5, whole clip) with their end times."""
    import soxr
    from faster_whisper import WhisperModel

    from captioner.engine.model_paths import resolve_model_dir

    model = WhisperModel(str(resolve_model_dir()), device="cpu", compute_type="int8",
                         cpu_threads=2)
    audio = soxr.resample(samples.mean(axis=1), rate, 16_000).astype(np.float32)
    segments, _ = model.transcribe(audio, beam_size=5, word_timestamps=True,
                                   condition_on_previous_text=False, vad_filter=False)
    return [ScriptWord(w.word.strip(), float(w.end)) for s in segments for w in s.words or ()
            if norm(w.word)]


# --- clocks -------------------------------------------------------------------------


@dataclass
class BlockLog:
    """Arrival time of each block of one stream and where the clip starts in it."""

    rate: float = 0.0
    times: list[float] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)  # frames received after each block
    onset: int | None = None  # frame index of the first sample ≥ the onset threshold
    received: int = 0

    def add(self, block: np.ndarray, frames: int) -> None:
        now = time.monotonic()
        if self.onset is None:
            hits = np.flatnonzero(np.abs(block).reshape(frames, -1).max(axis=1)
                                  >= ONSET_THRESHOLD)
            if hits.size:
                self.onset = self.received + int(hits[0])
        self.received += frames
        self.times.append(now)
        self.ends.append(self.received)

    def arrival(self, frame: float) -> float:
        """When the block holding ``frame`` arrived."""
        i = int(np.searchsorted(np.asarray(self.ends), frame, side="right"))
        return self.times[min(i, len(self.times) - 1)] if i < len(self.times) else np.nan

    def play_clock(self, first: int, last: int) -> tuple[float, float]:
        """(t0, spread): frame ``s`` left the sink at ``t0 + s / rate`` (the envelope of
        earliest arrivals between frames ``first`` and ``last``); spread is the 10th
        percentile of the slack above it, a check that the clock is steady."""
        ends, times = np.asarray(self.ends), np.asarray(self.times)
        keep = (ends >= first) & (ends <= last)
        slack = times[keep] - ends[keep] / self.rate
        t0 = float(slack.min())
        return t0, float(np.percentile(slack, 10) - t0)

    def clip_frame(self, clip_seconds: float, clip_onset: float) -> float:
        assert self.onset is not None, "the clip never reached this stream"
        return self.onset + (clip_seconds - clip_onset) * self.rate


class Tap:
    """The reference recorder: tiny blocks, low latency, on the sink's monitor."""

    def __init__(self) -> None:
        self.log = BlockLog()
        device = find_device(list_devices(), "system")
        channels = max(1, min(device.channels, 2))

        def callback(indata, frames, _time, _status) -> None:
            self.log.add(np.frombuffer(indata, np.float32), frames)

        with pulse_route(device):
            self.stream = sd.RawInputStream(device=device.device_index, channels=channels,
                                            samplerate=device.default_samplerate,
                                            dtype="float32", blocksize=TAP_BLOCK,
                                            latency="low", callback=callback)
        self.log.rate = float(self.stream.samplerate)



# --- the app, instrumented from outside ---------------------------------------------


class StampedSource:
    """The app's real AudioCapture, with each chunk handed to the session time-stamped."""

    def __init__(self, capture: AudioCapture, log: BlockLog, probe: Probe) -> None:
        self.capture = capture
        self.log = log
        probe.capture = capture

    def __getattr__(self, name: str):
        return getattr(self.capture, name)

    async def start(self) -> None:
        await self.capture.start()

    async def stop(self) -> None:
        await self.capture.stop()

    async def chunks(self) -> AsyncIterator[bytes]:
        async for chunk in self.capture.chunks():
            samples = np.frombuffer(chunk, "<i2").astype(np.float32) / 32768
            self.log.add(samples, samples.size)
            yield chunk


@dataclass
class Probe:
    callbacks: BlockLog = field(default_factory=BlockLog)
    chunks: BlockLog = field(default_factory=lambda: BlockLog(rate=16_000.0))
    updates: list[tuple[float, list[str]]] = field(default_factory=list)
    paints: list[tuple[float, list[str]]] = field(default_factory=list)
    capture: AudioCapture | None = None

    def opener(self, device, on_block, on_end):
        log = self.callbacks

        def stamped(block: np.ndarray, overflowed: bool) -> None:
            log.add(block, block.shape[0])
            on_block(block, overflowed)

        stream = open_input(device, stamped, on_end)
        log.rate = float(stream.samplerate)
        return stream

    def source_factory(self, audio):
        return StampedSource(AudioCapture.from_settings(audio, opener=self.opener), self.chunks,
                             self)


def watch(app: CaptionerApp, probe: Probe) -> None:
    """Record the words the controller has and the words each paint put on screen.

    A paint is read from the view itself (the rows it shows), since the view may
    paint inside the same signal emission that brings the update, and may hold new
    rows back while older ones get their reading time.
    """
    final: list[str] = []
    live: list[str] = []
    view = app.overlay.view

    def on_update(update: CaptionUpdate) -> None:
        for line in update.finalized:
            final.extend(line.text.split())
        live[:] = update.live.text.split() if update.live else []
        live.extend(update.unconfirmed.split())  # the engine's unconfirmed words
        probe.updates.append((time.monotonic(), final + live))

    def on_paint() -> None:
        now = time.monotonic()
        words = " ".join(text for text, _ in view.visible_rows()).split()
        if not probe.paints or probe.paints[-1][1] != words:
            probe.paints.append((now, words))

    app.controller.update.connect(on_update)
    view.painted.connect(on_paint)


def first_seen(reference: list[str], snapshots: list[tuple[float, list[str]]]) -> list[float]:
    """For each reference word, the first snapshot time whose words contain it.

    Snapshots may be only the rows on screen, so each is aligned with the part of
    the reference around what was matched so far (text only moves forward). Of the
    blocks in common, the chain with the most words is kept, where a block whose gap
    to the one before it is longer in the reference than in the snapshot does not
    follow it: that is a chance match ("to the" after "contracted" taken for "herald
    to the" 30 words later, or the "to" of "foe, to thy" for the snapshot's "self to
    cruel"), and taking it would jump the cursor past real words or, seen first,
    veto the real text after it.
    """
    ref = [norm(w) for w in reference]
    seen = [np.nan] * len(ref)
    cursor = 0
    for t, words in snapshots:
        hyp = [norm(w) for w in words]
        lo = max(0, cursor - len(hyp) - 10)
        hi = min(len(ref), cursor + len(hyp) + 40)
        matcher = difflib.SequenceMatcher(a=ref[lo:hi], b=hyp, autojunk=False)
        for block in _likeliest_chain([b for b in matcher.get_matching_blocks() if b.size]):
            for k in range(lo + block.a, lo + block.a + block.size):
                if np.isnan(seen[k]):
                    seen[k] = t
                cursor = max(cursor, k + 1)
    return seen


def _likeliest_chain(blocks: list[difflib.Match]) -> list[difflib.Match]:
    """The blocks (in order) that can follow one another and hold the most words."""
    best: list[tuple[int, list[difflib.Match]]] = []  # per block: (words, chain ending with it)
    for block in blocks:
        before = [(words, chain) for (words, chain) in best
                  if block.a - (chain[-1].a + chain[-1].size)
                  <= block.b - (chain[-1].b + chain[-1].size) + 3]
        words, chain = max(before, key=lambda item: item[0], default=(0, []))
        best.append((words + block.size, [*chain, block]))
    return max(best, key=lambda item: item[0], default=(0, []))[1]  # first of equals


# --- one run ------------------------------------------------------------------------


async def run_app(settings: Settings, probe: Probe, daemon: PulseDaemon, clip: Path,
                  seconds: float) -> tuple[float, float]:
    """Caption the clip once; returns (CPU seconds while it played, clip wall seconds)."""
    store = SettingsStore(settings, path=None)
    store.save = lambda: True  # never touches the user's settings file
    app = CaptionerApp(store, tray_available=False, source_factory=probe.source_factory)
    watch(app, probe)
    app.start()
    deadline = time.monotonic() + 120
    while app.controller.current.state != "listening":
        if time.monotonic() > deadline or app.controller.current.failed:
            raise SystemExit(f"the app did not start: {app.controller.current.text}")
        await asyncio.sleep(0.05)
    await asyncio.sleep(LEAD_IN)
    cpu0, wall0 = time.process_time(), time.monotonic()
    await asyncio.to_thread(daemon.play, clip, SINK, seconds + 30)
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    await asyncio.sleep(SETTLE)
    await app.shutdown()
    return cpu, wall


def summary(name: str, values: list[float], unit: float = 1.0) -> str:
    v = np.asarray([x for x in values if not np.isnan(x)]) * unit
    if not v.size:
        return f"{name:>34}: no data"
    return (f"{name:>34}: median {np.median(v):6.3f}  p90 {np.percentile(v, 90):6.3f}  "
            f"max {v.max():6.3f}  (n={v.size})")


def report(words: list[ScriptWord], clip_onset: float, tap: Tap | None, probe: Probe,
           endpoint: str, factory: TimedFactory | None, cpu: float, seconds: float) -> None:
    tlog = tap.log if tap is not None else probe.callbacks
    assert tlog.onset is not None, "the clip never reached the clock's stream"
    first = tlog.onset
    last = int(tlog.clip_frame(words[-1].end + 1.0, clip_onset))
    t0, spread = tlog.play_clock(first, last)
    print(f"{'play-out clock':>34}: {'tap' if tap else 'app capture envelope'}, steady to "
          f"{spread * 1000:.1f} ms (10th pct of slack)")

    def played(clip_seconds: float) -> float:
        return t0 + tlog.clip_frame(clip_seconds, clip_onset) / tlog.rate

    ref = [w.text for w in words]
    painted = first_seen(ref, probe.paints)
    # the view may paint inside the update's own signal emission, before this probe's slot
    updated = [min(u, p) for u, p in zip(first_seen(ref, probe.updates), painted, strict=True)]
    ends = [played(w.end) for w in words]
    total = [p - e for p, e in zip(painted, ends, strict=True)]
    shown = sum(not np.isnan(p) for p in painted)
    print(f"{'words on screen':>34}: {shown}/{len(words)}")
    print(summary("word end → painted (s)", total))
    print(summary("update → painted (ms)", [p - u for p, u in zip(painted, updated,
                                                                     strict=True)], 1000))
    print(f"{'CPU while playing':>34}: {cpu / seconds * 1000:.0f} ms per audio second "
          f"(whole process{', with the tap' if tap else ''})")
    if probe.capture is not None:
        cap = probe.capture
        print(f"{'capture losses':>34}: {cap.device_overflows} driver overflows, "
              f"{cap.dropped_frames} frames dropped; {len(probe.callbacks.times)} callbacks")
    if endpoint != "timed" or factory is None or not factory.made:
        return
    server = factory.made[0]
    slog = BlockLog(rate=16_000.0, times=[t for t, _ in server.pushes],
                    ends=[n for _, n in server.pushes], onset=server.onset)
    sent = {i: t for t, i in server.sent}
    stages: dict[str, list[float]] = {k: [] for k in (
        "sink → capture callback", "callback → chunk to session", "chunk → server has it",
        "model frame, server sends", "sent → controller update", "update → painted")}
    client = []
    for i, w in enumerate(words):
        trigger = w.end + VOXTRAL_DELAY
        marks = [played(trigger),
                 probe.callbacks.arrival(probe.callbacks.clip_frame(trigger, clip_onset)),
                 probe.chunks.arrival(probe.chunks.clip_frame(trigger, clip_onset)),
                 slog.arrival(slog.clip_frame(trigger, clip_onset)),
                 sent.get(i, np.nan), updated[i], painted[i]]
        for name, a, b in zip(stages, marks, marks[1:], strict=False):
            stages[name].append(b - a)
        client.append(marks[-1] - marks[0])
    print(f"stages for the sample {VOXTRAL_DELAY * 1000:.0f} ms after each word's end (ms):")
    for name, values in stages.items():
        print(summary(name, values, 1000))
    print(summary("client's share (ms)", client, 1000))
    print(f"{'client share target 250 ms':>34}: "
          f"{'met' if np.nanmedian(client) <= 0.25 else 'NOT met'} (median)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", choices=("timed", "embedded"), default="timed")
    parser.add_argument("--clip", type=Path, default=SONNET,
                        help="a WAV or FLAC file (default: a real human reading, "
                        "tests/data/speech/sonnet.flac, 53 s)")
    parser.add_argument("--espeak", action="store_true",
                        help="an espeak-ng passage instead (15 s; fine for pure timing)")
    parser.add_argument("--chunk-bytes", type=int, default=None,
                        help="Settings.audio.chunk_bytes (default: the app's default)")
    parser.add_argument("--no-tap", action="store_true",
                        help="no reference recorder: the clock is the envelope of the app's "
                        "own capture blocks (a low-latency listener changes how the sink "
                        "renders)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="captioner-bench-latency-"))
    clip = espeak_clip(tmp) if args.espeak else args.clip
    samples, rate = read_audio(clip)
    seconds = samples.shape[0] / rate
    clip_onset = onset_seconds(samples, rate)
    words = word_times(samples, rate)
    print(f"clip {clip.name}: {seconds:.1f} s, {len(words)} words (offline word times)")

    daemon = PulseDaemon()
    daemon.start()
    server: ThreadedServer | None = None
    factory: TimedFactory | None = None
    try:
        daemon.add_null_sink(SINK, "Captioner bench sink")
        daemon.pactl("set-default-sink", SINK)
        os.environ["PULSE_SERVER"] = daemon.server
        # not the user's config: their cloud state would have the app look for endpoints
        os.environ["CAPTIONER_CONFIG_DIR"] = str(tmp / "config")
        refresh_portaudio()
        settings = Settings()
        settings.first_run = False
        settings.transcript.folder = str(tmp / "transcripts")
        settings.appearance.linger_seconds = 600.0
        if args.chunk_bytes:
            settings.audio.chunk_bytes = args.chunk_bytes
        if args.endpoint == "timed":
            factory = TimedFactory(words, clip_onset)
            server = ThreadedServer(factory).__enter__()
            settings.recognition.endpoint = server.url
            settings.recognition.model = "voxtral-like"
        else:
            settings.recognition.endpoint = "embedded"
        print(f"endpoint {args.endpoint}; chunk {settings.audio.chunk_bytes} bytes")
        tap = None if args.no_tap else Tap()
        if tap is not None:
            tap.stream.start()
        probe = Probe()
        app = QApplication.instance() or QApplication(sys.argv[:1])
        del app
        cpu, wall = asyncio.run(run_app(settings, probe, daemon, clip, seconds),
                                loop_factory=qasync.QEventLoop)
        if tap is not None:
            tap.stream.close()
        report(words, clip_onset, tap, probe, args.endpoint, factory, cpu, wall)
    finally:
        if server is not None:
            server.__exit__(None, None, None)
        daemon.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
