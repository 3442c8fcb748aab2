"""The app's deploy path (EndpointManager) runs the preflight and refuses unless it passes.

The preflight is the real one on the moto account (Stubbers for policy simulation and
Service Quotas); the manager deploys on moto once it passes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest

from captioner.cloud.endpoints import EndpointControl, client_factory
from captioner.cloud.manager import Phase
from captioner.cloud.preflight import Preflight, run_preflight
from tests.cloud.test_manager import MOTO_SETTINGS, PRICES, Recorder, moto_manager, run
from tests.support.aws_account import REGION, FakeAccount


@pytest.fixture
def controls(moto_url: str) -> Callable[[], EndpointControl]:
    def control() -> EndpointControl:
        session = boto3.Session(region_name=REGION)
        return EndpointControl.from_factory(
            client_factory(session, REGION, endpoint_url=moto_url), prices=PRICES)
    return control


def preflight_on(account: FakeAccount, calls: list[str]) -> Callable[[Any], Preflight]:
    def preflight(kind: Any) -> Preflight:
        calls.append(kind)
        return run_preflight(kind, MOTO_SETTINGS[kind], account.clients, region=REGION,
                             prices=PRICES)
    return preflight


def test_start_is_refused_with_the_first_failing_check(
        controls: Callable[[], EndpointControl],
        fake_account: FakeAccount) -> None:
    fake_account.quota("ml.g4dn.xlarge", 1)  # the role does not exist in the account
    calls: list[str] = []
    manager = moto_manager(controls, preflight=preflight_on(fake_account, calls))
    seen = Recorder(manager)

    async def scenario() -> None:
        status = await manager.start("tts")
        assert status.phase is Phase.ERROR
        assert status.error is not None and status.error.startswith(
            "Not deploying the tts endpoint: Execution role: Role CaptionerSageMaker does not "
            "exist in account 123456789012.")
        assert (await manager.control()).find_managed_endpoints() == []
        await manager.close()

    run(scenario)
    assert calls == ["tts"]
    assert seen.phases("tts") == [Phase.PREPARING, Phase.ERROR]


def test_start_deploys_once_the_preflight_passes(
        controls: Callable[[], EndpointControl],
        fake_account: FakeAccount) -> None:
    fake_account.add_role()
    fake_account.allow_pass_role()
    fake_account.allow_role_access(
        repository=f"arn:aws:ecr:{REGION}:763104351884:repository/vllm")
    fake_account.quota("ml.g4dn.xlarge", 1)
    calls: list[str] = []
    manager = moto_manager(controls, preflight=preflight_on(fake_account, calls))

    async def scenario() -> None:
        status = await manager.start("tts")
        assert status.phase is Phase.READY, status.error
        await manager.stop("tts")
        await manager.close()

    run(scenario)
    assert calls == ["tts"]
