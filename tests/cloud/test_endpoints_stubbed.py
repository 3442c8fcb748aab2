"""Deploy and stop, every request checked against the real SageMaker service model (Stubber)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from captioner.cloud.errors import DeployConfigError, NotOwnedError
from captioner.cloud.ownership import Ownership
from captioner.cloud.scaling import AutoscalingPolicy
from captioner.settings import EndpointDeploySettings
from tests.support.moto_server import TEST_INSTALLATION, StubbedAws

ROLE = "arn:aws:iam::123456789012:role/CaptionerSageMaker"
STT_IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/captioner-stt:1"
TTS_IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:omni-sagemaker-cuda-v1.5"
ACCOUNT_ARN = "arn:aws:sagemaker:us-east-1:123456789012"
T0 = datetime(2026, 11, 29, 10, 15, 0, tzinfo=UTC)


def tags(kind: str, installation: str = TEST_INSTALLATION) -> list[dict[str, str]]:
    return [
        {"Key": "captioner:managed", "Value": "true"},
        {"Key": "captioner:kind", "Value": kind},
        {"Key": "captioner:created-at", "Value": "2026-11-29T10:15:00Z"},
        {"Key": "captioner:installation", "Value": installation},
    ]


def expect_deploy(stub: StubbedAws, name: str, kind: str, container: dict[str, Any],
                  variant_types: dict[str, Any]) -> None:
    stub.sm.add_response(
        "create_model", {"ModelArn": f"{ACCOUNT_ARN}:model/{name}"},
        {"ModelName": name, "PrimaryContainer": container, "ExecutionRoleArn": ROLE,
         "Tags": tags(kind)},
    )
    variant = {"VariantName": "AllTraffic", "ModelName": name, "InitialInstanceCount": 1,
               **variant_types,
               "InferenceAmiVersion": "al2023-ami-sagemaker-inference-gpu-4-1",
               "VariantInstanceProvisionTimeoutInSeconds": 1800,
               "ModelDataDownloadTimeoutInSeconds": 1800}
    stub.sm.add_response(
        "create_endpoint_config", {"EndpointConfigArn": f"{ACCOUNT_ARN}:endpoint-config/{name}"},
        {"EndpointConfigName": name, "ProductionVariants": [variant], "Tags": tags(kind)},
    )
    stub.sm.add_response(
        "create_endpoint", {"EndpointArn": f"{ACCOUNT_ARN}:endpoint/{name}"},
        {"EndpointName": name, "EndpointConfigName": name, "Tags": tags(kind)},
    )


STT_POOL = {"InstancePools": [
    {"InstanceType": "ml.g6.4xlarge", "Priority": 1},
    {"InstanceType": "ml.g6e.xlarge", "Priority": 2},
]}


def test_deploy_stt_from_s3_with_pool(stubbed_aws: StubbedAws) -> None:
    name = "captioner-stt-20261129-101500"
    expect_deploy(stubbed_aws, name, "stt", {
        "Image": STT_IMAGE,
        "ModelDataSource": {"S3DataSource": {
            "S3Uri": "s3://my-models/voxtral/", "S3DataType": "S3Prefix",
            "CompressionType": "None"}},
        "Environment": {
            "SM_VLLM_MAX_MODEL_LEN": "45000",
            "SM_VLLM_COMPILATION_CONFIG": '{"cudagraph_mode":"PIECEWISE"}',
            "SM_VLLM_MODEL": "/opt/ml/model",
            "SM_VLLM_SERVED_MODEL_NAME": "mistralai/Voxtral-Mini-4B-Realtime-2602",
        },
    }, STT_POOL)
    settings = EndpointDeploySettings(
        image_uri=STT_IMAGE, model_source="s3://my-models/voxtral",
        instance_types=["ml.g6.4xlarge", "ml.g6e.xlarge"], role_arn=ROLE,
    )
    plan = stubbed_aws.control.plan("stt", settings)
    steps: list[str] = []
    assert stubbed_aws.control.deploy(plan, on_step=steps.append) == name
    assert steps == [f"creating model {name}", f"creating endpoint config {name}",
                     f"creating endpoint {name}"]
    estimate = stubbed_aws.control.estimate(plan)
    assert (estimate.low, estimate.high, estimate.exact) == (1.6, 2.0, True)


def test_deploy_stt_with_model_id_single_type(stubbed_aws: StubbedAws) -> None:
    name = "captioner-stt-20261129-101500"
    expect_deploy(stubbed_aws, name, "stt", {
        "Image": STT_IMAGE,
        "Environment": {
            "SM_VLLM_MAX_MODEL_LEN": "45000",
            "SM_VLLM_COMPILATION_CONFIG": '{"cudagraph_mode":"PIECEWISE"}',
            "SM_VLLM_MODEL": "mistralai/Voxtral-Mini-4B-Realtime-2602",
            "SM_VLLM_GPU_MEMORY_UTILIZATION": "0.8",
        },
    }, {"InstanceType": "ml.g6.4xlarge"})
    settings = EndpointDeploySettings(image_uri=STT_IMAGE, instance_types=["ml.g6.4xlarge"],
                                      role_arn=ROLE)
    plan = stubbed_aws.control.plan("stt", settings,
                                    env={"SM_VLLM_GPU_MEMORY_UTILIZATION": "0.8"})
    stubbed_aws.control.deploy(plan)


def test_deploy_tts_default_image_with_pool(stubbed_aws: StubbedAws) -> None:
    name = "captioner-tts-20261129-101500"
    expect_deploy(stubbed_aws, name, "tts", {
        "Image": TTS_IMAGE,
        "Environment": {"SM_VLLM_MODEL": "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice"},
    }, {"InstancePools": [
        {"InstanceType": "ml.g6.xlarge", "Priority": 1},
        {"InstanceType": "ml.g6e.xlarge", "Priority": 2},
        {"InstanceType": "ml.g5.xlarge", "Priority": 3},
        {"InstanceType": "ml.g4dn.xlarge", "Priority": 4},
    ]})
    settings = EndpointDeploySettings(
        instance_types=["ml.g6.xlarge", "ml.g6e.xlarge", "ml.g5.xlarge", "ml.g4dn.xlarge"],
        role_arn=ROLE,
    )
    stubbed_aws.control.deploy(stubbed_aws.control.plan("tts", settings))


def test_deploy_tts_single_type(stubbed_aws: StubbedAws) -> None:
    name = "captioner-tts-20261129-101500"
    expect_deploy(stubbed_aws, name, "tts", {
        "Image": TTS_IMAGE,
        "Environment": {"SM_VLLM_MODEL": "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice"},
    }, {"InstanceType": "ml.g5.xlarge"})
    settings = EndpointDeploySettings(instance_types=["ml.g5.xlarge"], role_arn=ROLE)
    stubbed_aws.control.deploy(stubbed_aws.control.plan("tts", settings))


# ---- stop ------------------------------------------------------------------------------


def endpoint_description(name: str, status: str, **extra: Any) -> dict[str, Any]:
    return {"EndpointName": name, "EndpointArn": f"{ACCOUNT_ARN}:endpoint/{name}",
            "EndpointConfigName": name, "EndpointStatus": status, "CreationTime": T0,
            "LastModifiedTime": T0, **extra}


def config_description(name: str, variant_types: dict[str, Any]) -> dict[str, Any]:
    return {"EndpointConfigName": name,
            "EndpointConfigArn": f"{ACCOUNT_ARN}:endpoint-config/{name}", "CreationTime": T0,
            "ProductionVariants": [{"VariantName": "AllTraffic", "ModelName": name,
                                    "InitialInstanceCount": 1, **variant_types}]}


def not_found(stub: StubbedAws, operation: str, what: str, name: str,
              params: dict[str, Any]) -> None:
    stub.sm.add_client_error(
        operation, "ValidationException",
        f"Could not find {what} \"{ACCOUNT_ARN}:{what.replace(' ', '-')}/{name}\".",
        expected_params=params,
    )


def expect_ownership_check(stub: StubbedAws, name: str, kind: str, variant_types: dict[str, Any],
                           *, status: str = "InService",
                           installations: tuple[str, str, str] = (TEST_INSTALLATION,) * 3,
                           config_cached: bool = False) -> None:
    """describe endpoint, config and model, then read the tags of all three."""
    stub.sm.add_response("describe_endpoint", endpoint_description(name, status),
                         {"EndpointName": name})
    if not config_cached:
        stub.sm.add_response("describe_endpoint_config", config_description(name, variant_types),
                             {"EndpointConfigName": name})
    stub.sm.add_response("describe_model", {
        "ModelName": name, "ModelArn": f"{ACCOUNT_ARN}:model/{name}", "CreationTime": T0,
        "PrimaryContainer": {"Image": STT_IMAGE}}, {"ModelName": name})
    for what, installation in zip(("endpoint", "endpoint-config", "model"), installations,
                                  strict=True):
        stub.sm.add_response("list_tags", {"Tags": tags(kind, installation)},
                             {"ResourceArn": f"{ACCOUNT_ARN}:{what}/{name}", "MaxResults": 100})


def expect_stop(stub: StubbedAws, name: str, kind: str, variant_types: dict[str, Any],
                *, autoscaled: bool = False) -> None:
    resource = f"endpoint/{name}/variant/AllTraffic"
    expect_ownership_check(stub, name, kind, variant_types)
    target = {"ServiceNamespace": "sagemaker", "ResourceId": resource,
              "ScalableDimension": "sagemaker:variant:DesiredInstanceCount"}
    stub.aas.add_response(
        "describe_scalable_targets",
        {"ScalableTargets": [{**target, "MinCapacity": 1, "MaxCapacity": 3,
                              "RoleARN": "arn:aws:iam::123456789012:role/aas", "CreationTime": T0}]
         if autoscaled else []},
        {"ServiceNamespace": "sagemaker", "ResourceIds": [resource],
         "ScalableDimension": "sagemaker:variant:DesiredInstanceCount"},
    )
    if autoscaled:
        stub.aas.add_response("deregister_scalable_target", {}, target)
    stub.sm.add_response("delete_endpoint", {}, {"EndpointName": name})
    stub.sm.add_response("describe_endpoint", endpoint_description(name, "Deleting"),
                         {"EndpointName": name})
    not_found(stub, "describe_endpoint", "endpoint", name, {"EndpointName": name})
    stub.sm.add_response("delete_endpoint_config", {}, {"EndpointConfigName": name})
    stub.sm.add_response("delete_model", {}, {"ModelName": name})


@pytest.mark.parametrize(("kind", "variant_types"), [
    ("stt", STT_POOL),
    ("stt", {"InstanceType": "ml.g6.4xlarge"}),
    ("tts", {"InstancePools": [{"InstanceType": "ml.g6.xlarge", "Priority": 1},
                               {"InstanceType": "ml.g4dn.xlarge", "Priority": 2}]}),
    ("tts", {"InstanceType": "ml.g5.xlarge"}),
])
def test_stop_deletes_endpoint_then_config_then_model(
    stubbed_aws: StubbedAws, kind: str, variant_types: dict[str, Any]
) -> None:
    name = f"captioner-{kind}-20261129-101500"
    expect_stop(stubbed_aws, name, kind, variant_types)
    seen: list[str] = []
    report = stubbed_aws.control.stop(name, on_snapshot=lambda s: seen.append(s.status),
                                      poll_interval=5)
    assert report.deleted == [f"endpoint {name}", f"endpoint config {name}", f"model {name}"]
    assert report.already_gone == []
    assert seen == ["Deleting", ""]
    assert stubbed_aws.clock.sleeps == [5]


def test_stop_removes_autoscaling_first(stubbed_aws: StubbedAws) -> None:
    name = "captioner-stt-20261129-101500"
    expect_stop(stubbed_aws, name, "stt", STT_POOL, autoscaled=True)
    report = stubbed_aws.control.stop(name, poll_interval=1)
    assert f"model {name}" in report.deleted


def test_stop_is_resumable_when_everything_is_gone(stubbed_aws: StubbedAws) -> None:
    name = "captioner-tts-20261129-101500"
    not_found(stubbed_aws, "describe_endpoint", "endpoint", name, {"EndpointName": name})
    not_found(stubbed_aws, "describe_endpoint_config", "endpoint configuration", name,
              {"EndpointConfigName": name})
    not_found(stubbed_aws, "describe_model", "model", name, {"ModelName": name})
    stubbed_aws.aas.add_response("describe_scalable_targets", {"ScalableTargets": []}, None)
    not_found(stubbed_aws, "delete_endpoint_config", "endpoint configuration", name,
              {"EndpointConfigName": name})
    stubbed_aws.sm.add_client_error("delete_model", "ValidationException",
                                    f'Could not find model "{name}".',
                                    expected_params={"ModelName": name})
    report = stubbed_aws.control.stop(name)
    assert report.deleted == []
    assert report.already_gone == [f"endpoint {name}", f"endpoint config {name}",
                                   f"model {name}"]


def test_stop_cleans_a_half_deployed_stack(stubbed_aws: StubbedAws) -> None:
    """Model created, config creation failed: stop deletes the model and is done."""
    name = "captioner-stt-20261129-101500"
    not_found(stubbed_aws, "describe_endpoint", "endpoint", name, {"EndpointName": name})
    not_found(stubbed_aws, "describe_endpoint_config", "endpoint configuration", name,
              {"EndpointConfigName": name})
    stubbed_aws.sm.add_response("describe_model", {
        "ModelName": name, "ModelArn": f"{ACCOUNT_ARN}:model/{name}", "CreationTime": T0,
        "PrimaryContainer": {"Image": STT_IMAGE}}, {"ModelName": name})
    stubbed_aws.sm.add_response("list_tags", {"Tags": tags("stt")}, None)
    stubbed_aws.aas.add_response("describe_scalable_targets", {"ScalableTargets": []}, None)
    not_found(stubbed_aws, "delete_endpoint_config", "endpoint configuration", name,
              {"EndpointConfigName": name})
    stubbed_aws.sm.add_response("delete_model", {}, {"ModelName": name})
    report = stubbed_aws.control.stop(name)
    assert report.deleted == [f"model {name}"]


def test_stop_refuses_an_endpoint_captioner_did_not_create(stubbed_aws: StubbedAws) -> None:
    name = "captioner-stt-20261129-101500"
    stubbed_aws.sm.add_response("describe_endpoint", endpoint_description(name, "InService"),
                                {"EndpointName": name})
    stubbed_aws.sm.add_response("describe_endpoint_config",
                                config_description(name, {"InstanceType": "ml.g5.xlarge"}))
    not_found(stubbed_aws, "describe_model", "model", name, {"ModelName": name})
    stubbed_aws.sm.add_response("list_tags", {"Tags": [{"Key": "team", "Value": "ml"}]}, None)
    stubbed_aws.sm.add_response("list_tags", {"Tags": [{"Key": "team", "Value": "ml"}]}, None)
    with pytest.raises(NotOwnedError, match="not created by Captioner") as info:
        stubbed_aws.control.stop(name)
    assert isinstance(info.value, DeployConfigError)  # the CLI's exit 2: refused, nothing done
    assert info.value.ownership is Ownership.UNMANAGED


@pytest.mark.parametrize(("installations", "ownership"), [
    (("other-install", TEST_INSTALLATION, TEST_INSTALLATION), Ownership.FOREIGN),
    ((TEST_INSTALLATION, "other-install", TEST_INSTALLATION), Ownership.FOREIGN),
    ((TEST_INSTALLATION, TEST_INSTALLATION, "other-install"), Ownership.FOREIGN),
    ((TEST_INSTALLATION, TEST_INSTALLATION, ""), Ownership.UNOWNED),
])
def test_stop_checks_the_tags_of_endpoint_config_and_model(
    stubbed_aws: StubbedAws, installations: tuple[str, str, str], ownership: Ownership
) -> None:
    """One resource of the stack that is not ours is enough to refuse; nothing is deleted."""
    name = "captioner-tts-20261129-101500"
    expect_ownership_check(stubbed_aws, name, "tts", {"InstanceType": "ml.g5.xlarge"},
                           installations=installations)
    with pytest.raises(NotOwnedError) as info:
        stubbed_aws.control.stop(name)
    assert info.value.ownership is ownership
    assert "type its name" in str(info.value)
    # A typed name that does not match is no confirmation either.
    expect_ownership_check(stubbed_aws, name, "tts", {"InstanceType": "ml.g5.xlarge"},
                           installations=installations)
    with pytest.raises(NotOwnedError):
        stubbed_aws.control.stop(name, confirm_name="captioner-tts-2026")


def test_autoscaling_requests(stubbed_aws: StubbedAws) -> None:
    name = "captioner-stt-20261129-101500"
    resource = f"endpoint/{name}/variant/AllTraffic"
    stubbed_aws.aas.add_response("register_scalable_target", {}, {
        "ServiceNamespace": "sagemaker", "ResourceId": resource,
        "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
        "MinCapacity": 1, "MaxCapacity": 3,
    })
    stubbed_aws.aas.add_response("put_scaling_policy", {"PolicyARN": "arn:aws:autoscaling:x"}, {
        "PolicyName": f"{name}-target-tracking", "ServiceNamespace": "sagemaker",
        "ResourceId": resource, "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
        "PolicyType": "TargetTrackingScaling",
        "TargetTrackingScalingPolicyConfiguration": {
            "TargetValue": 4.0,
            "PredefinedMetricSpecification": {
                "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"},
            "ScaleInCooldown": 300, "ScaleOutCooldown": 60,
        },
    })
    stubbed_aws.control.apply_autoscaling(name, AutoscalingPolicy(1, 3))


def test_find_managed_endpoints_filters_by_tag_and_kind(stubbed_aws: StubbedAws) -> None:
    names = ["captioner-stt-20261129-101500", "captioner-tts-20261129-101500",
             "captioner-stt-20261129-090000"]
    summaries = [{"EndpointName": n, "EndpointArn": f"{ACCOUNT_ARN}:endpoint/{n}",
                  "CreationTime": T0, "LastModifiedTime": T0, "EndpointStatus": "InService"}
                 for n in names]
    stubbed_aws.sm.add_response("list_endpoints", {"Endpoints": summaries[:2], "NextToken": "p2"},
                                {"NameContains": "captioner-", "MaxResults": 100})
    stubbed_aws.sm.add_response("list_tags", {"Tags": tags("stt")}, None)
    stubbed_aws.sm.add_response("list_tags", {"Tags": tags("tts")}, None)
    stubbed_aws.sm.add_response("list_endpoints", {"Endpoints": summaries[2:]},
                                {"NameContains": "captioner-", "MaxResults": 100,
                                 "NextToken": "p2"})
    stubbed_aws.sm.add_response("list_tags", {"Tags": []}, None)  # same prefix, not ours
    found = stubbed_aws.control.find_managed_endpoints("stt")
    assert [e.name for e in found] == ["captioner-stt-20261129-101500"]
    assert found[0].kind == "stt"
