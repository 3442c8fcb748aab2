"""Building the captions image in the user's account (CodeBuild) against a moto server:
what it creates, what the build role may do, and how a build's progress reads."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import replace
from pathlib import Path

import boto3
import pytest

from captioner.cloud import image_build as ib
from captioner.cloud.account import AccountClients
from captioner.cloud.errors import DeployConfigError
from tests.support.aws_account import RunningCodeBuild

ACCOUNT = "123456789012"
REGION = "eu-west-1"


def clients(moto_url: str) -> AccountClients:
    return AccountClients.from_factory(
        lambda service: boto3.client(service, region_name=REGION, endpoint_url=moto_url))


def test_the_build_context_is_the_container_folder_without_caches() -> None:
    data = ib.context_zip(ib.container_dir())
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert {"Dockerfile", "entrypoint.sh", "requirements.txt", "bridge/relay.py"} <= set(names)
    assert not [n for n in names if "__pycache__" in n]
    assert ib.context_zip(ib.container_dir()) == data  # the same files, the same bytes
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo("entrypoint.sh")
    assert info.external_attr >> 16 & 0o111  # still executable in the image


def test_a_folder_without_a_dockerfile_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DeployConfigError, match="build files are missing"):
        ib.context_zip(tmp_path)


def test_the_build_role_may_push_only_captioners_repository() -> None:
    plan = ib.BuildPlan(ACCOUNT, REGION)
    policies = plan.role_policies()
    assert policies.trust["Statement"][0]["Principal"] == {"Service": "codebuild.amazonaws.com"}
    by_sid = {s["Sid"]: s for s in policies.permissions["Statement"]}
    assert by_sid["PushImage"]["Resource"] == (
        f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/captioner-stt")
    assert "ecr:PutImage" in by_sid["PushImage"]["Action"]
    assert by_sid["ReadBuildFiles"]["Resource"] == (
        f"arn:aws:s3:::captioner-build-{ACCOUNT}-{REGION}/stt-image/context.zip")
    wildcard = [s["Sid"] for s in policies.permissions["Statement"] if s["Resource"] == "*"]
    assert wildcard == ["EcrLogin"]  # GetAuthorizationToken has no resource scope
    with pytest.raises(DeployConfigError):
        ib.BuildPlan("12345", REGION)


def test_a_build_creates_what_is_missing_and_reports_its_progress(moto_url: str) -> None:
    aws = clients(moto_url)
    plan = ib.BuildPlan(ACCOUNT, REGION)
    context = ib.context_zip(ib.container_dir())
    build_id = ib.start_build(aws, plan, context, installation_id="0123456789abcdef",
                              principal_arn=f"arn:aws:iam::{ACCOUNT}:user/moto")

    assert aws.ecr.describe_repositories()["repositories"][0]["repositoryName"] == (
        "captioner-stt")
    body = aws.s3.get_object(Bucket=plan.bucket, Key=ib.CONTEXT_KEY)["Body"].read()
    assert body == context
    role = aws.iam.get_role(RoleName=ib.ROLE_NAME)["Role"]
    assert {t["Key"]: t["Value"] for t in role["Tags"]}["captioner:managed"] == "true"
    inline = aws.iam.get_role_policy(RoleName=ib.ROLE_NAME, PolicyName=ib.POLICY_NAME)
    assert inline["PolicyDocument"] == plan.role_policies().permissions
    project = aws.codebuild.batch_get_projects(names=[ib.PROJECT])["projects"][0]
    assert project["environment"]["privilegedMode"] is True
    assert project["source"]["location"] == f"{plan.bucket}/{ib.CONTEXT_KEY}"
    env = {v["name"]: v["value"] for v in project["environment"]["environmentVariables"]}
    assert env["IMAGE_URI"] == f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/captioner-stt:latest"
    assert "docker push" in project["source"]["buildspec"]

    progress = ib.build_progress(aws.codebuild, build_id)
    assert progress.succeeded and not progress.running and progress.failure == ""

    # A second build reuses all of it (no "already exists" error).
    again = ib.start_build(aws, plan, context, installation_id="0123456789abcdef",
                           principal_arn=f"arn:aws:iam::{ACCOUNT}:user/moto")
    assert again != build_id
    assert len(aws.codebuild.list_builds_for_project(projectName=ib.PROJECT)["ids"]) == 2


def test_a_failed_phase_says_what_failed() -> None:
    class CodeBuild:
        def batch_get_builds(self, ids):
            from datetime import UTC, datetime
            return {"builds": [{
                "id": ids[0], "buildStatus": "FAILED", "currentPhase": "COMPLETED",
                "startTime": datetime(2026, 1, 1, 10, 0, tzinfo=UTC),
                "endTime": datetime(2026, 1, 1, 10, 7, 30, tzinfo=UTC),
                "phases": [
                    {"phaseType": "PRE_BUILD", "phaseStatus": "SUCCEEDED"},
                    {"phaseType": "BUILD", "phaseStatus": "FAILED", "contexts": [{
                        "statusCode": "COMMAND_EXECUTION_ERROR",
                        "message": "Error while executing command: docker push. Reason: "
                                   "exit status 1"}]},
                    {"phaseType": "FINALIZING"}]}]}

    progress = ib.build_progress(CodeBuild(), "captioner-stt-image:1")
    assert (progress.status, progress.seconds) == ("FAILED", 450.0)
    assert progress.failure.startswith("Error while executing command: docker push")


def test_the_estimate_names_the_monthly_storage_too() -> None:
    text = ib.BuildPlan(ACCOUNT, REGION).estimate
    assert "minutes of CodeBuild" in text and "a month" in text
    assert json.dumps(text)  # plain text


def test_a_build_already_running_is_followed_not_started_again(moto_url: str) -> None:
    aws = replace(clients(moto_url), codebuild=RunningCodeBuild())
    plan = ib.BuildPlan(ACCOUNT, REGION)
    build_id = ib.start_build(aws, plan, b"unused", installation_id="0123456789abcdef",
                              principal_arn=f"arn:aws:iam::{ACCOUNT}:user/moto")
    assert build_id == "captioner-stt-image:new"
    assert aws.s3.list_buckets()["Buckets"] == []  # nothing made, nothing uploaded
    assert ib.running_build(clients(moto_url).codebuild) is None  # no project: none
