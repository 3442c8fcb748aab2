"""CPU cost of the capture pipeline per second of audio, against a naive baseline.

Pipeline measured (the real code): PortAudio-style callback (downmix + soxr 48 kHz
stereo → 16 kHz mono, into the ring) → hand-off to the asyncio loop
(``call_soon_threadsafe``, once per chunk) → PCM16 → fixed-size chunks →
``encode(AudioAppend(chunk))`` → a masked WebSocket text frame. Defaults: the app's
block size and every offered chunk size. Synthetic 48 kHz stereo blocks are fed from a second
thread, as PortAudio would, but as fast as the pipeline takes them (no
real-time wait). As in real time, where the loop has ~10 ms between blocks, a
block that wakes the loop is processed before the next one arrives: the feeder
waits while a wake-up is pending. So the pipeline pays for every hand-off and
wake-up it would pay live, and the run never drops audio (checked at the end).

With ``--realtime`` the feeder sleeps between blocks as PortAudio would (one run of
``--seconds`` per figure, so keep it short): every hand-off then wakes a sleeping
thread, which on a virtual machine costs far more than the same hand-off back to back.

Floor in the same run: the same feeder and ring, and one loop wake-up per chunk's
worth of frames, but no work at all on the loop side. It is what any design that
hands PortAudio's blocks to an asyncio loop pays on this machine before doing
anything with the audio; the pipeline's own work is its figure minus the floor.

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

from captioner.audio.capture import AudioCapture, FrameRing
from captioner.audio.chunker import CHUNK_SIZES
from captioner.audio.devices import AudioDevice
from captioner.audio.resample import TARGET_RATE
from captioner.audio.streams import BLOCK_SECONDS
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


def feed(blocks: list[np.ndarray], on_block, consumed, realtime: bool) -> float:
    """Play PortAudio's part: hand each block over; returns the CPU time spent in the
    callback. Back to back, the next block waits until the last wake-up was served
    (``consumed``), as it would live, where the loop has ~30 ms between blocks; with
    ``realtime``, blocks arrive on the real-time clock instead."""
    cpu = 0.0
    start = time.monotonic()
    for i, block in enumerate(blocks):
        t0 = time.thread_time()
        on_block(block, False)
        cpu += time.thread_time() - t0
        if realtime:
            time.sleep(max(0.0, start + (i + 1) * block.shape[0] / RATE - time.monotonic()))
        else:
            wait_until(lambda i=i: consumed(i))
    return cpu


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


async def run_floor(blocks: list[np.ndarray], chunk_bytes: int, realtime: bool) -> float:
    """CPU seconds of the bare hand-off: ring write, one wake-up per chunk, no work."""
    loop = asyncio.get_running_loop()
    ring = FrameRing(2 * RATE, 2)
    per_chunk = chunk_bytes // 2 * (RATE // TARGET_RATE)  # device frames in one chunk
    state = {"wake_at": per_chunk, "pending": False, "wakes": 0}
    woken = asyncio.Event()
    finished = [False]

    def on_block(block: np.ndarray, overflowed: bool) -> None:
        ring.write(block)
        if not state["pending"] and ring.written >= state["wake_at"]:
            state["pending"] = True
            loop.call_soon_threadsafe(woken.set)

    def feeder() -> None:
        callback_cpu[0] = feed(blocks, on_block, lambda i: not state["pending"], realtime)
        finished[0] = True
        loop.call_soon_threadsafe(woken.set)

    callback_cpu = [0.0]
    start = time.thread_time()
    thread = threading.Thread(target=feeder)
    thread.start()
    while not finished[0]:
        await woken.wait()
        woken.clear()
        _, frames = ring.segments()
        ring.release(frames)
        state["wake_at"] = ring.read + per_chunk
        state["pending"] = False
        state["wakes"] += 1
    thread.join()
    return time.thread_time() - start + callback_cpu[0]


async def run_pipeline(blocks: list[np.ndarray], chunk_bytes: int,
                       realtime: bool = False) -> tuple[float, int]:
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

    def feeder() -> None:
        callback_cpu[0] = feed(blocks, streams[0].on_block,
                               lambda i: not source.wake_pending, realtime)
        loop.call_soon_threadsafe(lambda: asyncio.ensure_future(cap.stop()))

    framed = 0
    start = time.thread_time()
    thread = threading.Thread(target=feeder)
    thread.start()
    async for chunk in cap.chunks():
        framed += len(frame(encode(AudioAppend(chunk))))
    thread.join()
    cpu = time.thread_time() - start + callback_cpu[0]
    if cap.dropped_frames or cap.dropped_chunks:
        raise SystemExit(f"pipeline dropped audio ({cap.dropped_frames} frames)")
    return cpu, framed


def run_baseline(blocks: list[np.ndarray], chunk_bytes: int,
                 realtime: bool = False) -> tuple[float, int]:
    """The naive way, with the same feeder and the same frames at the end."""
    q: queue.Queue[np.ndarray | None] = queue.Queue()
    taken = [0]
    callback_cpu = [0.0]

    def feeder() -> None:
        callback_cpu[0] = feed(blocks, lambda block, _: q.put(block.copy()),
                               lambda i: taken[0] > i, realtime)
        q.put(None)

    framed = 0
    buffer = np.zeros(0, dtype=np.int16)
    samples_per_chunk = chunk_bytes // 2
    start = time.thread_time()
    thread = threading.Thread(target=feeder)
    thread.start()
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
    thread.join()
    return time.thread_time() - start + callback_cpu[0], framed


def best(repeat: int, run) -> float:
    return min(run() for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="audio per run")
    parser.add_argument("--block-ms", type=float, nargs="+", default=[BLOCK_SECONDS * 1000],
                        help="PortAudio block duration(s) to try")
    parser.add_argument("--chunk-bytes", type=int, nargs="+", default=list(CHUNK_SIZES))
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best kept)")
    parser.add_argument("--realtime", action="store_true",
                        help="blocks arrive on the real-time clock (each run takes --seconds)")
    args = parser.parse_args()

    pace = "real-time arrival" if args.realtime else "back to back"
    print(f"{args.seconds:.0f} s of 48 kHz stereo per run, {pace}, best of {args.repeat}; "
          "CPU ms per audio second (target ≤ 1.0)")
    print(f"{'block':>6} {'chunk':>6} {'pipeline':>9} {'floor':>7} {'work':>7} {'baseline':>9} "
          f"{'ratio':>6} {'frames/s':>9}")
    per_s = 1000 / args.seconds
    for block_ms in args.block_ms:
        blocks = make_blocks(args.seconds, int(RATE * block_ms / 1000))
        for chunk_bytes in args.chunk_bytes:
            run = (blocks, chunk_bytes, args.realtime)
            ours = best(args.repeat, lambda r=run: asyncio.run(run_pipeline(*r))[0]) * per_s
            floor = best(args.repeat, lambda r=run: asyncio.run(run_floor(*r))) * per_s
            naive = best(args.repeat, lambda r=run: run_baseline(*r)[0]) * per_s
            print(f"{block_ms:>4.0f}ms {chunk_bytes:>6} {ours:>9.3f} {floor:>7.3f} "
                  f"{ours - floor:>7.3f} {naive:>9.3f} {naive / ours:>6.1f} "
                  f"{32_000 / chunk_bytes:>9.2f}")


if __name__ == "__main__":
    main()
