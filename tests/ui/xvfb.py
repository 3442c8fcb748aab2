"""A private Xvfb display for real-window tests (fixture ``xvfb``)."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
from collections.abc import Iterator

import pytest


class Xvfb:
    """``extra``: more server options, e.g. ``["+extension", "RECORD"]``."""

    def __init__(self, size: str = "1280x720x24", extra: tuple[str, ...] = ()) -> None:
        self.size = size
        self.extra = extra
        self.display = ""
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 15.0) -> None:
        exe = shutil.which("Xvfb")
        if exe is None:
            raise RuntimeError("Xvfb is not installed (Debian: xvfb)")
        read, write = os.pipe()
        # -displayfd: Xvfb picks a free display and writes its number once it accepts clients.
        # -noreset: an X server resets when its last client leaves and refuses connections
        # meanwhile; a desktop always has clients, a test's display often has none.
        self._proc = subprocess.Popen(
            [exe, "-displayfd", str(write), "-screen", "0", self.size, "-nolisten", "tcp",
             "-noreset", *self.extra],
            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            ready, _, _ = select.select([pipe], [], [], timeout)
            number = pipe.readline().strip() if ready else b""
        if not number:
            self.stop()
            raise RuntimeError("Xvfb did not start")
        self.display = f":{number.decode()}"

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ, DISPLAY=self.display, QT_QPA_PLATFORM="xcb", **extra)
        env.pop("WAYLAND_DISPLAY", None)
        return env

    def press(self, *chords: str) -> None:
        """Press key combinations on this display (xdotool's names: ctrl+shift+r)."""
        subprocess.run(["xdotool", "key", *chords], env=dict(os.environ, DISPLAY=self.display),
                       check=True, timeout=10)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


@pytest.fixture
def xvfb() -> Iterator[Xvfb]:
    server = Xvfb()
    server.start()
    try:
        yield server
    finally:
        server.stop()
