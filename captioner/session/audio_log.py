"""Recent audio kept for replay after a drop, a stall or a session rotation.

Bytes are stored; callers talk in seconds of session audio. :func:`to_bytes` and
:func:`seconds` are the one conversion between the two.
"""

from __future__ import annotations

import numpy as np

SAMPLE_RATE = 16_000
BYTES_PER_SAMPLE = 2
BYTES_PER_SECOND = SAMPLE_RATE * BYTES_PER_SAMPLE
FRAME_SECONDS = 0.02  # level analysis works on 20 ms frames
FRAME_BYTES = int(FRAME_SECONDS * BYTES_PER_SECOND)
TRIM_BATCH_SECONDS = 5.0  # trim in batches: a memmove of the whole buffer per chunk is waste


def seconds(n_bytes: int) -> float:
    """Seconds of 16 kHz PCM16 mono in ``n_bytes``."""
    return n_bytes / BYTES_PER_SECOND


def to_bytes(at_seconds: float) -> int:
    """The byte offset of ``at_seconds``, on a sample boundary."""
    return round(at_seconds * SAMPLE_RATE) * BYTES_PER_SAMPLE


class AudioLog:
    """Audio from absolute byte offset ``base`` to ``end``; older audio is trimmed."""

    def __init__(self, keep_seconds: float) -> None:
        self.keep_bytes = to_bytes(keep_seconds)
        self._slack = min(to_bytes(TRIM_BATCH_SECONDS), max(FRAME_BYTES, self.keep_bytes // 4))
        self._buf = bytearray()
        self.base = 0

    @property
    def end(self) -> int:
        return self.base + len(self._buf)

    @property
    def start_seconds(self) -> float:
        return seconds(self.base)

    @property
    def end_seconds(self) -> float:
        return seconds(self.end)

    def append(self, pcm: bytes) -> None:
        self._buf += pcm
        excess = len(self._buf) - self.keep_bytes
        if excess > self._slack:
            excess -= excess % BYTES_PER_SAMPLE
            del self._buf[:excess]
            self.base += excess

    def read(self, start: int, max_bytes: int) -> bytes:
        start = max(start, self.base)
        return bytes(self._buf[start - self.base : start - self.base + max_bytes])

    def level(self, start: float, end: float) -> float:
        """Root-mean-square level (0..1) of the audio between two times."""
        data = self._samples(start, end)
        return float(np.sqrt(np.mean(data**2))) if data.size else 0.0

    def quiet_runs(self, start: float, end: float, threshold: float,
                   min_seconds: float) -> list[tuple[float, float]]:
        """Stretches of ≥ ``min_seconds`` whose 20 ms frames are all below ``threshold``."""
        start = max(start, self.start_seconds)
        levels = self._frame_levels(start, end)
        runs, run_start = [], None
        for i, level in enumerate([*levels, np.inf]):
            if level < threshold and run_start is None:
                run_start = i
            elif level >= threshold and run_start is not None:
                if (i - run_start) * FRAME_SECONDS >= min_seconds - 1e-9:
                    runs.append((start + run_start * FRAME_SECONDS, start + i * FRAME_SECONDS))
                run_start = None
        return runs

    def last_sound(self, start: float, end: float, threshold: float) -> float | None:
        """End of the last 20 ms frame at or above ``threshold`` in [start, end)."""
        start = max(start, self.start_seconds)
        loud = np.flatnonzero(self._frame_levels(start, end) >= threshold)
        return None if loud.size == 0 else start + (int(loud[-1]) + 1) * FRAME_SECONDS

    def noise_floor(self, start: float, end: float) -> float:
        """The level of the quietest tenth of the 20 ms frames in [start, end)."""
        levels = self._frame_levels(max(start, self.start_seconds), end)
        return float(np.percentile(levels, 10)) if levels.size else 0.0

    def quietest(self, start: float, end: float) -> float:
        """Start of the quietest 20 ms frame in [start, end): a place to cut."""
        start = max(start, self.start_seconds)
        levels = self._frame_levels(start, end)
        if not levels.size:
            return start
        latest = levels.size - 1 - int(np.argmin(levels[::-1]))  # of equals, the latest
        return start + latest * FRAME_SECONDS

    def _frame_levels(self, start: float, end: float) -> np.ndarray:
        data = self._samples(start, end)
        per_frame = FRAME_BYTES // BYTES_PER_SAMPLE
        frames = data.size // per_frame
        if frames == 0:
            return np.zeros(0)
        return np.sqrt((data[: frames * per_frame].reshape(frames, -1) ** 2).mean(axis=1))

    def _samples(self, start: float, end: float) -> np.ndarray:
        lo = max(to_bytes(start), self.base) - self.base
        hi = max(lo, min(to_bytes(end), self.end) - self.base)
        return np.frombuffer(self._buf, "<i2", (hi - lo) // BYTES_PER_SAMPLE, lo
                             ).astype(np.float32) / 32768.0
