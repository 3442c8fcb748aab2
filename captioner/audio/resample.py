"""Any rate and channel count → 16 kHz mono, as float32 or PCM16.

Downmixing happens first so soxr filters one channel instead of several, and a
single :class:`soxr.ResampleStream` keeps the filter state across blocks, so a
stream cut into arbitrary blocks comes out the same as one long block (no clicks
at block edges). Call :meth:`Resampler.flush` once at the end for the filter tail.
"""

from __future__ import annotations

import numpy as np
import soxr

TARGET_RATE = 16_000
_PCM16_SCALE = 32767.0


class Resampler:
    """Stateful converter of one stream to ``out_rate`` mono."""

    def __init__(self, in_rate: float, channels: int, out_rate: int = TARGET_RATE,
                 quality: str = "HQ"):
        if in_rate <= 0 or out_rate <= 0:
            raise ValueError(f"sample rates must be positive (got {in_rate} → {out_rate})")
        if channels < 1:
            raise ValueError(f"channel count must be at least 1 (got {channels})")
        self.in_rate = float(in_rate)
        self.out_rate = int(out_rate)
        self.channels = int(channels)
        self._mono = np.empty(0, dtype=np.float32)  # downmix scratch, grown on demand
        self._stream = (
            None if self.in_rate == self.out_rate
            else soxr.ResampleStream(self.in_rate, self.out_rate, 1, dtype="float32",
                                     quality=quality)
        )

    def process(self, block: np.ndarray) -> np.ndarray:
        """Resample one block (frames × channels, or 1-D mono); returns float32 mono.

        The result may be a view of internal scratch memory when no resampling is
        needed: use or copy it before the next call.
        """
        mono = self._downmix(block)
        if self._stream is None:
            return mono
        return self._stream.resample_chunk(mono, last=False)

    def process_pcm16(self, block: np.ndarray) -> bytes:
        """Like :meth:`process`, but little-endian PCM16 bytes (clipped)."""
        return to_pcm16(self.process(block))

    def flush(self) -> np.ndarray:
        """The filter's tail; the resampler is finished afterwards."""
        if self._stream is None:
            return np.empty(0, dtype=np.float32)
        return self._stream.resample_chunk(np.empty(0, dtype=np.float32), last=True)

    def _downmix(self, block: np.ndarray) -> np.ndarray:
        block = np.asarray(block)
        if block.ndim == 1:
            return block if block.dtype == np.float32 else block.astype(np.float32)
        frames, channels = block.shape
        if channels == 1:
            return np.ascontiguousarray(block[:, 0], dtype=np.float32)
        if self._mono.shape[0] < frames:
            self._mono = np.empty(max(frames, 2 * self._mono.shape[0]), dtype=np.float32)
        out = self._mono[:frames]
        np.add(block[:, 0], block[:, 1], out=out, dtype=np.float32)
        for ch in range(2, channels):
            out += block[:, ch]
        out *= np.float32(1.0 / channels)
        return out


def to_pcm16(samples: np.ndarray, gain: float = 1.0) -> bytes:
    """float32 in [-1, 1] (times ``gain``) → little-endian PCM16 bytes, clipped."""
    scaled = np.multiply(samples, np.float32(_PCM16_SCALE * gain), dtype=np.float32)
    np.clip(scaled, -32768.0, 32767.0, out=scaled)
    np.rint(scaled, out=scaled)
    return scaled.astype("<i2").tobytes()


def from_pcm16(data: bytes | bytearray | memoryview) -> np.ndarray:
    """Little-endian PCM16 bytes → float32 in [-1, 1)."""
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / np.float32(_PCM16_SCALE)


def rms_dbfs(pcm16: bytes | bytearray | memoryview, floor: float = -100.0) -> float:
    """RMS level of PCM16 audio in dBFS (a full-scale sine is about -3 dBFS)."""
    samples = np.frombuffer(pcm16, dtype="<i2")
    if samples.size == 0:
        return floor
    mean_square = float(np.dot(samples, samples.astype(np.float64))) / samples.size
    if mean_square <= 0.0:
        return floor
    return max(floor, 10.0 * np.log10(mean_square / (32768.0 * 32768.0)))
