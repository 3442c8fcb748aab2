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
    """Audio from absolute byte offset ``base`` to ``end``; older audio is trimmed.

    Each whole 20 ms frame's level is measured once, as it arrives: the session
    asks for the noise floor of the last 10 s after every 80 ms chunk, and
    measuring those 500 frames again each time was a quarter of an idle app's
    main-thread CPU. Frames lie on one grid from the session's start (``base``
    is trimmed in whole frames), so a question starting on it reads the
    measured levels; one starting elsewhere measures its own frames.
    """

    def __init__(self, keep_seconds: float) -> None:
        self.keep_bytes = to_bytes(keep_seconds)
        self._slack = min(to_bytes(TRIM_BATCH_SECONDS), max(FRAME_BYTES, self.keep_bytes // 4))
        self._buf = bytearray()
        self.base = 0
        self._levels = np.zeros(0, dtype=np.float32)  # each whole frame's level, from base

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
        measured = len(self._levels) * FRAME_BYTES
        self._buf += pcm
        whole = len(self._buf) - len(self._buf) % FRAME_BYTES
        if whole > measured:
            self._levels = np.concatenate(
                [self._levels, _levels(self._buf, measured, whole)])
        excess = len(self._buf) - self.keep_bytes
        if excess > self._slack:
            excess -= excess % FRAME_BYTES
            del self._buf[:excess]
            self.base += excess
            self._levels = self._levels[excess // FRAME_BYTES :]

    def read(self, start: int, max_bytes: int) -> bytes:
        """Audio from ``start``; ValueError before ``base`` (trimmed: a caller that got
        other audio than it asked for would send the same audio twice)."""
        if start < self.base:
            raise ValueError(f"audio before byte {self.base} is no longer kept ({start})")
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
        """Levels of the whole 20 ms frames from ``start`` until ``end``."""
        lo, hi = self._span(start, end)
        if lo % FRAME_BYTES == 0:  # on the grid of measured frames
            return self._levels[lo // FRAME_BYTES : hi // FRAME_BYTES]
        return _levels(self._buf, lo, hi)

    def _samples(self, start: float, end: float) -> np.ndarray:
        lo, hi = self._span(start, end)
        return _floats(self._buf, lo, hi)

    def _span(self, start: float, end: float) -> tuple[int, int]:
        """Buffer offsets of [start, end), inside what is kept."""
        lo = max(to_bytes(start), self.base) - self.base
        return lo, max(lo, min(to_bytes(end), self.end) - self.base)


def _floats(buf: bytearray, lo: int, hi: int) -> np.ndarray:
    return np.frombuffer(buf, "<i2", (hi - lo) // BYTES_PER_SAMPLE, lo
                         ).astype(np.float32) / 32768.0


def _levels(buf: bytearray, lo: int, hi: int) -> np.ndarray:
    """RMS level of each whole 20 ms frame of ``buf[lo:hi]``."""
    frames = (hi - lo) // FRAME_BYTES
    if frames <= 0:
        return np.zeros(0, dtype=np.float32)
    data = _floats(buf, lo, lo + frames * FRAME_BYTES).reshape(frames, -1)
    return np.sqrt((data**2).mean(axis=1))
