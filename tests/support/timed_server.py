"""A Voxtral-like Realtime server for latency measurements: known words at known times.

Voxtral Realtime emits one token per 80 ms frame of audio and, at its recommended
setting, a word 480 ms (of audio) after the word ends. :class:`TimedTranscriber`
does exactly that for a script of words whose end times in a clip are known: as
soon as the audio it has received covers the whole 80 ms frame that holds
``word end + delay``, it returns the word. The server is then "perfect" — no
compute time, no misheard words — so whatever latency a client adds on top of
``delay`` is the client's own.

The clip is found in the stream by its onset: the first sample at or above
``threshold`` (the null sink of the tests is digital silence until the clip
plays). Give ``clip_onset`` measured the same way on the clip itself
(:func:`onset_seconds`).

Every push and every word sent is logged with ``time.monotonic()`` so a
benchmark can split the latency into stages.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

RATE = 16_000
VOXTRAL_DELAY = 0.48  # seconds of audio between a word's end and its token
MODEL_FRAME = 0.08  # seconds of audio per model step (one token)
ONSET_THRESHOLD = 0.02  # |sample| (full scale 1.0) that marks the clip's start


@dataclass(frozen=True, slots=True)
class ScriptWord:
    text: str
    end: float  # seconds from the clip's first sample


def onset_seconds(samples: np.ndarray, rate: float, threshold: float = ONSET_THRESHOLD) -> float:
    """Time of the first sample with ``|x| >= threshold`` (float samples, any layout)."""
    flat = np.abs(samples).reshape(samples.shape[0], -1).max(axis=1)
    hits = np.flatnonzero(flat >= threshold)
    if not hits.size:
        raise ValueError("no sample reaches the onset threshold")
    return float(hits[0]) / rate


class TimedTranscriber:
    """Transcriber (see captioner.engine.transcriber) that replays a script on time."""

    def __init__(self, words: Sequence[ScriptWord], clip_onset: float, *,
                 delay: float = VOXTRAL_DELAY, frame: float = MODEL_FRAME,
                 threshold: float = ONSET_THRESHOLD) -> None:
        self.words = list(words)
        self.clip_onset = clip_onset
        self.delay = delay
        self.frame_samples = round(frame * RATE)
        self.threshold = threshold
        self.received = 0  # samples
        self.onset: int | None = None  # sample index of the clip's start in this stream
        self.next_word = 0
        self.pushes: list[tuple[float, int]] = []  # (monotonic time, samples received by then)
        self.sent: list[tuple[float, int]] = []  # (monotonic time, word index)

    def due_sample(self, index: int) -> int:
        """Stream sample whose arrival (with its whole model frame) releases word ``index``."""
        assert self.onset is not None
        at = self.onset + (self.words[index].end - self.clip_onset + self.delay) * RATE
        return math.ceil(at / self.frame_samples) * self.frame_samples

    def push(self, pcm: bytes) -> str:
        now = time.monotonic()
        samples = np.frombuffer(pcm, "<i2")
        if self.onset is None:
            hits = np.flatnonzero(np.abs(samples) >= self.threshold * 32768)
            if hits.size:
                self.onset = self.received + int(hits[0])
        self.received += samples.size
        self.pushes.append((now, self.received))
        return self._release(self.received, now)

    def finish(self) -> str:
        return self._release(math.inf, time.monotonic())

    def _release(self, covered: float, now: float) -> str:
        if self.onset is None:
            return ""
        out = []
        while self.next_word < len(self.words) and self.due_sample(self.next_word) <= covered:
            out.append(" " + self.words[self.next_word].text)
            self.sent.append((now, self.next_word))
            self.next_word += 1
        return "".join(out)


@dataclass
class TimedFactory:
    """TranscriberFactory making a :class:`TimedTranscriber` per request; keeps them all."""

    words: Sequence[ScriptWord]
    clip_onset: float
    delay: float = VOXTRAL_DELAY
    made: list[TimedTranscriber] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self) -> TimedTranscriber:
        t = TimedTranscriber(self.words, self.clip_onset, delay=self.delay)
        with self._lock:
            self.made.append(t)
        return t
