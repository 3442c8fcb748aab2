"""The local /v1/realtime WebSocket server: ServerConnection rules + a pluggable transcriber.

Used by `captioner serve`, by the app in-process (the embedded engine on a
loopback port, so the same session code runs everywhere), and by the tests.
Transcription runs in worker threads, never on the event loop. After each push
the transcriber's unconfirmed text, when it has one, goes out as live text.

Guards (see :mod:`captioner.engine.access`): it binds loopback only, refuses
handshakes from web pages of other sites (HTTP 403), requires the URL's token when it
has one (401), and takes at most ``max_connections`` at once (503). Per connection,
the sans-I/O rules cap frame size and audio queued before a commit; audio waiting for
a busy transcriber is capped by backpressure (the socket is not read meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from websockets.asyncio.server import Server, serve
from websockets.asyncio.server import ServerConnection as WsConnection
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from captioner.engine.access import TOKEN_PARAM, check_bind, origin_allowed, token_ok
from captioner.engine.transcriber import Transcriber, TranscriberFactory, live_text
from captioner.realtime.events import encode
from captioner.realtime.server_protocol import (
    BYTES_PER_SECOND,
    DEFAULT_LIMITS,
    MIB,
    Action,
    Close,
    Feed,
    FinishRequest,
    Limits,
    Send,
    ServerConnection,
    StartRequest,
)

log = logging.getLogger(__name__)

REALTIME_PATH = "/v1/realtime"
MAX_CONNECTIONS = 4
# Audio waiting for a busy transcriber before the server stops reading the socket.
MAX_PENDING_BYTES = 30 * BYTES_PER_SECOND
# Audio one push may take while catching up: larger joins cost fewer calls, but a push
# sends nothing until it returns, and a client waiting for a busy engine's last words
# (Stop) tells a working engine from a stuck one by its text coming.
MAX_JOB_BYTES = 2 * BYTES_PER_SECOND
# The WebSocket layer's own cap, above Limits.max_message_bytes: frames between the two
# get an ``error`` event before the close; beyond this the library closes (1009) unread.
WIRE_MAX_BYTES = 24 * MIB
CLOSE_TRY_AGAIN = 1013  # WebSocket close code "try again later"


@dataclass(frozen=True, slots=True)
class _Finish:
    pass


class _Jobs:
    """One connection's transcription work, in order.

    Audio that arrives while the transcriber is busy joins the audio job still
    waiting in the queue, up to ``MAX_JOB_BYTES``, so a slow transcriber catches up in
    few calls and its text still comes every few seconds.
    """

    def __init__(self, max_pending_bytes: int = MAX_PENDING_BYTES) -> None:
        self._queue: asyncio.Queue[StartRequest | bytearray | _Finish] = asyncio.Queue()
        self._open_audio: bytearray | None = None  # queued, not yet taken
        self._max_pending = max_pending_bytes
        self.pending_bytes = 0  # audio queued, not yet taken by the worker
        self._room = asyncio.Event()
        self._room.set()

    def put(self, item: StartRequest | Feed | _Finish) -> None:
        if isinstance(item, Feed):
            self._grow(len(item.pcm))
            if (self._open_audio is not None
                    and len(self._open_audio) + len(item.pcm) <= MAX_JOB_BYTES):
                self._open_audio += item.pcm
                return
            self._open_audio = bytearray(item.pcm)
            self._queue.put_nowait(self._open_audio)
            return
        self._open_audio = None
        self._queue.put_nowait(item)

    async def get(self) -> StartRequest | bytearray | _Finish:
        item = await self._queue.get()
        if item is self._open_audio:
            self._open_audio = None
        if isinstance(item, bytearray):
            self._grow(-len(item))
        return item

    async def room(self) -> None:
        """Returns once the pending audio is back under the cap (backpressure)."""
        await self._room.wait()

    def _grow(self, n: int) -> None:
        self.pending_bytes += n
        if self.pending_bytes > self._max_pending:
            self._room.clear()
        else:
            self._room.set()


def _push(transcriber: Transcriber, pcm: bytes) -> tuple[str, str | None]:
    """Committed text and the live text after it, read in the worker thread together."""
    return transcriber.push(pcm), live_text(transcriber)


class RealtimeServer:
    def __init__(
        self,
        transcriber_factory: TranscriberFactory,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        models: set[str] | None = None,
        workers: int = 2,
        token: str | None = None,
        limits: Limits = DEFAULT_LIMITS,
        max_connections: int = MAX_CONNECTIONS,
        max_pending_bytes: int = MAX_PENDING_BYTES,
    ) -> None:
        """``token``: when set, a handshake must carry ``?token=`` with it (see :attr:`url`).
        BindError if ``host`` is not a loopback address."""
        check_bind(host)
        self.factory = transcriber_factory
        self.host = host
        self.port = port
        self.models = models
        self.token = token
        self.limits = limits
        self.max_connections = max_connections
        self.max_pending_bytes = max_pending_bytes
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="transcribe")
        self._server: Server | None = None
        self._active = 0  # connections whose handler runs
        self.connections = 0  # served so far

    @property
    def address(self) -> str:
        """The URL without its token: safe to show and log."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ws://{host}:{self.port}{REALTIME_PATH}"

    @property
    def url(self) -> str:
        """The URL a client connects to (carries the token when there is one)."""
        if self.token is None:
            return self.address
        return f"{self.address}?{TOKEN_PARAM}={self.token}"

    async def start(self) -> RealtimeServer:
        self._server = await serve(
            self._handle,
            self.host,
            self.port,
            process_request=self._check_request,
            max_size=WIRE_MAX_BYTES,
        )
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("= realtime server listening on %s", self.address)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def __aenter__(self) -> RealtimeServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def serve_forever(self) -> None:
        assert self._server is not None, "start() first"
        await self._server.serve_forever()

    def _check_request(self, ws: WsConnection, request: Request) -> Response | None:
        """The handshake's gate: route, origin, token, connection count (in that order)."""
        if request.path.split("?", 1)[0].rstrip("/") != REALTIME_PATH:
            return ws.respond(404, f"no such route; use {REALTIME_PATH}\n")
        origin = request.headers.get("Origin")
        if not origin_allowed(origin):
            log.warning("! refused a handshake from the web page origin %r", origin)
            return ws.respond(403, "cross-site WebSocket connections are refused\n")
        if not token_ok(request.path, self.token):
            log.warning("! refused a handshake without the server's token")
            return ws.respond(401, "this server needs the token of its URL\n")
        if self._active >= self.max_connections:
            log.warning("! refused a connection: %d already open", self._active)
            return ws.respond(503, f"at most {self.max_connections} connections at once\n")
        return None

    async def _handle(self, ws: WsConnection) -> None:
        if self._active >= self.max_connections:  # handshakes that raced past the gate
            await ws.close(CLOSE_TRY_AGAIN, "too many connections")
            return
        self._active += 1
        self.connections += 1
        try:
            await self._serve_connection(ws)
        finally:
            self._active -= 1

    async def _serve_connection(self, ws: WsConnection) -> None:
        conn = ServerConnection(self.models, created=int(time.time()), limits=self.limits)
        work = _Jobs(self.max_pending_bytes)
        worker = asyncio.create_task(self._work(ws, conn, work))
        try:
            await self._apply(ws, conn.accept(), work)
            async for frame in ws:
                await self._apply(ws, conn.receive(frame), work)
                await work.room()
        except ConnectionClosed:
            pass
        finally:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker

    async def _apply(self, ws: WsConnection, actions: list[Action], work: _Jobs) -> None:
        for action in actions:
            if isinstance(action, Send):
                await ws.send(encode(action.event))
            elif isinstance(action, StartRequest | Feed):
                work.put(action)
            elif isinstance(action, FinishRequest):
                work.put(_Finish())
            elif isinstance(action, Close):
                await ws.close(action.code, action.reason)

    async def _work(self, ws: WsConnection, conn: ServerConnection, work: _Jobs) -> None:
        """Runs one connection's transcription in order, off the loop."""
        loop = asyncio.get_running_loop()
        transcriber: Transcriber | None = None
        while True:
            item = await work.get()
            try:
                if isinstance(item, StartRequest):
                    transcriber = await loop.run_in_executor(self._executor, self.factory)
                    continue
                if transcriber is None:
                    continue  # request failed earlier; skip its remaining work
                if isinstance(item, bytearray):
                    text, live = await loop.run_in_executor(self._executor, _push,
                                                            transcriber, bytes(item))
                    actions = conn.transcribed(text, live)
                else:
                    text = await loop.run_in_executor(self._executor, transcriber.finish)
                    transcriber = None
                    actions = conn.finished(text)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a transcriber fault must not kill the connection
                log.exception("! transcriber failed")
                transcriber = None
                actions = conn.failed(f"transcription failed: {exc}")
            try:
                await self._apply(ws, actions, work)
            except ConnectionClosed:
                return
