"""Whisper's log-mel features for a clip that grows between decodes.

The streaming engine decodes an utterance again every second or so, each time
from its start, with silence padded after it. A frame whose 25 ms window lies
inside the audio heard so far never changes as the clip grows, so ``LogMel``
keeps those frames and computes only the new ones; frames that fall wholly in
the padded silence are one constant. On the real-speech set this made the
features about a fifth of what recomputing every frame cost.

The numbers follow faster-whisper's ``FeatureExtractor`` step by step (a
centred, reflect-padded 400-sample Hann STFT every 160 samples, power, mel
filters, log10, clamped at 8 below the clip's maximum, scaled), so a decode
reads the same features either way (the tests hold them equal).
"""

from __future__ import annotations

import numpy as np

N_FFT = 400  # samples per STFT window (25 ms)
HOP = 160  # samples between frames (10 ms)
_HALF = N_FFT // 2  # the centred window reaches this far either side of its frame


class LogMel:
    """Features of one stream's growing clip; a clip that is not a continuation starts afresh.

    Whether a clip continues the last one is checked on its samples, not
    assumed: a new utterance, a cut, or a shorter clip (a final that ends before
    the last live decode's audio did) are all handled, so a caller cannot get
    features of other audio by calling it in an unexpected order.
    """

    def __init__(self, mel_filters: np.ndarray) -> None:
        self._filters = np.asarray(mel_filters, dtype=np.float32)
        self._window = np.hanning(N_FFT + 1)[:-1].astype(np.float32)
        zero = np.zeros((self._filters.shape[0], 1), dtype=np.float32)
        self._silent = np.log10(np.clip(zero, a_min=1e-10, a_max=None))  # a frame of silence
        self._head = np.zeros(0, dtype=np.float32)  # the samples the kept frames read
        self._kept = np.zeros((self._filters.shape[0], 0), dtype=np.float32)  # their log10 mel
        self.computed = 0  # frames run through the STFT so far (tests and benchmarks)

    def __call__(self, audio: np.ndarray, frames: int) -> np.ndarray:
        """Normalised features, ``(n_mels, frames)``, of ``audio`` followed by silence."""
        clip = np.asarray(audio, dtype=np.float32)[: frames * HOP]
        if frames * HOP - len(clip) <= _HALF or len(clip) <= _HALF:
            # The end's reflection would reach the audio, or there is too little of
            # it to reflect at the start: compute everything as the library does.
            raw = self._frames(self._padded(clip, frames), 0, frames)
            return _normalised(raw)
        reused = self._reusable(clip)
        touched = min(frames, (len(clip) + _HALF + HOP - 1) // HOP)  # frames that hear audio
        fresh = self._frames(clip, reused, touched)
        raw = np.concatenate(
            [self._kept[:, :reused], fresh,
             np.repeat(self._silent, frames - touched, axis=1)], axis=1)
        settled = _settled(len(clip))
        if settled > self._kept.shape[1] or reused < min(settled, self._kept.shape[1]):
            self._kept = raw[:, :settled].copy()
            self._head = clip[: (settled - 1) * HOP + _HALF].copy() if settled else clip[:0]
        return _normalised(raw)

    def _reusable(self, clip: np.ndarray) -> int:
        """How many kept frames ``clip`` shares: 0 unless it starts with their samples."""
        usable = min(self._kept.shape[1], _settled(len(clip)))
        if not usable:
            return 0
        reach = (usable - 1) * HOP + _HALF
        return usable if np.array_equal(clip[:reach], self._head[:reach]) else 0

    def _frames(self, clip: np.ndarray, first: int, stop: int) -> np.ndarray:
        """log10 mel of frames ``first``..``stop - 1`` of ``clip`` followed by silence."""
        if stop <= first:
            return np.zeros((self._filters.shape[0], 0), dtype=np.float32)
        begin, end = first * HOP - _HALF, (stop - 1) * HOP + _HALF
        parts = []
        if begin < 0:  # the centred window's reflection of the clip's start
            parts.append(clip[1 : 1 - begin][::-1])
        parts.append(clip[max(0, begin) : end])
        heard = sum(len(p) for p in parts)
        if heard < end - begin:
            parts.append(np.zeros(end - begin - heard, dtype=np.float32))
        signal = np.concatenate(parts)
        windows = np.lib.stride_tricks.sliding_window_view(signal, N_FFT)[::HOP]
        spectrum = np.fft.rfft(windows * self._window, n=N_FFT, axis=-1).astype(np.complex64)
        power = np.abs(spectrum) ** 2
        self.computed += stop - first
        return np.log10(np.clip(self._filters @ power.T, a_min=1e-10, a_max=None))

    @staticmethod
    def _padded(clip: np.ndarray, frames: int) -> np.ndarray:
        """The clip as the library sees it: silence to ``frames``, reflected at the end."""
        padded = np.zeros(frames * HOP + _HALF, dtype=np.float32)
        padded[: len(clip)] = clip
        body = padded[: frames * HOP]
        padded[frames * HOP :] = body[-2 : -2 - _HALF : -1] if len(body) > _HALF else 0.0
        return padded


def _settled(samples: int) -> int:
    """Frames whose window lies inside the first ``samples`` samples: later audio keeps them."""
    return max(0, (samples - _HALF) // HOP + 1)


def _normalised(raw: np.ndarray) -> np.ndarray:
    """Whisper's scaling: at most 8 (log10) below the loudest value, then into about [-1, 1]."""
    spec = np.maximum(raw, raw.max() - 8.0)
    return (spec + 4.0) / 4.0
