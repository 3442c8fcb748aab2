"""Keep the app's own spoken replies out of what the captions hear, by their samples.

A typed reply is played on an output the captions may be listening to: system
audio captures the default output digitally, and a microphone hears the speakers.
Without help, the reply comes back as a caption of the other side. The text-level
filter (``captioner.transcript.reply_echo``) drops caption words that repeat the
reply, but a voice the model misreads ("The low air." for "Hello there") shares no
words with it and was shown as something the other side said.

The app knows exactly what it played, so the reply is cancelled from the captured
audio before recognition, with the echo canceller the two-stream mode uses for the
microphone (WebRTC AEC3, :class:`~captioner.audio.echo.EchoCanceller`) and the
played reply as its reference:

- :class:`PlayedAudio` is what the reply player hands the device, kept as 16 kHz
  mono on a timeline of seconds (``time.monotonic``). The player's audio thread
  calls :meth:`PlayedAudio.played` with each block and the time the device's clock
  says it plays; the rest happens on the reading side.
- :class:`ReplyCanceller` sits on a capture's chunks. It maps capture positions to
  the same timeline (the lower envelope of arrival time minus audio captured, which
  follows a slowly drifting clock without the jitter of any one arrival; held still
  while a canceller runs, since AEC3 loses an echo whose alignment steps), reads
  the reference for each chunk's span and, while a reply plays or its echo may still
  arrive, runs the chunk through a canceller. The echo comes a little after its
  reference (the output's and the capture's buffering); the canceller measures that
  delay itself. The rest of the time chunks pass untouched: AEC3 changes audio
  slightly even with a silent reference (8 ms later, a little quieter), and captions
  of everything else must not pay for it.

Plain code: no asyncio and no Qt, and no lock: the audio thread only appends to
:class:`PlayedAudio`'s queue (an atomic deque append).
"""

from __future__ import annotations

import collections
import logging
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import soxr

from captioner.audio.devices import AudioDevice, find_device
from captioner.audio.echo import EchoCanceller
from captioner.audio.errors import DeviceNotFound
from captioner.audio.resample import TARGET_RATE
from captioner.settings import AudioSettings

if TYPE_CHECKING:
    from captioner.audio.dual import MicFilter

log = logging.getLogger(__name__)

KEEP_SECONDS = 10.0  # played audio kept: longer than any echo takes to come back
TAIL_SECONDS = 1.5  # the canceller runs this long after the last reply sample: its echo
CLOCK_SLEW = 0.0005  # the capture clock's envelope may rise 0.5 ms per second (drift)
NEW_RUN_SECONDS = 0.05  # a block this far off where the last one ended starts a new run

CancellerFactory = Callable[[], "MicFilter"]


class PlayedAudio:
    """What the reply player played, as 16 kHz mono by ``time.monotonic`` time.

    Kept in a ring of ``keep_seconds`` indexed by tick (1/16000 s of monotonic time)."""

    def __init__(self, keep_seconds: float = KEEP_SECONDS) -> None:
        self._pending: collections.deque[tuple[float, np.ndarray, int]] = collections.deque()
        self._ring = np.zeros(round(keep_seconds * TARGET_RATE), dtype=np.float32)
        self._end: int | None = None  # tick after the newest sample written
        self._run_end: float | None = None  # time the current run's next block is due
        self._run_rate = 0
        self._run_tick = 0  # tick where the current run's next resampled sample goes
        self._resampler: soxr.ResampleStream | None = None

    # --- the player's audio thread ----------------------------------------------

    def played(self, block: np.ndarray, rate: int, at: float) -> None:
        """``block`` (float32, mono) was handed to the device to sound from ``at``.

        Called on the audio thread: it only queues a copy (a deque append is atomic)."""
        self._pending.append((at, np.array(block, dtype=np.float32, copy=True), rate))

    # --- the reading side ------------------------------------------------------------

    def reference(self, start_tick: int, size: int) -> np.ndarray:
        """The played audio over ``size`` ticks from ``start_tick``; silence where none."""
        self._take_pending()
        out = np.zeros(size, dtype=np.float32)
        if self._end is None:
            return out
        size_ring = self._ring.size
        lo = max(start_tick, self._end - size_ring)
        hi = min(start_tick + size, self._end)
        if hi > lo:
            at, n = lo % size_ring, hi - lo
            first = min(n, size_ring - at)
            out[lo - start_tick: lo - start_tick + first] = self._ring[at:at + first]
            out[lo - start_tick + first: hi - start_tick] = self._ring[:n - first]
        return out

    def _take_pending(self) -> None:
        while self._pending:
            at, block, rate = self._pending.popleft()
            if (self._resampler is None or rate != self._run_rate or self._run_end is None
                    or abs(at - self._run_end) > NEW_RUN_SECONDS):
                # A new run (a reply after a pause, an underrun): placed by its own time.
                log.debug("= played: a run starts at %.3f (the last ended at %s)", at,
                          self._run_end and f"{self._run_end:.3f}")
                self._resampler = soxr.ResampleStream(rate, TARGET_RATE, 1, dtype="float32",
                                                      quality="LQ")
                self._run_rate, self._run_tick = rate, round(at * TARGET_RATE)
            self._run_end = at + block.size / rate
            samples = self._resampler.resample_chunk(block)
            self._put(self._run_tick, samples)
            self._run_tick += samples.size

    def _put(self, tick: int, samples: np.ndarray) -> None:
        if not samples.size:
            return
        if samples.size > self._ring.size:  # only the newest fit
            tick, samples = tick + samples.size - self._ring.size, samples[-self._ring.size:]
        if self._end is not None and tick > self._end:  # silence between runs
            gap = min(tick - self._end, self._ring.size)
            self._write(tick - gap, np.zeros(gap, dtype=np.float32))
        self._write(tick, samples)
        self._end = max(self._end or 0, tick + samples.size)

    def _write(self, tick: int, samples: np.ndarray) -> None:
        start = tick % self._ring.size
        first = min(samples.size, self._ring.size - start)
        self._ring[start:start + first] = samples[:first]
        self._ring[:samples.size - first] = samples[first:]


class ReplyCanceller:
    """One capture's chunks in, the same chunks without the replies' echo out."""

    def __init__(self, played: PlayedAudio, *,
                 make_canceller: CancellerFactory = EchoCanceller,
                 tail_seconds: float = TAIL_SECONDS) -> None:
        self._played = played
        self._make_canceller = make_canceller
        self._tail = round(tail_seconds * TARGET_RATE)
        self._pos = 0  # samples captured so far
        self._offset = math.inf  # envelope of (arrival tick − capture position)
        self._offset_at = 0.0
        self._latched = 0.0  # the mapping in use while a canceller runs
        self._canceller: MicFilter | None = None
        self._echo_until: int | None = None  # tick up to which a reply's echo may come
        self.replies_cancelled = 0  # stretches of capture that went through a canceller
        self._failed = False

    def process(self, chunk: bytes, now: float) -> bytes:
        """``chunk``: the newest 16 kHz mono PCM16 captured, which arrived at ``now``."""
        if self._failed:
            return chunk
        size = len(chunk) // 2
        start = self._pos
        self._pos += size
        arrival = now * TARGET_RATE - self._pos
        rise = CLOCK_SLEW * TARGET_RATE * (now - self._offset_at)
        self._offset = min(arrival, self._offset + rise)
        self._offset_at = now
        # While a canceller runs, the mapping stays as it was when it started: a step
        # in it (an early chunk lowering the envelope) would move the reference against
        # the echo, and AEC3 would let the echo through until it found it again.
        offset = self._offset if self._canceller is None else self._latched
        start_tick = round(start + offset)
        reference = self._played.reference(start_tick, size)
        if np.any(reference):
            self._echo_until = start_tick + size + self._tail
        elif self._echo_until is None or start_tick >= self._echo_until:
            if self._canceller is not None:
                log.debug("= reply echo: canceller off")
                self._canceller = None
            return chunk
        if self._canceller is None:
            log.debug("= reply echo: canceller on")
            self._canceller = self._make_canceller()
            self._latched = offset
            self.replies_cancelled += 1
        pcm16 = (np.clip(reference, -1.0, 1.0) * 32767).astype("<i2").tobytes()
        try:
            return self._canceller.process(chunk, pcm16)
        except Exception:  # captions go on uncancelled (the text filter still works)
            log.exception("! cancelling a reply failed; this capture goes on without it")
            self._failed = True
            return chunk


def reply_filter(played: PlayedAudio | None, hears: bool = True
                 ) -> Callable[[bytes, float], bytes] | None:
    """A capture's ``chunk_filter`` cancelling the replies in ``played``; None without
    replies or for a capture that does not hear them (``hears``, see :func:`hears_replies`):
    a canceller whose echo never comes still changes what the capture does hear."""
    if played is None or not hears:
        return None
    return ReplyCanceller(played).process


def hears_replies(audio: AudioSettings, source: str, devices: Sequence[AudioDevice]) -> bool:
    """Whether the capture of ``source`` ("mic", "system", "both") hears the replies.

    The app keeps only replies played on the default output (``_reply_player`` in
    ``ui/app.py``). System audio hears them when it is the default system audio (the
    default output's monitor or loopback), not a picked device such as a headset's
    monitor; a microphone hears them from the speakers, unless echo cancellation is off
    (headphones)."""
    mic = source in ("mic", "both") and audio.echo_cancel
    return mic or (source in ("system", "both") and _default_system(audio, devices))


def _default_system(audio: AudioSettings, devices: Sequence[AudioDevice]) -> bool:
    """``audio`` captures the default system audio, left unset or picked by name."""
    if not audio.system_device:
        return True
    try:
        return find_device(devices, "system", audio.system_device) == find_device(
            devices, "system")
    except DeviceNotFound:  # opening the capture says so
        return False


__all__ = ["PlayedAudio", "ReplyCanceller", "hears_replies", "reply_filter"]
