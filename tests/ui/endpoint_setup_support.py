"""AWS for the set-up tests: moto for IAM, ECR, STS, S3 and SageMaker; botocore Stubbers
(validated against the real service models) for what moto cannot answer — Service
Quotas and IAM policy simulation."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import boto3
from botocore.stub import Stubber

from captioner.cloud.account import AccountClients
from captioner.cloud.endpoints import control_from_settings
from captioner.cloud.manager import EndpointManager
from captioner.settings import AwsSettings
from captioner.ui.endpoints.aws_setup import AccountSetupService, default_clients
from captioner.ui.endpoints.runner import Runner
from captioner.ui.endpoints_page import EndpointsPage

ACCOUNT = "123456789012"
REPO = "captioner-stt"
IMAGE = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/{REPO}:latest"
SIMULATIONS_PER_PREFLIGHT = 8  # more than the checks ask; unused answers are harmless
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


class TestClients:
    """An ``AccountClientsFor`` for AccountSetupService: moto, plus the stubbed edges.

    Each call hands out fresh Stubber-wrapped clients for IAM policy simulation and
    Service Quotas, each answering one preflight. ``quota`` None answers Service Quotas
    with AccessDenied (a user without that permission); a number answers that quota for
    ``quota_type``. ``pass_role`` is the simulated decision on iam:PassRole.
    """

    __test__ = False

    def __init__(self, *, quota: int | None = None, quota_type: str = "ml.g4dn.xlarge",
                 pass_role: str = "allowed") -> None:
        self.quota, self.quota_type, self.pass_role = quota, quota_type, pass_role
        self.simulated: list[list[str]] = []  # the actions of each policy simulation asked

    def __call__(self, aws: AwsSettings) -> AccountClients:
        moto = default_clients(aws)  # AWS_ENDPOINT_URL points these at the moto server
        return replace(moto, service_quotas=self._quotas(), policy_simulator=self._simulator())

    @property
    def simulations(self) -> int:
        """How many iam:PassRole simulations the preflights asked for."""
        return sum(actions == ["iam:PassRole"] for actions in self.simulated)

    def _simulator(self) -> Any:
        client = _offline("iam")
        client.meta.events.register(
            "provide-client-params.iam.SimulatePrincipalPolicy",
            lambda params, **_: self.simulated.append(list(params["ActionNames"])))
        stub = Stubber(client)
        for _ in range(SIMULATIONS_PER_PREFLIGHT):  # pass-role, then the role's own needs
            stub.add_response("simulate_principal_policy", {"EvaluationResults": [
                {"EvalActionName": "iam:PassRole", "EvalResourceName": "*",
                 "EvalDecision": self.pass_role}]})
        stub.activate()
        return client

    def _quotas(self) -> Any:
        client = _offline("service-quotas")
        stub = Stubber(client)
        if self.quota is None:
            stub.add_client_error("list_service_quotas", "AccessDeniedException",
                                  "not authorized to perform: servicequotas:ListServiceQuotas")
        else:
            stub.add_response("list_service_quotas", {"Quotas": [
                {"ServiceCode": "sagemaker", "QuotaCode": "L-0001",
                 "QuotaName": f"{self.quota_type} for endpoint usage",
                 "Value": float(self.quota)}]})
        stub.activate()
        return client


def _offline(service: str) -> Any:
    return boto3.client(service, region_name="us-east-1", aws_access_key_id="x",
                        aws_secret_access_key="x")


class NoKeys:
    """Stands in for the OS keyring (the edge of the system): nothing stored."""

    def __init__(self) -> None:
        self.stored: list[tuple[str, str]] = []

    def store(self, access_key_id: str, secret_access_key: str) -> None:
        self.stored.append((access_key_id, secret_access_key))

    def has_keys(self) -> bool:
        return bool(self.stored)


def make_manager(store, service: AccountSetupService) -> EndpointManager:
    """As the app wires it, polling faster: its deploy gate is the same preflight."""
    return EndpointManager(lambda: control_from_settings(store.settings),
                           lambda kind: getattr(store.settings.cloud, kind),
                           poll_interval=0.05, monitor_interval=3600, tick_interval=None,
                           preflight=lambda kind: service.preflight(store.settings, kind))


def open_page(qtbot, store, service: AccountSetupService) -> EndpointsPage:
    """The Endpoints page on ``service``, shown tall enough to need no scrolling."""
    page = EndpointsPage(make_manager(store, service), store, service, keys=NoKeys(),
                         runner=Runner())
    qtbot.addWidget(page)
    page.resize(900, 1400)
    page.load(store.settings)
    page.show()
    return page
