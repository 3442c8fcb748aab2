"""Proxies from the environment: never for this computer, honoured (and failing readably,
without the URL's token) for remote hosts."""

import asyncio
import contextlib
import importlib.util
import socket
from collections.abc import AsyncIterator, Callable

import pytest
from websockets.asyncio.server import ServerConnection, serve

from captioner.transport.base import ConnectError, Connector
from captioner.transport.websocket import websocket_connector
from captioner.tts.connect import tts_connector

TOKEN = "s3cr3t-engine-token-0123456789"
TIMEOUT = 20
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "socks_proxy", "ws_proxy",
                   "wss_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def _no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the proxy variables a test sets count, not the machine's."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


class RecordingProxy:
    """A real HTTP CONNECT proxy on 127.0.0.1 that records each CONNECT target; it tunnels
    to 127.0.0.1 at the requested port (so made-up host names work) or answers 403."""

    def __init__(self, *, refuse: bool = False) -> None:
        self.refuse = refuse
        self.targets: list[str] = []
        self.url = ""

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator["RecordingProxy"]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        async with server:
            yield self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        target = head.split(b"\r\n")[0].split()[1].decode()
        self.targets.append(target)
        if self.refuse:
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1",
                                                             int(target.rpartition(":")[2]))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


async def _echo(ws: ServerConnection) -> None:
    async for message in ws:
        await ws.send(message)


async def _round_trip(connector: Connector) -> str | bytes | None:
    transport = await connector()
    try:
        await transport.send_text("hello")
        return await transport.recv()
    finally:
        await transport.close()


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT))


def _closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("make_connector", [websocket_connector, tts_connector],
                         ids=["captions", "voice"])
@pytest.mark.parametrize("host, no_proxy", [("127.0.0.1", "localhost"), ("localhost", None)])
def test_loopback_never_goes_through_the_proxy(monkeypatch: pytest.MonkeyPatch, host: str,
                                               no_proxy: str | None,
                                               make_connector: Callable[[str], Connector]):
    """The embedded engine's case: a corporate proxy in the environment, with
    no_proxy=localhost (which Python does not apply to 127.0.0.1) or none."""
    async def main():
        async with RecordingProxy().running() as proxy, \
                serve(_echo, "127.0.0.1", 0) as server:
            for name in ("http_proxy", "https_proxy"):
                monkeypatch.setenv(name, proxy.url)
            if no_proxy:
                monkeypatch.setenv("no_proxy", no_proxy)
            port = server.sockets[0].getsockname()[1]
            url = f"ws://{host}:{port}/v1/realtime?token={TOKEN}"
            return await _round_trip(make_connector(url)), proxy.targets

    assert _run(main()) == ("hello", [])


def test_remote_host_still_uses_the_proxy(monkeypatch: pytest.MonkeyPatch):
    """Behind a corporate proxy it is the only way to a remote endpoint."""
    async def main():
        async with RecordingProxy().running() as proxy, \
                serve(_echo, "127.0.0.1", 0) as server:
            monkeypatch.setenv("https_proxy", proxy.url)
            port = server.sockets[0].getsockname()[1]
            url = f"ws://stt.example.test:{port}/v1/realtime"
            return await _round_trip(websocket_connector(url)), proxy.targets, port

    echoed, targets, port = _run(main())
    assert (echoed, targets) == ("hello", [f"stt.example.test:{port}"])


def test_proxy_refusal_is_a_connect_error_without_the_token(monkeypatch: pytest.MonkeyPatch):
    async def main():
        async with RecordingProxy(refuse=True).running() as proxy:
            monkeypatch.setenv("https_proxy", proxy.url)
            url = f"ws://stt.example.test:8000/v1/realtime?token={TOKEN}"
            with pytest.raises(ConnectError) as caught:
                await websocket_connector(url)()
            return caught.value, proxy.targets

    error, targets = _run(main())
    assert targets == ["stt.example.test:8000"]
    assert error.retryable
    assert "proxy" in str(error) and "403" in str(error) and TOKEN not in str(error)


@pytest.mark.parametrize("name, proxy", [
    ("socks_proxy", f"socks5://127.0.0.1:{_closed_port()}"),
    ("https_proxy", "ftp://user:proxy-password@proxy.example.test:21"),
])
def test_unusable_proxy_setting_is_a_connect_error(
        monkeypatch: pytest.MonkeyPatch, name: str, proxy: str):
    """A SOCKS proxy without python-socks or an unsupported proxy scheme: a typed, readable
    error instead of an ImportError/InvalidProxy escaping as "stopped unexpectedly"."""
    monkeypatch.setenv(name, proxy)
    url = f"ws://stt.example.test:8000/v1/realtime?token={TOKEN}"
    with pytest.raises(ConnectError) as caught:
        _run(websocket_connector(url)())
    message = str(caught.value)
    assert "proxy" in message and TOKEN not in message and "proxy-password" not in message
    if name == "socks_proxy" and importlib.util.find_spec("python_socks") is None:
        assert "python-socks" in message and not caught.value.retryable
