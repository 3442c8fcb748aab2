"""Adaptive playout rate: play a reply a little slower while its jitter margin is low.

A reply starts with a small margin (the audio buffered beyond the point the device
will ask for next) so that the first sample plays soon. Network jitter or a server
slightly slower than the device's clock then eats that margin and the ring runs dry.
WebRTC's NetEq answers with time-stretching, AirPlay and VoIP clients with a small
change of the resampling ratio; this is the latter:

- :class:`PlayoutController` turns the margin the player measures at each arrival
  into a stretch (0 = nominal; 0.03 = 3 % more output samples, i.e. 3 % slower and
  lower). It never plays faster than the server sent: audio buffered beyond the
  target costs latency that nothing hears, while a faster pace changes the voice.
- :class:`Stretcher` applies it to the stream at the device's rate, by cubic
  (Catmull-Rom) interpolation, gliding between ratios over each chunk. At stretch 0
  it copies samples exactly. It holds back 2 samples where soxr's variable-rate mode
  holds back 240 input samples (10 ms at 24 kHz), which would push the first sample
  of a reply one device period (30 ms) later.

Plain code: no I/O, no clock of its own (times are passed in).
"""

from __future__ import annotations

from collections import deque

import numpy as np


class PlayoutController:
    """Margin (ms) in, stretch out; bounded, proportional and slew-limited.

    The margin fed in is the lowest seen over the last ``window_s`` (a late chunk
    counts until it is clearly past), so the stretch answers the worst recent
    jitter. Below ``target_ms`` the wanted stretch grows by ``max_stretch`` per
    ``full_ms`` of shortfall, up to ``max_stretch``; at or above it, 0. The stretch
    moves towards the wanted value by at most ``slew_per_s`` per second, so pitch
    glides rather than jumps. With a steady drift *d* (server slower than the device
    by the fraction *d*) it settles at stretch *d*, ``d / max_stretch · full_ms``
    below the target.
    """

    def __init__(self, *, target_ms: float = 30.0, max_stretch: float = 0.03,
                 full_ms: float = 15.0, window_s: float = 0.5,
                 slew_per_s: float = 0.1) -> None:
        if max_stretch < 0 or full_ms <= 0 or window_s <= 0 or slew_per_s <= 0:
            raise ValueError("max_stretch must be ≥ 0; full_ms, window_s, slew_per_s > 0")
        self.target_ms = target_ms
        self.max_stretch = max_stretch
        self.full_ms = full_ms
        self.window_s = window_s
        self.slew_per_s = slew_per_s
        self.stretch = 0.0
        self._seen: deque[tuple[float, float]] = deque()
        self._t: float | None = None

    def reset(self) -> None:
        """A new reply: nominal rate, no history."""
        self.stretch = 0.0
        self._seen.clear()
        self._t = None

    def update(self, now: float, margin_ms: float | None = None) -> float:
        """Record a margin measured at ``now`` (None: not playing) and return the stretch.

        Without a measurement in the window the stretch holds where it is.
        """
        seen = self._seen
        if margin_ms is not None:
            seen.append((now, margin_ms))
        while seen and seen[0][0] < now - self.window_s:
            seen.popleft()
        wanted = self.stretch
        if seen:
            short = self.target_ms - min(m for _, m in seen)
            wanted = min(self.max_stretch, max(0.0, short * self.max_stretch / self.full_ms))
        step = self.slew_per_s * max(0.0, now - self._t) if self._t is not None else 0.0
        self._t = now
        self.stretch += min(step, max(-step, wanted - self.stretch))
        return self.stretch


class Stretcher:
    """Resamples a mono float32 stream by 1 + stretch, the ratio gliding per chunk.

    Each :meth:`process` glides linearly from the last ratio to the new one over the
    chunk's output, so a change of stretch is a short pitch glide, never a step.
    Catmull-Rom interpolation is exact at integer positions and, for speech at
    44.1/48 kHz (energy mostly below 4 kHz), adds errors far below -60 dB.
    """

    def __init__(self) -> None:
        self._buf = np.zeros(1, np.float32)  # one sample of context before the stream
        self._pos = 1.0  # where in _buf the next output sample lies
        self._step = 1.0  # input samples per output sample, as last used

    @property
    def held_back(self) -> float:
        """Input samples received but not yet turned into output (about 2)."""
        return len(self._buf) - self._pos

    def process(self, x: np.ndarray, stretch: float = 0.0, *, last: bool = False) -> np.ndarray:
        """Output for ``x`` (and the held-back samples); ``last`` flushes the stream's end."""
        parts = [self._buf, np.asarray(x, np.float32)]
        if last:
            parts.append(np.zeros(2, np.float32))
        buf = np.concatenate(parts)
        end = len(buf) - 2  # positions before this have the two samples after them
        s0, s1 = self._step, 1.0 / (1.0 + stretch)
        room = end - self._pos
        if room <= 0:
            self._buf = buf
            return np.zeros(0, np.float32)
        glide = room / (0.5 * (s0 + s1))  # outputs over which the ratio moves
        n = int(room / min(s0, s1)) + 2
        steps = s0 + (s1 - s0) * np.minimum(np.arange(n) / glide, 1.0)
        pos = self._pos + np.concatenate(([0.0], np.cumsum(steps[:-1])))
        m = int(np.searchsorted(pos, end))
        p = pos[:m]
        i = p.astype(np.intp)
        t = (p - i).astype(np.float32)
        xm, x0, x1, x2 = buf[i - 1], buf[i], buf[i + 1], buf[i + 2]
        y = x0 + 0.5 * t * (x1 - xm + t * (2 * xm - 5 * x0 + 4 * x1 - x2
                                           + t * (3 * (x0 - x1) + x2 - xm)))
        nxt = pos[m]
        self._step = float(steps[m - 1]) if m else s0
        if last:
            self._buf, self._pos = np.zeros(1, np.float32), 1.0
        else:
            keep = int(nxt) - 1
            self._buf, self._pos = buf[keep:], float(nxt - keep)
        return y.astype(np.float32, copy=False)
