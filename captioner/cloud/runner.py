"""The thin runner of the endpoint lifecycle: does the boto3 work, reports outcomes as
lifecycle events (asyncio).

The decisions about phases live in :mod:`captioner.cloud.lifecycle` (a table, no I/O);
this runner does the blocking boto3 calls in its own executor and tells observers
through plain callbacks (no Qt here), so the same object runs in tests and headless.
It announces ``sagemaker://NAME?region=…`` when an endpoint serves and ``None`` when it
stops serving: captions then fall back to the embedded engine, replies to the voice
endpoint in the settings or the computer's voice.

A stop that fails is retried with capped backoff and stays visible
(``KindStatus.stop_failed``) until it succeeds; a refused one (not ours) is not retried.
The deploy call in flight is awaited before a stop starts, so a stop never races a
half-made stack. AWS failures stay typed (``KindStatus.failure``) up to the UI.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from captioner.aws import errors as aws_errors
from captioner.cloud.deploy_plan import KINDS, Kind
from captioner.cloud.endpoints import EndpointControl
from captioner.cloud.errors import (
    DeployConfigError,
    DeployFailedError,
    EndpointControlError,
    EndpointGoneError,
    StopFailedError,
    translate,
)
from captioner.cloud.hooks import Hook
from captioner.cloud.lifecycle import SERVING, Event, KindStatus, Lifecycle, Phase, PreparedDeploy
from captioner.cloud.preflight import Preflight, require
from captioner.cloud.state import remember_region
from captioner.cloud.status import EndpointSnapshot, Stage
from captioner.cloud.tasks import Tasks
from captioner.settings import EndpointDeploySettings

log = logging.getLogger(__name__)

ControlFactory = Callable[[], EndpointControl]  # blocking (reads AWS config); may raise
DeploySettingsSource = Callable[[Kind], EndpointDeploySettings]
PreflightSource = Callable[[Kind], Preflight]  # blocking: the preflight of the saved plan
T = TypeVar("T")

# What AWS work can fail with; anything else is a bug and is left to propagate.
AWS_FAILURES = (EndpointControlError, BotoCoreError, ClientError, aws_errors.CredentialsError)

STOP_RETRY_FIRST = 15.0  # s before the first retry of a failed stop
STOP_RETRY_CAP = 300.0  # s; retries never wait longer than this


class LifecycleRunner:
    """Deploy, follow and stop one endpoint per kind; the app's manager builds on it."""

    def __init__(
        self,
        control_factory: ControlFactory,
        deploy_settings: DeploySettingsSource,
        *,
        poll_interval: float = 15.0,
        monitor_interval: float = 60.0,
        stop_poll_interval: float = 10.0,
        stop_retry: tuple[float, float] = (STOP_RETRY_FIRST, STOP_RETRY_CAP),
        state_path: Path | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        executor: ThreadPoolExecutor | None = None,
        preflight: PreflightSource | None = None,
    ) -> None:
        self._control_factory = control_factory
        self._preflight = preflight  # the deploy gate (captioner.cloud.preflight)
        self._deploy_settings = deploy_settings
        self.poll_interval = poll_interval
        self.monitor_interval = monitor_interval
        self.stop_poll_interval = stop_poll_interval
        self.stop_retry = stop_retry
        self.state_path = state_path
        self.now = now
        self._work = Tasks(executor)
        self._run = self._work.run
        self._control: EndpointControl | None = None
        self._life: dict[Kind, Lifecycle] = {k: Lifecycle(k) for k in KINDS}
        self._follow: dict[Kind, asyncio.Task[None]] = {}
        self._starting: dict[Kind, asyncio.Task[Any]] = {}
        self._retrying: dict[Kind, asyncio.Task[Any]] = {}
        self._urls: dict[Kind, str | None] = dict.fromkeys(KINDS)
        self._stop_attempts: dict[Kind, int] = dict.fromkeys(KINDS, 0)
        self._waiters: dict[Kind, list[asyncio.Future[KindStatus]]] = {k: [] for k in KINDS}
        self.status_changed: Hook = Hook()  # (KindStatus)
        self.endpoint_changed: Hook = Hook()  # captions: (sagemaker://… | None)
        self.replies_endpoint_changed: Hook = Hook()  # spoken replies: the same

    def _on_ready(self, kind: Kind) -> None:
        """The endpoint of ``kind`` started serving (the app's upkeep starts here)."""

    # ---- reading -----------------------------------------------------------------------

    def status(self, kind: Kind) -> KindStatus:
        return self._life[kind].status

    def stop_failures(self) -> list[StopFailedError]:
        """Stops that failed and are being retried: they may still bill (tray, overlay)."""
        return [f for f in (self.status(k).stop_failed for k in KINDS) if f is not None]

    @property
    def endpoint(self) -> str | None:
        """The STT endpoint string while it serves, else None."""
        return self._urls["stt"]

    @property
    def region(self) -> str | None:
        return self._control.region if self._control is not None else None

    def uptime(self, kind: Kind) -> float | None:
        """Seconds since the endpoint was created, counted to now (the live figure)."""
        status = self.status(kind)
        snap = status.snapshot
        if snap is None or snap.created_at is None or status.name is None:
            return None
        return max(0.0, (self.now() - snap.created_at).total_seconds())

    def hourly_cost(self, kind: Kind) -> float | None:
        status = self.status(kind)
        if status.snapshot is not None and status.snapshot.hourly_price is not None:
            return status.snapshot.hourly_price
        return status.estimate.high if status.estimate is not None else None

    def cost_so_far(self, kind: Kind) -> float | None:
        uptime, hourly = self.uptime(kind), self.hourly_cost(kind)
        if uptime is None or hourly is None:
            return None
        return hourly * uptime / 3600.0

    def endpoint_string(self, name: str) -> str:
        """Without a profile: captions and replies sign with the credentials the settings
        name when they connect, so a change of profile or keys applies at once."""
        return f"sagemaker://{name}?region={self.region}"

    # ---- tasks -------------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run ``coro`` as a task the manager keeps and cancels on close (for UI slots)."""
        return self._work.spawn(coro)

    async def close(self, *extra: asyncio.Task[Any]) -> None:
        """Cancel and await every task (endpoints keep running: see quit_decision)."""
        await self._work.close(*self._follow.values(), *self._retrying.values(), *extra)

    async def control(self) -> EndpointControl:
        """The control plane, built once (off the loop: boto3 reads config files)."""
        if self._control is None:
            try:
                self._control = await self._run(None, self._control_factory)
            except AWS_FAILURES as exc:
                raise translate(exc) from exc
        return self._control

    def reset_control(self) -> None:
        """Settings (region, profile, keys) changed: build a new control next time."""
        self._control = None

    # ---- state -------------------------------------------------------------------------

    def _move(self, kind: Kind, event: Event, **changes: Any) -> KindStatus:
        old = self.status(kind)
        return self._publish(old, self._life[kind].move(event, **changes))

    def _update(self, kind: Kind, **changes: Any) -> KindStatus:
        old = self.status(kind)
        return self._publish(old, self._life[kind].update(**changes))

    def _publish(self, old: KindStatus, new: KindStatus) -> KindStatus:
        kind = new.kind
        if new.phase is Phase.READY and old.phase is not Phase.READY:
            self._on_ready(kind)
        if new.failure is not None and new.failure is not old.failure:
            log.warning("! %s endpoint: %s", kind, new.failure)
        self.status_changed.emit(new)
        if not new.phase.busy:
            waiters, self._waiters[kind] = self._waiters[kind], []
            for future in waiters:
                if not future.done():
                    future.set_result(new)
        url = self.endpoint_string(new.name) if new.phase is Phase.READY and new.name else None
        if url != self._urls[kind]:
            self._urls[kind] = url
            if kind == "stt":
                log.info("= captions endpoint: %s", url or "none (fall back to embedded)")
                self.endpoint_changed.emit(url)
            else:
                log.info("= replies endpoint: %s", url or "none (fall back to the settings)")
                self.replies_endpoint_changed.emit(url)
        return new

    def _show_snapshot(self, kind: Kind, snap: EndpointSnapshot) -> None:
        if self.status(kind).name != snap.name:
            return  # a late snapshot of an endpoint we no longer follow
        self._update(kind, snapshot=snap)

    # ---- start -------------------------------------------------------------------------

    async def prepare(self, kind: Kind, checked: Preflight | None = None
                      ) -> PreparedDeploy | None:
        """Validate settings into a plan and estimate its cost; None (status ERROR) on error.

        ``checked`` is a preflight the caller has just run and shown (the GUI's Start):
        the gate holds it to the same rule instead of running every check again."""
        if not self.status(kind).can_start:
            log.info("! %s endpoint already %s; not starting another", kind,
                     self.status(kind).phase.value)
            return None
        self._move(kind, Event.PREPARE, step="Checking settings and prices", failure=None,
                   snapshot=None, estimate=None, expires_at=None)
        settings = self._deploy_settings(kind)
        try:
            control = await self.control()
            plan = await self._run(None, control.plan, kind, settings)  # asks STS who we are
            estimate = control.estimate(plan)
            if self._preflight is not None:
                if checked is None or (checked.kind, checked.region) != (kind, plan.region):
                    self._update(kind, step="Running the preflight checks")
                    checked = await self._run(kind, self._preflight, kind)
                require(checked)
        except AWS_FAILURES as exc:
            if self.status(kind).phase is Phase.PREPARING:
                self._move(kind, Event.FAIL, step="", failure=translate(exc, "prepare"))
            return None
        if self.status(kind).phase is not Phase.PREPARING:
            return None  # stopped meanwhile
        self._move(kind, Event.PREPARED, step="")
        return PreparedDeploy(kind, plan, estimate)

    def cancel_prepared(self, kind: Kind) -> None:
        """The user declined the cost: nothing was created."""
        log.info("= %s endpoint: deploy declined; nothing created", kind)

    async def start(self, kind: Kind, prepared: PreparedDeploy | None = None) -> KindStatus:
        """Deploy (the confirmed plan, or a fresh one) and follow it until it serves or fails."""
        if prepared is None:
            prepared = await self.prepare(kind)
            if prepared is None:
                return self.status(kind)
        if not self.status(kind).can_start:
            return self.status(kind)
        task = asyncio.current_task()
        if task is not None:
            self._starting[kind] = task
        try:
            await self._deploy(kind, prepared)
            status = self.status(kind)
            if status.phase is Phase.STARTING and status.name:
                settled = self._settled(kind)
                self._begin_follow(kind, status.name)
                await settled
        finally:
            if self._starting.get(kind) is task:
                del self._starting[kind]
        return self.status(kind)

    def _settled(self, kind: Kind) -> asyncio.Future[KindStatus]:
        """Resolved when ``kind`` next leaves the busy phases (READY, OFF or ERROR)."""
        future: asyncio.Future[KindStatus] = asyncio.get_running_loop().create_future()
        self._waiters[kind].append(future)
        return future

    async def _deploy(self, kind: Kind, prepared: PreparedDeploy) -> None:
        plan = prepared.plan
        self._move(kind, Event.DEPLOY, name=plan.name, failure=None, snapshot=None,
                   estimate=prepared.estimate, expires_at=plan.expires_at,
                   step=f"Creating {plan.name}")
        on_step = self._work.threadsafe(lambda step: self._step(kind, plan.name, step))
        try:
            control = await self.control()
            await self._run(None, remember_region, control.region, self.state_path)
            await self._run(kind, control.deploy, plan, on_step=on_step)
        except AWS_FAILURES as exc:
            failure = translate(exc, "deploy")
            # deploy() removed what it had made, or named the leftovers in the message.
            self._move(kind, Event.FAIL, step="", failure=failure,
                       name=plan.name if failure.leftovers else None)
            return
        self._move(kind, Event.CREATED, step="")

    def _step(self, kind: Kind, name: str, step: str) -> None:
        status = self.status(kind)
        if status.name == name and status.phase in (Phase.DEPLOYING, Phase.STOPPING):
            self._update(kind, step=step[:1].upper() + step[1:])

    # ---- following ---------------------------------------------------------------------

    def _begin_follow(self, kind: Kind, name: str) -> None:
        task = asyncio.get_running_loop().create_task(self._follow_endpoint(kind, name))
        self._follow[kind] = task

        def done(t: asyncio.Task[None]) -> None:
            if self._follow.get(kind) is t:
                del self._follow[kind]

        task.add_done_callback(done)

    async def _follow_endpoint(self, kind: Kind, name: str) -> None:
        """Creating → InService/Failed/gone, then a slow check that it still serves.

        A look that fails (network, throttling, expired credentials) is shown and the
        next comes on time, whatever the phase: the endpoint may be billing, and only
        this task carries it to READY, where the idle stop and the backstop's renewal
        act on it. Only Failed or gone ends the watch."""
        serving = self.status(kind).phase is Phase.READY
        control: EndpointControl | None = None
        while True:
            if serving:
                await asyncio.sleep(self.monitor_interval)
            try:
                control = control or await self.control()
                snap = await self._run(None, control.snapshot, name)
            except AWS_FAILURES as exc:  # a blip: say so, look again
                self._update(kind, failure=translate(exc, "status"))
                if not serving:
                    await asyncio.sleep(self.poll_interval)
                continue
            if serving and snap.stage in SERVING:
                self._update(kind, snapshot=snap, failure=None)
            elif serving or snap.stage.terminal or snap.stage in (Stage.DELETING,
                                                                  Stage.UPDATING):
                if not await self._settle(kind, control, snap):
                    return
                serving = True
            else:  # still Creating
                self._show_snapshot(kind, snap)
                if self.status(kind).name == name:
                    self._update(kind, failure=None)
                await asyncio.sleep(self.poll_interval)

    async def _settle(self, kind: Kind, control: EndpointControl, snap: EndpointSnapshot
                      ) -> bool:
        """Act on a snapshot that ended the wait; True when the endpoint serves."""
        self._show_snapshot(kind, snap)
        if snap.stage in SERVING:
            if self.status(kind).phase is not Phase.READY:
                self._move(kind, Event.SERVING, failure=None)
            return True
        if snap.stage is Stage.FAILED:
            failure = DeployFailedError(snap.name, snap.failure_reason or "no reason given")
            await self._delete(kind, control, snap.name, keep=failure, step="Cleaning up")
            return False
        # Gone or Deleting: removed behind our back (console, a teammate, the backstop).
        gone = EndpointGoneError(snap.name)
        if snap.stage is Stage.DELETING:
            await self._delete(kind, control, snap.name, keep=gone)
        else:
            self._move(kind, Event.GONE, name=None, failure=gone, step="", expires_at=None)
        return False

    # ---- stop --------------------------------------------------------------------------

    async def stop(self, kind: Kind) -> KindStatus:
        """Delete endpoint, config and model (and the backstop); safe to repeat after an error."""
        retry = self._retrying.pop(kind, None)
        if retry is not None and retry is not asyncio.current_task():
            retry.cancel()
        starting = self._starting.get(kind)
        if starting is not None and starting is not asyncio.current_task():
            starting.cancel()
        await self._work.settle_inflight(kind)  # a create call in a thread: let it finish
        if starting is not None:
            with contextlib.suppress(asyncio.CancelledError, *AWS_FAILURES):
                await starting
        await self._cancel_follow(kind)
        status = self.status(kind)
        if status.name is None:
            if self._life[kind].allowed(Event.FORGET):
                self._move(kind, Event.FORGET, step="", snapshot=None, estimate=None)
            return self.status(kind)
        if status.phase is Phase.STOPPING:
            return status  # another stop is at work
        try:
            control = await self.control()
        except EndpointControlError as exc:
            self._stop_failed(kind, status.name, exc)
            return self.status(kind)
        await self._delete(kind, control, status.name)
        return self.status(kind)

    async def _delete(self, kind: Kind, control: EndpointControl, name: str, *,
                      keep: EndpointControlError | None = None, step: str = "") -> None:
        self._move(kind, Event.STOP, step=step or f"Deleting {name}", failure=keep)
        on_snapshot = self._work.threadsafe(lambda snap: self._show_snapshot(kind, snap))
        try:
            await self._run(kind, control.stop, name, on_snapshot=on_snapshot,
                            poll_interval=self.stop_poll_interval)
        except AWS_FAILURES as exc:
            self._stop_failed(kind, name, translate(exc, "stop"))
            return
        self._stop_attempts[kind] = 0
        self._move(kind, Event.STOPPED, name=None, snapshot=None, step="", estimate=None,
                   failure=keep, expires_at=None)

    def _stop_failed(self, kind: Kind, name: str, cause: EndpointControlError) -> None:
        """Say so (it may still bill) and try again later, unless it was refused."""
        self._stop_attempts[kind] += 1
        attempts = self._stop_attempts[kind]
        first, cap = self.stop_retry
        retry_in = None if isinstance(cause, DeployConfigError) else min(
            first * 2 ** (attempts - 1), cap)
        self._move(kind, Event.FAIL, step="",
                   failure=StopFailedError(name, cause, attempts, retry_in))
        if retry_in is not None:
            self._retrying[kind] = self.spawn(self._retry_stop(kind, name, retry_in))

    async def _retry_stop(self, kind: Kind, name: str, delay: float) -> None:
        await asyncio.sleep(delay)
        if self.status(kind).name == name and self.status(kind).stop_failed is not None:
            log.info("= retrying the stop of %s", name)
            await self.stop(kind)

    async def _cancel_follow(self, kind: Kind) -> None:
        task = self._follow.pop(kind, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, *AWS_FAILURES):
                await task
