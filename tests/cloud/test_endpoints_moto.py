"""Deploy → status → stop against a real moto server on loopback.

moto has no Creating→InService transition (endpoints are InService at once) and its
instance-type list lacks g5/g6 and InstancePools-only variants, so these tests deploy
a single ml.g4dn.xlarge; pools and transitions are covered with Stubber elsewhere.
"""

from __future__ import annotations

import boto3
import pytest

from captioner.cloud.cost_guard import quit_prompt
from captioner.cloud.endpoints import EndpointControl, client_factory
from captioner.cloud.pricing import PriceTable
from captioner.cloud.scaling import AutoscalingPolicy
from captioner.cloud.status import Stage
from captioner.cloud.watch import wait_in_service
from captioner.settings import EndpointDeploySettings

ROLE = "arn:aws:iam::123456789012:role/CaptionerSageMaker"
PRICES = PriceTable(regions={"us-east-1": {"ml.g4dn.xlarge": 0.7364}})


@pytest.fixture
def control(moto_url: str) -> EndpointControl:
    session = boto3.Session(region_name="us-east-1")
    return EndpointControl.from_factory(
        client_factory(session, "us-east-1", endpoint_url=moto_url), prices=PRICES
    )


def settings(source: str = "") -> EndpointDeploySettings:
    return EndpointDeploySettings(instance_types=["ml.g4dn.xlarge"], role_arn=ROLE,
                                  model_source=source)


def test_deploy_status_stop_cycle(control: EndpointControl) -> None:
    plan = control.plan("tts", settings())
    name = control.deploy(plan)

    snap = wait_in_service(control, name, poll_interval=0.01, timeout=10)
    assert snap.stage is Stage.IN_SERVICE
    assert snap.kind == "tts"
    assert snap.instance_type == "ml.g4dn.xlarge"  # from the endpoint config
    assert snap.hourly_price == pytest.approx(0.7364)

    model = control.sagemaker.describe_model(ModelName=name)
    assert model["PrimaryContainer"]["Environment"]["SM_VLLM_MODEL"] == (
        "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice")
    tags = control.sagemaker.list_tags(ResourceArn=model["ModelArn"])["Tags"]
    assert {"Key": "captioner:managed", "Value": "true"} in tags

    managed = control.find_managed_endpoints()
    assert [(e.name, e.kind, e.stage) for e in managed] == [(name, "tts", Stage.IN_SERVICE)]

    control.apply_autoscaling(name, AutoscalingPolicy(1, 2))
    targets = control.autoscaling.describe_scalable_targets(ServiceNamespace="sagemaker")
    assert [t["ResourceId"] for t in targets["ScalableTargets"]] == [
        f"endpoint/{name}/variant/AllTraffic"]

    report = control.stop(name, poll_interval=0.01, timeout=10)
    assert report.deleted == [f"endpoint {name}", f"endpoint config {name}", f"model {name}"]
    assert control.snapshot(name).stage is Stage.GONE
    assert control.autoscaling.describe_scalable_targets(
        ServiceNamespace="sagemaker")["ScalableTargets"] == []
    assert control.sagemaker.list_models()["Models"] == []
    assert control.sagemaker.list_endpoint_configs()["EndpointConfigs"] == []
    assert control.find_managed_endpoints() == []

    again = control.stop(name, poll_interval=0.01, timeout=10)  # idempotent
    assert again.deleted == []
    assert len(again.already_gone) == 3


def test_orphans_are_found_by_tag_after_a_restart(moto_url: str, control: EndpointControl
                                                  ) -> None:
    ours = control.deploy(control.plan("stt", EndpointDeploySettings(
        image_uri="123456789012.dkr.ecr.us-east-1.amazonaws.com/captioner-stt:1",
        model_source="s3://models/voxtral/", instance_types=["ml.g4dn.xlarge"], role_arn=ROLE)))
    # Someone else's endpoint, even one whose name looks like ours, is not listed.
    sm = control.sagemaker
    sm.create_model(ModelName="other", ExecutionRoleArn=ROLE,
                    PrimaryContainer={"Image": "x.dkr.ecr.us-east-1.amazonaws.com/y:1"})
    sm.create_endpoint_config(EndpointConfigName="other", ProductionVariants=[{
        "VariantName": "AllTraffic", "ModelName": "other", "InitialInstanceCount": 1,
        "InstanceType": "ml.g4dn.xlarge"}])
    for endpoint in ("captioner-stt-19990101-000000", "team-endpoint"):
        sm.create_endpoint(EndpointName=endpoint, EndpointConfigName="other",
                           Tags=[{"Key": "team", "Value": "ml"}])

    restarted = EndpointControl.from_factory(
        client_factory(boto3.Session(region_name="us-east-1"), "us-east-1",
                       endpoint_url=moto_url), prices=PRICES)
    orphans = restarted.orphans()
    assert [o.name for o in orphans] == [ours]
    assert restarted.orphans(exclude=[ours]) == []
    prompt = quit_prompt(orphans)
    assert prompt is not None
    assert prompt.hourly_cost == pytest.approx(0.7364)
    assert ours in prompt.message and "$0.74/hour" in prompt.message
    assert [e.name for e in restarted.find_managed_endpoints(kind="tts")] == []


def test_half_deployed_stack_is_cleaned_up(control: EndpointControl) -> None:
    plan = control.plan("tts", settings())
    control.sagemaker.create_model(**plan.model_request)  # then the app died
    report = control.stop(plan.name)
    assert report.deleted == [f"model {plan.name}"]
    assert report.already_gone == [f"endpoint {plan.name}", f"endpoint config {plan.name}"]
    assert control.sagemaker.list_models()["Models"] == []
