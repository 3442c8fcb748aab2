"""The embedded on-device recogniser: faster-whisper (CTranslate2, int8, CPU).

``WhisperEngine`` loads one model and hands out a fresh streaming transcriber
per request (``TranscriberFactory = engine.new_transcriber``). The model comes
from a local directory only (the bundled ``tiny.en`` by default, see
captioner.engine.model_paths): nothing is downloaded at run time.

Sharing: one loaded ``WhisperModel`` serves every transcriber. CTranslate2
models are safe to call from several threads; with ``num_workers=1`` the calls
simply run one after another, which is what the server's worker thread does
anyway.

Speed: Whisper's encoder always sees a 30 s window, but our streaming buffer
holds a few seconds. CTranslate2 accepts shorter mel inputs, so streaming
decodes encode only the buffer plus 1–2 s of padding (like whisper.cpp's
``audio_ctx``), which cuts CPU per decode about threefold on ``tiny.en`` with
no measurable loss of accuracy on our test speech. Offline ``transcribe`` keeps
the standard 30 s window.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from faster_whisper import WhisperModel

from captioner.engine.model_paths import ModelDirError
from captioner.engine.multilingual import decoding_language, model_folder
from captioner.engine.streaming import (
    SAMPLE_RATE,
    StreamingOptions,
    StreamingTranscriber,
    Word,
)
from captioner.engine.vad import SileroGate

if TYPE_CHECKING:
    from captioner.settings import RecognitionSettings

log = logging.getLogger(__name__)

_FRAMES_PER_SECOND = 100  # Whisper mel frames (10 ms hop)
_MAX_FRAMES = 3000  # the model's 30 s window
_WINDOW_PAD_SECONDS = 2  # silence the encoder sees after the buffer
_MIN_WINDOW_SECONDS = 3  # (a 10 s or 30 s window measured no better, 1.3–4× slower)

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


class _WindowedWhisper(WhisperModel):
    """WhisperModel whose encoder can look at less than 30 s (per calling thread)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.window = threading.local()

    def encode(self, features: np.ndarray) -> Any:
        frames = getattr(self.window, "frames", None)
        if frames:
            features = np.ascontiguousarray(features[..., :frames])
        return super().encode(features)


class WhisperEngine:
    """One loaded Whisper model; a factory of streaming transcribers."""

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        threads: int = 2,
        *,
        options: StreamingOptions | None = None,
        beam_size: int = 1,
        model: str = "tiny.en",
        language: str | None = None,
    ) -> None:
        self.model_dir: Path = model_folder(model, model_dir)
        self.threads = max(1, int(threads))
        self.options = options or StreamingOptions()
        self.beam_size = beam_size
        self.language = decoding_language(model, language)  # None: detected per decode
        try:
            self._model = _WindowedWhisper(
                str(self.model_dir),
                device="cpu",
                compute_type="int8",
                cpu_threads=self.threads,
                num_workers=1,
                local_files_only=True,
            )
        except (RuntimeError, ValueError, OSError) as exc:
            raise ModelDirError(
                f"Speech model in {self.model_dir} could not be loaded: {exc}"
            ) from exc
        log.info("= whisper model loaded from %s (%d threads)", self.model_dir, self.threads)

    @classmethod
    def from_settings(cls, recognition: RecognitionSettings, **kwargs: Any) -> WhisperEngine:
        return cls(recognition.whisper_model_dir, recognition.whisper_threads,
                   model=recognition.whisper_model, language=recognition.whisper_language,
                   **kwargs)

    def new_transcriber(self) -> StreamingTranscriber:
        """A fresh transcriber for one request (no context shared between requests)."""
        return StreamingTranscriber(self.decode, SileroGate(), self.options)

    def decode(self, audio: np.ndarray, prompt: str = "", careful: bool = False) -> list[Word]:
        """Words of a short clip (times from its start), hallucinations removed."""
        frames = len(audio) // (SAMPLE_RATE // _FRAMES_PER_SECOND)
        pad = _WINDOW_PAD_SECONDS * _FRAMES_PER_SECOND
        window = min(_MAX_FRAMES, max(_MIN_WINDOW_SECONDS * _FRAMES_PER_SECOND, frames + pad))
        self._model.window.frames = window
        try:
            segments, _info = self._model.transcribe(
                np.asarray(audio, dtype=np.float32),
                language=self.language,
                beam_size=5 if careful else self.beam_size,
                temperature=0.0,
                condition_on_previous_text=False,
                initial_prompt=prompt or None,
                word_timestamps=True,
                vad_filter=False,
                # Bound the cost of a repetition loop (tiny models loop on short clips).
                max_new_tokens=min(200, int(16 + 8 * len(audio) / SAMPLE_RATE)),
            )
            words: list[Word] = []
            for seg in segments:
                if is_hallucination(
                    seg.text, seg.no_speech_prob, seg.avg_logprob, seg.compression_ratio
                ):
                    log.debug(
                        "= dropped segment %r (no_speech %.2f, logprob %.2f)",
                        seg.text,
                        seg.no_speech_prob,
                        seg.avg_logprob,
                    )
                    continue
                words.extend(
                    Word(float(w.start), float(w.end), w.word) for w in seg.words or () if w.word
                )
            return words
        finally:
            self._model.window.frames = None

    def timed_words(self, audio: np.ndarray) -> list[Word]:
        """Whole-clip words with times, standard settings (reference timings for benchmarks)."""
        segments, _info = self._model.transcribe(
            np.asarray(audio, dtype=np.float32),
            language=self.language,
            beam_size=5,
            word_timestamps=True,
        )
        return [Word(float(w.start), float(w.end), w.word) for s in segments for w in s.words or ()]

    def transcribe(self, audio: np.ndarray) -> str:
        """Whole-clip transcription with the standard 30 s window and beam search."""
        segments, _info = self._model.transcribe(
            np.asarray(audio, dtype=np.float32), language=self.language, beam_size=5
        )
        return "".join(seg.text for seg in segments).strip()


def is_hallucination(
    text: str, no_speech_prob: float, avg_logprob: float, compression_ratio: float
) -> bool:
    """Whether a segment is Whisper talking over silence, noise or music."""
    if _ANNOTATION.match(text) or not text.strip():
        return True
    if compression_ratio > 2.4:  # a repetition loop
        return True
    if no_speech_prob > 0.6 and avg_logprob < -1.0:
        return True
    phrase = re.sub(r"[^\w\s']", " ", text.casefold()).split()
    return " ".join(phrase) in HALLUCINATIONS and (no_speech_prob > 0.2 or avg_logprob < -0.7)
