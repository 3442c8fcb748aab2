"""Echo cancellation on arrays of real speech: the far side's echo goes, the near side stays.

The scene (tests/support/echo_scene.py): Sonnet 1 played as system audio comes
back into the mic at -6 dB, delayed; Kennedy speaks into the mic meanwhile.
Thresholds are the measured figures (bench/bench_echo.py) with a wide margin.
"""

import numpy as np
import pytest

from captioner.audio.echo import FRAME_BYTES, DelayEstimator, EchoCanceller
from captioner.engine.whisper import WhisperEngine
from tests.support.echo_scene import echo_scene, erle_db, run_filter
from tests.support.speech_set import SAMPLE_RATE, word_errors

MIN_ERLE_DB = 18.0  # measured 25-50 dB over these delays
NO_ECHO_CANCELLER_ERLE_DB = 1.0


@pytest.fixture(scope="module")
def engine() -> WhisperEngine:
    return WhisperEngine(threads=2)


@pytest.mark.parametrize("delay", [-0.03, 0.1, 0.2, 0.8])
def test_echo_is_removed_at_any_capture_delay(delay):
    """The echo may come after its reference (acoustic path, mic latency) or before it
    by stream position (the system capture lagging); the delay is measured either way."""
    scene = echo_scene(delay)
    canceller = EchoCanceller()
    cleaned = run_filter(canceller.process, scene.echo, scene.system)
    assert cleaned.size == scene.echo.size
    assert canceller.lag_seconds == pytest.approx(delay, abs=0.002)
    assert erle_db(scene.echo, cleaned) >= MIN_ERLE_DB


def test_without_the_reference_nothing_is_removed():
    """The same pipeline fed silence as reference leaves the echo: the ERLE figure
    above comes from the cancellation, not from the measurement."""
    scene = echo_scene(0.1)
    cleaned = run_filter(EchoCanceller().process, scene.echo, np.zeros_like(scene.system))
    assert erle_db(scene.echo, cleaned) < NO_ECHO_CANCELLER_ERLE_DB


def test_near_end_speech_survives_and_far_end_words_go(engine):
    scene = echo_scene(0.1)
    mixed = engine.transcribe(scene.near_span(scene.mic), beam_size=1)
    cleaned = run_filter(EchoCanceller().process, scene.mic, scene.system)
    heard = engine.transcribe(scene.near_span(cleaned), beam_size=1)
    clean = engine.transcribe(scene.near_span(scene.near_only), beam_size=1)
    near_ref = scene.near.reference
    # The echo costs the near-end transcript words; after cancellation it is close to clean.
    assert word_errors(near_ref, mixed).errors >= 5, mixed
    assert word_errors(near_ref, heard).rate <= word_errors(near_ref, clean).rate + 0.2, heard
    # Alone (before the near-end speech), the far side's words are gone.
    before = cleaned[4 * SAMPLE_RATE: scene.near_at].astype(np.float32) / 32768
    assert len(engine.transcribe(before, beam_size=1).split()) <= 1


def test_odd_chunk_sizes_keep_length_and_latency():
    """Chunks that are not whole 10 ms frames: every call returns as many bytes as it
    got, and the output lags the input by less than one frame."""
    scene = echo_scene(0.1, seconds=4.0)
    canceller = EchoCanceller()
    sizes = [1000, 333, 1601, 7, 2400]
    out, i, k = [], 0, 0
    while i < scene.echo.size:
        n = sizes[k % len(sizes)]
        mic, ref = scene.echo[i:i + n].tobytes(), scene.system[i:i + n].tobytes()
        got = canceller.process(mic, ref)
        assert len(got) == len(mic)
        out.append(got)
        i, k = i + n, k + 1
    assert sum(map(len, out)) == scene.echo.nbytes
    assert canceller.latency_samples * 2 < FRAME_BYTES


def test_mismatched_chunks_are_refused():
    with pytest.raises(ValueError, match="same whole number"):
        EchoCanceller().process(b"\0" * 320, b"\0" * 318)
    with pytest.raises(ValueError, match="same whole number"):
        EchoCanceller().process(b"\0" * 3, b"\0" * 3)


def test_delay_estimator_abstains_without_echo():
    """Headphones: the mic has near-end speech only; no delay is claimed."""
    scene = echo_scene(0.1)
    est = DelayEstimator(SAMPLE_RATE, SAMPLE_RATE // 4)
    window = slice(scene.near_at, scene.near_at + 2 * SAMPLE_RATE)
    mic = scene.near_only[window].astype(np.float32)
    ref = scene.system[scene.near_at - SAMPLE_RATE: window.stop + SAMPLE_RATE // 4]
    assert est.estimate(mic, ref.astype(np.float32)) is None
    with_echo = scene.mic[window].astype(np.float32)
    assert est.estimate(with_echo, ref.astype(np.float32)) == int(0.1 * SAMPLE_RATE)


def test_a_canceller_that_cannot_load_passes_the_mic_through():
    """No native library for this machine: captions go on, uncancelled, and say why."""
    def missing():
        raise ImportError("liblivekit_ffi.so: cannot open shared object file")

    canceller = EchoCanceller(make_backend=missing)
    scene = echo_scene(0.1, seconds=1.0)
    mic, ref = scene.echo.tobytes(), scene.system.tobytes()
    assert canceller.process(mic, ref) == mic
    assert canceller.process(mic, ref) == mic
    assert "not available" in canceller.failure and "liblivekit_ffi" in canceller.failure
