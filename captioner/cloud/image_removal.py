"""Remove the captions image and what built it, so nothing keeps billing once a user is
done with cloud captions.

The image build (:mod:`captioner.cloud.image_build`) leaves an ECR repository whose
~10 GB image bills storage every month, an S3 bucket with the build files, the CodeBuild
project and its IAM role. A user who stops using cloud captions should not have to
find them in four consoles: :func:`find_leftovers` lists those that exist in one region
(by the names the build gives them), :func:`remove_leftovers` deletes them. The role
goes only when Captioner made it (its tag), and nothing is removed while a build runs.
A running endpoint keeps the image it already pulled; a new instance of it could not
pull it, so the caller asks for the captions endpoint to be stopped first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from captioner.cloud.account import AccountClients, get_role
from captioner.cloud.calls import call
from captioner.cloud.errors import AwsError, DeployConfigError
from captioner.cloud.image_build import (
    ECR_GB_MONTH,
    PROJECT,
    ROLE_NAME,
    BuildPlan,
    running_build,
)
from captioner.cloud.images import DEFAULT_STT_REPOSITORY, paged

log = logging.getLogger(__name__)

GB = 1024**3
_Remover = Callable[[AccountClients, BuildPlan], None]
_GONE = frozenset({"RepositoryNotFoundException", "NoSuchBucket", "NoSuchEntity",
                   "ResourceNotFoundException", "404"})


@dataclass(frozen=True, slots=True)
class Leftovers:
    """What of the image build exists in ``plan``'s account and region."""

    plan: BuildPlan
    images: int | None = None  # images in the repository; None: no repository
    image_bytes: int = 0
    bucket: bool = False
    project: bool = False
    role: bool = False  # the build role, made by Captioner

    @property
    def empty(self) -> bool:
        return self.images is None and not (self.bucket or self.project or self.role)

    @property
    def monthly_cost(self) -> float:
        """USD a month the images cost to keep (ECR storage)."""
        return self.image_bytes / GB * ECR_GB_MONTH

    def items(self) -> list[tuple[str, str]]:
        """(what, what keeping it costs) for each thing found."""
        return [(what, cost) for what, cost, _remove in _parts(self)]

    def lines(self) -> list[str]:
        return [f"{what}: {cost}" for what, cost in self.items()]


def find_leftovers(clients: AccountClients, plan: BuildPlan) -> Leftovers:
    """What exists of the build's repository, bucket, project and role (read only)."""
    images = _images(clients.ecr)
    projects = call(clients.codebuild, "batch_get_projects", names=[PROJECT]).get("projects")
    role = get_role(clients.iam, plan.role_arn)
    return Leftovers(plan, images=None if images is None else len(images),
                     image_bytes=sum(int(i.get("imageSizeInBytes") or 0) for i in images or []),
                     bucket=_bucket_exists(clients.s3, plan.bucket), project=bool(projects),
                     role=role is not None and role.created_by_captioner)


def remove_leftovers(clients: AccountClients, found: Leftovers) -> list[str]:
    """Delete what ``found`` lists (what is already gone is skipped); what was removed.
    DeployConfigError while a build runs: it would push into the gap."""
    if found.project and running_build(clients.codebuild) is not None:
        raise DeployConfigError("An image build is running: wait for it to end (or stop it "
                                f"in the CodeBuild console, project {PROJECT}), then remove.")
    removed = []
    for what, _cost, remove in _parts(found):
        try:
            remove(clients, found.plan)
        except AwsError as exc:
            if exc.code not in _GONE:
                raise
        log.info("= removed %s", what)
        removed.append(what)
    return removed


def _parts(found: Leftovers) -> list[tuple[str, str, _Remover]]:
    """(what, what keeping it costs, how to remove it) for each thing ``found`` lists:
    one table, so what is shown and what is removed cannot drift apart."""
    out: list[tuple[str, str, _Remover]] = []
    if found.images is not None:
        count = f"{found.images} image{'s' * (found.images != 1)}"
        size = f", {found.image_bytes / GB:.1f} GB" if found.image_bytes >= GB / 20 else ""
        cost = (f"about ${found.monthly_cost:.2f} a month" if found.monthly_cost >= 0.01
                else "under a cent a month")
        out.append((f"ECR repository {DEFAULT_STT_REPOSITORY} ({count}{size})", cost,
                    _remove_repository))
    if found.bucket:
        out.append((f"S3 bucket {found.plan.bucket} (the build files)",
                    "under a cent a month", _remove_bucket))
    if found.project:
        out.append((f"CodeBuild project {PROJECT}", "free while it does not build",
                    _remove_project))
    if found.role:
        out.append((f"IAM role {ROLE_NAME} (the build's role)", "free", _remove_role))
    return out


def _images(ecr: Any) -> list[dict[str, Any]] | None:
    """The repository's images; None when there is no repository."""
    try:
        return list(paged(ecr, "describe_images", "imageDetails",
                          repositoryName=DEFAULT_STT_REPOSITORY))
    except AwsError as exc:
        if exc.code == "RepositoryNotFoundException":
            return None
        raise


def _bucket_exists(s3: Any, bucket: str) -> bool:
    try:
        call(s3, "head_bucket", Bucket=bucket)
    except AwsError as exc:
        if exc.code in _GONE:
            return False
        raise
    return True


def _remove_repository(clients: AccountClients, plan: BuildPlan) -> None:
    call(clients.ecr, "delete_repository", repositoryName=DEFAULT_STT_REPOSITORY, force=True)


def _remove_bucket(clients: AccountClients, plan: BuildPlan) -> None:
    while True:  # a bucket must be empty before it goes
        page = call(clients.s3, "list_objects_v2", Bucket=plan.bucket)
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if not keys:
            break
        call(clients.s3, "delete_objects", Bucket=plan.bucket,
             Delete={"Objects": keys, "Quiet": True})
    call(clients.s3, "delete_bucket", Bucket=plan.bucket)


def _remove_project(clients: AccountClients, plan: BuildPlan) -> None:
    call(clients.codebuild, "delete_project", name=PROJECT)


def _remove_role(clients: AccountClients, plan: BuildPlan) -> None:
    names = call(clients.iam, "list_role_policies", RoleName=ROLE_NAME).get("PolicyNames", [])
    for name in names:
        call(clients.iam, "delete_role_policy", RoleName=ROLE_NAME, PolicyName=name)
    call(clients.iam, "delete_role", RoleName=ROLE_NAME)


__all__ = ["Leftovers", "find_leftovers", "remove_leftovers"]
