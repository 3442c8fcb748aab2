"""Build the captions (STT) image in the user's own AWS account, so that a newcomer needs
no Docker and no clone of Captioner: AWS CodeBuild builds ``container/`` and pushes it to
ECR, where the Image list finds it.

What it creates, each only if missing, all named for Captioner and shown to the user
before anything exists: the ECR repository, an S3 bucket for the build files (about
40 KB), the CodeBuild project and its service role (pull the base image, push to that
one repository, read that one object, write the project's logs). A build takes about
20–30 minutes of a medium build machine and bills per minute; the image then costs ECR
storage every month until it is deleted.
"""

from __future__ import annotations

import io
import logging
import sys
import time
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from captioner.cloud.account import (
    ACCOUNT_RE,
    POLICY_VERSION,
    AccountClients,
    RolePolicies,
    caller_identity,
    create_execution_role,
    get_role,
)
from captioner.cloud.calls import call
from captioner.cloud.errors import AwsError, DeployConfigError
from captioner.cloud.images import DEFAULT_STT_REPOSITORY, default_stt_image_uri
from captioner.cloud.state import load_state

log = logging.getLogger(__name__)

PROJECT = "captioner-stt-image"
ROLE_NAME = "captioner-codebuild"
POLICY_NAME = "captioner-image-build"  # the role's inline permission policy
CODEBUILD_SERVICE = "codebuild.amazonaws.com"
BUILD_ENVIRONMENT = "aws/codebuild/standard:7.0"  # Docker inside; privileged mode builds
COMPUTE_TYPE = "BUILD_GENERAL1_MEDIUM"  # 4 vCPU, 128 GB disk: room for the ~20 GB vLLM base
TIMEOUT_MINUTES = 120
CONTEXT_KEY = "stt-image/context.zip"
BUILD_MINUTES = (20, 30)  # what a build takes, for the confirmation
COST_PER_MINUTE = 0.01  # USD, Linux medium on demand (us-east-1; other regions near it)
IMAGE_GB = 10  # the pushed image, compressed, for its monthly storage
ECR_GB_MONTH = 0.10  # USD per GB-month
ROLE_WAIT_SECONDS = 60  # a new role takes a few seconds before CodeBuild may assume it
_STAMP = (2020, 1, 1, 0, 0, 0)  # every file's time in the zip: the same files, the same zip

BUILDSPEC = """\
version: 0.2
phases:
  pre_build:
    commands:
      - aws ecr get-login-password --region "$AWS_DEFAULT_REGION" | docker login --username AWS --password-stdin "$REGISTRY"
  build:
    commands:
      - docker build --platform linux/amd64 -t "$IMAGE_URI" .
      - docker push "$IMAGE_URI"
"""  # noqa: E501 (a YAML command line)

RUNNING = frozenset({"IN_PROGRESS"})


def container_dir() -> Path:
    """``container/`` inside a PyInstaller bundle, or at the top of a checkout."""
    base = getattr(sys, "_MEIPASS", None)
    if base:
        return Path(base) / "container"
    return Path(__file__).resolve().parents[2] / "container"


def context_zip(folder: Path) -> bytes:
    """The build context as a zip (no caches), the same bytes for the same files."""
    if not (folder / "Dockerfile").is_file():
        raise DeployConfigError(f"The image's build files are missing ({folder}).")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if not path.is_file() or "__pycache__" in relative.parts:
                continue
            info = zipfile.ZipInfo(relative.as_posix(), _STAMP)
            info.external_attr = (path.stat().st_mode & 0o777) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())
    return out.getvalue()


@dataclass(frozen=True, slots=True)
class BuildPlan:
    """Names and documents of one account and region's image build."""

    account: str
    region: str
    partition: str = "aws"

    def __post_init__(self) -> None:
        if not ACCOUNT_RE.match(self.account):
            raise DeployConfigError(f"{self.account!r} is not an AWS account id (12 digits).")

    @property
    def registry(self) -> str:
        return f"{self.account}.dkr.ecr.{self.region}.amazonaws.com"

    @property
    def image_uri(self) -> str:
        return default_stt_image_uri(self.account, self.region)

    @property
    def role_arn(self) -> str:
        """The build role's ARN (IAM is global: one role for every region's project)."""
        return f"arn:{self.partition}:iam::{self.account}:role/{ROLE_NAME}"

    @property
    def bucket(self) -> str:
        return f"captioner-build-{self.account}-{self.region}"

    @property
    def estimate(self) -> str:
        low, high = BUILD_MINUTES
        return (f"about {low}–{high} minutes of CodeBuild, about "
                f"${low * COST_PER_MINUTE:.2f}–${high * COST_PER_MINUTE:.2f} once; then "
                f"about ${IMAGE_GB * ECR_GB_MONTH:.2f} a month to keep the ~{IMAGE_GB} GB "
                "image in ECR")

    def role_policies(self) -> RolePolicies:
        """What the build may do, no more: pull and push that one repository, read its
        build files, write its own logs."""
        arn = f"arn:{self.partition}"
        repository = f"{arn}:ecr:{self.region}:{self.account}:repository/{DEFAULT_STT_REPOSITORY}"
        logs = f"{arn}:logs:{self.region}:{self.account}:log-group:/aws/codebuild/{PROJECT}"
        trust = {"Version": POLICY_VERSION, "Statement": [{
            "Effect": "Allow", "Principal": {"Service": CODEBUILD_SERVICE},
            "Action": "sts:AssumeRole"}]}
        statements = [
            {"Sid": "EcrLogin", "Effect": "Allow", "Action": "ecr:GetAuthorizationToken",
             "Resource": "*"},
            {"Sid": "PushImage", "Effect": "Allow",
             "Action": ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage",
                        "ecr:GetDownloadUrlForLayer", "ecr:InitiateLayerUpload",
                        "ecr:UploadLayerPart", "ecr:CompleteLayerUpload", "ecr:PutImage"],
             "Resource": repository},
            {"Sid": "ReadBuildFiles", "Effect": "Allow",
             "Action": ["s3:GetObject", "s3:GetObjectVersion"],
             "Resource": f"{arn}:s3:::{self.bucket}/{CONTEXT_KEY}"},
            {"Sid": "BuildBucket", "Effect": "Allow",
             "Action": ["s3:GetBucketAcl", "s3:GetBucketLocation"],
             "Resource": f"{arn}:s3:::{self.bucket}"},
            {"Sid": "OwnLogs", "Effect": "Allow",
             "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
             "Resource": [logs, f"{logs}:*"]},
        ]
        return RolePolicies(trust, {"Version": POLICY_VERSION, "Statement": statements})

    def project(self, role_arn: str) -> dict[str, Any]:
        """CreateProject's parameters (UpdateProject takes the same)."""
        return {
            "name": PROJECT,
            "description": "Builds Captioner's captions image and pushes it to ECR",
            "source": {"type": "S3", "location": f"{self.bucket}/{CONTEXT_KEY}",
                       "buildspec": BUILDSPEC},
            "artifacts": {"type": "NO_ARTIFACTS"},
            "environment": {
                "type": "LINUX_CONTAINER", "image": BUILD_ENVIRONMENT,
                "computeType": COMPUTE_TYPE, "privilegedMode": True,
                "environmentVariables": [
                    {"name": "REGISTRY", "value": self.registry, "type": "PLAINTEXT"},
                    {"name": "IMAGE_URI", "value": self.image_uri, "type": "PLAINTEXT"}]},
            "serviceRole": role_arn,
            "timeoutInMinutes": TIMEOUT_MINUTES,
        }


@dataclass(frozen=True, slots=True)
class BuildProgress:
    """One look at a running or finished build."""

    status: str  # IN_PROGRESS, SUCCEEDED, FAILED, FAULT, TIMED_OUT, STOPPED
    phase: str  # CodeBuild's current phase (PROVISIONING, BUILD, …)
    seconds: float  # since it started
    failure: str = ""  # the failed phase's own message, when one failed

    @property
    def running(self) -> bool:
        return self.status in RUNNING

    @property
    def succeeded(self) -> bool:
        return self.status == "SUCCEEDED"


def plan_for(clients: AccountClients) -> BuildPlan:
    """The build's names in the clients' account (asked of STS) and region."""
    me = caller_identity(clients.sts)
    return BuildPlan(me.account, clients.region, me.partition)


def running_build(codebuild: Any) -> str | None:
    """The id of a build of the project still running (one started before Captioner was
    closed, or by another of its windows), if any."""
    try:
        ids = call(codebuild, "list_builds_for_project", projectName=PROJECT,
                   sortOrder="DESCENDING").get("ids") or []
    except AwsError as exc:
        if exc.code == "ResourceNotFoundException":  # no project: never built here
            return None
        raise
    if not ids:
        return None
    builds = call(codebuild, "batch_get_builds", ids=ids[:5]).get("builds") or []
    return next((str(b["id"]) for b in builds if b.get("buildStatus") in RUNNING), None)


def start_build(clients: AccountClients, plan: BuildPlan, context: bytes, *,
                installation_id: str, principal_arn: str) -> str:
    """Create what is missing, upload the build files and start a build; its id. A build
    already running is followed instead: two would bill twice for the same image."""
    if (running := running_build(clients.codebuild)) is not None:
        log.info("= image build %s is already running", running)
        return running
    _ensure_repository(clients.ecr)
    _ensure_bucket(clients.s3, plan)
    call(clients.s3, "put_object", Bucket=plan.bucket, Key=CONTEXT_KEY, Body=context)
    role_arn = _ensure_role(clients.iam, plan, installation_id, principal_arn)
    _ensure_project(clients.codebuild, plan, role_arn)
    build = call(clients.codebuild, "start_build", projectName=PROJECT)["build"]
    log.info("= image build %s started", build["id"])
    return str(build["id"])


def start_build_here(clients: AccountClients, plan: BuildPlan) -> str:
    """:func:`start_build` with this Captioner's own ``container/``, tagged with this
    installation and the caller (what the page and ``endpoint build-image`` both do)."""
    return start_build(clients, plan, context_zip(container_dir()),
                       installation_id=load_state().installation_id,
                       principal_arn=caller_identity(clients.sts).arn)


def build_progress(codebuild: Any, build_id: str, now: datetime | None = None
                   ) -> BuildProgress:
    builds = call(codebuild, "batch_get_builds", ids=[build_id]).get("builds") or []
    if not builds:
        raise AwsError(f"CodeBuild knows no build {build_id}.", operation="batch_get_builds")
    build = builds[0]
    started = build.get("startTime")
    ended = build.get("endTime") or now or datetime.now(tz=getattr(started, "tzinfo", None))
    seconds = (ended - started).total_seconds() if isinstance(started, datetime) else 0.0
    failure = next((" ".join(c.get("message", "") for c in phase.get("contexts") or [])
                    or f"{phase.get('phaseType')} {phase.get('phaseStatus')}"
                    for phase in build.get("phases") or []
                    if phase.get("phaseStatus") not in (None, "SUCCEEDED")), "")
    return BuildProgress(str(build.get("buildStatus", "")), str(build.get("currentPhase", "")),
                         max(0.0, seconds), failure.strip())


def _ensure_repository(ecr: Any) -> None:
    try:
        call(ecr, "create_repository", repositoryName=DEFAULT_STT_REPOSITORY,
             imageScanningConfiguration={"scanOnPush": True})
        log.info("= created ECR repository %s", DEFAULT_STT_REPOSITORY)
    except AwsError as exc:
        if exc.code != "RepositoryAlreadyExistsException":
            raise


def _ensure_bucket(s3: Any, plan: BuildPlan) -> None:
    params: dict[str, Any] = {"Bucket": plan.bucket}
    if plan.region != "us-east-1":  # the one region that refuses its own name here
        params["CreateBucketConfiguration"] = {"LocationConstraint": plan.region}
    try:
        call(s3, "create_bucket", **params)
        log.info("= created S3 bucket %s", plan.bucket)
    except AwsError as exc:
        if exc.code != "BucketAlreadyOwnedByYou":
            raise
    call(s3, "put_public_access_block", Bucket=plan.bucket, PublicAccessBlockConfiguration={
        "BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True,
        "RestrictPublicBuckets": True})


def _ensure_role(iam: Any, plan: BuildPlan, installation_id: str, principal_arn: str) -> str:
    arn = plan.role_arn
    if get_role(iam, arn) is not None:
        return arn
    create_execution_role(iam, ROLE_NAME, plan.role_policies(),
                          installation_id=installation_id, principal_arn=principal_arn,
                          description="CodeBuild role that builds Captioner's captions image",
                          policy_name=POLICY_NAME)
    return arn


def _ensure_project(codebuild: Any, plan: BuildPlan, role_arn: str) -> None:
    wanted = plan.project(role_arn)
    known = call(codebuild, "batch_get_projects", names=[PROJECT]).get("projects") or []
    if known and all(known[0].get(key) == wanted[key]
                     for key in ("source", "environment", "serviceRole")):
        return  # as this version of Captioner would make it
    operation = "update_project" if known else "create_project"
    deadline = time.monotonic() + ROLE_WAIT_SECONDS
    while True:
        try:
            call(codebuild, operation, **wanted)
            return
        except AwsError as exc:  # a role made seconds ago is not yet assumable
            if "assumerole" not in str(exc).lower() or time.monotonic() > deadline:
                raise
            time.sleep(5)


__all__ = ["BUILDSPEC", "BuildPlan", "BuildProgress", "build_progress",
           "container_dir", "context_zip", "plan_for", "running_build", "start_build",
           "start_build_here"]
