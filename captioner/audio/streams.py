"""Opening one raw input stream on a device, whatever the backend.

A stream calls ``on_block(block, overflowed)`` on the audio thread with float32
frames × channels (valid only during the call) and ``on_end(message)`` if it
ends by itself (device unplugged, server gone). :class:`AudioCapture` is written
against :data:`StreamOpener`, so tests can drive it without hardware.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import sounddevice as sd

from captioner.audio.devices import AudioDevice, pulse_route
from captioner.audio.errors import CaptureError

log = logging.getLogger(__name__)

CLOSE_TIMEOUT = 5.0  # s a stream's close may take before the app goes on without it


async def off_loop(call: Callable[[], object], what: str,
                   timeout: float = CLOSE_TIMEOUT) -> None:
    """Run a blocking driver call (a stream's stop or close) off the event loop, waiting
    at most ``timeout``. On a device that went away such a call can block for a minute
    or for good: in a daemon thread it neither freezes the app nor keeps it from
    quitting."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def finished() -> None:
        if not done.done():
            done.set_result(None)

    def run() -> None:
        try:
            call()
        except Exception:
            log.debug("! %s failed", what, exc_info=True)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(finished)

    threading.Thread(target=run, name=what, daemon=True).start()
    try:
        await asyncio.wait_for(asyncio.shield(done), timeout)
    except TimeoutError:
        log.warning("! %s took over %.0f s; going on without it", what, timeout)


BlockCallback = Callable[[np.ndarray, bool], None]
EndCallback = Callable[[str], None]


class InputStream(Protocol):
    """An opened, not yet started, input stream."""

    samplerate: float
    channels: int

    def start(self) -> None: ...

    def close(self) -> None:
        """Stop (if running) and release the device; idempotent."""
        ...


StreamOpener = Callable[[AudioDevice, BlockCallback, EndCallback], InputStream]


def open_input(device: AudioDevice, on_block: BlockCallback, on_end: EndCallback) -> InputStream:
    """Open ``device`` on its backend. Raises :class:`CaptureError` if it cannot be opened."""
    if device.backend == "wasapi":
        return WasapiInput(device, on_block, on_end)
    return PortAudioInput(device, on_block, on_end)


# Every word waits for the block that carries its end. 32 ms blocks held words ~45 ms
# between leaving the output and reaching the callback; 20 ms blocks ~20 ms
# (bench/bench_latency.py). The loop is still woken once per chunk, so smaller blocks
# only add a short Python call (with a soxr step) per block on PortAudio's thread:
# 10 ms blocks cost the whole app ~20 ms more CPU per audio second for ~5 ms less
# latency, 20 ms blocks about nothing. PortAudio's default (high) input latency only
# sizes the buffer that absorbs a late callback; it adds no delay, so it stays.
BLOCK_SECONDS = 0.020


class PortAudioInput:
    """A sounddevice stream; Pulse sources are routed with :func:`pulse_route`."""

    def __init__(self, device: AudioDevice, on_block: BlockCallback, on_end: EndCallback):
        self.channels = max(1, min(device.channels, 2))
        rate = device.default_samplerate or 48_000.0
        self._closing = threading.Event()

        channels = self.channels

        def callback(indata: Any, frames: int, time: Any, status: sd.CallbackFlags) -> None:
            # A raw stream hands over a buffer; viewing it costs less than sounddevice's
            # own array wrapping (which also warns on NumPy ≥ 2.5).
            block = np.frombuffer(indata, dtype=np.float32).reshape(frames, channels)
            on_block(block, bool(status.input_overflow))

        def finished() -> None:
            if not self._closing.is_set():
                on_end(f"the stream from {device.name!r} stopped by itself (device unplugged?)")

        try:
            with pulse_route(device):
                self._stream = sd.RawInputStream(
                    device=device.device_index, channels=self.channels, samplerate=rate,
                    dtype="float32", callback=callback, finished_callback=finished,
                    blocksize=int(rate * BLOCK_SECONDS),
                )
        except (sd.PortAudioError, ValueError) as exc:
            raise CaptureError(f"cannot open {device.name!r} for capture: {exc}") from exc
        self.samplerate = float(self._stream.samplerate)

    def start(self) -> None:
        try:
            self._stream.start()
        except sd.PortAudioError as exc:
            raise CaptureError(f"cannot start capture: {exc}") from exc

    def close(self) -> None:
        self._closing.set()
        try:
            self._stream.abort(ignore_errors=True)
        finally:
            self._stream.close(ignore_errors=True)


class WasapiInput:
    """A PyAudioWPatch stream (Windows; needed for WASAPI loopback)."""

    def __init__(self, device: AudioDevice, on_block: BlockCallback, on_end: EndCallback):
        try:
            import pyaudiowpatch as pyaudio  # Windows-only wheels
        except ImportError as exc:
            raise CaptureError("system audio on Windows needs the PyAudioWPatch package") from exc
        self.channels = max(1, min(device.channels, 2))
        self.samplerate = float(device.default_samplerate or 48_000.0)
        channels = self.channels
        overflow_flag = pyaudio.paInputOverflow

        def callback(in_data: bytes, frame_count: int, time_info: Any, status: int) -> tuple:
            block = np.frombuffer(in_data, dtype=np.float32).reshape(-1, channels)
            on_block(block, bool(status & overflow_flag))
            return (None, pyaudio.paContinue)

        self._pa = pyaudio.PyAudio()
        try:
            self._stream = self._pa.open(
                format=pyaudio.paFloat32, channels=channels, rate=int(self.samplerate),
                input=True, input_device_index=device.device_index, stream_callback=callback,
                frames_per_buffer=int(self.samplerate * BLOCK_SECONDS), start=False,
            )
        except OSError as exc:
            self._pa.terminate()
            raise CaptureError(f"cannot open {device.name!r} for capture: {exc}") from exc

    def start(self) -> None:
        self._stream.start_stream()

    def close(self) -> None:
        try:
            self._stream.stop_stream()
            self._stream.close()
        finally:
            self._pa.terminate()
