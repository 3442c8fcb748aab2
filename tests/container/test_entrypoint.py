"""container/entrypoint.sh with stand-ins for vllm and the bridge, no GPU needed."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest

from tests.container.servers import WAIT, bound_socket

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = ROOT / "container" / "entrypoint.sh"
STANDINS = Path(__file__).resolve().parent / "standins"
VOXTRAL = "mistralai/Voxtral-Mini-4B-Realtime-2602"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Entrypoint:
    """The entrypoint as a child process; stderr is pumped into lines to wait on."""

    def __init__(self, tmp_path: Path, **env: str) -> None:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir(exist_ok=True)
        vllm = bin_dir / "vllm"
        # The wrapper notes its pid before Python starts (exec keeps it), so a stand-in
        # stopped before it could write its record is still found.
        self.pid_file = tmp_path / "vllm.pid"
        vllm.write_text(
            f'#!/bin/sh\necho $$ > "{self.pid_file}"\n'
            f'exec "{sys.executable}" "{STANDINS / "fake_vllm.py"}" "$@"\n'
        )
        vllm.chmod(0o755)
        self.record = tmp_path / "vllm.json"
        self.report = tmp_path / "bridge.json"
        self.port = free_port()
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SM_VLLM_", "BRIDGE_", "FAKE_", "HEALTH_", "MODEL_DIR"))
        }
        self.env = base | {
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "BACKEND_PORT": str(self.port),
            "BRIDGE_PYTHON": sys.executable,
            "HEALTH_POLL_INTERVAL": "0.1",
            "MODEL_DIR": str(tmp_path / "no-model"),
            "FAKE_VLLM_RECORD": str(self.record),
            "FAKE_BRIDGE_REPORT": str(self.report),
            "BRIDGE_CMD": f'"{sys.executable}" "{STANDINS / "fake_bridge.py"}"',
        }
        self.env.update(env)
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> Entrypoint:
        self.proc = subprocess.Popen(
            ["bash", str(ENTRYPOINT)],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._pumping = threading.Thread(target=self._pump, daemon=True)
        self._pumping.start()
        return self

    def _pump(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        with self.proc.stderr:
            for line in self.proc.stderr:
                self.stderr.append(line)
                self.lines.put(line)

    def wait_for_line(self, text: str) -> str:
        while True:
            try:
                line = self.lines.get(timeout=WAIT)
            except queue.Empty:
                raise AssertionError(f"no {text!r} in the log:\n{self.log}") from None
            if text in line:
                return line

    def wait(self) -> int:
        """Exit status, once the process has ended and all its stderr is read."""
        assert self.proc is not None
        status = self.proc.wait(timeout=WAIT)
        self._pumping.join(WAIT)
        return status

    def run(self) -> int:
        return self.start().wait()

    @property
    def log(self) -> str:
        return "".join(self.stderr)

    @property
    def vllm_pid(self) -> int:
        return int(self.pid_file.read_text())

    @property
    def vllm(self) -> dict:
        return json.loads(self.record.read_text())

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT)


@pytest.fixture
def entrypoint(tmp_path):
    made: list[Entrypoint] = []

    def make(**env: str) -> Entrypoint:
        made.append(Entrypoint(tmp_path, **env))
        return made[-1]

    yield make
    for ep in made:
        ep.stop()


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_sm_vllm_env_maps_to_vllm_serve_flags(entrypoint):
    ep = entrypoint(
        SM_VLLM_MODEL=VOXTRAL,
        SM_VLLM_MAX_MODEL_LEN="45000",
        SM_VLLM_COMPILATION_CONFIG='{"cudagraph_mode":"PIECEWISE"}',
        SM_VLLM_ENFORCE_EAGER="true",
        SM_VLLM_TRUST_REMOTE_CODE="True",
        SM_VLLM_DISABLE_LOG_REQUESTS="false",
        SM_VLLM_TOKENIZER_MODE="mistral",
        FAKE_BRIDGE_EXIT="7",
    )
    status = ep.run()

    assert ep.vllm["argv"] == [
        "serve",
        VOXTRAL,
        "--compilation-config",
        '{"cudagraph_mode":"PIECEWISE"}',
        "--enforce-eager",
        "--max-model-len",
        "45000",
        "--tokenizer-mode",
        "mistral",
        "--trust-remote-code",
        "--port",
        str(ep.port),
        "--host",
        "127.0.0.1",
    ]
    bridge_env = json.loads(ep.report.read_text())
    assert bridge_env["BRIDGE_BACKEND_URL"] == f"ws://127.0.0.1:{ep.port}/v1/realtime"
    assert bridge_env["BRIDGE_HEALTH_URL"] == f"http://127.0.0.1:{ep.port}/health"
    # The bridge exiting ends the container, with its status, and vLLM is stopped.
    assert status == 7
    assert "the bridge exited (status 7)" in ep.log
    assert gone(ep.vllm_pid)


def test_vllm_listens_on_loopback_only_whatever_the_environment_says(entrypoint):
    ep = entrypoint(SM_VLLM_MODEL=VOXTRAL, SM_VLLM_HOST="0.0.0.0", FAKE_BRIDGE_EXIT="7")
    ep.run()
    argv = ep.vllm["argv"]
    assert argv[argv.index("--host") + 1] == "127.0.0.1" and argv.count("--host") == 1
    assert "ignoring SM_VLLM_HOST" in ep.log


def test_no_token_reaches_the_container_log(entrypoint):
    hf, api_key = "hf_" + "Zq8" * 10, "sk-proj-" + "7xK" * 8
    ep = entrypoint(SM_VLLM_MODEL=VOXTRAL, SM_VLLM_API_KEY=api_key, SM_VLLM_HF_TOKEN=hf,
                    HF_TOKEN=hf, SM_VLLM_MAX_MODEL_LEN="45000", FAKE_BRIDGE_EXIT="7")
    ep.run()
    argv = ep.vllm["argv"]
    assert argv[argv.index("--api-key") + 1] == api_key  # vLLM itself gets the values
    assert argv[argv.index("--hf-token") + 1] == hf
    log = ep.log
    assert "--api-key *** --hf-token ***" in log  # our own start line
    assert "non-default args:" in log and "HF token from the environment: ***" in log
    assert "'max_model_len': '45000'" in log  # what is not secret stays readable
    assert hf not in log and api_key not in log


def test_mounted_model_directory_is_the_default_model(entrypoint, tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    ep = entrypoint(MODEL_DIR=str(model_dir), FAKE_BRIDGE_EXIT="1")

    assert ep.run() == 1
    assert ep.vllm["argv"] == ["serve", str(model_dir), "--port", str(ep.port),
                                 "--host", "127.0.0.1"]


def test_sm_vllm_model_wins_over_mounted_model(entrypoint, tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    ep = entrypoint(MODEL_DIR=str(model_dir), SM_VLLM_MODEL=VOXTRAL, FAKE_BRIDGE_EXIT="1")

    ep.run()
    assert ep.vllm["argv"][:2] == ["serve", VOXTRAL]


def test_no_model_at_all_fails_with_a_clear_message(entrypoint, tmp_path):
    (tmp_path / "no-model").mkdir()  # mounted but empty
    ep = entrypoint()

    assert ep.run() == 1
    assert "no model: set SM_VLLM_MODEL or mount model data at" in ep.log
    assert not ep.record.exists()  # vllm never started


def test_health_wait_deadline_exits_nonzero_and_stops_vllm(entrypoint):
    ep = entrypoint(SM_VLLM_MODEL=VOXTRAL, FAKE_VLLM_MODE="hang", HEALTH_WAIT_TIMEOUT="1")

    started = time.monotonic()
    assert ep.run() == 1
    assert time.monotonic() - started >= 1.0  # the whole second, not what was left of it
    assert f"vLLM did not become healthy on port {ep.port} within 1 s" in ep.log
    assert gone(ep.vllm_pid)
    assert not ep.report.exists()  # the bridge never started


def test_vllm_dying_during_startup_exits_nonzero(entrypoint):
    ep = entrypoint(SM_VLLM_MODEL=VOXTRAL, FAKE_VLLM_MODE="die")

    assert ep.run() == 1
    assert "vLLM exited (status 3) before it became healthy" in ep.log
    assert not ep.report.exists()


def test_malformed_settings_are_refused(entrypoint):
    ep = entrypoint(SM_VLLM_MODEL=VOXTRAL, HEALTH_WAIT_TIMEOUT="soon")

    assert ep.run() == 1
    assert "HEALTH_WAIT_TIMEOUT must be whole seconds, got 'soon'" in ep.log


@pytest.fixture
def control():
    """Where the fake bridge reports in (and says "term" when told to stop)."""
    sock = bound_socket()
    sock.settimeout(WAIT)
    yield sock
    sock.close()


@contextlib.contextmanager
def running(entrypoint, control) -> Iterator[tuple[Entrypoint, TextIO]]:
    """A started entrypoint whose (fake) bridge has reported in; yields its control line."""
    ep = entrypoint(SM_VLLM_MODEL=VOXTRAL, FAKE_BRIDGE_CONTROL=str(control.getsockname()[1]))
    ep.start()
    conn, _ = control.accept()
    conn.settimeout(WAIT)
    with conn, conn.makefile() as lines:
        hello = json.loads(lines.readline())
        assert hello["BRIDGE_BACKEND_URL"] == f"ws://127.0.0.1:{ep.port}/v1/realtime"
        yield ep, lines


def test_vllm_death_after_startup_stops_bridge_and_exits_nonzero(entrypoint, control):
    with running(entrypoint, control) as (ep, bridge):
        urllib.request.urlopen(f"http://127.0.0.1:{ep.port}/die", timeout=WAIT).close()

        assert ep.wait() == 5
        assert bridge.readline() == "term\n"
    assert "vLLM exited (status 5); stopping the bridge" in ep.log


def test_sigterm_is_forwarded_to_both_children(entrypoint, control):
    with running(entrypoint, control) as (ep, bridge):
        assert ep.proc is not None
        ep.proc.send_signal(signal.SIGTERM)

        assert ep.wait() == 143
        assert bridge.readline() == "term\n"
    assert gone(ep.vllm_pid)
    assert "received SIGTERM" in ep.log


def test_real_bridge_serves_ping_from_vllm_health(entrypoint):
    bridge_port = free_port()
    ep = entrypoint(
        SM_VLLM_MODEL=VOXTRAL,
        BRIDGE_CMD="",  # the default command: uvicorn bridge.main:app
        BRIDGE_HOST="127.0.0.1",
        BRIDGE_PORT=str(bridge_port),
    )
    ep.start()
    ep.wait_for_line(f"Uvicorn running on http://127.0.0.1:{bridge_port}")

    with urllib.request.urlopen(f"http://127.0.0.1:{bridge_port}/ping", timeout=WAIT) as r:
        assert (r.status, r.read()) == (200, b"healthy")
    urllib.request.urlopen(f"http://127.0.0.1:{ep.port}/die", timeout=WAIT).close()
    assert ep.wait() == 5
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{bridge_port}/ping", timeout=WAIT)
