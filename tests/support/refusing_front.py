"""A WebSocket front that refuses the first handshakes, then relays to a real server.

It plays an endpoint that is still starting: ``refusals`` is a list of
``(HTTP status, body)`` answered in order to the first handshakes (e.g. 503, then
424 "model container is loading"); the next ``closes`` handshakes are accepted, the
session created, and the connection closed at once (1013 "try again later", as an
overloaded server does); later handshakes are relayed frame by frame to ``backend_url``. With
``end_request_after`` set, the first relayed connection ends its request by itself
once that many seconds of audio went through: the client gets a ``transcription.done``
it did not ask for (as vLLM sends when its generation stops) and nothing more is
relayed; with ``wedge_after`` instead, nothing more is relayed and nothing said (a
server that hangs). Loopback only; runs on its own loop in a thread.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from tests.support.ws_thread import ThreadedWebSocketServer


class RefusingFront(ThreadedWebSocketServer):
    def __init__(self, backend_url: str, refusals: list[tuple[int, str]],
                 closes: int = 0, end_request_after: float | None = None,
                 wedge_after: float | None = None) -> None:
        super().__init__()
        self.backend_url = backend_url
        self.refusals = list(refusals)
        self.closes = closes
        self.end_request_after = end_request_after
        self.wedge_after = wedge_after
        self.ended_requests = 0
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
        if self.closes:  # as vLLM would: the session is created, then the server gives up
            self.closes -= 1
            await client.send(json.dumps({"type": "session.created", "id": "front",
                                          "created": 0}))
            with contextlib.suppress(ConnectionClosed):
                await client.recv()  # the session.update: the client is reading by now
                await asyncio.sleep(0.05)
            await client.close(1013, "try again later")
            return
        ends_after, self.end_request_after = self.end_request_after, None
        wedge, self.wedge_after = self.wedge_after, None
        wedged = wedge is not None
        ends_after = wedge if wedged else ends_after
        ended = asyncio.Event()
        audio = 0

        async def end_request(message: str | bytes) -> bool:
            """True once this connection's request was ended (nothing more relayed)."""
            nonlocal audio
            if ends_after is None or ended.is_set():
                return ended.is_set()
            event = json.loads(message)
            if event.get("type") == "input_audio_buffer.append":
                audio += len(base64.b64decode(event["audio"]))
            if audio / 32000 < ends_after:
                return False
            ended.set()
            self.ended_requests += 1
            if not wedged:
                await client.send(json.dumps({"type": "transcription.done", "text": ""}))
            return True

        async with connect(self.backend_url, max_size=None) as backend:
            async def pump(source, sink, upstream: bool) -> None:
                with contextlib.suppress(ConnectionClosed):
                    async for message in source:
                        if upstream and await end_request(message):
                            continue
                        if not ended.is_set():
                            await sink.send(message)
                await sink.close()

            await asyncio.gather(pump(client, backend, True), pump(backend, client, False))
