"""Waiting on an endpoint's status (CLI, stop); the app's own watch is in runner.py.

Both poll ``EndpointControl.snapshot`` (describe_endpoint) at an interval: SageMaker
has no push notifications, and botocore's waiters neither report progress nor let a
UI cancel them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from captioner.cloud.errors import DeployFailedError, EndpointGoneError, WaitTimeoutError
from captioner.cloud.status import EndpointSnapshot, Stage

if TYPE_CHECKING:
    from captioner.cloud.endpoints import EndpointControl

log = logging.getLogger(__name__)

Until = Callable[[EndpointSnapshot], bool]
OnSnapshot = Callable[[EndpointSnapshot], None]


def wait_for(
    control: EndpointControl,
    name: str,
    until: Until,
    *,
    on_snapshot: OnSnapshot | None = None,
    poll_interval: float = 15.0,
    timeout: float | None = None,
) -> EndpointSnapshot:
    """Poll until ``until(snapshot)``; returns that snapshot. Uses the control's clock/sleep."""
    deadline = None if timeout is None else control.monotonic() + timeout
    last_stage: Stage | None = None
    while True:
        snap = control.snapshot(name)
        if snap.stage is not last_stage:
            log.info("= %s: %s", name, snap.status or snap.stage.value)
            last_stage = snap.stage
        if on_snapshot:
            on_snapshot(snap)
        if until(snap):
            return snap
        if deadline is not None and control.monotonic() >= deadline:
            raise WaitTimeoutError(
                f"Gave up waiting for {name} after {timeout:.0f} s; it is {snap.stage.value}."
            )
        control.sleep(poll_interval)


def wait_in_service(
    control: EndpointControl,
    name: str,
    *,
    on_snapshot: OnSnapshot | None = None,
    poll_interval: float = 15.0,
    timeout: float | None = 3600.0,
) -> EndpointSnapshot:
    """Wait for InService; DeployFailedError (FailureReason verbatim) or EndpointGoneError."""
    snap = wait_for(
        control, name, lambda s: s.stage.terminal or s.stage is Stage.DELETING,
        on_snapshot=on_snapshot, poll_interval=poll_interval, timeout=timeout,
    )
    return check_in_service(snap)


def check_in_service(snap: EndpointSnapshot) -> EndpointSnapshot:
    if snap.stage is Stage.IN_SERVICE:
        return snap
    if snap.stage is Stage.FAILED:
        raise DeployFailedError(snap.name, snap.failure_reason or "no reason given by AWS")
    raise EndpointGoneError(snap.name)
