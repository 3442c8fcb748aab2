"""Cancelling a group of asyncio tasks at shutdown without ever hanging the quit.

A loop of ``with suppress(CancelledError): await task`` has two faults: it swallows
the caller's own cancellation (so an outer timeout cannot end it), and it waits
forever for a task that never finishes (one that ignores cancellation, or whose
next step was lost). Quitting must always finish, so the wait here is bounded and
a straggler is named in the log instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger(__name__)

CLOSE_SECONDS = 5.0  # ample for a cancelled task to unwind; a quit never waits longer


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]],
                          timeout: float = CLOSE_SECONDS) -> None:
    """Cancel ``tasks`` and wait up to ``timeout`` for them (their failures are theirs)."""
    running = [task for task in tasks if not task.done()]
    for task in running:
        task.cancel()
    if not running:  # (wait() of nothing raises)
        return
    _done, pending = await asyncio.wait(running, timeout=timeout)
    for task in pending:
        log.warning("! task %s did not stop within %.0f s of its cancellation; left behind",
                    task.get_name(), timeout)


__all__ = ["CLOSE_SECONDS", "cancel_and_wait"]
