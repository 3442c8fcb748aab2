"""Recent audio kept for replay after a drop, a stall or a session rotation."""

from __future__ import annotations

import numpy as np

BYTES_PER_SECOND = 32_000  # 16 kHz mono PCM16
FRAME_BYTES = 640  # 20 ms


class AudioLog:
    """Audio from absolute byte offset ``base`` to ``end``; older audio is trimmed."""

    def __init__(self, keep_seconds: float) -> None:
        self.keep_bytes = int(keep_seconds * BYTES_PER_SECOND) & ~1
        # trim in batches: a memmove of the whole buffer per chunk would be waste
        self._slack = min(5 * BYTES_PER_SECOND, max(FRAME_BYTES, self.keep_bytes // 4))
        self._buf = bytearray()
        self.base = 0

    @property
    def end(self) -> int:
        return self.base + len(self._buf)

    def append(self, pcm: bytes) -> None:
        self._buf += pcm
        excess = len(self._buf) - self.keep_bytes
        if excess > self._slack:
            excess -= excess % 2
            del self._buf[:excess]
            self.base += excess

    def read(self, start: int, max_bytes: int) -> bytes:
        start = max(start, self.base)
        return bytes(self._buf[start - self.base : start - self.base + max_bytes])

    def rms(self, start: int, end: int) -> float:
        """Root-mean-square level (0..1) of the audio between two offsets."""
        data = self._samples(start, end)
        return float(np.sqrt(np.mean(data**2))) if data.size else 0.0

    def quietest(self, start: int, end: int) -> int:
        """Offset of the quietest 20 ms frame in [start, end): a good place to cut."""
        start = max(start, self.base) & ~1
        data = self._samples(start, end)
        frames = data.size * 2 // FRAME_BYTES
        if frames == 0:
            return start
        energy = (data[: frames * FRAME_BYTES // 2].reshape(frames, -1) ** 2).mean(axis=1)
        return start + int(np.argmin(energy)) * FRAME_BYTES

    def _samples(self, start: int, end: int) -> np.ndarray:
        lo = max(start, self.base) - self.base
        hi = max(lo, min(end, self.end) - self.base)
        lo -= lo % 2
        hi -= hi % 2
        return np.frombuffer(self._buf, "<i2", (hi - lo) // 2, lo).astype(np.float32) / 32768.0


def seconds(n_bytes: int) -> float:
    return n_bytes / BYTES_PER_SECOND
