"""What the Endpoints set-up asks of AWS, as one small interface the widgets depend on.

The widgets never touch boto3: they call a :class:`SetupService` (always off the GUI
thread, through :class:`~captioner.ui.endpoints.runner.Runner`) and show the typed
answers of ``captioner.cloud`` — the caller's identity, roles, images, the preflight
report. :class:`~captioner.ui.endpoints.aws_setup.AccountSetupService` is the app's
implementation; tests give it clients that point at a moto server.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from captioner.cloud.account import CallerIdentity, RoleInfo, RolePolicies
from captioner.cloud.deploy_plan import Kind
from captioner.cloud.image_build import BuildPlan, BuildProgress
from captioner.cloud.image_removal import Leftovers
from captioner.cloud.images import ImageCandidate
from captioner.cloud.preflight import Check, CheckId, Preflight, Status
from captioner.cloud.quotas import QuotaRequest
from captioner.settings import AwsSettings, Settings


@dataclass(frozen=True, slots=True)
class RoleProposal:
    """A role that does not exist yet: exactly what creating it will attach."""

    name: str
    policies: RolePolicies
    account: str


class SetupService(Protocol):
    """Blocking calls (the UI runs each in an executor), except the price-table lookups."""

    def profiles(self) -> list[str]: ...
    def identity(self, aws: AwsSettings) -> CallerIdentity: ...
    def sagemaker_roles(self, aws: AwsSettings) -> list[RoleInfo]: ...
    def images(self, aws: AwsSettings) -> list[ImageCandidate]: ...
    def propose_role(self, settings: Settings, kind: Kind) -> RoleProposal: ...
    def create_role(self, aws: AwsSettings, proposal: RoleProposal) -> RoleInfo: ...
    def plan_image_build(self, aws: AwsSettings) -> BuildPlan: ...
    def start_image_build(self, aws: AwsSettings, plan: BuildPlan) -> str: ...
    def image_build_progress(self, aws: AwsSettings, build_id: str) -> BuildProgress: ...
    def running_image_build(self, aws: AwsSettings) -> tuple[BuildPlan, str] | None: ...
    def image_leftovers(self, aws: AwsSettings) -> Leftovers: ...
    def remove_image_leftovers(self, aws: AwsSettings, found: Leftovers) -> list[str]: ...
    def request_quota_increase(self, settings: Settings, kind: Kind) -> QuotaRequest: ...
    def preflight(self, settings: Settings, kind: Kind) -> Preflight: ...
    def hourly_price(self, instance_type: str, region: str) -> float | None: ...
    def instance_types(self, kind: Kind, region: str) -> list[str]: ...


def gate(preflight: Preflight, accepted: Iterable[str]) -> Check | None:
    """The first check that stops a deploy (None: it may start), with ``accepted`` —
    the UNKNOWN checks the user chose to go past — applied."""
    return preflight.with_overrides(accepted).first_failure


def crashed(kind: Kind, region: str, reason: str) -> Preflight:
    """The report of a preflight that could not run at all (a bug): one FAIL line."""
    return Preflight(kind, region, (Check(CheckId.CREDENTIALS, Status.FAIL,
                                          f"The checks could not run: {reason}",
                                          "See the log for details."),))


__all__ = ["RoleProposal", "SetupService", "crashed", "gate"]
