"""The microphone and the system audio captured side by side, as two PCM16 streams.

Two-stream mode ("You" and "Others") captions each source on its own session, so
unlike the mixed ``both`` capture the two are never added together. The mic
stream passes through one :class:`MicFilter` that sees the system audio of the
same moment as its reference: that is where acoustic echo cancellation goes (the
others' voices coming back into the microphone through the speakers). From the
settings that filter is :class:`~captioner.audio.echo.EchoCanceller` (off:
:class:`PassThrough`).

Alignment: both captures start together and deliver 16 kHz samples, so a
position counted in samples since the start is the same moment in both (as the
mixed capture assumes). A mic chunk waits up to ``max_lag_seconds`` for the
system audio of its span; a system stream further behind (or dead) gives
silence as the reference instead of holding the microphone back.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from captioner.audio.capture import LEVEL_FLOOR_DBFS, AudioCapture
from captioner.audio.devices import AudioDevice, list_devices
from captioner.audio.echo import EchoCanceller
from captioner.audio.reply_cancel import PlayedAudio, hears_replies, reply_filter
from captioner.audio.resample import TARGET_RATE
from captioner.audio.streams import StreamOpener, open_input
from captioner.settings import AudioSettings

BYTES_PER_SAMPLE = 2  # PCM16
REFERENCE_KEEP_SECONDS = 5.0  # system audio kept for the mic side to look back on
MAX_LAG_SECONDS = 0.3  # how long a mic chunk waits for the system audio of its span


class MicFilter(Protocol):
    """Cleans microphone audio given what the system played at the same moment."""

    def process(self, mic: bytes, reference: bytes) -> bytes:
        """``mic`` and ``reference``: 16 kHz mono PCM16 of the same span (same length).
        Returns the cleaned mic PCM16, the same length."""
        ...


class PassThrough:
    """No echo cancellation: the mic audio as it is."""

    def process(self, mic: bytes, reference: bytes) -> bytes:
        return mic


class ReferenceBuffer:
    """The system audio by byte position since the start, for the mic side to read."""

    def __init__(self, keep_seconds: float = REFERENCE_KEEP_SECONDS) -> None:
        self._data = bytearray()
        self._base = 0  # byte position of _data[0]
        self._keep = int(keep_seconds * TARGET_RATE) * BYTES_PER_SAMPLE
        self._grew = asyncio.Event()
        self.ended = False

    @property
    def end(self) -> int:
        return self._base + len(self._data)

    def push(self, chunk: bytes) -> None:
        self._data += chunk
        excess = len(self._data) - self._keep
        if excess > 0:
            del self._data[:excess]
            self._base += excess
        self._grew.set()

    def close(self) -> None:
        self.ended = True
        self._grew.set()

    def read(self, start: int, size: int) -> bytes:
        """``size`` bytes from ``start``; what is not (or no longer) here is silence."""
        begin = max(start, self._base)
        stop = min(start + size, self.end)
        have = bytes(self._data[begin - self._base: stop - self._base]) if stop > begin else b""
        before = max(0, min(begin, start + size) - start)
        return b"\0" * before + have + b"\0" * (size - before - len(have))

    async def wait_for(self, position: int, timeout: float) -> None:
        """Returns once the system audio reaches ``position``, it ended, or ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.end < position and not self.ended:
            left = deadline - loop.time()
            if left <= 0:
                return
            self._grew.clear()
            try:
                await asyncio.wait_for(self._grew.wait(), left)
            except TimeoutError:
                return


class DualCapture:
    """Microphone and system audio as two separate chunk streams (see module docstring).

    Consume :meth:`mic_chunks` and :meth:`system_chunks` concurrently; each ends
    after :meth:`stop` or raises :class:`CaptureError` when its device fails.
    """

    def __init__(self, mic: AudioCapture, system: AudioCapture, *,
                 mic_filter: MicFilter | None = None,
                 max_lag_seconds: float = MAX_LAG_SECONDS) -> None:
        self.mic = mic
        self.system = system
        self.mic_filter: MicFilter = mic_filter or PassThrough()
        self.reference = ReferenceBuffer()
        self._max_lag = max_lag_seconds

    @classmethod
    def from_settings(cls, audio: AudioSettings, devices: Sequence[AudioDevice] | None = None,
                      opener: StreamOpener = open_input, *,
                      mic_filter: MicFilter | None = None,
                      played: PlayedAudio | None = None) -> DualCapture:
        """Raises :class:`DeviceNotFound` like :meth:`AudioCapture.from_settings`. The mic
        filter is WebRTC echo cancellation unless ``audio.echo_cancel`` is off. With
        ``played``, each side that hears the app's own spoken replies cancels them on its
        own (the system side's are gone before the mic filter reads it as its reference):
        see :func:`~captioner.audio.reply_cancel.hears_replies`."""
        if mic_filter is None and audio.echo_cancel:
            mic_filter = EchoCanceller()
        devices = list(devices) if devices is not None else list_devices()
        captures = []
        for role in ("mic", "system"):
            one = AudioSettings(**{**vars(audio), "source": role})
            captures.append(AudioCapture.from_settings(
                one, devices, opener,
                chunk_filter=reply_filter(played, hears_replies(audio, role, devices))))
        return cls(*captures, mic_filter=mic_filter)

    @property
    def level_dbfs(self) -> float:
        return max(self.mic.level_dbfs, self.system.level_dbfs, LEVEL_FLOOR_DBFS)

    @property
    def dropped_chunks(self) -> int:
        return self.mic.dropped_chunks + self.system.dropped_chunks

    def set_gains(self, mic: float, system: float) -> None:
        self.mic.set_gains(mic, system)
        self.system.set_gains(mic, system)

    def discard_held(self) -> float:
        """Both sides start over from now (see :meth:`AudioCapture.discard_held`)."""
        return max(self.mic.discard_held(), self.system.discard_held())

    async def start(self) -> None:
        await self.mic.start()
        try:
            await self.system.start()
        except BaseException:
            await self.mic.stop()
            raise

    async def stop(self) -> None:
        await self.mic.stop()
        await self.system.stop()

    async def system_chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.system.chunks():
                self.reference.push(chunk)
                yield chunk
        finally:
            self.reference.close()

    async def mic_chunks(self) -> AsyncIterator[bytes]:
        position = 0
        async for chunk in self.mic.chunks():
            end = position + len(chunk)
            await self.reference.wait_for(end, self._max_lag)
            reference = self.reference.read(position, len(chunk))
            position = end
            yield self.mic_filter.process(chunk, reference)

    def chunks(self) -> AsyncIterator[bytes]:
        raise TypeError("a two-stream capture has mic_chunks() and system_chunks()")


__all__ = ["DualCapture", "MicFilter", "PassThrough", "ReferenceBuffer"]
