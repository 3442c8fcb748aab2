"""AWS for the set-up tests: moto for IAM, ECR, STS, S3 and SageMaker; botocore Stubbers
(validated against the real service models) for what moto cannot answer — Service
Quotas and IAM policy simulation."""

from __future__ import annotations

import json
from typing import Any

import boto3
from botocore.stub import ANY, Stubber

from captioner.settings import AwsSettings
from captioner.ui.endpoints.aws_setup import default_clients

ACCOUNT = "123456789012"
REPO = "captioner-stt"
IMAGE = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/{REPO}:latest"
MANIFEST = {"schemaVersion": 2,
            "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "config": {"digest": "sha256:" + "a" * 64, "size": 1,
                       "mediaType": "application/vnd.docker.container.image.v1+json"},
            "layers": []}


def push_image(moto_url: str) -> str:
    """What container/build_and_push.sh leaves behind: a repository with a tagged image."""
    ecr = boto3.client("ecr", region_name="us-east-1", endpoint_url=moto_url)
    ecr.create_repository(repositoryName=REPO)
    ecr.put_image(repositoryName=REPO, imageManifest=json.dumps(MANIFEST), imageTag="latest")
    return IMAGE


class _SimulatingIam:
    """The moto IAM client, except policy simulation, which a Stubber answers."""

    def __init__(self, iam: Any, decision: str, calls: list[dict[str, Any]]) -> None:
        self._iam, self._decision, self._calls = iam, decision, calls

    def __getattr__(self, name: str) -> Any:
        return getattr(self._iam, name)

    def simulate_principal_policy(self, **params: Any) -> dict[str, Any]:
        client = boto3.client("iam", region_name="us-east-1", aws_access_key_id="x",
                              aws_secret_access_key="x")
        with Stubber(client) as stub:
            stub.add_response("simulate_principal_policy", {"EvaluationResults": [
                {"EvalActionName": "iam:PassRole", "EvalResourceName": params["ResourceArns"][0],
                 "EvalDecision": self._decision}]},
                {"PolicySourceArn": ANY, "ActionNames": ["iam:PassRole"],
                 "ResourceArns": ANY})
            self._calls.append(params)
            return client.simulate_principal_policy(**params)


class TestClients:
    """A ``Clients`` for AccountSetupService: moto, plus the stubbed edges.

    ``quota`` None answers Service Quotas with AccessDenied (a user without that
    permission); a number answers that quota for ``quota_type``.
    """

    __test__ = False

    def __init__(self, *, quota: int | None = None, quota_type: str = "ml.g4dn.xlarge",
                 pass_role: str = "allowed") -> None:
        self.quota, self.quota_type, self.pass_role = quota, quota_type, pass_role
        self.simulations: list[dict[str, Any]] = []
        self.quota_calls = 0

    def __call__(self, aws: AwsSettings, service: str) -> Any:
        if service == "service-quotas":
            return self._quotas()
        client = default_clients(aws, service)
        if service == "iam":
            return _SimulatingIam(client, self.pass_role, self.simulations)
        return client

    def _quotas(self) -> Any:
        self.quota_calls += 1
        client = boto3.client("service-quotas", region_name="us-east-1",
                              aws_access_key_id="x", aws_secret_access_key="x")
        stub = Stubber(client)
        if self.quota is None:
            stub.add_client_error("list_service_quotas", "AccessDeniedException",
                                  "not authorized to perform: servicequotas:ListServiceQuotas",
                                  expected_params={"ServiceCode": "sagemaker"})
        else:
            stub.add_response("list_service_quotas", {"Quotas": [
                {"ServiceCode": "sagemaker", "QuotaCode": "L-0001",
                 "QuotaName": f"{self.quota_type} for endpoint usage",
                 "Value": float(self.quota)}]}, {"ServiceCode": "sagemaker"})
        stub.activate()
        return client


class NoKeys:
    """Stands in for the OS keyring (the edge of the system): nothing stored."""

    def __init__(self) -> None:
        self.stored: list[tuple[str, str]] = []

    def store(self, access_key_id: str, secret_access_key: str) -> None:
        self.stored.append((access_key_id, secret_access_key))

    def has_keys(self) -> bool:
        return bool(self.stored)
