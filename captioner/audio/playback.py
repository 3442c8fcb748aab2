"""Play spoken replies on a chosen output device, starting on the first chunk.

PCM s16le arrives in bursts from the network. :class:`Player` resamples it with
soxr (the server's 24 kHz → the device's rate) on the asyncio side and writes it
into a preallocated ring buffer; PortAudio's callback only copies from the ring
(no allocation of sample buffers, no locks, no logging).

Jitter buffer: a reply is scheduled to start at a point on the device's clock,
not when the ring holds some amount. The callback tracks the device clock as
the lower envelope of its requests (``frames requested − rate·t``) and how far
above it the device reads ahead (PortAudio through ALSA's ``pulse`` plugin asks
for a whole 30 ms period at once; measured, not assumed). Audio arriving at
wall time *t* can be played without a gap from device time *t* + read-ahead +
the resampler's look-ahead (samples soxr holds until later input arrives) +
``prebuffer_ms`` of network jitter, so that is where the first sample goes;
the callback may start it inside a block, after a few ms of silence. Starting
earlier (as soon as one chunk is in the ring) runs dry when the next chunk of a
server paced at exactly real time arrives a fraction of a ms after the
device's next period request. When the ring does run dry mid-reply that is an
underrun: counted, silence played, and the next start scheduled with twice the
jitter allowance (up to 4×, for the rest of the reply).

Adaptive playout rate (:mod:`captioner.audio.playout`): that small start-up allowance
is grown while the reply plays instead of before it starts. At each arrival the
producer measures the margin: how far the audio written so far reaches past the
device's clock plus its read-ahead (what the allowance was at the start; jitter and
a server slower than the device shrink it). Below ``margin_ms`` the controller
stretches the audio by up to ``max_stretch`` (3 %: half a semitone, far less than
the pitch movements of ordinary intonation, and a tempo change nobody hears; enough
to build 20 ms of margin in under a second or to absorb a 1 % slow server three times
over), gliding in and out; above it, audio plays at its own rate, bit for bit. The
stretch is applied after soxr, on the producer side, so the callback is unchanged.
At the end of a reply nothing is stretched: what is buffered plays out.

The ring is single-producer/single-consumer: the producer only advances
``_written``, the callback only advances ``_read``; each reads the other's
counter, which the GIL makes atomic.

:class:`WavSink` takes the same calls and writes a WAV file instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import sys
import time
import wave
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import sounddevice as sd
import soxr

from captioner.audio.devices import list_devices, pulse_sink
from captioner.audio.errors import AudioError
from captioner.audio.playout import PlayoutController, Stretcher
from captioner.audio.reply_cancel import PlayedAudio
from captioner.audio.streams import off_loop

log = logging.getLogger(__name__)

# How fast the device-clock estimate may rise on its own (fraction of the rate): covers
# a device clock a little faster than time.monotonic, and recovery after a stall.
_CLOCK_SLEW = 0.0005
STALL_SECONDS = 2.0  # a reply's output asking for nothing this long has gone away


class PlaybackError(AudioError, RuntimeError):
    """The output device cannot be found or opened, or went away while open; ``str()``
    says which and why."""


@dataclass(frozen=True, slots=True)
class OutputDevice:
    index: int  # what the user types; PortAudio's device number unless ``open_index`` is set
    name: str
    hostapi: str
    default_samplerate: float
    channels: int
    pulse_name: str | None = None  # the PulseAudio sink it plays into, when one …
    open_index: int | None = None  # … through this PortAudio device (ALSA's "pulse")

    @property
    def device_index(self) -> int:
        """PortAudio's device to open."""
        return self.index if self.open_index is None else self.open_index


def list_output_devices() -> list[OutputDevice]:
    """Devices that can play sound, in PortAudio's order; on Linux each PulseAudio sink
    (a headset, a virtual microphone's sink) in place of ALSA's "pulse" and "default",
    which only reach the default sink."""
    return _with_pulse_sinks(_portaudio_outputs())


def _with_pulse_sinks(outputs: list[OutputDevice]) -> list[OutputDevice]:
    if not sys.platform.startswith("linux"):
        return outputs
    try:
        sinks = [d for d in list_devices() if d.kind == "output" and d.pulse_name]
    except (sd.PortAudioError, OSError, ValueError) as exc:
        log.debug("! PulseAudio sinks not listed: %s", exc)
        return outputs
    if not sinks:
        return outputs
    return [OutputDevice(d.index, d.title(), d.hostapi, d.default_samplerate, d.channels,
                         d.pulse_name, d.device_index) for d in sinks] + [
        d for d in outputs if d.name not in ("pulse", "default")]


def _portaudio_outputs() -> list[OutputDevice]:
    try:
        devices = sd.query_devices()
        hostapis = sd.query_hostapis()
    except sd.PortAudioError as exc:
        raise PlaybackError(f"cannot list audio devices: {exc}") from exc
    return [
        OutputDevice(
            index=i,
            name=d["name"],
            hostapi=hostapis[d["hostapi"]]["name"],
            default_samplerate=float(d["default_samplerate"]),
            channels=int(d["max_output_channels"]),
        )
        for i, d in enumerate(devices)
        if d["max_output_channels"] > 0
    ]


def resolve_output_device(spec: str | int | None) -> OutputDevice:
    """The device for an index, a name (exact, else the first containing it) or the default.

    Names are looked up among the listed devices first, then among PortAudio's own (a
    name saved before Pulse sinks were listed, such as "pulse", still opens)."""
    portaudio = _portaudio_outputs()
    if not portaudio:
        raise PlaybackError("no audio output device is available")
    if spec is None or spec == "":
        try:
            default = sd.default.device[1]
            index = default if default is not None and default >= 0 else sd.query_devices(
                kind="output")["index"]
        except (sd.PortAudioError, KeyError, TypeError) as exc:
            raise PlaybackError(f"no default audio output: {exc}") from exc
        return _by_index(portaudio, int(index))
    if isinstance(spec, str) and spec.strip().lstrip("-").isdigit():
        spec = int(spec)
    listed = _with_pulse_sinks(portaudio)
    every = listed + [d for d in portaudio if d not in listed]  # ALSA's "pulse", "default"
    if isinstance(spec, int):
        return _by_index(every, spec)
    wanted = spec.casefold()
    for match in (lambda d: d.name.casefold() == wanted, lambda d: wanted in d.name.casefold()):
        for dev in every:
            if match(dev):
                return dev
    raise PlaybackError(f"no audio output named {spec!r}; outputs: {_names(listed)}")


def _by_index(outputs: list[OutputDevice], index: int) -> OutputDevice:
    for dev in outputs:
        if dev.index == index:
            return dev
    raise PlaybackError(f"audio output #{index} does not exist; outputs: {_names(outputs)}")


def _names(outputs: list[OutputDevice]) -> str:
    return ", ".join(f"#{d.index} {d.name}" for d in outputs)


@dataclass(frozen=True, slots=True)
class PlaybackStats:
    underruns: int  # ring ran dry mid-reply (all replies so far)
    device_underflows: int  # PortAudio reported an output underflow
    first_write_at: float | None  # monotonic time of the reply's first write()
    ready_at: float | None  # monotonic time the prebuffer filled (or the reply ended)
    first_sample_at: float | None  # monotonic time the callback handed its first sample
    # when that sample is due on the device's clock (monotonic; add the device's fixed
    # output latency for when it sounds); after first_sample_at if it starts mid-block
    first_sample_due: float | None
    read_ahead: int  # frames the device requests ahead of its clock (its period)
    samples_played: int  # at the device rate, this reply
    device_rate: int
    # adaptive playout, this reply: frames added by stretching, the largest stretch used
    # (0.03 = 3 % slower) and the lowest margin seen after the start (ms; None: none)
    stretched_frames: int = 0
    max_stretch_used: float = 0.0
    min_margin_ms: float | None = None


class Player:
    """An open output stream plus a jitter buffer; one reply at a time.

    Call order per reply: ``start_reply(rate)``, ``await write(pcm)``…,
    ``finish_reply()``, ``await drained()``; ``cancel()`` at any time stops it.
    """

    def __init__(
        self,
        device: str | int | None = None,
        *,
        prebuffer_ms: float = 10.0,
        block_ms: float = 10.0,
        buffer_seconds: float = 20.0,
        latency: str | float = 0.1,  # device buffer, s: robust on busy machines
        on_underrun: Callable[[int], None] | None = None,
        warmup_timeout: float = 5.0,
        quality: str = "LQ",
        margin_ms: float = 30.0,
        max_stretch: float = 0.03,
        tap: PlayedAudio | None = None,
    ) -> None:
        """``on_underrun(total)`` runs on the event loop each time the ring runs dry.

        ``prebuffer_ms`` is the allowance for network jitter, on top of the device's
        read-ahead and the resampler's look-ahead. ``quality`` is soxr's: "LQ" is flat
        within 0.3 dB to 9 kHz with > 110 dB SNR at 24 kHz → 44.1 kHz, enough for
        speech, and holds back < 1 ms of audio where "HQ" holds 12 ms (pure latency).

        ``margin_ms`` is the jitter margin the playout controller builds up once a reply
        plays, by stretching it by at most ``max_stretch`` (0 turns the controller off).

        ``tap`` is told each block of reply audio and when the device plays it, so the
        captures can cancel the reply's echo (:mod:`captioner.audio.reply_cancel`).
        """
        self.device_spec = device
        self.tap = tap
        self.on_underrun = on_underrun
        self.warmup_timeout = warmup_timeout
        self.quality = quality
        self._warm = asyncio.Event()
        self._warm_target = 0
        self._measure_target = 0
        self._frames_requested = 0
        # The device clock, kept by the callback: frames requested so far (_dev_pos) and
        # the lower envelope of (_dev_pos − rate·t), allowed to rise by _CLOCK_SLEW.
        self._dev_pos = 0
        self._clock_c = math.inf
        self._clock_t = 0.0
        self._read_ahead = 0  # measured once warm; 0 = not yet
        self._read_ahead_cap = 0
        self._start_pos: int | None = None  # device frame where the next start goes
        self._first_sample_due: float | None = None
        self.prebuffer_ms = prebuffer_ms
        self.block_ms = block_ms
        self.buffer_seconds = buffer_seconds
        self.latency = latency
        self.device: OutputDevice | None = None
        self.rate = 0
        self._stream: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ring = np.zeros(0, dtype=np.float32)
        self._written = 0  # producer-owned
        self._read = 0  # callback-owned
        self._prebuffer = 0
        self._playing = False
        self._ended = False  # no more audio for this reply
        self._discard_until = 0  # producer asks the callback to skip audio before this
        self._space_wanted = 0
        self._space = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()
        self._drain_signalled = True
        self._resampler: Any = None
        self._in_rate = 0
        self._reply = 0
        self._underruns = 0
        self._device_underflows = 0
        self._first_write_at: float | None = None
        self._reply_underruns_start = 0
        self._ready_at: float | None = None
        self._first_sample_at: float | None = None
        self._reply_read_start = 0
        # device frame of ring index 0 while playing: set by the callback at each start
        self._ring_to_dev = 0
        self._controller = PlayoutController(target_ms=margin_ms, max_stretch=max_stretch)
        self._stretcher = Stretcher()
        self._stretched = 0
        self._max_stretch_used = 0.0
        self._min_margin: float | None = None
        self._last_request = 0.0  # time.monotonic() of the device's last request
        self._closing = False
        self._watch: asyncio.TimerHandle | None = None
        self.failure: str | None = None  # why the output went away while open

    # --- lifecycle -------------------------------------------------------------

    async def open(self) -> None:
        """Find the device and start its stream (silence until a reply arrives)."""
        if self._stream is not None:
            return
        self._loop = asyncio.get_running_loop()
        self.device = resolve_output_device(self.device_spec)
        self.rate = int(self.device.default_samplerate) or 48_000
        self._ring = np.zeros(max(1, int(self.rate * self.buffer_seconds)), dtype=np.float32)
        self._prebuffer = int(self.rate * self.prebuffer_ms / 1000)
        try:
            with pulse_sink(self.device.pulse_name):
                self._stream = sd.OutputStream(
                    samplerate=self.rate,
                    device=self.device.device_index,
                    channels=1,
                    dtype="float32",
                    blocksize=max(1, int(self.rate * self.block_ms / 1000)),
                    latency=self.latency,
                    callback=self._callback,
                    finished_callback=self._finished,
                )
            device_buffer = int(self._stream.latency * self.rate)
            self._read_ahead_cap = device_buffer + self._stream.blocksize
            # Warm once the device buffer has been filled (one large first request);
            # then watch two buffers' worth of requests to measure the read-ahead.
            self._warm_target = device_buffer + 5 * self._stream.blocksize
            self._measure_target = self._warm_target + 2 * device_buffer
            self._closing, self.failure = False, None
            self._last_request = time.monotonic()
            self._stream.start()
        except (sd.PortAudioError, ValueError) as exc:
            self._stream = None
            raise PlaybackError(f"cannot open audio output {self.device.name!r}: {exc}") from exc
        # Some outputs (PulseAudio through ALSA) take a second or two before they really
        # consume audio; wait here so the first reply does not pay for it.
        try:
            await asyncio.wait_for(self._warm.wait(), self.warmup_timeout)
        except TimeoutError:
            log.warning("! %s is slow to start playing", self.device.name)
        log.info("= playing on #%d %s at %d Hz", self.device.index, self.device.name, self.rate)
        self._arm_watch()

    async def close(self) -> None:
        """Stop the stream (off the event loop: on a gone device that can take a
        minute); idempotent."""
        stream, self._stream = self._stream, None
        self._closing = True
        if self._watch is not None:
            self._watch.cancel()
        if stream is not None:
            gone = self.failure is not None

            def shut() -> None:
                if gone:
                    stream.abort(ignore_errors=True)
                else:
                    stream.stop(ignore_errors=True)
                stream.close(ignore_errors=True)

            await off_loop(shut, "closing the audio output")
        self._ended = True
        self._drained.set()
        self._space.set()

    # --- an output that goes away -------------------------------------------------

    def _finished(self) -> None:
        """PortAudio's thread: the stream ended; unasked, the device went away."""
        loop = self._loop
        if not self._closing and loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(self._gone, "the output stream stopped by itself")

    def _arm_watch(self) -> None:
        assert self._loop is not None
        self._watch = self._loop.call_later(STALL_SECONDS / 2, self._check)

    def _check(self) -> None:
        """A reply playing on a device that asks for nothing (suspended, gone)."""
        if self._stream is None:
            return
        silent = time.monotonic() - self._last_request
        if not self._drained.is_set() and silent > STALL_SECONDS:
            self._gone(f"the output asked for no audio for {silent:.1f} s")
        self._arm_watch()

    def _gone(self, reason: str) -> None:
        if self.failure is not None or self._stream is None:
            return
        name = self.device.name if self.device is not None else "the audio output"
        self.failure = f"{name!r} went away ({reason})"
        log.warning("! audio output %s", self.failure)
        self.cancel()

    def _raise_if_gone(self) -> None:
        if self.failure is not None:
            raise PlaybackError(f"the audio output {self.failure}")

    # --- one reply -------------------------------------------------------------

    def start_reply(self, sample_rate: int) -> None:
        """Begin a reply whose PCM is at ``sample_rate``; drops what is left of the last one."""
        if self._stream is None:
            raise PlaybackError("the output is not open")
        self._raise_if_gone()
        self.cancel()
        self._reply += 1
        self._in_rate = sample_rate
        self._resampler = soxr.ResampleStream(sample_rate, self.rate, 1, dtype="float32",
                                              quality=self.quality)
        self._first_write_at = None
        self._reply_underruns_start = self._underruns
        self._ready_at = None
        self._first_sample_at = None
        self._first_sample_due = None
        self._reply_read_start = self._written
        self._controller.reset()
        self._stretcher = Stretcher()
        self._stretched = 0
        self._max_stretch_used = 0.0
        self._min_margin = None
        self._drained.clear()
        self._drain_signalled = False
        self._ended = False

    def set_input_rate(self, sample_rate: int) -> None:
        """A sentence announced another rate: flush the resampler and switch."""
        if sample_rate == self._in_rate or self._resampler is None:
            return
        self._put(self._stretch(self._resampler.resample_chunk(np.zeros(0, np.float32),
                                                               last=True)))
        self._in_rate = sample_rate
        self._resampler = soxr.ResampleStream(sample_rate, self.rate, 1, dtype="float32",
                                              quality=self.quality)

    async def write(self, pcm: bytes) -> None:
        """Queue PCM s16le mono; waits only when the ring is full (network ahead of playback).

        Raises PlaybackError once the output has gone away (also while waiting), so the
        caller stops fetching a reply nobody can hear."""
        self._raise_if_gone()
        if self._resampler is None or self._ended:
            return
        if self._first_write_at is None:
            self._first_write_at = time.monotonic()
        samples = np.frombuffer(pcm, dtype="<i2", count=len(pcm) // 2).astype(np.float32)
        samples *= 1.0 / 32768.0
        margin = self._margin_ms()
        if margin is not None and (self._min_margin is None or margin < self._min_margin):
            self._min_margin = margin
        self._controller.update(time.monotonic(), margin)
        out = self._stretch(self._resampler.resample_chunk(samples))
        reply = self._reply
        await self._put_async(out)
        self._raise_if_gone()
        if reply == self._reply and self._resampler is not None:
            self._schedule(math.ceil(self._resampler.delay() + self._stretcher.held_back))

    def finish_reply(self) -> None:
        """No more audio for this reply: play what is buffered, even below the prebuffer."""
        if self._resampler is not None and not self._ended:
            tail = self._resampler.resample_chunk(np.zeros(0, np.float32), last=True)
            self._put(self._stretch(tail, last=True))
            self._schedule(0)
        self._resampler = None
        self._ended = True
        if self._ready_at is None:
            self._ready_at = time.monotonic()
        if self._stream is None:
            self._drained.set()

    async def drained(self) -> None:
        """Wait until the reply's last sample has been played (handed over + device latency)."""
        await self._drained.wait()

    def cancel(self) -> None:
        """Stop the current reply now: drop buffered audio, wake waiting writers."""
        self._reply += 1
        self._resampler = None
        self._ended = True
        self._discard_until = self._written
        self._start_pos = None
        if self._stream is None or not self._stream.active:
            self._read = self._written
        self._drained.set()
        self._space.set()

    def stats(self) -> PlaybackStats:
        return PlaybackStats(
            underruns=self._underruns,
            device_underflows=self._device_underflows,
            first_write_at=self._first_write_at,
            ready_at=self._ready_at,
            first_sample_at=self._first_sample_at,
            first_sample_due=self._first_sample_due,
            read_ahead=self._read_ahead or self._read_ahead_cap,
            samples_played=self._read - self._reply_read_start,
            device_rate=self.rate,
            stretched_frames=self._stretched,
            max_stretch_used=self._max_stretch_used,
            min_margin_ms=self._min_margin,
        )

    # --- adaptive playout --------------------------------------------------------

    def _margin_ms(self) -> float | None:
        """How far the audio written so far reaches past the device's next requests.

        The device position of everything written, minus its clock now and its
        read-ahead: the jitter allowance left (None when not playing).
        """
        if not self._playing or self._ended or math.isinf(self._clock_c):
            return None
        end = self._written + self._ring_to_dev
        device_now = self.rate * time.monotonic() + self._clock_c
        read_ahead = self._read_ahead or self._read_ahead_cap
        return (end - device_now - read_ahead) * 1000.0 / self.rate

    def _stretch(self, out: np.ndarray, *, last: bool = False) -> np.ndarray:
        """Pass resampled audio through the stretcher at the controller's current ratio."""
        stretch = 0.0 if last else self._controller.stretch
        if self._max_stretch_used == 0.0 and stretch == 0.0:
            return out  # nominal so far: the stretcher would copy; skip its 2-sample delay
        if stretch > self._max_stretch_used:
            self._max_stretch_used = stretch
        stretched = self._stretcher.process(out, stretch, last=last)
        self._stretched += len(stretched) - len(out)
        return stretched

    # --- producer side of the ring ---------------------------------------------

    async def _put_async(self, out: np.ndarray) -> None:
        reply = self._reply
        size = len(self._ring)
        start = 0
        while start < len(out):
            n = min(len(out) - start, size // 2)
            while size - (self._written - self._read) < n:
                self._space.clear()
                self._space_wanted = n
                if size - (self._written - self._read) >= n:
                    break
                await self._space.wait()
                if reply != self._reply or self._stream is None:
                    return  # cancelled while waiting
            self._space_wanted = 0
            self._put(out[start:start + n])
            start += n

    def _put(self, out: np.ndarray) -> None:
        """Copy into the ring; the caller made sure it fits."""
        n = len(out)
        if n == 0:
            return
        size = len(self._ring)
        n = min(n, size - (self._written - self._read))
        pos = self._written % size
        first = min(n, size - pos)
        self._ring[pos:pos + first] = out[:first]
        self._ring[:n - first] = out[first:n]
        self._written += n

    def _schedule(self, held_back: int) -> None:
        """If stopped with audio in the ring, place the start on the device's clock.

        Audio written now can play without a gap from device time now + the device's
        read-ahead + ``held_back`` (frames the resampler still holds) + the jitter
        allowance, doubled by each underrun in this reply (up to 4×).
        """
        if self._playing or self._start_pos is not None or self._written == self._read:
            return
        if self._stream is None or math.isinf(self._clock_c):
            return
        grow = min(self._underruns - self._reply_underruns_start, 2)
        read_ahead = self._read_ahead or self._read_ahead_cap
        lead = read_ahead + held_back + (self._prebuffer << grow)
        now = time.monotonic()
        self._start_pos = math.ceil(self.rate * now + self._clock_c + lead)
        if self._ready_at is None:
            self._ready_at = now

    # --- consumer side: PortAudio's thread ---------------------------------------

    def _callback(self, outdata: np.ndarray, frames: int, _time: Any, status: Any) -> None:
        now = self._last_request = time.monotonic()
        if status.output_underflow:
            self._device_underflows += 1
        # The device clock: the lower envelope of requests, and the read-ahead above it.
        pos = self._dev_pos
        clock = min(pos - self.rate * now,
                    self._clock_c + _CLOCK_SLEW * self.rate * (now - self._clock_t))
        self._clock_c, self._clock_t = clock, now
        self._dev_pos = pos + frames
        self._frames_requested += frames
        if self._warm_target and self._frames_requested >= self._warm_target:
            self._warm_target = 0
            self._clock_c = math.inf  # restart the envelope after the first large request
        elif not self._warm_target:
            ahead = min(pos + frames - self.rate * now - clock, self._read_ahead_cap)
            if ahead > self._read_ahead:
                self._read_ahead = math.ceil(ahead)
            if self._measure_target and self._frames_requested >= self._measure_target:
                self._measure_target = 0
                if self._loop is not None:
                    self._loop.call_soon_threadsafe(self._warm.set)
        if self._read < self._discard_until:
            self._read = self._discard_until
            self._playing = False
        avail = self._written - self._read
        offset = 0
        if not self._playing:
            start = self._start_pos
            if start is not None and start < pos + frames and avail > 0:
                offset = max(0, start - pos)
                self._ring_to_dev = pos + offset - self._read
                self._playing = True
                self._start_pos = None
        n = min(avail, frames - offset) if self._playing else 0
        if offset:
            outdata[:offset].fill(0)
        if n:
            size = len(self._ring)
            read = self._read % size
            first = min(n, size - read)
            outdata[offset:offset + first, 0] = self._ring[read:read + first]
            if first < n:
                outdata[offset + first:offset + n, 0] = self._ring[:n - first]
            if self._first_sample_at is None:
                self._first_sample_at = now
                self._first_sample_due = (pos + offset - clock) / self.rate
            self._read += n
        if offset + n < frames:
            outdata[offset + n:].fill(0)
            if self._playing and not self._ended:
                self._underruns += 1
                self._playing = False  # the next write schedules a later start
                if self.on_underrun is not None and self._loop is not None:
                    self._loop.call_soon_threadsafe(self.on_underrun, self._underruns)
        if n and self.tap is not None:
            self.tap.played(outdata[:, 0], self.rate, (pos - clock) / self.rate)
        loop = self._loop
        if loop is None:
            return
        if self._space_wanted and len(self._ring) - (self._written - self._read) >= (
            self._space_wanted
        ):
            self._space_wanted = 0
            loop.call_soon_threadsafe(self._space.set)
        if self._ended and not self._drain_signalled and self._written == self._read:
            self._drain_signalled = True
            self._playing = False
            loop.call_soon_threadsafe(self._drain_after, (offset + n) / self.rate)

    def _drain_after(self, block_seconds: float) -> None:
        """On the loop: the last sample left the ring; it sounds after the device's latency."""
        stream = self._stream
        delay = (stream.latency if stream is not None else 0.0) + block_seconds
        asyncio.get_running_loop().call_later(delay, self._drained.set)


class WavSink:
    """Writes replies to a WAV file (mono s16le at the first reply's rate) instead of playing."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.failure: str | None = None  # a file does not go away
        self._wav: wave.Wave_write | None = None
        self._rate = 0
        self.bytes_written = 0

    async def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def start_reply(self, sample_rate: int) -> None:
        if self._wav is None:
            self._wav = wave.open(str(self.path), "wb")  # noqa: SIM115 - open across replies
            self._wav.setnchannels(1)
            self._wav.setsampwidth(2)
            self._wav.setframerate(sample_rate)
            self._rate = sample_rate
        elif sample_rate != self._rate:
            log.warning("! %s: reply at %d Hz written into a %d Hz file", self.path,
                        sample_rate, self._rate)

    def set_input_rate(self, sample_rate: int) -> None:
        self.start_reply(sample_rate)

    async def write(self, pcm: bytes) -> None:
        if self._wav is not None:
            self._wav.writeframes(pcm)
            self.bytes_written += len(pcm)

    def finish_reply(self) -> None:
        pass

    async def drained(self) -> None:
        return None

    def cancel(self) -> None:
        pass

    async def close(self) -> None:
        if self._wav is not None:
            self._wav.close()
            self._wav = None
