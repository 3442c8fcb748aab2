"""The asyncio side of the endpoint runner: blocking boto3 calls in an executor, the
call in flight per key, and the tasks to cancel on close."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Coroutine, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from captioner.aiotasks import cancel_and_wait

log = logging.getLogger(__name__)

T = TypeVar("T")
WORKERS = 4  # both kinds' polls plus a stop and a search at once


class Tasks:
    """Runs blocking calls off the loop and keeps every task it starts."""

    def __init__(self, executor: ThreadPoolExecutor | None = None) -> None:
        self.executor = executor or ThreadPoolExecutor(WORKERS, thread_name_prefix="endpoints")
        self._tasks: set[asyncio.Task[Any]] = set()
        self._inflight: dict[Hashable, Future[Any]] = {}

    def spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run ``coro`` as a kept task; a failure is logged (it is a bug: AWS ones are typed
        and handled inside)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("! endpoint task failed", exc_info=task.exception())

    async def run(self, key: Hashable | None, fn: Callable[..., T], *args: Any, **kwargs: Any
                  ) -> T:
        """Run a blocking call in the executor; the call in flight per ``key`` is remembered."""
        future = self.executor.submit(functools.partial(fn, *args, **kwargs))
        if key is not None:
            self._inflight[key] = future
        try:
            return await asyncio.wrap_future(future)
        finally:
            if key is not None and self._inflight.get(key) is future:
                del self._inflight[key]

    async def settle_inflight(self, key: Hashable) -> None:
        """Wait for the call in flight under ``key`` (a create call: its outcome is not ours)."""
        future = self._inflight.get(key)
        if future is not None:
            await asyncio.wait([asyncio.wrap_future(future)])

    @staticmethod
    def threadsafe(fn: Callable[..., None]) -> Callable[..., None]:
        """``fn`` callable from the executor's threads; it runs on the loop."""
        loop = asyncio.get_running_loop()
        return lambda *args: loop.call_soon_threadsafe(fn, *args)

    async def close(self, *extra: asyncio.Task[Any]) -> None:
        """Cancel and await every kept task and ``extra``; stop the executor."""
        await cancel_and_wait([*self._tasks, *extra])  # their failures were logged already
        self.executor.shutdown(wait=False, cancel_futures=True)
