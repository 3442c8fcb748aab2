"""The server-side backstop against a real moto server (IAM, STS, SageMaker, Scheduler):
armed before the endpoint exists, renewed, removed with the stop; leftovers cleaned."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.stub import Stubber

from captioner.cloud.backstop import DELETE_ENDPOINT_TARGET
from captioner.cloud.endpoints import EndpointControl, client_factory
from captioner.cloud.errors import AccessDeniedError
from captioner.cloud.inventory import clean_leftovers
from captioner.settings import EndpointDeploySettings

ROLE = "arn:aws:iam::123456789012:role/CaptionerSageMaker"
T0 = datetime(2026, 12, 1, 14, 0, 0, tzinfo=UTC)
MINE = "a1b2c3d4e5f60718"


def moto_control(moto_url: str, installation: str = MINE, now: datetime = T0,
                 region: str = "us-east-1") -> EndpointControl:
    return EndpointControl.from_factory(
        client_factory(boto3.Session(region_name=region), region, endpoint_url=moto_url),
        installation_id=installation, now=lambda: now)


def tts(hours: float = 2.0) -> EndpointDeploySettings:
    return EndpointDeploySettings(instance_types=["ml.g4dn.xlarge"], role_arn=ROLE,
                                  max_lifetime_hours=hours)


def test_deploy_arms_the_backstop_and_stop_removes_it(moto_url: str) -> None:
    control = moto_control(moto_url)
    plan = control.plan("tts", tts(2))
    assert plan.expires_at == T0 + timedelta(hours=2)
    name = control.deploy(plan)
    assert control.backstop is not None
    scheduler, iam = control.backstop.scheduler, control.backstop.iam

    schedule = scheduler.get_schedule(Name=name, GroupName=f"captioner-{MINE}")
    assert schedule["ScheduleExpression"] == "at(2026-12-01T16:00:00)"
    assert schedule["ScheduleExpressionTimezone"] == "UTC"
    assert schedule["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert schedule["ActionAfterCompletion"] == "DELETE"
    target = schedule["Target"]
    assert target["Arn"] == DELETE_ENDPOINT_TARGET
    assert json.loads(target["Input"]) == {"EndpointName": name}

    role = iam.get_role(RoleName=f"captioner-backstop-{MINE}")["Role"]
    assert target["RoleArn"] == role["Arn"]
    trust = role["AssumeRolePolicyDocument"]
    trust = json.loads(trust) if isinstance(trust, str) else trust
    (statement,) = trust["Statement"]
    assert statement["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert statement["Condition"] == {"StringEquals": {"aws:SourceAccount": "123456789012"}}
    policy = iam.get_role_policy(RoleName=role["RoleName"], PolicyName=name)["PolicyDocument"]
    policy = json.loads(policy) if isinstance(policy, str) else policy
    assert policy["Statement"] == [{
        "Effect": "Allow", "Action": "sagemaker:DeleteEndpoint",
        "Resource": f"arn:aws:sagemaker:us-east-1:123456789012:endpoint/{name}"}]
    role_tags = {t["Key"]: t["Value"] for t in iam.list_role_tags(
        RoleName=role["RoleName"])["Tags"]}
    assert role_tags["captioner:installation"] == MINE
    group = scheduler.get_schedule_group(Name=f"captioner-{MINE}")
    group_tags = {t["Key"]: t["Value"] for t in scheduler.list_tags_for_resource(
        ResourceArn=group["Arn"])["Tags"]}
    assert group_tags["captioner:installation"] == MINE
    assert group_tags["captioner:owner"] == "arn:aws:sts::123456789012:user/moto"

    # In use: the deletion moves on (to now + lifetime).
    later = moto_control(moto_url, now=T0 + timedelta(hours=1))
    assert later.renew_backstop(name, timedelta(hours=2)) == T0 + timedelta(hours=3)
    assert later.backstop_expires_at(name) == T0 + timedelta(hours=3)
    assert scheduler.get_schedule(Name=name, GroupName=f"captioner-{MINE}")[
        "ActionAfterCompletion"] == "DELETE"

    report = later.stop(name, poll_interval=0.01, timeout=10)
    assert f"endpoint {name}" in report.deleted
    assert later.backstop_expires_at(name) is None
    assert scheduler.list_schedules(GroupName=f"captioner-{MINE}")["Schedules"] == []
    assert iam.list_role_policies(RoleName=role["RoleName"])["PolicyNames"] == []


def test_no_backstop_when_the_lifetime_is_off(moto_url: str) -> None:
    control = moto_control(moto_url)
    plan = control.plan("tts", tts(0))
    assert plan.expires_at is None
    name = control.deploy(plan)
    assert control.backstop_expires_at(name) is None
    control.stop(name, poll_interval=0.01, timeout=10)


def test_a_backstop_that_cannot_be_set_up_means_nothing_is_created(moto_url: str) -> None:
    control = moto_control(moto_url)
    assert control.backstop is not None
    with Stubber(control.backstop.scheduler) as scheduler:
        scheduler.add_response("get_schedule_group", {
            "Arn": "arn:aws:scheduler:us-east-1:123456789012:schedule-group/captioner-x",
            "Name": f"captioner-{MINE}", "State": "ACTIVE"})
        scheduler.add_client_error("create_schedule", "AccessDeniedException",
                                   "not authorized to perform: scheduler:CreateSchedule")
        with pytest.raises(AccessDeniedError, match="scheduler:CreateSchedule"):
            control.deploy(control.plan("tts", tts(2)))
    sm = control.sagemaker
    assert sm.list_models()["Models"] == []
    assert sm.list_endpoints()["Endpoints"] == []


def test_leftovers_of_a_fired_backstop_are_cleaned_only_when_ours(moto_url: str) -> None:
    mine = moto_control(moto_url)
    theirs = moto_control(moto_url, installation="0ther0ther0ther0", now=T0 + timedelta(
        minutes=5))
    names = [control.deploy(control.plan("tts", tts(2))) for control in (mine, theirs)]
    for name in names:  # what the schedule does at the maximum lifetime
        mine.sagemaker.delete_endpoint(EndpointName=name)

    # moto stamps CreationTime with the real clock: look from a minute later.
    cleaner = moto_control(moto_url, now=datetime.now(UTC) + timedelta(minutes=1))
    assert clean_leftovers(cleaner) == []  # younger than 30 min: maybe a deploy under way
    removed = clean_leftovers(cleaner, min_age=timedelta(0))
    assert removed == [f"endpoint config {names[0]}", f"model {names[0]}"]
    assert [m["ModelName"] for m in mine.sagemaker.list_models()["Models"]] == [names[1]]
    assert clean_leftovers(cleaner, min_age=timedelta(0)) == []
