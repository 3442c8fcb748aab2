"""What every sans-I/O client connection shares: a transition table, an outbox, an inbox.

A protocol module declares its states (an Enum) and a table ``(state, what) → next
state``; :class:`TableConnection` moves through it in one place (logging ``=`` lines)
and raises the protocol's own :class:`InvalidState` class for a send the table lacks.
Receives the table lacks are ignored (``_move`` returns False) — the peer's fault is
reported as an event by the protocol, never raised.
"""

from __future__ import annotations

import enum
import logging


class TableConnection[StateT: enum.Enum, EventT]:
    """Base of the Realtime and speech-stream client connections."""

    def __init__(self, state: StateT, transitions: dict[tuple[StateT, str], StateT],
                 invalid_state: type[Exception], logger: logging.Logger) -> None:
        self.state = state
        self._transitions = transitions
        self._invalid_state = invalid_state
        self.log = logger
        self._debug = logger.isEnabledFor(logging.DEBUG)
        self._outgoing: list[str] = []
        self._events: list[EventT] = []

    def _move(self, what: str) -> bool:
        """The one place the state changes. Returns False for an ignored receive."""
        nxt = self._transitions.get((self.state, what))
        if nxt is None:
            if what.startswith("send"):
                raise self._invalid_state(f"cannot {what} in state {self.state.value}")
            return False
        if nxt is not self.state:
            self.log.debug("= %s → %s (%s)", self.state.value, nxt.value, what)
            self.state = nxt
        return True

    def data_to_send(self) -> list[str]:
        """Frames to write, in order, each as one text message. Drains the queue."""
        out, self._outgoing = self._outgoing, []
        return out

    def events_received(self) -> list[EventT]:
        """Events decoded since the last call, in order. Drains the list."""
        out, self._events = self._events, []
        return out
