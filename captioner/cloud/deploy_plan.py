"""What to ask SageMaker for: the create_model / create_endpoint_config / create_endpoint
requests of one deploy, computed from settings without any I/O.

Keeping this pure lets tests check every parameter and lets the UI show the plan
(names, instance pool, estimated cost) before anything is created. Every input is
validated here, so a bad role ARN or instance list fails before the first AWS call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from captioner.cloud.errors import DeployConfigError
from captioner.cloud.ownership import TAG_MANAGED, Owner
from captioner.settings import DEFAULT_STT_MODEL, EndpointDeploySettings

Kind = Literal["stt", "tts"]
KINDS: tuple[Kind, ...] = ("stt", "tts")

NAME_PREFIX = "captioner"
VARIANT_NAME = "AllTraffic"
INFERENCE_AMI_VERSION = "al2023-ami-sagemaker-inference-gpu-4-1"  # carries the bidi sidecar
TTS_MODEL_ID = "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice"
TTS_IMAGE_TEMPLATE = "763104351884.dkr.ecr.{region}.amazonaws.com/vllm:omni-sagemaker-cuda-v1.5"
MODEL_DIR = "/opt/ml/model"  # where SageMaker puts ModelDataSource files

TAG_KIND = "captioner:kind"
TAG_CREATED_AT = "captioner:created-at"

STT_ENV: dict[str, str] = {
    "SM_VLLM_MAX_MODEL_LEN": "45000",  # ≈ 1 h of audio at 12.5 tokens/s
    "SM_VLLM_COMPILATION_CONFIG": '{"cudagraph_mode":"PIECEWISE"}',
}
TTS_ENV: dict[str, str] = {}

DEFAULT_PROVISION_TIMEOUT = 1800  # s; API range 300–3600
DEFAULT_DOWNLOAD_TIMEOUT = 1800  # s; API range 60–3600
MAX_LIFETIME_HOURS = 7 * 24  # the longest backstop a user may set

ROLE_ARN_RE = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[A-Za-z0-9_+=,.@/-]{1,512}$")
INSTANCE_TYPE_RE = re.compile(r"^ml\.[a-z0-9-]+\.[a-z0-9]+$")
REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
S3_PREFIX_RE = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$")


@dataclass(frozen=True, slots=True)
class DeployPlan:
    """The three create requests of one deploy, named and tagged consistently."""

    kind: Kind
    region: str
    name: str  # model, endpoint config and endpoint all carry this name
    instance_types: tuple[str, ...]
    created_at: datetime
    expires_at: datetime | None  # the server-side backstop deletes the endpoint then
    model_request: dict[str, Any] = field(repr=False)
    config_request: dict[str, Any] = field(repr=False)
    endpoint_request: dict[str, Any] = field(repr=False)


def stack_name(kind: Kind, created_at: datetime) -> str:
    return f"{NAME_PREFIX}-{kind}-{created_at.astimezone(UTC):%Y%m%d-%H%M%S}"


def managed_tags(kind: Kind, created_at: datetime, owner: Owner | None = None
                 ) -> list[dict[str, str]]:
    stamp = created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return [
        {"Key": TAG_MANAGED, "Value": "true"},
        {"Key": TAG_KIND, "Value": kind},
        {"Key": TAG_CREATED_AT, "Value": stamp},
        *(owner.tags() if owner is not None else []),
    ]


def validate_lifetime(hours: float) -> timedelta | None:
    """The backstop's delay from creation; None when turned off (0)."""
    if hours == 0:
        return None
    if not 0 < hours <= MAX_LIFETIME_HOURS:
        raise DeployConfigError(
            f"The maximum lifetime must be 0 (off) or up to {MAX_LIFETIME_HOURS} hours; "
            f"got {hours:g}.")
    return timedelta(hours=hours)


def lifetime_text(plan: DeployPlan) -> str:
    """The backstop line of a plan, as the CLI and the GUI show it."""
    if plan.expires_at is None:
        return "no limit: nothing deletes it unless you stop it"
    hours = (plan.expires_at - plan.created_at).total_seconds() / 3600
    return (f"AWS deletes it at {plan.expires_at:%Y-%m-%d %H:%M} UTC ({hours:g} h after "
            "creation; the app moves this on while you use it)")


def tts_image(region: str) -> str:
    return TTS_IMAGE_TEMPLATE.format(region=region)


def validate_role_arn(role_arn: str) -> str:
    role_arn = role_arn.strip()
    if not role_arn:
        raise DeployConfigError(
            "An execution role ARN is required (arn:aws:iam::<account>:role/<name>): "
            "SageMaker assumes it to pull the image and the model."
        )
    if not ROLE_ARN_RE.match(role_arn):
        raise DeployConfigError(
            f"{role_arn!r} is not an IAM role ARN (expected arn:aws:iam::<12 digits>:role/<name>)."
        )
    return role_arn


def validate_instance_types(types: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    cleaned = tuple(t.strip() for t in types if t.strip())
    if not 1 <= len(cleaned) <= 5:
        raise DeployConfigError(
            f"Give 1 to 5 instance types (an ordered pool); got {len(cleaned)}."
        )
    for t in cleaned:
        if not INSTANCE_TYPE_RE.match(t):
            raise DeployConfigError(f"{t!r} is not a SageMaker instance type (e.g. ml.g6.xlarge).")
    if len(set(cleaned)) != len(cleaned):
        raise DeployConfigError("The instance pool lists the same type twice.")
    return cleaned


def plan_deploy(
    kind: Kind,
    settings: EndpointDeploySettings,
    region: str,
    *,
    now: datetime | None = None,
    env: dict[str, str] | None = None,
    provision_timeout: int = DEFAULT_PROVISION_TIMEOUT,
    download_timeout: int = DEFAULT_DOWNLOAD_TIMEOUT,
    owner: Owner | None = None,
) -> DeployPlan:
    """Validate the inputs and build the requests; raises DeployConfigError, never calls AWS.

    ``settings.model_source`` is an ``s3://`` prefix (uncompressed files, mounted at
    /opt/ml/model and served under the default model id) or a model id for SM_VLLM_MODEL;
    empty means the kind's default model. ``env`` adds or overrides SM_VLLM_* variables.
    ``owner`` adds this installation's ownership tags to every resource.
    """
    if kind not in KINDS:
        raise DeployConfigError(f"Unknown endpoint kind {kind!r}; use stt or tts.")
    if not REGION_RE.match(region or ""):
        raise DeployConfigError(f"{region!r} is not an AWS region (e.g. us-east-1).")
    role_arn = validate_role_arn(settings.role_arn)
    types = validate_instance_types(settings.instance_types)
    if not 300 <= provision_timeout <= 3600:
        raise DeployConfigError("The instance provision timeout must be 300–3600 seconds.")
    if not 60 <= download_timeout <= 3600:
        raise DeployConfigError("The model download timeout must be 60–3600 seconds.")
    lifetime = validate_lifetime(settings.max_lifetime_hours)
    created_at = (now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    name = stack_name(kind, created_at)
    tags = managed_tags(kind, created_at, owner)

    image = settings.image_uri.strip()
    if kind == "stt" and not image:
        raise DeployConfigError(
            "The STT endpoint needs the ECR image URI built from container/ (--image-uri)."
        )
    image = image or tts_image(region)
    if any(c.isspace() for c in image):
        raise DeployConfigError(f"{image!r} is not an image URI.")

    default_model = DEFAULT_STT_MODEL if kind == "stt" else TTS_MODEL_ID
    environment = dict(STT_ENV if kind == "stt" else TTS_ENV)
    container: dict[str, Any] = {"Image": image}
    source = settings.model_source.strip()
    if source.startswith("s3://"):
        if not S3_PREFIX_RE.match(source):
            raise DeployConfigError(f"{source!r} is not an s3://bucket/prefix URI.")
        prefix = source if source.endswith("/") else source + "/"
        container["ModelDataSource"] = {
            "S3DataSource": {"S3Uri": prefix, "S3DataType": "S3Prefix", "CompressionType": "None"}
        }
        environment["SM_VLLM_MODEL"] = MODEL_DIR
        environment["SM_VLLM_SERVED_MODEL_NAME"] = default_model
    else:
        if any(c.isspace() for c in source):
            raise DeployConfigError(f"{source!r} is neither an s3:// prefix nor a model id.")
        environment["SM_VLLM_MODEL"] = source or default_model
    for key, value in (env or {}).items():
        if not ENV_KEY_RE.match(key):
            raise DeployConfigError(f"{key!r} is not an environment variable name.")
        environment[key] = value
    container["Environment"] = environment

    variant: dict[str, Any] = {
        "VariantName": VARIANT_NAME,
        "ModelName": name,
        "InitialInstanceCount": 1,
    }
    if len(types) == 1:
        variant["InstanceType"] = types[0]
    else:
        variant["InstancePools"] = [
            {"InstanceType": t, "Priority": i} for i, t in enumerate(types, start=1)
        ]
    variant["InferenceAmiVersion"] = INFERENCE_AMI_VERSION
    variant["VariantInstanceProvisionTimeoutInSeconds"] = provision_timeout
    variant["ModelDataDownloadTimeoutInSeconds"] = download_timeout

    return DeployPlan(
        kind=kind,
        region=region,
        name=name,
        instance_types=types,
        created_at=created_at,
        expires_at=created_at + lifetime if lifetime is not None else None,
        model_request={
            "ModelName": name,
            "PrimaryContainer": container,
            "ExecutionRoleArn": role_arn,
            "Tags": tags,
        },
        config_request={
            "EndpointConfigName": name,
            "ProductionVariants": [variant],
            "Tags": tags,
        },
        endpoint_request={"EndpointName": name, "EndpointConfigName": name, "Tags": tags},
    )
