"""Deterministic stand-ins for speech recognition, and a realtime server fixture.

``ToneWordTranscriber`` "hears" words encoded as tones (one frequency per word),
so tests can check that no word is lost or duplicated across reconnects and
rotations without a speech model. It records every byte it was fed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pytest

from captioner.engine.server import RealtimeServer

RATE = 16_000
FRAME = 320  # 20 ms
VOCABULARY = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
]


def tone_frequency(index: int) -> float:
    return 500.0 + 150.0 * index


def tone_words_pcm(
    words: list[str], tone_ms: int = 240, gap_ms: int = 120, amplitude: float = 0.5
) -> bytes:
    """PCM16 of ``words`` spoken as tones separated by silence."""
    pieces = []
    n_tone, n_gap = RATE * tone_ms // 1000, RATE * gap_ms // 1000
    t = np.arange(n_tone) / RATE
    for word in words:
        f = tone_frequency(VOCABULARY.index(word))
        pieces.append(amplitude * np.sin(2 * np.pi * f * t))
        pieces.append(np.zeros(n_gap))
    audio = np.concatenate(pieces) if pieces else np.zeros(0)
    return (audio * 32767).astype("<i2").tobytes()


class ToneWordTranscriber:
    """Transcriber that emits a word when a tone ends (≥ 3 frames of one tone)."""

    def __init__(self) -> None:
        self.received = bytearray()
        self._carry = b""
        self._tone: int | None = None
        self._frames = 0
        self.finished = False

    def push(self, pcm: bytes) -> str:
        self.received += pcm
        data = self._carry + pcm
        usable = len(data) - len(data) % (FRAME * 2)
        self._carry = data[usable:]
        out = []
        for start in range(0, usable, FRAME * 2):
            frame = np.frombuffer(data[start : start + FRAME * 2], "<i2").astype(np.float32)
            out.append(self._frame(frame))
        return "".join(out)

    def finish(self) -> str:
        self.finished = True
        return self._end_tone()

    def _frame(self, frame: np.ndarray) -> str:
        if np.sqrt(np.mean(frame**2)) < 1000:
            return self._end_tone()
        spectrum = np.abs(np.fft.rfft(frame * np.hanning(len(frame))))
        freq = np.argmax(spectrum) * RATE / len(frame)
        index = round((freq - 500.0) / 150.0)
        if not 0 <= index < len(VOCABULARY):
            return self._end_tone()
        if index != self._tone:
            text = self._end_tone()
            self._tone, self._frames = index, 1
            return text
        self._frames += 1
        return ""

    def _end_tone(self) -> str:
        tone, frames = self._tone, self._frames
        self._tone, self._frames = None, 0
        if tone is None or frames < 3:
            return ""
        return " " + VOCABULARY[tone]


class LiveToneTranscriber(ToneWordTranscriber):
    """Tone words that are first live, then committed: a word heard is ``tentative``
    until ``hold`` more words follow it (or the audio ends), as the engine's
    agreement holds back its last words."""

    def __init__(self, hold: int = 1) -> None:
        super().__init__()
        self.hold = hold
        self._held: list[str] = []

    def push(self, pcm: bytes) -> str:
        self._held += super().push(pcm).split()
        commit = self._held[: max(0, len(self._held) - self.hold)]
        self._held = self._held[len(commit) :]
        return "".join(" " + w for w in commit)

    def finish(self) -> str:
        words = self._held + super().finish().split()
        self._held = []
        return "".join(" " + w for w in words)

    @property
    def tentative(self) -> str:
        return "".join(" " + w for w in self._held)


class UtteranceToneTranscriber(ToneWordTranscriber):
    """Tone words confirmed a whole utterance at a time, after ``pause`` seconds of
    quiet, as the on-device engine confirms at a pause: every word of an utterance
    arrives together, seconds after most of them were said."""

    def __init__(self, pause: float = 2.0) -> None:
        super().__init__()
        self.pause_frames = round(pause * RATE / FRAME)
        self._quiet_frames = 0
        self._utterance: list[str] = []

    def push(self, pcm: bytes) -> str:
        self._utterance += super().push(pcm).split()
        if self._quiet_frames < self.pause_frames:
            return ""
        return self._confirm()

    def finish(self) -> str:
        self._utterance += super().finish().split()
        return self._confirm()

    def _frame(self, frame: np.ndarray) -> str:
        loud = np.sqrt(np.mean(frame**2)) >= 1000
        self._quiet_frames = 0 if loud else self._quiet_frames + 1
        return super()._frame(frame)

    def _confirm(self) -> str:
        words, self._utterance = self._utterance, []
        return "".join(" " + w for w in words)


@dataclass
class RecordingFactory:
    """TranscriberFactory that keeps every transcriber it made (one per request)."""

    made: list[ToneWordTranscriber] = field(default_factory=list)

    def __call__(self) -> ToneWordTranscriber:
        t = ToneWordTranscriber()
        self.made.append(t)
        return t

    @property
    def received(self) -> bytes:
        return b"".join(bytes(t.received) for t in self.made)


class ThreadedServer:
    """A RealtimeServer on its own loop in a thread, usable from any test style."""

    def __init__(self, factory, **kwargs) -> None:
        self.factory = factory
        self._kwargs = kwargs
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server: RealtimeServer | None = None

    def __enter__(self) -> ThreadedServer:
        self._thread.start()
        self.server = asyncio.run_coroutine_threadsafe(
            RealtimeServer(self.factory, **self._kwargs).start(), self.loop
        ).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.server is not None
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return self.server.url

    def drop_connections(self) -> None:
        """Cut every open connection without a closing handshake, like a network drop."""
        assert self.server is not None and self.server._server is not None
        for conn in list(self.server._server.connections):
            self.loop.call_soon_threadsafe(conn.transport.abort)


@pytest.fixture
def tone_factory() -> RecordingFactory:
    return RecordingFactory()


@pytest.fixture
def realtime_server(tone_factory: RecordingFactory) -> Iterator[ThreadedServer]:
    """A local Realtime server with the tone transcriber, in a background thread."""
    with ThreadedServer(tone_factory) as server:
        yield server
