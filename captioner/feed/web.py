"""The live caption page on a loopback port: ``/`` serves the page, ``/ws`` streams it.

For streamers (an OBS browser source) and anyone who wants captions in another
window. It listens on this computer only and both routes need the per-install token
of the URL, so neither a web page of another site nor a port scan reads the
captions; handshakes carrying a foreign ``Origin`` are refused as the engine's are.
Slow pages never hold captions up: messages go out with ``broadcast``, which skips
a connection whose buffer is full instead of waiting for it.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from websockets.asyncio.server import Server, ServerConnection, broadcast, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from captioner.engine.access import TOKEN_PARAM, check_bind, origin_allowed, token_ok
from captioner.feed.errors import FeedError
from captioner.feed.state import FeedState
from captioner.realtime.captions import CaptionUpdate

log = logging.getLogger(__name__)

PAGE_PATH = "/"
SOCKET_PATH = "/ws"
MAX_PAGES = 8  # browser sources connected at once


class FeedServer:
    def __init__(self, page: str, token: str, host: str = "127.0.0.1", port: int = 0) -> None:
        check_bind(host)
        self.page, self.token, self.host, self.port = page, token, host, port
        self.state = FeedState()
        self._pages: set[ServerConnection] = set()
        self._server: Server | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{PAGE_PATH}?{TOKEN_PARAM}={self.token}"

    async def start(self) -> FeedServer:
        try:
            self._server = await serve(self._handle, self.host, self.port,
                                       process_request=self._route, max_size=4096)
        except OSError as exc:
            raise FeedError(f"The caption page could not listen on port {self.port}: "
                            f"{exc.strerror or exc}. Choose another port in Settings.") from exc
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("= caption page at http://%s:%d%s", self.host, self.port, PAGE_PATH)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    @property
    def connected(self) -> int:
        """Pages connected right now."""
        return len(self._pages)

    def publish(self, update: CaptionUpdate) -> None:
        broadcast(self._pages, self.state.apply(update))

    def _route(self, ws: ServerConnection, request: Request) -> Response | None:
        path = urlsplit(request.path).path
        if path not in (PAGE_PATH, SOCKET_PATH):
            return ws.respond(404, "no such page\n")
        if not token_ok(request.path, self.token):
            return ws.respond(401, "this page needs the token of its URL (Settings → Feed)\n")
        if not origin_allowed(request.headers.get("Origin")):
            log.warning("! refused the caption feed to a page of another site")
            return ws.respond(403, "cross-site requests are refused\n")
        if path == PAGE_PATH:
            body = self.page.encode()
            headers = Headers([("Content-Type", "text/html; charset=utf-8"),
                               ("Content-Length", str(len(body))),
                               ("Cache-Control", "no-store"),
                               ("Content-Security-Policy",
                                "default-src 'none'; style-src 'unsafe-inline'; "
                                "script-src 'unsafe-inline'; connect-src 'self'")])
            return Response(200, "OK", headers, body)
        if len(self._pages) >= MAX_PAGES:
            return ws.respond(503, f"at most {MAX_PAGES} caption pages at once\n")
        return None

    async def _handle(self, ws: ServerConnection) -> None:
        self._pages.add(ws)
        try:
            await ws.send(self.state.snapshot())
            await ws.wait_closed()
        finally:
            self._pages.discard(ws)


__all__ = ["FeedServer"]
