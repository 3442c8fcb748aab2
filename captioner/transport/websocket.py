"""ws:// and wss:// transport to a self-hosted /v1/realtime (or TTS) endpoint."""

from __future__ import annotations

import logging
import re
import socket
import ssl
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import (
    ConnectionClosed,
    ConnectionClosedOK,
    InvalidHandshake,
    InvalidProxy,
    InvalidStatus,
    InvalidURI,
    ProxyError,
)
from websockets.proxy import get_proxy
from websockets.uri import parse_uri

from captioner.engine.access import is_loopback_host
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
        """Open ``url``; failures become ConnectError/EndpointError with a readable reason.

        Messages and log lines name ``url`` without its query: the embedded engine's
        secret token travels there.
        """
        shown, proxy = _without_secrets(url), None
        try:
            proxy = _proxy_for(url)
            if proxy:
                log.debug("= connecting to %s through the proxy %s", shown, _without_secrets(proxy))
            ws = await connect(url, proxy=proxy, open_timeout=open_timeout, max_size=16 * 2**20,
                               close_timeout=2, ping_interval=20, ping_timeout=20)
        except InvalidURI as exc:
            raise EndpointError(f"not a WebSocket URL: {shown}", retryable=False) from exc
        except (InvalidProxy, ProxyError, ImportError) as exc:  # before InvalidHandshake
            if isinstance(exc, ImportError) and not proxy:
                raise
            raise _proxy_failure(exc, shown, proxy) from exc
        except InvalidStatus as exc:
            status = exc.response.status_code
            reason = _first_line(exc.response.body)
            raise EndpointError(  # the reason first: a status line shows only its start
                f"HTTP {status}{': ' + reason if reason else ''} (from {shown})", status,
                retryable=status >= 500 or status in RETRYABLE_STATUS,
            ) from exc
        except InvalidHandshake as exc:
            raise ConnectError(f"{shown} is not a WebSocket endpoint: {exc}") from exc
        except ssl.SSLError as exc:
            raise ConnectError(f"TLS failed for {shown}: {exc.reason or exc}") from exc
        except socket.gaierror as exc:
            raise ConnectError(f"cannot resolve the host of {shown}: {exc.strerror}") from exc
        except ConnectionRefusedError as exc:
            raise ConnectError(f"{shown} refused the connection (is the server running?)") from exc
        except (OSError, TimeoutError) as exc:
            raise ConnectError(f"cannot reach {shown}: {exc}") from exc
        log.debug("= connected to %s", shown)
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


def _proxy_for(url: str) -> str | None:
    """The environment's proxy for ``url``, but none for this computer: a proxy cannot
    reach our loopback (corporate ones answer 403) and Python's ``no_proxy`` handling
    does not exempt 127.0.0.1. Remote hosts keep it: behind a corporate proxy it is the
    only way out. Raises InvalidURI for a URL that is not ws(s)://."""
    uri = parse_uri(url)
    return None if is_loopback_host(uri.host) else get_proxy(uri)


def _without_secrets(url: str) -> str:
    """``url`` without its query and fragment (the engine's token) or user info (a proxy's
    password), to show in messages and logs."""
    try:
        parts = urlsplit(url)
        return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))
    except ValueError:  # a malformed URL: cut the same parts out by hand
        return re.sub(r"//[^/]*@", "//", re.split(r"[?#]", url, maxsplit=1)[0])


def _proxy_failure(exc: Exception, shown: str, proxy: str | None) -> ConnectError:
    """A readable ConnectError for a proxy that failed; not retryable when the proxy
    settings themselves are unusable (retrying cannot fix those)."""
    if isinstance(exc, InvalidProxy):
        error = ConnectError(f"the proxy set in the environment "
                             f"({_without_secrets(exc.proxy)}) is not valid: {exc.msg}")
    elif isinstance(exc, ImportError):  # websockets needs python-socks for a SOCKS proxy
        error = ConnectError(f"cannot reach {shown} through the SOCKS proxy "
                             f"{_without_secrets(proxy or '')} set in the environment: "
                             "it needs the python-socks package")
    else:
        return ConnectError(f"cannot reach {shown} through the proxy "
                            f"{_without_secrets(proxy or '')}: {exc}")
    error.retryable = False
    return error


def websocket_connector(url: str) -> Connector:
    async def open_transport() -> Transport:
        return await WebSocketTransport.connect(url)

    return open_transport
