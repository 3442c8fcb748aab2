"""An AWS account for the set-up tests: moto for IAM/STS/ECR/S3, Stubber for what moto
cannot answer (IAM policy simulation, Service Quotas)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from captioner.cloud.account import AccountClients, sagemaker_trust_policy

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's account
STT_REPO = "captioner-stt"
STT_IMAGE = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{STT_REPO}:latest"
ROLE_NAME = "CaptionerSageMaker"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/{ROLE_NAME}"
# `endpoint deploy` flags past the two checks moto cannot answer (IAM policy simulation,
# Service Quotas): against moto they are UNKNOWN.
PAST_MOTO = ("--accept-unknown", "pass-role", "--accept-unknown", "role-access",
             "--accept-unknown", "quota")
MANIFEST = json.dumps({
    "schemaVersion": 2,
    "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
    "config": {"digest": "sha256:" + "a" * 64, "size": 1,
               "mediaType": "application/vnd.docker.container.image.v1+json"},
    "layers": [],
})


@dataclass
class FakeAccount:
    """Moto-backed clients plus Stubbers for the two services moto lacks."""

    url: str
    clients: AccountClients
    simulator: Stubber
    quotas: Stubber

    def client(self, service: str) -> Any:
        return boto3.client(service, region_name=REGION, endpoint_url=self.url)

    def add_role(self, name: str = ROLE_NAME, trust: dict[str, Any] | None = None) -> str:
        role = self.client("iam").create_role(
            RoleName=name, AssumeRolePolicyDocument=json.dumps(trust or sagemaker_trust_policy()))
        return role["Role"]["Arn"]

    def add_image(self, repository: str = STT_REPO, tag: str = "latest") -> str:
        ecr = self.client("ecr")
        with contextlib.suppress(ecr.exceptions.RepositoryAlreadyExistsException):
            ecr.create_repository(repositoryName=repository)
        ecr.put_image(repositoryName=repository, imageManifest=MANIFEST, imageTag=tag)
        return f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{repository}:{tag}"

    def add_model(self, bucket: str, key: str, region: str = REGION) -> None:
        s3 = self.client("s3")
        if region == "us-east-1":
            s3.create_bucket(Bucket=bucket)
        else:
            s3.create_bucket(Bucket=bucket,
                             CreateBucketConfiguration={"LocationConstraint": region})
        if key:
            s3.put_object(Bucket=bucket, Key=key, Body=b"weights")

    def allow_pass_role(self, decision: str = "allowed", role_arn: str = ROLE_ARN,
                        principal: str = f"arn:aws:iam::{ACCOUNT}:user/moto") -> None:
        self.simulator.add_response(
            "simulate_principal_policy",
            {"EvaluationResults": [{"EvalActionName": "iam:PassRole",
                                    "EvalResourceName": role_arn,
                                    "EvalDecision": decision}]},
            {"PolicySourceArn": principal, "ActionNames": ["iam:PassRole"],
             "ResourceArns": [role_arn],
             "ContextEntries": [{"ContextKeyName": "iam:PassedToService",
                                 "ContextKeyValues": ["sagemaker.amazonaws.com"],
                                 "ContextKeyType": "string"}]})

    def allow_role_access(self, *, model: tuple[str, str] | None = None,
                          deny: frozenset[str] = frozenset(), role_arn: str = ROLE_ARN,
                          repository: str = f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/{STT_REPO}"
                          ) -> None:
        """The role's own policy simulations: ECR login and pull, and S3 read of ``model``
        (bucket, prefix) when given; actions in ``deny`` come back implicitly denied."""
        needs: list[tuple[list[str], str, list[dict[str, Any]]]] = [
            (["ecr:GetAuthorizationToken"], "*", []),
            (["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"], repository, []),
        ]
        if model is not None:
            bucket, prefix = model
            needs += [(["s3:GetObject"], f"arn:aws:s3:::{bucket}/{prefix}", []),
                      (["s3:ListBucket"], f"arn:aws:s3:::{bucket}", [{
                          "ContextKeyName": "s3:prefix", "ContextKeyValues": [prefix],
                          "ContextKeyType": "string"}])]
        for actions, resource, context in needs:
            self.simulator.add_response(
                "simulate_principal_policy",
                {"EvaluationResults": [
                    {"EvalActionName": a, "EvalResourceName": resource,
                     "EvalDecision": "implicitDeny" if a in deny else "allowed"}
                    for a in actions]},
                {"PolicySourceArn": role_arn, "ActionNames": actions,
                 "ResourceArns": [resource], "ContextEntries": context})

    def quota(self, instance_type: str, value: float | None, *, default: float | None = None
              ) -> None:
        """Applied quota ``value`` (None: not in the applied list), then the default list."""
        params = {"ServiceCode": "sagemaker", "MaxResults": 100}
        applied = [] if value is None else [_quota(instance_type, value)]
        self.quotas.add_response("list_service_quotas", {"Quotas": applied}, params)
        if value is None:
            defaults = [] if default is None else [_quota(instance_type, default)]
            self.quotas.add_response("list_aws_default_service_quotas",
                                     {"Quotas": defaults}, params)


    def pool_quotas(self, *pages: dict[str, float], defaults: dict[str, float] | None = None
                    ) -> None:
        """Applied quotas as Service Quotas pages them (one dict per page), then, when
        ``defaults`` is given, the default list (asked for types not applied)."""
        params: dict[str, Any] = {"ServiceCode": "sagemaker", "MaxResults": 100}
        for number, page in enumerate(pages, start=1):
            answer: dict[str, Any] = {"Quotas": [_quota(t, v) for t, v in page.items()]}
            if number < len(pages):
                answer["NextToken"] = f"page-{number + 1}"
            self.quotas.add_response("list_service_quotas", answer, params)
            params = {**params, "NextToken": f"page-{number + 1}"}
        if defaults is not None:
            self.quotas.add_response(
                "list_aws_default_service_quotas",
                {"Quotas": [_quota(t, v) for t, v in defaults.items()]},
                {"ServiceCode": "sagemaker", "MaxResults": 100})

    def quota_requests(self, requests: list[dict[str, Any]] | None) -> None:
        """The quota's increase requests so far (None: may not read them)."""
        params = {"ServiceCode": "sagemaker", "QuotaCode": "L-12345678"}
        if requests is None:
            self.quotas.add_client_error(
                "list_requested_service_quota_change_history_by_quota", "AccessDeniedException",
                "not authorized", expected_params=params)
        else:
            self.quotas.add_response("list_requested_service_quota_change_history_by_quota",
                                     {"RequestedQuotas": requests}, params)


class RunningCodeBuild:
    """CodeBuild with a build of the captions image still running (moto finishes every
    build at once)."""

    def list_builds_for_project(self, projectName, sortOrder):
        return {"ids": ["captioner-stt-image:new", "captioner-stt-image:old"]}

    def batch_get_builds(self, ids):
        status = {"captioner-stt-image:new": "IN_PROGRESS"}
        return {"builds": [{"id": i, "buildStatus": status.get(i, "SUCCEEDED")}
                           for i in ids]}


def _quota(instance_type: str, value: float) -> dict[str, Any]:
    return {"ServiceCode": "sagemaker", "QuotaCode": "L-12345678",
            "QuotaName": f"{instance_type} for endpoint usage", "Value": value}


@pytest.fixture
def fake_account(moto_url: str) -> Iterator[FakeAccount]:
    def moto(service: str) -> Any:
        return boto3.client(service, region_name=REGION, endpoint_url=moto_url)

    offline = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                            region_name=REGION)
    simulator = offline.client("iam")
    quotas = offline.client("service-quotas")
    clients = AccountClients(sts=moto("sts"), iam=moto("iam"), ecr=moto("ecr"), s3=moto("s3"),
                             service_quotas=quotas, policy_simulator=simulator)
    with Stubber(simulator) as sim, Stubber(quotas) as sq:
        yield FakeAccount(moto_url, clients, sim, sq)
        sim.assert_no_pending_responses()
        sq.assert_no_pending_responses()
