"""AudioCapture with a real PulseAudio: speech into a null sink, captured from the monitor."""

import asyncio
import os
import signal

import numpy as np
import pytest

from captioner.audio.capture import AudioCapture
from captioner.audio.devices import find_device, list_devices
from captioner.audio.errors import CaptureError
from tests.support.pulse import PulseDaemon
from tests.support.speech import (
    active_span,
    align,
    load_wav,
    pcm16_to_float,
    resample_poly16k,
    write_wav,
)

TEXT = "Live captions help everyone follow the meeting."


async def capture_while(cap: AudioCapture, action, tail_seconds: float = 0.6) -> bytes:
    """Start ``cap``, wait until audio flows, run ``action``, keep ``tail_seconds`` more, stop."""
    chunks: list[bytes] = []
    flowing = asyncio.Event()
    tail_done = asyncio.Event()
    tail_from: list[int] = []
    tail_chunks = int(tail_seconds * 32_000 / cap.chunk_bytes) + 1

    async def consume():
        async for chunk in cap.chunks():
            chunks.append(chunk)
            flowing.set()
            if tail_from and len(chunks) - tail_from[0] >= tail_chunks:
                tail_done.set()

    await cap.start()
    task = asyncio.create_task(consume())
    try:
        await asyncio.wait_for(flowing.wait(), 15)
        await action()
        tail_from.append(len(chunks))
        await asyncio.wait_for(tail_done.wait(), 15)
    finally:
        await cap.stop()
        await task
    return b"".join(chunks)


def test_system_capture_matches_the_played_speech(pulse, speech):
    wav = speech(TEXT)
    ref, rate = load_wav(wav)
    ref16 = resample_poly16k(ref, rate)
    levels = []

    async def main():
        devices = list_devices()
        cap = AudioCapture("system", system=find_device(devices, "system", pulse.monitor))

        async def play():
            task = asyncio.create_task(asyncio.to_thread(pulse.play, wav))
            while not task.done():  # sample the level meter while the speech plays
                levels.append(cap.level_dbfs)
                await asyncio.wait([task], timeout=0.1)
            await task

        captured = await capture_while(cap, play)
        assert cap.dropped_frames == 0
        return captured

    got = pcm16_to_float(asyncio.run(main()))
    assert got.size > ref16.size
    offset, ncc = align(got, ref16)
    assert ncc >= 0.9, f"normalised cross-correlation {ncc:.3f}"
    played = active_span(ref16, 16_000)
    heard = active_span(got[offset:offset + ref16.size], 16_000)
    assert heard == pytest.approx(played, rel=0.02)
    assert max(levels) > -40.0  # the meter moved with the speech


def test_both_mixes_system_and_mic_with_their_gains(pulse, tmp_path):
    mic_monitor = pulse.null_sink("captioner_mic")
    t = np.arange(int(1.5 * 44_100)) / 44_100
    low = write_wav(tmp_path / "low.wav", 0.3 * np.sin(2 * np.pi * 440 * t), 44_100)
    high = write_wav(tmp_path / "high.wav", 0.3 * np.sin(2 * np.pi * 1000 * t), 44_100)

    async def main():
        devices = list_devices()
        cap = AudioCapture(
            "both", mic=find_device(devices, "system", mic_monitor),
            system=find_device(devices, "system", pulse.monitor), system_gain=0.5, mic_gain=1.0,
        )

        async def play_both():
            await asyncio.gather(asyncio.to_thread(pulse.play, low),
                                 asyncio.to_thread(pulse.play, high, "captioner_mic"))

        return await capture_while(cap, play_both)

    got = pcm16_to_float(asyncio.run(main()))
    spectrum = np.abs(np.fft.rfft(got)) * 2 / got.size
    hz = np.fft.rfftfreq(got.size, 1 / 16_000)

    def amplitude(freq):  # energy around the tone, so leakage does not matter
        band = (hz > freq - 20) & (hz < freq + 20)
        return np.sqrt(np.sum(spectrum[band] ** 2) / 1.5 * (got.size / 16_000)) if band.any() else 0

    a440, a1000 = amplitude(440), amplitude(1000)
    assert a440 / a1000 == pytest.approx(0.5, rel=0.1)
    assert a1000 > 0.05  # the mic tone is really there, not just a ratio of noise


def test_sound_server_dying_ends_capture_with_an_error(pulse, monkeypatch):
    pulse_index = find_device(list_devices(), "system", pulse.monitor).device_index
    daemon = PulseDaemon()
    daemon.start()
    try:
        monitor = daemon.add_null_sink("doomed")
        doomed = find_device(list_devices(), "system", pulse.monitor)
        doomed = type(doomed)(9999, "Doomed sink monitor", "system", 2, 48_000.0,
                              open_index=pulse_index, pulse_name=monitor)

        async def main():
            cap = AudioCapture("system", system=doomed, stall_timeout=2.0)
            with monkeypatch.context() as m:  # the ALSA plugin reads it when the stream opens
                m.setenv("PULSE_SERVER", daemon.server)
                await cap.start()
            got = 0
            with pytest.raises(CaptureError, match="system capture"):
                async for _ in cap.chunks():
                    got += 1
                    if got == 2:
                        os.kill(daemon.pid, signal.SIGKILL)
            await cap.stop()
            return got

        assert asyncio.run(asyncio.wait_for(main(), 30)) >= 2
    finally:
        daemon.stop()
