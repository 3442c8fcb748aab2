"""``/ping`` mirrors vLLM's ``/health``; a dead backend is reported, never hung on."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request

import pytest
from bridge.config import BridgeConfig
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.container.servers import WAIT, BridgeThread, HealthServer, bound_socket


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=WAIT) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def closed_port() -> int:
    """A loopback port with nothing listening (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def bridge_for(health_url: str, backend_url: str = "ws://127.0.0.1:9/v1/realtime", **kw):
    return BridgeThread(BridgeConfig(backend_url=backend_url, health_url=health_url, **kw))


def test_ping_is_200_when_backend_is_healthy():
    with HealthServer(200) as health, bridge_for(health.url) as bridge:
        assert get(bridge.http + "/ping") == (200, "healthy")


@pytest.mark.parametrize("status", [500, 503])
def test_ping_is_503_when_backend_health_fails(status):
    with HealthServer(status) as health, bridge_for(health.url) as bridge:
        assert get(bridge.http + "/ping") == (503, f"backend health returned HTTP {status}")


def test_ping_is_503_when_backend_hangs():
    silent = bound_socket()  # accepts TCP (backlog) but never answers
    url = f"http://127.0.0.1:{silent.getsockname()[1]}/health"
    try:
        with bridge_for(url, ping_timeout=0.3) as bridge:
            assert get(bridge.http + "/ping") == (503, "backend health check timed out after 0.3 s")
    finally:
        silent.close()


def test_backend_down_gives_503_ping_and_error_event_then_close():
    port = closed_port()
    config = {
        "health_url": f"http://127.0.0.1:{port}/health",
        "backend_url": f"ws://127.0.0.1:{port}/v1/realtime",
    }
    with bridge_for(**config) as bridge:
        status, body = get(bridge.http + "/ping")
        with connect(bridge.url(), open_timeout=WAIT) as ws:
            event = json.loads(ws.recv(timeout=WAIT))
            with pytest.raises(ConnectionClosed):
                ws.recv(timeout=WAIT)

    assert status == 503
    assert body.startswith("backend unreachable")
    assert event["type"] == "error"
    assert event["code"] == "processing_error"
    assert event["error"].startswith("speech backend is unreachable")
    assert (ws.close_code, ws.close_reason) == (1011, "speech backend unavailable")
