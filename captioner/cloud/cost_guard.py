"""Keeping GPU cost under control: idle auto-stop and the quit prompt (plain logic, no I/O).

``IdleAutoStop`` is driven by its caller: report ``activity()`` when a caption arrives
and call ``tick()`` periodically (a QTimer in the GUI, a loop in the CLI); it answers
WARN once, one minute before the deadline, then STOP once. The caller shows the
warning (with a Cancel that calls ``cancel()``) and performs the stop itself. Time
comes from an injected monotonic clock so tests run on a fake one.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from captioner.cloud.pricing import format_cost
from captioner.cloud.status import EndpointSnapshot

log = logging.getLogger(__name__)


class IdleAction(enum.Enum):
    NONE = "none"
    WARN = "warn"  # show "stopping in N s — Cancel"
    STOP = "stop"  # stop the endpoint now
    RENEW = "renew"  # in use: push the server-side backstop on


class IdleState(enum.Enum):
    DISABLED = "disabled"
    WATCHING = "watching"
    WARNED = "warned"
    STOPPED = "stopped"  # STOP was returned; inert until reset()


class IdleAutoStop:
    """Stop an endpoint after ``idle_minutes`` without captions (0 disables it)."""

    def __init__(
        self,
        idle_minutes: float = 30,
        *,
        warn_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if idle_minutes < 0 or warn_seconds < 0:
            raise ValueError("idle_minutes and warn_seconds must not be negative")
        self.idle_seconds = idle_minutes * 60.0
        self._warn_setting = warn_seconds
        self.warn_seconds = min(warn_seconds, self.idle_seconds)
        self._clock = clock
        self._last_activity = clock()
        self._state = IdleState.WATCHING if self.idle_seconds > 0 else IdleState.DISABLED

    @property
    def state(self) -> IdleState:
        return self._state

    def _set(self, state: IdleState) -> None:
        if state is not self._state:
            log.info("= idle auto-stop: %s → %s", self._state.value, state.value)
            self._state = state

    def activity(self) -> None:
        """A caption arrived (or the user acted): restart the countdown, withdraw a warning."""
        self._last_activity = self._clock()
        if self._state is IdleState.WARNED:
            self._set(IdleState.WATCHING)

    def cancel(self) -> None:
        """The user cancelled the pending stop: a full new idle period starts now."""
        self._last_activity = self._clock()
        if self._state in (IdleState.WARNED, IdleState.STOPPED):
            self._set(IdleState.WATCHING)

    def reset(self) -> None:
        """Start over (e.g. a new endpoint was attached)."""
        self._last_activity = self._clock()
        self._set(IdleState.WATCHING if self.idle_seconds > 0 else IdleState.DISABLED)

    def disable(self) -> None:
        self._set(IdleState.DISABLED)

    def set_minutes(self, idle_minutes: float) -> None:
        """The user changed the idle period: it applies to the running countdown at once
        (a shorter period may stop sooner; a warning that no longer applies is withdrawn)."""
        if idle_minutes < 0:
            raise ValueError("idle_minutes must not be negative")
        self.idle_seconds = idle_minutes * 60.0
        self.warn_seconds = min(self._warn_setting, self.idle_seconds)
        if self._state is IdleState.STOPPED:
            return
        if self.idle_seconds <= 0:
            self._set(IdleState.DISABLED)
        elif self._state is IdleState.DISABLED:
            self.reset()
        elif self._state is IdleState.WARNED:
            left = self.seconds_left()
            if left is not None and left > self.warn_seconds:
                self._set(IdleState.WATCHING)

    def seconds_left(self) -> float | None:
        """Seconds until the stop, None when disabled or already stopped."""
        if self._state in (IdleState.DISABLED, IdleState.STOPPED):
            return None
        return max(0.0, self.idle_seconds - (self._clock() - self._last_activity))

    def tick(self) -> IdleAction:
        left = self.seconds_left()
        if left is None:
            return IdleAction.NONE
        if left <= 0:
            self._set(IdleState.STOPPED)
            return IdleAction.STOP
        if left <= self.warn_seconds and self._state is IdleState.WATCHING:
            self._set(IdleState.WARNED)
            return IdleAction.WARN
        return IdleAction.NONE


class Upkeep:
    """What a serving endpoint needs now (no I/O): the idle auto-stop, and a renewal of its
    server-side backstop every ``renew_interval`` seconds while it is being used."""

    def __init__(self, idle_minutes: float, renew_interval: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.idle = IdleAutoStop(idle_minutes, clock=clock)
        self.renew_interval = renew_interval
        self._clock = clock
        self._renewed_at = clock()
        self._used = False

    def serving(self) -> None:
        """The endpoint started serving (deployed or adopted): full idle period, renew later."""
        self.idle.reset()
        self._renewed_at = self._clock()

    def used(self) -> bool:
        """A caption or a reply: restart the idle countdown; True if a warning is withdrawn."""
        warned = self.idle.state is IdleState.WARNED
        self.idle.activity()
        self._used = True
        return warned

    def keep(self) -> None:
        """The user chose to keep it running (Cancel on the warning; counts as use)."""
        self.idle.cancel()
        self._used = True

    def set_idle_minutes(self, idle_minutes: float) -> bool:
        """Apply a new idle period now; True if a pending warning is withdrawn."""
        warned = self.idle.state is IdleState.WARNED
        self.idle.set_minutes(idle_minutes)
        return warned and self.idle.state is not IdleState.WARNED

    def renewing(self) -> None:
        self._renewed_at = self._clock()
        self._used = False

    def tick(self) -> IdleAction:
        action = self.idle.tick()
        if action is not IdleAction.NONE:
            return action
        if self._used and self._clock() - self._renewed_at >= self.renew_interval:
            return IdleAction.RENEW
        return IdleAction.NONE


@dataclass(frozen=True, slots=True)
class QuitPrompt:
    """What to ask when the user quits while endpoints still bill."""

    endpoints: tuple[EndpointSnapshot, ...]
    hourly_cost: float | None  # None when some price is unknown
    currency: str
    message: str


def quit_prompt(snapshots: Iterable[EndpointSnapshot]) -> QuitPrompt | None:
    """None when nothing managed is running; otherwise the endpoints and their hourly cost."""
    running = tuple(s for s in snapshots if s.stage.billing)
    if not running:
        return None
    prices = [s.hourly_price for s in running]
    total = None if any(p is None for p in prices) else sum(p for p in prices if p is not None)
    currency = running[0].currency
    names = ", ".join(
        f"{s.name} ({s.instance_type or 'instance pending'})" for s in running
    )
    cost = (f"about {format_cost(total, currency)}/hour" if total is not None
            else "an unknown amount")
    noun = "endpoint is" if len(running) == 1 else "endpoints are"
    message = (
        f"{len(running)} SageMaker {noun} still running and costing {cost}: {names}. "
        "Stop before quitting?"
    )
    return QuitPrompt(running, total, currency, message)
