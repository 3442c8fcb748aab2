"""CPU cost of the capture pipeline per second of audio, against a naive baseline.

Pipeline measured (the real code): PortAudio-style callback → ring handoff to the
asyncio loop (``call_soon_threadsafe``) → downmix + soxr 48 kHz stereo → 16 kHz
mono → PCM16 → fixed-size chunks → ``encode(AudioAppend(chunk))`` → a masked
WebSocket text frame. Synthetic 48 kHz stereo blocks are fed from a second
thread, as PortAudio would, but as fast as the pipeline takes them (no
real-time wait). As in real time, where the loop has ~10 ms between blocks, a
block that wakes the loop is processed before the next one arrives: the feeder
waits while a wake-up is pending. So the pipeline pays for every hand-off and
wake-up it would pay live, and the run never drops audio (checked at the end).

Baseline in the same run: a ``queue.Queue`` per block, per-block
``scipy.signal.resample_poly`` with fresh arrays (no filter state), ``np.append``
to grow a buffer, and per chunk ``json.dumps`` of a dict with base64, then the
same frame.

Usage: .venv/bin/python bench/bench_pipeline.py [--seconds 30] [--block-ms 10 20]
Figures are CPU milliseconds per audio second: the consumer thread's CPU time
plus the CPU time spent inside the callback (the feeder's own waiting is not
pipeline work and is left out).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import queue
import threading
import time

import numpy as np
from scipy import signal
from websockets.frames import Frame, Opcode

from captioner.audio.capture import AudioCapture
from captioner.audio.chunker import CHUNK_SIZES
from captioner.audio.devices import AudioDevice
from captioner.realtime.events import AudioAppend, encode

RATE = 48_000
DEVICE = AudioDevice(0, "synthetic 48 kHz stereo", "system", 2, float(RATE))


def make_blocks(seconds: float, block_frames: int) -> list[np.ndarray]:
    """Speech-like noise (band-limited, varying level), cut into PortAudio-sized blocks."""
    rng = np.random.default_rng(1)
    n = int(seconds * RATE) // block_frames * block_frames
    noise = rng.standard_normal((n, 2)).astype(np.float32) * 0.1
    envelope = (0.5 + 0.5 * np.sin(np.arange(n) / RATE * 2 * np.pi * 3)).astype(np.float32)
    noise *= envelope[:, None]
    return [noise[i:i + block_frames] for i in range(0, n, block_frames)]


def wait_until(predicate) -> None:
    """The feeder's wait for the consumer (sleeping costs no CPU time)."""
    while not predicate():
        time.sleep(0.0002)


def frame(text: str) -> bytes:
    return Frame(Opcode.TEXT, text.encode("utf-8")).serialize(mask=True)


class _Stream:
    """The hardware edge: a feeder thread plays PortAudio's part."""

    def __init__(self, device, on_block, on_end):
        self.on_block = on_block
        self.samplerate = device.default_samplerate
        self.channels = device.channels

    def start(self) -> None:
        pass

    def close(self) -> None:
        pass


async def run_pipeline(blocks: list[np.ndarray], chunk_bytes: int) -> tuple[float, int]:
    """CPU seconds for the real pipeline; returns (cpu, bytes framed)."""
    streams: list[_Stream] = []

    def opener(device, on_block, on_end):
        streams.append(_Stream(device, on_block, on_end))
        return streams[-1]

    seconds = sum(b.shape[0] for b in blocks) / RATE
    cap = AudioCapture("system", system=DEVICE, chunk_bytes=chunk_bytes, opener=opener,
                       buffer_seconds=2.0, stall_timeout=seconds + 60)
    await cap.start()
    source = cap._sources[0]
    loop = asyncio.get_running_loop()

    callback_cpu = [0.0]

    def feed() -> None:
        on_block = streams[0].on_block
        for block in blocks:
            t0 = time.thread_time()
            on_block(block, False)
            callback_cpu[0] += time.thread_time() - t0
            wait_until(lambda: not source.wake_pending)
        loop.call_soon_threadsafe(lambda: asyncio.ensure_future(cap.stop()))

    framed = 0
    start = time.thread_time()
    feeder = threading.Thread(target=feed)
    feeder.start()
    async for chunk in cap.chunks():
        framed += len(frame(encode(AudioAppend(chunk))))
    cpu = time.thread_time() - start + callback_cpu[0]
    feeder.join()
    if cap.dropped_frames or cap.dropped_chunks:
        raise SystemExit(f"pipeline dropped audio ({cap.dropped_frames} frames)")
    return cpu, framed


def run_baseline(blocks: list[np.ndarray], chunk_bytes: int) -> tuple[float, int]:
    """The naive way, with the same feeder thread and the same frames at the end."""
    q: queue.Queue[np.ndarray | None] = queue.Queue()
    taken = [0]

    callback_cpu = [0.0]

    def feed() -> None:
        for i, block in enumerate(blocks):
            t0 = time.thread_time()
            q.put(block.copy())
            callback_cpu[0] += time.thread_time() - t0
            wait_until(lambda i=i: taken[0] > i)
        q.put(None)

    framed = 0
    buffer = np.zeros(0, dtype=np.int16)
    samples_per_chunk = chunk_bytes // 2
    start = time.thread_time()
    feeder = threading.Thread(target=feed)
    feeder.start()
    while (block := q.get()) is not None:
        taken[0] += 1
        mono = block.mean(axis=1)
        resampled = signal.resample_poly(mono, 1, 3)
        pcm = np.clip(resampled * 32767, -32768, 32767).astype(np.int16)
        buffer = np.append(buffer, pcm)
        while buffer.size >= samples_per_chunk:
            chunk, buffer = buffer[:samples_per_chunk], buffer[samples_per_chunk:]
            text = json.dumps({"type": "input_audio_buffer.append",
                               "audio": base64.b64encode(chunk.tobytes()).decode("ascii")})
            framed += len(frame(text))
    cpu = time.thread_time() - start + callback_cpu[0]
    feeder.join()
    return cpu, framed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="audio per run")
    parser.add_argument("--block-ms", type=float, nargs="+", default=[10.0, 32.0],
                        help="PortAudio block duration(s) to try")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best kept)")
    args = parser.parse_args()

    print(f"{args.seconds:.0f} s of 48 kHz stereo per run, best of {args.repeat}; "
          "CPU ms per audio second (target ≤ 1.0)")
    print(f"{'block':>6} {'chunk':>6} {'pipeline':>9} {'baseline':>9} {'ratio':>6} {'frames/s':>9}")
    for block_ms in args.block_ms:
        blocks = make_blocks(args.seconds, int(RATE * block_ms / 1000))
        for chunk_bytes in CHUNK_SIZES:
            ours = min(asyncio.run(run_pipeline(blocks, chunk_bytes))[0]
                       for _ in range(args.repeat))
            naive = min(run_baseline(blocks, chunk_bytes)[0] for _ in range(args.repeat))
            per_s = 1000 / args.seconds
            print(f"{block_ms:>4.0f}ms {chunk_bytes:>6} {ours * per_s:>9.3f} {naive * per_s:>9.3f} "
                  f"{naive / ours:>6.1f} {32_000 / chunk_bytes:>9.2f}")


if __name__ == "__main__":
    main()
