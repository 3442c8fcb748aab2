"""EndpointManager's billing safety against a real moto server: a failed stop is retried
and loud until it succeeds, orphans are found in every region used before, and the
server-side backstop is renewed while the app is in use and removed with the stop."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from captioner.cloud.endpoints import EndpointControl, client_factory
from captioner.cloud.errors import NetworkError, StopFailedError
from captioner.cloud.lifecycle import Phase
from captioner.cloud.manager import EndpointManager
from captioner.cloud.state import load_state
from captioner.settings import EndpointDeploySettings
from tests.cloud.test_manager import run, wait_until

ROLE = "arn:aws:iam::123456789012:role/CaptionerSageMaker"
TTS = EndpointDeploySettings(instance_types=["ml.g4dn.xlarge"], role_arn=ROLE,
                             max_lifetime_hours=2)
ControlFactory = Callable[[str], EndpointControl]


@pytest.fixture
def controls(moto_url: str) -> ControlFactory:
    """Controls on the moto server per region; every deploy gets its own second."""
    ticks = itertools.count()
    start = datetime.now(UTC)  # moto stamps CreationTime with the real clock

    def make(region: str) -> EndpointControl:
        return EndpointControl.from_factory(
            client_factory(boto3.Session(region_name=region), region, endpoint_url=moto_url),
            now=lambda: start + timedelta(seconds=next(ticks)))

    return make


def manager_in(controls: ControlFactory, region: str, **kwargs: Any) -> EndpointManager:
    options: dict[str, Any] = {"poll_interval": 0.01, "monitor_interval": 3600,
                               "stop_poll_interval": 0.01, "tick_interval": None}
    return EndpointManager(lambda: controls(region), {"tts": TTS}.__getitem__,
                           region_control=controls, **{**options, **kwargs})


def test_a_failed_stop_is_retried_and_loud_until_it_succeeds(controls: ControlFactory) -> None:
    control = controls("us-east-1")
    real_stop = control.stop
    attempts: list[str] = []

    def flaky_stop(name: str, **kwargs: Any) -> Any:
        attempts.append(name)
        if len(attempts) <= 2:  # AWS unreachable twice, then back
            raise NetworkError("Could not reach AWS (delete_endpoint): timed out")
        return real_stop(name, **kwargs)

    control.stop = flaky_stop  # type: ignore[method-assign]
    manager = EndpointManager(lambda: control, {"tts": TTS}.__getitem__, poll_interval=0.01,
                              monitor_interval=3600, stop_poll_interval=0.01,
                              tick_interval=None, stop_retry=(0.05, 0.08))
    failures: list[StopFailedError] = []
    manager.status_changed.connect(
        lambda s: s.stop_failed is not None and failures.append(s.stop_failed))

    async def scenario() -> None:
        status = await manager.start("tts")
        name = status.name
        assert status.phase is Phase.READY and name
        failed = await manager.stop("tts")
        assert failed.phase is Phase.ERROR and failed.name == name and failed.can_stop
        assert failed.stage_text == "Stop failed — retrying"
        (loud,) = manager.stop_failures()
        assert isinstance(loud.cause, NetworkError) and loud.retry_in == pytest.approx(0.05)
        assert manager.quit_decision() is not None  # still billing: quitting asks
        await wait_until(lambda: manager.status("tts").phase is Phase.OFF, "retried stop",
                         timeout=30)
        assert manager.stop_failures() == []
        assert (await manager.control()).find_managed_endpoints() == []
        await manager.close()

    run(scenario, timeout=60)
    assert [f.attempts for f in failures] == [1, 2]
    assert failures[1].retry_in == pytest.approx(0.08)  # doubled, capped
    assert len(attempts) == 3


def test_orphans_are_searched_in_every_region_used_before(controls: ControlFactory) -> None:
    west = manager_in(controls, "us-west-2")

    async def deploy_in_west() -> str:
        status = await west.start("tts")
        await west.close()  # quits and leaves it running
        assert status.name
        return status.name

    name = run(deploy_in_west)
    assert load_state().regions_used == ["us-west-2"]

    east = manager_in(controls, "us-east-1")

    async def start_in_east() -> None:
        orphans = await east.attach()
        assert [o.name for o in orphans] == [name]
        assert east.orphan_region(name) == "us-west-2"
        assert east.status("tts").name is None  # another region: not adopted for captions
        prompt = east.quit_decision()
        assert prompt is not None and name in prompt.message
        assert await east.stop_orphans() == []
        assert controls("us-west-2").find_managed_endpoints() == []
        await east.close()

    run(start_in_east)


def test_backstop_renewed_while_in_use_and_removed_with_the_stop(
    controls: ControlFactory, tmp_path: Path
) -> None:
    clock = [0.0]
    manager = manager_in(controls, "us-east-1", renew_interval=600, clock=lambda: clock[0])
    control = controls("us-east-1")

    async def scenario() -> None:
        status = await manager.start("tts")
        name, first = status.name, status.expires_at
        assert name and first is not None
        assert control.backstop_expires_at(name) == first

        clock[0] += 601
        manager.tick()  # not used since: no renewal
        assert manager.status("tts").expires_at == first
        manager.activity("tts")  # a reply was spoken
        manager.tick()
        await wait_until(lambda: manager.status("tts").expires_at != first, "renewed")
        renewed = manager.status("tts").expires_at
        assert renewed is not None and renewed > first
        assert control.backstop_expires_at(name) == renewed

        await manager.stop("tts")
        assert control.backstop_expires_at(name) is None
        await manager.close()

    run(scenario)
