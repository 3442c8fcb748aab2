"""The :class:`SetupService` the app uses: ``captioner.cloud``'s account queries and
preflight, with clients signed as the settings say.

Every method blocks (the UI runs it in an executor) and raises the typed errors of
``captioner.cloud.errors``. Clients come from ``clients(aws)``, so tests point them at
a moto server and pass Stubber-wrapped ones where moto has no model of the service
(Service Quotas, IAM policy simulation).
"""

from __future__ import annotations

from collections.abc import Callable

from captioner.aws import available_profiles
from captioner.cloud import account as acct
from captioner.cloud import image_build
from captioner.cloud.deploy_plan import Kind, validate_instance_types
from captioner.cloud.endpoints import account_clients_from_settings
from captioner.cloud.errors import CredentialsError, DeployConfigError
from captioner.cloud.image_removal import Leftovers, find_leftovers, remove_leftovers
from captioner.cloud.images import ImageCandidate, list_images
from captioner.cloud.preflight import Preflight, run_preflight
from captioner.cloud.preflight.checks import instances_needed
from captioner.cloud.pricing import PriceTable, load_prices
from captioner.cloud.quotas import QuotaRequest, find_quota, request_increase
from captioner.cloud.state import load_state
from captioner.settings import AwsSettings, Settings
from captioner.ui.endpoints.service import RoleProposal

AccountClientsFor = Callable[[AwsSettings], acct.AccountClients]

# The instance families that carry the GPUs these models need (for the pool list).
GPU_FAMILIES = ("ml.g4dn.", "ml.g5.", "ml.g6.", "ml.g6e.")


def default_clients(aws: AwsSettings) -> acct.AccountClients:
    """Clients signed with the settings' profile or keyring keys (CredentialsError if none)."""
    return account_clients_from_settings(Settings(aws=aws))


class AccountSetupService:
    def __init__(self, clients: AccountClientsFor = default_clients, *,
                 prices: PriceTable | None = None) -> None:
        self.clients = clients
        self.prices = prices if prices is not None else load_prices()

    def profiles(self) -> list[str]:
        return available_profiles()

    def identity(self, aws: AwsSettings) -> acct.CallerIdentity:
        return acct.caller_identity(self.clients(aws).sts)

    def sagemaker_roles(self, aws: AwsSettings) -> list[acct.RoleInfo]:
        return acct.list_sagemaker_roles(self.clients(aws).iam)

    def images(self, aws: AwsSettings) -> list[ImageCandidate]:
        return list_images(self.clients(aws).ecr)

    def propose_role(self, settings: Settings, kind: Kind) -> RoleProposal:
        """The least-privilege role for this kind's image and model (nothing is created)."""
        me = self.identity(settings.aws)
        policies = acct.role_policies_for(kind, getattr(settings.cloud, kind),
                                          settings.aws.region, me)
        return RoleProposal(acct.default_role_name(kind), policies, me.account)

    def create_role(self, aws: AwsSettings, proposal: RoleProposal) -> acct.RoleInfo:
        clients = self.clients(aws)
        me = acct.caller_identity(clients.sts)
        return acct.create_execution_role(clients.iam, proposal.name, proposal.policies,
                                          installation_id=load_state().installation_id,
                                          principal_arn=me.arn)

    def plan_image_build(self, aws: AwsSettings) -> image_build.BuildPlan:
        """The names and role of a captions-image build in this account (nothing made)."""
        return image_build.plan_for(self.clients(aws))

    def start_image_build(self, aws: AwsSettings, plan: image_build.BuildPlan) -> str:
        return image_build.start_build_here(self.clients(aws), plan)

    def image_build_progress(self, aws: AwsSettings, build_id: str
                             ) -> image_build.BuildProgress:
        return image_build.build_progress(self.clients(aws).codebuild, build_id)

    def image_leftovers(self, aws: AwsSettings) -> Leftovers:
        """The captions image and what built it, as they exist in this account and region."""
        clients = self.clients(aws)
        return find_leftovers(clients, image_build.plan_for(clients))

    def remove_image_leftovers(self, aws: AwsSettings, found: Leftovers) -> list[str]:
        return remove_leftovers(self.clients(aws), found)

    def running_image_build(self, aws: AwsSettings
                            ) -> tuple[image_build.BuildPlan, str] | None:
        """A captions-image build still running in this account (Captioner was closed
        while it ran), to follow again."""
        clients = self.clients(aws)
        build_id = image_build.running_build(clients.codebuild)
        return None if build_id is None else (image_build.plan_for(clients), build_id)

    def request_quota_increase(self, settings: Settings, kind: Kind) -> QuotaRequest:
        """Ask AWS for enough endpoint quota of the pool's first type (or return the
        request still open)."""
        plan = getattr(settings.cloud, kind)
        first = validate_instance_types(plan.instance_types)[0]
        quotas = self.clients(settings.aws).service_quotas
        quota = find_quota(quotas, first)
        if quota is None:
            raise DeployConfigError(f"Service Quotas has no quota for {first} endpoints in "
                                    f"{settings.aws.region}.")
        return request_increase(quotas, quota, instances_needed(plan))

    def preflight(self, settings: Settings, kind: Kind) -> Preflight:
        """Every check, in order, with the saved plan (never raises for AWS's answers)."""
        plan = getattr(settings.cloud, kind)
        region = settings.aws.region
        try:
            clients = self.clients(settings.aws)
        except CredentialsError as exc:
            return run_preflight(kind, plan, None, region=region, prices=self.prices,
                                 overrides=plan.accepted_unknown, credentials_error=exc)
        return run_preflight(kind, plan, clients, region=region, prices=self.prices,
                             overrides=plan.accepted_unknown)

    def hourly_price(self, instance_type: str, region: str) -> float | None:
        return self.prices.hourly(instance_type, region)

    def instance_types(self, kind: Kind, region: str) -> list[str]:
        table = self.prices.regions.get(region) or self.prices.regions.get(
            self.prices.fallback_region, {})
        types = [t for t in table if t.startswith(GPU_FAMILIES)]
        return sorted(types, key=lambda t: (table[t], t))


__all__ = ["AccountClientsFor", "AccountSetupService", "default_clients"]
