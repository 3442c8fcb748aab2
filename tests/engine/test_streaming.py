"""LocalAgreement-2 streaming policy with scripted hypotheses (no model)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from captioner.engine.streaming import (
    SAMPLE_RATE,
    LocalAgreement,
    StreamingOptions,
    StreamingTranscriber,
    Word,
)

CHUNK = 4096  # 128 ms of PCM16


def words(text: str, start: float = 0.0, step: float = 0.4) -> list[Word]:
    out = []
    for i, token in enumerate(text.split()):
        t = start + i * step
        out.append(Word(t, t + step - 0.05, " " + token))
    return out


def script(*sentences: str, pause: float = 0.5) -> list[Word]:
    """Truth: sentences one after another, ``pause`` seconds apart."""
    out: list[Word] = []
    t = 0.2
    for sentence in sentences:
        ws = words(sentence, t)
        out += ws
        t = ws[-1].end + pause
    return out


class ScriptedSpeech:
    """A fake recogniser that 'hears' the truth words inside the buffer.

    Like Whisper it is sloppy at the edges: a word still being spoken comes
    out truncated, and a committed word just before the buffer start is heard
    again (its tail) at the buffer's start.
    """

    def __init__(self, truth: Sequence[Word]) -> None:
        self.truth = list(truth)
        self.transcriber: StreamingTranscriber | None = None
        self.calls: list[tuple[float, float, str]] = []  # (buffer start, seconds, prompt)

    def __call__(self, audio: np.ndarray, prompt: str, careful: bool = False) -> list[Word]:
        assert self.transcriber is not None
        start = self.transcriber.buffer_start
        end = start + len(audio) / SAMPLE_RATE
        self.calls.append((start, len(audio) / SAMPLE_RATE, prompt))
        out = []
        for w in self.truth:
            if w.end <= start - 0.3 or w.start >= end:
                continue
            text = w.text if w.end <= end else w.text[: max(2, len(w.text) // 2)]
            out.append(Word(max(w.start - start, 0.0), min(w.end, end) - start, text))
        return out


class ScriptedDetector:
    """Speech probability 1.0 wherever ``speaking(time)`` is true."""

    window = 512

    def __init__(self, speaking: Callable[[float], bool]) -> None:
        self.speaking = speaking
        self.samples = 0
        self.pending = 0

    def probabilities(self, audio: np.ndarray) -> np.ndarray:
        self.pending += len(audio)
        count = self.pending // self.window
        self.pending -= count * self.window
        first = self.samples // self.window
        self.samples += count * self.window
        times = [(first + i + 0.5) * self.window / SAMPLE_RATE for i in range(count)]
        return np.array([1.0 if self.speaking(t) else 0.0 for t in times], dtype=np.float32)


def during(truth: Sequence[Word]) -> Callable[[float], bool]:
    return lambda t: any(w.start <= t <= w.end for w in truth)


def make(
    truth: Sequence[Word],
    detector: ScriptedDetector | None = None,
    **options: float,
) -> tuple[StreamingTranscriber, ScriptedSpeech]:
    speech = ScriptedSpeech(truth)
    transcriber = StreamingTranscriber(speech, detector, StreamingOptions(**options))
    speech.transcriber = transcriber
    return transcriber, speech


def feed(transcriber: StreamingTranscriber, seconds: float, chunk: int = CHUNK) -> list[str]:
    pcm = np.full(int(seconds * SAMPLE_RATE), 1000, dtype="<i2").tobytes()
    return [transcriber.push(pcm[i : i + chunk]) for i in range(0, len(pcm), chunk)]


def rendered(truth: Sequence[Word]) -> str:
    return "".join(w.text for w in truth).strip()


# -- the commit rule alone ------------------------------------------------------


def test_commits_longest_common_prefix_of_two_hypotheses() -> None:
    policy = LocalAgreement()
    assert policy.insert(words("the cat sat")) == []
    committed = policy.insert(words("the cat sang along"))
    assert [w.text for w in committed] == [" the", " cat"]
    assert [w.text for w in policy.tentative] == [" sang", " along"]
    assert [w.text for w in policy.insert(words("the cat sang along today"))] == [
        " sang",
        " along",
    ]


def test_agreement_ignores_case_and_punctuation_and_takes_the_newer_word() -> None:
    policy = LocalAgreement()
    policy.insert(words("hello world"))
    committed = policy.insert(words("Hello world. How"))
    assert [w.text for w in committed] == [" Hello", " world."]


def test_committed_words_are_not_committed_again() -> None:
    policy = LocalAgreement()
    policy.insert(words("one two three"))
    policy.insert(words("one two three four"))
    # The decoder sees the same audio again: nothing new agrees yet.
    assert policy.insert(words("one two three four five")) == [words("one two three four")[3]]
    assert [w.text for w in policy.committed] == [" one", " two", " three", " four"]


def test_seam_repeat_after_a_trim_is_dropped() -> None:
    policy = LocalAgreement()
    policy.insert(words("good morning everyone"))
    policy.insert(words("good morning everyone"))
    end = policy.last_end
    # Re-decoded from the trim point, the last committed word is heard again.
    again = [Word(end - 0.05, end + 0.1, " everyone"), *words("welcome back", end + 0.2)]
    assert policy.insert(again) == []
    assert [w.text for w in policy.tentative] == [" welcome", " back"]


def test_commit_all_flushes_the_pending_hypothesis() -> None:
    policy = LocalAgreement()
    policy.insert(words("see you"))
    assert [w.text for w in policy.commit_all()] == [" see", " you"]
    assert policy.tentative == []
    assert policy.commit_all() == []


def test_prompt_is_committed_text_before_the_buffer_capped() -> None:
    policy = LocalAgreement()
    truth = words("alpha beta gamma delta")
    policy.insert(truth)
    policy.insert(truth)
    assert policy.prompt(before=truth[1].end, max_chars=200) == "alpha beta"
    assert policy.prompt(before=truth[-1].end, max_chars=11) == "gamma delta"


# -- the streaming transcriber --------------------------------------------------


def test_stream_reproduces_the_script_append_only_across_trims() -> None:
    truth = script(
        "the quick brown fox jumps over the lazy dog.",
        "then it runs into the forest and hides.",
        "nobody sees it again until spring.",
    )
    transcriber, speech = make(truth, update_interval=0.5)
    deltas = feed(transcriber, truth[-1].end + 0.3)
    before_finish = "".join(deltas)
    deltas.append(transcriber.finish())

    assert "".join(deltas) == transcriber.text == rendered(truth)
    assert before_finish and len(before_finish) < len(transcriber.text)
    assert [w.text for w in transcriber.committed] == [w.text for w in truth]
    # Trimmed at sentence ends: later decodes start after the first sentence and
    # are prompted with the committed text they no longer hear.
    first_end = truth[8].end
    later = [(start, prompt) for start, _, prompt in speech.calls if start >= first_end]
    assert later and all(prompt.startswith("the quick brown fox") for _, prompt in later)


def test_deltas_read_naturally_when_concatenated() -> None:
    truth = script("hello there.", "how are you today?")
    transcriber, _ = make(truth, update_interval=0.5)
    deltas = [*feed(transcriber, truth[-1].end + 0.2), transcriber.finish()]
    text = "".join(deltas)
    assert text == "hello there. how are you today?"
    assert not text.startswith(" ") and "  " not in text


def test_finish_flushes_the_last_hypothesis() -> None:
    truth = words("this is the very end", 0.1)
    transcriber, _ = make(truth, update_interval=1.0)
    feed(transcriber, truth[-1].end + 0.1)
    assert transcriber.text != rendered(truth)  # last words still unconfirmed
    rest = transcriber.finish()
    assert rest and transcriber.text == rendered(truth)
    assert transcriber.text.endswith(rest)


def test_push_between_updates_only_stores_audio() -> None:
    truth = words("one two three four five six", 0.1)
    transcriber, speech = make(truth, update_interval=1.0)
    outputs = feed(transcriber, 7 * CHUNK / 2 / SAMPLE_RATE)  # 0.896 s
    assert outputs == [""] * 7 and speech.calls == []
    feed(transcriber, CHUNK / 2 / SAMPLE_RATE)  # reaches 1.024 s
    assert len(speech.calls) == 1


def test_split_samples_across_pushes_are_kept() -> None:
    truth = words("odd sized chunks", 0.1)
    transcriber, speech = make(truth, update_interval=0.5)
    pcm = np.full(SAMPLE_RATE * 2, 1000, dtype="<i2").tobytes()
    for i in range(0, len(pcm), 1001):  # odd sizes split samples in half
        transcriber.push(pcm[i : i + 1001])
    transcriber.finish()
    heard = sum(seconds for start, seconds, _ in speech.calls if start == 0.0 and seconds >= 2.0)
    assert heard == pytest.approx(2.0)
    assert transcriber.text == rendered(truth)


def test_silence_is_never_decoded() -> None:
    transcriber, speech = make(words("ghost words"), ScriptedDetector(lambda t: False))
    assert "".join(feed(transcriber, 5.0)) + transcriber.finish() == ""
    assert speech.calls == [] and transcriber.decodes == 0


def test_words_outside_speech_are_dropped() -> None:
    said = words("real words here", 0.2)
    invented = Word(3.0, 3.5, " thanks")
    transcriber, _ = make([*said, invented], ScriptedDetector(during(said)))
    feed(transcriber, 4.0)
    transcriber.finish()
    assert transcriber.text == "real words here"


def test_pause_commits_without_waiting_for_agreement_and_trims() -> None:
    said = words("are you still there", 0.2)
    transcriber, _ = make(said, ScriptedDetector(during(said)), update_interval=1.0)
    text = "".join(feed(transcriber, said[-1].end + 2.0))
    assert text == "are you still there"
    assert transcriber.buffer_start >= said[-1].end - 0.01
    assert transcriber.finish() == ""


def test_buffer_stays_bounded_when_hypotheses_never_agree() -> None:
    truth = words(" ".join(f"w{i}" for i in range(60)), 0.1)  # 24 s, no sentence end
    calls = 0

    def fickle(audio: np.ndarray, prompt: str, careful: bool) -> list[Word]:
        nonlocal calls
        calls += 1
        heard = speech(audio, prompt, careful)
        return [Word(w.start, w.end, f"{w.text}_{calls}") for w in heard]

    speech = ScriptedSpeech(truth)
    transcriber = StreamingTranscriber(fickle, None, StreamingOptions(max_buffer=4.0))
    speech.transcriber = transcriber
    before = "".join(feed(transcriber, 24.5))
    transcriber.finish()

    assert before  # forced commits happened before the end
    assert max(seconds for _, seconds, _ in speech.calls) <= 4.0 + 1.0 + 0.2
    starts = [w.start for w in transcriber.committed]
    ends = [w.end for w in transcriber.committed]
    assert all(a >= b - 1e-6 for a, b in zip(starts[1:], ends, strict=False))  # no overlap


def test_push_after_finish_is_refused() -> None:
    transcriber, _ = make(words("done"))
    transcriber.finish()
    with pytest.raises(RuntimeError):
        transcriber.push(b"\0\0")
