"""A WebSocket front that refuses the first handshakes, then relays to a real server.

It plays an endpoint that is still starting: ``refusals`` is a list of
``(HTTP status, body)`` answered in order to the first handshakes (e.g. 503, then
424 "model container is loading"); later handshakes are relayed frame by frame to
``backend_url``. Loopback only; runs on its own loop in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response


class RefusingFront:
    def __init__(self, backend_url: str, refusals: list[tuple[int, str]]) -> None:
        self.backend_url = backend_url
        self.refusals = list(refusals)
        self.handshakes = 0
        self.refused = 0
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._server = None
        self.url = ""

    def _check(self, ws: ServerConnection, request: Request) -> Response | None:
        self.handshakes += 1
        if self.refusals:
            status, body = self.refusals.pop(0)
            self.refused += 1
            return ws.respond(status, body + "\n")
        return None

    async def _relay(self, client: ServerConnection) -> None:
        async with connect(self.backend_url, max_size=None) as backend:
            async def pump(source, sink) -> None:
                with contextlib.suppress(ConnectionClosed):
                    async for message in source:
                        await sink.send(message)
                await sink.close()

            await asyncio.gather(pump(client, backend), pump(backend, client))

    def __enter__(self) -> RefusingFront:
        self._thread.start()

        async def start():
            return await serve(self._relay, "127.0.0.1", 0, process_request=self._check,
                               max_size=None)

        self._server = asyncio.run_coroutine_threadsafe(start(), self.loop).result(10)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"ws://127.0.0.1:{port}/v1/realtime"
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop():
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()

