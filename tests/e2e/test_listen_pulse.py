"""End to end with real audio: espeak-ng speech played into a PulseAudio null sink,
captured from its monitor as *system* audio, streamed to a local Realtime server."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time

import jiwer
import pytest

from captioner.audio.capture import AudioCapture
from captioner.audio.devices import find_device, list_devices
from captioner.captioning import Captioner
from captioner.settings import Settings
from tests.support.speech import active_span, align, load_wav, pcm16_to_float, resample_poly16k
from tests.support.transcribers import RecordingFactory, ThreadedServer

TEXT = "Captions help people follow every word of the meeting without missing anything."


def test_server_receives_exactly_the_played_audio(pulse, speech):
    wav = speech(TEXT)
    ref, rate = load_wav(wav)
    ref16 = resample_poly16k(ref, rate)
    factory = RecordingFactory()

    async def main(url: str) -> None:
        system = find_device(list_devices(), "system", pulse.monitor)
        source = AudioCapture("system", system=system)
        captioner = Captioner(Settings(), source, endpoint=url)
        task = asyncio.create_task(captioner.run())
        # play only once the server is live and the capture is flowing
        while (captioner.session.status.state.value != "live"
               or captioner.session.stats.audio_seconds < 0.3):
            await asyncio.sleep(0.05)
        await asyncio.to_thread(pulse.play, wav)
        await asyncio.sleep(0.5)  # the capture tail: let the last block arrive
        captioner.stop()
        await asyncio.wait_for(task, 20)
        assert captioner.session.stats.reconnects == 0

    with ThreadedServer(factory) as server:
        asyncio.run(asyncio.wait_for(main(server.url), 60))
    got = pcm16_to_float(factory.received)
    assert got.size > ref16.size
    offset, ncc = align(got, ref16)
    assert ncc >= 0.9, f"normalised cross-correlation {ncc:.3f}"
    played = active_span(ref16, 16_000)
    heard = active_span(got[offset : offset + ref16.size], 16_000)
    assert heard == pytest.approx(played, rel=0.02)


@pytest.mark.slow
def test_listen_cli_with_embedded_engine_prints_the_words(pulse, speech, tmp_path):
    """`captioner listen` (embedded engine, system audio) as a user runs it."""
    wav = speech(TEXT, speed=150)
    env = {**os.environ, "CAPTIONER_CONFIG_DIR": str(tmp_path / "cfg"),
           "CAPTIONER_LOG_DIR": str(tmp_path / "log"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "captioner", "-v", "listen", "--source", "system",
         "--device", pulse.monitor],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 30
        while not pulse.recordings_of(proc.pid):
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "listen never opened the monitor"
            time.sleep(0.1)
        pulse.play(wav)
        pulse.play(speech("Thank you.", speed=150))  # trailing speech flushes the last words
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        reader.join(5)
    assert proc.returncode == 0, proc.stderr.read()
    transcript = " ".join(out)
    reference = TEXT.lower().rstrip(".") + " thank you"  # the trailing phrase counts too
    error = jiwer.wer(reference, " ".join(re.sub(r"[^a-z' ]", " ", transcript.lower()).split()))
    assert error <= 0.35, f"WER {error:.2f}: {transcript!r}"
