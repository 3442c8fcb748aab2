"""A call heard without headphones: the far side's speech comes back into the mic.

``echo_scene`` builds, from two real speech clips, the system audio (the far
side, the canceller's reference) and the microphone: an attenuated copy of the
system audio delayed by ``delay_seconds`` (negative: the echo *leads* the
reference by stream position, as when the system capture lags the mic one),
plus different near-end speech starting ``near_at_seconds`` in. Used by the
echo tests and bench/bench_echo.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tests.support.speech_set import SAMPLE_RATE, SpeechClip, clip

ECHO_GAIN = 0.5  # -6 dB: loudspeaker to mic at a laptop's distance, roughly
CHUNK_SAMPLES = 1600  # 100 ms, as the capture delivers


@dataclass(frozen=True)
class EchoScene:
    far: SpeechClip
    near: SpeechClip
    system: np.ndarray  # int16: the reference
    echo: np.ndarray  # int16: what the mic hears of the system audio alone
    near_only: np.ndarray  # int16: the near-end speech where the mic has it
    near_at: int  # sample where the near-end speech starts

    @property
    def mic(self) -> np.ndarray:
        return to_int16((self.echo.astype(np.float32) + self.near_only) / 32767)

    def near_span(self, samples: np.ndarray, pad_seconds: float = 0.3) -> np.ndarray:
        """The part of ``samples`` (float) where the near-end speech is, with a margin."""
        pad = int(pad_seconds * SAMPLE_RATE)
        lo = max(0, self.near_at - pad)
        hi = self.near_at + self.near.samples().size + pad
        return samples[lo:hi].astype(np.float32) / 32768


def to_int16(x: np.ndarray) -> np.ndarray:
    return np.clip(np.round(x * 32767), -32768, 32767).astype(np.int16)


def echo_scene(delay_seconds: float, *, far: str = "sonnet", near: str = "jfk",
               seconds: float = 20.0, near_at_seconds: float = 6.0,
               gain: float = ECHO_GAIN) -> EchoScene:
    far_clip, near_clip = clip(far), clip(near)
    n = int(seconds * SAMPLE_RATE)
    source = far_clip.samples()[:n]
    source = np.pad(source, (0, n - source.size))
    d = round(abs(delay_seconds) * SAMPLE_RATE)
    delayed = np.zeros(n, np.float32)
    delayed[d:] = source[: n - d]
    system, echo = (source, gain * delayed) if delay_seconds >= 0 else (delayed, gain * source)
    near_at = int(near_at_seconds * SAMPLE_RATE)
    speech = near_clip.samples()
    near_only = np.zeros(n, np.float32)
    span = max(0, min(speech.size, n - near_at))
    near_only[near_at: near_at + span] = speech[:span]
    return EchoScene(far_clip, near_clip, to_int16(system), to_int16(echo),
                     to_int16(near_only), near_at)


def run_filter(process: Callable[[bytes, bytes], bytes], mic: np.ndarray,
               system: np.ndarray, chunk: int = CHUNK_SAMPLES) -> np.ndarray:
    """``process(mic_chunk, reference_chunk)`` over the whole stream, chunk by chunk."""
    out = [process(mic[i:i + chunk].tobytes(), system[i:i + chunk].tobytes())
           for i in range(0, mic.size, chunk)]
    return np.frombuffer(b"".join(out), dtype=np.int16)


def erle_db(echo: np.ndarray, cleaned: np.ndarray, skip_seconds: float = 4.0) -> float:
    """Echo return loss enhancement: echo power in over residual power out, after
    ``skip_seconds`` of convergence."""
    skip = int(skip_seconds * SAMPLE_RATE)
    e = echo[skip:].astype(np.float64)
    r = cleaned[skip:].astype(np.float64)
    return float(10 * np.log10(np.sum(e ** 2) / max(np.sum(r ** 2), 1.0)))
