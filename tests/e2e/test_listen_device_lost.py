"""`captioner listen` as a user runs it, while its device is unplugged and plugged in
again: it waits (and says so) instead of exiting, and captions what is said after."""

from __future__ import annotations

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


def test_listen_waits_for_a_device_that_went_away(pulse, realtime_server, tmp_path):
    before, after = VOCABULARY[:4], VOCABULARY[4:8]
    wavs = [write_wav(tmp_path / f"{i}.wav", np.frombuffer(
        tone_words_pcm(words) + bytes(2 * RATE), "<i2") / 32768, RATE)
        for i, words in enumerate((before, after))]
    config = tmp_path / "cfg"
    config.mkdir()
    (config / "settings.json").write_text(json.dumps({}))
    env = {**os.environ, "CAPTIONER_CONFIG_DIR": str(config),
           "CAPTIONER_LOG_DIR": str(tmp_path / "log"), "PYTHONUNBUFFERED": "1"}
    with Headset(pulse, "captioner_headset", "USB_Headset") as headset:
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
            wait_for(lambda: pulse.recordings_of(proc.pid) == 1, 60, "the capture")
            pulse.play(wavs[0], headset.name)
            headset.unplug(proc.pid)
            wait_for(lambda: any("went away" in line for line in err), 20, "the wait")
            time.sleep(1.5)
            assert proc.poll() is None  # it did not exit
            headset.plug_in()
            wait_for(lambda: "captioner: the audio device is back\n" in err, 20,
                     "the device back")
            pulse.play(wavs[1], headset.name)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            finally:
                proc.kill()
            for reader in readers:
                reader.join(5)
    assert proc.returncode == 0, "".join(err)
    assert " ".join(out).split() == before + after, (out, err)
