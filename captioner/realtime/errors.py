"""Why a Realtime exchange can go wrong, as one exception tree.

Hierarchy (``str()`` is a sentence a user can read)::

    CaptionerError
    └── RealtimeError
        ├── ProtocolError         a frame that is not a valid event (the peer's fault)
        │   └── ImpossibleText    valid JSON, but more text than the audio could carry
        └── UsageError            the caller misused the client connection (our fault)
            ├── InvalidRequest    a value the server would refuse (empty model, odd PCM…)
            └── InvalidState      a send the connection state does not allow

The client connection never raises :class:`ProtocolError` at its caller: it turns the
peer's faults into events and goes on. :class:`UsageError` is raised, because it is a bug
in the code driving the connection.
"""

from __future__ import annotations

from captioner.errors import CaptionerError


class RealtimeError(CaptionerError):
    """Root of Realtime protocol failures."""


class ProtocolError(RealtimeError, ValueError):
    """A frame that is not a valid event. ``code`` matches the server's error codes."""

    def __init__(self, message: str, code: str = "invalid_event") -> None:
        super().__init__(message)
        self.code = code


class ImpossibleText(ProtocolError):
    """Text the audio sent so far could not have carried (a broken server or proxy)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "impossible_text")


class UsageError(RealtimeError):
    """The caller asked for something the protocol does not allow."""


class InvalidRequest(UsageError, ValueError):
    """An event built with a value the server would refuse."""


class InvalidState(UsageError, RuntimeError):
    """A send that is illegal in the connection's current state."""
