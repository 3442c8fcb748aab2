"""A strict Realtime test server whose words follow the audio content, with faults.

:class:`SpeechScript` is a real recording (16 kHz PCM16) and the words in it with
their times (from the embedded Whisper model on the whole file, computed once per
test session). :class:`ScriptedTranscriber` plugs into the local
:class:`~captioner.engine.server.RealtimeServer` like any transcriber, but instead
of recognising speech it *finds* the received audio in the recording (so a request
may start anywhere) and says each word Voxtral-style, ``DELAY_SECONDS`` after the
word's audio has arrived — only if at least half of the word's audio reached this
request. Audio that is not a contiguous piece of the recording is recorded as a
violation. So the words a client shows are exactly the words of the audio it sent:
audio lost or sent twice shows up as words lost or doubled.

:class:`Faults` makes the transcriber misbehave the ways real servers do: text that
stops while audio flows (a stall), a 64 KiB delta, a context limit, a processing
error in mid-sentence.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pytest
from scipy import signal

from tests.support.speech_set import SpeechClip, clip
from tests.support.transcribers import ThreadedServer

RATE = 16_000
BYTES_PER_SECOND = RATE * 2
DELAY_SECONDS = 0.48  # Voxtral's recommended delay between a word's audio and its text
TOKENS_PER_SECOND = 12.5
LOCATE_SECONDS = 0.5  # audio needed to find where a request starts
SAMPLE_TOLERANCE = 2  # PCM16 steps a float round trip may move a sample
IMPOSSIBLE_TEXT = "times " * (65536 // 6)  # ≈ 64 KiB: no audio carries that


@dataclass(frozen=True, slots=True)
class TimedWord:
    text: str
    start: float
    end: float


@dataclass(frozen=True)
class SpeechScript:
    pcm: bytes
    words: tuple[TimedWord, ...]

    @property
    def seconds(self) -> float:
        return len(self.pcm) / BYTES_PER_SECOND

    @property
    def text_words(self) -> list[str]:
        return [w.text for w in self.words]

    def samples(self) -> np.ndarray:
        return np.frombuffer(self.pcm, "<i2")


@dataclass
class Faults:
    """What the server does wrong; ages are seconds of audio into a request."""

    stall_at: float | None = None  # text stops from this request age…
    stall_requests: int = 1  # …in this many requests (then it recovers)
    impossible_at: float | None = None  # one 64 KiB delta at this age (first request)
    impossible_replaces_word: bool = True  # …instead of the word due then
    max_model_len: int | None = None  # tokens; a longer request fails like vLLM's
    error_at: float | None = None  # one plain processing error (first request)
    compute: float = 0.0  # s of work per s of audio: a real engine is not instant


@dataclass
class ServerLog:
    """What the strict server saw, for the test to check."""

    requests: list[ScriptedTranscriber] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def stalls(self) -> int:
        return sum(r.stalled for r in self.requests)


class ScriptedTranscriber:
    """One request: locate its audio in the script, emit the words it carries."""

    def __init__(self, script: SpeechScript, faults: Faults, log: ServerLog) -> None:
        self.script = script
        self.faults = faults
        self.log = log
        with log.lock:
            self.index = len(log.requests)
            log.requests.append(self)
        self.received = bytearray()
        self.start: float | None = None  # where in the script this request's audio begins
        self.next_word = 0
        self.stalled = False
        self.sent_impossible = False
        self.failed = False

    # --- Transcriber ---------------------------------------------------------

    def push(self, pcm: bytes) -> str:
        time.sleep(self.faults.compute * len(pcm) / BYTES_PER_SECOND)
        self.received += pcm
        if self.start is None and not self._locate():
            return ""
        self._check_contiguous(len(self.received) - len(pcm))
        age = len(self.received) / BYTES_PER_SECOND
        self._maybe_fail(age)
        return self._emit(age, final=False)

    def finish(self) -> str:
        if not self.received:
            self._violation("a final commit with no generation running (an empty request)")
        if self.start is None and self.received:
            self._locate(force=True)
        age = len(self.received) / BYTES_PER_SECOND
        return self._emit(age, final=True) if self.start is not None else ""

    # --- locating ----------------------------------------------------------------

    def _locate(self, force: bool = False) -> bool:
        n = len(self.received) // 2
        if n < LOCATE_SECONDS * RATE and not force:
            return False
        block = np.frombuffer(bytes(self.received[: n * 2]), "<i2")[: int(LOCATE_SECONDS * RATE)]
        found = bytes(self.script.pcm).find(block.tobytes())
        if found >= 0 and found % 2 == 0:
            self.start = found / BYTES_PER_SECOND
            return True
        script = self.script.samples().astype(np.float64)
        ref = block.astype(np.float64)
        if len(ref) == 0 or len(ref) > len(script):
            return self._violation("a request's audio is not in the recording")
        corr = signal.correlate(script, ref, mode="valid", method="fft")
        offset = int(np.argmax(corr))
        if np.max(np.abs(script[offset:offset + len(ref)] - ref)) > SAMPLE_TOLERANCE:
            return self._violation("a request's audio is not in the recording")
        self.start = offset / RATE
        return True

    def _check_contiguous(self, from_byte: int) -> None:
        if self.start is None:
            return
        got = np.frombuffer(bytes(self.received[from_byte:]), "<i2").astype(np.int32)
        at = int(self.start * RATE) + from_byte // 2
        want = self.script.samples()[at:at + len(got)].astype(np.int32)
        if len(want) != len(got) or (len(got) and np.max(np.abs(want - got)) > SAMPLE_TOLERANCE):
            self._violation(f"request {self.index}: audio at {at / RATE:.2f} s is not the "
                            "recording's continuation")

    def _violation(self, what: str) -> bool:
        with self.log.lock:
            if what not in self.log.violations:
                self.log.violations.append(what)
        return False

    # --- speaking ------------------------------------------------------------------

    def _heard(self, word: TimedWord, upto: float) -> bool:
        """At least half of the word's audio lies in [start, upto]."""
        assert self.start is not None
        overlap = min(word.end, upto) - max(word.start, self.start)
        return overlap >= (word.end - word.start) / 2

    def _emit(self, age: float, *, final: bool) -> str:
        assert self.start is not None
        now = self.start + age
        due = now if final else now - DELAY_SECONDS
        out = []
        words = self.script.words
        while self.next_word < len(words) and words[self.next_word].end <= due + 1e-6:
            word = words[self.next_word]
            self.next_word += 1
            if word.start < self.start and not self._heard(word, now):
                continue
            if self._impossible_due(age):
                out.append(" " + IMPOSSIBLE_TEXT)
                if self.faults.impossible_replaces_word:
                    continue
            out.append(" " + word.text)
        if final:
            # the last word cut by the end of the audio, if most of it was heard
            while self.next_word < len(words) and self._heard(words[self.next_word], now):
                out.append(" " + words[self.next_word].text)
                self.next_word += 1
        if self._stalling(age):
            self.stalled = True
            return ""
        return "".join(out)

    def _stalling(self, age: float) -> bool:
        f = self.faults
        return f.stall_at is not None and age >= f.stall_at and self.index < f.stall_requests

    def _impossible_due(self, age: float) -> bool:
        f = self.faults
        if f.impossible_at is None or self.index > 0 or self.sent_impossible:
            return False
        if age >= f.impossible_at:
            self.sent_impossible = True
            return True
        return False

    def _maybe_fail(self, age: float) -> None:
        f = self.faults
        tokens = round(age * TOKENS_PER_SECOND)
        if f.max_model_len is not None and tokens > f.max_model_len:
            self.failed = True
            raise ValueError(f"The decoder prompt (length {tokens}) is longer than the maximum "
                             f"model length of {f.max_model_len}. Make sure that "
                             "`max_model_len` is no smaller than the number of text tokens.")
        if f.error_at is not None and self.index == 0 and age >= f.error_at and not self.failed:
            self.failed = True
            raise RuntimeError("CUDA error: an illegal memory access was encountered")


class StrictSpeechServer(ThreadedServer):
    """The local Realtime server with the scripted transcriber behind it."""

    def __init__(self, script: SpeechScript, faults: Faults | None = None) -> None:
        self.script = script
        self.faults = faults or Faults()
        self.log = ServerLog()
        super().__init__(lambda: ScriptedTranscriber(self.script, self.faults, self.log))


# --- scripts from recordings ---------------------------------------------------------


def timed_words(pcm: bytes) -> tuple[TimedWord, ...]:
    """Whole-file word times from the embedded Whisper model (the offline reference)."""
    from captioner.engine.whisper import WhisperEngine  # heavy: only when a script is made

    audio = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768
    words = WhisperEngine().timed_words(audio)
    return tuple(TimedWord(text.strip(), start, end) for text, start, end in words if text.strip())


_scripts: dict[str, SpeechScript] = {}


def script_for(clip: SpeechClip) -> SpeechScript:
    """The script of a real-speech clip, made once per test session."""
    if clip.name not in _scripts:
        pcm = clip.pcm16()
        _scripts[clip.name] = SpeechScript(pcm, timed_words(pcm))
    return _scripts[clip.name]


@pytest.fixture(scope="session")
def jfk_script() -> SpeechScript:
    """11 s of Kennedy: "ask not what your country can do for you, ask what you…"."""
    return script_for(clip("jfk"))


@pytest.fixture(scope="session")
def sonnet_script() -> SpeechScript:
    """53 s of Shakespeare's first sonnet, read for LibriVox."""
    return script_for(clip("sonnet"))


@pytest.fixture
def strict_server() -> Iterator[Callable[..., StrictSpeechServer]]:
    """``strict_server(script, faults)`` → a started StrictSpeechServer, stopped after."""
    started: list[StrictSpeechServer] = []

    def start(script: SpeechScript, faults: Faults | None = None) -> StrictSpeechServer:
        server = StrictSpeechServer(script, faults).__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)
