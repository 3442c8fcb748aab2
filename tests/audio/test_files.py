"""FileSource: WAV/FLAC at any rate and channel count → 16 kHz mono PCM16 chunks."""

import asyncio
import wave

import numpy as np
import pytest
import soundfile

from captioner.audio.errors import AudioFileError
from captioner.audio.files import FileSource
from tests.support.speech import align, load_wav, pcm16_to_float, resample_poly16k, write_wav


def sine(rate, seconds, freq=500.0, amp=0.5, channels=1):
    t = np.arange(int(rate * seconds)) / rate
    mono = amp * np.sin(2 * np.pi * freq * t)
    return mono if channels == 1 else np.repeat(mono[:, None], channels, axis=1)


def write_wav_width(path, samples, rate, width):
    data = samples if samples.ndim == 2 else samples[:, None]
    if width == 1:
        raw = np.clip(np.rint(data * 127 + 128), 0, 255).astype(np.uint8).tobytes()
    elif width == 3:
        ints = np.clip(np.rint(data * 8388607), -8388608, 8388607).astype("<i4")
        raw = ints.view(np.uint8).reshape(-1, 4)[:, :3].tobytes()
    else:
        raw = np.clip(np.rint(data * 2147483647), -2**31, 2**31 - 1).astype("<i4").tobytes()
    with wave.open(str(path), "wb") as w:
        w.setnchannels(data.shape[1])
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(raw)
    return path


def check_tone(chunks, seconds, chunk_bytes, amp=0.5, freq=500.0):
    assert all(len(c) == chunk_bytes for c in chunks[:-1]) and 0 < len(chunks[-1]) <= chunk_bytes
    got = pcm16_to_float(b"".join(chunks))
    assert abs(got.size - seconds * 16_000) <= 2
    peak = np.argmax(np.abs(np.fft.rfft(got))) * 16_000 / got.size
    assert abs(peak - freq) < 2
    assert np.sqrt(np.mean(got[800:-800] ** 2)) == pytest.approx(amp / np.sqrt(2), rel=0.02)


@pytest.mark.parametrize(("rate", "channels", "width"), [
    (22_050, 1, 2), (44_100, 2, 2), (48_000, 2, 3), (8_000, 1, 1), (16_000, 1, 4),
])
def test_wav_of_any_layout_gives_16k_mono_chunks(tmp_path, rate, channels, width):
    data = sine(rate, 1.0, channels=channels)
    path = (write_wav(tmp_path / "a.wav", data, rate) if width == 2
            else write_wav_width(tmp_path / "a.wav", data, rate, width))
    src = FileSource(path, chunk_bytes=2048)
    assert (src.samplerate, src.channels, src.duration) == (rate, channels, pytest.approx(1.0))
    check_tone(list(src.iter_chunks()), 1.0, 2048)


def test_flac_and_float_wav_through_soundfile(tmp_path):
    data = sine(44_100, 0.8, channels=2).astype(np.float32)
    soundfile.write(tmp_path / "a.flac", data, 44_100)
    soundfile.write(tmp_path / "f.wav", data, 44_100, subtype="FLOAT")
    for name in ("a.flac", "f.wav"):
        check_tone(list(FileSource(tmp_path / name, chunk_bytes=4096).iter_chunks()), 0.8, 4096)


def test_espeak_speech_file_matches_a_scipy_resampled_reference(speech):
    wav = speech("Testing one two three.")
    ref, rate = load_wav(wav)
    got = pcm16_to_float(b"".join(FileSource(wav).iter_chunks()))
    ref16 = resample_poly16k(ref, rate)
    offset, ncc = align(np.concatenate([got, np.zeros(64, np.float32)]), ref16)
    assert offset <= 2 and ncc > 0.99


def test_async_chunks_realtime_pacing(tmp_path):
    path = write_wav(tmp_path / "a.wav", sine(16_000, 0.5), 16_000)

    async def main(realtime):
        loop = asyncio.get_running_loop()
        start = loop.time()
        src = FileSource(path, chunk_bytes=2048, realtime=realtime)
        chunks = [c async for c in src.chunks()]
        return chunks, loop.time() - start, src.level_dbfs

    fast, _, level = asyncio.run(main(False))
    paced, elapsed, _ = asyncio.run(main(True))
    assert paced == fast
    assert elapsed >= 0.5 - 0.064  # delivered no faster than the audio plays
    assert level == pytest.approx(-9.0, abs=0.2)  # the meter tracks the chunks (0.5 amplitude)


def test_stop_ends_the_stream_early(tmp_path):
    path = write_wav(tmp_path / "a.wav", sine(16_000, 2.0), 16_000)

    async def main():
        src = FileSource(path, chunk_bytes=2048)
        await src.start()
        got = []
        async for chunk in src.chunks():
            got.append(chunk)
            if len(got) == 3:
                await src.stop()
        return got

    assert len(asyncio.run(main())) == 3


@pytest.mark.parametrize(("name", "content", "message"), [
    ("missing.wav", None, "no such file"),
    ("text.wav", b"hello, not audio", "text.wav"),
    ("text.flac", b"fLaC but not really", "not a readable audio file"),
    ("empty.wav", b"", "empty.wav"),
    ("folder.wav", "folder", "folder.wav: a folder, not an audio file"),
])
def test_bad_files_raise_a_clear_typed_error(tmp_path, name, content, message):
    path = tmp_path / name
    if content == "folder":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(AudioFileError, match=message):
        FileSource(path)
