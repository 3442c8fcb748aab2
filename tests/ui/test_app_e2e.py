"""End to end: the real app (embedded engine, system audio) on Xvfb, with speech played
into a PulseAudio null sink; the words must reach the overlay and the journal."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from captioner.transcript.journal import journal_files, read_journal
from tests.ui.xvfb import xvfb  # noqa: F401 - fixture

SENTENCE = "Captions help people follow every word of the meeting."
CONTENT = {"captions", "help", "people", "follow", "every", "word", "meeting"}


def read_state(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def wait_state(path: Path, predicate, proc, timeout: float, what: str) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = read_state(path)
        if state and predicate(state):
            return state
        if proc.poll() is not None:
            raise AssertionError(f"the app exited ({proc.returncode}) waiting for {what}")
        time.sleep(0.1)  # polling a file another process writes
    raise AssertionError(f"timed out waiting for {what}; last state: {read_state(path)}")


def stop_app(proc: subprocess.Popen, timeout: float = 30) -> str:
    """Quit the app as the desktop would (SIGTERM); its stderr."""
    proc.send_signal(signal.SIGTERM)
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
    return stderr


@pytest.mark.slow
def test_spoken_words_reach_the_overlay_and_the_journal(xvfb, pulse, speech,  # noqa: F811
                                                         tmp_path):
    config, transcripts, logs = tmp_path / "config", tmp_path / "transcripts", tmp_path / "logs"
    config.mkdir()
    (config / "settings.json").write_text(json.dumps(
        {"transcript": {"folder": str(transcripts)}, "audio": {"source": "system"}}))
    state_file = tmp_path / "state.json"
    wav = speech(SENTENCE)
    env = xvfb.env(CAPTIONER_CONFIG_DIR=str(config), CAPTIONER_LOG_DIR=str(logs),
                   CAPTIONER_DEBUG_STATE_FILE=str(state_file))
    proc = subprocess.Popen([sys.executable, "-m", "captioner"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        state = wait_state(state_file, lambda s: s["status"]["state"] == "listening", proc, 40,
                           "the app to listen")
        assert state["overlay_visible"]
        pulse.play(wav)
        def heard(text: str) -> set[str]:  # tiny.en on espeak-ng mishears a word at times
            return CONTENT & set(text.lower().replace(".", " ").replace(",", " ").split())

        state = wait_state(state_file, lambda s: len(heard(" ".join(s["lines"]))) >= 5,
                           proc, 25, "the words to be finalized")
        words = heard(" ".join(state["lines"]))
        assert state["status"]["state"] == "listening"
        journal = Path(state["journal"])
        assert journal.parent == transcripts
        on_disk = " ".join(line.text for line in read_journal(journal).lines).lower()
        assert all(w in on_disk for w in words)
    finally:
        stderr = stop_app(proc)
    assert proc.returncode == 0, stderr[-2000:]
    (journal_path,) = journal_files(transcripts)
    assert read_journal(journal_path).finished, "a clean quit writes the end marker"
