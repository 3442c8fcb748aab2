"""ws:// and wss:// transport to a self-hosted /v1/realtime (or TTS) endpoint."""

from __future__ import annotations

import logging
import socket
import ssl

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import (
    ConnectionClosed,
    ConnectionClosedOK,
    InvalidHandshake,
    InvalidStatus,
    InvalidURI,
)

from captioner.transport.base import (
    ConnectError,
    ConnectionLost,
    Connector,
    EndpointError,
    Transport,
)

log = logging.getLogger(__name__)

# Besides 5xx: a timeout, 424 (SageMaker's "model container is loading" and other model
# errors while an endpoint starts), too early, too many requests.
RETRYABLE_STATUS = frozenset({408, 424, 425, 429})
REASON_CHARS = 160


class WebSocketTransport:
    def __init__(self, ws: ClientConnection, url: str) -> None:
        self._ws = ws
        self.url = url

    @classmethod
    async def connect(cls, url: str, *, open_timeout: float = 10.0) -> WebSocketTransport:
        """Open ``url``; failures become ConnectError/EndpointError with a readable reason."""
        try:
            ws = await connect(url, open_timeout=open_timeout, max_size=16 * 2**20, close_timeout=2,
                               ping_interval=20, ping_timeout=20)
        except InvalidURI as exc:
            raise EndpointError(f"not a WebSocket URL: {url}", retryable=False) from exc
        except InvalidStatus as exc:
            status = exc.response.status_code
            reason = _first_line(exc.response.body)
            raise EndpointError(  # the reason first: a status line shows only its start
                f"HTTP {status}{': ' + reason if reason else ''} (from {url})", status,
                retryable=status >= 500 or status in RETRYABLE_STATUS,
            ) from exc
        except InvalidHandshake as exc:
            raise ConnectError(f"{url} is not a WebSocket endpoint: {exc}") from exc
        except ssl.SSLError as exc:
            raise ConnectError(f"TLS failed for {url}: {exc.reason or exc}") from exc
        except socket.gaierror as exc:
            raise ConnectError(f"cannot resolve the host of {url}: {exc.strerror}") from exc
        except ConnectionRefusedError as exc:
            raise ConnectError(f"{url} refused the connection (is the server running?)") from exc
        except (OSError, TimeoutError) as exc:
            raise ConnectError(f"cannot reach {url}: {exc}") from exc
        log.debug("= connected to %s", url)
        return cls(ws, url)

    async def send_text(self, text: str) -> None:
        try:
            await self._ws.send(text)
        except ConnectionClosed as exc:
            raise ConnectionLost(_closed_reason(exc)) from exc

    async def send_bytes(self, data: bytes) -> None:
        try:
            await self._ws.send(data)
        except ConnectionClosed as exc:
            raise ConnectionLost(_closed_reason(exc)) from exc

    async def recv(self) -> str | bytes | None:
        try:
            return await self._ws.recv()
        except ConnectionClosedOK:
            return None
        except ConnectionClosed as exc:
            raise ConnectionLost(_closed_reason(exc)) from exc

    async def close(self) -> None:
        try:
            await self._ws.close()
        except Exception:  # closing must never raise
            log.debug("! error while closing", exc_info=True)


def _first_line(body: bytes | None) -> str:
    """The start of an HTTP error body, as a reason a user can read."""
    if not body:
        return ""
    text = body.decode("utf-8", "replace").strip().splitlines()
    return text[0][:REASON_CHARS] if text else ""


def _closed_reason(exc: ConnectionClosed) -> str:
    frame = exc.rcvd or exc.sent
    if frame is None:
        return "the connection dropped"
    return f"the connection closed ({frame.code}{': ' + frame.reason if frame.reason else ''})"


def websocket_connector(url: str) -> Connector:
    async def open_transport() -> Transport:
        return await WebSocketTransport.connect(url)

    return open_transport
