"""Fixed-size PCM16 chunks from input of any size.

The Realtime protocol takes audio in ``input_audio_buffer.append`` events; each
event costs a JSON frame, so chunk size trades latency for overhead (docs/realtime-protocol.md):
2560 bytes = 80 ms, 4096 = 128 ms, 8192 = 256 ms of 16 kHz PCM16.

2560 bytes is the default: exactly one Voxtral model frame (the model emits one
token per 80 ms of audio). The server counts frames from a request's start and
chunks are cut from the start of the audio, so (until a reconnect resumes
mid-chunk) a chunk's end is a frame's end: the server can emit a word's token
the moment the chunk arrives. Smaller chunks gain nothing
there (the frame is not complete before), and 64 ms chunks would even add a
wait, since their ends drift against the 80 ms frames; larger ones hold every
word back by up to the chunk length. bench/bench_latency.py measures it through
a Voxtral-like server. CPU is not the limit: bench/bench_pipeline.py measured a
few ms per audio second at any size, under 1 % of one core.

The partial chunk lives in one preallocated ``bytearray``; whole chunks are cut
straight from the input when nothing is pending, so there is no per-call
reallocation or ever-growing buffer.
"""

from __future__ import annotations

CHUNK_SIZES = (2560, 4096, 8192)
MODEL_FRAME_BYTES = 2560  # 80 ms: one Voxtral frame
DEFAULT_CHUNK_BYTES = MODEL_FRAME_BYTES
BYTES_PER_SECOND = 16_000 * 2


def chunk_ms(chunk_bytes: int) -> float:
    """Duration of a chunk of 16 kHz mono PCM16, in milliseconds."""
    return chunk_bytes * 1000.0 / BYTES_PER_SECOND


class Chunker:
    """Cuts a byte stream into ``chunk_bytes``-sized ``bytes`` objects."""

    __slots__ = ("_buf", "_fill", "_view", "chunk_bytes")

    def __init__(self, chunk_bytes: int = DEFAULT_CHUNK_BYTES):
        if chunk_bytes <= 0 or chunk_bytes % 2:
            raise ValueError(f"chunk size must be a positive even byte count (got {chunk_bytes})")
        self.chunk_bytes = chunk_bytes
        self._buf = bytearray(chunk_bytes)
        self._view = memoryview(self._buf)
        self._fill = 0

    @property
    def pending(self) -> int:
        """Bytes held back, waiting for a full chunk."""
        return self._fill

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add ``data``; return every chunk it completed (possibly none), in order."""
        src = memoryview(data).cast("B")
        size, n = self.chunk_bytes, len(src)
        out: list[bytes] = []
        pos = 0
        if self._fill:
            take = min(size - self._fill, n)
            self._view[self._fill:self._fill + take] = src[:take]
            self._fill += take
            pos = take
            if self._fill < size:
                return out
            out.append(bytes(self._buf))
            self._fill = 0
        while n - pos >= size:
            out.append(bytes(src[pos:pos + size]))
            pos += size
        rest = n - pos
        if rest:
            self._view[:rest] = src[pos:]
            self._fill = rest
        return out

    def flush(self, pad: bool = False) -> bytes:
        """The held-back remainder (b"" if none), and the chunker is empty again.

        Unpadded by default, so no silence is invented; with ``pad=True`` a
        non-empty remainder is zero-padded to a full chunk for consumers that
        need fixed sizes.
        """
        if not self._fill:
            return b""
        rest = bytes(self._view[:self._fill])
        self._fill = 0
        if pad:
            rest += bytes(self.chunk_bytes - len(rest))
        return rest
