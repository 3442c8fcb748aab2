"""The endpoint lifecycle table: legal moves change the phase, illegal ones raise, and the
module stays free of I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import captioner.cloud.lifecycle as lifecycle_module
from captioner.cloud.errors import AccessDeniedError, NetworkError, StopFailedError
from captioner.cloud.lifecycle import TRANSITIONS, Event, IllegalTransition, Lifecycle, Phase


def walk(life: Lifecycle, *events: Event) -> list[Phase]:
    return [life.move(event).phase for event in events]


def test_a_deploy_from_prepare_to_stopped() -> None:
    life = Lifecycle("stt")
    assert walk(life, Event.PREPARE, Event.PREPARED, Event.DEPLOY, Event.CREATED,
                Event.SERVING, Event.STOP, Event.STOPPED) == [
        Phase.PREPARING, Phase.OFF, Phase.DEPLOYING, Phase.STARTING, Phase.READY,
        Phase.STOPPING, Phase.OFF]


@pytest.mark.parametrize(("phase", "event"), [
    (Phase.OFF, Event.SERVING),  # nothing deployed
    (Phase.OFF, Event.STOPPED),
    (Phase.OFF, Event.STOP),  # stop with nothing in AWS is FORGET
    (Phase.READY, Event.DEPLOY),  # one endpoint per kind
    (Phase.READY, Event.PREPARE),
    (Phase.STOPPING, Event.DEPLOY),
    (Phase.STOPPING, Event.STOP),  # one stop at a time
    (Phase.PREPARING, Event.CREATED),
    (Phase.DEPLOYING, Event.SERVING),  # not before the create calls returned
    (Phase.READY, Event.ADOPT_SERVING),  # never adopt over a running one
])
def test_illegal_moves_raise_and_change_nothing(phase: Phase, event: Event) -> None:
    life = Lifecycle("tts")
    path = {Phase.OFF: [], Phase.PREPARING: [Event.PREPARE],
            Phase.DEPLOYING: [Event.DEPLOY], Phase.READY: [Event.ADOPT_SERVING],
            Phase.STOPPING: [Event.ADOPT_SERVING, Event.STOP]}[phase]
    walk(life, *path)
    before = life.status
    assert not life.allowed(event)
    with pytest.raises(IllegalTransition, match=f"{event.value!r} is not allowed while"):
        life.move(event, name="captioner-tts-x")
    assert life.status is before


def test_every_phase_is_reachable_and_has_a_way_out() -> None:
    reached = {Phase.OFF} | set(TRANSITIONS.values())
    assert reached == set(Phase)
    leaving = {phase for phase, _ in TRANSITIONS}
    assert leaving == set(Phase)


def test_update_cannot_change_the_phase_or_invent_fields() -> None:
    life = Lifecycle("stt")
    with pytest.raises(IllegalTransition):
        life.update(phase=Phase.READY)
    with pytest.raises(IllegalTransition):
        life.move(Event.DEPLOY, colour="red")
    assert life.update(step="Creating model").step == "Creating model"
    assert life.status.phase is Phase.OFF


def test_failures_stay_typed_and_a_failed_stop_is_loud() -> None:
    life = Lifecycle("stt")
    walk(life, Event.ADOPT_SERVING)
    life.update(name="captioner-stt-1")
    life.move(Event.STOP)
    cause = NetworkError("Could not reach AWS (delete_endpoint): timed out")
    status = life.move(Event.FAIL, failure=StopFailedError("captioner-stt-1", cause, 1, 15.0))
    assert status.phase is Phase.ERROR and status.can_stop and not status.can_start
    assert status.stop_failed is not None and status.stop_failed.cause is cause
    assert status.stage_text == "Stop failed — retrying"
    assert "it may still be billing" in (status.error or "")
    assert "Retrying in 15 s" in (status.error or "")
    # A retry that fails again stays in ERROR with the newer failure.
    denied = AccessDeniedError("AWS denied access (delete_endpoint)")
    status = life.move(Event.FAIL, failure=StopFailedError("captioner-stt-1", denied, 2, 30.0))
    assert status.stop_failed is not None and status.stop_failed.attempts == 2


def test_lifecycle_imports_no_io() -> None:
    tree = ast.parse(Path(lifecycle_module.__file__).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"__future__", "enum", "logging", "dataclasses", "datetime", "typing",
                        "captioner"}
    modules = {node.module for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and node.module
               and node.module.startswith("captioner")}
    assert modules <= {"captioner.cloud.deploy_plan", "captioner.cloud.errors",
                       "captioner.cloud.pricing", "captioner.cloud.status", "captioner.errors"}
