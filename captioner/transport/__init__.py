"""Byte/text pipes to speech endpoints: WebSocket and SageMaker HTTP/2 bidirectional."""

from captioner.transport.base import (
    AuthError,
    ConnectError,
    ConnectionLost,
    Connector,
    EndpointError,
    Transport,
    TransportError,
)

__all__ = [
    "AuthError",
    "ConnectError",
    "ConnectionLost",
    "Connector",
    "EndpointError",
    "Transport",
    "TransportError",
]
