"""`captioner listen --source both --speakers` run as a user runs it, while a test
plays audio into PulseAudio's null sinks (tests/support/pulse.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.support.pulse import PulseSetup

START_TIMEOUT = 60.0  # model load and both devices opening, on a loaded machine
STOP_TIMEOUT = 90.0
Step = Callable[[], None]


def run_listen(pulse: PulseSetup, microphone: str, tmp_path: Path,
               steps: Sequence[Step | Sequence[Step]], settings: dict[str, Any] | None = None,
               extra_args: Sequence[str] = ()) -> list[str]:
    """`captioner listen --source both --speakers ARGS` while ``steps`` play (each a
    callable; a list of them runs at once), with a fresh profile holding ``settings``;
    the lines it printed. Stops it with SIGINT, as Ctrl+C does; fails on a non-zero exit."""
    config = tmp_path / "cfg"
    config.mkdir()
    (config / "settings.json").write_text(json.dumps(settings or {}))
    env = {**os.environ, "CAPTIONER_CONFIG_DIR": str(config),
           "CAPTIONER_LOG_DIR": str(tmp_path / "log"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "captioner", "-v", "listen", "--source", "both", "--speakers",
         "--mic-device", microphone, "--system-device", pulse.monitor, *extra_args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while pulse.recordings_of(proc.pid) < 2:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "listen never opened both sources"
            time.sleep(0.1)
        for step in steps:
            if not callable(step):
                players = [threading.Thread(target=s) for s in step]
                for player in players:
                    player.start()
                for player in players:
                    player.join()
            else:
                step()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        reader.join(5)
    assert proc.returncode == 0, proc.stderr.read()
    lines = [line.strip() for line in out if line.strip()]
    print("\n".join(lines))  # shown with -s or on failure
    return lines


def sox(*args: str | Path) -> None:
    """Run sox with ``args`` (paths as they are); fails the test when it fails."""
    subprocess.run(["sox", *map(str, args)], check=True)


def quiet(folder: Path) -> Path:
    """Two seconds of silence: a pause after speech, so its last words settle."""
    path = folder / "quiet.wav"
    sox("-n", "-r", "16000", "-c", "1", path, "trim", "0", "2")
    return path
