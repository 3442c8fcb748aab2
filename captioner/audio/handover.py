"""A capture kept open from one captioning run to the next, so a restart loses no word.

A new endpoint or speech model only switches the running session (see
``CaptionSession.switch``); a change that needs a new session (the speakers' names
of a two-stream call) restarts it, but not the audio: closing the device and opening
it again left a gap of up to a second or two (a Bluetooth headset takes that long to
open), and whatever was said in it was never captioned. A :class:`KeptSource` lends
its chunk streams to one run at a time; :meth:`KeptSource.hand_over` ends the
current run's streams at a chunk boundary, and the next run takes the very next
chunk. The device keeps capturing meanwhile and holds what it hears (about ten
seconds) until the next run reads it. A new device is opened beside the running
one in the same wrapper, and :meth:`KeptSource.discard_held` drops what it heard
before the old run stopped.

A device that goes away mid-run need not end the run either: given a ``recover``
callback, a :class:`KeptSource` asks it for a source in its place (the device open
again, or the default standing in) and goes on with that one, the time without audio
as silence. Ending the session there and starting a new one on the stand-in cut the
phrase said across the loss in two, and each half was read alone: on real speech
with 0.3 s lost, 1.66 more words wrong per loss than with nothing lost, against 0.62
(about the words said in the 0.3 s) for going on (``bench/bench_device_loss.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from captioner.audio.chunker import DEFAULT_CHUNK_BYTES
from captioner.audio.errors import AudioError
from captioner.audio.resample import TARGET_RATE

log = logging.getLogger(__name__)

Recover = Callable[[AudioError], Awaitable[Any | None]]
"""Given why a source's audio failed: a started source to go on with, or None."""


class Relay:
    """One chunk stream lent to successive readers, one at a time, losing nothing between.

    A chunk pulled from the stream while no reader waits, or while a reader's lease
    ends, is kept for the next lease: the pull itself outlives the lease.
    """

    def __init__(self, open_stream: Callable[[], AsyncIterator[bytes]]) -> None:
        self._open = open_stream
        self._stream: AsyncIterator[bytes] | None = None
        self._pull: asyncio.Future[bytes] | None = None  # the next chunk, being fetched
        self._released = asyncio.Event()
        self._ended = False  # the stream itself ended: every later lease is empty

    def lease(self) -> AsyncIterator[bytes]:
        """The stream's chunks until it ends or :meth:`release` is called."""
        self._released = released = asyncio.Event()  # now: a release before the first read
        return self._chunks(released)                 # ends this lease, not the one before

    async def _chunks(self, released: asyncio.Event) -> AsyncIterator[bytes]:
        if self._stream is None:
            self._stream = aiter(self._open())
        while not released.is_set() and not self._ended:
            if self._pull is None:
                self._pull = asyncio.ensure_future(anext(self._stream))
            waiter = asyncio.ensure_future(released.wait())
            try:
                await asyncio.wait({self._pull, waiter}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
            if released.is_set():
                return  # a chunk that came meanwhile stays with the pull, for the next lease
            pull, self._pull = self._pull, None
            if pull is None or pull.cancelled():
                return  # the source was closed while this lease read
            try:
                chunk = pull.result()
            except StopAsyncIteration:
                self._ended = True
                return
            yield chunk

    def release(self) -> None:
        """End the current lease at a chunk boundary (the next one goes on from there)."""
        self._released.set()

    async def aclose(self) -> None:
        pull, self._pull = self._pull, None
        if pull is not None:
            pull.cancel()
            await asyncio.gather(pull, return_exceptions=True)  # its outcome is retrieved


class KeptSource:
    """An audio source (``AudioCapture``, ``DualCapture``, …) that can outlive a run.

    Offers the source's own interface: ``start``/``stop`` and its chunk streams as
    leases. After :meth:`hand_over` the run's ``stop()`` leaves the device open for
    the next run; :meth:`close` really stops it. Other attributes (level, drop
    counts, the echo canceller) are the source's.
    """

    def __init__(self, inner: Any, recover: Recover | None = None) -> None:
        self.inner = inner
        self.recover = recover  # a run sets it: how to go on when the device goes away
        self._started = False
        self._kept = False
        self._relays: dict[str, Relay] = {}
        self._recovery: tuple[Any, asyncio.Task[float]] | None = None  # (lost inner, task)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @classmethod
    async def open_started(cls, inner: Any) -> KeptSource:
        """``inner`` kept and started; released again if it cannot start."""
        source = cls(inner)
        try:
            await source.start()
        except BaseException:
            with contextlib.suppress(Exception):
                await source.close()
            raise
        return source

    @property
    def started(self) -> bool:
        """Whether the device is open (a run is reading it, or will at once)."""
        return self._started

    async def start(self) -> None:
        if not self._started:
            await self.inner.start()
            self._started = True

    def chunks(self) -> AsyncIterator[bytes]:
        return self._lease("chunks")

    def mic_chunks(self) -> AsyncIterator[bytes]:
        return self._lease("mic_chunks")

    def system_chunks(self) -> AsyncIterator[bytes]:
        return self._lease("system_chunks")

    def hand_over(self) -> None:
        """The running run's streams end now; the device stays open for the next run."""
        self._kept = True
        for relay in self._relays.values():
            relay.release()

    def set_gains(self, mic: float, system: float) -> None:
        """Apply new input gains to the running capture (no restart needed)."""
        set_gains = getattr(self.inner, "set_gains", None)
        if set_gains is not None:
            set_gains(mic, system)

    def discard_held(self) -> float:
        """Drop what the device heard and no run read yet; the seconds dropped."""
        discard = getattr(self.inner, "discard_held", None)
        return discard() if discard is not None else 0.0

    async def stop(self) -> None:
        """A run ended: stop the device, unless it was handed over to the next run."""
        if self._kept:
            self._kept = False
            return
        await self.close()

    async def close(self) -> None:
        for relay in self._relays.values():
            await relay.aclose()
        self._relays.clear()
        await self.inner.stop()

    def _lease(self, stream: str) -> AsyncIterator[bytes]:
        relay = self._relays.get(stream)
        if relay is None:
            relay = self._relays[stream] = Relay(lambda: self._stream(stream))
        return relay.lease()

    async def _stream(self, name: str) -> AsyncIterator[bytes]:
        """The source's ``name`` stream; over a device loss that ``recover`` mends, the
        replacement's, after silence for the time without audio (so the session's clock
        and a call's two sides stay with real time)."""
        lost_at: float | None = None  # when the audio went; None: it runs
        while True:
            inner = self.inner
            try:
                async for chunk in getattr(inner, name)():
                    if lost_at is not None:
                        for silence in _silence(lost_at, chunk):
                            yield silence
                        lost_at = None
                    yield chunk
            except AudioError as exc:
                if self.recover is None:
                    raise
                went = await self._replaced(inner, exc)
            else:
                recovery = self._recovery
                if recovery is None or recovery[0] is not inner:
                    return  # stopped
                went = await recovery[1]  # the other side of a call lost its device
            lost_at = went if lost_at is None else lost_at

    def _replaced(self, inner: Any, error: AudioError) -> asyncio.Task[float]:
        """The one recovery from ``inner``'s loss, which every stream of it waits for."""
        recovery = self._recovery
        if recovery is None or recovery[0] is not inner:
            task = asyncio.get_running_loop().create_task(self._recover_from(inner, error),
                                                          name="audio device recovery")
            self._recovery = recovery = (inner, task)
        return recovery[1]

    async def _recover_from(self, inner: Any, error: AudioError) -> float:
        """Stop the lost source, put what ``recover`` opens in its place; when the audio
        went (``time.monotonic``). Raises ``error`` when nothing opens (the run ends, as
        before)."""
        lost_at = time.monotonic()
        with contextlib.suppress(Exception):
            await inner.stop()
        assert self.recover is not None
        replacement = await self.recover(error)
        if replacement is None:
            raise error
        self.inner = replacement
        log.info("= the capture goes on on another source, open after %.2f s",
                 time.monotonic() - lost_at)
        return lost_at


def _silence(lost_at: float, first: bytes) -> list[bytes]:
    """Chunks of silence for the time from ``lost_at`` to the audio in ``first`` (the
    replacement's first chunk, just read). Measured to it, not to the open: a Pulse
    monitor can deliver nothing for two seconds after its stream opened."""
    gap = max(0.0, time.monotonic() - lost_at - len(first) / (2 * TARGET_RATE))
    log.info("= %.2f s without audio from the device", gap)
    silence = bytes(2 * round(gap * TARGET_RATE))
    return [silence[i : i + DEFAULT_CHUNK_BYTES] for i in range(0, len(silence),
                                                                 DEFAULT_CHUNK_BYTES)]


def unwrapped(source: Any) -> Any:
    """The source itself, whether or not it is kept across runs."""
    return source.inner if isinstance(source, KeptSource) else source
