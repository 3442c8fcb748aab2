"""A private PulseAudio daemon with null sinks, for real audio tests without a sound card.

The daemon runs in a temporary folder with its own socket (no clash with a
desktop session or with another test run) and works as root (it only warns).
PortAudio reaches it through ALSA's ``pulse`` plugin (Debian package
``libasound2-plugins``), with ``PULSE_SERVER`` pointing at the socket; PortAudio
is re-scanned after the daemon starts, because it lists devices only once.

Fixtures: ``pulse`` (session): a :class:`PulseSetup` whose default sink is the
null sink ``captioner_test``. :class:`PulseDaemon` can also be started on its own,
e.g. to kill it in the middle of a capture.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from captioner.audio.devices import refresh_portaudio

SINK = "captioner_test"
_READY_LINE = "Daemon startup complete"


class PulseDaemon:
    """``pulseaudio`` in the foreground with a private socket; start() waits until it serves."""

    def __init__(self, folder: Path | None = None):
        self.folder = Path(folder or tempfile.mkdtemp(prefix="captioner-pulse-"))
        self.socket = self.folder / "native"
        self.server = f"unix:{self.socket}"
        self.log: list[str] = []
        self._ready = threading.Event()
        self._proc: subprocess.Popen[str] | None = None

    def start(self, timeout: float = 15.0) -> None:
        exe = shutil.which("pulseaudio")
        if exe is None:
            raise RuntimeError("pulseaudio is not installed (Debian: pulseaudio pulseaudio-utils)")
        runtime = self.folder / "runtime"
        runtime.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, HOME=str(self.folder), XDG_RUNTIME_DIR=str(runtime),
                   PULSE_RUNTIME_PATH=str(runtime), PULSE_STATE_PATH=str(self.folder / "state"),
                   LC_ALL="C")
        env.pop("PULSE_SERVER", None)
        self._proc = subprocess.Popen(
            [exe, "-n", "--daemonize=no", "--system=no", "--use-pid-file=no",
             "--exit-idle-time=-1", "--disable-shm=yes", "--log-target=stderr",
             "--log-level=info",
             "-L", f"module-native-protocol-unix auth-anonymous=1 socket={self.socket}"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
        )
        self._reader = threading.Thread(target=self._read_log, daemon=True)
        self._reader.start()
        if not self._ready.wait(timeout) or self._proc.poll() is not None:
            self.stop()
            raise RuntimeError("PulseAudio did not start:\n" + "\n".join(self.log[-20:]))

    def _read_log(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for line in self._proc.stderr:
            self.log.append(line.rstrip())
            if _READY_LINE in line:
                self._ready.set()
        self._ready.set()  # the daemon exited: wake start() so it can report

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def env(self) -> dict[str, str]:
        return dict(os.environ, PULSE_SERVER=self.server, LC_ALL="C")

    def pactl(self, *args: str) -> str:
        done = subprocess.run(["pactl", *args], env=self.env(), capture_output=True, text=True,
                              timeout=15, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"pactl {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout.strip()

    def command(self, line: str) -> str:
        """One command of Pulse's own command language (which pactl lacks some of, such
        as ending a stream), through its CLI socket, loaded on first use."""
        cli = self.folder / "cli"
        if not cli.exists():
            self.pactl("load-module", "module-cli-protocol-unix", f"socket={cli}")
        with socket.socket(socket.AF_UNIX) as conn:
            conn.settimeout(10)
            conn.connect(str(cli))
            conn.sendall(line.encode() + b"\n")
            conn.shutdown(socket.SHUT_WR)  # Pulse answers, then closes at the end of input
            reply = b""
            while data := conn.recv(4096):
                reply += data
        return reply.decode(errors="replace")

    def add_null_sink(self, name: str, description: str | None = None) -> str:
        """Load a null sink; returns its monitor source's name."""
        desc = (description or name).replace(" ", "_")
        self.pactl("load-module", "module-null-sink", f"sink_name={name}",
                   f"sink_properties=device.description={desc}")
        return f"{name}.monitor"

    def play(self, wav: Path, sink: str = SINK, timeout: float = 60.0) -> None:
        """Play ``wav`` into ``sink``; returns when the sink has played it all."""
        subprocess.run(["paplay", "-d", sink, str(wav)], env=self.env(), check=True,
                       timeout=timeout, capture_output=True)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if proc is not None and proc.stderr is not None:
            self._reader.join(5)  # it ends at the dead daemon's EOF
            proc.stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@dataclass
class PulseSetup:
    """What the ``pulse`` fixture yields."""

    daemon: PulseDaemon
    sink: str = SINK
    monitor: str = f"{SINK}.monitor"
    extra_sinks: dict[str, str] = field(default_factory=dict)

    @property
    def server(self) -> str:
        return self.daemon.server

    def play(self, wav: Path, sink: str | None = None) -> None:
        """paplay ``wav`` into ``sink`` (default: the test sink); returns when done."""
        self.daemon.play(wav, sink or self.sink)

    def null_sink(self, name: str) -> str:
        """A further null sink (created once per session); returns its monitor's name."""
        if name not in self.extra_sinks:
            self.extra_sinks[name] = self.daemon.add_null_sink(name)
            refresh_portaudio()
        return self.extra_sinks[name]

    def microphone(self, name: str) -> str:
        """A microphone: an ordinary input source (listed as a mic, not a monitor) that
        hears whatever plays into the null sink ``name`` (created once per session).
        Returns the source's name."""
        source = f"{name}_mic"
        if source not in self.extra_sinks:
            monitor = self.null_sink(name)
            self.pactl("load-module", "module-remap-source", f"master={monitor}",
                       f"source_name={source}",
                       "source_properties=device.description=Test_microphone")
            self.extra_sinks[source] = source
            refresh_portaudio()
        return source

    def pactl(self, *args: str) -> str:
        return self.daemon.pactl(*args)

    def end_streams(self, pid: int, kind: str = "source-output", then: str = "") -> int:
        """End process ``pid``'s capture streams (``kind`` "sink-input": its playback
        streams) as a vanishing device ends them (Pulse would otherwise move them to
        another device), and run the Pulse command ``then`` right after them, in the
        same breath; how many streams it ended."""
        heading = {"source-output": "Source Output #", "sink-input": "Sink Input #"}[kind]
        ends = [f"kill-{kind} {block.split(maxsplit=1)[0]}"
                for block in self.pactl("list", f"{kind}s").split(heading)[1:]
                if f'application.process.id = "{pid}"' in block]
        if ends or then:
            self.daemon.command("\n".join([*ends, then] if then else ends))
        return len(ends)

    def recordings_of(self, pid: int) -> int:
        """How many capture streams process ``pid`` has open. (Counting all source outputs
        would also count the remapped microphones' own streams from their masters.)"""
        return self.pactl("list", "source-outputs").count(f'application.process.id = "{pid}"')


class Headset:
    """A device that can be unplugged and plugged in again: a null sink (its monitor is
    what the captions hear), always removed at the end."""

    def __init__(self, pulse: PulseSetup, name: str, description: str):
        self.pulse, self.name, self.description = pulse, name, description
        self.monitor = f"{name}.monitor"
        self._module: str | None = None

    @property
    def plugged(self) -> bool:
        return self._module is not None

    def plug_in(self) -> None:
        self._module = self.pulse.pactl(
            "load-module", "module-null-sink", f"sink_name={self.name}",
            f"sink_properties=device.description={self.description}")

    def unplug(self, pid: int, kind: str = "source-output") -> None:
        """Gone as on a desktop without Pulse's rescue: ``pid``'s streams end with it
        (at once, as the device goes: no moment where they are gone and it is listed)."""
        module, self._module = self._module, None
        self.pulse.end_streams(pid, kind, then=f"unload-module {module}" if module else "")

    def remove(self) -> None:
        module, self._module = self._module, None
        if module is not None:
            self.pulse.pactl("unload-module", module)

    def __enter__(self) -> Headset:
        self.plug_in()
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


@pytest.fixture(scope="session")
def pulse() -> Iterator[PulseSetup]:
    """A running private PulseAudio with the default null sink ``captioner_test``.

    ``PULSE_SERVER`` points this process (and its children) at it while the
    session lasts, and PortAudio is re-scanned so it lists the ``pulse`` device.
    """
    daemon = PulseDaemon()
    daemon.start()
    saved = {k: os.environ.get(k) for k in ("PULSE_SERVER", "PULSE_SOURCE", "PULSE_SINK")}
    try:
        daemon.add_null_sink(SINK, "Captioner test sink")
        daemon.pactl("set-default-sink", SINK)
        os.environ["PULSE_SERVER"] = daemon.server
        os.environ.pop("PULSE_SOURCE", None)
        os.environ.pop("PULSE_SINK", None)
        refresh_portaudio()
        yield PulseSetup(daemon)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        daemon.stop()
        refresh_portaudio()
