"""The app's endpoint manager: the lifecycle runner plus what keeps the bill safe.

On top of :class:`~captioner.cloud.runner.LifecycleRunner` (deploy, follow, stop):
only this installation's endpoints are adopted at start-up, idle-stopped or stopped at
quit (others' are listed in ``others``, never touched); the server-side backstop of a
serving endpoint is renewed while the app is in use; at start-up every region used
before is searched for orphans, and configs and models left by a fired backstop are
removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from captioner.cloud.cost_guard import IdleAction, QuitPrompt, Upkeep, quit_prompt
from captioner.cloud.deploy_plan import KINDS, Kind, validate_lifetime
from captioner.cloud.endpoints import StopReport
from captioner.cloud.errors import DeployConfigError, translate
from captioner.cloud.hooks import Hook
from captioner.cloud.inventory import ManagedEndpoint
from captioner.cloud.lifecycle import SERVING, Event, KindStatus, Phase, PreparedDeploy
from captioner.cloud.orphans import Orphans, RegionControlFactory
from captioner.cloud.preflight import Preflight
from captioner.cloud.runner import (
    AWS_FAILURES,
    ControlFactory,
    DeploySettingsSource,
    LifecycleRunner,
)
from captioner.cloud.status import EndpointSnapshot, Stage

log = logging.getLogger(__name__)

KIND_LABELS: dict[Kind, str] = {"stt": "Voxtral", "tts": "Qwen3-TTS"}
RENEW_INTERVAL = 600.0  # s between backstop renewals while the app is in use
SEARCH_RETRY = (30.0, 600.0)  # s: first wait and cap before searching again after a failure


def readable(exc: BaseException, operation: str = "") -> str:
    """The user-facing text of any AWS failure (typed errors verbatim)."""
    return str(translate(exc, operation))


class EndpointManager(LifecycleRunner):
    """Start/stop/follow this installation's endpoints for the GUI; one instance per app."""

    def __init__(
        self,
        control_factory: ControlFactory,
        deploy_settings: DeploySettingsSource,
        *,
        region_control: RegionControlFactory | None = None,
        idle_minutes: float = 30,
        tick_interval: float | None = 5.0,
        renew_interval: float = RENEW_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        **options: Any,
    ) -> None:
        """``options`` are :class:`LifecycleRunner`'s (intervals, clock, …)."""
        super().__init__(control_factory, deploy_settings, **options)
        self.tick_interval = tick_interval
        self._upkeep: dict[Kind, Upkeep] = {
            k: Upkeep(idle_minutes, renew_interval, clock) for k in KINDS}
        self._ticker: asyncio.Task[None] | None = None
        self._away = Orphans(self._work, self.control, region_control,
                             stop_poll_interval=self.stop_poll_interval, failures=AWS_FAILURES)
        self.idle_warning: Hook = Hook()  # (kind, seconds left | None = withdrawn)
        self.auto_stopped: Hook = Hook()  # (kind)
        self.orphans_changed: Hook = self._away.orphans_changed  # (list[EndpointSnapshot])
        self.others_changed: Hook = self._away.others_changed  # (list[ManagedEndpoint])
        self._search_failure: Exception | None = None  # the last search for ours failed
        self._search_attempts = 0
        self._search_retry: asyncio.Task[Any] | None = None

    def _on_ready(self, kind: Kind) -> None:
        self._upkeep[kind].serving()
        self._ensure_ticker()

    async def close(self, *extra: asyncio.Task[Any]) -> None:
        """Cancel and await every task (endpoints keep running: see quit_decision)."""
        ticker = [self._ticker] if self._ticker is not None else []
        await super().close(*extra, *ticker)

    def reset_control(self) -> None:
        """Settings (region, profile, keys) changed: build new controls next time, and
        search again at once if the last search failed (the change may have mended it)."""
        super().reset_control()
        self._away.reset()
        if self._search_failure is not None:
            self._search_attempts = 0
            self._search_again(0.0)

    # ---- reading -----------------------------------------------------------------------

    @property
    def orphans(self) -> list[EndpointSnapshot]:
        """Our endpoints that bill but are not attached, in any region (start-up prompt)."""
        return self._away.orphans

    def orphan_region(self, name: str) -> str | None:
        return self._away.region_of(name)

    @property
    def others(self) -> list[ManagedEndpoint]:
        """Captioner endpoints of other installations (colleagues): shown, never touched."""
        return self._away.others

    # ---- stop, re-attach and orphans -----------------------------------------------------

    async def stop_all(self) -> list[str]:
        """Stop both kinds and every orphan of ours (the quit prompt's "Stop"); returns why
        each stop that failed did (readable), for the question asked next."""
        *statuses, orphan_errors = await asyncio.gather(
            *(self.stop(k) for k in KINDS if self.status(k).name), self.stop_orphans())
        failed = [(s.name, s.stop_failed.cause if s.stop_failed else s.failure)
                  for s in statuses if s.name and s.failure]
        return [f"{name}: {cause}" for name, cause in failed] + orphan_errors

    async def force_stop(self, name: str, typed_name: str) -> StopReport:
        """Delete an endpoint not provably ours once the user typed its name (see Orphans)."""
        return await self._away.force_stop(name, typed_name)

    async def attach(self) -> list[EndpointSnapshot]:
        """Find this installation's endpoints by tag, in every region used before.

        Called at start-up: the newest endpoint per kind in the current region, left
        running by the previous run, is followed again (its captions switch to it once
        it serves); the rest are orphans the app offers to stop. Other installations'
        endpoints are only listed (``others``). Configs and models whose endpoint is gone
        (the backstop fired) are removed.
        """
        try:
            control = await self.control()
            found = await self._away.search(self.state_path)
        except AWS_FAILURES as exc:
            failure = translate(exc, "looking for running endpoints")
            self._search_failure = failure
            for kind in KINDS:
                if self.status(kind).name is None and self._life[kind].allowed(Event.FAIL):
                    self._move(kind, Event.FAIL, failure=failure, step="")
            first, cap = SEARCH_RETRY
            self._search_again(min(first * 2 ** self._search_attempts, cap))
            self._search_attempts += 1
            return []
        self._searched()
        orphans: list[tuple[str, EndpointSnapshot]] = []
        for region, snaps in found.mine.items():
            for snap in reversed(snaps):  # newest first
                kind = snap.kind
                if region == control.region and kind is not None and self.status(kind).can_start:
                    self._adopt(kind, snap, found.expires_at.get(snap.name))
                else:
                    orphans.insert(0, (region, snap))
        self._away.found(orphans, found.others)
        return self.orphans

    def _search_again(self, delay: float) -> None:
        """A failed search is made again later: an endpoint left running is otherwise
        never adopted, idle-stopped or offered as an orphan while it bills."""
        if self._search_retry is not None and not self._search_retry.done():
            self._search_retry.cancel()

        async def later() -> None:
            await asyncio.sleep(delay)
            await self.attach()

        self._search_retry = self.spawn(later())

    def _searched(self) -> None:
        """The search worked: the failure it showed is over."""
        failure, self._search_failure, self._search_attempts = self._search_failure, None, 0
        for kind in KINDS:
            status = self.status(kind)
            if (failure is not None and status.failure is failure and status.name is None
                    and self._life[kind].allowed(Event.FORGET)):
                self._move(kind, Event.FORGET, failure=None, step="")

    async def prepare(self, kind: Kind, checked: Preflight | None = None
                      ) -> PreparedDeploy | None:
        """As the runner's, but after a failed search for endpoints left running, that
        search comes first: starting blind could add a second billing endpoint."""
        if self._search_failure is not None and self.status(kind).can_start:
            await self.attach()
            if self._search_failure is not None:
                return None  # the kind shows why (ERROR); Start stays possible to retry
        return await super().prepare(kind, checked)

    def _adopt(self, kind: Kind, snap: EndpointSnapshot, expires_at: datetime | None) -> None:
        log.info("= re-attached to %s endpoint %s (%s)", kind, snap.name, snap.status)
        event = Event.ADOPT_SERVING if snap.stage in SERVING else Event.ADOPT_STARTING
        self._move(kind, event, name=snap.name, snapshot=snap, failure=None, step="",
                   expires_at=expires_at)
        if expires_at is None:  # made before backstops existed, or it was removed: arm one
            self.spawn(self._renew(kind))
        self._begin_follow(kind, snap.name)

    async def stop_orphans(self) -> list[str]:
        """Stop every orphan (in its region); returns the errors (readable), the rest go."""
        return await self._away.stop_all()

    # ---- backstop renewal --------------------------------------------------------------

    def _lifetime(self, kind: Kind) -> timedelta | None:
        try:
            return validate_lifetime(self._deploy_settings(kind).max_lifetime_hours)
        except DeployConfigError as exc:
            log.warning("! %s", exc)
            return None

    async def _renew(self, kind: Kind) -> None:
        """Move the server-side deletion of our serving endpoint to now + max lifetime."""
        status, lifetime = self.status(kind), self._lifetime(kind)
        if status.name is None or lifetime is None:
            return
        self._upkeep[kind].renewing()
        try:
            control = await self.control()
            expires_at = await self._run(None, control.renew_backstop, status.name, lifetime)
        except AWS_FAILURES as exc:
            self._update(kind, failure=translate(exc, "renewing the lifetime limit"))
            return
        if self.status(kind).name == status.name:
            self._update(kind, expires_at=expires_at)

    # ---- idle auto-stop ----------------------------------------------------------------

    def activity(self, kind: Kind = "stt") -> None:
        """A caption arrived (stt) or a reply was spoken (tts): restart the idle countdown."""
        if self._upkeep[kind].used():
            self.idle_warning.emit(kind, None)

    def cancel_idle_stop(self, kind: Kind) -> None:
        """The user pressed Cancel on the warning: a full idle period starts again."""
        self._upkeep[kind].keep()
        self.idle_warning.emit(kind, None)

    def set_idle_minutes(self, idle_minutes: float) -> None:
        """The user changed the idle period in Settings: running countdowns follow it now."""
        for kind, upkeep in self._upkeep.items():
            if upkeep.set_idle_minutes(idle_minutes):
                self.idle_warning.emit(kind, None)

    def idle_seconds_left(self, kind: Kind) -> float | None:
        if self.status(kind).phase is not Phase.READY:
            return None
        return self._upkeep[kind].idle.seconds_left()

    def tick(self) -> None:
        """Advance the idle guards and renew backstops (the ticker calls this; tests too)."""
        for kind in KINDS:
            if self.status(kind).phase is not Phase.READY:
                continue
            action = self._upkeep[kind].tick()
            if action is IdleAction.WARN:
                self.idle_warning.emit(kind, self._upkeep[kind].idle.seconds_left())
            elif action is IdleAction.STOP:
                log.info("= %s endpoint idle: stopping it", kind)
                self.idle_warning.emit(kind, None)
                self.auto_stopped.emit(kind)
                self.spawn(self.stop(kind))
            elif action is IdleAction.RENEW:
                self.spawn(self._renew(kind))

    def _ensure_ticker(self) -> None:
        if self.tick_interval is None or (self._ticker is not None and not self._ticker.done()):
            return
        with contextlib.suppress(RuntimeError):  # no running loop: ticks come from the caller
            self._ticker = asyncio.get_running_loop().create_task(self._tick_loop())

    async def _tick_loop(self) -> None:
        assert self.tick_interval is not None
        while any(self.status(k).phase is Phase.READY for k in KINDS):
            await asyncio.sleep(self.tick_interval)
            self.tick()

    # ---- quitting ----------------------------------------------------------------------

    def quit_decision(self) -> QuitPrompt | None:
        """What to ask on quit: None when nothing of ours bills, else names and cost."""
        snaps: list[EndpointSnapshot] = []
        for kind in KINDS:
            status = self.status(kind)
            if status.name is None:
                continue
            snap = status.snapshot
            if snap is None or snap.name != status.name or snap.stage is Stage.GONE:
                snap = EndpointSnapshot(
                    name=status.name, stage=Stage.CREATING, status="Creating",
                    observed_at=self.now(), kind=kind, hourly_price=self.hourly_cost(kind))
            snaps.append(snap)
        return quit_prompt([*snaps, *self.orphans])


__all__ = ["EndpointManager", "Hook", "KindStatus", "Phase", "PreparedDeploy", "readable"]
