"""Reply playback: first-byte→device latency and underruns over a long real-time reply.

Runs the real path: Speaker → WebSocket → the local vLLM-Omni-compatible server
(tests/support/omni_server.py) paced in real time → Player (soxr 24 kHz → the
device rate, ring buffer, PortAudio callback) → ALSA ``pulse`` → a PulseAudio null
sink. A private PulseAudio daemon is started for the run (Debian: pulseaudio,
libasound2-plugins), so nothing on the machine is touched.

Figures:
- latency: client time from the first PCM byte received (``ReplyResult.first_audio_at``)
  to the first sample handed to the device (``PlaybackStats.first_sample_at``).
  Target ≤ 30 ms. Shown beside it, honestly: when that sample is due on the device's
  clock (``first_sample_due``; the device's fixed output latency comes on top). The
  Player places the start past the device's read-ahead (measured, printed), the
  resampler's look-ahead and the jitter allowance (``--prebuffer-ms``), so it can be
  handed over inside a block after a few ms of silence: that lead is the pre-roll.
- baseline in the same run: the same Player fed locally with prebuffer 0 (no network,
  no speaker): the device's own hand-off time. The speaker's hand-off is shown as a
  ratio against it.
- underruns during one long reply (default 60 s) paced at exactly real time
  (worst case: a real GPU server generates faster; chunks arrive exactly when due).
  Target 0. Also at ``--drift`` (default 0.995): the server delivers 0.995 s of audio
  per second of the device's clock, i.e. a device clock 0.5 % fast.
- adaptive playout: the Player stretches a reply by up to ``--max-stretch`` (default
  3 %) while its jitter margin is below 30 ms (captioner/audio/playout.py). Each long
  reply prints the stretch range used, the frames it added and the lowest margin seen;
  with ``--compare`` each is played again with the controller off (``max_stretch=0``),
  the baseline it is judged against.

Usage: .venv/bin/python bench/bench_tts.py [--seconds 60] [--replies 10]
       [--prebuffer-ms 10 20] [--chunk-ms 80] [--drift 0.995] [--max-stretch 0.03]
       [--compare]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from captioner.audio.devices import refresh_portaudio
from captioner.audio.playback import PlaybackStats, Player
from captioner.transport.websocket import websocket_connector
from captioner.tts.events import SessionConfig
from captioner.tts.speaker import Speaker
from tests.support.omni_server import OmniBehavior, OmniServer
from tests.support.pulse import SINK, PulseDaemon

CONFIG = SessionConfig(voice="vivian", language="English")
SENTENCE = "This is one sentence of a long spoken reply, paced in real time. "


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def summary(values: list[float]) -> str:
    if not values:
        return "n/a"
    v = sorted(values)
    p95 = v[min(len(v) - 1, round(0.95 * (len(v) - 1)))]
    return f"median {ms(statistics.median(v))}  p95 {ms(p95)}  max {ms(v[-1])}"


async def baseline(replies: int) -> list[float]:
    """Hand-off time of the bare Player: write → first sample to the device."""
    player = Player("pulse", prebuffer_ms=0)
    await player.open()
    tone = (0.2 * np.sin(2 * np.pi * 440 * np.arange(4800) / 24_000) * 32767).astype("<i2")
    out = []
    try:
        for _ in range(replies):
            player.start_reply(24_000)
            await player.write(tone.tobytes())
            player.finish_reply()
            await player.drained()
            s = player.stats()
            out.append(s.first_sample_at - s.first_write_at)
    finally:
        await player.close()
    return out


async def latency(url: str, replies: int, prebuffer_ms: float) -> tuple[list, list, int]:
    player = Player("pulse", prebuffer_ms=prebuffer_ms)
    await player.open()
    handed, due = [], []
    try:
        speaker = Speaker(websocket_connector(url), player, CONFIG)
        for i in range(replies):
            result = await speaker.speak(f"Reply number {i}. It is short.")
            s = player.stats()
            if result.first_audio_at is None or s.first_sample_at is None:
                raise RuntimeError(f"reply {i} did not play: {result}")
            handed.append(s.first_sample_at - result.first_audio_at)
            due.append(s.first_sample_due - result.first_audio_at)
    finally:
        await player.close()
    s = player.stats()
    return handed, due, 1000 * s.read_ahead / s.device_rate


async def long_reply(url: str, seconds: float, prebuffer_ms: float, max_stretch: float,
                     ) -> tuple[PlaybackStats, float]:
    """The Player's figures after one reply of ``seconds``, and its wall time."""
    player = Player("pulse", prebuffer_ms=prebuffer_ms, max_stretch=max_stretch)
    await player.open()
    try:
        speaker = Speaker(websocket_connector(url), player, CONFIG)
        text = SENTENCE * max(1, round(seconds / (len(SENTENCE) * 0.03)))
        start = time.monotonic()
        result = await speaker.speak(text)
        elapsed = time.monotonic() - start
        if not result.completed:
            raise RuntimeError(f"the long reply failed: {result.error}")
        return player.stats(), elapsed
    finally:
        await player.close()


async def main(args: argparse.Namespace) -> None:
    behavior = OmniBehavior(realtime_factor=1.0, chunk_ms=args.chunk_ms, seconds_per_char=0.03)
    async with OmniServer(behavior) as server:
        base = await baseline(args.replies)
        print(f"baseline Player hand-off (prebuffer 0, no network): {summary(base)}")
        for prebuffer in args.prebuffer_ms:
            handed, due, read_ahead_ms = await latency(server.url, args.replies, prebuffer)
            ratio = statistics.median(handed) / max(statistics.median(base), 1e-6)
            print(f"\nprebuffer {prebuffer:g} ms, server chunks of {args.chunk_ms:g} ms at 1.0x, "
                  f"device read-ahead {read_ahead_ms:.1f} ms:")
            print(f"  first PCM byte → first sample handed to the device : {summary(handed)}  "
                  f"({ratio:.2f}× baseline; target ≤ 30 ms)")
            print(f"  first PCM byte → that sample due on the device clock: {summary(due)}  "
                  f"(+ the device's fixed output latency)")
        stretches = [args.max_stretch] + ([0.0] if args.compare and args.max_stretch else [])
        for factor in (1.0, args.drift) if args.drift else (1.0,):
            behavior.realtime_factor = 1.0 / factor
            for prebuffer in args.prebuffer_ms:
                for max_stretch in stretches:
                    s, elapsed = await long_reply(server.url, args.seconds, prebuffer,
                                                  max_stretch)
                    label = (f"playout stretch ≤ {100 * max_stretch:g} %" if max_stretch
                             else "no playout control")
                    print(f"\n{args.seconds:g} s reply, server at {factor:g}x the device's rate, "
                          f"prebuffer {prebuffer:g} ms, {label}: underruns {s.underruns}"
                          f"{' (target 0)' if max_stretch else ''}, device underflows "
                          f"{s.device_underflows}, took {elapsed:.1f} s")
                    if max_stretch:
                        played = s.samples_played - s.stretched_frames
                        low = "n/a" if s.min_margin_ms is None else f"{s.min_margin_ms:.1f} ms"
                        print(f"  playout rate 1.000 … {1 / (1 + s.max_stretch_used):.3f}× "
                              f"(stretch 0 … {100 * s.max_stretch_used:.2f} %), "
                              f"{1000 * s.stretched_frames / s.device_rate:.0f} ms added "
                              f"({100 * s.stretched_frames / max(played, 1):.2f} % on average), "
                              f"lowest margin {low}")


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--replies", type=int, default=10)
    parser.add_argument("--prebuffer-ms", type=float, nargs="+", default=[10.0])
    parser.add_argument("--drift", type=float, default=0.995,
                        help="second long reply: server speed relative to the device (0: skip)")
    parser.add_argument("--chunk-ms", type=float, default=80.0)
    parser.add_argument("--max-stretch", type=float, default=0.03,
                        help="adaptive playout bound for the long replies (0: off)")
    parser.add_argument("--compare", action="store_true",
                        help="play each long reply again with adaptive playout off")
    args = parser.parse_args()
    daemon = PulseDaemon()
    daemon.start()
    try:
        daemon.add_null_sink(SINK, "Captioner bench sink")
        daemon.pactl("set-default-sink", SINK)
        os.environ["PULSE_SERVER"] = daemon.server
        refresh_portaudio()
        print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        asyncio.run(main(args))
    finally:
        daemon.stop()


if __name__ == "__main__":
    cli()
