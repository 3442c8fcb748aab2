"""What every transport offers: move whole text (and binary) messages, nothing more.

Exception hierarchy (all derive from :class:`TransportError`)::

    CaptionerError
    └── TransportError
        ├── ConnectError          could not open the stream (refused, DNS, TLS, HTTP status)
        │   ├── AuthError         credentials missing, expired or rejected; do not retry blindly
        │   └── EndpointError     the service answered with an error status (400/424/500/503...)
        └── ConnectionLost        an open stream broke (network drop, model/platform stream error)

``retryable`` tells a session whether reconnecting can help.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from captioner.errors import CaptionerError


class TransportError(CaptionerError):
    """Root of transport failures; ``str()`` is a sentence a user can read."""

    retryable: bool = True


class ConnectError(TransportError):
    pass


class AuthError(ConnectError):
    retryable = False


class EndpointError(ConnectError):
    def __init__(self, message: str, status: int | None = None, *, retryable: bool = True):
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class ConnectionLost(TransportError):
    pass


class Transport(Protocol):
    """A connected message pipe. Text frames carry JSON events; bytes carry audio (TTS)."""

    async def send_text(self, text: str) -> None:
        """Send one whole text message. Raises ConnectionLost if the stream is gone."""
        ...

    async def recv(self) -> str | bytes | None:
        """Next whole message; ``None`` once the peer closed cleanly."""
        ...

    async def close(self) -> None:
        """Close our side; idempotent, never raises."""
        ...


Connector = Callable[[], Awaitable[Transport]]
"""Opens a fresh transport; sessions call it again to reconnect."""
