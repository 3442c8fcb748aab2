"""The :class:`SetupService` the app uses: account queries and preflight over boto3.

Every method blocks (the UI runs it in an executor) and raises the typed errors of
``captioner.cloud.errors``. Clients come from ``clients(aws, service)``, so tests
point them at a moto server (with ``AWS_ENDPOINT_URL``) or wrap one in a Stubber
where moto has no model of the service (Service Quotas, IAM policy simulation).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from botocore.parsers import ResponseParserError

from captioner.aws import available_profiles
from captioner.cloud.deploy_plan import DEFAULT_STT_MODEL, TTS_MODEL_ID, Kind, tts_image
from captioner.cloud.endpoints import CLIENT_CONFIG, session_from_settings
from captioner.cloud.errors import (
    AccessDeniedError,
    EndpointControlError,
    error_code,
    translate,
)
from captioner.cloud.pricing import PriceTable, format_cost, load_prices
from captioner.settings import AwsSettings, Settings
from captioner.ui.endpoints.service import (
    Check,
    CheckState,
    Identity,
    ImageChoice,
    RoleChoice,
    RoleProposal,
)

log = logging.getLogger(__name__)

# What an optional check may meet when AWS (or a stand-in) cannot answer it: the check
# then says UNKNOWN with the reason instead of failing the whole preflight.
UNREADABLE = (ClientError, BotoCoreError, ResponseParserError)

Clients = Callable[[AwsSettings, str], Any]  # (aws settings, service name) → boto3 client

SAGEMAKER_PRINCIPAL = "sagemaker.amazonaws.com"
ECR_URI_RE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com/"
    r"(?P<repo>[a-z0-9._/-]+)(?::(?P<tag>[\w.-]+)|@(?P<digest>sha256:[0-9a-f]{64}))?$")
S3_RE = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/?(?P<prefix>.*)$")
ROLE_NAMES: dict[Kind, str] = {"stt": "CaptionerSageMakerCaptions",
                               "tts": "CaptionerSageMakerReplies"}
IMAGES_PER_REPOSITORY = 20
# The instance families that carry the GPUs these models need (for the pool list).
GPU_FAMILIES = ("ml.g4dn.", "ml.g5.", "ml.g6.", "ml.g6e.")


def default_clients(aws: AwsSettings, service: str) -> Any:
    """A client signed as the settings say; a missing profile or keys is a typed error."""
    session = session_from_settings(Settings(aws=aws), aws.region)
    try:
        return session.client(service, region_name=aws.region, config=CLIENT_CONFIG)
    except BotoCoreError as exc:
        raise translate(exc, f"{service} client") from exc


def _aws_call(fn: Callable[..., Any], operation: str, **params: Any) -> Any:
    try:
        return fn(**params)
    except (ClientError, BotoCoreError) as exc:
        raise translate(exc, operation) from exc


def _reason(exc: BaseException) -> str:
    """A short why for an unreadable check: the AWS error code, or the kind of failure."""
    if isinstance(exc, ResponseParserError):
        return "AWS gave no readable answer"
    return (error_code(exc) if isinstance(exc, ClientError) else "") or type(exc).__name__


def trusts_sagemaker(document: Any) -> bool:
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return False
    statements = document.get("Statement", []) if isinstance(document, dict) else []
    for st in statements if isinstance(statements, list) else [statements]:
        principal = st.get("Principal", {}) if isinstance(st, dict) else {}
        services = principal.get("Service", []) if isinstance(principal, dict) else []
        services = [services] if isinstance(services, str) else services
        if st.get("Effect") == "Allow" and SAGEMAKER_PRINCIPAL in services:
            return True
    return False


def role_name_of(arn: str) -> str:
    return arn.rsplit("/", 1)[-1]


def caller_policy_source(arn: str) -> str:
    """The ARN IAM simulation accepts: an assumed-role session → its role's ARN."""
    m = re.match(r"^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role/([^/]+)/", arn)
    return f"arn:{m[1]}:iam::{m[2]}:role/{m[3]}" if m else arn


class AccountSetupService:
    def __init__(self, clients: Clients = default_clients, *,
                 prices: PriceTable | None = None) -> None:
        self.clients = clients
        self.prices = prices if prices is not None else load_prices()

    # ---- account -----------------------------------------------------------------------

    def profiles(self) -> list[str]:
        return available_profiles()

    def identity(self, aws: AwsSettings) -> Identity:
        sts = self.clients(aws, "sts")
        answer = _aws_call(sts.get_caller_identity, "sts:GetCallerIdentity")
        return Identity(answer["Account"], answer["Arn"])

    def sagemaker_roles(self, aws: AwsSettings) -> list[RoleChoice]:
        iam = self.clients(aws, "iam")
        roles: list[RoleChoice] = []
        marker: dict[str, str] = {}
        while True:
            page = _aws_call(iam.list_roles, "iam:ListRoles", **marker)
            roles += [RoleChoice(r["RoleName"], r["Arn"]) for r in page.get("Roles", [])
                      if trusts_sagemaker(r.get("AssumeRolePolicyDocument", {}))]
            if not page.get("IsTruncated"):
                return sorted(roles, key=lambda r: r.name.lower())
            marker = {"Marker": page["Marker"]}

    def images(self, aws: AwsSettings) -> list[ImageChoice]:
        ecr = self.clients(aws, "ecr")
        found: list[tuple[str, ImageChoice]] = []
        repos = _aws_call(ecr.describe_repositories, "ecr:DescribeRepositories")
        for repo in repos.get("repositories", []):
            details = _aws_call(ecr.describe_images, "ecr:DescribeImages",
                                repositoryName=repo["repositoryName"],
                                maxResults=IMAGES_PER_REPOSITORY).get("imageDetails", [])
            for image in details:
                pushed = image.get("imagePushedAt")
                stamp = pushed.strftime("%Y-%m-%d %H:%M") if pushed else ""
                for tag in image.get("imageTags", []):
                    found.append((stamp, ImageChoice(f"{repo['repositoryUri']}:{tag}", stamp)))
        return [choice for _, choice in sorted(found, key=lambda x: x[0], reverse=True)]

    # ---- the execution role --------------------------------------------------------------

    def propose_role(self, settings: Settings, kind: Kind) -> RoleProposal:
        """The least-privilege role for this kind's image and model (nothing is created)."""
        plan = getattr(settings.cloud, kind)
        region = settings.aws.region
        image = plan.image_uri.strip() or (tts_image(region) if kind == "tts" else "")
        m = ECR_URI_RE.match(image)
        if m is None:
            raise EndpointControlError(
                "Choose the image first: the role may pull only that image's repository.")
        repo_arn = f"arn:aws:ecr:{m['region']}:{m['account']}:repository/{m['repo']}"
        statements: list[dict[str, Any]] = [
            {"Sid": "PullToken", "Effect": "Allow", "Action": "ecr:GetAuthorizationToken",
             "Resource": "*"},
            {"Sid": "PullImage", "Effect": "Allow",
             "Action": ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
             "Resource": repo_arn},
        ]
        s3 = S3_RE.match(plan.model_source.strip())
        if s3 is not None:
            prefix = s3["prefix"]
            statements += [
                {"Sid": "ReadModel", "Effect": "Allow", "Action": "s3:GetObject",
                 "Resource": f"arn:aws:s3:::{s3['bucket']}/{prefix}*"},
                {"Sid": "ListModel", "Effect": "Allow", "Action": "s3:ListBucket",
                 "Resource": f"arn:aws:s3:::{s3['bucket']}",
                 "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}}},
            ]
        statements += [
            {"Sid": "OwnLogs", "Effect": "Allow",
             "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
             "Resource": "arn:aws:logs:*:*:log-group:/aws/sagemaker/Endpoints/*"},
            {"Sid": "Metrics", "Effect": "Allow", "Action": "cloudwatch:PutMetricData",
             "Resource": "*"},
        ]
        trust = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"Service": SAGEMAKER_PRINCIPAL},
             "Action": "sts:AssumeRole"}]}
        return RoleProposal(ROLE_NAMES[kind], trust,
                            {"Version": "2012-10-17", "Statement": statements},
                            "CaptionerEndpointAccess")

    def create_role(self, aws: AwsSettings, proposal: RoleProposal) -> RoleChoice:
        iam = self.clients(aws, "iam")
        role = _aws_call(iam.create_role, "iam:CreateRole", RoleName=proposal.name,
                         AssumeRolePolicyDocument=json.dumps(proposal.trust_policy),
                         Description="SageMaker execution role made by Captioner",
                         Tags=[{"Key": "captioner:managed", "Value": "true"}])["Role"]
        _aws_call(iam.put_role_policy, "iam:PutRolePolicy", RoleName=proposal.name,
                  PolicyName=proposal.policy_name,
                  PolicyDocument=json.dumps(proposal.permission_policy))
        log.info("= created execution role %s", role["Arn"])
        return RoleChoice(role["RoleName"], role["Arn"])

    # ---- preflight -----------------------------------------------------------------------

    def hourly_price(self, instance_type: str, region: str) -> float | None:
        return self.prices.hourly(instance_type, region)

    def instance_types(self, kind: Kind, region: str) -> list[str]:
        table = self.prices.regions.get(region) or self.prices.regions.get(
            self.prices.fallback_region, {})
        types = [t for t in table if t.startswith(GPU_FAMILIES)]
        return sorted(types, key=lambda t: (table[t], t))

    def preflight(self, settings: Settings, kind: Kind) -> list[Check]:
        """Every check, in order; a check that cannot run says why (never raises)."""
        aws = settings.aws
        try:
            me = self.identity(aws)
        except EndpointControlError as exc:
            fix = "Choose a profile or store access keys above, then press Check account."
            return [Check("credentials", "Credentials", CheckState.FAIL, str(exc), fix)]
        checks = [Check("credentials", "Credentials", CheckState.PASS,
                        f"account {me.account} as {me.arn}")]
        plan = getattr(settings.cloud, kind)
        checks.append(self._check_role(aws, me, plan.role_arn.strip()))
        checks.append(self._check_image(aws, kind, plan.image_uri.strip()))
        checks.append(self._check_model(aws, kind, plan.model_source.strip()))
        checks.append(self._check_quota(aws, plan.instance_types))
        checks.append(self._check_price(aws.region, plan.instance_types))
        return checks

    def _check_role(self, aws: AwsSettings, me: Identity, arn: str) -> Check:
        title = "Execution role"
        if not arn:
            return Check("role", title, CheckState.FAIL, "none chosen",
                         "Choose a role that trusts SageMaker, or press Create role.")
        iam = self.clients(aws, "iam")
        try:
            role = _aws_call(iam.get_role, "iam:GetRole", RoleName=role_name_of(arn))["Role"]
        except AccessDeniedError as exc:
            return Check("role", title, CheckState.UNKNOWN, str(exc),
                         "Ask your administrator for iam:GetRole, or go past this check.")
        except EndpointControlError as exc:
            return Check("role", title, CheckState.FAIL, str(exc),
                         "Choose an existing role or press Create role.")
        if not trusts_sagemaker(role.get("AssumeRolePolicyDocument", {})):
            return Check("role", title, CheckState.FAIL,
                         f"{role['RoleName']} does not trust {SAGEMAKER_PRINCIPAL}",
                         "Choose another role, or press Create role.")
        try:
            result = iam.simulate_principal_policy(
                PolicySourceArn=caller_policy_source(me.arn), ActionNames=["iam:PassRole"],
                ResourceArns=[arn])
        except UNREADABLE as exc:
            return Check("role", title, CheckState.UNKNOWN,
                         f"{role['RoleName']} trusts SageMaker; whether you may pass it could "
                         f"not be read ({_reason(exc)})",
                         "Go past this check if you know you have iam:PassRole on it.")
        decisions = [r.get("EvalDecision") for r in result.get("EvaluationResults", [])]
        if decisions and all(d == "allowed" for d in decisions):
            return Check("role", title, CheckState.PASS,
                         f"{role['RoleName']} trusts SageMaker and you may pass it")
        return Check("role", title, CheckState.FAIL,
                     f"you may not pass {role['RoleName']} to SageMaker (iam:PassRole denied)",
                     "Ask your administrator for iam:PassRole on this role.")

    def _check_image(self, aws: AwsSettings, kind: Kind, uri: str) -> Check:
        title = "Image"
        if kind == "tts" and (not uri or uri == tts_image(aws.region)):
            return Check("image", title, CheckState.PASS,
                         f"AWS's vLLM-Omni image for {aws.region}")
        if not uri:
            return Check("image", title, CheckState.FAIL, "none chosen",
                         "Build and push the captions image (the command is shown under "
                         "Image), then choose it.")
        m = ECR_URI_RE.match(uri)
        if m is None:
            return Check("image", title, CheckState.FAIL, f"{uri} is not an ECR image URI",
                         "SageMaker pulls from Amazon ECR: choose or paste an ECR image.")
        if m["region"] != aws.region:
            return Check("image", title, CheckState.FAIL,
                         f"the image is in {m['region']}, the endpoint in {aws.region}",
                         f"Push the image to {aws.region} (or change the region).")
        image_id = {"imageDigest": m["digest"]} if m["digest"] else {
            "imageTag": m["tag"] or "latest"}
        ecr = self.clients(aws, "ecr")
        try:
            _aws_call(ecr.describe_images, "ecr:DescribeImages", registryId=m["account"],
                      repositoryName=m["repo"], imageIds=[image_id])
        except AccessDeniedError as exc:
            return Check("image", title, CheckState.UNKNOWN, str(exc),
                         "Go past this check if you know the image exists.")
        except EndpointControlError as exc:
            return Check("image", title, CheckState.FAIL, f"{uri} was not found ({exc})",
                         "Push the image (see the command under Image) or choose another.")
        return Check("image", title, CheckState.PASS, f"{uri} exists")

    def _check_model(self, aws: AwsSettings, kind: Kind, source: str) -> Check:
        title = "Model"
        default = DEFAULT_STT_MODEL if kind == "stt" else TTS_MODEL_ID
        s3 = S3_RE.match(source)
        if not source.startswith("s3://"):
            return Check("model", title, CheckState.PASS,
                         f"{source or default} from Hugging Face (downloaded at start)")
        if s3 is None:
            return Check("model", title, CheckState.FAIL, f"{source} is not an s3:// prefix",
                         "Write it as s3://bucket/prefix/ or use a Hugging Face id.")
        client = self.clients(aws, "s3")
        try:
            page = _aws_call(client.list_objects_v2, "s3:ListObjectsV2", Bucket=s3["bucket"],
                             Prefix=s3["prefix"], MaxKeys=1)
        except AccessDeniedError as exc:
            return Check("model", title, CheckState.UNKNOWN, str(exc),
                         "Go past this check if the model files are there.")
        except EndpointControlError as exc:
            return Check("model", title, CheckState.FAIL, str(exc),
                         "Check the bucket name and that it is in this account.")
        if not page.get("KeyCount"):
            return Check("model", title, CheckState.FAIL, f"no files under {source}",
                         "Upload the model files there, or use a Hugging Face id.")
        return Check("model", title, CheckState.PASS, f"files found under {source}")

    def _check_quota(self, aws: AwsSettings, types: list[str]) -> Check:
        title = "Quota"
        if not types:
            return Check("quota", title, CheckState.FAIL, "no instance type chosen",
                         "Tick at least one instance type in the pool.")
        wanted = f"{types[0]} for endpoint usage"
        client = self.clients(aws, "service-quotas")
        try:
            kwargs: dict[str, str] = {}
            while True:
                page = client.list_service_quotas(ServiceCode="sagemaker", **kwargs)
                for quota in page.get("Quotas", []):
                    if quota.get("QuotaName") == wanted:
                        value = int(quota.get("Value", 0))
                        if value >= 1:
                            return Check("quota", title, CheckState.PASS,
                                         f"{wanted}: {value}")
                        return Check("quota", title, CheckState.FAIL, f"{wanted}: 0",
                                     "Request an increase in Service Quotas (SageMaker → "
                                     f"“{wanted}”), or put another type first in the pool.")
                if not page.get("NextToken"):
                    break
                kwargs = {"NextToken": page["NextToken"]}
        except UNREADABLE as exc:
            return Check("quota", title, CheckState.UNKNOWN,
                         f"could not read the quota “{wanted}” ({_reason(exc)})",
                         "Go past this check if you know the quota is at least 1.")
        return Check("quota", title, CheckState.UNKNOWN, f"no quota named “{wanted}” found",
                     "Go past this check if you know the quota is at least 1.")

    def _check_price(self, region: str, types: list[str]) -> Check:
        title = "Price"
        known = [(t, self.prices.hourly(t, region)) for t in types]
        priced = [p for _, p in known if p is not None]
        if not priced:
            return Check("price", title, CheckState.UNKNOWN,
                         f"no price known for {', '.join(types) or 'the pool'} in {region}",
                         "Check the AWS pricing page before you go past this check.")
        low, high = min(priced), max(priced)
        text = (f"about {format_cost(low)}/hour" if low == high else
                f"about {format_cost(low)}–{format_cost(high)}/hour, by the type that wins")
        return Check("price", title, CheckState.PASS, text)


__all__ = ["AccountSetupService", "Clients", "default_clients", "trusts_sagemaker"]
