"""AWS failures become typed, readable errors and leave a consistent state."""

from __future__ import annotations

import pytest

from captioner.cloud.errors import (
    AccessDeniedError,
    CredentialsExpiredError,
    EndpointGoneError,
    QuotaExceededError,
    ServiceValidationError,
    ThrottledError,
)
from captioner.cloud.status import Stage
from captioner.cloud.watch import wait_in_service
from captioner.settings import EndpointDeploySettings
from tests.cloud.test_endpoints_stubbed import (
    ACCOUNT_ARN,
    ROLE,
    endpoint_description,
    not_found,
)
from tests.support.moto_server import StubbedAws

NAME = "captioner-tts-20261129-101500"
SETTINGS = EndpointDeploySettings(instance_types=["ml.g5.xlarge"], role_arn=ROLE)


def test_access_denied_on_first_step_creates_nothing(stubbed_aws: StubbedAws) -> None:
    stubbed_aws.sm.add_client_error(
        "create_model", "AccessDeniedException",
        "User: arn:aws:iam::123456789012:user/me is not authorized to perform: "
        "sagemaker:CreateModel", http_status_code=400,
    )
    with pytest.raises(AccessDeniedError) as info:
        stubbed_aws.control.deploy(stubbed_aws.control.plan("tts", SETTINGS))
    assert "sagemaker:CreateModel" in str(info.value)
    assert "IAM policy" in str(info.value)
    assert info.value.operation == "create_model"
    # Stubber's teardown asserts no other request was expected: nothing to clean up.


def test_quota_on_endpoint_deletes_config_and_model(stubbed_aws: StubbedAws) -> None:
    sm = stubbed_aws.sm
    sm.add_response("create_model", {"ModelArn": f"{ACCOUNT_ARN}:model/{NAME}"})
    sm.add_response("create_endpoint_config",
                    {"EndpointConfigArn": f"{ACCOUNT_ARN}:endpoint-config/{NAME}"})
    sm.add_client_error(
        "create_endpoint", "ResourceLimitExceeded",
        "The account-level service limit 'ml.g5.xlarge for endpoint usage' is 0 Instances",
    )
    not_found(stubbed_aws, "describe_endpoint", "endpoint", NAME, {"EndpointName": NAME})
    sm.add_response("delete_endpoint_config", {}, {"EndpointConfigName": NAME})
    sm.add_response("delete_model", {}, {"ModelName": NAME})
    with pytest.raises(QuotaExceededError) as info:
        stubbed_aws.control.deploy(stubbed_aws.control.plan("tts", SETTINGS))
    message = str(info.value)
    assert "ml.g5.xlarge for endpoint usage" in message
    assert "Service Quotas" in message
    assert info.value.leftovers == ()


def test_validation_error_on_config_deletes_model(stubbed_aws: StubbedAws) -> None:
    sm = stubbed_aws.sm
    sm.add_response("create_model", {"ModelArn": f"{ACCOUNT_ARN}:model/{NAME}"})
    sm.add_client_error("create_endpoint_config", "ValidationException",
                        "Instance pools are not supported for this instance type")
    sm.add_response("delete_model", {}, {"ModelName": NAME})
    with pytest.raises(ServiceValidationError, match="Instance pools are not supported"):
        stubbed_aws.control.deploy(stubbed_aws.control.plan("tts", SETTINGS))


def test_failed_cleanup_names_the_leftovers(stubbed_aws: StubbedAws) -> None:
    sm = stubbed_aws.sm
    sm.add_response("create_model", {"ModelArn": f"{ACCOUNT_ARN}:model/{NAME}"})
    sm.add_client_error("create_endpoint_config", "ResourceLimitExceeded", "too many configs")
    sm.add_client_error("delete_model", "ExpiredTokenException", "The security token expired")
    with pytest.raises(QuotaExceededError) as info:
        stubbed_aws.control.deploy(stubbed_aws.control.plan("tts", SETTINGS))
    assert info.value.leftovers == (f"model {NAME}",)
    assert f"captioner endpoint stop {NAME}" in str(info.value)


def test_throttling_is_retried_then_succeeds(stubbed_aws: StubbedAws) -> None:
    for _ in range(2):
        stubbed_aws.sm.add_client_error("describe_endpoint", "ThrottlingException", "Rate exceeded",
                                        http_status_code=400)
    stubbed_aws.sm.add_response("describe_endpoint", endpoint_description(NAME, "Creating"),
                                {"EndpointName": NAME})
    stubbed_aws.sm.add_response("describe_endpoint_config", {
        "EndpointConfigName": NAME, "EndpointConfigArn": f"{ACCOUNT_ARN}:endpoint-config/{NAME}",
        "CreationTime": endpoint_description(NAME, "x")["CreationTime"],
        "ProductionVariants": [{"VariantName": "AllTraffic", "ModelName": NAME,
                                "InstanceType": "ml.g5.xlarge"}]})
    snap = stubbed_aws.control.snapshot(NAME)
    assert snap.stage is Stage.CREATING
    assert len(stubbed_aws.clock.sleeps) == 2
    assert stubbed_aws.clock.sleeps[1] > stubbed_aws.clock.sleeps[0] * 0.99  # backs off


def test_throttling_that_persists_is_a_typed_error(stubbed_aws: StubbedAws) -> None:
    for _ in range(5):  # first try + 4 retries
        stubbed_aws.sm.add_client_error("list_endpoints", "ThrottlingException", "Rate exceeded")
    with pytest.raises(ThrottledError, match="try again"):
        stubbed_aws.control.find_managed_endpoints()
    assert len(stubbed_aws.clock.sleeps) == 4


def test_expired_credentials(stubbed_aws: StubbedAws) -> None:
    stubbed_aws.sm.add_client_error("list_endpoints", "ExpiredTokenException",
                                    "The security token included in the request is expired")
    with pytest.raises(CredentialsExpiredError, match="expired") as info:
        stubbed_aws.control.find_managed_endpoints()
    assert "aws sso login" in str(info.value)


def test_endpoint_deleted_behind_the_apps_back_while_creating(stubbed_aws: StubbedAws) -> None:
    stubbed_aws.sm.add_response("describe_endpoint", endpoint_description(NAME, "Creating"))
    stubbed_aws.sm.add_response("describe_endpoint_config", {
        "EndpointConfigName": NAME, "EndpointConfigArn": f"{ACCOUNT_ARN}:endpoint-config/{NAME}",
        "CreationTime": endpoint_description(NAME, "x")["CreationTime"],
        "ProductionVariants": [{"VariantName": "AllTraffic", "ModelName": NAME,
                                "InstanceType": "ml.g5.xlarge"}]})
    stubbed_aws.sm.add_client_error("describe_endpoint", "ValidationException",
                                    f'Could not find endpoint "{ACCOUNT_ARN}:endpoint/{NAME}".')
    seen = []
    with pytest.raises(EndpointGoneError, match="deleted outside Captioner"):
        wait_in_service(stubbed_aws.control, NAME, on_snapshot=seen.append, poll_interval=30)
    assert [s.stage for s in seen] == [Stage.CREATING, Stage.GONE]
    # Status of a vanished endpoint is a snapshot, not an exception.
    stubbed_aws.sm.add_client_error("describe_endpoint", "ValidationException",
                                    f'Could not find endpoint "{ACCOUNT_ARN}:endpoint/{NAME}".')
    assert stubbed_aws.control.snapshot(NAME).stage is Stage.GONE
