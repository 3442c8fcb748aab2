"""Print how long `captioner` takes to show its overlay, from a checkout and a bundle.

    .venv/bin/python installer/measure_startup.py [--bundle dist/captioner/captioner]

Each command starts under its own Xvfb (the real xcb platform plugin) with a fresh
config folder; the time is from process start until the app's debug state file
(CAPTIONER_DEBUG_STATE_FILE, written right after the overlay is shown) reports the
overlay visible. Figures, not a test: the two runs are compared in the same process.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start_xvfb() -> tuple[subprocess.Popen[bytes], str]:
    read, write = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24",
                             "-nolisten", "tcp"], pass_fds=(write,))
    os.close(write)
    with os.fdopen(read) as f:
        display = f.readline().strip()  # Xvfb writes the number once it accepts clients
    return proc, f":{display}"


def time_to_overlay(command: list[str], timeout: float = 60.0) -> float:
    xvfb, display = start_xvfb()
    folder = Path(tempfile.mkdtemp(prefix="captioner-startup-"))
    state = folder / "state.json"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QT_QPA_PLATFORM")}
    env.update(DISPLAY=display, CAPTIONER_CONFIG_DIR=str(folder / "config"),
               CAPTIONER_LOG_DIR=str(folder / "log"), CAPTIONER_DEBUG_STATE_FILE=str(state))
    start = time.perf_counter()
    app = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - start < timeout:
            if app.poll() is not None:
                raise RuntimeError(f"{command[0]} exited with {app.returncode}")
            if state.exists() and json.loads(state.read_text()).get("overlay_visible"):
                return time.perf_counter() - start
            time.sleep(0.01)  # a measurement loop, not a test: polling is fine here
        raise TimeoutError(f"no overlay within {timeout} s")
    finally:
        app.terminate()
        app.wait(10)
        xvfb.terminate()
        xvfb.wait(10)
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", help="the bundle's captioner executable")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    commands = {"checkout": [sys.executable, "-m", "captioner"]}
    if args.bundle:
        commands["bundle"] = [str(Path(args.bundle).resolve())]
    for name, command in commands.items():
        times = sorted(time_to_overlay(command) for _ in range(args.runs))
        print(f"{name:9} overlay shown after {times[len(times) // 2]:.2f} s "
              f"(median of {args.runs}; min {times[0]:.2f}, max {times[-1]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
