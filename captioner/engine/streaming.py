"""Streaming captions from a non-streaming recogniser: the LocalAgreement-2 policy.

Whisper transcribes a finished clip, not a stream. As in ``whisper_streaming``
(Macháček et al., ÚFAL), we keep a growing audio buffer, re-decode it every
``update_interval`` seconds of new audio, and commit the words on which two
consecutive hypotheses agree (longest common prefix after what is already
committed, aligned by time). Committed words never change, so the output is
append-only, like Voxtral's deltas. The buffer is trimmed at committed sentence
ends (and when it grows past ``max_buffer``), and the committed text before the
buffer conditions the next decode as a prompt.

Sans-I/O and model-agnostic: a ``Decoder`` callable turns (audio, prompt) into
timed words and an optional ``SpeechDetector`` scores 32 ms windows; tests pass
scripted fakes for both. Heavy work (VAD and decoding) happens only in the
``push`` call that completes an update interval; other pushes just store audio.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

log = logging.getLogger(__name__)

SAMPLE_RATE = 16_000
_SENTENCE_END = (".", "?", "!", "…")
_EPSILON = 1e-3  # seconds; word times and sample-rounded offsets differ by float noise
_STRIP = ".,!?;:…\"'“”‘’()[]{}-"


@dataclass(frozen=True, slots=True)
class Word:
    """One recognised word; ``text`` keeps the model's leading space (" world")."""

    start: float
    end: float
    text: str

    @property
    def key(self) -> str:
        """What two hypotheses must agree on: case and punctuation do not count."""
        return self.text.strip().strip(_STRIP).casefold()

    def shifted(self, seconds: float) -> Word:
        return Word(self.start + seconds, self.end + seconds, self.text)


Decoder = Callable[[np.ndarray, str, bool], Sequence[Word]]
"""(16 kHz mono float32 audio, prompt text, careful) → words timed from the audio's start.

``careful`` marks the last decode of a stretch of speech (a pause or the end):
its words are committed without a second opinion, so a decoder may spend more
effort on it (e.g. a wider beam).
"""


class SpeechDetector(Protocol):
    """Scores consecutive windows of a continuous stream (see captioner.engine.vad)."""

    window: int

    def probabilities(self, audio: np.ndarray) -> np.ndarray:
        """Consume audio; return one speech probability per completed window."""
        ...


@dataclass(frozen=True)
class StreamingOptions:
    # seconds of new audio between re-decodes; bench_engine on 2 cores: 1.0 s keeps the
    # real-time factor ≤ 0.5 (0.75 s: ~0.55) with median word latency ~1.75 s
    update_interval: float = 1.0
    max_buffer: float = 15.0  # past this, trim at the last committed word
    prompt_chars: int = 200  # committed text before the buffer passed as prompt
    speech_threshold: float = 0.5  # detector probability that counts as speech
    min_speech: float = 0.2  # seconds of speech in the buffer before decoding at all
    speech_pad: float = 0.3  # words must overlap speech widened by this much
    endpoint_silence: float = 0.8  # trailing non-speech that ends an utterance
    commit_margin: float = 0.0  # words ending this close to the buffer end wait
    preroll: float = 0.5  # audio kept before speech starts


class LocalAgreement:
    """The commit rule alone: words in (absolute times), newly committed words out."""

    def __init__(self, dedup_words: int = 5) -> None:
        self.committed: list[Word] = []
        self.tentative: list[Word] = []  # last hypothesis beyond the committed part
        self.last_end = 0.0  # end time of the last committed word
        self._dedup = dedup_words

    def insert(self, words: Sequence[Word], horizon: float = float("inf")) -> list[Word]:
        """Take a new hypothesis; commit its agreement with the previous one.

        Words ending after ``horizon`` stay tentative even when they agree.
        """
        new = self._unseen(words)
        count = 0
        for old, fresh in zip(self.tentative, new, strict=False):
            if old.key != fresh.key or fresh.end > horizon:
                break
            count += 1
        commit = new[:count]
        self.tentative = new[count:]
        self._accept(commit)
        return commit

    def commit_all(self) -> list[Word]:
        """Commit the pending hypothesis as is (end of audio, or a pause)."""
        commit, self.tentative = self.tentative, []
        self._accept(commit)
        return commit

    def prompt(self, before: float, max_chars: int) -> str:
        """Committed text ending at or before ``before`` (the audio the buffer lost)."""
        kept: list[str] = []
        size = 0
        for word in reversed(self.committed):
            if word.end > before:
                continue
            if size >= max_chars:
                break
            kept.append(word.text)
            size += len(word.text)
        return "".join(reversed(kept)).strip()[-max_chars:]

    def _accept(self, commit: list[Word]) -> None:
        if commit:
            self.committed.extend(commit)
            self.last_end = max(self.last_end, commit[-1].end)

    def _unseen(self, words: Sequence[Word]) -> list[Word]:
        """Drop the part of a hypothesis that repeats already committed words.

        After a trim the decoder sees committed audio again at the buffer's
        start; words before the last commit (with 0.1 s slack) are dropped, and
        a repeated n-gram right at the seam is removed too.
        """
        new = [w for w in words if w.start > self.last_end - 0.1]
        if new and self.committed and abs(new[0].start - self.last_end) < 1.0:
            limit = min(len(self.committed), len(new), self._dedup)
            for n in range(1, limit + 1):
                tail = [w.key for w in self.committed[-n:]]
                head = [w.key for w in new[:n]]
                if tail == head:
                    log.debug("= dropped %d repeated word(s) at the seam", n)
                    new = new[n:]
                    break
        return new


class StreamingTranscriber:
    """A ``Transcriber`` (captioner.engine.transcriber) for one request."""

    def __init__(
        self,
        decoder: Decoder,
        detector: SpeechDetector | None = None,
        options: StreamingOptions | None = None,
    ) -> None:
        self.options = options or StreamingOptions()
        self._decode = decoder
        self._detector = detector
        self._policy = LocalAgreement()
        self._buffer = np.zeros(0, dtype=np.float32)
        self._offset = 0.0  # stream time of the buffer's first sample
        self._pending: list[np.ndarray] = []
        self._pending_samples = 0
        self._odd = b""  # half a sample split across pushes
        self._window = detector.window if detector else 512
        self._speech = np.zeros(0, dtype=bool)  # per detector window, whole stream
        self._stream_samples = 0
        self._emitted = ""
        self._finished = False
        self.decodes = 0  # how many times the decoder ran (for tests and benchmarks)

    @property
    def text(self) -> str:
        """Everything emitted so far (the concatenation of all returned deltas)."""
        return self._emitted

    @property
    def committed(self) -> list[Word]:
        return list(self._policy.committed)

    @property
    def buffer_start(self) -> float:
        """Stream time (s) of the first sample the next decode will see."""
        return self._offset

    def push(self, pcm: bytes) -> str:
        """Store 16 kHz mono PCM16; decode once a full update interval has arrived."""
        if self._finished:
            raise RuntimeError("push() after finish(): start a new transcriber")
        data = self._odd + pcm
        cut = len(data) - len(data) % 2
        self._odd = data[cut:]
        if cut:
            samples = np.frombuffer(data[:cut], dtype="<i2").astype(np.float32) / 32768.0
            self._pending.append(samples)
            self._pending_samples += len(samples)
        if self._pending_samples < self.options.update_interval * SAMPLE_RATE:
            return ""
        return self._render(self._update())

    def finish(self) -> str:
        """End of audio: decode what is left once more and commit the last hypothesis."""
        if self._finished:
            return ""
        self._finished = True
        words: list[Word] = []
        if self._pending_samples:
            words = self._update(final=True)
        words += self._policy.commit_all()
        return self._render(words)

    # -- internals ---------------------------------------------------------

    def _update(self, final: bool = False) -> list[Word]:
        self._take_pending()
        opts = self.options
        duration = len(self._buffer) / SAMPLE_RATE
        speech_at, speech_seconds, trailing_silence = self._speech_in_buffer()
        if speech_seconds < opts.min_speech:
            # Nothing said: decode nothing, keep a little pre-roll for the next onset.
            self._policy.tentative = []
            self._cut_at(self._offset + max(0.0, duration - opts.preroll))
            return []
        prompt = self._policy.prompt(self._offset, opts.prompt_chars)
        pause = trailing_silence >= opts.endpoint_silence
        hypothesis = self._decode(self._buffer, prompt, final or pause)
        self.decodes += 1
        words = [w for w in (h.shifted(self._offset) for h in hypothesis) if speech_at(w)]
        buffer_end = self._offset + duration
        committed = self._policy.insert(words, buffer_end - opts.commit_margin)
        if final:
            return committed
        if pause and self._policy.tentative:
            # A pause: the speaker finished this stretch, the hypothesis will not improve.
            committed += self._policy.commit_all()
        return committed + self._trim(duration, trailing_silence)

    def _take_pending(self) -> None:
        if not self._pending:
            return
        new = np.concatenate(self._pending)
        self._pending, self._pending_samples = [], 0
        self._buffer = np.concatenate([self._buffer, new])
        self._stream_samples += len(new)
        if self._detector is None:
            count = self._stream_samples // self._window - len(self._speech)
            probs = np.ones(count, dtype=np.float32)
        else:
            probs = self._detector.probabilities(new)
        self._speech = np.concatenate([self._speech, probs >= self.options.speech_threshold])

    def _speech_in_buffer(self) -> tuple[Callable[[Word], bool], float, float]:
        """(word-overlaps-speech test, seconds of speech, trailing silence) for the buffer."""
        step = self._window / SAMPLE_RATE
        first = int(self._offset / step)
        mask = self._speech[first:]
        pad = round(self.options.speech_pad / step)
        widened = mask.copy()
        for shift in range(1, pad + 1):
            widened[shift:] |= mask[:-shift]
            widened[:-shift] |= mask[shift:]
        hits = np.flatnonzero(mask)
        buffer_end = self._offset + len(self._buffer) / SAMPLE_RATE
        trailing = buffer_end - (first + hits[-1] + 1) * step if len(hits) else buffer_end

        def speech_at(word: Word) -> bool:
            lo = max(int(word.start / step) - first, 0)
            hi = int(word.end / step) - first + 1
            return bool(widened[lo:hi].any()) if hi > lo else False

        return speech_at, len(hits) * step, trailing

    def _trim(self, duration: float, trailing_silence: float) -> list[Word]:
        """Shorten the buffer; return words force-committed to do so (usually none)."""
        opts = self.options
        in_buffer = [w for w in self._policy.committed if w.end > self._offset + _EPSILON]
        sentence_ends = [w for w in in_buffer if w.text.rstrip().endswith(_SENTENCE_END)]
        if not self._policy.tentative and in_buffer and trailing_silence >= opts.endpoint_silence:
            self._cut_at(in_buffer[-1].end)  # all said so far is committed
        elif sentence_ends:
            self._cut_at(sentence_ends[-1].end)
        elif duration > opts.max_buffer:
            if in_buffer:
                self._cut_at(in_buffer[-1].end)
            if len(self._buffer) / SAMPLE_RATE > opts.max_buffer / 2:
                # Agreement is not keeping up: accept the hypothesis rather than stall.
                forced = self._policy.commit_all()
                last = self._policy.committed[-1].end if self._policy.committed else 0.0
                buffer_end = self._offset + len(self._buffer) / SAMPLE_RATE
                self._cut_at(max(last, buffer_end - opts.max_buffer / 2))
                return forced
        return []

    def _cut_at(self, time: float) -> None:
        """Drop buffered audio before stream time ``time`` (never into a pending word)."""
        if self._policy.tentative:
            time = min(time, self._policy.tentative[0].start)
        drop = round((time - self._offset) * SAMPLE_RATE)
        drop = max(0, min(drop, len(self._buffer)))
        if drop:
            self._buffer = self._buffer[drop:]
            self._offset += drop / SAMPLE_RATE
            log.debug("= buffer trimmed to start at %.2f s", self._offset)

    def _render(self, words: Sequence[Word]) -> str:
        text = "".join(w.text for w in words)
        if not self._emitted:
            text = text.lstrip()
        self._emitted += text
        return text
