"""Container images for the endpoints: the account's ECR images (STT candidates), whether
one exists, the AWS vLLM-Omni image for TTS, and the command that builds the STT image
when the account has none.

SageMaker pulls an endpoint's image from ECR in the endpoint's own region, so an image
URI names the region it must be deployed in.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from captioner.cloud.calls import call
from captioner.cloud.deploy_plan import tts_image
from captioner.cloud.errors import AwsError, DeployConfigError

BUILD_SCRIPT = "container/build_and_push.sh"
DEFAULT_STT_REPOSITORY = "captioner-stt"  # the build script's default repository
DEFAULT_TAG = "latest"
# Repository names that suggest a speech-to-text image (shown first among candidates).
STT_HINTS = ("captioner", "voxtral", "stt", "realtime", "speech")
IMAGE_NOT_FOUND_CODES = frozenset({"ImageNotFoundException", "RepositoryNotFoundException"})

IMAGE_URI_RE = re.compile(
    r"^(?P<registry>\d{12})\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+)"
    r"\.amazonaws\.com(?:\.cn)?/(?P<repository>[a-z0-9]+(?:[._/-][a-z0-9]+)*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})|@(?P<digest>sha256:[a-f0-9]{64}))?$"
)


@dataclass(frozen=True, slots=True)
class ImageRef:
    """An ECR image URI taken apart."""

    registry: str  # account id that owns the repository
    region: str
    repository: str
    tag: str | None
    digest: str | None

    @property
    def image_id(self) -> dict[str, str]:
        """The ``imageIds`` entry DescribeImages takes."""
        return {"imageDigest": self.digest} if self.digest else {"imageTag": self.tag or "latest"}

    @property
    def reference(self) -> str:
        return self.digest or f"{self.tag or DEFAULT_TAG}"

    def repository_arn(self, partition: str = "aws") -> str:
        return f"arn:{partition}:ecr:{self.region}:{self.registry}:repository/{self.repository}"


def parse_image_uri(uri: str) -> ImageRef:
    """``<account>.dkr.ecr.<region>.amazonaws.com/<repo>[:tag|@sha256:…]``; no tag = latest."""
    match = IMAGE_URI_RE.match(uri.strip())
    if not match:
        raise DeployConfigError(
            f"{uri!r} is not an ECR image URI "
            "(<account>.dkr.ecr.<region>.amazonaws.com/<repository>:<tag>)."
        )
    tag, digest = match["tag"], match["digest"]
    return ImageRef(match["registry"], match["region"], match["repository"],
                    tag if tag or digest else DEFAULT_TAG, digest)


@dataclass(frozen=True, slots=True)
class ImageCandidate:
    """One image in the account's ECR registry, as the set-up lists it."""

    uri: str  # with a tag when it has one, else with its digest
    repository: str
    tags: tuple[str, ...]
    digest: str
    pushed_at: datetime | None
    size_bytes: int | None
    looks_like_stt: bool


def _looks_like_stt(repository: str) -> bool:
    name = repository.lower()
    return any(hint in name for hint in STT_HINTS)


def list_images(ecr: Any, *, max_per_repository: int = 20) -> list[ImageCandidate]:
    """The account's images in the client's region: likely STT images first, newest first.

    Each tag is its own candidate (a tag is what a deploy names); untagged images are
    listed by digest. At most ``max_per_repository`` newest per repository.
    """
    candidates: list[ImageCandidate] = []
    for repo in paged(ecr, "describe_repositories", "repositories"):
        name, base_uri = repo["repositoryName"], repo["repositoryUri"]
        details = list(paged(ecr, "describe_images", "imageDetails", repositoryName=name,
                              registryId=repo["registryId"]))
        details.sort(key=_pushed_key, reverse=True)
        for detail in details[:max_per_repository]:
            tags = tuple(detail.get("imageTags") or ())
            refs = [f"{base_uri}:{t}" for t in tags] or [f"{base_uri}@{detail['imageDigest']}"]
            for uri in refs:
                candidates.append(ImageCandidate(
                    uri=uri, repository=name, tags=tags, digest=detail["imageDigest"],
                    pushed_at=detail.get("imagePushedAt"),
                    size_bytes=detail.get("imageSizeInBytes"),
                    looks_like_stt=_looks_like_stt(name),
                ))
    candidates.sort(key=lambda c: (not c.looks_like_stt, -_timestamp(c.pushed_at)))
    return candidates


def _timestamp(moment: datetime | None) -> float:
    return moment.timestamp() if moment else 0.0


def _pushed_key(detail: dict[str, Any]) -> float:
    return _timestamp(detail.get("imagePushedAt"))


def paged(client: Any, operation: str, key: str, **params: Any) -> Any:
    """The ``key`` items of every page of an ECR list call."""
    token: str | None = None
    while True:
        page = call(client, operation, **params, **({"nextToken": token} if token else {}))
        yield from page.get(key, [])
        token = page.get("nextToken")
        if not token:
            return


@dataclass(frozen=True, slots=True)
class ImageFound:
    """DescribeImages' answer for one URI."""

    ref: ImageRef
    digest: str
    pushed_at: datetime | None


def find_image(ecr: Any, uri: str) -> ImageFound | None:
    """The image if it exists in its registry, None if the repository or tag does not.

    Raises DeployConfigError for a malformed URI and the cloud error tree (e.g.
    AccessDeniedError) when the registry cannot be read.
    """
    ref = parse_image_uri(uri)
    try:
        response = call(ecr, "describe_images", registryId=ref.registry,
                        repositoryName=ref.repository, imageIds=[ref.image_id])
    except AwsError as exc:
        if exc.code in IMAGE_NOT_FOUND_CODES:
            return None
        raise
    details = response.get("imageDetails") or []
    if not details:
        return None
    return ImageFound(ref, details[0]["imageDigest"], details[0].get("imagePushedAt"))


def default_stt_image_uri(account: str, region: str) -> str:
    """Where the build script pushes by default."""
    return f"{account}.dkr.ecr.{region}.amazonaws.com/{DEFAULT_STT_REPOSITORY}:{DEFAULT_TAG}"


def build_and_push_command(region: str, account: str) -> str:
    """The command (run from a clone of the repository, with Docker) that builds the STT
    image and pushes it to this account's ECR in ``region``; it prints the image URI."""
    return f"{BUILD_SCRIPT} {shlex.quote(region)} {shlex.quote(account)}"


__all__ = [
    "BUILD_SCRIPT",
    "ImageCandidate",
    "ImageFound",
    "ImageRef",
    "build_and_push_command",
    "default_stt_image_uri",
    "find_image",
    "list_images",
    "paged",
    "parse_image_uri",
    "tts_image",
]
