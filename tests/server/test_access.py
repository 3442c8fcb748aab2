"""Local servers: cross-site origins, the token, frame/queue/connection caps, loopback only.

Everything over real sockets against the real RealtimeServer.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from websockets.exceptions import ConnectionClosedError, InvalidStatus
from websockets.sync.client import connect

from captioner.captioning import EmbeddedEngine
from captioner.engine.access import BindError, is_loopback_host, origin_allowed
from captioner.engine.server import RealtimeServer
from captioner.logs import REDACTOR
from captioner.realtime.server_protocol import (
    AUDIO_BUFFER_FULL,
    BYTES_PER_SECOND,
    CLOSE_POLICY,
    CLOSE_TOO_BIG,
    MESSAGE_TOO_LARGE,
    MIB,
)
from captioner.settings import Settings
from tests.support.transcribers import RecordingFactory, ThreadedServer, tone_words_pcm

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def append_frame(pcm: bytes) -> str:
    return json.dumps({"type": "input_audio_buffer.append",
                       "audio": base64.b64encode(pcm).decode()})


def refused_status(url: str, **kwargs) -> int:
    with pytest.raises(InvalidStatus) as info:
        connect(url, open_timeout=10, **kwargs).close()
    return info.value.response.status_code


def created(url: str, **kwargs) -> dict:
    with connect(url, open_timeout=10, **kwargs) as ws:
        return json.loads(ws.recv(10))


@pytest.mark.parametrize("origin", ["https://evil.example", "http://evil.example:8000",
                                    "null", "http://127.0.0.1.evil.example",
                                    "file://localhost"])
def test_cross_site_origins_are_refused(realtime_server, origin) -> None:
    assert refused_status(realtime_server.url, origin=origin) == 403


@pytest.mark.parametrize("origin", [None, "http://localhost:3000", "http://127.0.0.1:8000",
                                    "https://[::1]"])
def test_native_clients_and_pages_of_this_computer_are_served(realtime_server, origin) -> None:
    kwargs = {"origin": origin} if origin else {}
    assert created(realtime_server.url, **kwargs)["type"] == "session.created"


def test_a_token_server_refuses_handshakes_without_its_token() -> None:
    with ThreadedServer(RecordingFactory(), token="s3cret-token-value") as server:
        assert "token=s3cret-token-value" in server.url
        assert "token" not in server.server.address
        assert refused_status(server.server.address) == 401
        assert refused_status(server.server.address + "?token=s3cret-token-valuX") == 401
        assert created(server.url)["type"] == "session.created"
        assert refused_status(server.url, origin="https://evil.example") == 403


def test_a_16_mib_frame_gets_an_error_event_then_the_close(realtime_server) -> None:
    with connect(realtime_server.url, open_timeout=10, max_size=None) as ws:
        ws.recv(10)  # session.created
        ws.send(append_frame(b"\x00" * (12 * MIB)))  # 16 MiB of base64
        event = json.loads(ws.recv(30))
        assert (event["type"], event["code"]) == ("error", MESSAGE_TOO_LARGE)
        assert "limit of 1,048,576 bytes" in event["error"]
        with pytest.raises(ConnectionClosedError) as info:
            ws.recv(30)
        assert info.value.rcvd is not None and info.value.rcvd.code == CLOSE_TOO_BIG


def test_queue_cap_reports_the_error_before_closing(realtime_server) -> None:
    one_second = b"\x01\x00" * (BYTES_PER_SECOND // 2)
    with connect(realtime_server.url, open_timeout=10) as ws:
        ws.recv(10)
        for _ in range(61):
            ws.send(append_frame(one_second))
        event = json.loads(ws.recv(30))
        assert (event["type"], event["code"]) == ("error", AUDIO_BUFFER_FULL)
        with pytest.raises(ConnectionClosedError) as info:
            ws.recv(30)
        assert info.value.rcvd is not None and info.value.rcvd.code == CLOSE_POLICY


def test_connections_are_capped_and_the_slot_comes_back() -> None:
    with ThreadedServer(RecordingFactory(), max_connections=2) as server, \
            connect(server.url, open_timeout=10) as first, \
            connect(server.url, open_timeout=10) as second:
        first.recv(10), second.recv(10)
        assert refused_status(server.url) == 503
        first.close()
        deadline = time.monotonic() + 30
        while True:  # the server frees the slot once its handler has returned
            try:
                assert created(server.url)["type"] == "session.created"
                break
            except InvalidStatus:
                assert time.monotonic() < deadline, "the closed connection's slot never freed"


class SlowTranscriber:
    """Takes 20 ms per call, like an engine slower than the client sends."""

    def __init__(self) -> None:
        self.pushes: list[int] = []
        self.received = 0

    def push(self, pcm: bytes) -> str:
        self.pushes.append(len(pcm))
        self.received += len(pcm)
        threading.Event().wait(0.02)  # the engine's work, not a test waiting
        return ""

    def finish(self) -> str:
        return ""


def test_audio_for_a_busy_transcriber_is_bounded_by_backpressure() -> None:
    made: list[SlowTranscriber] = []

    def factory() -> SlowTranscriber:
        made.append(SlowTranscriber())
        return made[-1]

    cap, piece = 4 * BYTES_PER_SECOND, b"\x01\x00" * (BYTES_PER_SECOND // 4)
    with ThreadedServer(factory, max_pending_bytes=cap) as server, \
            connect(server.url, open_timeout=10) as ws:
        ws.recv(10)
        ws.send(json.dumps({"type": "session.update", "model": "m"}))
        ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
        for _ in range(400):  # 100 s of audio as fast as the socket takes it
            ws.send(append_frame(piece))
        ws.send(json.dumps({"type": "input_audio_buffer.commit", "final": True}))
        while json.loads(ws.recv(120))["type"] != "transcription.done":
            pass
    (transcriber,) = made
    assert transcriber.received == 400 * len(piece)  # nothing lost
    assert max(transcriber.pushes) <= cap + len(piece)  # never more than the cap waited


def test_only_loopback_addresses_can_be_bound() -> None:
    for host in ("0.0.0.0", "::", "192.168.1.10", "example.com"):
        with pytest.raises(BindError, match="only on this computer"):
            RealtimeServer(RecordingFactory(), host=host)
    assert all(is_loopback_host(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "localhost"))
    assert not origin_allowed("https://localhost.evil.example")


def test_serve_command_refuses_other_addresses() -> None:
    proc = subprocess.run([sys.executable, "-m", "captioner.cli", "serve", "--host", "0.0.0.0"],
                          capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": REPO})
    assert proc.returncode == 2
    assert "only on this computer" in proc.stderr


def test_serve_command_refuses_a_web_page(tmp_path) -> None:
    env = {**os.environ, "PYTHONPATH": REPO, "XDG_CONFIG_HOME": str(tmp_path),
           "CAPTIONER_LOG_DIR": str(tmp_path / "log")}
    proc = subprocess.Popen([sys.executable, "-m", "captioner.cli", "serve", "--port", "0"],
                            stdout=subprocess.PIPE, text=True, cwd=REPO, env=env)
    try:
        line = proc.stdout.readline()  # "Realtime server on ws://… (Ctrl+C to stop)"
        url = line.split()[3]
        assert url.startswith("ws://127.0.0.1:")
        assert refused_status(url, origin="https://evil.example") == 403
        assert created(url)["type"] == "session.created"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0


def test_tone_words_still_flow_through_a_guarded_server(realtime_server, tone_factory) -> None:
    pcm = tone_words_pcm(["alpha", "bravo"])
    with connect(realtime_server.url, open_timeout=10, origin="http://localhost") as ws:
        ws.recv(10)
        ws.send(json.dumps({"type": "session.update", "model": "m"}))
        ws.send(append_frame(pcm))
        ws.send(json.dumps({"type": "input_audio_buffer.commit", "final": True}))
        events = []
        while not events or events[-1]["type"] != "transcription.done":
            events.append(json.loads(ws.recv(30)))
    assert events[-1]["text"] == " alpha bravo"


def test_the_in_app_engine_needs_its_token_which_the_logs_never_show() -> None:
    """The app's embedded engine: an unguessable token in its URL, refused without it."""
    engine = EmbeddedEngine(Settings(), load=lambda _rec: RecordingFactory())
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        url = asyncio.run_coroutine_threadsafe(engine.url(), loop).result(120)
        address, _, token = url.partition("?token=")
        assert len(token) >= 43  # 256 random bits, URL-safe
        assert refused_status(address) == 401
        assert refused_status(url, origin="https://evil.example") == 403
        assert created(url)["type"] == "session.created"
        assert token not in REDACTOR.scrub(f"= connected to {url}")
        second = EmbeddedEngine(Settings(), load=lambda _rec: RecordingFactory())
        other = asyncio.run_coroutine_threadsafe(second.url(), loop).result(120)
        assert other.partition("?token=")[2] != token  # fresh per engine
        asyncio.run_coroutine_threadsafe(second.close(), loop).result(30)
    finally:
        asyncio.run_coroutine_threadsafe(engine.close(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()
