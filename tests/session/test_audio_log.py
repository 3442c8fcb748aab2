"""The audio log's frame levels: measured once on arrival, the same as measured afresh."""

from __future__ import annotations

import numpy as np
import pytest

from captioner.session import audio_log
from captioner.session.audio_log import FRAME_BYTES, AudioLog, seconds


def fresh_levels(log: AudioLog, start: float, end: float) -> np.ndarray:
    """What the log's levels must be: its kept samples of [start, end), measured now."""
    data = log._samples(max(start, log.start_seconds), end)
    frames = data.size // (FRAME_BYTES // 2)
    return np.sqrt((data[: frames * (FRAME_BYTES // 2)].reshape(frames, -1) ** 2).mean(axis=1))


def noisy_log(keep: float, appends: list[int], seed: int = 3) -> AudioLog:
    rng = np.random.default_rng(seed)
    log = AudioLog(keep)
    for size in appends:  # odd sizes too: a frame (or a sample) split between appends
        log.append((rng.standard_normal(size // 2 + 1) * 3000).astype("<i2").tobytes()[:size])
    return log


@pytest.mark.parametrize("appends", [[2560] * 200, [1000, 7, 2559, 321, 3] * 90, [48_000] * 12])
def test_measured_levels_match_the_samples_after_trims(appends):
    log = noisy_log(3.0, appends)
    assert log.base > 0 and log.base % FRAME_BYTES == 0  # trimmed, on the frame grid
    end = log.end_seconds
    for start in (log.start_seconds, end - 2.0, end - 0.08, end - 1.0 + 1 / 16_000):
        got = log._frame_levels(start, end)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, fresh_levels(log, start, end))
    floor = log.noise_floor(end - 2.0, end)
    assert floor == pytest.approx(float(np.percentile(fresh_levels(log, end - 2.0, end), 10)))


def test_a_question_on_the_frame_grid_reads_no_samples(monkeypatch):
    log = noisy_log(60.0, [2560] * 250)  # 20 s, chunks of 80 ms as the session sends them
    end = log.end_seconds
    expected = log.noise_floor(end - 10.0, end), log.last_sound(end - 0.08, end, 0.01)

    def no_reading(*_args):
        raise AssertionError("measured 20 ms frames again")

    monkeypatch.setattr(audio_log, "_floats", no_reading)
    assert (log.noise_floor(end - 10.0, end), log.last_sound(end - 0.08, end, 0.01)) == expected
    with pytest.raises(AssertionError):  # off the grid, the frames are measured afresh
        log.noise_floor(end - 10.0 + seconds(2), end)
