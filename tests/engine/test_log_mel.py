"""The growing clip's log-mel features: the library's numbers, each frame computed once."""

from __future__ import annotations

import numpy as np
import pytest
from faster_whisper.feature_extractor import FeatureExtractor

from captioner.engine.log_mel import HOP, LogMel
from tests.support.speech_set import clip

EXTRACTOR = FeatureExtractor()
PAD = 200  # frames of silence after the clip (the engine's 2 s)


def library(audio: np.ndarray, frames: int) -> np.ndarray:
    """faster-whisper's features of ``audio`` padded with silence to ``frames``."""
    padded = np.zeros(frames * HOP, dtype=np.float32)
    head = audio[: frames * HOP]
    padded[: len(head)] = head
    return EXTRACTOR(padded, padding=0)[:, :frames]


@pytest.fixture(scope="module")
def speech() -> np.ndarray:
    return clip("sonnet").samples()[: 16000 * 14]


def close(ours: np.ndarray, theirs: np.ndarray) -> bool:
    # The mel product's sums may round in another order for another number of frames.
    return ours.shape == theirs.shape and float(np.abs(ours - theirs).max()) < 1e-5


def test_a_growing_clip_reads_as_the_library_reads_it(speech) -> None:
    features = LogMel(EXTRACTOR.mel_filters)
    for end in range(8000, len(speech), 12_800 + 37):  # pushes that split frames
        frames = end // HOP + PAD
        assert close(features(speech[:end], frames), library(speech[:end], frames)), end


def test_each_frame_of_a_growing_clip_is_computed_once(speech) -> None:
    features = LogMel(EXTRACTOR.mel_filters)
    ends = list(range(16000, len(speech), 12_800))
    for end in ends:
        features(speech[:end], end // HOP + PAD)
    # Every frame that hears audio, once, plus the few at each call's edge that
    # heard its end and are computed again when more audio arrives.
    assert features.computed <= ends[-1] // HOP + 3 * len(ends)


@pytest.mark.parametrize("other", ["later start", "changed sample", "shorter"])
def test_a_clip_that_does_not_continue_the_last_one_is_not_given_its_frames(
        speech, other) -> None:
    features = LogMel(EXTRACTOR.mel_filters)
    first = speech[: 16000 * 8]
    features(first, len(first) // HOP + PAD)
    if other == "later start":  # the next utterance
        audio = speech[16000 * 3 : 16000 * 10]
    elif other == "changed sample":
        audio = speech[: 16000 * 10].copy()
        audio[16000 * 4] += 0.25
    else:  # a final ending before the last live decode's audio did
        audio = speech[: 16000 * 5]
    frames = len(audio) // HOP + PAD
    assert close(features(audio, frames), library(audio, frames))
    if other == "shorter":  # …which keeps the longer clip's frames for the next decode
        before = features.computed
        features(speech[: 16000 * 9], 900 + PAD)
        assert features.computed - before < 120


@pytest.mark.parametrize("length", [201, 1000, 16000 * 3 - 100])
def test_short_clips_and_clips_that_fill_the_window_read_as_the_library_reads_them(
        speech, length) -> None:
    audio = speech[:length]
    frames = length // HOP + 1  # no room for the silence: the end reflects the audio
    assert close(LogMel(EXTRACTOR.mel_filters)(audio, frames), library(audio, frames))
    frames = length // HOP + PAD
    assert close(LogMel(EXTRACTOR.mel_filters)(audio, frames), library(audio, frames))
