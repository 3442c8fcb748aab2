"""The streaming policy with a scripted recogniser and speech detector (no model)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pytest

from captioner.engine.streaming import (
    SAMPLE_RATE,
    Reading,
    StreamingOptions,
    StreamingTranscriber,
    word_key,
)

CHUNK = 4096  # 128 ms of PCM16


@dataclass(frozen=True)
class Said:
    start: float
    end: float
    text: str  # with its leading space


def words(text: str, start: float = 0.2, step: float = 0.4) -> list[Said]:
    return [Said(start + i * step, start + i * step + step - 0.1, " " + token)
            for i, token in enumerate(text.split())]


def script(*phrases: str, pause: float = 1.2, step: float = 0.4) -> list[Said]:
    """Truth: phrases one after another, ``pause`` seconds of silence apart."""
    out: list[Said] = []
    t = 0.3
    for phrase in phrases:
        said = words(phrase, t, step)
        out += said
        t = said[-1].end + pause
    return out


class ScriptedSpeech:
    """A fake recogniser that 'hears' the truth words inside the window it is given.

    Like Whisper it hears a word still being spoken as a truncated word, and
    takes the prefix it is given as what was said (which must be what it hears).
    """

    def __init__(self, truth: Sequence[Said]) -> None:
        self.truth = list(truth)
        self.transcriber: StreamingTranscriber | None = None
        self.calls: list[tuple[float, float, str, str, bool]] = []  # start, end, ctx, prefix

    def __call__(self, audio: np.ndarray, context: str, prefix: str, final: bool) -> list[str]:
        assert self.transcriber is not None
        start = self.transcriber.decode_start
        end = start + len(audio) / SAMPLE_RATE
        self.calls.append((start, end, context, prefix, final))
        heard = [w for w in self.truth if w.end > start + 0.05 and w.start < end - 0.05]
        texts = [w.text if w.end <= end + 0.02 else w.text[: max(2, len(w.text) // 2)]
                 for w in heard]
        given = [word_key(p) for p in prefix.split()]
        assert [word_key(t) for t in texts[: len(given)]] == given, (prefix, texts)
        return texts[len(given):]


class ScriptedDetector:
    """Speech probability 1.0 wherever ``speaking(time)`` is true."""

    window = 512

    def __init__(self, speaking: Callable[[float], bool]) -> None:
        self.speaking = speaking
        self.samples = 0
        self.pending = 0
        self.calls = 0

    def probabilities(self, audio: np.ndarray) -> np.ndarray:
        self.calls += 1
        self.pending += len(audio)
        count = self.pending // self.window
        self.pending -= count * self.window
        first = self.samples // self.window
        self.samples += count * self.window
        times = [(first + i + 0.5) * self.window / SAMPLE_RATE for i in range(count)]
        return np.array([1.0 if self.speaking(t) else 0.0 for t in times], dtype=np.float32)


def during(truth: Sequence[Said]) -> Callable[[float], bool]:
    return lambda t: any(w.start <= t <= w.end for w in truth)


def make(truth: Sequence[Said], speaking: Callable[[float], bool] | None = None,
         **options: float) -> tuple[StreamingTranscriber, ScriptedSpeech]:
    speech = ScriptedSpeech(truth)
    detector = ScriptedDetector(speaking or during(truth))
    transcriber = StreamingTranscriber(speech, detector, StreamingOptions(**options))
    speech.transcriber = transcriber
    return transcriber, speech


def pushes(transcriber: StreamingTranscriber, seconds: float, chunk: int = CHUNK
           ) -> Iterator[str]:
    """Push ``seconds`` of (non-silent) audio in chunks; yield each push's delta."""
    pcm = np.full(int(seconds * SAMPLE_RATE), 1000, dtype="<i2").tobytes()
    for i in range(0, len(pcm), chunk):
        yield transcriber.push(pcm[i : i + chunk])


def feed(transcriber: StreamingTranscriber, seconds: float, chunk: int = CHUNK) -> list[str]:
    return list(pushes(transcriber, seconds, chunk))


def rendered(truth: Sequence[Said]) -> str:
    return "".join(w.text for w in truth).strip()


def test_utterances_are_transcribed_exactly_once_and_append_only() -> None:
    truth = script("the quick brown fox jumps over the lazy dog",
                   "then it runs into the forest and hides",
                   "nobody sees it again until spring")
    transcriber, speech = make(truth)
    deltas = feed(transcriber, truth[-1].end + 2.0)
    assert "".join(deltas) == rendered(truth)  # every utterance ended at its pause
    assert transcriber.finish() == ""
    finals = [call for call in speech.calls if call[4]]
    assert len(finals) == 3
    # Later utterances hear their own audio with earlier text as context; the short
    # last one (1.8 s of speech) after the one before it, whose words it is given.
    assert finals[1][0] > truth[8].end and "lazy dog" in finals[1][2] and not finals[1][3]
    assert finals[2][0] > truth[8].end and "lazy dog" in finals[2][2]
    assert finals[2][3] == " then it runs into the forest and hides"


def test_agreed_words_stay_live_until_the_utterance_ends() -> None:
    truth = script("one two three four five six seven eight nine ten", step=0.5)
    transcriber, speech = make(truth, interval=0.5)  # live decodes every ~0.6 s
    early = "".join(feed(transcriber, truth[6].end))
    assert early == ""  # nothing is committed before the pause …
    assert transcriber.tentative.startswith("one two three four")  # … but it is shown
    assert any(prefix for *_, prefix, final in speech.calls if not final)  # and agreed
    text = "".join(feed(transcriber, truth[-1].end - truth[6].end + 1.5))
    assert text == rendered(truth) and transcriber.tentative == ""
    assert transcriber.finish() == ""


def scripted(live: list[str], final: Callable[[str], list[str]]
             ) -> Callable[[np.ndarray, str, str, bool], list[str]]:
    """A decoder whose live decodes always hear ``live`` (words after the prefix) and
    whose final decodes answer ``final(prefix)``."""
    def decoder(audio: np.ndarray, context: str, prefix: str, final_decode: bool) -> list[str]:
        if final_decode:
            return final(prefix)
        return live[len(prefix.split()):]
    return decoder


def run_one_utterance(decoder: Callable[[np.ndarray, str, str, bool], list[str]]) -> str:
    speaking = lambda t: 0.2 <= t <= 3.0  # noqa: E731 - one utterance, then silence
    transcriber = StreamingTranscriber(decoder, ScriptedDetector(speaking), StreamingOptions())
    return "".join(feed(transcriber, 5.0)) + transcriber.finish()


def test_the_final_decode_corrects_what_live_decodes_agreed_on_early() -> None:
    """Paced tiny.en: two live decodes of "And so, my fellow Americans" agreed on
    "And so am I fellow"; the final decode, hearing the whole utterance with beam
    search, reads it right, and its reading is what is committed."""
    live = [" And", " so", " am", " I", " fellow", " Americans."]
    right = [" And", " so,", " my", " fellow", " Americans."]
    text = run_one_utterance(scripted(live, lambda prefix: right if not prefix else []))
    assert text == "And so, my fellow Americans."


def test_a_final_that_skips_agreed_words_is_decoded_again_after_them() -> None:
    """A final that leaves out words two live decodes agreed on skipped speech (a
    prompt that ends with the same phrase makes Whisper do that): the utterance is
    decoded again from the agreed words on, so none is lost."""
    live = [" ask", " what", " you", " can", " do", " for", " your", " country."]
    calls: list[str] = []

    def final(prefix: str) -> list[str]:
        calls.append(prefix)
        skipped = [" can", " do", " for", " your", " country."]
        return skipped if not prefix else live[len(prefix.split()):]

    text = run_one_utterance(scripted(live, final))
    assert text == "ask what you can do for your country."
    assert calls[0] == "" and calls[1].startswith(" ask what you")


def test_a_final_that_loops_with_a_word_changed_is_cut_where_the_loop_starts() -> None:
    """The telephone sonnet: live decodes read "some very creatures we desire in three."
    and the final, hearing barely more, "some various creatures we desire and create.
    From various creatures we desire and create." — more words than its 2.8 s of speech
    hold and than the live text had, ending in a near copy (one word changed, so not
    the exact loop the decoder cuts itself). The copy goes; nothing said twice."""
    live = [" some", " very", " creatures", " we", " desire", " in", " three."]
    once = [" some", " various", " creatures", " we", " desire", " and", " create."]
    looped = [*once, " From", *once[1:]]
    text = run_one_utterance(scripted(live, lambda prefix: looped if not prefix else []))
    assert text == "some various creatures we desire and create."


@pytest.mark.parametrize("loops", [False, True], ids=["reads-on", "echoes"])
def test_a_final_that_stops_after_a_few_words_is_decoded_on_after_them(loops: bool) -> None:
    """The telephone sonnet: tiny.en read 4 s of speech as "By self-" and ended its
    answer there, in the live decodes and the final alike (so no live text shows what
    it left out). A final this far under what its speech holds is decoded again after
    its own words, and what that reads is committed after them — unless it only says
    them again ("By self- By self-" would double a phrase)."""
    stopped = [" By", " self-"]
    rest = ["sized", " foes,", " to", " die,", " sweet", " self,", " too", " cool."]
    calls: list[str] = []

    def final(prefix: str) -> list[str]:
        calls.append(prefix)
        return stopped if not prefix or loops else rest

    text = run_one_utterance(scripted(stopped, final))
    assert text == ("By self-" if loops else "By self-sized foes, to die, sweet self, too cool.")
    assert calls == ["", " By self-"]  # no prompt here: nothing to hear it without


@pytest.mark.parametrize("loops", [False, True], ids=["reads-on", "echoes"])
def test_a_final_that_ends_before_words_a_live_decode_read_is_decoded_on(loops: bool) -> None:
    """The sonnet as the app heard it: the last live decode of a 14.5 s window read
    "… within thine own bud, buriest thy content, and tender churro makes waste in",
    and the final, hearing 0.9 s more, ended at "within thine own bud," — the next
    utterance began at "pity the world", so ten words said were never committed. A
    final that lacks the last live words of a decode that heard less is decoded again
    after its own words; an answer that only says them again is not taken."""
    said = [" the", " gaudy", " spring,", " within", " thine", " own", " bud,", " buriest",
            " thy", " content,", " and", " tender", " churl", " makes", " waste", " in"]
    calls: list[str] = []

    def decoder(audio: np.ndarray, context: str, prefix: str, final: bool) -> list[str]:
        given = len(prefix.split())
        if final:
            calls.append(prefix)
            return said[:8] if not given else said[4:8] if loops else said[given:]
        heard = int((len(audio) / SAMPLE_RATE - 0.2) / 5.4 * len(said))
        return said[given:heard]

    speaking = lambda t: 0.2 <= t <= 5.6  # noqa: E731 - one utterance, then silence
    options = StreamingOptions(interval=2.0, interval_per_second=0.0, max_interval=2.0)
    transcriber = StreamingTranscriber(decoder, ScriptedDetector(speaking), options)
    text = "".join(feed(transcriber, 8.0)) + transcriber.finish()
    assert text == "".join(said[:8] if loops else said).strip()
    assert calls == ["", "".join(said[:8])]


def stops_reading(truth: Sequence[Said], at: float, speech: ScriptedSpeech,
                  transcriber: StreamingTranscriber, signals: bool = True
                  ) -> Callable[[np.ndarray, str, str, bool], list[str]]:
    """``speech``, but every decode of audio from before ``at`` s of the stream to past
    it stops reading there until a final has (the way tiny.en stopped a 15 s window at
    "… and rather", its live decodes too): it answers only the words said before then,
    the final as a ``Reading`` stopped there when ``signals``."""
    stopped: list[float] = []

    def decoder(audio: np.ndarray, context: str, prefix: str, final: bool) -> list[str]:
        heard = speech(audio, context, prefix, final)
        start = transcriber.decode_start
        if stopped or not start < at < start + len(audio) / SAMPLE_RATE:
            return heard
        before = [w.text for w in truth if start <= w.start and w.end <= at]
        kept = before[len(prefix.split()):]
        if not final:
            return kept
        stopped.append(at)
        return Reading(kept, at - start) if signals else kept
    return decoder


@pytest.mark.parametrize("signals", [True, False], ids=["stopped", "no-sign"])
def test_speech_a_final_left_unread_is_heard_again_from_where_it_stopped(signals: bool
                                                                        ) -> None:
    """Austen read for LibriVox: tiny.en read a 15 s window "… unless to be rather
    cold-hearted and rather", opened a segment at 12.68 s and ended its answer, 2.5 s of
    speech unread ("selfish is to be ill disposed") and never decoded again. A final
    that stops that way with speech after it leaves the window starting where it
    stopped: the rest is decoded again (here after the words before it, a short
    utterance at a pause). Without the sign
    nothing shows the loss, and it stays lost (what the engine did before)."""
    truth = script("unless to be rather cold hearted and rather selfish is to be ill disposed")
    transcriber, speech = make(truth)
    at = truth[8].start  # before "selfish"
    transcriber._decode = stops_reading(truth, at, speech, transcriber, signals)
    text = "".join(feed(transcriber, truth[-1].end + 2.0)) + transcriber.finish()
    if signals:
        assert text == rendered(truth)
        finals = [(start, end) for start, end, *_, final in speech.calls if final]
        assert len(finals) == 2 and finals[1][0] <= at < finals[1][1]  # heard again
    else:
        assert text == rendered(truth[:8])


def test_speech_a_final_left_unread_at_the_end_of_the_audio_is_decoded_by_finish() -> None:
    """The same stop in the final ``finish`` makes (the audio ends without a pause): the
    commit still holds every word appended before it."""
    truth = script("unless to be rather cold hearted and rather selfish is to be ill disposed")
    transcriber, speech = make(truth)
    transcriber._decode = stops_reading(truth, truth[8].start, speech, transcriber)
    text = "".join(feed(transcriber, truth[-1].end + 0.05)) + transcriber.finish()
    assert text == rendered(truth)


def test_a_final_that_stopped_where_no_speech_follows_is_not_decoded_again() -> None:
    """A stop after the last word (a pause, room tone) leaves nothing unread: the
    window moves past it and no decode is spent on it."""
    truth = script("he was not an ill disposed young man")
    transcriber, speech = make(truth)
    transcriber._decode = stops_reading(truth, truth[-1].end + 0.05, speech, transcriber)
    text = "".join(feed(transcriber, truth[-1].end + 3.0)) + transcriber.finish()
    assert text == rendered(truth)
    assert sum(1 for call in speech.calls if call[4]) == 1


def stalls_with_a_prompt(truth: Sequence[Said], at: float, speech: ScriptedSpeech,
                        transcriber: StreamingTranscriber, bare: Callable[[list[str]], list[str]]
                        ) -> Callable[[np.ndarray, str, str, bool], list[str]]:
    """``speech``, but a decode given committed text as its prompt reads nothing said
    after ``at`` s of the stream, live decodes and final alike (tiny.en after a news
    anchor's "… both of today's events."), and a final without the prompt answers
    ``bare(what it would hear)``."""
    def decoder(audio: np.ndarray, context: str, prefix: str, final: bool) -> list[str]:
        heard = speech(audio, context, prefix, final)
        start = transcriber.decode_start
        if not context:
            return bare(heard) if final and start > 0.0 else heard
        given = len(prefix.split())
        return [w.text for w in truth if start <= w.start and w.end <= at][given:]
    return decoder


@pytest.mark.parametrize(("case", "bare"), [
    pytest.param("reads-on", lambda heard: heard, id="reads-on"),
    pytest.param("reads-otherwise", lambda heard: [" Who", " could", " be", " walking"],
                 id="reads-otherwise"),
    pytest.param("loops", lambda heard: [*heard[:5], *heard[:5]], id="loops"),
])
def test_a_final_after_live_decodes_that_stalled_is_heard_without_the_prompt(
        case: str, bare: Callable[[list[str]], list[str]]) -> None:
    """A news clip: after "… despite a campaign announcement that Palin would travel
    with the GOP front runner to both of today's events." the live decodes read nothing
    of 5 s more speech and the final (prompted with the text before) ended there too;
    heard without the prompt, the window reads on ("How can you be running with a cloud
    over your head? Giving Trump the spotlight?"). When live decodes read nothing of new
    speech, the final is heard once more without the prompt and what that reading says
    after the final's last two words is committed after them — nothing when it does not
    have those words, or only says words again."""
    truth = script("both of today's events", "how can you be running with a cloud over "
                   "your head giving trump the spotlight", pause=1.5)
    transcriber, speech = make(truth)
    at = truth[8].end  # prompted, the second utterance reads "how can you be running"
    transcriber._decode = stalls_with_a_prompt(truth, at, speech, transcriber, bare)
    text = "".join(feed(transcriber, truth[-1].end + 2.0)) + transcriber.finish()
    assert text == rendered(truth if case == "reads-on" else truth[:9])
    unprompted = [call for call in speech.calls if call[4] and not call[2] and call[0] > 0]
    assert len(unprompted) == 1


def test_a_final_too_short_for_its_speech_is_heard_without_the_prompt_when_forced_on_fails(
        ) -> None:
    """The same anchor, 14 s of speech read as 14 words ("… launching a fresh attack at
    Trump for favoring big government."), and decoded on after them, forced, it answers
    nothing: heard without the prompt it reads on ("It comes to energy policy …")."""
    truth = script("a fresh attack for favoring big government",
                   "it comes to energy policy donald trump promised not only to protect the "
                   "ethanol mandate but to expand it to have the federal government do even "
                   "more picking winners and losers", pause=1.5)
    transcriber, speech = make(truth)
    at = truth[10].end  # prompted: "it comes to energy", 4 words of 9.6 s of speech
    transcriber._decode = stalls_with_a_prompt(truth, at, speech, transcriber,
                                               lambda heard: heard)
    text = "".join(feed(transcriber, truth[-1].end + 2.0)) + transcriber.finish()
    assert text == rendered(truth)


@pytest.mark.parametrize("bare_fits", [True, False], ids=["bare-fits", "bare-too"])
def test_a_final_with_more_words_than_its_speech_holds_is_heard_without_the_prompt(
        bare_fits: bool) -> None:
    """A quiet recording: prompted with the committed text, tiny.en read 3 s of "And
    here's a long pause, and I think this is probably good. Great, thanks." as 28 words
    looping over it ("… probably good. Thanks. And here's a long pause. And I think this
    is probably good. All right. Thanks. Thanks. And here's along"); without the prompt,
    right. A final with more words than its speech can hold (``FAST_WORDS`` a second) is
    heard without the prompt, and that reading is taken when it fits."""
    second = "and heres a long pause and i think this is probably good great thanks"
    truth = script("so this is the sick corpus", second, pause=1.5)
    transcriber, speech = make(truth)
    said = [w.text for w in truth[6:]]
    looped = [*said, *said[:12]]  # 26 words of 4.2 s of speech: 19 at most

    def decoder(audio: np.ndarray, context: str, prefix: str, final: bool) -> list[str]:
        heard = speech(audio, context, prefix, final)
        if transcriber.decode_start == 0.0:
            return heard  # the first utterance reads right
        if not final:
            return []  # its live decodes looped too, and were dropped
        if context:
            return looped
        return heard if bare_fits else looped[:21]

    transcriber._decode = decoder
    text = "".join(feed(transcriber, truth[-1].end + 2.0)) + transcriber.finish()
    assert text.startswith(rendered(truth[:6]))
    if bare_fits:
        assert text == rendered(truth)
    else:  # the bare reading does not fit either: not taken
        assert not text.endswith("".join(looped[:21]).strip()), text


@pytest.mark.parametrize("said", [[" Well,", " I", " see."], [" 我们今天讨论这个问题。"], []])
def test_a_final_with_as_many_words_as_its_speech_holds_is_decoded_once(said: list[str]
                                                                        ) -> None:
    """Three words in 2.8 s of speech is slow speech, not an answer that stopped early;
    a Chinese sentence is one "word" between spaces but ten said; a final that reads
    nothing is noise. None is decoded again."""
    calls: list[str] = []

    def decoder(audio: np.ndarray, context: str, prefix: str, final: bool) -> list[str]:
        if final:
            calls.append(prefix)
            return said if not prefix else [" invented"]
        text = "".join(said)  # heard as it is said, letter by letter
        shown = text[: round(len(text) * min(1.0, (len(audio) / SAMPLE_RATE - 0.2) / 2.8))]
        return re.findall(r"\s*\S+", shown)[len(prefix.split()) :]

    assert run_one_utterance(decoder) == "".join(said).strip()
    assert calls == [""]


def after_a_long_one(pause: float, joined: list[str]) -> tuple[str, list[str]]:
    """Kennedy: "And so, my fellow Americans," (2.6 s of speech), ``pause``, then "ask
    not" alone (1 s) and a long silence. The short one's final alone reads "as not...";
    heard after the first, with its words given, it reads ``joined``. Returns the text
    and each final's prefix."""
    first = [" And", " so,", " my", " fellow", " Americans,"]
    finals: list[str] = []

    def decoder(audio: np.ndarray, context: str, prefix: str, final: bool) -> list[str]:
        seconds = len(audio) / SAMPLE_RATE
        if final:
            finals.append(prefix)
        if prefix == "".join(first):
            return joined
        if seconds > 2.0 and not prefix:
            return first
        return [" as", " not..."][len(prefix.split()):] if final else []

    start = 3.0 + pause
    speaking = lambda t: 0.2 <= t <= 2.8 or start <= t <= start + 1.0  # noqa: E731
    transcriber = StreamingTranscriber(decoder, ScriptedDetector(speaking), StreamingOptions())
    text = "".join(feed(transcriber, start + 3.0)) + transcriber.finish()
    return text, finals


def test_a_short_utterance_is_heard_after_the_one_before_it() -> None:
    """Alone, 1 s of "Ask not" is a coin toss for tiny.en; heard after the utterance
    before it, whose words it is given, it reads right, and only its own words are
    committed."""
    text, finals = after_a_long_one(0.6, [" ask", " not."])
    assert text == "And so, my fellow Americans, ask not."
    assert finals == ["", " And so, my fellow Americans,"]


def test_a_short_utterance_is_heard_alone_when_that_fails_or_the_pause_is_long() -> None:
    """An answer after the earlier words that says them again, or loops ("ask not, ask
    not, ask not" on Kennedy), is not a reading, and a pause longer than
    ``long_silence`` parts the two: the short utterance's own final reads it then."""
    for joined in ([" Americans,", " ask", " not."], [" ask", " not,"] * 2 + [" ask", " not."]):
        text, finals = after_a_long_one(0.6, joined)
        assert text == "And so, my fellow Americans, as not..."
        assert finals == ["", " And so, my fellow Americans,", ""]
    text, finals = after_a_long_one(2.0, [" ask", " not."])
    assert text == "And so, my fellow Americans, as not..."
    assert finals == ["", ""]


def test_a_phrase_said_again_with_a_word_changed_is_kept() -> None:
    """Real speech says a phrase again with one word changed ("It was the best of
    times, it was the worst of times"), at a pace its speech can hold: a live text that
    missed the second half does not make the final's second half a loop."""
    best = [" It", " was", " the", " best", " of", " times,"]
    final = [*best, " it", " was", " the", " worst", " of", " times."]
    text = run_one_utterance(scripted(best, lambda prefix: final if not prefix else []))
    assert text == "".join(final).strip()


def test_tentative_text_comes_first_and_commits_never_change() -> None:
    truth = words("are you still there", 0.2)
    transcriber, _ = make(truth, first_decode_speech=0.3)
    shown, committed = [], ""
    for delta in pushes(transcriber, truth[-1].end + 1.5):
        committed += delta
        shown.append(committed + (" " if committed else "") + transcriber.tentative)
    assert committed == rendered(truth)
    first = next(i for i, text in enumerate(shown) if text.strip())
    assert (first + 1) * CHUNK / 2 / SAMPLE_RATE <= truth[0].start + 0.6  # first words ≤ 0.6 s
    assert len(shown[first]) > 0 and not shown[first].startswith(committed)


def test_repeated_phrase_is_neither_dropped_nor_doubled() -> None:
    truth = script("we were all going direct to heaven",
                   "we were all going direct the other way", pause=0.6)
    transcriber, _ = make(truth)
    text = "".join(feed(transcriber, truth[-1].end + 0.2)) + transcriber.finish()
    assert text == rendered(truth)


def test_finish_flushes_audio_that_ends_mid_sentence() -> None:
    truth = words("this is the very end of", 0.1)
    transcriber, speech = make(truth)
    before = "".join(feed(transcriber, truth[-1].end))  # no trailing silence at all
    assert before != rendered(truth)
    rest = transcriber.finish()
    assert rest and before + rest == rendered(truth)
    assert speech.calls[-1][4]  # a final decode


def test_long_speech_without_pauses_keeps_a_bounded_window() -> None:
    truth = words(" ".join(f"w{i}" for i in range(90)), 0.1, step=0.4)  # 36 s, no pause
    transcriber, speech = make(truth, max_window=6.0)
    text = "".join(feed(transcriber, truth[-1].end)) + transcriber.finish()
    assert text == rendered(truth)
    assert max(end - start for start, end, *_ in speech.calls) <= 6.0 * 1.5 + 0.5


def test_live_decodes_of_a_long_window_come_at_most_max_interval_apart() -> None:
    """The interval grows with the window (a longer decode costs more), but not past
    ``max_interval``: live words on a long utterance are not left waiting longer."""
    truth = words(" ".join(f"w{i}" for i in range(40)), 0.1, step=0.4)  # 16 s, no pause
    transcriber, speech = make(truth, max_window=20.0, max_interval=1.2)
    feed(transcriber, truth[-1].end)
    ends = [end for _start, end, _ctx, _prefix, final in speech.calls if not final]
    gaps = np.diff(ends)
    assert len(ends) > 10 and gaps.max() <= 1.2 + 0.064 + 1e-6
    assert gaps[0] < 1.0 and gaps[-1] > 1.1  # it grew with the window, then stopped


def test_long_speech_is_cut_between_words() -> None:
    phrases = [" ".join(f"p{k}w{i}" for i in range(6)) for k in range(8)]
    truth = script(*phrases, pause=0.35)  # pauses too short to end an utterance
    transcriber, speech = make(truth, max_window=6.0)
    text = "".join(feed(transcriber, truth[-1].end)) + transcriber.finish()
    assert text == rendered(truth)
    starts = sorted({start for start, *_ in speech.calls})
    assert len(starts) > 3
    assert not any(w.start < s < w.end for s in starts for w in truth)


def test_silence_is_never_decoded() -> None:
    transcriber, speech = make(words("ghost words"), lambda t: False)
    assert "".join(feed(transcriber, 5.0)) + transcriber.finish() == ""
    assert speech.calls == [] and transcriber.decodes == 0
    assert transcriber.window_seconds <= transcriber.options.preroll + 0.1


def test_same_chunks_give_the_same_decodes() -> None:
    truth = script("alpha bravo charlie delta", "echo foxtrot golf")
    runs = []
    for _ in range(2):
        transcriber, speech = make(truth)
        text = "".join(feed(transcriber, truth[-1].end + 0.3)) + transcriber.finish()
        runs.append((text, speech.calls))
    assert runs[0] == runs[1]


def test_how_the_audio_is_chunked_does_not_move_a_decode() -> None:
    # Audio devices deliver blocks of whatever size they like; the captions must
    # not depend on it (they used to move by words with the push size).
    truth = script("alpha bravo charlie delta echo foxtrot golf hotel", "india juliet kilo",
                   step=0.35)
    runs = []
    for chunk in (640, 1001, 2560, 4096, 6400):  # 20 ms, odd, 80 ms, 128 ms, 200 ms
        transcriber, speech = make(truth, interval=0.5)  # many live decodes to compare
        text = "".join(feed(transcriber, truth[-1].end + 0.3, chunk)) + transcriber.finish()
        runs.append((text, [call[:2] + call[3:] for call in speech.calls]))
    assert len({repr(run) for run in runs}) == 1
    assert runs[0][0] == rendered(truth)
    assert sum(not final for *_, final in runs[0][1]) >= 5  # live decodes were compared


def test_audio_is_held_until_a_decision_can_fall_in_it_and_no_decision_moves() -> None:
    # The speech gate and the bookkeeping wait for the earliest point where a
    # decode can be due or the utterance can end: fewer wake-ups, and every
    # decode and commit still happens in the push it did when each push was
    # looked at at once.
    truth = script("alpha bravo charlie delta echo foxtrot golf hotel", "india juliet kilo",
                   "lima", step=0.35)
    runs, looks = [], []
    for hold in (0.0, StreamingOptions().max_hold):
        transcriber, speech = make(truth, max_hold=hold)
        detector = transcriber._detector
        calls, scored = [], 0
        timeline = []  # per push: decodes so far, text committed, live text
        for delta in pushes(transcriber, truth[-1].end + 1.5, chunk=2560):  # 80 ms
            calls.append(detector.samples + detector.pending > scored)
            scored = detector.samples + detector.pending
            timeline.append((len(speech.calls), delta, transcriber.tentative))
        timeline.append((len(speech.calls), transcriber.finish(), ""))
        runs.append((timeline, speech.calls))
        looks.append(sum(calls) / len(calls))
    assert runs[0] == runs[1]
    assert "".join(delta for _, delta, _ in runs[1][0]) == rendered(truth)
    assert looks[0] == 1.0 and looks[1] < 0.5  # the gate ran at under half the pushes


def test_the_gate_scores_each_look_at_the_audio_in_one_call() -> None:
    # Its fixed cost per call is paid per look, not per grid step; the decisions
    # still see the windows up to their grid point only (the tests above).
    truth = words("one long utterance that goes on and on without any pause at all")
    transcriber, speech = make(truth)
    feed(transcriber, 3.0, chunk=SAMPLE_RATE * 2)  # three pushes of a second each
    assert transcriber._detector.calls == 3
    assert any(not final for *_, final in speech.calls)  # decisions fell inside them


def test_a_long_push_decodes_once_near_its_end() -> None:
    truth = words("one long utterance that goes on and on without any pause at all")
    transcriber, speech = make(truth, interval=0.5)  # a decode is due in every push
    lag = transcriber.options.decode_lag
    for seconds in range(1, 6):
        before = len(speech.calls)
        feed(transcriber, 1.0, chunk=SAMPLE_RATE * 2)  # one push of a whole second
        live = [call for call in speech.calls[before:] if not call[4]]
        assert len(live) == 1
        assert seconds - lag <= live[0][1] <= seconds


def test_a_push_of_many_seconds_catches_up_with_one_decode_per_utterance() -> None:
    truth = script("first words here", "second words there", "third and last")
    transcriber, speech = make(truth)
    total = truth[-1].end + 0.4
    text = "".join(feed(transcriber, total, chunk=int(total * SAMPLE_RATE) * 2))
    text += transcriber.finish()
    assert text == rendered(truth)
    assert len(speech.calls) <= 4


def test_split_samples_across_pushes_are_kept() -> None:
    truth = words("odd sized chunks", 0.1)
    transcriber, speech = make(truth)
    pcm = np.full(SAMPLE_RATE * 2, 1000, dtype="<i2").tobytes()
    for i in range(0, len(pcm), 1001):  # odd sizes split samples in half
        transcriber.push(pcm[i : i + 1001])
    transcriber.finish()
    assert speech.calls[-1][1] == pytest.approx(2.0)
    assert transcriber.emitted_chars == len(rendered(truth))


def test_push_after_finish_is_refused() -> None:
    transcriber, _ = make(words("done"))
    transcriber.finish()
    with pytest.raises(RuntimeError):
        transcriber.push(b"\0\0")


def test_live_text_that_loops_over_the_committed_word_is_not_committed_again() -> None:
    """tiny.en on "One." (the start of the sonnet reading): " 1." then " 1 1" (a short
    word looping), so " 1" is committed and " 1" stays live; the final decode, given
    " 1", rightly says nothing more. The final is shorter than the live text, but that
    live " 1" only says the committed word again: it must not be kept ("1 1")."""
    answers = iter([[" 1."], [" 1", " 1"]])

    def decoder(audio: np.ndarray, context: str, prefix: str, final: bool) -> list[str]:
        if final:
            return []
        answer = next(answers, [" 1", " 1"])
        return answer[len(prefix.split()):]

    speaking = lambda t: 0.3 <= t <= 0.9  # noqa: E731 - one short word, then silence
    options = StreamingOptions(first_decode_speech=0.2, interval=0.6, interval_per_second=0.0,
                               long_silence=0.4)  # the final comes after the second decode
    transcriber = StreamingTranscriber(decoder, ScriptedDetector(speaking), options)
    out = feed(transcriber, 3.0)
    assert [word_key(w) for w in "".join([*out, transcriber.finish()]).split()] == ["1"]


def test_a_final_that_resumes_the_prompt_is_heard_again_without_it() -> None:
    """JFK's "…what your country can do for you, ask what you can do for your
    country": given the first half as its prompt, tiny.en read the second as
    " can do for your country." (it took "ask what you" for said). The final is
    decoded again without the prompt, and the longer reading that ends the same
    way is kept."""
    context_calls: list[str] = []

    def decoder(audio: np.ndarray, context: str, prefix: str, final: bool) -> list[str]:
        if final:
            context_calls.append(context)
        skipped = [" can", " do", " for", " your", " country."]
        said = [" ask", " what", " you", *skipped]
        return (skipped if context else said)[len(prefix.split()):]

    speaking = lambda t: 0.2 <= t <= 1.8 or 3.0 <= t <= 5.0  # noqa: E731 - two utterances
    transcriber = StreamingTranscriber(decoder, ScriptedDetector(speaking), StreamingOptions())
    text = "".join(feed(transcriber, 7.0)) + transcriber.finish()
    # The first utterance has no prompt; the second resumes it and is heard again.
    assert text == "ask what you can do for your country. ask what you can do for your country."
    assert context_calls[-1] == "" and context_calls[-2].endswith("your country.")


@pytest.mark.parametrize("first_word", [" Ask", " As"], ids=["heard", "misheard"])
def test_live_text_that_loops_back_to_the_utterance_start_is_not_kept(first_word: str) -> None:
    """Kennedy's "Ask what you can do for your country." with little silence heard after
    it: a live decode looped back to its first word ("… your country. Ask"), whether or
    not the live decodes heard that word right. The final, hearing the whole utterance,
    ends at "country." — shorter than that live text, but the live words it leaves out
    only start the utterance over: the final stands."""
    said = [" Ask", " what", " you", " can", " do", " for", " your", " country."]
    live = [first_word, *said[1:]]

    def decoder(audio: np.ndarray, context: str, prefix: str, final: bool) -> list[str]:
        heard = round(len(audio) / SAMPLE_RATE / 2.0 * len(said))
        looped = [*live, " Ask"] if heard >= len(said) else live[:max(1, heard)]
        return (said if final else looped)[len(prefix.split()):]

    speaking = lambda t: 0.2 <= t <= 2.2  # noqa: E731 - one utterance, then silence
    transcriber = StreamingTranscriber(decoder, ScriptedDetector(speaking), StreamingOptions())
    text = "".join(feed(transcriber, 4.0)) + transcriber.finish()
    assert text == "".join(said).strip()


def test_live_text_that_copies_the_text_before_is_not_kept() -> None:
    """Kennedy's "ask not" on the telephone, after "And so am I fellow America." was
    committed: a live decode read the short utterance as the previous one's start again
    ("And so am I."), the final as "And stop.". The final is shorter, but the live words
    it leaves out only copy a phrase already said: a loop into the prompt, not words the
    final stopped short of. The final stands."""
    before = [" And", " so", " am", " I", " fellow", " America."]

    def decoder(audio: np.ndarray, context: str, prefix: str, final: bool) -> list[str]:
        if not context:
            answer = before
        elif final:
            answer = [" And", " stop."]
        else:
            answer = [" And", " so", " am", " I."] if len(audio) >= SAMPLE_RATE else [" And"]
        return answer[len(prefix.split()):]

    speaking = lambda t: 0.2 <= t <= 1.8 or 3.0 <= t <= 4.6  # noqa: E731 - two utterances
    transcriber = StreamingTranscriber(decoder, ScriptedDetector(speaking), StreamingOptions())
    text = "".join(feed(transcriber, 7.0)) + transcriber.finish()
    assert text == "And so am I fellow America. And stop."


def two_utterances(decoder: Callable[[np.ndarray, str, str, bool], list[str]]) -> str:
    speaking = lambda t: 0.2 <= t <= 1.8 or 3.0 <= t <= 4.6  # noqa: E731 - two utterances
    transcriber = StreamingTranscriber(decoder, ScriptedDetector(speaking), StreamingOptions())
    return "".join(feed(transcriber, 7.0)) + transcriber.finish()


def test_a_final_that_only_copies_its_prompt_is_heard_again_without_it() -> None:
    """A short, unclear utterance (a synthetic voice's "Hello there", 20 s after
    Kennedy) that the multilingual model, given the committed text as its prompt, read
    as a phrase of that text again: "Ask not what your country can do." Heard without
    the prompt it reads as what the audio holds, and that is committed instead."""
    before = [" ask", " not", " what", " your", " country", " can", " do", " for", " you."]
    prompted: list[str] = []  # the second utterance's decodes have the first as context

    def decoder(audio: np.ndarray, context: str, prefix: str, final: bool) -> list[str]:
        if context:
            prompted.append(context)
            answer = before[:6]
        else:
            answer = [" Hello", " there."] if prompted else before
        return answer[len(prefix.split()):]

    text = two_utterances(decoder)
    assert text == "ask not what your country can do for you. Hello there."


@pytest.mark.parametrize("bare", [[" AS", " NOT..."], [" ...", " ..."], [" S-S-", " S-", " S-"],
                                  [" Stop!", " Stop!"]],
                         ids=["worse", "nothing", "letters", "loop"])
def test_a_repeat_read_worse_without_the_prompt_keeps_the_prompted_reading(
        bare: list[str]) -> None:
    """Kennedy's "Ask not!" said again: heard without the prompt, tiny.en read the same
    audio as "AS NOT…", as nothing ("... ..."), as letters ("S-S- S- S-") or, on the
    telephone copy with ONNX Runtime's kernels, as a word said twice ("Stop! Stop!").
    Those are the same words read worse, not other words: the prompted reading
    stands, nothing is lost."""
    said = [" Ask", " not!"]
    prompted: list[str] = []  # the second utterance's decodes have the first as context

    def decoder(audio: np.ndarray, context: str, prefix: str, final: bool) -> list[str]:
        if context:
            prompted.append(context)
        heard_bare = final and not context and not prefix and prompted  # the second's, again
        return (bare if heard_bare else said)[len(prefix.split()):]

    assert two_utterances(decoder) == "Ask not! Ask not!"
    assert prompted, "the repeat was not heard with the first as its prompt"


def test_a_phrase_really_said_twice_is_committed_twice() -> None:
    """The other side of the rule above: when the speech does repeat a phrase, the
    reading without the prompt says it too, and it stands."""
    finals: list[str] = []

    def decoder(audio: np.ndarray, context: str, prefix: str, final: bool) -> list[str]:
        if final:
            finals.append(context)
        return [" Thank", " you."][len(prefix.split()):]

    assert two_utterances(decoder) == "Thank you. Thank you."
    assert finals[-2:] == [" Thank you.", ""]  # the repeat was heard again without the prompt
