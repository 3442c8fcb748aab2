"""Status transitions as SageMaker reports them (Stubber describe sequences, fake clock)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from captioner.cloud.errors import DeployFailedError, WaitTimeoutError
from captioner.cloud.status import EndpointSnapshot, Stage
from captioner.cloud.watch import wait_for, wait_in_service
from tests.cloud.test_endpoints_stubbed import (
    ACCOUNT_ARN,
    STT_POOL,
    config_description,
    endpoint_description,
)
from tests.support.moto_server import StubbedAws

NAME = "captioner-stt-20261129-101500"


def pool_variant(running: str | None) -> dict[str, Any]:
    pools = [{"InstanceType": "ml.g6.4xlarge", "CurrentInstanceCount": 0},
             {"InstanceType": "ml.g6e.xlarge", "CurrentInstanceCount": 0}]
    for pool in pools:
        if pool["InstanceType"] == running:
            pool["CurrentInstanceCount"] = 1
    return {"VariantName": "AllTraffic", "CurrentInstanceCount": 1 if running else 0,
            "DesiredInstanceCount": 1, "InstancePools": pools}


def describe(stub: StubbedAws, status: str, running: str | None = None, **extra: Any) -> None:
    stub.sm.add_response("describe_endpoint", endpoint_description(
        NAME, status, ProductionVariants=[pool_variant(running)], **extra),
        {"EndpointName": NAME})


def test_creating_to_in_service_reports_pool_winner_and_cost(stubbed_aws: StubbedAws) -> None:
    describe(stubbed_aws, "Creating")
    stubbed_aws.sm.add_response("describe_endpoint_config", config_description(NAME, STT_POOL),
                                {"EndpointConfigName": NAME})  # asked once, then cached
    describe(stubbed_aws, "Creating")
    describe(stubbed_aws, "InService", running="ml.g6e.xlarge")
    seen: list[EndpointSnapshot] = []
    snap = wait_in_service(stubbed_aws.control, NAME, on_snapshot=seen.append, poll_interval=60)

    assert [s.stage for s in seen] == [Stage.CREATING, Stage.CREATING, Stage.IN_SERVICE]
    assert [s.elapsed_seconds for s in seen] == [0, 60, 120]
    creating = seen[0]
    assert creating.instance_type is None
    assert creating.candidate_types == ("ml.g6.4xlarge", "ml.g6e.xlarge")
    assert creating.hourly_price == 2.0  # dearest of the pool until the winner is known
    assert snap.instance_type == "ml.g6e.xlarge"
    assert snap.instance_count == 1
    assert snap.hourly_price == 2.0
    assert snap.cost_so_far == pytest.approx(2.0 * 120 / 3600)
    assert snap.kind == "stt"


def test_failed_carries_failure_reason_verbatim(stubbed_aws: StubbedAws) -> None:
    reason = ("Unable to provision requested ML compute capacity due to "
              "InsufficientInstanceCapacity error. "
              "Please retry using a different ML instance type.")
    describe(stubbed_aws, "Creating")
    stubbed_aws.sm.add_response("describe_endpoint_config", config_description(NAME, STT_POOL))
    describe(stubbed_aws, "Failed", FailureReason=reason)
    with pytest.raises(DeployFailedError) as info:
        wait_in_service(stubbed_aws.control, NAME, poll_interval=1)
    assert info.value.reason == reason
    assert reason in str(info.value)


def test_deleting_then_gone(stubbed_aws: StubbedAws) -> None:
    describe(stubbed_aws, "Deleting", running="ml.g6.4xlarge")
    stubbed_aws.sm.add_response("describe_endpoint_config", config_description(NAME, STT_POOL))
    stubbed_aws.sm.add_client_error("describe_endpoint", "ValidationException",
                                    f'Could not find endpoint "{ACCOUNT_ARN}:endpoint/{NAME}".')
    seen: list[EndpointSnapshot] = []
    last = wait_for(stubbed_aws.control, NAME, lambda s: s.stage is Stage.GONE,
                    on_snapshot=seen.append, poll_interval=1)
    assert [s.stage for s in seen] == [Stage.DELETING, Stage.GONE]
    assert seen[0].instance_type == "ml.g6.4xlarge"
    assert last.status == ""


def test_wait_times_out_on_the_injected_clock(stubbed_aws: StubbedAws) -> None:
    describe(stubbed_aws, "Creating")
    stubbed_aws.sm.add_response("describe_endpoint_config", config_description(NAME, STT_POOL))
    describe(stubbed_aws, "Creating")
    with pytest.raises(WaitTimeoutError, match="Creating"):
        wait_in_service(stubbed_aws.control, NAME, poll_interval=30, timeout=30)


def test_updating_is_a_running_stage(stubbed_aws: StubbedAws) -> None:
    describe(stubbed_aws, "Updating", running="ml.g6.4xlarge")
    stubbed_aws.sm.add_response("describe_endpoint_config", config_description(NAME, STT_POOL))
    stubbed_aws.clock.advance(3600)
    snap = stubbed_aws.control.snapshot(NAME)
    assert snap.stage is Stage.UPDATING and snap.stage.billing
    assert snap.cost_so_far == pytest.approx(1.6)
    assert snap.observed_at - snap.created_at == timedelta(hours=1)
