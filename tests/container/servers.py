"""Real servers on 127.0.0.1 for the bridge tests, each on its own thread.

- ``BridgeThread``: the bridge app under a real uvicorn server. The listening
  socket is bound before uvicorn starts, so clients can connect at once (the
  kernel queues them) and no readiness polling is needed.
- ``ScriptedBackend``: a websockets server standing in for vLLM where a test
  must see or steer the backend's side of a connection (close codes, drops,
  a slow handshake, a backend that stops reading). It echoes frames (or, with
  ``echo=False``, only records them); ``bytes`` answers with a binary frame,
  ``close <code> <reason>`` closes, and ``drop`` aborts the TCP connection
  without a close frame.
- ``HealthServer``: an HTTP server answering ``/health`` with a set status.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import uvicorn
from bridge.app import create_app
from bridge.config import BridgeConfig
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

WAIT = 10.0  # seconds: generous bound on every wait, never a sleep


def bound_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


class BridgeThread:
    def __init__(self, config: BridgeConfig) -> None:
        self._sock = bound_socket()
        self.port = self._sock.getsockname()[1]
        self.server = uvicorn.Server(
            uvicorn.Config(
                create_app(config),
                lifespan="off",
                log_level="warning",
                timeout_graceful_shutdown=2,
            )
        )
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def url(self, path: str = "/invocations-bidirectional-stream") -> str:
        return f"ws://127.0.0.1:{self.port}{path}"

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> BridgeThread:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self._thread.join(WAIT)
        self._sock.close()
        assert not self._thread.is_alive(), "uvicorn did not stop"


@dataclass
class BackendConnection:
    """What the backend saw of one connection."""

    received: list[str | bytes] = field(default_factory=list)
    close_code: int | None = None
    close_reason: str = ""
    ended: threading.Event = field(default_factory=threading.Event)


class ScriptedBackend:
    def __init__(self, *, echo: bool = True) -> None:
        self.echo = echo
        self._reading_gate: asyncio.Event | None = None
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._server: Server | None = None
        self.connections: list[BackendConnection] = []
        self.connected = threading.Event()
        self._handshake_gate: asyncio.Event | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/realtime"

    def hold_handshakes(self) -> None:
        """Make new handshakes wait until :meth:`release_handshakes`."""
        self._handshake_gate = asyncio.Event()

    def hold_reading(self) -> None:
        """Make connections read nothing until :meth:`release_reading` (a stalled vLLM)."""
        self._reading_gate = asyncio.Event()

    def release_reading(self) -> None:
        gate = self._reading_gate
        assert gate is not None
        self.loop.call_soon_threadsafe(gate.set)

    def release_handshakes(self) -> None:
        gate = self._handshake_gate
        assert gate is not None
        self.loop.call_soon_threadsafe(gate.set)

    async def _process_request(self, ws: ServerConnection, request: Request) -> Response | None:
        if self._handshake_gate is not None:
            await self._handshake_gate.wait()
        return None

    async def _handle(self, ws: ServerConnection) -> None:
        record = BackendConnection()
        self.connections.append(record)
        self.connected.set()
        try:
            if self._reading_gate is not None:
                await self._reading_gate.wait()
            async for message in ws:
                record.received.append(message)
                if message == "bytes":
                    await ws.send(b"\x00\x01pcm")
                    continue
                if message == "drop":
                    ws.transport.abort()
                    break
                if isinstance(message, str) and message.startswith("close "):
                    _, code, reason = message.split(" ", 2)
                    await ws.close(int(code), reason)
                    break
                if self.echo:
                    await ws.send(message)
        except ConnectionClosed:
            pass
        finally:
            with contextlib.suppress(ConnectionClosed):
                await ws.wait_closed()
            record.close_code = ws.close_code
            record.close_reason = ws.close_reason or ""
            record.ended.set()

    def __enter__(self) -> ScriptedBackend:
        self._thread.start()

        async def start() -> Server:
            return await serve(self._handle, "127.0.0.1", 0, process_request=self._process_request)

        self._server = asyncio.run_coroutine_threadsafe(start(), self.loop).result(WAIT)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        if self._handshake_gate is not None:
            self.release_handshakes()
        if self._reading_gate is not None:
            self.release_reading()
        self._server.close()
        asyncio.run_coroutine_threadsafe(self._server.wait_closed(), self.loop).result(WAIT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(WAIT)
        self.loop.close()


class HealthServer:
    def __init__(self, status: int = 200) -> None:
        self.status = status
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                code = outer.status if self.path == "/health" else 404
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/health"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> HealthServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(WAIT)
