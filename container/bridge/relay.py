"""Relay one client WebSocket session to the vLLM Realtime server, both ways.

SageMaker gives the container 250 ms to accept, so the client is accepted
first and its frames are buffered while the backend connection opens. Frames
then flow both ways unchanged, except binary client frames: SageMaker turns
payload parts sent without a UTF8 data type into binary frames, and vLLM only
reads text, so they are decoded as UTF-8 here. A close on either side closes
the other with the same code and reason where the protocol allows sending it.

The client's frames wait in a bounded inbox (:data:`INBOX_FRAMES`): when the
backend is slower than the client, the reader stops taking frames from the client,
so backpressure reaches the client over TCP instead of memory growing without end.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from dataclasses import dataclass

from starlette.websockets import WebSocket, WebSocketDisconnect
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

log = logging.getLogger(__name__)

# Close codes an endpoint may put in a close frame (RFC 6455 §7.4, IANA registry).
_SENDABLE = frozenset({1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014})
NO_STATUS = 1005  # peer closed without a code: a normal close
ABNORMAL = 1006  # connection dropped without a close frame
_CLIENT_SEND_ERRORS = (OSError, RuntimeError, WebSocketDisconnect)
# Client frames held while the backend catches up: ~8 s of audio in 4 KB appends.
INBOX_FRAMES = 64

_session_ids = itertools.count(1)


@dataclass(frozen=True, slots=True)
class ClientClosed:
    """Queued after the client's last frame: how it closed."""

    code: int
    reason: str


def sendable_code(code: int | None, fallback: int) -> int:
    """``code`` if it may appear in a close frame, else ``fallback``."""
    if code is not None and (code in _SENDABLE or 3000 <= code <= 4999):
        return code
    return fallback


def clip_reason(reason: str) -> str:
    """Close reasons are limited to 123 UTF-8 bytes."""
    return reason.encode("utf-8")[:123].decode("utf-8", "ignore")


def new_inbox() -> asyncio.Queue[str | ClientClosed]:
    """The bounded queue between the client reader and the backend writer."""
    return asyncio.Queue(maxsize=INBOX_FRAMES)


def error_event(message: str, code: str) -> str:
    """A Realtime ``error`` event, so clients report bridge faults like server ones."""
    return json.dumps({"type": "error", "error": message, "code": code})


class Relay:
    """One client session. ``await Relay(ws, url).run()`` returns when both sides are closed."""

    def __init__(self, client: WebSocket, backend_url: str, *, open_timeout: float = 10.0):
        self.client = client
        self.backend_url = backend_url
        self.open_timeout = open_timeout
        self.session = next(_session_ids)
        self._send_lock = asyncio.Lock()
        self._client_closed = False

    async def run(self) -> None:
        await self.client.accept()  # first, well within SageMaker's 250 ms
        log.info("= session %d accepted, relaying to %s", self.session, self.backend_url)
        inbox = new_inbox()
        reader = asyncio.create_task(self._read_client(inbox))
        backend: ClientConnection | None = None
        pumps: list[asyncio.Task[None]] = []
        try:
            backend = await self._connect()
            if backend is None:
                return
            pumps = [
                asyncio.create_task(self._client_to_backend(inbox, backend)),
                asyncio.create_task(self._backend_to_client(backend)),
            ]
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (reader, *pumps):
                task.cancel()
            await asyncio.gather(reader, *pumps, return_exceptions=True)
            if backend is not None:
                await backend.close()
            await self._close_client(1000, "")
            log.info("= session %d closed", self.session)

    async def _connect(self) -> ClientConnection | None:
        """Open the backend; on failure tell the client why and close it."""
        try:
            backend = await connect(
                self.backend_url,
                open_timeout=self.open_timeout,
                max_size=None,  # vLLM enforces its own limits
                compression=None,  # loopback: deflate only costs CPU
                proxy=None,  # never route localhost through an env proxy
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            reason = f"speech backend refused the connection (HTTP {status})"
        except TimeoutError:
            reason = f"speech backend did not answer within {self.open_timeout:g} s"
        except OSError as exc:
            reason = f"speech backend is unreachable ({exc.strerror or exc})"
        except (InvalidHandshake, InvalidURI) as exc:
            reason = f"speech backend handshake failed ({exc})"
        else:
            log.info("> session %d connected to backend", self.session)
            return backend
        log.warning("! session %d: %s", self.session, reason)
        await self._send_client(error_event(reason, "processing_error"))
        await self._close_client(1011, "speech backend unavailable")
        return None

    async def _read_client(self, inbox: asyncio.Queue[str | ClientClosed]) -> None:
        """Queue the client's frames as text, then how it closed."""
        try:
            await self._read_frames(inbox)
        except asyncio.CancelledError:
            raise
        except Exception:  # whatever broke, the backend must still be closed
            log.exception("! session %d: reading from the client failed", self.session)
            self._client_closed = True
            await inbox.put(ClientClosed(ABNORMAL, ""))

    async def _read_frames(self, inbox: asyncio.Queue[str | ClientClosed]) -> None:
        while True:
            message = await self.client.receive()
            if message["type"] == "websocket.disconnect":
                self._client_closed = True
                code = message.get("code") or NO_STATUS
                await inbox.put(ClientClosed(code, message.get("reason") or ""))
                return
            if message.get("text") is not None:
                await inbox.put(message["text"])  # waits while the inbox is full
                continue
            data = message.get("bytes") or b""
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                log.warning("! session %d: binary frame is not UTF-8, dropped", self.session)
                await self._send_client(
                    error_event("binary frame is not UTF-8 encoded JSON", "invalid_json")
                )
                continue
            await inbox.put(text)

    async def _client_to_backend(
        self, inbox: asyncio.Queue[str | ClientClosed], backend: ClientConnection
    ) -> None:
        while True:
            item = await inbox.get()
            if isinstance(item, ClientClosed):
                fallback = 1000 if item.code == NO_STATUS else 1001
                code = sendable_code(item.code, fallback)
                log.info("= session %d: client closed (%d), closing backend", self.session, code)
                await backend.close(code, clip_reason(item.reason))
                return
            try:
                await backend.send(item)
            except ConnectionClosed:
                await self._relay_backend_close(backend)
                return

    async def _backend_to_client(self, backend: ClientConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for message in backend:
                if not await self._send_client(message):
                    return  # the client is gone; the other pump closes the backend
        await self._relay_backend_close(backend)

    async def _relay_backend_close(self, backend: ClientConnection) -> None:
        code, reason = backend.close_code, backend.close_reason or ""
        if self._client_closed:
            return
        if code in (None, ABNORMAL):
            log.warning("! session %d: backend connection lost", self.session)
            await self._send_client(
                error_event("connection to the speech backend was lost", "processing_error")
            )
            await self._close_client(1011, "speech backend connection lost")
            return
        log.info("= session %d: backend closed (%d), closing client", self.session, code)
        await self._close_client(sendable_code(code, 1000), clip_reason(reason))

    async def _send_client(self, message: str | bytes) -> bool:
        """Send one whole message; False if the client is gone."""
        if self._client_closed:
            return False
        try:
            async with self._send_lock:
                if isinstance(message, str):
                    await self.client.send_text(message)
                else:
                    await self.client.send_bytes(message)
        except _CLIENT_SEND_ERRORS:
            self._client_closed = True
            return False
        return True

    async def _close_client(self, code: int, reason: str) -> None:
        if self._client_closed:
            return
        self._client_closed = True
        with contextlib.suppress(*_CLIENT_SEND_ERRORS):
            async with self._send_lock:
                await self.client.close(code, reason)
