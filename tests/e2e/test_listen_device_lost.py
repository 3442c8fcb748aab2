"""`captioner listen` as a user runs it, while its device is unplugged and plugged in
again: it waits (and says so) instead of exiting, and captions what is said after."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np

from tests.support.pulse import Headset
from tests.support.speech import write_wav
from tests.support.transcribers import VOCABULARY, tone_words_pcm

RATE = 16_000


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def words_wavs(tmp_path, *phrases: list[str]):
    return [write_wav(tmp_path / f"{i}.wav", np.frombuffer(
        tone_words_pcm(words) + bytes(2 * RATE), "<i2") / 32768, RATE)
        for i, words in enumerate(phrases)]


@contextlib.contextmanager
def listening(headset: Headset, realtime_server, tmp_path):
    """`captioner listen` on the headset: (process, stdout lines, stderr lines); ended
    with Ctrl+C (SIGINT) on leaving."""
    config = tmp_path / "cfg"
    config.mkdir()
    (config / "settings.json").write_text(json.dumps({}))
    env = {**os.environ, "CAPTIONER_CONFIG_DIR": str(config),
           "CAPTIONER_LOG_DIR": str(tmp_path / "log"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "captioner", "listen", "--source", "system", "--device",
         headset.monitor, "--endpoint", realtime_server.url, "--model", "test"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True),
               threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)]
    for reader in readers:
        reader.start()
    try:
        wait_for(lambda: headset.pulse.recordings_of(proc.pid) == 1, 60, "the capture")
        yield proc, out, err
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        finally:
            proc.kill()
        for reader in readers:
            reader.join(5)


def test_listen_waits_for_a_device_that_went_away(pulse, realtime_server, tmp_path):
    before, after = VOCABULARY[:4], VOCABULARY[4:8]
    wavs = words_wavs(tmp_path, before, after)
    with (Headset(pulse, "captioner_headset", "USB_Headset") as headset,
          listening(headset, realtime_server, tmp_path) as (proc, out, err)):
        pulse.play(wavs[0], headset.name)
        headset.unplug(proc.pid)
        wait_for(lambda: any("captions go on when it is back" in line for line in err), 20,
                 "the wait")
        time.sleep(1.5)
        assert proc.poll() is None  # it did not exit
        headset.plug_in()
        wait_for(lambda: "captioner: the audio device is back\n" in err, 20,
                 "the device back")
        pulse.play(wavs[1], headset.name)
    assert proc.returncode == 0, "".join(err)
    assert " ".join(out).split() == before + after, (out, err)


def test_listen_goes_on_in_the_same_session_when_the_device_opens_at_once(
        pulse, realtime_server, tone_factory, tmp_path):
    """The stream ends but the device stays (a sound server that dropped it): it is
    opened again within a second and the same session goes on."""
    before, after = VOCABULARY[:4], VOCABULARY[4:8]
    wavs = words_wavs(tmp_path, before, after)
    with (Headset(pulse, "captioner_headset", "USB_Headset") as headset,
          listening(headset, realtime_server, tmp_path) as (proc, out, err)):
        pulse.play(wavs[0], headset.name)
        pulse.end_streams(proc.pid, "source-output")
        wait_for(lambda: any("opened again after 0." in line for line in err), 20,
                 "the device opened again")
        wait_for(lambda: pulse.recordings_of(proc.pid) == 1, 10, "the capture again")
        pulse.play(wavs[1], headset.name)
    assert proc.returncode == 0, "".join(err)
    assert " ".join(out).split() == before + after, (out, err)
    assert len(tone_factory.made) == 1, err  # one session from start to end
    assert not any("captions go on when it is back" in line for line in err)
