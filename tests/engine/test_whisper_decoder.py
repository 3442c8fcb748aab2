"""The numpy Whisper decoder against CTranslate2 on real speech, and its draft checking.

CTranslate2 loaded in float32 runs the same weights the numpy decoder uses, so the
two must give the same tokens, score and no-speech probability for every prompt
shape the engine sends: previous text or none, a forced prefix or none, English
tiny.en and multilingual base with its language tokens; greedy (live decodes) and
beam search (finals).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import ctranslate2
import numpy as np
import pytest
from faster_whisper import WhisperModel
from faster_whisper.tokenizer import Tokenizer

from captioner.engine import onnx_graph, whisper
from captioner.engine.ct2_model import ModelFileError, read_variables
from captioner.engine.model_paths import bundled_model_dir
from captioner.engine.multilingual import model_folder, multilingual_installed
from captioner.engine.whisper import WhisperEngine, _DecodingOnOneThread, draft_after
from captioner.engine.whisper_decoder import WhisperDecoder
from tests.support.speech_set import clip, word_errors

ROOT = Path(__file__).resolve().parents[2]
TINY = bundled_model_dir()
CONTEXT = " It was the best of times, it was the worst of times."


class Reference:
    """One model in CTranslate2 float32 and in numpy, with prompts built as the engine does."""

    def __init__(self, folder, language: str) -> None:
        self.model = WhisperModel(str(folder), device="cpu", compute_type="float32",
                                  cpu_threads=2, local_files_only=True)
        multilingual = self.model.model.is_multilingual
        self.tokenizer = Tokenizer(self.model.hf_tokenizer, multilingual, task="transcribe",
                                   language=language)
        self.decoder = WhisperDecoder.from_model_dir(folder)

    def encode(self, audio: np.ndarray) -> ctranslate2.StorageView:
        frames = len(audio) // 160 + 200  # the clip and 2 s of silence
        padded = np.zeros(frames * 160, np.float32)
        padded[: len(audio)] = audio
        features = self.model.feature_extractor(padded, padding=0)[:, :frames]
        batch = ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None]))
        return self.model.model.encode(batch, to_cpu=True)

    def prompt(self, context: str, prefix: str) -> tuple[list[int], int]:
        tk = self.tokenizer
        prompt = [tk.sot_prev, *tk.encode(context)] if context else []
        prompt += [*tk.sot_sequence, tk.timestamp_begin]
        start = len(prompt) - 2
        return prompt + (tk.encode(prefix) if prefix else []), start

    def both(self, audio: np.ndarray, context: str, prefix: str, beam_size: int = 1,
             max_length: int = 0, **options):
        encoded = self.encode(audio)
        prompt, start = self.prompt(context, prefix)
        max_length = max_length or len(prompt) + 56
        expected = self.model.model.generate(
            encoded, [prompt], beam_size=beam_size, max_length=max_length, return_scores=True,
            return_no_speech_prob=True, suppress_blank=not prefix, suppress_tokens=[-1],
            max_initial_timestamp_index=50)[0]
        search = self.decoder.greedy if beam_size == 1 else functools.partial(
            self.decoder.beam, beam_size=beam_size)
        got = search(np.asarray(encoded)[0], prompt, start, max_length=max_length,
                     suppress_blank=not prefix, **options)
        return expected, got, (encoded, prompt, start, max_length)


def windows(name: str, seconds: float, step: float) -> list[np.ndarray]:
    audio = clip(name).samples()
    size, hop = int(seconds * 16000), int(step * 16000)
    return [audio[i : i + size] for i in range(0, len(audio) - size // 2, hop)]


@pytest.fixture(scope="module")
def tiny() -> Reference:
    return Reference(TINY, "en")


CASES = [(context, prefix) for context in ("", CONTEXT) for prefix in ("", " And")]


@pytest.mark.parametrize("name", ["jfk", "sonnet_phone"])
def test_greedy_matches_ctranslate2_on_real_speech(tiny: Reference, name: str) -> None:
    compared = 0
    for audio in windows(name, 4.0, 2.5)[:4]:
        for context, prefix in CASES:
            expected, got, _ = tiny.both(audio, context, prefix)
            assert got.tokens == expected.sequences_ids[0], (context, prefix)
            assert got.score == pytest.approx(expected.scores[0], abs=2e-3)
            assert got.no_speech_prob == pytest.approx(expected.no_speech_prob, abs=2e-3)
            compared += 1
    assert compared == 16


@pytest.mark.parametrize("name", ["jfk", "sonnet_phone"])
def test_beam_search_matches_ctranslate2_on_real_speech(tiny: Reference, name: str) -> None:
    """Finals: beam 5, every prompt shape; beams share one cache behind a mask."""
    compared = 0
    for audio in windows(name, 6.0, 3.0)[:3]:
        for context, prefix in CASES:
            expected, got, _ = tiny.both(audio, context, prefix, beam_size=5)
            assert got.tokens == expected.sequences_ids[0], (context, prefix)
            assert got.score == pytest.approx(expected.scores[0], abs=2e-3)
            assert got.no_speech_prob == pytest.approx(expected.no_speech_prob, abs=2e-3)
            compared += 1
    assert compared == 12


def test_beam_search_at_the_length_cap_and_after_a_long_prompt(tiny: Reference) -> None:
    """At the cap every beam is an answer; a long prompt needs more cache than one sequence."""
    audio = windows("sonnet", 8.0, 8.0)[1]
    for max_length in (8, 20):
        expected, got, _ = tiny.both(audio, "", "", beam_size=5, max_length=max_length)
        assert got.tokens == expected.sequences_ids[0], max_length
        assert got.score == pytest.approx(expected.scores[0], abs=2e-3)
    words = tiny.tokenizer.encode(" " + " ".join([clip("sonnet").reference] * 4))
    context = tiny.tokenizer.decode(words[-220:])  # about the engine's longest prompt
    expected, got, (_, prompt, _, _) = tiny.both(audio, context, "", beam_size=5,
                                                 max_length=448)
    assert len(prompt) > 200 and tiny.decoder._keys.shape[2] > 448
    assert got.tokens == expected.sequences_ids[0]
    assert got.score == pytest.approx(expected.scores[0], abs=2e-3)


def test_the_installers_int8_copy_decodes_as_ctranslate2_reads_it(tmp_path) -> None:
    """The bundle ships tiny.en stored int8 (installer/quantize_model.py)."""
    target = tmp_path / "int8"
    subprocess.run([sys.executable, str(ROOT / "installer" / "quantize_model.py"), str(TINY),
                    str(target)], check=True, capture_output=True)
    stored = read_variables(target / "model.bin", lambda n: n.startswith("decoder/layer_0/"))
    assert stored["decoder/layer_0/ffn/linear_0/weight"].dtype == np.int8
    int8 = Reference(target, "en")  # CTranslate2 in float32 dequantizes as we do
    for audio in windows("jfk", 4.0, 4.0)[:2]:
        expected, got, _ = int8.both(audio, CONTEXT, " And")
        assert got.tokens == expected.sequences_ids[0]
        assert got.score == pytest.approx(expected.scores[0], abs=2e-3)


@pytest.mark.skipif(not multilingual_installed(), reason="the multilingual extra is not installed")
def test_greedy_and_beam_match_ctranslate2_with_language_tokens() -> None:
    base = Reference(model_folder("base"), "en")
    for audio in windows("jfk", 4.0, 4.0)[:2]:
        for beam_size in (1, 5):
            expected, got, _ = base.both(audio, CONTEXT, "", beam_size=beam_size)
            assert got.tokens == expected.sequences_ids[0], beam_size
            assert got.no_speech_prob == pytest.approx(expected.no_speech_prob, abs=2e-3)


def test_a_draft_never_changes_the_answer_only_its_cost(tiny: Reference) -> None:
    audio = windows("sonnet", 5.0, 5.0)[1]
    _, plain, (encoded, prompt, start, max_length) = tiny.both(audio, CONTEXT, "")
    memory = np.asarray(encoded)[0]
    answer = plain.tokens[1:]  # after the forced <|0.00|>
    assert len(answer) >= 6 and plain.drafted == 0

    def decode(draft):
        return tiny.decoder.greedy(memory, prompt, start, max_length=max_length, draft=draft)

    whole = decode(answer)
    assert whole.tokens == plain.tokens
    assert whole.drafted == len(answer)  # every token rode in the one pass
    wrong_at = 3
    astray = decode([*answer[:wrong_at], answer[wrong_at] + 1, *answer[wrong_at + 1 :]])
    assert astray.tokens == plain.tokens and astray.drafted == wrong_at
    noise = decode([tiny.tokenizer.encode(" banana")[0]] * 20)
    assert noise.tokens == plain.tokens and noise.drafted == 0


def test_stop_ends_the_answer_where_the_caller_says(tiny: Reference) -> None:
    audio = windows("sonnet", 5.0, 5.0)[1]
    _, plain, (encoded, prompt, start, max_length) = tiny.both(audio, "", "")
    seen = []

    def stop(chosen):
        seen.append(list(chosen))
        return len(chosen) == 3

    got = tiny.decoder.greedy(np.asarray(encoded)[0], prompt, start, max_length=max_length,
                              stop=stop)
    assert got.tokens == plain.tokens[:4]  # <|0.00|> and three chosen
    assert seen[-1] == plain.tokens[1:4]


def test_draft_after_steps_over_timestamps_the_forced_words_lack() -> None:
    begin = 1000
    previous = [begin, 5, 6, begin + 90, begin + 90, 7, 8, begin + 150]
    assert draft_after(previous, [begin, 5, 6], begin) == [begin + 90, begin + 90, 7, 8,
                                                          begin + 150]
    assert draft_after(previous, [begin, 5, 6, 7], begin) == [8, begin + 150]
    assert draft_after(previous, [begin, 5, 9], begin) == []  # the words now forced differ
    assert draft_after([], [begin], begin) == []


def test_engine_live_decodes_run_in_numpy_when_asked_and_finals_beside_them() -> None:
    assert WhisperEngine(threads=2, live_decoder="ctranslate2")._decoder is None
    engine = WhisperEngine(threads=2, live_decoder="numpy")
    assert engine._decoder is not None
    calls, finals = [], []
    greedy, beam = engine._decoder.greedy, engine._decoder.beam
    engine._decoder.greedy = lambda *a, **k: calls.append(k.get("draft")) or greedy(*a, **k)
    engine._decoder.beam = lambda *a, **k: finals.append(k["beam_size"]) or beam(*a, **k)
    audio = clip("jfk").samples()[: 16000 * 4]
    live = engine.decode(audio)
    second = engine.decode(audio)
    assert live and second == live
    assert len(calls) == 2 and calls[0] == [] and calls[1]  # the first answer drafts the next
    assert engine.decode(audio, final=True)
    assert len(calls) == 2 and finals == [5]
    engine.own_finals = False  # CTranslate2's beam search instead
    assert engine.decode(audio, final=True)
    assert finals == [5]


def test_reader_gives_named_arrays_and_refuses_a_cut_file(tmp_path) -> None:
    variables = read_variables(TINY / "model.bin", lambda name: name.startswith("decoder/"))
    assert variables["decoder/embeddings/weight"].shape == (51864, 384)
    assert variables["decoder/projection/weight"] is variables["decoder/embeddings/weight"]
    assert not any(name.startswith("encoder/") for name in variables)
    cut = tmp_path / "model.bin"
    cut.write_bytes((TINY / "model.bin").read_bytes()[:200_000])
    with pytest.raises(ModelFileError):
        read_variables(cut)
    wrong = tmp_path / "other.bin"
    wrong.write_bytes(b"\x63\x00\x00\x00" + bytes(64))
    with pytest.raises(ModelFileError, match="version"):
        read_variables(wrong)


@pytest.fixture(scope="module")
def int8_decoder() -> WhisperDecoder:
    return WhisperDecoder.from_model_dir(TINY, int8=True)


def test_int8_products_predict_the_words_float32_predicts(tiny: Reference,
                                                         int8_decoder: WhisperDecoder) -> None:
    """The spoken words read in one pass: int8 picks the same next token almost everywhere."""
    speech = clip("jfk")
    memory = np.asarray(tiny.encode(speech.samples()))[0]
    prompt, start = tiny.prompt("", " " + speech.reference)
    picks = []
    for decoder in (tiny.decoder, int8_decoder):
        decoder._cross = decoder._cross_attention(memory)
        logits = decoder._logits(decoder._forward(prompt, 0)[start:])
        picks.append(logits.argmax(axis=1))
    same = float(np.mean(picks[0] == picks[1]))
    assert len(picks[0]) > 20 and same >= 0.9, same


def test_int8_steps_read_the_cache_the_batched_pass_wrote(tiny: Reference,
                                                        int8_decoder: WhisperDecoder) -> None:
    """Row by row after a batched prefix gives what one batched pass gives."""
    speech = clip("jfk")
    memory = np.asarray(tiny.encode(speech.samples()))[0]
    prompt, _ = tiny.prompt(CONTEXT, " " + speech.reference)
    decoder = int8_decoder
    decoder._cross = decoder._cross_attention(memory)
    whole = decoder._forward(prompt, 0)
    split = len(prompt) - 5
    decoder._forward(prompt[:split], 0)
    rows = [decoder._forward([token], split + i)[0] for i, token in enumerate(prompt[split:])]
    np.testing.assert_allclose(np.array(rows), whole[split:], rtol=0,
                               atol=0.05 * float(np.abs(whole[split:]).max()))
    assert np.array_equal(decoder._logits(np.array(rows)).argmax(axis=1),
                          decoder._logits(whole[split:]).argmax(axis=1))


def test_int8_products_transcribe_real_speech_whole(tiny: Reference,
                                                    int8_decoder: WhisperDecoder) -> None:
    speech = clip("jfk")
    encoded = tiny.encode(speech.samples())
    prompt, start = tiny.prompt("", "")
    got = int8_decoder.greedy(np.asarray(encoded)[0], prompt, start, max_length=len(prompt) + 80)
    text = tiny.tokenizer.decode([t for t in got.tokens if t < tiny.tokenizer.eot])
    assert word_errors(speech.reference, text).errors == 0, text


def test_int8_beam_search_transcribes_real_speech_whole(tiny: Reference,
                                                       int8_decoder: WhisperDecoder) -> None:
    for name in ("jfk", "jfk_phone"):
        speech = clip(name)
        encoded = tiny.encode(speech.samples())
        prompt, start = tiny.prompt("", "")
        got = int8_decoder.beam(np.asarray(encoded)[0], prompt, start,
                                max_length=len(prompt) + 80)
        text = tiny.tokenizer.decode([t for t in got.tokens if t < tiny.tokenizer.eot])
        assert word_errors(speech.reference, text).errors <= (0 if name == "jfk" else 2), text


@pytest.mark.parametrize(("vnni", "vendor", "expected"), [
    (False, "GenuineIntel", "int8"),
    (True, "GenuineIntel", "ctranslate2"),  # MKL's int8 kernels use VNNI: cheap steps
    (True, "AuthenticAMD", "int8"),  # no MKL: oneDNN's steps cost more than the graphs'
])
def test_engine_live_decodes_run_where_this_cpu_makes_them_cheaper(monkeypatch, vnni, vendor,
                                                                   expected) -> None:
    import numpy._core._multiarray_umath as umath

    features = dict(umath.__cpu_features__, AVX512VNNI=vnni)
    monkeypatch.setattr(umath, "__cpu_features__", features)
    monkeypatch.setattr(whisper, "cpu_vendor", lambda: vendor)
    monkeypatch.delenv("CT2_USE_MKL", raising=False)
    assert whisper.cheaper_live_decoder() == expected
    # The engine with that choice, its graphs built for the CPU this really is: a faked
    # VNNI would store signed weights, which saturate on a CPU without it.
    monkeypatch.undo()
    monkeypatch.setattr(whisper, "cheaper_live_decoder", lambda: expected)
    engine = WhisperEngine(threads=2)
    if expected == "ctranslate2":
        assert engine._decoder is None
    else:
        assert engine._decoder is not None and engine._decoder.int8
    assert engine.decode(clip("jfk").samples()[: 16000 * 4])


@pytest.mark.parametrize(("setting", "vendor", "expected"), [
    ("1", "AuthenticAMD", "ctranslate2"),
    ("0", "GenuineIntel", "int8"),
])
def test_ctranslate2_told_to_use_mkl_or_not_decides_with_it(monkeypatch, setting, vendor,
                                                            expected) -> None:
    import numpy._core._multiarray_umath as umath

    monkeypatch.setattr(umath, "__cpu_features__",
                        dict(umath.__cpu_features__, AVX512VNNI=True))
    monkeypatch.setattr(whisper, "cpu_vendor", lambda: vendor)
    monkeypatch.setenv("CT2_USE_MKL", setting)
    assert whisper.cheaper_live_decoder() == expected


@pytest.mark.parametrize("setting", [None, "0", "1"])
def test_the_mkl_rule_predicts_what_ctranslate2_chooses(setting) -> None:
    """CTranslate2 logs its vendor and MKL choice at load (CT2_VERBOSE); ours must agree."""
    env = {k: v for k, v in os.environ.items() if k != "CT2_USE_MKL"}
    if setting is not None:
        env["CT2_USE_MKL"] = setting
    code = ("import ctranslate2, sys; from captioner.engine.multilingual import model_folder;"
            "ctranslate2.models.Whisper(str(model_folder('tiny.en', None)), compute_type='int8');"
            "from captioner.engine import whisper;"
            "print('ours', whisper.cpu_vendor(), whisper._ctranslate2_uses_mkl())")
    done = subprocess.run([sys.executable, "-c", code], env=dict(env, CT2_VERBOSE="1"),
                          capture_output=True, text=True, timeout=120, check=True)
    log = done.stdout + done.stderr
    theirs_vendor = log.split("CPU: ", 1)[1].split()[0]
    theirs_mkl = log.split("Use Intel MKL: ", 1)[1].split()[0] == "true"
    ours = done.stdout.split("ours ", 1)[1].split()
    assert ours[0] == theirs_vendor
    assert (ours[1] == "True") == theirs_mkl, log


def test_engine_live_decodes_stay_in_ctranslate2_without_onnx_runtime(monkeypatch,
                                                                      caplog) -> None:
    monkeypatch.setattr(onnx_graph, "available", lambda: False)
    caplog.set_level("INFO", logger="captioner.engine.whisper")
    without = WhisperEngine(threads=2, live_decoder="int8")
    assert without._decoder is None
    assert "ONNX Runtime is not installed" in caplog.text


def test_engine_falls_back_to_ctranslate2_when_the_decoder_cannot_load(monkeypatch,
                                                                       caplog) -> None:
    def refuse(folder, int8=False):
        raise ModelFileError("binary version 7 (known: (5, 6))")

    monkeypatch.setattr(WhisperDecoder, "from_model_dir", refuse)
    engine = WhisperEngine(threads=2, live_decoder="numpy")
    assert engine._decoder is None
    assert "live decodes stay in CTranslate2" in caplog.text
    assert engine.decode(clip("jfk").samples()[: 16000 * 3])


def test_engine_falls_back_to_ctranslate2_when_onnx_runtime_refuses_a_graph(monkeypatch,
                                                                          caplog) -> None:
    import onnxruntime
    from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as Refused

    def refuse(*args, **kwargs):
        raise Refused("Could not find an implementation for MatMulInteger(10) node")

    monkeypatch.setattr(onnxruntime, "InferenceSession", refuse)
    engine = WhisperEngine(threads=2, live_decoder="int8")
    assert engine._decoder is None
    assert "ONNX Runtime refused the graph" in caplog.text
    assert engine.decode(clip("jfk").samples()[: 16000 * 3])


def test_a_length_cap_inside_the_forced_words_ends_the_answer_as_ctranslate2_does(
        tiny: Reference) -> None:
    audio = windows("jfk", 4.0, 4.0)[0]
    encoded = tiny.encode(audio)
    prompt, start = tiny.prompt("", " And so my fellow Americans, ask not")
    for max_length in (6, 12, len(prompt) + 3):
        expected = tiny.model.model.generate(encoded, [prompt], beam_size=1,
                                             max_length=max_length, suppress_blank=False)[0]
        got = tiny.decoder.greedy(np.asarray(encoded)[0], prompt, start,
                                  max_length=max_length, suppress_blank=False)
        assert got.tokens == expected.sequences_ids[0], max_length


class _Recording:
    """Stands in for a CTranslate2 model, noting which methods were called on it."""

    def __init__(self, inner, calls: list[str]) -> None:
        self._inner, self._calls = inner, calls

    def __getattr__(self, name: str):
        value = getattr(self._inner, name)
        if callable(value):
            self._calls.append(name)
        return value


def test_decoder_calls_and_streaming_encodes_run_on_a_one_thread_copy() -> None:
    engine = WhisperEngine(threads=2, live_decoder="ctranslate2")
    split = engine._model.model
    assert isinstance(split, _DecodingOnOneThread)
    encoding, decoding = [], []
    split._model = _Recording(split._model, encoding)
    split._decoding = _Recording(split._decoding, decoding)
    audio = clip("jfk").samples()[: 16000 * 4]
    assert engine.decode(audio) and engine.decode(audio, final=True)
    assert engine.transcribe(audio, beam_size=1)
    assert encoding.count("encode") == 1 and "generate" not in encoding  # offline
    assert decoding.count("generate") >= 3 and decoding.count("encode") == 2  # live, final
    assert not isinstance(WhisperEngine(threads=1)._model.model, _DecodingOnOneThread)


def test_a_live_decode_of_long_audio_hears_less_silence_than_a_final() -> None:
    """The encoder's cost is its length. A live decode, only ever shown, hears 1 s of
    silence after long audio and at least 4 s in all; a final, committed, hears 2 s."""
    engine = WhisperEngine(threads=2)
    split = engine._model.model
    heard: list[tuple[str, int]] = []

    def noting(name: str, encode):
        def run(features, *args, **kwargs):
            heard.append((name, features.shape[2]))
            return encode(features, *args, **kwargs)
        return run

    split.encode_live = noting("live", split.encode_live)
    split.encode_final = noting("final", split.encode_final)
    speech = clip("jfk").samples()
    for seconds in (1.0, 3.5, 6.0):
        audio = speech[: int(16000 * seconds)]
        engine.decode(audio)
        engine.decode(audio, final=True)
    assert heard == [("live", 300), ("final", 300), ("live", 450), ("final", 550),
                     ("live", 700), ("final", 800)]
