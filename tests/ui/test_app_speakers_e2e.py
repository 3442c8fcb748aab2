"""End to end: the real app in two-speaker mode (fresh profile, embedded engine) on Xvfb.

Kennedy plays into the system output (the others on a call), then a reading of Sonnet 1
into a microphone source (you). The overlay must show both, named, and the journal must
hold both sides labelled. A screenshot of the screen is kept (``CAPTIONER_SHOT_DIR``
copies it out) for a person to look at.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from captioner.transcript.journal import read_journal
from tests.e2e.test_speakers_pulse import OTHERS_WORDS, YOU_WORDS, words
from tests.support.speech_set import clip
from tests.ui.test_app_e2e import stop_app, wait_state
from tests.ui.xvfb import xvfb  # noqa: F401 - fixture

MIC_SINK = "captioner_voice"


@pytest.mark.slow
def test_the_app_captions_you_and_others_named(xvfb, pulse, tmp_path):  # noqa: F811
    microphone = pulse.microphone(MIC_SINK)
    reading = tmp_path / "reading.wav"
    subprocess.run(["sox", str(clip("sonnet").path), str(reading), "trim", "0", "9"],
                   check=True)
    config, transcripts, logs = tmp_path / "config", tmp_path / "transcripts", tmp_path / "logs"
    config.mkdir()
    (config / "settings.json").write_text(json.dumps(
        {"transcript": {"folder": str(transcripts)},
         "audio": {"source": "both", "speakers": True, "mic_device": microphone,
                   "system_device": pulse.monitor}}))
    state_file = tmp_path / "state.json"
    env = xvfb.env(CAPTIONER_CONFIG_DIR=str(config), CAPTIONER_LOG_DIR=str(logs),
                   CAPTIONER_DEBUG_STATE_FILE=str(state_file), HOME=str(tmp_path / "home"),
                   XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    proc = subprocess.Popen([sys.executable, "-m", "captioner"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    shot = tmp_path / "speakers.png"
    try:
        wait_state(state_file, lambda s: s["status"]["state"] == "listening", proc, 60,
                   "the app to listen")
        pulse.play(clip("jfk").path)
        player = subprocess.Popen(["paplay", "-d", MIC_SINK, str(reading)], env=pulse.daemon.env())
        # the moment both are on screen: the others' last row above your first words
        wait_state(state_file, lambda s: "You:" in s["visible"]
                   and "country" in s["visible"].lower(), proc, 40, "both sides on screen")
        subprocess.run(["import", "-display", xvfb.display, "-window", "root", str(shot)],
                       check=True, timeout=30)
        assert player.wait(60) == 0
        state = wait_state(state_file, lambda s: any(
            line.startswith("You:") for line in s["lines"]), proc, 40, "your words finalized")
        if os.environ.get("CAPTIONER_SHOT_DIR"):
            shutil.copy(shot, Path(os.environ["CAPTIONER_SHOT_DIR"]) / shot.name)
        assert state["status"]["state"] == "listening"
        journal = Path(state["journal"])
    finally:
        stderr = stop_app(proc)
    assert proc.returncode == 0, stderr[-2000:]
    lines = read_journal(journal).lines
    speakers = [line.speaker for line in lines]
    # Kennedy plays first, then the reading. A line starts when its first words were
    # committed, ≈ 1.5 s apart here for the others' last line and your first; on a
    # loaded machine they can swap, so only the journal's first and last line are fixed.
    assert set(speakers) == {"You", "Others"} and speakers[0] == "Others" \
        and speakers[-1] == "You", [(x.speaker, x.text) for x in lines]
    others = words(" ".join(line.text for line in lines if line.speaker == "Others"))
    you = words(" ".join(line.text for line in lines if line.speaker == "You"))
    assert len(others & OTHERS_WORDS) >= 3 and not others & YOU_WORDS
    assert len(you & YOU_WORDS) >= 3 and not you & (OTHERS_WORDS - {"ask"})
