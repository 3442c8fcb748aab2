"""The embedded engine with the real bundled tiny.en model on real human speech.

Streaming is held to the offline transcription of the same model on the same
clips (the real-speech set in tests/data/speech), fed as fast as possible and
at a simulated real-time pace; and to what no transcript may do: lose the end
of the audio, drop or double a repeated phrase, or caption silence and noise.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pytest
from websockets.sync.client import connect

from captioner.engine import whisper
from captioner.engine.streaming import SAMPLE_RATE, StreamingTranscriber
from captioner.engine.vad import SileroGate
from captioner.engine.whisper import WhisperEngine, is_hallucination, without_loop
from captioner.settings import AudioSettings
from tests.support.speech_set import (
    AUSTEN,
    CAPTURED,
    SpeechClip,
    Trait,
    clip,
    normalise,
    word_errors,
)
from tests.support.transcribers import ThreadedServer

CHUNK = AudioSettings().chunk_bytes  # 80 ms pushes, as the app sends them
BYTES_PER_SECOND = 2 * SAMPLE_RATE
# Streaming may be this much worse than offline, no more. The goal is one point
# (bench/bench_engine.py prints it on the whole set). Measured on these clips (133
# words) with decisions on the default 64 ms grid: +3 words as fast as possible
# (2.3 points), +2 at the simulated slow pace (1.5); on the other grids the bench sweeps
# (32–160 ms), where live decodes land moves a few words of the noisy clip either
# way. Offline itself moves by up to two points from one process to the next
# (CTranslate2's int8 kernels), which is the room left above the measured figure.
# Paced was +2 to +4 words when live agreements were committed. On a CPU with
# AVX-512 and AMX int8 kernels the same code made +4 words in both modes (Kennedy's
# "ask not" read "as not" on each of his three clips): one margin for both.
FAST_WER_MARGIN = 0.04
PACED_WER_MARGIN = 0.04
# Every trait of the set, in 65 s of audio (the 53 s readings are the benchmark's).
TESTED = [clip(name) for name in ("sonnet_cut", "jfk", "jfk_cut", "jfk_phone")]


def fast(transcriber: StreamingTranscriber, pcm: bytes) -> list[str]:
    deltas = [transcriber.push(pcm[i : i + CHUNK]) for i in range(0, len(pcm), CHUNK)]
    return [*deltas, transcriber.finish()]


def paced(transcriber: StreamingTranscriber, pcm: bytes, seconds_per_decoded_second: float,
          seconds_per_decode: float) -> list[str]:
    """Real-time arrival on a simulated clock, as the server feeds a busy transcriber.

    Chunks arrive every 80 ms of audio; while a push is "busy" (its decodes
    cost a fixed time each plus a time per decoded audio second), the chunks
    that arrive wait and go in together with the next push. No sleeping.
    """
    deltas, clock, sent = [], 0.0, 0
    while sent < len(pcm):
        arrived = min(len(pcm), max(sent + CHUNK, int(clock * BYTES_PER_SECOND) // CHUNK * CHUNK))
        clock = max(clock, arrived / BYTES_PER_SECOND)
        decodes, decoded = transcriber.decodes, transcriber.decoded_seconds
        deltas.append(transcriber.push(pcm[sent:arrived]))
        sent = arrived
        clock += (transcriber.decodes - decodes) * seconds_per_decode
        clock += (transcriber.decoded_seconds - decoded) * seconds_per_decoded_second
    return [*deltas, transcriber.finish()]


@pytest.fixture(scope="module")
def engine() -> WhisperEngine:
    return WhisperEngine(threads=2)


@pytest.fixture(scope="module")
def offline(engine: WhisperEngine) -> dict[str, str]:
    """The same model on each whole clip, the standard way: the bar streaming must meet."""
    return {c.name: engine.transcribe(c.samples(), beam_size=1) for c in TESTED}


@pytest.fixture(scope="module")
def streamed(engine: WhisperEngine) -> dict[str, list[str]]:
    """Each clip streamed as fast as possible: its deltas."""
    return {c.name: fast(engine.new_transcriber(), c.pcm16()) for c in TESTED}


def compare(texts: dict[str, str], offline: dict[str, str], clips: list[SpeechClip]
            ) -> tuple[float, float, str]:
    ours = [word_errors(c.reference, texts[c.name]) for c in clips]
    theirs = [word_errors(c.reference, offline[c.name]) for c in clips]
    words = sum(e.words for e in ours)
    detail = "\n".join(f"{c.name}: {a} vs offline {b}\n  {texts[c.name]}\n  {offline[c.name]}"
                       for c, a, b in zip(clips, ours, theirs, strict=True))
    return sum(e.errors for e in ours) / words, sum(e.errors for e in theirs) / words, detail


def test_streaming_as_fast_as_possible_is_as_accurate_as_offline(streamed, offline) -> None:
    texts = {name: "".join(deltas) for name, deltas in streamed.items()}
    ours, theirs, detail = compare(texts, offline, TESTED)
    assert ours <= theirs + FAST_WER_MARGIN, detail
    # Text arrived while audio was still coming, not only at the end.
    assert all(sum(map(len, deltas[:-1])) > len(deltas[-1]) for deltas in streamed.values())


def test_streaming_at_real_time_pace_is_as_accurate_as_offline(engine, offline) -> None:
    """A slow machine's pace: each decode 'takes' 0.1 s plus 0.1 s per second of audio."""
    texts = {c.name: "".join(paced(engine.new_transcriber(), c.pcm16(), 0.1, 0.1))
             for c in TESTED}
    ended = [c for c in TESTED if Trait.ENDS_MID_SENTENCE in c.traits]
    assert all(ends_with(texts[c.name], c.reference) for c in ended), texts
    ours, theirs, detail = compare(texts, offline, TESTED)
    assert ours <= theirs + PACED_WER_MARGIN, detail


def ends_with(text: str, reference: str) -> bool:
    """The reference's last two words are among the text's last three (Whisper may
    finish a phrase cut mid-sentence with a word of its own: "for your country")."""
    last, tail = normalise(reference).split()[-2:], normalise(text).split()[-3:]
    return any(tail[i : i + 2] == last for i in range(len(tail) - 1))


@pytest.mark.parametrize("speech", [c for c in TESTED if Trait.ENDS_MID_SENTENCE in c.traits],
                         ids=lambda c: c.name)
def test_finish_yields_the_words_up_to_the_end_of_the_audio(streamed, speech) -> None:
    deltas = streamed[speech.name]
    assert ends_with("".join(deltas), speech.reference), deltas[-3:]
    assert deltas[-1], "the final commit added nothing: the tail was already out or lost"


@pytest.mark.parametrize("speech", [c for c in TESTED if Trait.REPEATS in c.traits],
                         ids=lambda c: c.name)
def test_repeated_phrase_is_neither_dropped_nor_doubled(streamed, speech) -> None:
    text = " " + normalise("".join(streamed[speech.name])) + " "
    for phrase in ("what", "can do for"):
        said = (" " + normalise(speech.reference) + " ").count(f" {phrase} ")
        assert text.count(f" {phrase} ") == said, (phrase, text)


@pytest.mark.parametrize("grid", [0.032, 0.096, 0.128, 0.16])
def test_repeated_phrase_at_the_cut_end_is_not_doubled_on_any_decision_grid(engine, grid) -> None:
    """On the 128 ms grid the last utterance of the cut clip (2.1 s: "ask what you can
    do for your") came back as the whole phrase twice, the second copy stopping partway."""
    speech = clip("jfk_cut")
    transcriber = StreamingTranscriber(
        engine.decode, SileroGate(), dataclasses.replace(engine.options, decide_every=grid))
    text = " " + normalise("".join(fast(transcriber, speech.pcm16()))) + " "
    assert text.count(" ask what you can do ") == 1, text
    assert ends_with(text, speech.reference), text


@pytest.mark.parametrize(("name", "trim_ms"), [("jfk", 16), ("jfk", 48), ("jfk_phone", 96)])
def test_a_passage_said_again_later_keeps_every_word_each_time(engine, name, trim_ms) -> None:
    """Kennedy's clip played four times, 3 s apart (a user trying the app with it; the
    first after 4 s). Each "ask not" after the first is a short utterance that only says
    again a phrase of the committed text, so it is heard once more without the prompt;
    that reading ("... ...", "S-S- S- S-") was committed instead and the words were
    lost, or the garbage became the next prompt. Nothing may be lost or doubled on any
    of the four."""
    speech = clip(name).samples()
    gap = np.zeros(3 * SAMPLE_RATE, dtype=np.float32)
    first = speech[trim_ms * SAMPLE_RATE // 1000 :]
    audio = np.concatenate([gap, gap[:SAMPLE_RATE], first, gap, speech, gap, speech, gap, speech])
    text = " " + normalise("".join(fast(engine.new_transcriber(), pcm16(audio)))) + " "
    for phrase in ("not", "your country can do for you", "you can do for your country"):
        assert text.count(f" {phrase} ") == 4, (phrase, text)


def test_fast_mode_is_deterministic(engine, streamed) -> None:
    speech = clip("jfk")
    assert fast(engine.new_transcriber(), speech.pcm16()) == streamed[speech.name]


def test_local_server_flushes_every_word_at_the_final_commit(engine) -> None:
    speech = clip("jfk_cut")
    with ThreadedServer(engine.new_transcriber) as server, connect(server.url) as ws:
        assert json.loads(ws.recv(10))["type"] == "session.created"
        ws.send(json.dumps({"type": "session.update", "model": "tiny.en"}))
        ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
        pcm = speech.pcm16()
        for i in range(0, len(pcm), CHUNK):
            audio = base64.b64encode(pcm[i : i + CHUNK]).decode()
            ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": audio}))
        ws.send(json.dumps({"type": "input_audio_buffer.commit", "final": True}))
        deltas, live = [], []
        while (event := json.loads(ws.recv(120)))["type"] != "transcription.done":
            if event["type"] == "captioner.transcription.live":  # our extension
                live.append(event["text"])
                continue
            assert event["type"] == "transcription.delta", event
            deltas.append(event["delta"])
    assert event["text"] == "".join(deltas)  # the confirmed text only
    assert any(text.strip() for text in live)  # words were shown before their commit
    assert ends_with(event["text"], speech.reference), event["text"]
    assert word_errors(speech.reference, event["text"]).rate <= 0.15, event["text"]


def pcm16(signal: np.ndarray) -> bytes:
    return (np.clip(signal, -1.0, 1.0) * 32767).astype("<i2").tobytes()


def chords(seconds: float) -> np.ndarray:
    """Music-like: major triads changing every half second, with a swell."""
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    roots = [261.63, 293.66, 329.63, 349.23, 392.0, 440.0]
    out = np.zeros_like(t)
    for k in range(int(seconds * 2)):
        part = slice(k * SAMPLE_RATE // 2, (k + 1) * SAMPLE_RATE // 2)
        root = roots[k % len(roots)]
        for ratio in (1.0, 1.26, 1.5):
            out[part] += np.sin(2 * np.pi * root * ratio * t[part])
    return 0.2 * out * (0.6 + 0.4 * np.sin(2 * np.pi * 0.25 * t))


def sweeps(seconds: float) -> np.ndarray:
    """Rising tone sweeps 200 Hz → 3 kHz, one per second."""
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    freq = 200.0 * (15.0 ** (t % 1.0))
    return 0.4 * np.sin(2 * np.pi * np.cumsum(freq) / SAMPLE_RATE)


@pytest.mark.parametrize(
    "make",
    [
        lambda s: np.zeros(int(s * SAMPLE_RATE)),
        lambda s: np.random.default_rng(7).normal(0.0, 0.1, int(s * SAMPLE_RATE)),
        chords,
        sweeps,
    ],
    ids=["silence", "white-noise", "chords", "sweeps"],
)
def test_non_speech_produces_no_text(engine: WhisperEngine, make) -> None:
    transcriber = engine.new_transcriber()
    text = "".join(fast(transcriber, pcm16(make(20.0))))
    assert text == "", f"{transcriber.decodes} decodes"


def test_speech_after_noise_is_still_heard(engine: WhisperEngine) -> None:
    speech = clip("jfk")
    noise = pcm16(np.random.default_rng(3).normal(0.0, 0.05, 5 * SAMPLE_RATE))
    heard = "".join(fast(engine.new_transcriber(), noise + speech.pcm16()))
    assert word_errors(speech.reference, heard).rate <= 0.15, heard


@pytest.mark.parametrize(
    ("text", "seconds", "kept"),
    [
        (" They all call me. They all call me. They all", 6.0, " They all call me."),
        (" Hello. Hello. Hello.", 2.0, " Hello. Hello. Hello."),  # people say that
        (" 1. 1. 1.", 1.1, " 1."),  # not in 1.1 s
        (" we were all going direct to Heaven, we were all going direct the other way",
         5.0, " we were all going direct to Heaven, we were all going direct the other way"),
        # a loop that stops partway through its second copy, from 2.1 s of audio
        (" Ask what you can do for your country. Ask what you can do for your...",
         2.1, " Ask what you can do for your country."),
        # speech that ends while it repeats a phrase, in time it takes to say it
        (" we were all going direct to Heaven, we were all going", 3.5,
         " we were all going direct to Heaven, we were all going"),
        # a speaker starting a phrase over, then going on, at a pace speech holds
        (" he said, you can't have, you can't have crews, and I think it has to do"
         " with more than ethanol.", 6.5, " he said, you can't have, you can't have crews,"
         " and I think it has to do with more than ethanol."),
        (" This is not, this is not a normal", 2.4, " This is not, this is not a normal"),
        # two copies and new words, but more words than 2.8 s hold: a loop
        (" Do you have a great? Do you have a great? And twist the knife a bit.", 2.8,
         " Do you have a great?"),
        # two copies that end the answer: a loop, whatever the pace
        (" People are sick and tired. People are sick and tired.", 6.4,
         " People are sick and tired."),
    ],
)
def test_loop_is_cut_after_its_first_copy(text, seconds, kept) -> None:
    assert without_loop(text, seconds) == kept


@pytest.mark.parametrize(
    ("text", "no_speech", "logprob", "ratio", "dropped"),
    [
        (" Thanks for watching!", 0.5, -0.5, 1.0, True),
        (" Thank you.", 0.1, -0.9, 1.0, True),
        (" Thank you.", 0.05, -0.2, 1.0, False),  # said clearly: keep it
        (" [Music]", 0.0, -0.1, 1.0, True),
        (" ♪ ♪", 0.0, -0.1, 1.0, True),
        (" the the the the the the", 0.0, -0.2, 3.1, True),
        (" Anything at all", 0.7, -1.2, 1.0, True),
        (" See you at the station.", 0.3, -0.6, 1.1, False),
    ],
)
def test_hallucination_filter(text, no_speech, logprob, ratio, dropped) -> None:
    assert is_hallucination(text, no_speech, logprob, ratio) is dropped


def test_the_sonnet_as_the_app_heard_it_keeps_every_line(engine: WhisperEngine) -> None:
    """The sonnet played into a PulseAudio null sink and recorded from its monitor, as
    the app captures it (tests/data/speech/LICENSES.md): the final of a 14.5 s window
    ended at "within thine own bud," where its last live decode, 0.9 s shorter, read
    on to "… and tender churro makes waste in"; the next utterance began at "pity the
    world", and ten words said were never committed. (The decode that stops there is
    this CPU's reading of these exact samples: elsewhere this may read right anyway.)"""
    text = "".join(fast(engine.new_transcriber(), CAPTURED.pcm16()))
    errors = word_errors(CAPTURED.reference, text)
    assert "waste in niggarding" in normalise(text) and errors.deletions <= 2, (errors, text)


@pytest.mark.parametrize("trim", [0.032, 0.064])
def test_a_second_reader_keeps_every_sentence(engine: WhisperEngine, trim: float) -> None:
    """Austen read for LibriVox (tests/data/speech/LICENSES.md), captions started a
    few tens of ms into the recording: one utterance runs past the 15 s window, and the
    final of its first part read "… unless to be rather cold-hearted and rather" and
    stopped at 12.68 s, 2.5 s of speech unread; the part after the cut began at "had
    he married", so "selfish is to be ill disposed" was never committed (on six of
    eight start offsets). Offline reads the passage with 2 errors."""
    pcm = AUSTEN.pcm16()[2 * round(trim * SAMPLE_RATE) :]
    text = "".join(fast(engine.new_transcriber(), pcm))
    errors = word_errors(AUSTEN.reference, text)
    assert "selfish is to be ill disposed" in normalise(text) and errors.errors <= 4, (
        errors, text)


def test_a_final_that_opens_a_segment_and_ends_says_where_it_stopped() -> None:
    """Whisper ends an answer that leaves speech unread by opening a segment it never
    fills ("… and rather<|12.68|><|12.68|>"); one that closes its last segment, or
    opens one at the audio's very end, stopped nowhere in particular."""
    tokenizer = SimpleNamespace(eot=50256, timestamp_begin=50363)
    stamp = lambda seconds: 50363 + round(seconds / 0.02)  # noqa: E731
    words = [1000, 1001]
    assert WhisperEngine._stopped_at(
        tokenizer, [*words, stamp(12.68), stamp(12.68), 50256], 15.26) == pytest.approx(12.68)
    assert WhisperEngine._stopped_at(tokenizer, [*words, stamp(12.68), 50256], 15.26) is None
    assert WhisperEngine._stopped_at(tokenizer, words, 15.26) is None
    assert WhisperEngine._stopped_at(
        tokenizer, [*words, stamp(15.2), stamp(15.2)], 15.26) is None


@pytest.mark.parametrize("chunk", [2560, 4096])
def test_one_said_once_is_one_word(engine: WhisperEngine, chunk: int) -> None:
    """The sonnet reading starts "One." and a pause: it came out "1 1" (the live text
    looped over the committed word and was kept at the final decode)."""
    pcm = clip("sonnet").pcm16()[: 6 * 2 * SAMPLE_RATE]  # "One." and the first line
    transcriber = engine.new_transcriber()
    text = "".join([transcriber.push(pcm[i : i + chunk]) for i in range(0, len(pcm), chunk)]
                   + [transcriber.finish()])
    words = normalise(text).split()
    assert words[0] == "one" and words[1] != "one", text  # "1" reads as "one"


@pytest.mark.parametrize("final", [True, False])
def test_speech_faster_than_the_token_cap_is_decoded_whole(engine, monkeypatch, final) -> None:
    """CTranslate2's Whisper answers at most min(max_length // 2, max_length - start)
    tokens, half the intended cap without context: 10 s read at 5 words a second (a
    video at 1.5x) lost its end. Here the cap is made tight for ordinary speech. The
    audio ends in a pause: cut inside a word, whether a live decode (1 s of silence
    after it) says the cut word is a close call whatever the cap."""
    audio = clip("sonnet").samples()[: int(11.8 * SAMPLE_RATE)]  # to the pause after "deceased,"
    whole = engine.decode(audio, final=final)
    monkeypatch.setattr(whisper, "_TOKENS_PER_SECOND", 1)
    monkeypatch.setattr(whisper, "_MIN_NEW_TOKENS", 2)
    assert len(whole) > 12  # more than the tight cap's room (6 tokens)
    assert engine.decode(audio, final=final) == whole
