"""Blocking set-up calls off the GUI thread, their answers back on it.

``runner.call(fn, *args, done=…, failed=…)`` runs ``fn`` in the runner's executor
and calls ``done(result)`` or ``failed(readable text)`` on the asyncio (Qt) loop.
Typed failures (AWS, credentials, keyring) become their own message; anything
else is logged with its traceback and shown as an unexpected error: a failure is
never silent. ``close()`` cancels what is running.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from captioner.aiotasks import cancel_and_wait
from captioner.aws import CredentialsError
from captioner.cloud.errors import EndpointControlError

log = logging.getLogger(__name__)
T = TypeVar("T")


class Runner:
    def __init__(self, executor: ThreadPoolExecutor | None = None) -> None:
        self._executor = executor or ThreadPoolExecutor(2, thread_name_prefix="endpoint-setup")
        self._tasks: set[asyncio.Task[Any]] = set()

    def call(self, fn: Callable[..., T], *args: Any, done: Callable[[T], None],
             failed: Callable[[str], None]) -> asyncio.Task[None]:
        return self.spawn(self._call(fn, args, done, failed))

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Await ``fn(*args)`` run in the executor (raises what it raises)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args))

    async def outcome(self, fn: Callable[..., T], *args: Any) -> tuple[T | None, str]:
        """``(result, "")``, or ``(None, readable reason)`` when ``fn`` failed."""
        try:
            return await self.run(fn, *args), ""
        except (EndpointControlError, CredentialsError) as exc:
            return None, str(exc)
        except Exception as exc:  # a bug or an unforeseen library error: say so, loudly
            log.exception("! endpoint set-up call %s failed", getattr(fn, "__name__", fn))
            return None, f"Unexpected error: {exc}"

    async def _call(self, fn: Callable[..., T], args: tuple[Any, ...],
                    done: Callable[[T], None], failed: Callable[[str], None]) -> None:
        result, problem = await self.outcome(fn, *args)
        if problem:
            failed(problem)
            return
        done(result)  # type: ignore[arg-type]  # no problem: fn returned a result

    @property
    def busy(self) -> bool:
        return bool(self._tasks)

    async def close(self) -> None:
        await cancel_and_wait(self._tasks)
        self._executor.shutdown(wait=False, cancel_futures=True)


__all__ = ["Runner"]
