"""Observer lists for the endpoint manager (plain callbacks, so no Qt below the UI)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class Hook:
    """A list of callbacks; one that raises is logged and does not stop the others."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[..., None]] = []

    def connect(self, callback: Callable[..., None]) -> None:
        self._callbacks.append(callback)

    def disconnect(self, callback: Callable[..., None]) -> None:
        with contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    def emit(self, *args: Any) -> None:
        for callback in list(self._callbacks):
            try:
                callback(*args)
            except Exception:  # an observer's bug (any type) must not break the manager
                log.exception("! endpoint observer %r failed", callback)
