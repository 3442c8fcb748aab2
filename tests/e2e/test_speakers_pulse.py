"""End to end, two labelled streams: `captioner listen --source both --speakers` as a
user runs it, with the embedded engine and real speech through PulseAudio.

The call's other side (Kennedy) plays into the system output (a null sink, captured
from its monitor); then "you" (a LibriVox reading of Sonnet 1) speak into the
microphone (a null sink's monitor remapped as an ordinary input source, so it is
listed and chosen as a microphone). Every printed line must carry the right name,
hold only its own speaker's words, and come out in the order they were spoken.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.support.speech_set import clip

MIC_SINK = "captioner_voice"
OTHERS_WORDS = {"fellow", "americans", "ask", "country"}
YOU_WORDS = {"fairest", "creatures", "desire", "increase", "beauty", "rose", "never", "die"}
READING_SECONDS = 9  # of the sonnet: "… beauty's rose might never die"


@pytest.fixture(scope="module")
def microphone(pulse):
    return pulse.microphone(MIC_SINK)


def words(text: str) -> set[str]:
    return set(re.sub(r"[^a-z' ]", " ", text.lower()).split())


@pytest.mark.slow
def test_listen_speakers_labels_both_sides_in_spoken_order(pulse, microphone, tmp_path):
    reading = tmp_path / "reading.wav"
    subprocess.run(["sox", str(clip("sonnet").path), str(reading), "trim", "0",
                    str(READING_SECONDS)], check=True)
    quiet = tmp_path / "quiet.wav"
    subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", str(quiet), "trim", "0", "2"],
                   check=True)
    env = {**os.environ, "CAPTIONER_CONFIG_DIR": str(tmp_path / "cfg"),
           "CAPTIONER_LOG_DIR": str(tmp_path / "log"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "captioner", "-v", "listen", "--source", "both", "--speakers",
         "--mic-device", microphone, "--system-device", pulse.monitor],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while len(pulse.pactl("list", "short", "source-outputs").splitlines()) < 2:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "listen never opened both sources"
            time.sleep(0.1)
        pulse.play(clip("jfk").path)  # the others, through the speakers
        pulse.play(reading, MIC_SINK)  # then you, into the microphone
        pulse.play(quiet, MIC_SINK)  # a pause, so the reading's last words settle
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(90)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        reader.join(5)
    assert proc.returncode == 0, proc.stderr.read()
    lines = [line.strip() for line in out if line.strip()]
    print("\n".join(lines))  # shown with -s or on failure
    assert lines and all(re.match(r"(You|Others): ", line) for line in lines), lines
    speakers = [line.split(":", 1)[0] for line in lines]
    assert speakers == sorted(speakers, key=["Others", "You"].index), lines  # Others, then You
    others = words(" ".join(line for line in lines if line.startswith("Others:")))
    you = words(" ".join(line for line in lines if line.startswith("You:")))
    assert len(others & OTHERS_WORDS) >= 3 and not others & YOU_WORDS, lines
    assert len(you & YOU_WORDS) >= 4 and not you & (OTHERS_WORDS - {"ask"}), lines
