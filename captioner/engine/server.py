"""The local /v1/realtime WebSocket server: ServerConnection rules + a pluggable transcriber.

Used by `captioner serve`, by the app in-process (the embedded engine on a
loopback port, so the same session code runs everywhere), and by the tests.
Transcription runs in worker threads, never on the event loop.
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

from captioner.engine.transcriber import Transcriber, TranscriberFactory
from captioner.realtime.events import encode
from captioner.realtime.server_protocol import (
    Action,
    Feed,
    FinishRequest,
    Send,
    ServerConnection,
    StartRequest,
)

log = logging.getLogger(__name__)

REALTIME_PATH = "/v1/realtime"


@dataclass(frozen=True, slots=True)
class _Finish:
    pass


class _Jobs:
    """One connection's transcription work, in order.

    Audio that arrives while the transcriber is busy joins the audio job still
    waiting in the queue, so a slow transcriber catches up in one call.
    """

    def __init__(self) -> None:
        self._queue: asyncio.Queue[StartRequest | bytearray | _Finish] = asyncio.Queue()
        self._open_audio: bytearray | None = None  # queued, not yet taken

    def put(self, item: StartRequest | Feed | _Finish) -> None:
        if isinstance(item, Feed):
            if self._open_audio is not None:
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
        return item


class RealtimeServer:
    def __init__(
        self,
        transcriber_factory: TranscriberFactory,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        models: set[str] | None = None,
        workers: int = 2,
    ) -> None:
        self.factory = transcriber_factory
        self.host = host
        self.port = port
        self.models = models
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="transcribe")
        self._server: Server | None = None
        self.connections = 0

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ws://{host}:{self.port}{REALTIME_PATH}"

    async def start(self) -> RealtimeServer:
        self._server = await serve(
            self._handle,
            self.host,
            self.port,
            process_request=self._check_path,
            max_size=16 * 2**20,
        )
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("= realtime server listening on %s", self.url)
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

    @staticmethod
    def _check_path(ws: WsConnection, request: Request) -> Response | None:
        if request.path.split("?", 1)[0].rstrip("/") != REALTIME_PATH:
            return ws.respond(404, f"no such route; use {REALTIME_PATH}\n")
        return None

    async def _handle(self, ws: WsConnection) -> None:
        self.connections += 1
        conn = ServerConnection(self.models, created=int(time.time()))
        work = _Jobs()
        worker = asyncio.create_task(self._work(ws, conn, work))
        try:
            await self._apply(ws, conn.accept(), work)
            async for frame in ws:
                await self._apply(ws, conn.receive(frame), work)
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
                    text = await loop.run_in_executor(self._executor, transcriber.push,
                                                      bytes(item))
                    actions = conn.transcribed(text)
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
