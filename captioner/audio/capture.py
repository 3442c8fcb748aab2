"""Live capture of the microphone, system audio, or both mixed, as PCM16 chunks.

Threading: PortAudio calls :meth:`_Source.on_block` on its own thread. That
callback never blocks: it downmixes and resamples the block to 16 kHz (soxr,
tens of microseconds), copies the result into a preallocated single-producer/
single-consumer ring, and schedules a wake-up on the asyncio loop with
``call_soon_threadsafe`` exactly when the ring completes the next chunk
(``wake_at``, in 16 kHz samples, set by the loop after each drain). Resampling
here rather than on the loop is what makes that moment exact: soxr releases its
output in lumps of ~30 ms, which the loop could only guess at (waking too early
costs a second wake-up, too late holds every word back). Waking the loop per
PortAudio block (~10 ms) would cost far more CPU and gain no latency, since
nothing leaves before a chunk is full. A full ring drops the block and counts it
(``dropped_frames``); the loop side logs the count, so an overflow is never
silent. Mixing, PCM16 and chunking run on the loop, once per chunk (see
bench/bench_pipeline.py; bench/bench_latency.py times every stage).

``both`` resamples each source on its own and mixes them in the 16 kHz domain,
aligned by sample count. The two streams rarely start together (Pulse can take
half a second to wake an idle source), so the count only starts once both have
delivered: until then the one that runs goes on alone (held back at most
``max_lag_seconds``) and nothing is owed by the other. When the late one's
first samples arrive, the two are lined up by their newest samples (both were
captured about now); the late starter's own audio is never dropped for that (a
first lump longer than what the other still holds is mixed in a little late
instead). Once both run, if one lags more than ``max_lag_seconds`` behind (a
stalled device), the other goes on alone (the laggard counts as silence) and the
same number of the laggard's late samples is skipped when they arrive, so the
two stay aligned and a dead source never stalls the live one.

Failures end :meth:`AudioCapture.chunks` with :class:`CaptureError`: a stream
that ends by itself, or one that delivers nothing for ``stall_timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import enum
import itertools
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Literal

import numpy as np

from captioner.audio.chunker import DEFAULT_CHUNK_BYTES, Chunker
from captioner.audio.devices import AudioDevice, DeviceKind, find_device, list_devices
from captioner.audio.errors import CaptureError, DeviceNotFound
from captioner.audio.resample import TARGET_RATE, Resampler, rms_dbfs, to_pcm16
from captioner.audio.streams import InputStream, StreamOpener, off_loop, open_input
from captioner.settings import AudioSettings

log = logging.getLogger(__name__)

Mode = Literal["mic", "system", "both"]
ChunkFilter = Callable[[bytes, float], bytes]  # (chunk, time.monotonic()) → chunk
LEVEL_FLOOR_DBFS = -100.0
_DROP_LOG_INTERVAL = 5.0  # seconds between repeated overflow warnings of one source


# s between tries to open a device that went away: the first soon, so a stand-in opens
# while little is missed (an unplugged device can stay listed for a moment)
REOPEN_DELAYS = (0.1, 0.5, 1.0, 2.0, 3.0)
# a device that opens this soon after a loss carries on the same session, so a phrase
# said across the loss is read whole; one that opens later starts a new session
RECOVER_SECONDS = 1.0


def reopen_delays() -> Iterator[float]:
    """How long to wait before each next try: soon at first (a sound server restarting,
    a headset reconnecting), then every few seconds for as long as it takes."""
    yield from REOPEN_DELAYS
    yield from itertools.repeat(REOPEN_DELAYS[-1])


def _picked(audio: AudioSettings) -> list[tuple[DeviceKind, str]]:
    """The devices picked in Settings that ``audio`` captures (not the defaults)."""
    picked: list[tuple[DeviceKind, str]] = []
    if audio.source in ("mic", "both") and audio.mic_device:
        picked.append(("mic", audio.mic_device))
    if audio.source in ("system", "both") and audio.system_device:
        picked.append(("system", audio.system_device))
    return picked


def stand_in(audio: AudioSettings, missing: Sequence[str]) -> AudioSettings | None:
    """``audio`` with the default device in place of each picked one in ``missing`` (a
    call's microphone stays when only its system-audio device went); None when none
    of them was picked (a default is what failed)."""
    if not any(spec in missing for _kind, spec in _picked(audio)):
        return None
    return dataclasses.replace(
        audio, mic_device=None if audio.mic_device in missing else audio.mic_device,
        system_device=None if audio.system_device in missing else audio.system_device)


def missing_devices(audio: AudioSettings) -> list[str]:
    """The picked devices of ``audio`` that this computer does not list now."""
    devices = list_devices()
    missing = []
    for kind, spec in _picked(audio):
        try:
            find_device(devices, kind, spec)
        except DeviceNotFound:
            missing.append(spec)
    return missing


class State(enum.Enum):
    IDLE = "idle"
    RUNNING = "running"
    STOPPED = "stopped"
    FAILED = "failed"


class FrameRing:
    """Preallocated float32 ring (frames × channels), one writer thread, one reader.

    ``written``/``read`` only ever grow and each is assigned by one side only,
    after the data it covers is in place, so no lock is needed under the GIL.
    """

    def __init__(self, capacity: int, channels: int):
        if capacity < 1:
            raise ValueError("ring capacity must be at least one frame")
        self.capacity = capacity
        self._data = np.zeros((capacity, channels), dtype=np.float32)
        self.written = 0
        self.read = 0

    def write(self, block: np.ndarray) -> bool:
        """Copy ``block`` in; False (nothing written) if it does not fit."""
        n = block.shape[0]
        if n > self.capacity - (self.written - self.read):
            return False
        start = self.written % self.capacity
        first = min(n, self.capacity - start)
        self._data[start:start + first] = block[:first]
        if first < n:
            self._data[:n - first] = block[first:]
        self.written += n
        return True

    def segments(self) -> tuple[list[np.ndarray], int]:
        """Views of everything readable (one or two pieces) and their frame count.

        The views stay valid until :meth:`release` is called with that count.
        """
        avail = self.written - self.read
        if not avail:
            return [], 0
        start = self.read % self.capacity
        first = min(avail, self.capacity - start)
        parts = [self._data[start:start + first]]
        if first < avail:
            parts.append(self._data[:avail - first])
        return parts, avail

    def release(self, frames: int) -> None:
        self.read += frames


class SampleFifo:
    """Growable float32 FIFO of 16 kHz samples (used to align the two sources)."""

    def __init__(self, capacity: int = TARGET_RATE):
        self._data = np.zeros(capacity, dtype=np.float32)
        self._len = 0
        self.skip = 0  # samples owed: filled with silence earlier, drop on arrival
        self.pushed = 0  # samples ever kept (0: the source has not delivered yet)

    def __len__(self) -> int:
        return self._len

    def push(self, samples: np.ndarray) -> None:
        if self.skip:
            dropped = min(self.skip, samples.shape[0])
            samples = samples[dropped:]
            self.skip -= dropped
        n = samples.shape[0]
        if not n:
            return
        self._reserve(self._len + n)
        self._data[self._len:self._len + n] = samples
        self._len += n
        self.pushed += n

    def pad_front(self, n: int) -> None:
        """Put ``n`` samples of silence before what the FIFO holds."""
        if n <= 0:
            return
        self._reserve(self._len + n)
        self._data[n:n + self._len] = self._data[:self._len].copy()
        self._data[:n] = 0.0
        self._len += n

    def _reserve(self, size: int) -> None:
        if size > self._data.shape[0]:
            grown = np.zeros(max(size, 2 * self._data.shape[0]), dtype=np.float32)
            grown[:self._len] = self._data[:self._len]
            self._data = grown

    def peek(self, n: int) -> np.ndarray:
        """A view of the first ``n`` samples, valid until the next push/discard."""
        return self._data[:n]

    def discard(self, n: int) -> None:
        if n < self._len:
            self._data[:self._len - n] = self._data[n:self._len]
        self._len -= n


class _Source:
    """One device: its stream, ring, resampler and counters."""

    def __init__(self, role: DeviceKind, device: AudioDevice, gain: float,
                 pump: Callable[[_Source], None]):
        self.role = role
        self.pump = pump
        self.device = device
        self.gain = float(gain)
        self.stream: InputStream | None = None
        self.ring: FrameRing | None = None
        self.resampler: Resampler | None = None
        self.rate = 0.0
        self.fifo = SampleFifo()
        # single-source capture: samples go straight to PCM16 (gain applied there)
        self.direct: Callable[[np.ndarray, float], None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.wake_pending = False
        self.wake_at = 0  # ring frame count at which the callback wakes the loop
        self.open = False
        self.last_block = 0.0
        # written by the audio thread only
        self.dropped_frames = 0
        self.device_overflows = 0
        self.blocks = 0
        # loop side, for rate-limited logging
        self.reported_dropped = 0
        self.reported_overflows = 0
        self.last_drop_log = -math.inf

    def on_block(self, block: np.ndarray, overflowed: bool) -> None:
        """Audio thread: resample the block into the ring and wake the loop. Never blocks."""
        try:
            self.last_block = time.monotonic()
            self.blocks += 1
            if overflowed:
                self.device_overflows += 1
            ring, resampler = self.ring, self.resampler
            full = ring is None or resampler is None
            if not full:
                samples = resampler.process(block)  # type: ignore[union-attr]
                full = not ring.write(samples[:, None])  # type: ignore[union-attr]
            if full:
                self.dropped_frames += block.shape[0]
            if (not self.wake_pending and self.loop is not None
                    and (full or ring.written >= self.wake_at)):  # type: ignore[union-attr]
                self.wake_pending = True
                self.loop.call_soon_threadsafe(self.pump, self)
        except Exception:  # an exception must not escape into PortAudio
            self.wake_pending = False  # the loop is closing; nothing left to wake

    def drain(self) -> None:
        """Loop side: move whatever the ring holds on (to PCM16 or the mixing FIFO)."""
        self.wake_pending = False  # before reading, so a later block re-arms the wake-up
        ring = self.ring
        if ring is None:
            return
        parts, frames = ring.segments()
        for part in parts:
            self.push16(part[:, 0])
        ring.release(frames)

    def push16(self, samples: np.ndarray) -> None:
        if samples.shape[0]:
            if self.direct is not None:
                self.direct(samples, self.gain)
                return
            if self.gain != 1.0:
                samples = samples * np.float32(self.gain)
            self.fifo.push(samples)


class AudioCapture:
    """Capture ``mode`` ("mic", "system" or "both") as fixed-size 16 kHz PCM16 chunks.

    Usage::

        capture = AudioCapture("system")
        await capture.start()
        async for chunk in capture.chunks():   # ends after stop(); CaptureError on failure
            ...
        await capture.stop()

    Devices default to the system defaults of each kind. ``opener`` opens a raw
    stream (see :mod:`captioner.audio.streams`); tests pass their own. A stream
    that delivers nothing for ``stall_timeout`` seconds (``start_timeout`` before
    its first block) fails the capture. On Pulse, a source that disappears does
    not fail: Pulse moves the stream to the default source.
    """

    def __init__(
        self,
        mode: Mode = "system",
        mic: AudioDevice | None = None,
        system: AudioDevice | None = None,
        *,
        mic_gain: float = 1.0,
        system_gain: float = 1.0,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        buffer_seconds: float = 2.0,
        max_lag_seconds: float = 0.5,
        stall_timeout: float = 3.0,
        start_timeout: float = 10.0,
        max_pending_chunks: int | None = None,
        opener: StreamOpener = open_input,
        devices: Sequence[AudioDevice] | None = None,
        chunk_filter: ChunkFilter | None = None,
    ):
        """``chunk_filter(chunk, now)`` rewrites each chunk as it is captured (``now``:
        ``time.monotonic()`` as it leaves the device side), e.g. cancelling the app's own
        spoken replies (:class:`~captioner.audio.reply_cancel.ReplyCanceller`)."""
        if mode not in ("mic", "system", "both"):
            raise ValueError(f"capture mode must be mic, system or both (got {mode!r})")
        roles: list[tuple[DeviceKind, AudioDevice | None, float]] = []
        if mode in ("system", "both"):
            roles.append(("system", system, system_gain))
        if mode in ("mic", "both"):
            roles.append(("mic", mic, mic_gain))
        if any(dev is None for _, dev, _ in roles) and devices is None:
            devices = list_devices()
        self._sources = [
            _Source(role, dev if dev is not None else find_device(devices or [], role), gain,
                    self._pump)
            for role, dev, gain in roles
        ]
        if len(self._sources) == 1:
            self._sources[0].direct = self._emit_samples
        self.mode = mode
        self.chunk_bytes = chunk_bytes
        self._chunker = Chunker(chunk_bytes)
        self._buffer_seconds = buffer_seconds
        self._max_lag = int(max_lag_seconds * TARGET_RATE)
        self._stall_timeout = stall_timeout
        self._start_timeout = max(start_timeout, stall_timeout)
        if max_pending_chunks is None:  # ~10 s of audio waiting for a slow consumer
            max_pending_chunks = max(8, int(10 * TARGET_RATE * 2 / chunk_bytes))
        self._out: collections.deque[bytes] = collections.deque()
        self._max_pending = max_pending_chunks
        self._opener = opener
        self._chunk_filter = chunk_filter
        self._state = State.IDLE
        self._error: CaptureError | None = None
        self._ready: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        self._closer: asyncio.Task[None] | None = None
        self._aligned = False  # both sources delivered and lined up (see _align_start)
        self.dropped_chunks = 0
        self.level_dbfs = LEVEL_FLOOR_DBFS  # RMS of the latest chunk, for the level meter

    # --- public state -----------------------------------------------------

    @classmethod
    def from_settings(
        cls,
        audio: AudioSettings,
        devices: Sequence[AudioDevice] | None = None,
        opener: StreamOpener = open_input,
        chunk_filter: ChunkFilter | None = None,
    ) -> AudioCapture:
        """Build from ``Settings.audio`` (source, devices by name/index, gains, chunk size).

        Raises :class:`DeviceNotFound`, listing the real devices, if a name matches none.
        """
        devices = list(devices) if devices is not None else list_devices()
        mic = system = None
        if audio.source in ("mic", "both"):
            mic = find_device(devices, "mic", audio.mic_device)
        if audio.source in ("system", "both"):
            system = find_device(devices, "system", audio.system_device)
        return cls(
            audio.source, mic, system, mic_gain=audio.mic_gain, system_gain=audio.system_gain,
            chunk_bytes=audio.chunk_bytes, opener=opener, devices=devices,
            chunk_filter=chunk_filter,
        )

    @property
    def state(self) -> State:
        return self._state

    @property
    def devices(self) -> list[AudioDevice]:
        return [s.device for s in self._sources]

    @property
    def dropped_frames(self) -> int:
        """Device frames lost because the loop did not keep up (summed over sources)."""
        return sum(s.dropped_frames for s in self._sources)

    @property
    def device_overflows(self) -> int:
        """Blocks the audio driver itself flagged as overflowed."""
        return sum(s.device_overflows for s in self._sources)

    @property
    def error(self) -> CaptureError | None:
        return self._error

    def set_gains(self, mic: float, system: float) -> None:
        """New input gains, from the next block on: a running capture need not reopen."""
        for src in self._sources:
            src.gain = float(mic if src.role == "mic" else system)

    def discard_held(self) -> float:
        """Drop the chunks waiting to be read; the seconds dropped.

        A capture opened beside a running one (a device change) holds what it heard
        before the old one stopped, which the old one captioned already.
        """
        held = sum(len(chunk) for chunk in self._out) / 2 / TARGET_RATE
        self._out.clear()
        return held

    # --- life cycle -------------------------------------------------------

    async def start(self) -> None:
        """Open and start every stream. Raises :class:`CaptureError` if one cannot open."""
        if self._state is not State.IDLE:
            raise RuntimeError(f"capture already {self._state.value}")
        self._loop = asyncio.get_running_loop()
        self._ready = asyncio.Event()
        try:
            for src in self._sources:
                src.loop = self._loop
                stream = await asyncio.to_thread(self._opener, src.device, src.on_block,
                                                 lambda msg, s=src: self._ended(s, msg))
                src.stream = stream
                src.ring = FrameRing(max(1, int(TARGET_RATE * self._buffer_seconds)), 1)
                src.resampler = Resampler(stream.samplerate, stream.channels)
                src.rate = stream.samplerate
                src.open = True
                self._rearm(src)
            now = time.monotonic()
            for src in self._sources:
                src.last_block = now
                await asyncio.to_thread(src.stream.start)  # type: ignore[union-attr]
                log.info("= capturing %s from %r at %.0f Hz, %d ch", src.role, src.device.name,
                         src.stream.samplerate, src.stream.channels)  # type: ignore[union-attr]
        except BaseException as exc:
            await self._close_streams()
            self._state = State.FAILED
            self._error = exc if isinstance(exc, CaptureError) else CaptureError(str(exc))
            raise
        self._state = State.RUNNING
        self._arm_watchdog()

    async def stop(self) -> None:
        """Stop the streams, deliver what they captured (the last chunk may be short),
        and end :meth:`chunks`. Idempotent; after a failure it only releases the devices."""
        if self._state is State.FAILED:  # streams may still be closing after the failure
            if self._closer is not None:
                await self._closer
            await self._close_streams()
            return
        if self._state is not State.RUNNING:
            return
        self._state = State.STOPPED
        await self._close_streams()
        for src in self._sources:
            src.drain()
            if src.resampler is not None:
                src.push16(src.resampler.flush())
        self._mix(final=True)
        self._emit(self._chunker.flush())
        log.info("= capture stopped (%d dropped frames, %d dropped chunks)",
                 self.dropped_frames, self.dropped_chunks)
        self._set_ready()

    async def __aenter__(self) -> AudioCapture:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
        await self._close_streams()

    async def chunks(self) -> AsyncIterator[bytes]:
        """Chunks of ``chunk_bytes`` (the very last may be shorter) until :meth:`stop`.

        Raises :class:`CaptureError` (after the chunks captured before it) when a
        device fails or stalls.
        """
        if self._ready is None:
            raise RuntimeError("call start() before chunks()")
        while True:
            while self._out:
                yield self._out.popleft()
            if self._state is State.FAILED:
                if self._error is not None:
                    raise self._error
                return
            if self._state is State.STOPPED:
                return
            self._ready.clear()
            await self._ready.wait()

    # --- loop side ----------------------------------------------------------

    def _pump(self, src: _Source) -> None:
        if not src.open:
            src.wake_pending = False
            return
        src.drain()
        self._report_drops(src)
        self._mix(final=False)
        self._rearm(src)

    def _rearm(self, src: _Source) -> None:
        """Tell the callback how many more 16 kHz samples complete the next chunk."""
        ring = src.ring
        if ring is None:
            return
        missing = (self.chunk_bytes - self._chunker.pending) // 2 - len(src.fifo)
        src.wake_at = ring.read + min(max(missing, 1), ring.capacity // 2)

    def _mix(self, final: bool) -> None:
        sources = self._sources
        if len(sources) == 1:
            fifo = sources[0].fifo
            n = len(fifo)
            if n:
                self._emit_samples(fifo.peek(n))
                fifo.discard(n)
            return
        a, b = sources
        if not self._aligned and a.fifo.pushed and b.fifo.pushed:
            self._align_start(a, b)
        n = min(len(a.fifo), len(b.fifo))
        if n:
            self._emit_samples(a.fifo.peek(n) + b.fifo.peek(n))
            a.fifo.discard(n)
            b.fifo.discard(n)
        for lead, lag in ((a, b), (b, a)):
            excess = len(lead.fifo) - (0 if final else self._max_lag)
            if excess > 0:
                if not final:
                    log.debug("! %s lags %d samples behind; %s goes on alone", lag.role,
                              len(lead.fifo), lead.role)
                if self._aligned:  # a laggard that has not started yet owes nothing
                    lag.fifo.skip += excess
                self._emit_samples(lead.fifo.peek(excess))
                lead.fifo.discard(excess)

    def _align_start(self, a: _Source, b: _Source) -> None:
        """Both sources have delivered: line them up by their newest samples.

        Each FIFO ends with what its device captured last, i.e. about now, so
        the shorter one gets silence in front until both end together: the late
        starter comes in where it really began, and the early one's backlog
        leaves at once instead of holding every later word back. A late
        starter's first lump is never cut: if it reaches back before what the
        other still holds, it is mixed in that much later instead.
        """
        self._aligned = True
        short, long = (a, b) if len(a.fifo) <= len(b.fifo) else (b, a)
        gap = len(long.fifo) - len(short.fifo)
        short.fifo.pad_front(gap)
        log.info("= both sources deliver; %s lined up %.2f s behind %s's first held sample",
                 short.role, gap / TARGET_RATE, long.role)

    def _emit_samples(self, samples: np.ndarray, gain: float = 1.0) -> None:
        self._emit_many(self._chunker.feed(to_pcm16(samples, gain)))

    def _emit_many(self, chunks: list[bytes]) -> None:
        for chunk in chunks:
            self._emit(chunk)

    def _emit(self, chunk: bytes) -> None:
        if not chunk:
            return
        if self._chunk_filter is not None:
            chunk = self._chunk_filter(chunk, time.monotonic())
        if len(self._out) >= self._max_pending:
            self._out.popleft()  # the oldest is the least useful for live captions
            self.dropped_chunks += 1
            if self.dropped_chunks == 1 or self.dropped_chunks % 100 == 0:
                log.warning("! consumer too slow: %d chunks dropped so far", self.dropped_chunks)
        self._out.append(chunk)
        self.level_dbfs = rms_dbfs(chunk, LEVEL_FLOOR_DBFS)
        self._set_ready()

    def _report_drops(self, src: _Source) -> None:
        dropped, overflows = src.dropped_frames, src.device_overflows
        if dropped == src.reported_dropped and overflows == src.reported_overflows:
            return
        now = time.monotonic()
        if now - src.last_drop_log < _DROP_LOG_INTERVAL:
            return
        rate = src.rate
        log.warning(
            "! %s capture overflow: %d frames dropped (%.2f s) since last report, "
            "%d total; %d driver overflows",
            src.role, dropped - src.reported_dropped,
            (dropped - src.reported_dropped) / rate if rate else 0.0, dropped, overflows,
        )
        src.reported_dropped, src.reported_overflows = dropped, overflows
        src.last_drop_log = now

    def _ended(self, src: _Source, message: str) -> None:
        """Audio thread: the stream ended by itself."""
        loop = self._loop
        if loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            loop.call_soon_threadsafe(self._fail, CaptureError(f"{src.role} capture: {message}"))

    def _fail(self, error: CaptureError) -> None:
        if self._state is not State.RUNNING:
            return
        log.error("! %s", error)
        for src in self._sources:
            src.drain()
        self._mix(final=True)
        self._emit(self._chunker.flush())
        self._error = error
        self._state = State.FAILED
        if self._watchdog is not None:
            self._watchdog.cancel()
        assert self._loop is not None
        self._closer = self._loop.create_task(self._close_streams())
        self._set_ready()

    def _arm_watchdog(self) -> None:
        assert self._loop is not None
        self._watchdog = self._loop.call_later(min(0.5, self._stall_timeout / 2), self._check)

    def _check(self) -> None:
        if self._state is not State.RUNNING:
            return
        now = time.monotonic()
        for src in self._sources:
            silent = now - src.last_block
            # The first block may take a while: Pulse starts an idle sink's monitor slowly.
            limit = self._stall_timeout if src.blocks else self._start_timeout
            if silent > limit:
                self._fail(CaptureError(
                    f"{src.role} capture: no audio from {src.device.name!r} for {silent:.1f} s "
                    "(device unplugged or sound server gone?)"
                ))
                return
            self._report_drops(src)
        self._arm_watchdog()

    async def _close_streams(self) -> None:
        for src in self._sources:
            src.open = False
            stream, src.stream = src.stream, None
            if stream is not None:
                await off_loop(stream.close, f"closing the {src.role} capture")
                src.stream = None
        if self._watchdog is not None:
            self._watchdog.cancel()

    def _set_ready(self) -> None:
        if self._ready is not None:
            self._ready.set()
