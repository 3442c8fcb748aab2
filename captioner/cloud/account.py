"""What the set-up needs to know about the AWS account: who is signed in, which execution
roles SageMaker may assume, and the least-privilege role Captioner can create.

Plain blocking functions on injected boto3 clients (the GUI runs them in an executor);
AWS failures come back as the typed errors of :mod:`captioner.cloud.errors`. The policy
documents are built without I/O so the set-up can show them, word for word, before
asking to create anything.
"""

from __future__ import annotations

import json
import logging
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from captioner.cloud.calls import call
from captioner.cloud.deploy_plan import NAME_PREFIX, tts_image
from captioner.cloud.errors import AwsError, DeployConfigError, EndpointControlError
from captioner.cloud.images import parse_image_uri
from captioner.cloud.model_source import parse_model_source
from captioner.cloud.ownership import TAG_MANAGED, Owner
from captioner.settings import EndpointDeploySettings

log = logging.getLogger(__name__)

SAGEMAKER_SERVICE = "sagemaker.amazonaws.com"
POLICY_VERSION = "2012-10-17"
PERMISSION_POLICY_NAME = "captioner-endpoint"  # the inline policy of a role Captioner creates
ROLE_NAME_RE = re.compile(r"^[\w+=,.@-]{1,64}$")
ACCOUNT_RE = re.compile(r"^\d{12}$")
LOG_GROUP_PREFIX = "/aws/sagemaker/Endpoints/"


ClientFactory = Callable[[str], Any]  # service name → boto3 client (endpoints.client_factory)


def default_role_name(kind: str) -> str:
    """The name proposed for a new execution role of ``kind`` (one role per kind: each
    carries the permissions of its own image and model)."""
    return f"captioner-endpoint-{kind}"


# ---- who am I ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CallerIdentity:
    """The signed-in principal (STS GetCallerIdentity needs no permission)."""

    account: str
    arn: str  # user, assumed-role session, root or federated user
    user_id: str = ""

    @property
    def partition(self) -> str:
        return self.arn.split(":")[1] if self.arn.count(":") >= 5 else "aws"

    @property
    def is_root(self) -> bool:
        return self.arn.endswith(":root")

    @property
    def display_name(self) -> str:
        """``user/ana``, ``assumed-role/Dev/ana@corp``, ``root``: for the set-up page."""
        return self.arn.split(":", 5)[-1] if self.arn.count(":") >= 5 else self.arn


def caller_identity(sts: Any) -> CallerIdentity:
    """Who the credentials belong to; CredentialsError (with the fix) when they are not valid."""
    response = call(sts, "get_caller_identity")
    return CallerIdentity(account=response["Account"], arn=response["Arn"],
                          user_id=response.get("UserId", ""))


# ---- roles ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RoleInfo:
    name: str
    arn: str
    created_at: datetime | None = None
    description: str = ""
    trust_policy: dict[str, Any] = field(default_factory=dict, repr=False)
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def trusts_sagemaker(self) -> bool:
        return trusts_service(self.trust_policy, SAGEMAKER_SERVICE)

    @property
    def created_by_captioner(self) -> bool:
        return self.tags.get(TAG_MANAGED) == "true"


def _policy_document(value: Any) -> dict[str, Any]:
    """IAM returns policy documents URL-encoded; boto3 usually decodes them already."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value:
        try:
            document = json.loads(urllib.parse.unquote(value))
        except ValueError:
            return {}
        return document if isinstance(document, dict) else {}
    return {}


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def trusts_service(trust_policy: Mapping[str, Any], service: str) -> bool:
    """Does an Allow statement let ``service`` call sts:AssumeRole?"""
    for statement in _as_list(trust_policy.get("Statement")):
        if not isinstance(statement, dict) or statement.get("Effect") != "Allow":
            continue
        actions = {a.lower() for a in _as_list(statement.get("Action")) if isinstance(a, str)}
        if not actions & {"sts:assumerole", "sts:*", "*"}:
            continue
        principal = statement.get("Principal")
        if isinstance(principal, dict) and service in _as_list(principal.get("Service")):
            return True
    return False


def _role_info(role: Mapping[str, Any]) -> RoleInfo:
    return RoleInfo(
        name=role["RoleName"],
        arn=role["Arn"],
        created_at=role.get("CreateDate"),
        description=role.get("Description", "") or "",
        trust_policy=_policy_document(role.get("AssumeRolePolicyDocument")),
        tags={t["Key"]: t["Value"] for t in role.get("Tags", []) or []},
    )


def list_sagemaker_roles(iam: Any) -> list[RoleInfo]:
    """Roles of the account whose trust policy lets SageMaker assume them, by name."""
    roles: list[RoleInfo] = []
    marker: str | None = None
    while True:
        params: dict[str, Any] = {"MaxItems": 1000}
        if marker:
            params["Marker"] = marker
        page = call(iam, "list_roles", **params)
        roles.extend(info for info in map(_role_info, page.get("Roles", []))
                     if info.trusts_sagemaker)
        marker = page.get("Marker") if page.get("IsTruncated") else None
        if not marker:
            break
    roles.sort(key=lambda r: r.name.lower())
    return roles


def role_name_of(role_arn: str) -> str:
    """``arn:aws:iam::123456789012:role/path/Name`` → ``Name`` (what GetRole takes)."""
    return role_arn.rsplit("/", 1)[-1]


def account_of(arn: str) -> str:
    parts = arn.split(":")
    return parts[4] if len(parts) > 5 else ""


def get_role(iam: Any, role_arn: str) -> RoleInfo | None:
    """The role, or None when the account has no role of that name."""
    try:
        response = call(iam, "get_role", RoleName=role_name_of(role_arn))
    except AwsError as exc:
        if exc.code == "NoSuchEntity":
            return None
        raise
    return _role_info(response["Role"])


# ---- the least-privilege execution role ------------------------------------------------


@dataclass(frozen=True, slots=True)
class RolePolicies:
    """The two documents a Captioner execution role carries."""

    trust: dict[str, Any]
    permissions: dict[str, Any]

    def trust_json(self) -> str:
        return json.dumps(self.trust, indent=2)

    def permissions_json(self) -> str:
        return json.dumps(self.permissions, indent=2)


def sagemaker_trust_policy() -> dict[str, Any]:
    return {
        "Version": POLICY_VERSION,
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Service": SAGEMAKER_SERVICE},
            "Action": "sts:AssumeRole",
        }],
    }


def execution_role_policies(*, partition: str, region: str, account: str,
                            image_uri: str, model_source: str = "") -> RolePolicies:
    """Exactly what an endpoint of this image and model needs, no more.

    Pull of the image's repository (plus GetAuthorizationToken, which has no resource
    scope), read of the model prefix when the model comes from S3, the log groups of
    Captioner's endpoints only, and its metrics. Raises DeployConfigError for a URI it cannot scope.
    """
    if not ACCOUNT_RE.match(account):
        raise DeployConfigError(f"{account!r} is not an AWS account id (12 digits).")
    image = parse_image_uri(image_uri)
    statements: list[dict[str, Any]] = [
        {"Sid": "EcrLogin", "Effect": "Allow", "Action": "ecr:GetAuthorizationToken",
         "Resource": "*"},
        {"Sid": "PullImage", "Effect": "Allow",
         "Action": ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer",
                    "ecr:BatchCheckLayerAvailability"],
         "Resource": image.repository_arn(partition)},
    ]
    source = parse_model_source(model_source)
    if source.is_s3:
        bucket_arn = f"arn:{partition}:s3:::{source.bucket}"
        statements.append({"Sid": "ReadModel", "Effect": "Allow", "Action": "s3:GetObject",
                           "Resource": f"{bucket_arn}/{source.prefix}*"})
        list_statement: dict[str, Any] = {"Sid": "ListModel", "Effect": "Allow",
                                          "Action": "s3:ListBucket", "Resource": bucket_arn}
        if source.prefix:
            list_statement["Condition"] = {"StringLike": {"s3:prefix": [f"{source.prefix}*"]}}
        statements.append(list_statement)
    # Captioner's endpoints only (named captioner-<kind>-<time>), not every team's
    log_groups = (f"arn:{partition}:logs:{region}:{account}:log-group:"
                  f"{LOG_GROUP_PREFIX}{NAME_PREFIX}-*")
    statements += [
        {"Sid": "OwnLogs", "Effect": "Allow",
         "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents",
                    "logs:DescribeLogStreams"],
         "Resource": [log_groups, f"{log_groups}:log-stream:*"]},
        {"Sid": "Metrics", "Effect": "Allow", "Action": "cloudwatch:PutMetricData",
         "Resource": "*"},
    ]
    return RolePolicies(sagemaker_trust_policy(),
                        {"Version": POLICY_VERSION, "Statement": statements})


def role_policies_for(kind: str, deploy: EndpointDeploySettings, region: str,
                      identity: CallerIdentity) -> RolePolicies:
    """The policies of a new execution role for this kind's saved image and model (the TTS
    image defaults to AWS's vLLM-Omni image); DeployConfigError when the STT image is
    not chosen yet, since the role may pull only that image's repository."""
    image = deploy.image_uri.strip() or (tts_image(region) if kind == "tts" else "")
    if not image:
        raise DeployConfigError(
            "Choose the image first: the role may pull only that image's repository.")
    return execution_role_policies(partition=identity.partition, region=region,
                                   account=identity.account, image_uri=image,
                                   model_source=deploy.model_source)


def create_execution_role(
    iam: Any,
    name: str,
    policies: RolePolicies,
    *,
    installation_id: str,
    principal_arn: str,
    description: str = "SageMaker execution role for Captioner's endpoints",
    policy_name: str = PERMISSION_POLICY_NAME,
) -> RoleInfo:
    """Create the role with ``policies`` (trust + one inline permission policy), tagged
    with this installation (``cloud.state.load_state().installation_id``) and the
    creating principal (``caller_identity(sts).arn``). If the permission policy cannot
    be attached, the half-made role is deleted again before the error is raised."""
    if not ROLE_NAME_RE.match(name):
        raise DeployConfigError(
            f"{name!r} is not a valid role name (1–64 letters, digits or +=,.@_-)."
        )
    # the same tags as an endpoint stack: Captioner's, this installation's, made by whom
    tags = [{"Key": TAG_MANAGED, "Value": "true"}, *Owner(installation_id, principal_arn).tags()]
    response = call(iam, "create_role", RoleName=name,
                     AssumeRolePolicyDocument=policies.trust_json(),
                     Description=description, Tags=tags)
    try:
        call(iam, "put_role_policy", RoleName=name, PolicyName=policy_name,
              PolicyDocument=policies.permissions_json())
    except EndpointControlError:
        try:
            call(iam, "delete_role", RoleName=name)
        except EndpointControlError as exc:
            log.warning("! could not remove half-made role %s: %s", name, exc)
        raise
    log.info("= created execution role %s", name)
    role = dict(response["Role"])
    role.setdefault("Tags", tags)
    role["AssumeRolePolicyDocument"] = policies.trust
    return _role_info(role)


# ---- clients -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AccountClients:
    """The boto3 clients the set-up and the preflight read from (one region).

    ``policy_simulator`` is the IAM client used for SimulatePrincipalPolicy; it is the
    same client as ``iam`` in the app and a Stubber-wrapped one in tests (moto cannot
    simulate policies).
    """

    sts: Any
    iam: Any
    ecr: Any
    s3: Any
    service_quotas: Any
    policy_simulator: Any = None
    codebuild: Any = None  # builds the captions image (cloud.image_build)

    @property
    def region(self) -> str:
        return str(self.ecr.meta.region_name)

    @property
    def simulator(self) -> Any:
        return self.policy_simulator if self.policy_simulator is not None else self.iam

    @classmethod
    def from_factory(cls, make: ClientFactory) -> AccountClients:
        return cls(sts=make("sts"), iam=make("iam"), ecr=make("ecr"), s3=make("s3"),
                   service_quotas=make("service-quotas"), codebuild=make("codebuild"))

