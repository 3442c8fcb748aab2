"""Deploy inputs are validated before any AWS call (pure plan building)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from captioner.cloud.deploy_plan import plan_deploy
from captioner.cloud.errors import DeployConfigError
from captioner.settings import CloudSettings, EndpointDeploySettings

ROLE = "arn:aws:iam::123456789012:role/service-role/CaptionerSageMaker"
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/captioner-stt:1"
NOW = datetime(2026, 11, 29, 23, 59, 59, 123456, tzinfo=UTC)


def plan(kind: str = "stt", region: str = "us-east-1", **changes: object):
    fields = {"image_uri": IMAGE, "instance_types": ["ml.g6.4xlarge"], "role_arn": ROLE}
    fields.update(changes)
    return plan_deploy(kind, EndpointDeploySettings(**fields), region, now=NOW)  # type: ignore[arg-type]


@pytest.mark.parametrize(("changes", "message"), [
    ({"role_arn": ""}, "execution role ARN is required"),
    ({"role_arn": "arn:aws:iam::123:role/x"}, "not an IAM role ARN"),
    ({"role_arn": "arn:aws:iam::123456789012:user/me"}, "not an IAM role ARN"),
    ({"instance_types": []}, "1 to 5 instance types"),
    ({"instance_types": [f"ml.g6.{n}xlarge" for n in (2, 4, 8, 12, 16, 24)]}, "1 to 5"),
    ({"instance_types": ["g6.xlarge"]}, "not a SageMaker instance type"),
    ({"instance_types": ["ml.g6.xlarge", "ml.g6.xlarge"]}, "same type twice"),
    ({"image_uri": ""}, "needs the ECR image URI"),
    ({"model_source": "s3://"}, "not an s3://bucket/prefix"),
    ({"model_source": "my model"}, "neither an s3:// prefix nor a model id"),
])
def test_bad_input_is_rejected_with_a_clear_message(changes: dict, message: str) -> None:
    with pytest.raises(DeployConfigError, match=message):
        plan(**changes)


def test_bad_region_and_kind() -> None:
    with pytest.raises(DeployConfigError, match="not an AWS region"):
        plan(region="Virginia")
    with pytest.raises(DeployConfigError, match="Unknown endpoint kind"):
        plan(kind="ocr")


def test_names_and_tags_are_consistent() -> None:
    p = plan()
    assert p.name == "captioner-stt-20261129-235959"
    assert p.model_request["ModelName"] == p.config_request["EndpointConfigName"] == (
        p.endpoint_request["EndpointName"]) == p.name
    assert p.endpoint_request["Tags"][2] == {"Key": "captioner:created-at",
                                             "Value": "2026-11-29T23:59:59Z"}


def test_tts_image_follows_the_region() -> None:
    p = plan("tts", region="eu-central-1", image_uri="")
    assert p.model_request["PrimaryContainer"]["Image"] == (
        "763104351884.dkr.ecr.eu-central-1.amazonaws.com/vllm:omni-sagemaker-cuda-v1.5")


def test_default_cloud_settings_plan_once_role_and_image_are_set() -> None:
    cloud = CloudSettings()
    cloud.tts.role_arn = ROLE
    p = plan_deploy("tts", cloud.tts, "us-east-1", now=NOW)
    pools = p.config_request["ProductionVariants"][0]["InstancePools"]
    assert [x["InstanceType"] for x in pools] == [
        "ml.g6.xlarge", "ml.g6e.xlarge", "ml.g5.xlarge", "ml.g4dn.xlarge"]
