"""Shutdown's task cancelling: bounded, and never swallowing the caller's cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest

from captioner.aiotasks import cancel_and_wait


async def _stubborn(release: asyncio.Event) -> None:
    """A task that ignores its cancellation until released (a bug, or a lost step)."""
    while not release.is_set():
        with contextlib.suppress(asyncio.CancelledError):
            await release.wait()


def test_cancels_and_waits_for_well_behaved_tasks() -> None:
    async def scenario() -> list[bool]:
        tasks = [asyncio.create_task(asyncio.sleep(60)) for _ in range(3)]
        await asyncio.sleep(0)
        await cancel_and_wait(tasks)
        return [task.cancelled() for task in tasks]

    assert asyncio.run(scenario()) == [True, True, True]


def test_a_task_that_ignores_cancellation_does_not_hang_the_quit(
        caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> bool:
        release = asyncio.Event()
        stubborn = asyncio.create_task(_stubborn(release), name="stubborn")
        await asyncio.sleep(0)
        await cancel_and_wait([stubborn], timeout=0.2)
        left = not stubborn.done()
        release.set()
        await stubborn
        return left

    with caplog.at_level(logging.WARNING):
        assert asyncio.run(scenario())
    assert "stubborn did not stop" in caplog.text


def test_the_callers_own_cancellation_is_not_swallowed() -> None:
    async def scenario() -> None:
        release = asyncio.Event()
        stubborn = asyncio.create_task(_stubborn(release))
        await asyncio.sleep(0)
        try:
            with pytest.raises(TimeoutError):  # the outer timeout ends the wait at once
                await asyncio.wait_for(cancel_and_wait([stubborn], timeout=30), 0.2)
        finally:
            release.set()
            await stubborn

    asyncio.run(scenario())


def test_nothing_to_cancel() -> None:
    async def scenario() -> None:
        done = asyncio.create_task(asyncio.sleep(0))
        await done
        await cancel_and_wait([done])
        await cancel_and_wait([])

    asyncio.run(scenario())
