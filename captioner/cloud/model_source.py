"""Where an endpoint gets its model: a Hugging Face model id (the default; the endpoint
downloads it when it starts) or an ``s3://bucket/prefix/`` of uncompressed files, which
SageMaker copies to the instance and which must be in the endpoint's region."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from captioner.cloud.calls import call
from captioner.cloud.deploy_plan import S3_PREFIX_RE
from captioner.cloud.errors import AwsError, DeployConfigError

HF_MODEL_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")
HF_URL = "https://huggingface.co/{model}"
# GetBucketLocation answers None for us-east-1 and the legacy "EU" for eu-west-1
LEGACY_LOCATIONS = {None: "us-east-1", "": "us-east-1", "EU": "eu-west-1"}
BUCKET_MISSING_CODES = frozenset({"NoSuchBucket", "404", "NotFound"})


@dataclass(frozen=True, slots=True)
class ModelSource:
    """``model_id`` for a Hugging Face source; ``bucket``/``prefix`` for S3."""

    text: str
    model_id: str = ""
    bucket: str = ""
    prefix: str = ""  # ends with "/" unless empty (the whole bucket)

    @property
    def is_s3(self) -> bool:
        return bool(self.bucket)

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.is_s3 else self.model_id


def parse_model_source(text: str, default_model: str = "") -> ModelSource:
    """An ``s3://`` prefix or a Hugging Face id (empty = ``default_model``)."""
    text = text.strip()
    if text.startswith("s3://"):
        if not S3_PREFIX_RE.match(text):
            raise DeployConfigError(f"{text!r} is not an s3://bucket/prefix/ URI.")
        bucket, _, prefix = text[len("s3://"):].partition("/")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        return ModelSource(text, bucket=bucket, prefix=prefix)
    model = text or default_model
    if model and not HF_MODEL_ID_RE.match(model):
        raise DeployConfigError(
            f"{model!r} is neither an s3:// prefix nor a Hugging Face model id (owner/name)."
        )
    return ModelSource(text, model_id=model)


@dataclass(frozen=True, slots=True)
class S3SourceState:
    """What the signed-in principal can see of an S3 model prefix."""

    bucket_exists: bool
    bucket_region: str  # "" when the bucket does not exist
    has_objects: bool


def inspect_s3_source(s3: Any, source: ModelSource) -> S3SourceState:
    """Does the bucket exist, in which region, and is there anything under the prefix?

    Raises the cloud error tree (AccessDeniedError when these credentials may not look).
    """
    try:
        location = call(s3, "get_bucket_location", Bucket=source.bucket)
    except AwsError as exc:
        if exc.code in BUCKET_MISSING_CODES:
            return S3SourceState(False, "", False)
        raise
    constraint = location.get("LocationConstraint")
    region = LEGACY_LOCATIONS.get(constraint, constraint)
    listing = call(s3, "list_objects_v2", Bucket=source.bucket, Prefix=source.prefix,
                   MaxKeys=1)
    return S3SourceState(True, region, bool(listing.get("KeyCount") or listing.get("Contents")))
