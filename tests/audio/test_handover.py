"""A capture lent to successive caption sessions: every chunk to exactly one of them."""

from __future__ import annotations

import asyncio
import random

from captioner.audio.handover import KeptSource, Relay, unwrapped


class Ticker:
    """A live source: numbered chunks every few milliseconds until stopped."""

    def __init__(self, every: float = 0.002) -> None:
        self.every = every
        self.starts = self.stops = 0
        self._stopped = asyncio.Event()

    async def start(self) -> None:
        self.starts += 1

    async def stop(self) -> None:
        self.stops += 1
        self._stopped.set()

    async def chunks(self):
        n = 0
        while not self._stopped.is_set():
            await asyncio.sleep(self.every)
            yield n.to_bytes(4, "little")
            n += 1

    level_dbfs = -20.0


def numbers(chunks: list[bytes]) -> list[int]:
    return [int.from_bytes(c, "little") for c in chunks]


async def read_until_released(lease, relay: Relay, release_after: float) -> list[bytes]:
    got: list[bytes] = []
    asyncio.get_running_loop().call_later(release_after, relay.release)
    async for chunk in lease:
        got.append(chunk)
    return got


def test_successive_leases_get_every_chunk_once_in_order():
    async def scenario():
        ticker = Ticker()
        relay = Relay(ticker.chunks)
        rng = random.Random(7)
        readers = []
        for _ in range(12):  # released at arbitrary moments, mid-pull or between chunks
            readers.append(await read_until_released(relay.lease(), relay,
                                                     rng.uniform(0.0, 0.03)))
            await asyncio.sleep(rng.uniform(0.0, 0.02))  # nobody reads meanwhile
        await ticker.stop()
        readers.append([c async for c in relay.lease()])  # the rest, up to the end
        await relay.aclose()
        return readers

    readers = asyncio.run(scenario())
    joined = numbers([c for r in readers for c in r])
    assert joined == list(range(len(joined)))
    assert len(joined) > 50 and sum(1 for r in readers if r) >= 8


def test_a_release_before_a_lease_is_read_ends_that_lease():
    async def scenario():
        ticker = Ticker()
        relay = Relay(ticker.chunks)
        first = relay.lease()
        assert numbers([await anext(first)]) == [0]
        second = relay.lease()  # the next run, not yet reading
        relay.release()
        assert [c async for c in second] == []
        third = relay.lease()
        got = await anext(third)  # the chunk after the first: nothing skipped
        await ticker.stop()
        await relay.aclose()
        return numbers([got])

    assert asyncio.run(scenario()) == [1]


def test_a_reader_cancelled_mid_wait_leaves_the_next_chunk_for_the_next_lease():
    async def scenario():
        ticker = Ticker(every=0.05)
        relay = Relay(ticker.chunks)
        lease = relay.lease()

        async def read_one():
            async for chunk in lease:
                return chunk

        first = await read_one()
        task = asyncio.ensure_future(read_one())
        await asyncio.sleep(0.01)  # waiting for chunk 1
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        got = await anext(relay.lease())
        await ticker.stop()
        await relay.aclose()
        return numbers([first, got])

    assert asyncio.run(scenario()) == [0, 1]


def test_a_kept_source_stays_open_for_the_next_run_only_when_handed_over():
    async def scenario():
        ticker = Ticker()
        source = KeptSource(ticker)
        await source.start()
        await source.start()  # the next run's start: the device is already open
        assert ticker.starts == 1 and source.level_dbfs == -20.0 and unwrapped(source) is ticker
        first = source.chunks()
        assert numbers([await anext(first)]) == [0]
        source.hand_over()
        assert [c async for c in first] == []
        await source.stop()  # the run's own stop: kept open
        assert ticker.stops == 0
        second = source.chunks()
        assert numbers([await anext(second)]) == [1]
        await source.stop()  # not handed over: closed
        return ticker.stops

    assert asyncio.run(scenario()) == 1


def test_closing_a_source_while_a_lease_reads_ends_the_lease():
    """Quitting mid-read (the app closes the capture under a reader) ends that reader's
    stream without an error."""
    async def scenario():
        source = KeptSource(Ticker(every=0.05))
        await source.start()
        got: list[bytes] = []

        async def read() -> None:
            async for chunk in source.chunks():
                got.append(chunk)

        reader = asyncio.create_task(read())
        await asyncio.sleep(0.12)
        await source.close()
        await asyncio.wait_for(reader, 2)  # raises what the reader raised
        return got

    assert numbers(asyncio.run(scenario())) == [0, 1]
