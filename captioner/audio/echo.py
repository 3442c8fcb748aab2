"""Acoustic echo cancellation of the microphone, with the system audio as reference.

Without headphones the microphone hears the other side of a call through the
speakers, and their words would be captioned a second time as "You". The
canceller subtracts what the system played from the microphone, using WebRTC's
echo canceller (AEC3) through LiveKit's binding (the choice and its measurements:
docs/echo-cancellation.md).

Sans-I/O: :meth:`EchoCanceller.process` takes a mic chunk and the system audio
of the same span (16 kHz mono PCM16, same length; what the two-stream capture
hands its mic filter) and returns the cleaned mic chunk, the same length. No
threads, no asyncio; the caller's loop drives it.

Clock offset: both streams count samples from their start, but each capture
path has its own latency, so the echo of a system sample reaches the mic some
tens of milliseconds later — or *earlier* by the stream positions, when the
system capture lags the mic one. AEC3 only cancels echo that comes after its
reference, within its delay range (about 10-300 ms here). So the delay is
measured by cross-correlation (:class:`DelayEstimator`); outside that range the
reference is shifted to reach AEC3 40 ms before its echo, and when the echo leads
the reference, the mic is held back by the lead plus those 40 ms (output
latency, tens of milliseconds).

Frame bookkeeping: AEC3 works on 10 ms frames; mic audio not yet making a whole
frame (or waiting for its reference) is kept, and the output is padded with
silence at the start so every call returns as many bytes as it was given.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import numpy as np

from captioner.audio.resample import TARGET_RATE

log = logging.getLogger(__name__)

BYTES_PER_SAMPLE = 2  # PCM16
FRAME_SAMPLES = TARGET_RATE // 100  # 10 ms: the unit AEC3 processes
FRAME_BYTES = FRAME_SAMPLES * BYTES_PER_SAMPLE
# Echo delays AEC3 finds by itself (measured: bench/bench_echo.py); outside them the
# reference is shifted to reach AEC3 TARGET_LEAD_SECONDS before its echo.
AEC3_MIN_DELAY_SECONDS = 0.01
AEC3_MAX_DELAY_SECONDS = 0.3
TARGET_LEAD_SECONDS = 0.04
MAX_ECHO_LAG_SECONDS = 1.0  # echo at most this long after its reference…
MAX_ECHO_LEAD_SECONDS = 0.25  # …or this long before it (the system capture lagging)
ESTIMATE_WINDOW_SECONDS = 2.0  # mic audio correlated against the reference per estimate
ESTIMATE_EVERY_SECONDS = 0.5
MIN_PEAK_RATIO = 6.0  # correlation peak over the spread of the rest: a clear echo
AGREE_SAMPLES = 16  # 1 ms: two estimates this close confirm a delay
MIN_LEVEL = 1e-4  # RMS (full scale 1.0) below which a window is treated as silence


def _seconds_to_samples(seconds: float) -> int:
    return round(seconds * TARGET_RATE)


class EchoBackend(Protocol):
    """One echo canceller instance working on 10 ms int16 frames."""

    def process(self, mic: np.ndarray, reference: np.ndarray) -> np.ndarray:
        """``mic``, ``reference``: FRAME_SAMPLES int16 each; returns the cleaned mic frame."""
        ...


class LiveKitAec:
    """WebRTC AEC3 through LiveKit's ``AudioProcessingModule`` (echo cancellation only)."""

    def __init__(self) -> None:
        # Imported here, not at the top: importing LiveKit takes over a second, and
        # every start of the app and of `listen` imports this module.
        from livekit import rtc

        self._rtc = rtc
        self._apm = rtc.AudioProcessingModule(echo_cancellation=True)

    def process(self, mic: np.ndarray, reference: np.ndarray) -> np.ndarray:
        rtc = self._rtc
        far = rtc.AudioFrame(bytearray(reference.tobytes()), TARGET_RATE, 1, FRAME_SAMPLES)
        self._apm.process_reverse_stream(far)
        near = rtc.AudioFrame(bytearray(mic.tobytes()), TARGET_RATE, 1, FRAME_SAMPLES)
        self._apm.process_stream(near)  # in place
        return np.frombuffer(near.data, dtype=np.int16).copy()


class DelayEstimator:
    """Where the reference's echo sits in the mic: GCC-PHAT cross-correlation.

    :meth:`estimate` returns the lag in samples (positive: the echo comes after
    its reference) when the correlation has a clear peak, else ``None`` (silence,
    no echo — headphones — or too much near-end speech to tell).
    """

    def __init__(self, max_lag: int, max_lead: int) -> None:
        self.max_lag = max_lag
        self.max_lead = max_lead

    def estimate(self, mic: np.ndarray, reference: np.ndarray) -> int | None:
        """``reference`` spans ``max_lag`` samples before ``mic`` to ``max_lead`` after."""
        if mic.size == 0 or reference.size != mic.size + self.max_lag + self.max_lead:
            raise ValueError("reference must span max_lag before and max_lead after the mic")
        if _rms(mic) < MIN_LEVEL or _rms(reference) < MIN_LEVEL:
            return None
        # Only lags 0..max_lag+max_lead are read, and none of them wraps around once
        # the transform spans the reference: no need to pad to both lengths.
        n = 1 << int(np.ceil(np.log2(reference.size)))
        cross = np.conj(np.fft.rfft(mic, n)) * np.fft.rfft(reference, n)
        cross /= np.abs(cross) + 1e-12  # PHAT: the phase alone, so speech's spectrum tilt
        corr = np.fft.irfft(cross, n)[: self.max_lag + self.max_lead + 1]  # does not blur it
        peak = int(np.argmax(corr))
        rest = np.delete(corr, slice(max(0, peak - 8), peak + 9))
        spread = float(np.std(rest)) or 1e-12
        if corr[peak] / spread < MIN_PEAK_RATIO:
            return None
        return self.max_lag - peak


class EchoCanceller:
    """Mic chunks in with their system-audio reference, echo-free mic chunks out.

    Satisfies the two-stream capture's ``MicFilter``. The backend is made on
    first use by ``make_backend`` (default :class:`LiveKitAec`); pass ``backend``
    to test or compare. When it cannot be made (the native library missing or
    refusing this machine), the mic passes through unchanged — captions go on,
    with the text fallback alone — and :attr:`failure` says why (logged once, and
    passed once to ``on_failure``, e.g. the app's notice line: the user needs to know
    the others' words may now come through as theirs).
    """

    def __init__(self, backend: EchoBackend | None = None, *,
                 make_backend: Callable[[], EchoBackend] = LiveKitAec,
                 on_failure: Callable[[str], None] | None = None) -> None:
        self._backend = backend
        self._make_backend = make_backend
        self.on_failure = on_failure
        self.failure: str | None = None
        self._max_lag = _seconds_to_samples(MAX_ECHO_LAG_SECONDS)
        self._max_lead = _seconds_to_samples(MAX_ECHO_LEAD_SECONDS)
        self._target_lead = _seconds_to_samples(TARGET_LEAD_SECONDS)
        self._aec3_range = (_seconds_to_samples(AEC3_MIN_DELAY_SECONDS),
                            _seconds_to_samples(AEC3_MAX_DELAY_SECONDS))
        self._window = _seconds_to_samples(ESTIMATE_WINDOW_SECONDS)
        self._every = _seconds_to_samples(ESTIMATE_EVERY_SECONDS)
        self._estimator = DelayEstimator(self._max_lag, self._max_lead)
        # Everything in samples since the start. History covers the longest look-back.
        self._keep = self._window + self._max_lag + self._max_lead + FRAME_SAMPLES
        self._ref = np.zeros(0, dtype=np.int16)
        self._mic = np.zeros(0, dtype=np.int16)
        self._hist_base = 0  # position of _ref[0] and _mic[0] (both streams advance together)
        self._next = 0  # position of the next mic sample to cancel
        self._out = bytearray()
        self._lag: int | None = None  # confirmed echo lag (samples)
        self._candidate: int | None = None
        self._next_estimate = self._window + self._max_lead
        self.lag_changes = 0

    @property
    def lag_seconds(self) -> float | None:
        """The echo delay in use (None until one was measured)."""
        return None if self._lag is None else self._lag / TARGET_RATE

    @property
    def latency_samples(self) -> int:
        """How far the output lags the input now: mic audio held back or queued."""
        return self._end - self._next + len(self._out) // BYTES_PER_SAMPLE

    @property
    def _shift(self) -> int:
        """How far before a mic frame its reference frame starts."""
        lo, hi = self._aec3_range
        if self._lag is None or lo <= self._lag <= hi:
            return 0  # AEC3 follows it alone: no shift, no re-adaptation
        return self._lag - self._target_lead

    def process(self, mic: bytes, reference: bytes) -> bytes:
        """``mic`` and ``reference``: 16 kHz mono PCM16 of the same span (same length).

        Returns the cleaned mic audio, as many bytes as ``mic``. Raises
        ``ValueError`` when the two differ in length or are not whole samples.
        """
        if len(mic) != len(reference) or len(mic) % BYTES_PER_SAMPLE:
            raise ValueError(f"mic ({len(mic)} B) and reference ({len(reference)} B) "
                             "must be the same whole number of PCM16 samples")
        if not mic:
            return b""
        if self.failure is not None:
            return mic
        if self._backend is None:
            try:
                self._backend = self._make_backend()
            except (ImportError, OSError, RuntimeError) as exc:
                self.failure = f"echo cancellation is not available here: {exc}"
                log.warning("! %s; the microphone goes uncancelled", self.failure)
                if self.on_failure is not None:
                    self.on_failure(self.failure)
                return mic
        self._append(np.frombuffer(mic, "<i2"), np.frombuffer(reference, "<i2"))
        self._maybe_estimate()
        self._cancel_ready_frames()
        return self._take(len(mic))

    # -- internals -----------------------------------------------------------

    @property
    def _end(self) -> int:
        return self._hist_base + self._mic.size

    def _append(self, mic: np.ndarray, reference: np.ndarray) -> None:
        # Keep the uncancelled mic audio and the reference its frames will need.
        keep_from = min(self._end + mic.size - self._keep, self._next - max(0, self._shift))
        self._mic = np.concatenate([self._mic, mic])
        self._ref = np.concatenate([self._ref, reference])
        drop = keep_from - self._hist_base
        if drop > 0:
            self._mic, self._ref = self._mic[drop:], self._ref[drop:]
            self._hist_base += drop

    def _slice(self, source: np.ndarray, start: int, stop: int) -> np.ndarray:
        """Samples [start, stop) by position; silence where the history has none."""
        out = np.zeros(stop - start, dtype=np.int16)
        lo, hi = max(start, self._hist_base), min(stop, self._end)
        if hi > lo:
            out[lo - start: hi - start] = source[lo - self._hist_base: hi - self._hist_base]
        return out

    def _maybe_estimate(self) -> None:
        while self._end >= self._next_estimate:
            stop = self._next_estimate - self._max_lead  # the reference must reach past it
            start = stop - self._window
            self._next_estimate += self._every
            if start < self._hist_base:
                continue
            mic = self._slice(self._mic, start, stop).astype(np.float32)
            ref = self._slice(self._ref, start - self._max_lag,
                              stop + self._max_lead).astype(np.float32)
            lag = self._estimator.estimate(mic, ref)
            if lag is None:
                continue
            agreed = self._candidate is not None and abs(lag - self._candidate) <= AGREE_SAMPLES
            self._candidate = lag
            if agreed and (self._lag is None or abs(lag - self._lag) > AGREE_SAMPLES):
                log.info("= echo delay %.1f ms (was %s ms)", lag / TARGET_RATE * 1000,
                         self.lag_seconds and round(self.lag_seconds * 1000, 1))
                self._lag = lag
                self.lag_changes += 1

    def _cancel_ready_frames(self) -> None:
        assert self._backend is not None
        while True:
            start = self._next
            ref_start = start - self._shift
            if start + FRAME_SAMPLES > self._end or ref_start + FRAME_SAMPLES > self._end:
                return  # a whole mic frame, and its reference, are not here yet
            mic = self._slice(self._mic, start, start + FRAME_SAMPLES)
            ref = self._slice(self._ref, ref_start, ref_start + FRAME_SAMPLES)
            self._out += self._backend.process(mic, ref).astype("<i2").tobytes()
            self._next += FRAME_SAMPLES

    def _take(self, size: int) -> bytes:
        """``size`` bytes of output; silence first while frames are held back."""
        held = (self._end - self._next) * BYTES_PER_SAMPLE  # input not yet cancelled
        if len(self._out) < size:
            self._out[:0] = bytes(size - len(self._out))
        chunk = bytes(self._out[:size])
        del self._out[:size]
        # Held-back audio plus queued output is the latency; when the lag estimate
        # shrinks, drop queued output beyond what is still held so it stays small.
        excess = len(self._out) + held - self._max_hold_bytes()
        if excess > 0 and self._out:
            del self._out[: min(excess, len(self._out))]
        return chunk

    def _max_hold_bytes(self) -> int:
        return (max(0, -self._shift) + FRAME_SAMPLES) * BYTES_PER_SAMPLE


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x / 32768.0)))) if x.size else 0.0


__all__ = ["DelayEstimator", "EchoBackend", "EchoCanceller", "LiveKitAec"]
