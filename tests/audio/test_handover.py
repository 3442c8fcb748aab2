"""A capture lent to successive caption sessions: every chunk to exactly one of them."""

from __future__ import annotations

import asyncio
import random

import pytest

from captioner.audio.errors import CaptureError
from captioner.audio.handover import KeptSource, Relay, unwrapped

CHUNK = 2560  # 80 ms of 16 kHz PCM16, as the capture's chunks


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


class Device:
    """A capture of mic and system chunks (``tag`` + count), whose ``lost`` side raises
    after ``fail_after`` chunks, as a device that goes away."""

    def __init__(self, tag: bytes, fail_after: int | None = None, lost: str = "system"):
        self.tag, self.fail_after, self.lost = tag, fail_after, lost
        self.stopped = asyncio.Event()

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        self.stopped.set()

    async def _side(self, side: str):
        n = 0
        while not self.stopped.is_set():
            if side == self.lost and n == self.fail_after:
                raise CaptureError(f"{side} capture: the device went away")
            await asyncio.sleep(0.005)
            yield self.tag + bytes([n]) * (CHUNK - 1)
            n += 1

    def chunks(self):
        return self._side("system")

    def mic_chunks(self):
        return self._side("mic")

    def system_chunks(self):
        return self._side("system")


def tags(chunks: list[bytes]) -> list[str]:
    """``a0`` for device a's first chunk, ``.`` for a chunk of silence."""
    return ["." if not any(c) else f"{c[:1].decode()}{c[1]}" for c in chunks]


def test_a_lost_device_that_recover_replaces_goes_on_in_the_same_stream_with_silence():
    errors: list[str] = []

    async def recover(error):
        errors.append(str(error))
        await asyncio.sleep(0.3)  # opening the stand-in
        return Device(b"b")

    async def scenario():
        lost = Device(b"a", fail_after=3)
        source = KeptSource(lost, recover)
        await source.start()
        got = []
        async for chunk in source.chunks():
            got.append(chunk)
            if len(got) == 12:
                break
        assert lost.stopped.is_set() and isinstance(source.inner, Device)
        await source.close()
        return got, source.inner.stopped.is_set()

    got, replacement_closed = asyncio.run(scenario())
    assert errors == ["system capture: the device went away"]
    shown = tags(got)
    assert shown[:3] == ["a0", "a1", "a2"]
    silent = shown.count(".")
    assert 3 <= silent <= 6  # 0.22–0.48 s of silence in 80 ms chunks: the time lost
    assert shown[3 + silent:] == [f"b{n}" for n in range(12 - 3 - silent)]
    assert sum(map(len, got[3:3 + silent])) % 2 == 0 and replacement_closed


def test_a_lost_device_with_nothing_to_go_on_with_ends_the_stream_as_before():
    async def nothing(_error):
        return None

    async def scenario(recover):
        source = KeptSource(Device(b"a", fail_after=2), recover)
        await source.start()
        got = []
        with pytest.raises(CaptureError, match="went away"):
            async for chunk in source.chunks():
                got.append(chunk)
        await source.close()
        return tags(got)

    assert asyncio.run(scenario(nothing)) == ["a0", "a1"]
    assert asyncio.run(scenario(None)) == ["a0", "a1"]  # no recover: as before it


def test_in_a_call_one_side_lost_moves_both_sides_to_the_new_source_once():
    """The system device goes away: the mic side, still fine, is moved too (the new
    capture has both), with as much silence, so the two sides stay in time."""
    opened: list[Device] = []

    async def recover(_error):
        await asyncio.sleep(0.2)
        opened.append(Device(b"b"))
        return opened[-1]

    async def scenario():
        source = KeptSource(Device(b"a", fail_after=4, lost="system"), recover)
        await source.start()

        async def read(lease):
            got = []
            async for chunk in lease:
                got.append(chunk)
                if sum(1 for c in got if c[:1] == b"b") == 3:
                    return got

        mic, system = await asyncio.gather(read(source.mic_chunks()),
                                           read(source.system_chunks()))
        await source.close()
        return tags(mic), tags(system)

    mic, system = asyncio.run(scenario())
    assert len(opened) == 1  # one recovery for both sides
    for side in (mic, system):
        assert side[-3:] == ["b0", "b1", "b2"] and "." in side, side
        silent = side.index("b0") - side.index(".")
        assert side[side.index("."):side.index("b0")] == ["."] * silent
    assert system[:4] == ["a0", "a1", "a2", "a3"]


def test_closing_a_source_while_it_recovers_stops_the_replacement_too():
    async def scenario():
        opening = asyncio.Event()
        replacement = Device(b"b")

        async def recover(_error):
            opening.set()
            await asyncio.sleep(0.2)
            return replacement

        source = KeptSource(Device(b"a", fail_after=1), recover)
        await source.start()

        async def read() -> list[bytes]:
            return [chunk async for chunk in source.chunks()]

        reader = asyncio.create_task(read())
        await asyncio.wait_for(opening.wait(), 2)
        await source.close()
        got = await asyncio.wait_for(reader, 2)
        return tags(got), replacement.stopped.is_set(), source.inner is replacement

    got, stopped, replaced = asyncio.run(scenario())
    assert got == ["a0"]
    assert not replaced and not stopped  # cancelled before it was put in place


def test_the_silence_lasts_until_the_replacement_really_delivers():
    """A device that opens at once but sends its first audio later (a Pulse monitor took
    2 s): the silence covers the wait, so the session's clock stays with real time."""
    class Slow(Device):
        async def _side(self, side: str):
            await asyncio.sleep(0.6)  # open, but nothing yet
            async for chunk in super()._side(side):
                yield chunk

    async def at_once(_error):
        return Slow(b"b")

    async def scenario():
        source = KeptSource(Device(b"a", fail_after=2), at_once)
        await source.start()
        got = []
        async for chunk in source.chunks():
            got.append(chunk)
            if chunk[:1] == b"b":
                break
        await source.close()
        return tags(got)

    shown = asyncio.run(scenario())
    assert shown[:2] == ["a0", "a1"] and shown[-1] == "b0"
    assert 6 <= shown.count(".") <= 10, shown  # 0.53 s and more in 80 ms chunks
