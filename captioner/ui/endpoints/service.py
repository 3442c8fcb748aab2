"""What the Endpoints set-up asks of AWS, as one small interface the widgets depend on.

The widgets never touch boto3: they call a :class:`SetupService` (always off the GUI
thread, through :class:`~captioner.ui.endpoints.runner.Runner`) and show the typed
answers. :class:`AccountSetupService` adapts the account queries and the preflight
of ``captioner.cloud`` to this interface; tests pass a service whose clients point at
a moto server.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Protocol

from captioner.cloud.deploy_plan import Kind
from captioner.settings import AwsSettings, Settings


class CheckState(enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    UNKNOWN = "UNKNOWN"  # could not be read (e.g. no permission): the user may go past it


# The preflight lines, in order; each names the field of the set-up that fixes it.
CHECK_KEYS = ("credentials", "role", "image", "model", "quota", "price")


@dataclass(frozen=True, slots=True)
class Check:
    key: str  # one of CHECK_KEYS
    title: str  # "Execution role"
    state: CheckState
    detail: str  # what was found, or why it could not be read
    fix: str = ""  # what to do, in words (FAIL/UNKNOWN)

    @property
    def line(self) -> str:
        text = f"{self.state.value}  {self.title}: {self.detail}"
        return f"{text} — {self.fix}" if self.fix and self.state is not CheckState.PASS else text


@dataclass(frozen=True, slots=True)
class Identity:
    account: str
    arn: str  # the calling principal


@dataclass(frozen=True, slots=True)
class RoleChoice:
    name: str
    arn: str


@dataclass(frozen=True, slots=True)
class ImageChoice:
    uri: str  # ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPO:TAG
    pushed: str = ""  # for display


@dataclass(frozen=True, slots=True)
class RoleProposal:
    """A role that does not exist yet: exactly what creating it will attach."""

    name: str
    trust_policy: dict[str, Any]
    permission_policy: dict[str, Any]
    policy_name: str


class SetupService(Protocol):
    """Blocking calls; the UI runs each in an executor."""

    def profiles(self) -> list[str]: ...
    def identity(self, aws: AwsSettings) -> Identity: ...
    def sagemaker_roles(self, aws: AwsSettings) -> list[RoleChoice]: ...
    def images(self, aws: AwsSettings) -> list[ImageChoice]: ...
    def propose_role(self, settings: Settings, kind: Kind) -> RoleProposal: ...
    def create_role(self, aws: AwsSettings, proposal: RoleProposal) -> RoleChoice: ...
    def preflight(self, settings: Settings, kind: Kind) -> list[Check]: ...
    def hourly_price(self, instance_type: str, region: str) -> float | None: ...
    def instance_types(self, kind: Kind, region: str) -> list[str]: ...


def first_blocking(checks: list[Check], accepted: list[str] | tuple[str, ...] = ()
                   ) -> Check | None:
    """The first check that stops a deploy: a FAIL, or an UNKNOWN not accepted."""
    for check in checks:
        if check.state is CheckState.FAIL:
            return check
        if check.state is CheckState.UNKNOWN and check.key not in accepted:
            return check
    return None


__all__ = ["CHECK_KEYS", "Check", "CheckState", "Identity", "ImageChoice", "RoleChoice",
           "RoleProposal", "SetupService", "first_blocking"]
