"""The app's endpoint manager: start, follow and stop the STT and TTS endpoints (asyncio).

The UI observes it through plain callbacks (no Qt here), so the same object runs in
tests and headless. Per kind (``stt`` | ``tts``) it keeps one :class:`KindStatus`;
every change goes through ``_set``, which logs it, notifies observers and, for STT,
announces the ``sagemaker://NAME?region=…`` endpoint when the endpoint serves and
``None`` when it stops serving (the app then falls back to the embedded engine).

Life of one kind::

    OFF ─prepare─▶ PREPARING ─start─▶ DEPLOYING ─▶ STARTING ─▶ READY ─stop─▶ STOPPING ─▶ OFF
                                 │            │           │                     │
                                 └────────────┴───────────┴─▶ ERROR ◀───────────┘

ERROR keeps the endpoint name when something may still exist in AWS, so Stop (which
is idempotent and resumable) stays available. Every blocking boto3 call runs in the
manager's own executor; the deploy call in flight is awaited before a stop starts,
so a stop never races a half-made stack.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import logging
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError

from captioner.cloud.cost_guard import IdleAction, IdleAutoStop, IdleState, QuitPrompt, quit_prompt
from captioner.cloud.deploy_plan import KINDS, DeployPlan, Kind
from captioner.cloud.endpoints import CostEstimate, EndpointControl, ManagedEndpoint, StopReport
from captioner.cloud.errors import (
    DeployFailedError,
    EndpointControlError,
    EndpointGoneError,
    translate,
)
from captioner.cloud.preflight import Preflight, require
from captioner.cloud.pricing import format_cost
from captioner.cloud.status import EndpointSnapshot, Stage
from captioner.cloud.watch import watch
from captioner.settings import EndpointDeploySettings

log = logging.getLogger(__name__)

ControlFactory = Callable[[], EndpointControl]  # blocking (reads AWS config); may raise
DeploySettingsSource = Callable[[Kind], EndpointDeploySettings]
PreflightSource = Callable[[Kind], Preflight]  # blocking: the preflight of the saved plan
T = TypeVar("T")

KIND_LABELS: dict[Kind, str] = {"stt": "Voxtral", "tts": "Qwen3-TTS"}
SERVING = (Stage.IN_SERVICE, Stage.UPDATING)  # Updating (e.g. autoscaling) still serves


class Phase(enum.Enum):
    OFF = "off"
    PREPARING = "preparing"  # building the plan and the cost estimate
    DEPLOYING = "deploying"  # create_model / create_endpoint_config / create_endpoint
    STARTING = "starting"  # endpoint Creating
    READY = "ready"  # InService (or Updating)
    STOPPING = "stopping"
    ERROR = "error"

    @property
    def busy(self) -> bool:
        return self in (Phase.PREPARING, Phase.DEPLOYING, Phase.STARTING, Phase.STOPPING)


@dataclass(frozen=True, slots=True)
class KindStatus:
    """What the Endpoints page shows for one kind."""

    kind: Kind
    phase: Phase = Phase.OFF
    name: str | None = None  # set whenever something may exist in AWS
    snapshot: EndpointSnapshot | None = None
    step: str = ""  # "creating model captioner-stt-…", "deleting endpoint …"
    error: str | None = None  # verbatim, readable
    estimate: CostEstimate | None = None

    @property
    def can_start(self) -> bool:
        return self.name is None and self.phase in (Phase.OFF, Phase.ERROR)

    @property
    def can_stop(self) -> bool:
        return self.name is not None and self.phase is not Phase.STOPPING

    @property
    def stage_text(self) -> str:
        """The progress line: "Creating model …", "Creating", "InService", "Deleting"."""
        if self.phase in (Phase.PREPARING, Phase.DEPLOYING, Phase.STOPPING) and self.step:
            return self.step
        if self.snapshot is not None and self.snapshot.status:
            return self.snapshot.status
        return {Phase.OFF: "Not running", Phase.PREPARING: "Preparing",
                Phase.DEPLOYING: "Creating", Phase.STARTING: "Creating",
                Phase.READY: "InService", Phase.STOPPING: "Stopping",
                Phase.ERROR: "Error"}[self.phase]


@dataclass(frozen=True, slots=True)
class PreparedDeploy:
    """A validated plan and its hourly estimate, shown to the user before anything is made."""

    kind: Kind
    plan: DeployPlan
    estimate: CostEstimate

    def cost_text(self) -> str:
        e = self.estimate
        if e.low is None or e.high is None:
            return "unknown (no price known for " + ", ".join(self.plan.instance_types) + ")"
        if e.low == e.high:
            text = f"about {format_cost(e.low, e.currency)}/hour"
        else:
            text = (f"about {format_cost(e.low, e.currency)}–{format_cost(e.high, e.currency)}"
                    "/hour, by the instance type that wins")
        if e.unknown_types:
            text += f" (no price known for {', '.join(e.unknown_types)})"
        return text


class Hook:
    """A list of callbacks; one that raises is logged and does not stop the others."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[..., None]] = []

    def connect(self, callback: Callable[..., None]) -> None:
        self._callbacks.append(callback)

    def disconnect(self, callback: Callable[..., None]) -> None:
        with contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    def emit(self, *args: Any) -> None:
        for callback in list(self._callbacks):
            try:
                callback(*args)
            except Exception:  # an observer's bug must not break the manager
                log.exception("! endpoint observer %r failed", callback)


def readable(exc: BaseException, operation: str = "") -> str:
    """The user-facing text of any failure (typed errors verbatim)."""
    if isinstance(exc, EndpointControlError):
        return str(exc)
    if isinstance(exc, BotoCoreError):
        return str(translate(exc, operation))
    return f"Unexpected error{f' ({operation})' if operation else ''}: {exc}"


class EndpointManager:
    """Start/stop/follow Captioner's endpoints for the GUI; one instance per app."""

    def __init__(
        self,
        control_factory: ControlFactory,
        deploy_settings: DeploySettingsSource,
        *,
        idle_minutes: float = 30,
        profile: str | None = None,
        poll_interval: float = 15.0,
        monitor_interval: float = 60.0,
        stop_poll_interval: float = 10.0,
        tick_interval: float | None = 5.0,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        executor: ThreadPoolExecutor | None = None,
        preflight: PreflightSource | None = None,
    ) -> None:
        self._control_factory = control_factory
        self._preflight = preflight  # the deploy gate (captioner.cloud.preflight)
        self._deploy_settings = deploy_settings
        self.profile = profile
        self.poll_interval = poll_interval
        self.monitor_interval = monitor_interval
        self.stop_poll_interval = stop_poll_interval
        self.tick_interval = tick_interval
        self.now = now
        self._executor = executor or ThreadPoolExecutor(4, thread_name_prefix="endpoints")
        self._control: EndpointControl | None = None
        self._status: dict[Kind, KindStatus] = {k: KindStatus(k) for k in KINDS}
        self._guards: dict[Kind, IdleAutoStop] = {
            k: IdleAutoStop(idle_minutes, clock=clock) for k in KINDS}
        self._follow: dict[Kind, asyncio.Task[None]] = {}
        self._starting: dict[Kind, asyncio.Task[Any]] = {}
        self._inflight: dict[Kind, Future[Any]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._ticker: asyncio.Task[None] | None = None
        self._url: str | None = None
        self._orphans: list[EndpointSnapshot] = []
        self._others: list[ManagedEndpoint] = []
        self._waiters: dict[Kind, list[asyncio.Future[KindStatus]]] = {k: [] for k in KINDS}
        self.status_changed: Hook = Hook()  # (KindStatus)
        self.endpoint_changed: Hook = Hook()  # (sagemaker://… | None)
        self.idle_warning: Hook = Hook()  # (kind, seconds left | None = withdrawn)
        self.auto_stopped: Hook = Hook()  # (kind)
        self.orphans_changed: Hook = Hook()  # (list[EndpointSnapshot])
        self.others_changed: Hook = Hook()  # (list[ManagedEndpoint]): not ours, read-only

    # ---- reading -----------------------------------------------------------------------

    def status(self, kind: Kind) -> KindStatus:
        return self._status[kind]

    @property
    def orphans(self) -> list[EndpointSnapshot]:
        """Managed endpoints that bill but are not attached (for the start-up prompt)."""
        return list(self._orphans)

    @property
    def others(self) -> list[ManagedEndpoint]:
        """Captioner endpoints of other installations (colleagues): shown, never touched."""
        return list(self._others)

    @property
    def endpoint(self) -> str | None:
        """The STT endpoint string while it serves, else None."""
        return self._url

    @property
    def region(self) -> str | None:
        return self._control.region if self._control is not None else None

    def uptime(self, kind: Kind) -> float | None:
        """Seconds since the endpoint was created, counted to now (the live figure)."""
        snap = self._status[kind].snapshot
        if snap is None or snap.created_at is None or self._status[kind].name is None:
            return None
        return max(0.0, (self.now() - snap.created_at).total_seconds())

    def hourly_cost(self, kind: Kind) -> float | None:
        status = self._status[kind]
        if status.snapshot is not None and status.snapshot.hourly_price is not None:
            return status.snapshot.hourly_price
        return status.estimate.high if status.estimate is not None else None

    def cost_so_far(self, kind: Kind) -> float | None:
        uptime, hourly = self.uptime(kind), self.hourly_cost(kind)
        if uptime is None or hourly is None:
            return None
        return hourly * uptime / 3600.0

    def endpoint_string(self, name: str) -> str:
        text = f"sagemaker://{name}?region={self.region}"
        return text + (f"&profile={self.profile}" if self.profile else "")

    # ---- tasks -------------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run ``coro`` as a task the manager keeps and cancels on close (for UI slots)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("! endpoint task failed", exc_info=task.exception())

    async def close(self) -> None:
        """Cancel and await every task (endpoints keep running: see quit_decision)."""
        tasks = [*self._tasks, *self._follow.values()]
        if self._ticker is not None:
            tasks.append(self._ticker)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def _run(self, kind: Kind | None, fn: Callable[..., T], *args: Any, **kwargs: Any
                   ) -> T:
        """Run a blocking call in the executor; the call in flight per kind is remembered."""
        future = self._executor.submit(functools.partial(fn, *args, **kwargs))
        if kind is not None:
            self._inflight[kind] = future
        try:
            return await asyncio.wrap_future(future)
        finally:
            if kind is not None and self._inflight.get(kind) is future:
                del self._inflight[kind]

    def _threadsafe(self, fn: Callable[..., None]) -> Callable[..., None]:
        loop = asyncio.get_running_loop()
        return lambda *args: loop.call_soon_threadsafe(fn, *args)

    async def control(self) -> EndpointControl:
        """The control plane, built once (off the loop: boto3 reads config files)."""
        if self._control is None:
            try:
                self._control = await self._run(None, self._control_factory)
            except EndpointControlError:
                raise
            except Exception as exc:
                raise translate(exc) from exc
        return self._control

    def reset_control(self) -> None:
        """Settings (region, profile, keys) changed: build a new control next time."""
        self._control = None

    # ---- state -------------------------------------------------------------------------

    def _set(self, kind: Kind, **changes: Any) -> KindStatus:
        old = self._status[kind]
        new = replace(old, **changes)
        self._status[kind] = new
        if new.phase is not old.phase:
            log.info("= %s endpoint: %s → %s%s", kind, old.phase.value, new.phase.value,
                     f" ({new.name})" if new.name else "")
            if new.phase is Phase.READY:
                self._guards[kind].reset()
                self._ensure_ticker()
        if new.error and new.error != old.error:
            log.warning("! %s endpoint: %s", kind, new.error)
        self.status_changed.emit(new)
        if not new.phase.busy:
            waiters, self._waiters[kind] = self._waiters[kind], []
            for future in waiters:
                if not future.done():
                    future.set_result(new)
        if kind == "stt":
            url = (self.endpoint_string(new.name)
                   if new.phase is Phase.READY and new.name else None)
            if url != self._url:
                self._url = url
                log.info("= captions endpoint: %s", url or "none (fall back to embedded)")
                self.endpoint_changed.emit(url)
        return new

    def _show_snapshot(self, kind: Kind, snap: EndpointSnapshot) -> None:
        if self._status[kind].name != snap.name:
            return  # a late snapshot of an endpoint we no longer follow
        self._set(kind, snapshot=snap)

    # ---- start -------------------------------------------------------------------------

    async def prepare(self, kind: Kind) -> PreparedDeploy | None:
        """Validate settings into a plan and estimate its cost; None (status ERROR) on error."""
        if not self._status[kind].can_start:
            log.info("! %s endpoint already %s; not starting another", kind,
                     self._status[kind].phase.value)
            return None
        self._set(kind, phase=Phase.PREPARING, step="Checking settings and prices",
                  error=None, snapshot=None, estimate=None)
        try:
            control = await self.control()
            plan = control.plan(kind, self._deploy_settings(kind))
            estimate = control.estimate(plan)
            if self._preflight is not None:
                self._set(kind, step="Running the preflight checks")
                require(await self._run(kind, self._preflight, kind))
        except Exception as exc:
            self._set(kind, phase=Phase.ERROR, step="", error=readable(exc, "prepare"))
            return None
        self._set(kind, phase=Phase.OFF, step="")
        return PreparedDeploy(kind, plan, estimate)

    def cancel_prepared(self, kind: Kind) -> None:
        """The user declined the cost: nothing was created."""
        log.info("= %s endpoint: deploy declined; nothing created", kind)

    async def start(self, kind: Kind, prepared: PreparedDeploy | None = None) -> KindStatus:
        """Deploy (the confirmed plan, or a fresh one) and follow it until it serves or fails."""
        if prepared is None:
            prepared = await self.prepare(kind)
            if prepared is None:
                return self._status[kind]
        if not self._status[kind].can_start:
            return self._status[kind]
        task = asyncio.current_task()
        if task is not None:
            self._starting[kind] = task
        try:
            await self._deploy(kind, prepared)
            status = self._status[kind]
            if status.phase is Phase.STARTING and status.name:
                settled = self._settled(kind)
                self._begin_follow(kind, status.name)
                await settled
        finally:
            if self._starting.get(kind) is task:
                del self._starting[kind]
        return self._status[kind]

    def _settled(self, kind: Kind) -> asyncio.Future[KindStatus]:
        """Resolved when ``kind`` next leaves the busy phases (READY, OFF or ERROR)."""
        future: asyncio.Future[KindStatus] = asyncio.get_running_loop().create_future()
        self._waiters[kind].append(future)
        return future

    async def _deploy(self, kind: Kind, prepared: PreparedDeploy) -> None:
        plan = prepared.plan
        self._set(kind, phase=Phase.DEPLOYING, name=plan.name, error=None, snapshot=None,
                  estimate=prepared.estimate, step=f"Creating {plan.name}")
        on_step = self._threadsafe(lambda step: self._step(kind, plan.name, step))
        try:
            control = await self.control()
            await self._run(kind, control.deploy, plan, on_step=on_step)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # deploy() removed what it had made, or named the leftovers in the message.
            leftovers = getattr(exc, "leftovers", ())
            self._set(kind, phase=Phase.ERROR, step="", error=readable(exc, "deploy"),
                      name=plan.name if leftovers else None)
            return
        self._set(kind, phase=Phase.STARTING, step="")

    def _step(self, kind: Kind, name: str, step: str) -> None:
        status = self._status[kind]
        if status.name == name and status.phase in (Phase.DEPLOYING, Phase.STOPPING):
            self._set(kind, step=step[:1].upper() + step[1:])

    # ---- following ---------------------------------------------------------------------

    def _begin_follow(self, kind: Kind, name: str) -> None:
        task = asyncio.get_running_loop().create_task(self._follow_endpoint(kind, name))
        self._follow[kind] = task

        def done(t: asyncio.Task[None]) -> None:
            if self._follow.get(kind) is t:
                del self._follow[kind]

        task.add_done_callback(done)

    async def _follow_endpoint(self, kind: Kind, name: str) -> None:
        """Creating → InService/Failed/gone, then a slow check that it still serves."""
        try:
            control = await self.control()
            if self._status[kind].phase is not Phase.READY:
                async for snap in watch(
                    control, name, interval=self.poll_interval, executor=self._executor,
                    until=lambda s: s.stage.terminal or s.stage in (Stage.DELETING,
                                                                     Stage.UPDATING),
                ):
                    self._show_snapshot(kind, snap)
                if not await self._settle(kind, control, snap):
                    return
            while True:
                await asyncio.sleep(self.monitor_interval)
                try:
                    snap = await self._run(None, control.snapshot, name)
                except Exception as exc:  # a blip (network, …): keep serving, say so
                    self._set(kind, error=f"Could not check the endpoint: {readable(exc)}")
                    continue
                if snap.stage in SERVING:
                    self._set(kind, snapshot=snap, error=None)
                elif not await self._settle(kind, control, snap):
                    return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # The endpoint may still be billing: keep its name so Stop stays available.
            self._set(kind, phase=Phase.ERROR, error=readable(exc, "status"))

    async def _settle(self, kind: Kind, control: EndpointControl, snap: EndpointSnapshot
                      ) -> bool:
        """Act on a snapshot that ended the wait; True when the endpoint serves."""
        self._show_snapshot(kind, snap)
        if snap.stage in SERVING:
            self._set(kind, phase=Phase.READY, error=None)
            return True
        if snap.stage is Stage.FAILED:
            error = str(DeployFailedError(snap.name, snap.failure_reason or "no reason given"))
            self._set(kind, phase=Phase.STOPPING, error=error, step="Cleaning up")
            await self._delete(kind, control, snap.name, keep_error=error)
            return False
        # Gone or Deleting: removed behind our back (console, another app, a teammate).
        error = str(EndpointGoneError(snap.name))
        if snap.stage is Stage.DELETING:
            await self._delete(kind, control, snap.name, keep_error=error)
        else:
            self._set(kind, phase=Phase.OFF, name=None, error=error, step="")
        return False

    # ---- stop --------------------------------------------------------------------------

    async def stop(self, kind: Kind) -> KindStatus:
        """Delete endpoint, config and model; safe to repeat after an error."""
        status = self._status[kind]
        starting = self._starting.get(kind)
        if starting is not None and starting is not asyncio.current_task():
            starting.cancel()
        inflight = self._inflight.get(kind)
        if inflight is not None:  # a create call in a thread: let it finish (or be cancelled)
            await asyncio.wait([asyncio.wrap_future(inflight)])  # its outcome is not ours
        if starting is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await starting
        await self._cancel_follow(kind)
        status = self._status[kind]
        if status.name is None:
            self._set(kind, phase=Phase.OFF, step="", snapshot=None, estimate=None)
            return self._status[kind]
        try:
            control = await self.control()
        except Exception as exc:
            self._set(kind, phase=Phase.ERROR, error=readable(exc, "stop"))
            return self._status[kind]
        await self._delete(kind, control, status.name)
        return self._status[kind]

    async def _delete(self, kind: Kind, control: EndpointControl, name: str, *,
                      keep_error: str | None = None) -> None:
        self._set(kind, phase=Phase.STOPPING, step=f"Deleting {name}", error=keep_error)
        on_snapshot = self._threadsafe(lambda snap: self._show_snapshot(kind, snap))
        try:
            await self._run(kind, control.stop, name, on_snapshot=on_snapshot,
                            poll_interval=self.stop_poll_interval)
        except Exception as exc:
            self._set(kind, phase=Phase.ERROR, step="", error=readable(exc, "stop"))
            return
        self._set(kind, phase=Phase.OFF, name=None, snapshot=None, step="",
                  estimate=None, error=keep_error)

    async def _cancel_follow(self, kind: Kind) -> None:
        task = self._follow.pop(kind, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def stop_all(self) -> None:
        """Stop both kinds and every orphan (the quit prompt's "Stop")."""
        await asyncio.gather(*(self.stop(k) for k in KINDS if self._status[k].name),
                             self.stop_orphans())

    # ---- re-attach and orphans ---------------------------------------------------------

    async def attach(self) -> list[EndpointSnapshot]:
        """Find this installation's endpoints by tag: follow the newest per kind, return the rest.

        Called at start-up: an endpoint left running by the previous run is picked up
        again (its captions switch to it once it serves); extra ones are orphans that
        the app offers to stop. Other installations' endpoints are only listed
        (``others``): never adopted, never stopped.
        """
        try:
            control = await self.control()
            everyone = await self._run(None, control.find_managed_endpoints)
            found = [e for e in everyone if e.mine]
            self._others = [e for e in everyone if not e.mine]
            self.others_changed.emit(self.others)
            extra: list[str] = []
            for endpoint in reversed(found):  # newest first
                kind = endpoint.kind
                if not endpoint.stage.billing:
                    continue
                if kind is not None and self._status[kind].can_start:
                    snap = await self._run(None, control.snapshot, endpoint.name)
                    if snap.stage.billing:
                        self._adopt(kind, snap)
                        continue
                if kind is None or self._status[kind].name != endpoint.name:
                    extra.append(endpoint.name)
            orphans = [await self._run(None, control.snapshot, n) for n in reversed(extra)]
        except Exception as exc:
            message = f"Could not look for running endpoints: {readable(exc)}"
            for kind in KINDS:
                if self._status[kind].name is None:
                    self._set(kind, phase=Phase.ERROR, error=message)
            return []
        self._orphans = [s for s in orphans if s.stage.billing]
        self.orphans_changed.emit(self.orphans)
        return self.orphans

    def _adopt(self, kind: Kind, snap: EndpointSnapshot) -> None:
        log.info("= re-attached to %s endpoint %s (%s)", kind, snap.name, snap.status)
        phase = Phase.READY if snap.stage in SERVING else Phase.STARTING
        self._set(kind, phase=phase, name=snap.name, snapshot=snap, error=None, step="")
        self._begin_follow(kind, snap.name)

    async def force_stop(self, name: str, typed_name: str) -> StopReport:
        """Delete an endpoint that is not provably ours, once the user typed its name.

        Raises NotOwnedError when ``typed_name`` is not ``name`` (nothing is deleted) and
        the typed errors of the stop itself; the list of others is refreshed after.
        """
        control = await self.control()
        report = await self._run(None, control.stop, name, confirm_name=typed_name,
                                 poll_interval=self.stop_poll_interval)
        self._others = [e for e in self._others if e.name != name]
        self.others_changed.emit(self.others)
        return report

    async def stop_orphans(self) -> list[str]:
        """Stop every orphan; returns the errors (readable), the rest are removed."""
        errors: list[str] = []
        if not self._orphans:
            return errors
        control = await self.control()
        for snap in list(self._orphans):
            try:
                await self._run(None, control.stop, snap.name,
                                poll_interval=self.stop_poll_interval)
            except Exception as exc:
                errors.append(f"{snap.name}: {readable(exc, 'stop')}")
                continue
            self._orphans = [o for o in self._orphans if o.name != snap.name]
        self.orphans_changed.emit(self.orphans)
        return errors

    # ---- idle auto-stop ----------------------------------------------------------------

    def activity(self, kind: Kind = "stt") -> None:
        """A caption arrived (stt) or a reply was spoken (tts): restart the idle countdown."""
        guard = self._guards[kind]
        warned = guard.state is IdleState.WARNED
        guard.activity()
        if warned:
            self.idle_warning.emit(kind, None)

    def cancel_idle_stop(self, kind: Kind) -> None:
        """The user pressed Cancel on the warning: a full idle period starts again."""
        self._guards[kind].cancel()
        self.idle_warning.emit(kind, None)

    def idle_seconds_left(self, kind: Kind) -> float | None:
        if self._status[kind].phase is not Phase.READY:
            return None
        return self._guards[kind].seconds_left()

    def tick(self) -> None:
        """Advance the idle guards (the manager's ticker calls this; tests call it directly)."""
        for kind in KINDS:
            if self._status[kind].phase is not Phase.READY:
                continue
            action = self._guards[kind].tick()
            if action is IdleAction.WARN:
                self.idle_warning.emit(kind, self._guards[kind].seconds_left())
            elif action is IdleAction.STOP:
                log.info("= %s endpoint idle: stopping it", kind)
                self.idle_warning.emit(kind, None)
                self.auto_stopped.emit(kind)
                self.spawn(self.stop(kind))

    def _ensure_ticker(self) -> None:
        if self.tick_interval is None or (self._ticker is not None and not self._ticker.done()):
            return
        with contextlib.suppress(RuntimeError):  # no running loop: ticks come from the caller
            self._ticker = asyncio.get_running_loop().create_task(self._tick_loop())

    async def _tick_loop(self) -> None:
        assert self.tick_interval is not None
        while any(s.phase is Phase.READY for s in self._status.values()):
            await asyncio.sleep(self.tick_interval)
            self.tick()

    # ---- quitting ----------------------------------------------------------------------

    def quit_decision(self) -> QuitPrompt | None:
        """What to ask on quit: None when nothing of ours bills, else names and cost."""
        snaps: list[EndpointSnapshot] = []
        for status in self._status.values():
            if status.name is None:
                continue
            snap = status.snapshot
            if snap is None or snap.name != status.name or snap.stage is Stage.GONE:
                snap = EndpointSnapshot(
                    name=status.name, stage=Stage.CREATING, status="Creating",
                    observed_at=self.now(), kind=status.kind,
                    hourly_price=self.hourly_cost(status.kind))
            snaps.append(snap)
        return quit_prompt([*snaps, *self._orphans])


__all__ = ["EndpointManager", "Hook", "KindStatus", "Phase", "PreparedDeploy", "readable"]
