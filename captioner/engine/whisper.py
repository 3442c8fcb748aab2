"""The embedded on-device recogniser: Whisper run by CTranslate2 (int8, CPU).

``WhisperEngine`` loads one model and hands out a fresh streaming transcriber
per request (``TranscriberFactory = engine.new_transcriber``). The model comes
from a local directory only (the bundled ``tiny.en`` by default, see
captioner.engine.model_paths): nothing is downloaded at run time.

Streaming decodes drive CTranslate2 directly (features → ``encode`` →
``generate``) instead of faster-whisper's ``transcribe``, for two reasons that
dominate the cost of re-decoding a growing utterance:

- **A short encoder window.** ``transcribe`` always pads to a 30 s (3,000-frame)
  mel window; CTranslate2's encoder accepts fewer frames, so a decode encodes
  only its audio plus a little silence (``_pad_seconds``; whisper.cpp calls
  this ``audio_ctx``). Measured on tiny.en: 3,000 frames 553 ms, 800 frames
  80 ms, with the same text.
- **Features once per frame.** A stream's log-mel frames are kept while its
  clip grows (captioner.engine.log_mel): a live decode computes only the
  frames of the audio that arrived since the last one.
- **A forced prefix.** Words the streaming policy already agreed on are given
  to the decoder as the start of its answer. Text before the utterance is the
  usual Whisper "previous text" prompt.
- **Decoding on one thread.** Offline transcription encodes on ``threads``;
  every decoder call, and the encoder of streaming decodes (live and final),
  run on a second, one-thread instance of the model (``_DecodingOnOneThread``:
  less than half the CPU of two-thread decoding).
- **Live decodes on our own decoder** (``live_decoder="int8"``, what the default
  ``"auto"`` picks unless CTranslate2 runs on Intel MKL with VNNI, where its int8
  steps are the cheaper and it picks those): captioner.engine.whisper_decoder reads the
  prompt in one batched pass, checks the previous live answer as a draft, and
  runs the network as int8 ONNX Runtime graphs. On an AVX2 CPU a step costs
  about half of CTranslate2's one-row int8 step, and the set's errors were the
  same on every decision grid (docs/streaming-engine.md). Without ONNX Runtime
  (the installers' bundles) live decodes run in CTranslate2; ``"numpy"`` is the
  float32 reference, twice CTranslate2's cost.
- **Finals on the same decoder** (``own_finals``, the default when live
  decodes run on it): its beam search follows CTranslate2's step for step
  (the tests hold the float32 path to it token for token) with every beam in
  one cache: on an AVX2 CPU about a fifth less CPU than CTranslate2's beam
  search, and nearer float32's answers than CTranslate2's int8.

Answers are timestamped (each starts at a forced ``<|0.00|>``), though the
policy cuts audio on the speech gate's pauses and never at a timestamp: the
timestamps let ``_segments`` drop text the decoder invents past the audio's
end, and without them tiny.en stops early or loops more often.

Sharing: one loaded model serves every transcriber (the numpy decoder keeps one
cache, so its calls take a lock); CTranslate2 models are
safe to call from several threads (with ``num_workers=1`` calls run one after
another, which is what the server's worker thread does anyway).
"""

from __future__ import annotations

import functools
import logging
import os
import platform
import re
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import ctranslate2
import numpy as np
from faster_whisper import WhisperModel
from faster_whisper.tokenizer import Tokenizer
from threadpoolctl import ThreadpoolController

from captioner.engine import onnx_graph
from captioner.engine.log_mel import LogMel
from captioner.engine.model_paths import ModelDirError
from captioner.engine.multilingual import decoding_language, model_folder
from captioner.engine.streaming import (
    FAST_WORDS,
    SAMPLE_RATE,
    Reading,
    StreamingOptions,
    StreamingTranscriber,
    word_key,
)
from captioner.engine.vad import SileroGate
from captioner.engine.whisper_decoder import WhisperDecoder

if TYPE_CHECKING:
    from captioner.settings import RecognitionSettings

log = logging.getLogger(__name__)

_SAMPLES_PER_FRAME = 160  # Whisper mel hop: 10 ms
_MAX_FRAMES = 3000  # the model's 30 s window
_PAD_SECONDS = 2.0  # silence the encoder sees after a final's audio (1 s: loops)
_LIVE_PAD = (1.0, 2.0)  # s: the least and the most silence after a live decode's audio
_LIVE_HEARD = 4.0  # s: the least a live decode's encoder hears, audio and silence
_TIMESTAMP_SECONDS = 0.02
_MAX_INITIAL_TIMESTAMP = 50  # the first segment starts within 1 s (Whisper's default)
_LATE_START = 0.1  # a segment starting this close to the audio's end is a guess
_LATE_END = 1.0  # a later segment ending this far past the audio's end is a loop
_MAX_CONTEXT_TOKENS = 223  # Whisper's previous-text prompt limit (half the 448 context)
_DETECT_SECONDS = 2.0  # audio a language is detected on; a shorter decode keeps the stream's
_TOKENS_PER_SECOND = 8  # generous speech rate bound: caps a repetition loop's cost
_MIN_NEW_TOKENS = 16
_WORD = re.compile(r"\s*\S+")
_LOOP_WORDS = 3  # a phrase this long said twice in a row is a decoder loop
_REPEAT_SECONDS = 0.6  # time a repeated short word takes to say (tiny.en loops on "1.")
_DRAFTS = 8  # live answers kept as drafts (one per stream being captioned, and spare)

# Text Whisper produces for silence, noise and music (YouTube subtitle credits).
HALLUCINATIONS = frozenset(
    {
        "thanks for watching",
        "thank you for watching",
        "thank you so much for watching",
        "thanks for watching and see you next time",
        "please subscribe",
        "subscribe to my channel",
        "like and subscribe",
        "thank you",
        "thanks",
        "you",
        "bye",
        "bye bye",
        "so",
        "the end",
        "music",
        "applause",
        "silence",
        "subtitles by the amara org community",
        "i'm sorry",
        "oh",
        "uh",
        "um",
    }
)
_ANNOTATION = re.compile(r"^\s*([\[(*♪♫].*[\])*♪♫]|[♪♫\s]+)\s*$")


# "int8": our decoder on int8 ONNX Runtime graphs (captioner.engine.decoder_graph),
# when that is installed; "numpy": the same decoder in float32 numpy, the reference;
# "auto": whichever is cheaper on this CPU (``cheaper_live_decoder``).
LiveDecoder = Literal["auto", "ctranslate2", "numpy", "int8"]


def cheaper_live_decoder() -> LiveDecoder:
    """CTranslate2 where it runs on Intel MKL with AVX-512 VNNI, else our int8 graphs.

    A decoder step is a one-row int8 product with the 20 MB output projection.
    CTranslate2 takes MKL only on an Intel CPU (``CT2_USE_MKL`` overrides it);
    there, with VNNI, a step takes about 2 ms and the whole engine cost a fifth
    less than on the graphs. Elsewhere its int8 products go to oneDNN: about 8 ms
    a step on an AVX2 EPYC, and on an AVX-512 VNNI EPYC the engine cost 2.75×
    offline against the graphs' 2.11× (ONNX Runtime's MLAS). numpy does not
    report AVX-VNNI (AVX2 with VNNI), so such CPUs keep the graphs (not
    measured). docs/streaming-engine.md has the figures.
    """
    return "ctranslate2" if onnx_graph.vnni() and _ctranslate2_uses_mkl() else "int8"


def _ctranslate2_uses_mkl() -> bool:
    """CTranslate2's own rule: MKL on a GenuineIntel CPU unless ``CT2_USE_MKL`` says."""
    forced = os.environ.get("CT2_USE_MKL", "").strip().lower()
    if forced in ("0", "1", "true", "false", "on", "off"):
        return forced in ("1", "true", "on")
    return cpu_vendor() == "GenuineIntel"


def cpu_vendor() -> str:
    """The CPU's vendor string (``GenuineIntel``, ``AuthenticAMD``), or '' if unknown."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:  # Linux
            for line in info:
                if line.startswith("vendor_id"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    # Windows names it at the end ("Intel64 Family 6 Model 158 Stepping 10, GenuineIntel")
    for vendor in ("GenuineIntel", "AuthenticAMD"):
        if vendor in platform.processor():
            return vendor
    return ""  # macOS on Intel reports "i386": unknown, so the graphs


class _DecodingOnOneThread:
    """CTranslate2's Whisper with its decoder calls on a second, one-thread instance.

    The encoder's large products gain from ``threads``; the decoder's steps are
    too small to share: with two threads, beam search and greedy decodes cost
    2.3× the CPU for no gain in wall time (real-speech set, fast mode: 175 vs
    77 ms CPU per audio second, 174 vs 74 ms wall). The second instance costs
    the int8 weights once more (≈ 40 MB for tiny.en).

    Live decodes encode on the one-thread instance too (``encode_live``): their
    windows are short, so a second thread saves little wall time (5 s of audio
    plus the pad: 19 vs 22 ms) and costs CPU (28 vs 22 ms). So do finals
    (``encode_final``): a second thread saved about 20 ms before a 10 s
    utterance's commit, which waits seconds for the utterance's end anyway, for
    2–3.5 % of the engine's CPU (the same text). Offline transcription keeps
    ``threads``.
    """

    def __init__(self, model: ctranslate2.models.Whisper, folder: Path) -> None:
        self._model = model
        self._decoding = ctranslate2.models.Whisper(
            str(folder), device="cpu", compute_type="int8", intra_threads=1, inter_threads=1)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)  # encode, and what describes the model

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        return self._decoding.generate(*args, **kwargs)

    def encode_live(self, *args: Any, **kwargs: Any) -> Any:
        return self._decoding.encode(*args, **kwargs)

    encode_final = encode_live  # the same copy; its own name tells benchmarks which it was

    def detect_language(self, *args: Any, **kwargs: Any) -> Any:
        return self._decoding.detect_language(*args, **kwargs)

    def align(self, *args: Any, **kwargs: Any) -> Any:
        return self._decoding.align(*args, **kwargs)


@dataclass
class HeardLanguage:
    """The language one stream was last detected in (auto-detect only)."""

    code: str | None = None


class WhisperEngine:
    """One loaded Whisper model; a factory of streaming transcribers."""

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        threads: int = 2,
        *,
        options: StreamingOptions | None = None,
        beam_size: int = 1,
        final_beam_size: int = 5,
        model: str = "tiny.en",
        language: str | None = None,
        live_decoder: LiveDecoder = "auto",
        own_finals: bool = True,
    ) -> None:
        self.model_dir: Path = model_folder(model, model_dir)
        language = decoding_language(model, language)  # None: detected per decode
        self.threads = max(1, int(threads))
        self.options = options or StreamingOptions()
        self.beam_size = beam_size
        self.final_beam_size = final_beam_size
        try:
            self._model = WhisperModel(
                str(self.model_dir),
                device="cpu",
                compute_type="int8",
                cpu_threads=self.threads,
                num_workers=1,
                local_files_only=True,
            )
            if self.threads > 1:
                self._model.model = _DecodingOnOneThread(self._model.model, self.model_dir)
        except (RuntimeError, ValueError, OSError) as exc:
            raise ModelDirError(
                f"Speech model in {self.model_dir} could not be loaded: {exc}"
            ) from exc
        self.multilingual = self._model.model.is_multilingual
        if live_decoder == "auto":
            live_decoder = cheaper_live_decoder()
            if live_decoder == "ctranslate2":
                log.info("= live decodes run in CTranslate2: its int8 kernels use MKL "
                         "and this CPU's VNNI")
        self._decoder = (self._own_decoder(int8=live_decoder == "int8")
                         if live_decoder != "ctranslate2" else None)
        self.own_finals = own_finals  # finals' beam search on that decoder too
        self._decoder_lock = threading.Lock()  # it keeps one cache: one call at a time
        _one_blas_thread()
        self._drafts: OrderedDict[tuple[int, ...], list[int]] = OrderedDict()
        self.language = language if self.multilingual else "en"
        self._tokenizers: dict[str | None, Tokenizer] = {}
        log.info("= whisper model loaded from %s (%d threads)", self.model_dir, self.threads)

    @classmethod
    def from_settings(cls, recognition: RecognitionSettings, **kwargs: Any) -> WhisperEngine:
        return cls(recognition.whisper_model_dir, recognition.whisper_threads,
                   model=recognition.whisper_model, language=recognition.whisper_language,
                   **kwargs)

    def new_transcriber(self) -> StreamingTranscriber:
        """A fresh transcriber for one request (no context shared between requests)."""
        heard = HeardLanguage()  # each stream its own: the two sides of a call may differ
        return StreamingTranscriber(functools.partial(self.decode, heard=heard,
                                                      features=self._log_mel()),  # its clip
                                    SileroGate(), self.options)

    def decode(
        self, audio: np.ndarray, context: str = "", prefix: str = "", final: bool = False,
        heard: HeardLanguage | None = None, features: LogMel | None = None,
    ) -> Reading:
        """Words heard in ``audio`` after ``prefix`` (which the decoder is told it said).

        ``context`` is text said before the clip. Returns the words with their
        leading space (" world"), or nothing when the clip reads as silence,
        noise or a loop. ``final`` decodes use ``final_beam_size``. ``heard``
        carries a stream's detected language from one decode to the next;
        ``features`` keeps the features of a stream's clip while it grows.
        """
        seconds = len(audio) / SAMPLE_RATE
        if len(audio) < _SAMPLES_PER_FRAME:
            return Reading()
        encoder_output = self._encode(audio, live=not final, features=features)
        tokenizer = self._tokenizer(encoder_output, seconds, heard)
        prompt: list[int] = []
        if context.strip():
            prompt = [tokenizer.sot_prev,
                      *tokenizer.encode(" " + context.strip())[-_MAX_CONTEXT_TOKENS:]]
        prompt += tokenizer.sot_sequence
        forced = [tokenizer.timestamp_begin]
        if prefix.strip():
            forced += tokenizer.encode(" " + prefix.strip())
        prompt += forced
        start = len(prompt) - len(forced) - 1  # the last of <|startoftranscript|>'s tokens
        max_length = min(len(prompt) + _MIN_NEW_TOKENS + int(_TOKENS_PER_SECOND * seconds),
                         self._model.max_length)
        said = prefix.strip()
        while True:
            tokens, score, no_speech_prob = self._generate(
                encoder_output, prompt, start, max_length, final, said, tokenizer, seconds)
            if tokens[: len(forced)] == forced:  # the answer starts with the forced prefix
                tokens = tokens[len(forced) :]
            text = self._segments(tokenizer, tokens, seconds)
            kept = without_loop(said + text, seconds) if said else without_loop(text, seconds)
            # CTranslate2 answers at most min(max_length // 2, max_length - start) tokens.
            # An answer that reached it with nothing invented (no loop, nothing past the
            # audio's end) is speech faster than the cap allows: decode it with more room.
            full = len(forced) + len(tokens) >= min(max_length // 2, max_length - start)
            if (not full or max_length >= self._model.max_length or kept != said + text
                    or _WORD.findall(text) != _WORD.findall(
                        tokenizer.decode([t for t in tokens if t < tokenizer.eot]))):
                break
            log.debug("= answer %r reached its %d-token cap: decoded with more room",
                      text, max_length)
            max_length = min(2 * max_length, self._model.max_length)
        text = kept[len(said) :] if said else kept  # a loop never takes back the prefix
        avg_logprob = score * len(tokens) / (len(tokens) + 1) if tokens else 0.0
        if is_hallucination(text, no_speech_prob, avg_logprob,
                            compression_ratio(text), continuing=bool(prefix.strip())):
            log.debug("= dropped %r (no_speech %.2f, logprob %.2f)", text,
                      no_speech_prob, avg_logprob)
            return Reading()
        stopped = self._stopped_at(tokenizer, tokens, seconds) if kept == said + text else None
        return Reading(_WORD.findall(text), stopped)

    def _generate(self, encoder_output: ctranslate2.StorageView, prompt: list[int], start: int,
                  max_length: int, final: bool, said: str, tokenizer: Tokenizer,
                  seconds: float) -> tuple[list[int], float, float]:
        """One answer's tokens (the forced ones first), its score and no-speech probability."""
        if not final and self.beam_size == 1 and self._decoder is not None:

            def looping(chosen: list[int]) -> bool:  # the loop cut would end it here
                body = said + tokenizer.decode([t for t in chosen if t < tokenizer.eot])
                return without_loop(body, seconds) != body

            return self._live(encoder_output, prompt, start, max_length,
                              suppress_blank=not said, stop=looping)
        if final and self.own_finals and self.final_beam_size > 1 and self._decoder is not None:
            with self._decoder_lock:  # (CTranslate2 answers beam 1 by greedy search)
                out = self._decoder.beam(
                    np.asarray(encoder_output)[0], prompt, start, max_length=max_length,
                    beam_size=self.final_beam_size, suppress_blank=not said,
                    max_initial_timestamp_index=_MAX_INITIAL_TIMESTAMP)
            return out.tokens, out.score, out.no_speech_prob
        result = self._model.model.generate(
            encoder_output,
            [prompt],
            beam_size=self.final_beam_size if final else self.beam_size,
            max_length=max_length,
            return_scores=True,
            return_no_speech_prob=True,
            suppress_blank=not said,
            suppress_tokens=[-1],
            max_initial_timestamp_index=_MAX_INITIAL_TIMESTAMP,
        )[0]
        return result.sequences_ids[0], result.scores[0], result.no_speech_prob

    @staticmethod
    def _segments(tokenizer: Tokenizer, tokens: list[int], seconds: float) -> str:
        """Text of a timestamped answer, without what the decoder invented past the audio.

        The answer starts inside a segment (the forced ``<|0.00|>``); timestamps
        then alternate closing and opening ones. A segment that opens after the
        audio ends is the decoder continuing into the padding (a loop or a
        guess), and so is a later one said to end well after the audio (the
        first one's closing time is often late on a short clip): the answer is
        cut there. Timestamps are worth their cost for this alone: without
        them tiny.en stops early or loops more often on short clips.
        """
        begin = tokenizer.timestamp_begin
        text = ""
        pending: list[int] = []
        inside, closed = True, 0
        for token in tokens:
            if token < tokenizer.eot:
                pending.append(token)
                inside = True
                continue
            if token < begin:
                continue  # end of text or another special token
            time = (token - begin) * _TIMESTAMP_SECONDS
            if inside:
                if time > seconds + _LATE_END and closed:
                    return text
                text += tokenizer.decode(pending)
                pending, inside, closed = [], False, closed + 1
            elif time >= seconds - _LATE_START:
                return text
            else:
                inside = True
        return text + tokenizer.decode(pending)

    @staticmethod
    def _stopped_at(tokenizer: Tokenizer, tokens: list[int], seconds: float) -> float | None:
        """When the answer ends by opening a segment it never fills, before the audio's
        end: that segment's start (s). Whisper's sign that it left speech unread."""
        stamps = [t for t in tokens if t != tokenizer.eot][-2:]
        begin = tokenizer.timestamp_begin
        if len(stamps) < 2 or min(stamps) < begin:
            return None
        time = (stamps[-1] - begin) * _TIMESTAMP_SECONDS
        return time if time < seconds - _LATE_START else None

    def transcribe(self, audio: np.ndarray, beam_size: int = 5) -> str:
        """Whole-clip text the standard way (faster-whisper, 30 s windows, its temperature
        fallback: at 0.0 alone base looped on a sonnet, 223 words inserted).

        With ``beam_size=1`` this is the offline baseline streaming is measured against.
        """
        segments, _info = self._model.transcribe(
            np.asarray(audio, dtype=np.float32),
            language=self.language,
            beam_size=beam_size,
            vad_filter=False,
        )
        return "".join(seg.text for seg in segments).strip()

    def timed_words(self, audio: np.ndarray) -> list[tuple[str, float, float]]:
        """Whole-clip (word, start, end) the standard way: reference timings for benchmarks."""
        segments, _info = self._model.transcribe(
            np.asarray(audio, dtype=np.float32),
            language=self.language,
            beam_size=1,
            word_timestamps=True,
        )
        return [(w.word, float(w.start), float(w.end)) for s in segments for w in s.words or ()]

    # -- internals -----------------------------------------------------------

    def _own_decoder(self, int8: bool) -> WhisperDecoder | None:
        """captioner.engine.whisper_decoder for live decodes and finals, or None: CTranslate2."""
        if int8 and not onnx_graph.available():  # the installers' bundles leave it out
            log.info("= live decodes run in CTranslate2: ONNX Runtime is not installed")
            return None
        try:
            decoder = WhisperDecoder.from_model_dir(self.model_dir, int8=int8)
        except (ValueError, KeyError, OSError, onnx_graph.GraphError) as exc:
            # ModelFileError is a ValueError
            log.warning("= live decodes stay in CTranslate2: %s", exc)
            return None
        log.info("= live decodes run %s (%s)",
                 "as int8 ONNX Runtime graphs" if int8 else "in numpy", self.model_dir)
        return decoder

    def _live(self, encoder_output: ctranslate2.StorageView, prompt: list[int], start: int,
              max_length: int, suppress_blank: bool,
              stop: Callable[[list[int]], bool]) -> tuple[list[int], float, float]:
        """A greedy live decode in numpy, the last live answer after this context as draft."""
        assert self._decoder is not None
        key = tuple(prompt[:start])
        draft = draft_after(self._drafts.get(key, []), prompt[start + 1 :],
                            self._decoder.special.timestamp_begin)
        with self._decoder_lock:
            out = self._decoder.greedy(
                np.asarray(encoder_output)[0], prompt, start, max_length=max_length,
                suppress_blank=suppress_blank, max_initial_timestamp_index=_MAX_INITIAL_TIMESTAMP,
                draft=draft, stop=stop)
        self._drafts[key] = out.tokens
        self._drafts.move_to_end(key)
        while len(self._drafts) > _DRAFTS:
            self._drafts.popitem(last=False)
        return out.tokens, out.score, out.no_speech_prob

    def _encode(self, audio: np.ndarray, live: bool = False,
                features: LogMel | None = None) -> ctranslate2.StorageView:
        """Log-mel features of the clip plus a little silence, through the encoder."""
        frames = len(audio) // _SAMPLES_PER_FRAME
        pad = _pad_seconds(len(audio) / SAMPLE_RATE, live)
        window = min(_MAX_FRAMES, frames + int(pad * SAMPLE_RATE) // _SAMPLES_PER_FRAME)
        if features is None:  # a one-off clip: every frame computed
            features = self._log_mel()
        batch = np.ascontiguousarray(features(audio, window)[None], dtype=np.float32)
        model = self._model.model
        name = "encode_live" if live else "encode_final"  # the one-thread copy's
        encode = getattr(model, name) if hasattr(model, name) else model.encode
        return encode(ctranslate2.StorageView.from_array(batch), to_cpu=False)

    def _log_mel(self) -> LogMel:
        """Features for one stream's growing clip, with this model's mel filters."""
        return LogMel(self._model.feature_extractor.mel_filters)

    def _tokenizer(self, encoder_output: ctranslate2.StorageView, seconds: float = 0.0,
                   heard: HeardLanguage | None = None) -> Tokenizer:
        """The decoding tokens for the chosen language, or the one the audio is in.

        Detected on under ``_DETECT_SECONDS`` of audio (an utterance's first live
        decode), the multilingual model guessed Thai, Korean or Arabic for English
        speech and showed words of them ("برقب"), or copied its prompt; so a short
        decode takes the language its stream was last heard in, when there is one.
        """
        language = self.language
        if language is None and heard is not None and heard.code and seconds < _DETECT_SECONDS:
            language = heard.code
        elif language is None:
            detected = self._model.model.detect_language(encoder_output)[0][0][0]
            language = detected[2:-2]  # "<|de|>" → "de"
            if heard is not None and seconds >= _DETECT_SECONDS:
                heard.code = language
        tokenizer = self._tokenizers.get(language)
        if tokenizer is None:
            tokenizer = Tokenizer(self._model.hf_tokenizer, self.multilingual,
                                  task="transcribe", language=language)
            self._tokenizers[language] = tokenizer
        return tokenizer


def _pad_seconds(seconds: float, live: bool) -> float:
    """Silence the encoder hears after ``seconds`` of audio.

    Finals, which are committed, hear 2 s: with 1 s tiny.en loops into the
    silence more often. A live decode is only shown, and a long one hears 1 s
    (the encoder's cost is its length: 2–3 % less CPU on the real-speech set);
    a short one hears up to 2 s, so that audio and silence make at least 4 s:
    with less, its answer guesses more ("and some answer" for "and so" at
    0.7 s). Committed text stayed the same, and fewer live words were taken
    back (docs/streaming-engine.md).
    """
    if not live:
        return _PAD_SECONDS
    least, most = _LIVE_PAD
    return min(most, max(least, _LIVE_HEARD - seconds))


@functools.cache  # process-wide: once is enough, however many engines load
def _one_blas_thread() -> None:
    """Run numpy's BLAS on one thread for the rest of the process.

    Every matrix product here is small (features, the speech gate, the live
    decoder's steps). With two threads, OpenBLAS's idle worker spins after each
    call, and the CPU it burns lands on whatever runs next: a real-speech run
    cost 270 ms per audio second instead of 186 (measured). CTranslate2 keeps
    its own threads.
    """
    ThreadpoolController().limit(limits=1, user_api="blas")  # not a context: it stays


def draft_after(previous: list[int], forced: list[int], timestamp_begin: int) -> list[int]:
    """What the previous answer said after the tokens now forced, as a draft.

    ``previous`` starts with the forced tokens of its own decode, and the
    words agreed since then are now forced too. The previous answer may hold
    timestamp pairs between those words (a sentence ended there), which the
    forced text lacks: they are stepped over. Anything else that differs means
    the answer is no guide, and there is no draft.
    """
    i = 0
    for token in forced:
        while i < len(previous) and previous[i] != token and previous[i] >= timestamp_begin:
            i += 1
        if i == len(previous) or previous[i] != token:
            return []
        i += 1
    return previous[i:]


def without_loop(text: str, seconds: float) -> str:
    """``text`` up to where it starts repeating itself (a decoder loop).

    A phrase of ``_LOOP_WORDS`` or more words said again right after itself
    is how a small Whisper loops ("They all call me. They all call me."):
    everything from the second copy on goes, unless new words follow the two
    copies at a pace speech can hold (``FAST_WORDS``): that is a speaker starting
    a phrase over ("he said, you can't have, you can't have Cruz, and I think it
    has to do with more than ethanol"), and the cut lost everything after it,
    14 words there; the loops seen go on into a third copy, end on the second
    or hold twice the words their clip could. Shorter phrases repeat in real
    speech ("Hello. Hello. Hello."), so their copies are only capped at what
    fits in the clip at ``_REPEAT_SECONDS`` per word ("1. 1. 1." in 1.1 s).

    A loop may also stop partway through its second copy ("Ask what you can do
    for your country. Ask what you can do for your..." from 2.1 s of audio that
    said "ask what you can do for your"). That ending is cut too, but only
    when the answer holds more words than the clip could at ``FAST_WORDS``:
    speech cut off while it repeats a phrase ("…to Heaven, we were all going")
    reads the same and is real.
    """
    words = _WORD.findall(text)
    keys = [word_key(w) for w in words]
    for i in range(len(keys)):
        for n in range(1, (len(keys) - i) // 2 + 1):
            if keys[i : i + n] != keys[i + n : i + 2 * n]:
                continue
            if n >= _LOOP_WORDS:
                after = keys[i + 2 * n :]
                if (len(after) >= 2 and after[:2] != keys[i : i + 2]
                        and len(keys) <= FAST_WORDS * seconds):
                    continue  # said over, then on: speech
                return "".join(words[: i + n])
            copies = 2
            while keys[i : i + n] == keys[i + copies * n : i + (copies + 1) * n]:
                copies += 1
            allowed = max(1, int(seconds / (_REPEAT_SECONDS * n)))
            if copies > allowed:
                return "".join(words[: i + allowed * n])
    if len(keys) > FAST_WORDS * seconds:  # a second copy that stops partway
        for i in range(len(keys)):
            for n in range(_LOOP_WORDS + 1, len(keys) - i):
                tail = keys[i + n :]
                if _LOOP_WORDS <= len(tail) < n and keys[i : i + len(tail)] == tail:
                    return "".join(words[: i + n])
    return text


def compression_ratio(text: str) -> float:
    """Raw length over zlib length: a repetition loop compresses far better than speech."""
    data = text.encode()
    return len(data) / len(zlib.compress(data)) if data else 0.0


def is_hallucination(
    text: str,
    no_speech_prob: float,
    avg_logprob: float,
    compression_ratio: float,
    *,
    continuing: bool = False,
) -> bool:
    """Whether a decode is Whisper talking over silence, noise or music.

    ``continuing``: the text follows words already heard in the same
    utterance, so a lone "you" or "so" there is speech, not a credit line.
    """
    if _ANNOTATION.match(text) or not text.strip():
        return True
    if compression_ratio > 2.4:  # a repetition loop
        return True
    if no_speech_prob > 0.6 and avg_logprob < -1.0:
        return True
    if continuing:
        return False
    phrase = re.sub(r"[^\w\s']", " ", text.casefold()).split()
    return " ".join(phrase) in HALLUCINATIONS and (no_speech_prob > 0.2 or avg_logprob < -0.7)
