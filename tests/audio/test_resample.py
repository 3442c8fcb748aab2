"""Resampler: rate, level, frequency and continuity across block edges."""

import numpy as np
import pytest

from captioner.audio.resample import Resampler, from_pcm16, rms_dbfs, to_pcm16


def tone(rate: int, seconds: float, freq: float, amp: float, channels: int = 2) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    mono = (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)
    return np.repeat(mono[:, None], channels, axis=1)


def streamed(rs: Resampler, block: np.ndarray, sizes: list[int]) -> np.ndarray:
    out, pos, i = [], 0, 0
    while pos < block.shape[0]:
        n = sizes[i % len(sizes)]
        out.append(rs.process(block[pos:pos + n]).copy())
        pos += n
        i += 1
    out.append(rs.flush())
    return np.concatenate(out)


@pytest.mark.parametrize("rate", [44_100, 48_000])
def test_stereo_tone_comes_out_16k_mono_same_pitch_and_level(rate):
    block = tone(rate, 2.0, 1000.0, 0.5)
    out = streamed(Resampler(rate, 2), block, [rate])
    assert abs(out.size - 32_000) <= 2
    spectrum = np.abs(np.fft.rfft(out * np.hanning(out.size)))
    peak_hz = np.argmax(spectrum) * 16_000 / out.size
    assert abs(peak_hz - 1000.0) < 1.0
    core = out[1600:-1600]  # away from the filter's edges
    assert np.sqrt(np.mean(core**2)) == pytest.approx(0.5 / np.sqrt(2), rel=0.01)


@pytest.mark.parametrize("rate", [44_100, 48_000])
def test_block_streaming_matches_one_shot_without_clicks(rate):
    block = tone(rate, 1.5, 440.0, 0.8)
    one_shot = streamed(Resampler(rate, 2), block, [block.shape[0]])
    odd_blocks = streamed(Resampler(rate, 2), block, [127, 480, 1, 1023, 4410, 64])
    assert odd_blocks.size == one_shot.size
    np.testing.assert_allclose(odd_blocks, one_shot, atol=1e-5)
    # a 440 Hz sine of amplitude 0.8 at 16 kHz moves at most 2π·440/16000·0.8 per sample
    core = odd_blocks[800:-800]
    assert np.max(np.abs(np.diff(core))) <= 2 * np.pi * 440 / 16_000 * 0.8 * 1.02


def test_downmix_averages_channels_and_16k_mono_passes_through():
    left = np.full(1600, 0.6, np.float32)
    right = np.full(1600, -0.2, np.float32)
    third = np.full(1600, 0.5, np.float32)
    rs = Resampler(16_000, 3)
    out = rs.process(np.stack([left, right, third], axis=1))
    np.testing.assert_allclose(out, 0.3, atol=1e-6)
    assert rs.flush().size == 0
    mono = np.linspace(-1, 1, 100, dtype=np.float32)
    np.testing.assert_array_equal(Resampler(16_000, 1).process(mono), mono)


def test_pcm16_conversion_clips_and_round_trips():
    pcm = to_pcm16(np.array([0.0, 0.5, -0.5, 1.5, -1.5, 1.0, -1.0], np.float32))
    assert np.frombuffer(pcm, "<i2").tolist() == [0, 16384, -16384, 32767, -32768, 32767, -32767]
    np.testing.assert_allclose(from_pcm16(to_pcm16(np.array([0.25, -0.75], np.float32))),
                               [0.25, -0.75], atol=1 / 32767)
    out = Resampler(48_000, 2).process_pcm16(tone(48_000, 0.1, 500, 0.9))
    assert len(out) % 2 == 0 and len(out) > 0


def test_rms_dbfs_of_known_signals():
    full, tenth = (to_pcm16(tone(16_000, 1.0, 1000, a, 1)[:, 0]) for a in (1.0, 0.1))
    assert rms_dbfs(full) == pytest.approx(-3.01, abs=0.05)
    assert rms_dbfs(tenth) == pytest.approx(-23.01, abs=0.05)
    assert rms_dbfs(bytes(400)) == -100.0
    assert rms_dbfs(b"") == -100.0


@pytest.mark.parametrize("args", [(0, 2), (48_000, 0), (-1, 1)])
def test_bad_parameters_are_rejected(args):
    with pytest.raises(ValueError):
        Resampler(*args)
