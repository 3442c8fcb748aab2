"""The playout controller (margin in, stretch out) and the stretcher, without a device."""

from __future__ import annotations

import numpy as np
import pytest

from captioner.audio.playout import PlayoutController, Stretcher

CHUNK_S = 0.08  # one server chunk between updates


def run(controller: PlayoutController, margins: list[float | None], t0: float = 0.0,
        ) -> list[float]:
    return [controller.update(t0 + k * CHUNK_S, m) for k, m in enumerate(margins)]


def test_low_margin_eases_towards_slower_smoothly_and_stays_bounded() -> None:
    c = PlayoutController(target_ms=30, max_stretch=0.03, full_ms=15, slew_per_s=0.1)
    out = run(c, [10.0] * 40)
    assert out[0] == 0.0  # no time has passed: no jump
    steps = np.diff(out)
    assert np.all(steps >= 0)  # only ever towards slower while the margin is low
    assert np.max(steps) <= 0.1 * CHUNK_S + 1e-12  # slew-limited: a glide, not a step
    assert out[-1] == pytest.approx(0.03)  # reaches the bound…
    assert max(out) <= 0.03  # …and never passes it


def test_high_margin_brings_the_rate_back_to_nominal_never_faster() -> None:
    c = PlayoutController(target_ms=30, max_stretch=0.03, window_s=0.5, slew_per_s=0.1)
    run(c, [5.0] * 20)
    assert c.stretch == pytest.approx(0.03)
    out = run(c, [60.0] * 30, t0=20 * CHUNK_S)
    after_window = out[int(0.5 / CHUNK_S) + 1:]
    assert np.all(np.diff(after_window) <= 0)
    assert np.min(np.diff(out)) >= -0.1 * CHUNK_S - 1e-12
    assert out[-1] == 0.0 and min(out) >= 0.0  # nominal, not faster


def test_stretch_is_proportional_to_the_shortfall() -> None:
    c = PlayoutController(target_ms=30, max_stretch=0.03, full_ms=15)
    assert run(c, [25.0] * 30)[-1] == pytest.approx(0.01)  # 5 of 15 ms short: a third
    c.reset()
    assert c.stretch == 0.0
    assert run(c, [30.0] * 30)[-1] == 0.0  # on target: nominal


def test_one_late_chunk_keeps_the_stretch_for_the_window_then_releases() -> None:
    c = PlayoutController(target_ms=30, max_stretch=0.03, window_s=0.5, slew_per_s=1.0)
    out = run(c, [50.0] * 5 + [0.0] + [50.0] * 20)
    late = 5
    held = out[late: late + int(0.5 / CHUNK_S)]
    assert min(held) > 0.0  # the low margin counts for the whole window
    assert out[-1] == 0.0  # then the rate returns to nominal


def test_without_measurements_the_stretch_holds() -> None:
    c = PlayoutController(target_ms=30, max_stretch=0.03, slew_per_s=1.0)
    run(c, [0.0] * 5)
    held = c.stretch
    assert held > 0
    assert run(c, [None] * 20, t0=5 * CHUNK_S)[-1] == held  # e.g. after an underrun


def test_max_stretch_zero_turns_it_off() -> None:
    c = PlayoutController(max_stretch=0.0)
    assert run(c, [-50.0] * 20) == [0.0] * 20


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="max_stretch"):
        PlayoutController(max_stretch=-0.01)


def _chunks(x: np.ndarray, size: int) -> list[np.ndarray]:
    return [x[k:k + size] for k in range(0, len(x), size)]


def test_stretcher_at_nominal_copies_exactly_whatever_the_chunking() -> None:
    x = np.random.default_rng(1).standard_normal(10_000).astype(np.float32)
    s = Stretcher()
    out = [s.process(c) for c in _chunks(x, 777)]
    assert 0 < s.held_back <= 3
    out.append(s.process(np.zeros(0, np.float32), last=True))
    assert np.array_equal(np.concatenate(out), x)


@pytest.mark.parametrize("stretch", [0.01, 0.03])
def test_stretcher_plays_a_tone_slower_and_lower_cleanly(stretch: float) -> None:
    rate, f = 48_000, 1000.0
    x = np.sin(2 * np.pi * f * np.arange(2 * rate) / rate).astype(np.float32)
    s = Stretcher()
    y = np.concatenate([s.process(c, stretch) for c in _chunks(x, 3528)]
                       + [s.process(np.zeros(0, np.float32), stretch, last=True)])
    # The first chunk glides from nominal, so it gains half its share.
    assert len(y) == pytest.approx(len(x) * (1 + stretch) - 3528 * stretch / 2, abs=2)
    k = np.arange(len(y))[4000:-100]
    w = 2 * np.pi * f / (1 + stretch) / rate
    basis = np.stack([np.sin(w * k), np.cos(w * k)], axis=1)
    fit, *_ = np.linalg.lstsq(basis, y[k], rcond=None)
    err = y[k] - basis @ fit
    snr = 10 * np.log10(np.sum(y[k] ** 2) / np.sum(err**2))
    assert snr > 60, f"{snr:.1f} dB"


def test_stretcher_glides_between_ratios_without_a_click() -> None:
    rate, f = 48_000, 440.0
    x = np.sin(2 * np.pi * f * np.arange(rate) / rate).astype(np.float32)
    s = Stretcher()
    stretches = [0.0, 0.03, 0.03, 0.0, 0.015] * 4
    y = np.concatenate([s.process(c, st) for c, st in zip(_chunks(x, 2400), stretches,
                                                          strict=True)])
    assert len(y) > len(x)
    # A step in phase or amplitude would show as a sample-to-sample jump above the tone's.
    assert np.max(np.abs(np.diff(y))) <= np.max(np.abs(np.diff(x))) * 1.001
    assert np.max(np.abs(y)) <= 1.0 + 1e-3
    # The period (between interpolated upward zero crossings) glides: it changes by a
    # fraction of a sample from one cycle to the next, by 3 % at most overall.
    k = np.flatnonzero((y[:-1] < 0) & (y[1:] >= 0))
    up = k + y[k] / (y[k] - y[k + 1])
    period = np.diff(up)
    assert np.max(np.abs(np.diff(period))) < 0.3
    nominal = 48_000 / 440
    assert nominal * 0.999 < period.min() and period.max() < nominal * 1.031
