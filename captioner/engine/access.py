"""Who may use a local Realtime server: loopback binds, same-machine origins, a token.

Browsers let any web page open a WebSocket to ``ws://127.0.0.1:PORT`` and always send
the page's ``Origin`` header with it; native clients (our session, vLLM clients,
``websockets``) send none. So a handshake is refused when it carries an Origin that is
not itself on this computer (``null`` included). The in-app engine adds an
unguessable token to its URL, so a local process that merely scans ports cannot use
it either. Plain functions, no I/O: the server calls them from its handshake hook.

Errors::

    CaptionerError
    └── EngineError
        └── BindError      a local server was asked to listen beyond this computer
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from urllib.parse import parse_qs, urlsplit

from captioner.engine.model_paths import EngineError

TOKEN_PARAM = "token"
TOKEN_BYTES = 32  # secrets.token_urlsafe → 43 characters, 256 bits
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class BindError(EngineError, ValueError):
    """A local server may only listen on a loopback address."""


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def is_loopback_host(host: str | None) -> bool:
    """True for ``localhost``, ``*.localhost`` and loopback IPs (127.0.0.0/8, ::1)."""
    if not host:
        return False
    host = host.strip("[]").lower().rstrip(".")
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str) -> None:
    """BindError unless ``host`` keeps the server on this computer."""
    if not is_loopback_host(host):
        raise BindError(f"A local server listens only on this computer (127.0.0.1, ::1 or "
                        f"localhost), not on {host!r}: anyone who can reach it could use it.")


def origin_allowed(origin: str | None) -> bool:
    """No Origin (a native client) or an Origin on this computer; everything else is a
    web page of another site, or an opaque ``null`` one."""
    if origin is None:
        return True
    try:
        parts = urlsplit(origin.strip())
        return parts.scheme in ("http", "https") and is_loopback_host(parts.hostname)
    except ValueError:
        return False


def token_ok(path: str, expected: str | None) -> bool:
    """The request path's ``?token=`` equals ``expected`` (always true when None)."""
    if expected is None:
        return True
    given = parse_qs(urlsplit(path).query).get(TOKEN_PARAM, [""])[0]
    return hmac.compare_digest(given.encode(), expected.encode())


__all__ = ["TOKEN_PARAM", "BindError", "check_bind", "is_loopback_host", "new_token",
           "origin_allowed", "token_ok"]
