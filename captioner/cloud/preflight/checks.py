"""The checks themselves: blocking boto3 calls on injected clients, each returning one
:class:`Check`; an AWS refusal to answer becomes UNKNOWN, bad settings become FAIL."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from captioner.cloud import account as acct
from captioner.cloud.deploy_plan import (
    TTS_MODEL_ID,
    Kind,
    tts_image,
    validate_instance_types,
    validate_role_arn,
)
from captioner.cloud.errors import (
    AccessDeniedError,
    AwsError,
    CredentialsError,
    DeployConfigError,
    EndpointControlError,
)
from captioner.cloud.images import build_and_push_command, find_image, parse_image_uri
from captioner.cloud.model_source import inspect_s3_source, parse_model_source
from captioner.cloud.preflight.report import Check, CheckId, Status
from captioner.cloud.pricing import PriceTable, format_cost
from captioner.cloud.quotas import QUOTA_NAME, find_quotas, open_request
from captioner.settings import DEFAULT_STT_MODEL, EndpointDeploySettings

log = logging.getLogger(__name__)

PRICING_URL = "https://aws.amazon.com/sagemaker/ai/pricing/"
PASSED_TO_SERVICE_KEY = "iam:PassedToService"
SETUP_PLACE = "Settings → Endpoints"
MAX_DETAIL = 200  # characters of an AWS error message quoted in a check's detail


@dataclass
class Context:
    kind: Kind
    region: str
    settings: EndpointDeploySettings
    clients: acct.AccountClients | None
    prices: PriceTable
    identity: acct.CallerIdentity | None = None
    role: acct.RoleInfo | None = None

    @property
    def account(self) -> str:
        return self.identity.account if self.identity else "ACCOUNT_ID"


NOT_CHECKED_CREDENTIALS = "Not checked: the AWS credentials did not work."
NOT_CHECKED_ROLE = "Not checked until the execution role is sorted out."


def _unknown_from(exc: EndpointControlError, what: str, permission: str) -> Check | None:
    """UNKNOWN for a check AWS would not answer; None for errors that are real failures."""
    if isinstance(exc, AccessDeniedError):
        return Check(CheckId.CREDENTIALS, Status.UNKNOWN,
                     f"These credentials may not {what} ({permission}).",
                     f"Ask for {permission}, or override this check if you know it is fine.")
    if isinstance(exc, AwsError) and not isinstance(exc, CredentialsError):
        return Check(CheckId.CREDENTIALS, Status.UNKNOWN, f"Could not {what}: {_brief(exc)}",
                     "Try again; override this check if AWS keeps failing to answer.")
    return None


def _brief(exc: Exception) -> str:
    """The first line of an error, shortened: a proxy's answer can be a whole HTML page."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = text.split("<", 1)[0].rstrip(" :") or text
    return text if len(text) <= MAX_DETAIL else text[:MAX_DETAIL - 1] + "…"


def guarded(check_id: CheckId, what: str, permission: str,
             run: Callable[[Context], Check]) -> Callable[[Context], Check]:
    """Run one check; AWS refusing to answer becomes UNKNOWN, bad settings become FAIL."""

    def guarded(ctx: Context) -> Check:
        try:
            return run(ctx)
        except DeployConfigError as exc:
            return Check(check_id, Status.FAIL, str(exc), f"Correct it in {SETUP_PLACE}.")
        except EndpointControlError as exc:
            unknown = _unknown_from(exc, what, permission)
            if unknown is None:
                return Check(check_id, Status.FAIL, str(exc), "")
            log.info("! preflight %s unknown: %s", check_id.value, exc)
            return replace(unknown, id=check_id)

    return guarded


def check_credentials(ctx: Context) -> Check:
    assert ctx.clients is not None
    try:
        ctx.identity = acct.caller_identity(ctx.clients.sts)
    except CredentialsError as exc:
        return Check(CheckId.CREDENTIALS, Status.FAIL, str(exc),
                     f"Sign in again or choose other credentials in {SETUP_PLACE}.")
    return Check(CheckId.CREDENTIALS, Status.PASS,
                 f"Account {ctx.identity.account} as {ctx.identity.display_name}.")


def _check_role(ctx: Context) -> Check:
    assert ctx.clients is not None and ctx.identity is not None
    if not ctx.settings.role_arn.strip():
        return Check(CheckId.ROLE, Status.FAIL, "No execution role is chosen.",
                     "Choose a role that SageMaker may assume, or let Captioner create one "
                     f"({SETUP_PLACE}; --role-arn on the command line).")
    role_arn = validate_role_arn(ctx.settings.role_arn)
    name = acct.role_name_of(role_arn)
    if acct.account_of(role_arn) != ctx.identity.account:
        return Check(CheckId.ROLE, Status.FAIL,
                     f"Role {name} belongs to account {acct.account_of(role_arn)}, but these "
                     f"credentials are for account {ctx.identity.account}.",
                     "Choose a role of the signed-in account, or sign in to the role's account.")
    role = acct.get_role(ctx.clients.iam, role_arn)
    if role is None:
        return Check(CheckId.ROLE, Status.FAIL,
                     f"Role {name} does not exist in account {ctx.identity.account}.",
                     "Choose an existing role that trusts SageMaker, or let Captioner create it.")
    if not role.trusts_sagemaker:
        return Check(CheckId.ROLE, Status.FAIL,
                     f"Role {name} does not let SageMaker assume it (its trust policy has no "
                     f"{acct.SAGEMAKER_SERVICE}).",
                     f"Add {acct.SAGEMAKER_SERVICE} as a trusted service (sts:AssumeRole) to "
                     "the role's trust relationships, or let Captioner create a new role.")
    ctx.role = role
    return Check(CheckId.ROLE, Status.PASS, f"Role {name} exists and SageMaker may assume it.")


def _simulation_principal(ctx: Context) -> str | None:
    """The IAM ARN SimulatePrincipalPolicy takes for the caller (None: cannot simulate)."""
    assert ctx.clients is not None and ctx.identity is not None
    arn = ctx.identity.arn
    resource = arn.split(":", 5)[-1]
    iam_prefix = f"arn:{ctx.identity.partition}:iam::{ctx.identity.account}:"
    if resource.startswith("user/"):
        return iam_prefix + resource
    if ":sts::" in arn and resource.startswith("assumed-role/"):
        role_name = resource.split("/")[1]
        try:
            role = acct.get_role(ctx.clients.iam, role_name)
        except EndpointControlError:
            role = None  # fall back to the path-less ARN
        return role.arn if role else f"{iam_prefix}role/{role_name}"
    return None


def _check_pass_role(ctx: Context) -> Check:
    assert ctx.clients is not None and ctx.identity is not None
    if ctx.role is None:
        return Check(CheckId.PASS_ROLE, Status.UNKNOWN, NOT_CHECKED_ROLE)
    if ctx.identity.is_root:
        return Check(CheckId.PASS_ROLE, Status.PASS,
                     "The account's root user may pass any of its roles.")
    principal = _simulation_principal(ctx)
    if principal is None:
        return Check(CheckId.PASS_ROLE, Status.UNKNOWN,
                     f"IAM cannot simulate the policies of {ctx.identity.display_name}.",
                     "Override this check if you know you may pass the role to SageMaker.")
    response = acct.call(
        ctx.clients.simulator, "simulate_principal_policy", PolicySourceArn=principal,
        ActionNames=["iam:PassRole"], ResourceArns=[ctx.role.arn],
        ContextEntries=[{"ContextKeyName": PASSED_TO_SERVICE_KEY,
                         "ContextKeyValues": [acct.SAGEMAKER_SERVICE],
                         "ContextKeyType": "string"}])
    results = response.get("EvaluationResults") or []
    decision = results[0].get("EvalDecision", "") if results else ""
    if decision == "allowed":
        return Check(CheckId.PASS_ROLE, Status.PASS,
                     f"{ctx.identity.display_name} may pass {ctx.role.name} to SageMaker.")
    how = "explicitly denies" if decision == "explicitDeny" else "does not allow"
    return Check(CheckId.PASS_ROLE, Status.FAIL,
                 f"IAM {how} iam:PassRole on {ctx.role.name} for {ctx.identity.display_name}.",
                 f"Ask an administrator to allow iam:PassRole on {ctx.role.arn} (with "
                 f"iam:PassedToService = {acct.SAGEMAKER_SERVICE}) for these credentials.")


def _image_uri(ctx: Context) -> str:
    return ctx.settings.image_uri.strip() or (tts_image(ctx.region) if ctx.kind == "tts" else "")


def _role_needs(ctx: Context) -> list[tuple[list[str], str, list[dict[str, Any]]]]:
    """(actions, resource ARN, context) the endpoint's role must be allowed, to start."""
    assert ctx.identity is not None
    partition = ctx.identity.partition
    image = parse_image_uri(_image_uri(ctx))
    needs: list[tuple[list[str], str, list[dict[str, Any]]]] = [
        (["ecr:GetAuthorizationToken"], "*", []),
        (["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"], image.repository_arn(partition),
         []),
    ]
    default = DEFAULT_STT_MODEL if ctx.kind == "stt" else TTS_MODEL_ID
    source = parse_model_source(ctx.settings.model_source, default)
    if source.is_s3:
        bucket = f"arn:{partition}:s3:::{source.bucket}"
        needs.append((["s3:GetObject"], f"{bucket}/{source.prefix}", []))
        needs.append((["s3:ListBucket"], bucket, [{
            "ContextKeyName": "s3:prefix", "ContextKeyValues": [source.prefix],
            "ContextKeyType": "string"}]))
    return needs


def _check_role_access(ctx: Context) -> Check:
    assert ctx.clients is not None
    if ctx.role is None:
        return Check(CheckId.ROLE_ACCESS, Status.UNKNOWN, NOT_CHECKED_ROLE)
    try:
        needs = _role_needs(ctx)
    except DeployConfigError:
        return Check(CheckId.ROLE_ACCESS, Status.UNKNOWN,
                     "Not checked until the image and model source are valid.")
    denied: list[str] = []
    for actions, resource, context in needs:
        response = acct.call(ctx.clients.simulator, "simulate_principal_policy",
                             PolicySourceArn=ctx.role.arn, ActionNames=actions,
                             ResourceArns=[resource], ContextEntries=context)
        denied += [f"{r.get('EvalActionName')} on {resource}"
                   for r in response.get("EvaluationResults") or []
                   if r.get("EvalDecision") != "allowed"]
    if denied:
        return Check(CheckId.ROLE_ACCESS, Status.FAIL,
                     f"Role {ctx.role.name} may not: {'; '.join(denied)}.",
                     "Allow these in the role's permissions (the set-up shows the exact "
                     "policy Captioner would attach), or let Captioner create a role.")
    what = "pull the image and read the model" if len(needs) > 2 else "pull the image"
    return Check(CheckId.ROLE_ACCESS, Status.PASS, f"Role {ctx.role.name} may {what}.")


def _check_image(ctx: Context) -> Check:
    assert ctx.clients is not None
    uri = _image_uri(ctx)
    build = build_and_push_command(ctx.region, ctx.account)
    if not uri:
        return Check(CheckId.IMAGE, Status.FAIL, "No STT image is chosen.",
                     "Choose an image from your ECR repositories, or press “Build it in "
                     "my account” under Image (AWS CodeBuild builds it; nothing to install), "
                     f"or build and push one with Docker: {build}")
    if ctx.kind == "tts" and uri == tts_image(ctx.region):
        return Check(CheckId.IMAGE, Status.PASS,
                     f"AWS's vLLM-Omni image for {ctx.region} ({uri}).")
    ref = parse_image_uri(uri)
    if ref.region != ctx.region:
        return Check(CheckId.IMAGE, Status.FAIL,
                     f"The image is in ECR in {ref.region}; SageMaker pulls from the "
                     f"endpoint's region, {ctx.region}.",
                     f"Push the image to {ctx.region} ({build}) or deploy in {ref.region}.")
    found = find_image(ctx.clients.ecr, uri)
    if found is None:
        return Check(CheckId.IMAGE, Status.FAIL,
                     f"No image {ref.reference} in repository {ref.repository} "
                     f"(account {ref.registry}, {ref.region}).",
                     f"Choose another image, or build and push it with: {build}")
    when = f", pushed {found.pushed_at:%Y-%m-%d}" if found.pushed_at else ""
    return Check(CheckId.IMAGE, Status.PASS, f"{ref.repository}:{ref.reference} exists{when}.")


def _check_model(ctx: Context) -> Check:
    assert ctx.clients is not None
    default = DEFAULT_STT_MODEL if ctx.kind == "stt" else TTS_MODEL_ID
    source = parse_model_source(ctx.settings.model_source, default)
    if not source.is_s3:
        return Check(CheckId.MODEL, Status.PASS,
                     f"Hugging Face model {source.model_id}; the endpoint downloads it "
                     "when it starts.")
    state = inspect_s3_source(ctx.clients.s3, source)
    if not state.bucket_exists:
        return Check(CheckId.MODEL, Status.FAIL, f"Bucket {source.bucket} does not exist.",
                     "Check the s3:// address, or use a Hugging Face model id.")
    if state.bucket_region != ctx.region:
        return Check(CheckId.MODEL, Status.FAIL,
                     f"Bucket {source.bucket} is in {state.bucket_region}; the endpoint "
                     f"would be in {ctx.region}.",
                     f"Copy the model to a bucket in {ctx.region}, or deploy in "
                     f"{state.bucket_region}.")
    if not state.has_objects:
        return Check(CheckId.MODEL, Status.FAIL, f"Nothing is stored under {source.uri}.",
                     "Upload the model's files (uncompressed) under that prefix.")
    return Check(CheckId.MODEL, Status.PASS, f"{source.uri} is readable and not empty.")


def instances_needed(settings: EndpointDeploySettings) -> int:
    """Instances the deploy may run at once: one, or the autoscaling maximum."""
    return max(1, settings.autoscale_max) if settings.autoscale_min > 0 else 1


def _check_quota(ctx: Context) -> Check:
    """The first type must have quota for the deploy to start; a later one without it
    cannot take over when the first has no capacity (the pool falls back on capacity
    only), which the detail says so the pool is not trusted for more than it does."""
    assert ctx.clients is not None
    types = validate_instance_types(ctx.settings.instance_types)
    first, fallbacks = types[0], types[1:]
    name = QUOTA_NAME.format(instance_type=first)
    needed = instances_needed(ctx.settings)
    found = find_quotas(ctx.clients.service_quotas, types)
    if (quota := found.get(first)) is None:
        return Check(CheckId.QUOTA, Status.UNKNOWN,
                     f"Service Quotas has no quota named “{name}” in {ctx.region}.",
                     "Override this check if you know the account may run this type.")
    value = quota.value
    enough = [t for t in fallbacks if t in found and found[t].value >= needed]
    with_quota = enough[0] if enough else None  # the pool type to put first
    if value < needed:
        detail = (f"The quota “{name}” is {value:g} in {ctx.region}; the deploy needs "
                  f"{needed}.")
        move = ""
        if enough:
            detail += f" Quota for {needed} is there for {_either(enough)} in the pool."
            move = f"Put {with_quota} first in the pool to deploy now; or "
        tail = "." if enough else "; or put a type with quota first in the pool."
        try:
            waiting = open_request(ctx.clients.service_quotas, quota)
        except EndpointControlError:  # may not read the request history: ask anyway
            waiting = None
        if waiting is not None and waiting.desired < needed:
            # AWS takes one open request per quota: the larger one must wait for this answer.
            return Check(CheckId.QUOTA, Status.FAIL,
                         f"{detail} {waiting.describe()}, fewer than the deploy needs.",
                         _sentence(f"{move}set Scaling (above) to at most "
                                   f"{waiting.desired:g} instances to deploy once AWS grants "
                                   f"them, or ask for {needed} when AWS has answered (by "
                                   f"email, often within a day): AWS takes one request per "
                                   f"quota at a time{tail}"),
                         move_first=with_quota)
        if waiting is not None:
            return Check(CheckId.QUOTA, Status.FAIL, f"{detail} {waiting.describe()}.",
                         _sentence(f"{move}wait for AWS's answer (by email, often within a "
                                   f"day), then press Check set-up{tail}"),
                         move_first=with_quota)
        ask = _sentence(f"{move}ask AWS for {needed} (free): “Ask AWS for more quota” under "
                        f"these checks in Settings → Endpoints, or the Service Quotas "
                        f"console{tail}")
        return Check(CheckId.QUOTA, Status.FAIL, detail, ask, can_ask_quota=True,
                     move_first=with_quota)
    detail = f"The quota “{name}” is {value:g} (needs {needed})."
    if short := [t for t in fallbacks if t not in enough]:
        detail += (f" No quota for {needed} of {', '.join(short)}: when {first} has no "
                   f"capacity, the deploy cannot fall back to "
                   f"{'it' if len(short) == 1 else 'them'}.")
    return Check(CheckId.QUOTA, Status.PASS, detail)


def _either(types: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return types[0] if len(types) == 1 else f"{', '.join(types[:-1])} or {types[-1]}"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def check_price(ctx: Context) -> Check:
    types = validate_instance_types(ctx.settings.instance_types)
    known = [(t, p) for t in types if (p := ctx.prices.lookup(t, ctx.region)) is not None]
    if not known:
        return Check(CheckId.PRICE, Status.UNKNOWN,
                     f"No price is known for {', '.join(types)} in {ctx.region}.",
                     f"Look it up on {PRICING_URL} (a prices.json in the config folder can "
                     "add it), then override this check.")
    low, high = min(p.hourly for _, p in known), max(p.hourly for _, p in known)
    currency = known[0][1].currency
    text = (f"about {format_cost(low, currency)}/hour" if low == high else
            f"about {format_cost(low, currency)}–{format_cost(high, currency)}/hour "
            "(by the type that wins)")
    per = " per instance" if instances_needed(ctx.settings) > 1 else ""
    approx = ("" if all(p.exact for _, p in known)
              else f", estimated from {ctx.prices.fallback_region}")
    missing = [t for t in types if t not in dict(known)]
    note = f"; no price known for {', '.join(missing)}" if missing else ""
    return Check(CheckId.PRICE, Status.PASS,
                 f"{text}{per}{approx}{note}, billed until stopped.")


AWS_CHECKS: tuple[tuple[CheckId, str, str, Callable[[Context], Check]], ...] = (
    (CheckId.ROLE, "read IAM roles", "iam:GetRole", _check_role),
    (CheckId.PASS_ROLE, "simulate IAM policies", "iam:SimulatePrincipalPolicy",
     _check_pass_role),
    (CheckId.ROLE_ACCESS, "simulate IAM policies", "iam:SimulatePrincipalPolicy",
     _check_role_access),
    (CheckId.IMAGE, "read ECR images", "ecr:DescribeImages", _check_image),
    (CheckId.MODEL, "read the S3 model prefix", "s3:ListBucket", _check_model),
    (CheckId.QUOTA, "read Service Quotas", "servicequotas:ListServiceQuotas", _check_quota),
)
