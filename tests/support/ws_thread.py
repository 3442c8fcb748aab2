"""A websockets server on its own event loop in a thread, usable from any test style."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from websockets.asyncio.server import Server, serve


class ThreadedWebSocketServer:
    """Subclasses give ``handler`` (and optionally ``process_request``); ``with`` starts
    the server on loopback and sets ``port``; leaving the block stops it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._server: Server | None = None
        self.port = 0

    async def handler(self, ws: Any) -> None:
        raise NotImplementedError

    process_request: Any = None

    def __enter__(self) -> ThreadedWebSocketServer:
        self._thread.start()

        async def start() -> Server:
            return await serve(self.handler, "127.0.0.1", 0, max_size=None,
                               process_request=self.process_request)

        self._server = asyncio.run_coroutine_threadsafe(start(), self.loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()
