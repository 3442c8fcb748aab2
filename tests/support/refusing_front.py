"""A WebSocket front that refuses the first handshakes, then relays to a real server.

It plays an endpoint that is still starting: ``refusals`` is a list of
``(HTTP status, body)`` answered in order to the first handshakes (e.g. 503, then
424 "model container is loading"); later handshakes are relayed frame by frame to
``backend_url``. Loopback only; runs on its own loop in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from tests.support.ws_thread import ThreadedWebSocketServer


class RefusingFront(ThreadedWebSocketServer):
    def __init__(self, backend_url: str, refusals: list[tuple[int, str]]) -> None:
        super().__init__()
        self.backend_url = backend_url
        self.refusals = list(refusals)
        self.handshakes = 0
        self.refused = 0

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/realtime"

    def process_request(self, ws: ServerConnection, request: Request) -> Response | None:
        self.handshakes += 1
        if self.refusals:
            status, body = self.refusals.pop(0)
            self.refused += 1
            return ws.respond(status, body + "\n")
        return None

    async def handler(self, client: ServerConnection) -> None:
        async with connect(self.backend_url, max_size=None) as backend:
            async def pump(source, sink) -> None:
                with contextlib.suppress(ConnectionClosed):
                    async for message in source:
                        await sink.send(message)
                await sink.close()

            await asyncio.gather(pump(client, backend), pump(backend, client))
