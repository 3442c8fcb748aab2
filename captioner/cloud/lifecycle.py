"""The life of one endpoint kind as plain state: phases, the events that move them, and
what the UI reads (sans-I/O: no boto3, no asyncio, no Qt).

:class:`Lifecycle` holds one :class:`KindStatus`. Its phase changes only through
:meth:`Lifecycle.move`, which looks ``(phase, event)`` up in :data:`TRANSITIONS` and
raises :class:`IllegalTransition` (a caller bug) for anything else; the other fields
(progress step, snapshot, failure, …) change through :meth:`Lifecycle.update`, which
may not touch the phase. The runner (:mod:`captioner.cloud.manager`) does the AWS
calls and reports their outcome as events.

Phases and events::

    OFF ─prepare─▶ PREPARING ─prepared─▶ OFF ─deploy─▶ DEPLOYING ─created─▶ STARTING
    STARTING ─serving─▶ READY          OFF/ERROR ─adopt─▶ STARTING | READY (found at start)
    DEPLOYING/STARTING/READY/ERROR ─stop─▶ STOPPING ─stopped─▶ OFF
    STARTING/READY ─gone─▶ OFF (deleted behind our back)
    every phase but READY→… ─fail─▶ ERROR   ERROR ─prepare/deploy─▶ a new try (nothing in AWS)

ERROR keeps the endpoint name while something may still exist in AWS, so Stop (idempotent
and resumable) stays available; a failed stop is ERROR with a :class:`StopFailedError`
that the runner retries.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any

from captioner.cloud.deploy_plan import DeployPlan, Kind, lifetime_text
from captioner.cloud.errors import EndpointControlError, StopFailedError
from captioner.cloud.pricing import CostEstimate, format_cost
from captioner.cloud.status import EndpointSnapshot, Stage
from captioner.errors import CaptionerError

log = logging.getLogger(__name__)

SERVING = (Stage.IN_SERVICE, Stage.UPDATING)  # Updating (e.g. autoscaling) still serves


class Phase(enum.Enum):
    OFF = "off"
    PREPARING = "preparing"  # building the plan and the cost estimate
    DEPLOYING = "deploying"  # backstop, create_model / create_endpoint_config / create_endpoint
    STARTING = "starting"  # endpoint Creating
    READY = "ready"  # InService (or Updating)
    STOPPING = "stopping"
    ERROR = "error"

    @property
    def busy(self) -> bool:
        return self in (Phase.PREPARING, Phase.DEPLOYING, Phase.STARTING, Phase.STOPPING)


class Event(enum.Enum):
    PREPARE = "prepare"
    PREPARED = "prepared"  # the plan and estimate are ready (or the user declined)
    DEPLOY = "deploy"
    CREATED = "created"  # the create calls succeeded; AWS is starting it
    SERVING = "serving"
    ADOPT_STARTING = "adopt starting"  # found at start-up, still Creating
    ADOPT_SERVING = "adopt serving"  # found at start-up, serving
    STOP = "stop"
    STOPPED = "stopped"
    GONE = "gone"
    FAIL = "fail"
    FORGET = "forget"  # stop asked with nothing in AWS: back to OFF


_BUSY_OR_UP = (Phase.DEPLOYING, Phase.STARTING, Phase.READY, Phase.ERROR)

# (phase, event) → next phase. Anything missing is illegal.
TRANSITIONS: dict[tuple[Phase, Event], Phase] = {
    (Phase.OFF, Event.PREPARE): Phase.PREPARING,
    (Phase.ERROR, Event.PREPARE): Phase.PREPARING,
    (Phase.PREPARING, Event.PREPARED): Phase.OFF,
    (Phase.PREPARING, Event.FAIL): Phase.ERROR,
    (Phase.OFF, Event.DEPLOY): Phase.DEPLOYING,
    (Phase.ERROR, Event.DEPLOY): Phase.DEPLOYING,
    (Phase.DEPLOYING, Event.CREATED): Phase.STARTING,
    (Phase.DEPLOYING, Event.FAIL): Phase.ERROR,
    (Phase.STARTING, Event.SERVING): Phase.READY,
    (Phase.STARTING, Event.FAIL): Phase.ERROR,
    (Phase.READY, Event.FAIL): Phase.ERROR,
    (Phase.STARTING, Event.GONE): Phase.OFF,
    (Phase.READY, Event.GONE): Phase.OFF,
    (Phase.OFF, Event.ADOPT_STARTING): Phase.STARTING,
    (Phase.ERROR, Event.ADOPT_STARTING): Phase.STARTING,
    (Phase.OFF, Event.ADOPT_SERVING): Phase.READY,
    (Phase.ERROR, Event.ADOPT_SERVING): Phase.READY,
    **{(phase, Event.STOP): Phase.STOPPING for phase in _BUSY_OR_UP},
    (Phase.STOPPING, Event.STOPPED): Phase.OFF,
    (Phase.STOPPING, Event.FAIL): Phase.ERROR,
    (Phase.OFF, Event.FAIL): Phase.ERROR,  # e.g. the search at start-up failed
    (Phase.ERROR, Event.FAIL): Phase.ERROR,  # e.g. a retried stop failed again
    (Phase.OFF, Event.FORGET): Phase.OFF,
    (Phase.ERROR, Event.FORGET): Phase.OFF,
}


class IllegalTransition(CaptionerError, RuntimeError):
    """The runner asked for a move the table does not allow (a bug, not an AWS fault)."""


@dataclass(frozen=True, slots=True)
class KindStatus:
    """What the Endpoints page and the tray show for one kind."""

    kind: Kind
    phase: Phase = Phase.OFF
    name: str | None = None  # set whenever something may exist in AWS
    snapshot: EndpointSnapshot | None = None
    step: str = ""  # "Creating model captioner-stt-…", "Deleting …"
    failure: EndpointControlError | None = None  # typed, for the UI to inspect
    estimate: CostEstimate | None = None
    expires_at: datetime | None = None  # when the server-side backstop deletes it

    @property
    def error(self) -> str | None:
        """The failure as a sentence (None when there is none)."""
        return str(self.failure) if self.failure is not None else None

    @property
    def stop_failed(self) -> StopFailedError | None:
        """Set while a stop keeps failing (it is retried): the tray and overlay show it."""
        return self.failure if isinstance(self.failure, StopFailedError) else None

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
        if self.phase is Phase.ERROR and self.stop_failed is not None:
            return "Stop failed — retrying"
        if self.snapshot is not None and self.snapshot.status:
            return self.snapshot.status
        return _PHASE_TEXT[self.phase]


_PHASE_TEXT = {Phase.OFF: "Not running", Phase.PREPARING: "Preparing",
               Phase.DEPLOYING: "Creating", Phase.STARTING: "Creating",
               Phase.READY: "InService", Phase.STOPPING: "Stopping", Phase.ERROR: "Error"}
_FIELDS = frozenset(f.name for f in fields(KindStatus)) - {"kind", "phase"}


class Lifecycle:
    """One kind's status; ``move`` is the one place its phase changes."""

    def __init__(self, kind: Kind) -> None:
        self.status = KindStatus(kind)

    def allowed(self, event: Event) -> bool:
        return (self.status.phase, event) in TRANSITIONS

    def move(self, event: Event, **changes: Any) -> KindStatus:
        """Apply ``event`` (and field changes) or raise IllegalTransition; returns the status."""
        old = self.status
        nxt = TRANSITIONS.get((old.phase, event))
        if nxt is None:
            raise IllegalTransition(
                f"{old.kind} endpoint: {event.value!r} is not allowed while {old.phase.value}")
        self.status = replace(old, phase=nxt, **self._checked(changes))
        if nxt is not old.phase:
            log.info("= %s endpoint: %s → %s (%s)%s", old.kind, old.phase.value, nxt.value,
                     event.value, f" {self.status.name}" if self.status.name else "")
        return self.status

    def update(self, **changes: Any) -> KindStatus:
        """Change what is shown (step, snapshot, failure, …) without changing the phase."""
        self.status = replace(self.status, **self._checked(changes))
        return self.status

    @staticmethod
    def _checked(changes: dict[str, Any]) -> dict[str, Any]:
        unknown = set(changes) - _FIELDS
        if unknown:
            raise IllegalTransition(f"not a status field (or the phase): {sorted(unknown)}")
        return changes


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

    def lifetime_text(self) -> str:
        """When AWS deletes it on its own (the backstop), for the confirmation."""
        return lifetime_text(self.plan)
