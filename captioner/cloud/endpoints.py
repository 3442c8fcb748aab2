"""Deploy, inspect, find and stop Captioner's SageMaker endpoints (blocking boto3 calls).

Every method blocks on AWS; UI code runs them in an executor (see captioner.cloud.watch
for the asyncio side). Clients are injected, so tests pass Stubber-wrapped or
moto-pointed clients and the app passes clients from its credentials provider.

Resources of one deploy share one name (``captioner-<kind>-<yyyymmdd-hhmmss>``) and
carry the ``captioner:managed`` tags plus this installation's ownership tags (see
captioner.cloud.ownership): that is how a restarted app finds its own endpoints again
and how stop knows it may delete them. Each deploy also arms a server-side backstop
(captioner.cloud.backstop) that deletes the endpoint at its maximum lifetime. Stop is
idempotent and resumable: anything already gone counts as deleted, so a half-deployed
stack is cleaned up the same way.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from captioner.aws import CredentialsError, provider_for
from captioner.cloud import inventory, scaling, watch
from captioner.cloud.account import AccountClients
from captioner.cloud.backstop import Backstop, BackstopPlan, account_of
from captioner.cloud.deploy_plan import (
    NAME_PREFIX,
    TAG_KIND,
    DeployPlan,
    Kind,
    plan_deploy,
)
from captioner.cloud.errors import (
    THROTTLING_CODES,
    DeployConfigError,
    EndpointControlError,
    NotOwnedError,
    error_code,
    is_not_found,
    translate,
)
from captioner.cloud.inventory import ManagedEndpoint
from captioner.cloud.ownership import (
    TAG_MANAGED,
    TAG_OWNER,
    Owner,
    owner_text,
    stack_ownership,
)
from captioner.cloud.pricing import CostEstimate, PriceTable, load_prices
from captioner.cloud.state import deployed_before, load_state
from captioner.cloud.status import EndpointSnapshot, Stage, build_snapshot, kind_of
from captioner.settings import EndpointDeploySettings, Settings

log = logging.getLogger(__name__)

ClientFactory = Callable[[str], Any]  # service name ("sagemaker", …) → boto3 client

CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 4},
    connect_timeout=10,
    read_timeout=60,
    user_agent_extra="captioner",
)


def session_from_settings(settings: Settings, region: str, profile: str | None = None
                          ) -> boto3.Session:
    """The user's session (``profile`` overrides the settings' choice of profile/keyring);
    raises the cloud tree's CredentialsError."""
    aws = settings.aws
    provider = provider_for(profile or aws.profile, aws.use_keyring and not profile)
    try:
        return provider.session(region)
    except CredentialsError as exc:
        raise translate(exc) from exc


def client_factory(
    session: boto3.Session, region: str | None = None, *, endpoint_url: str | None = None
) -> ClientFactory:
    """Clients from a boto3 Session with botocore's standard retry mode."""

    def make(service: str) -> Any:
        return session.client(
            service, region_name=region, config=CLIENT_CONFIG, endpoint_url=endpoint_url
        )

    return make


@dataclass
class StopReport:
    name: str
    deleted: list[str] = field(default_factory=list)  # "endpoint X", "endpoint config X", …
    already_gone: list[str] = field(default_factory=list)
    forced: bool = False  # not provably ours; deleted because the user typed its name


class EndpointControl:
    """Control plane for Captioner's endpoints in one account/region."""

    def __init__(
        self,
        sagemaker: Any,
        autoscaling: Any | None = None,
        *,
        sts: Any | None = None,
        scheduler: Any | None = None,
        iam: Any | None = None,
        installation_id: str | None = None,
        prices: PriceTable | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        throttle_retries: int = 4,
        throttle_delay: float = 1.0,
    ) -> None:
        self.sagemaker = sagemaker
        self.autoscaling = autoscaling
        self.region: str = sagemaker.meta.region_name
        self.prices = prices if prices is not None else load_prices()
        self.now = now
        self.sleep = sleep
        self.monotonic = monotonic
        self._throttle_retries = throttle_retries
        self._throttle_delay = throttle_delay
        self._configs: dict[str, dict[str, Any]] = {}  # configs never change; cache them
        self.sts = sts
        self._installation_id = installation_id
        self._owner: Owner | None = None
        self.backstop = (Backstop(scheduler, iam, self._call, sleep=sleep)
                         if scheduler is not None and iam is not None else None)

    @classmethod
    def from_factory(cls, make: ClientFactory, **kwargs: Any) -> EndpointControl:
        return cls(make("sagemaker"), make("application-autoscaling"), sts=make("sts"),
                   scheduler=make("scheduler"), iam=make("iam"), **kwargs)

    @property
    def owner(self) -> Owner:
        """This installation and the signed-in principal (STS GetCallerIdentity, once)."""
        if self._owner is None:
            installation = self._installation_id
            if installation is None:
                installation = load_state().installation_id
            arn = ""
            if self.sts is not None:
                arn = str((self._call(self.sts, "get_caller_identity") or {}).get("Arn", ""))
            self._owner = Owner(installation, arn)
        return self._owner

    @classmethod
    def from_session(
        cls, session: boto3.Session, region: str | None = None, **kwargs: Any
    ) -> EndpointControl:
        return cls.from_factory(client_factory(session, region), **kwargs)

    # ---- calls -------------------------------------------------------------------------

    def _call(self, client: Any, operation: str, *, missing_ok: bool = False, **params: Any
              ) -> dict[str, Any] | None:
        """One AWS call: throttling retried with backoff, errors translated, not-found → None."""
        attempt = 0
        while True:
            try:
                log.debug("> %s %s", operation, _brief(params))
                response = getattr(client, operation)(**params)
                log.debug("< %s ok", operation)
                return response
            except ClientError as exc:
                if missing_ok and is_not_found(exc):
                    log.debug("< %s: not found", operation)
                    return None
                if error_code(exc) in THROTTLING_CODES and attempt < self._throttle_retries:
                    delay = self._throttle_delay * 2**attempt * random.uniform(0.5, 1.0)
                    attempt += 1
                    log.info("! %s throttled; retry %d in %.1f s", operation, attempt, delay)
                    self.sleep(delay)
                    continue
                log.warning("! %s failed: %s", operation, error_code(exc))
                raise translate(exc, operation) from exc
            except BotoCoreError as exc:
                log.warning("! %s failed: %s", operation, type(exc).__name__)
                raise translate(exc, operation) from exc

    def call_sm(self, operation: str, *, missing_ok: bool = False, **params: Any
                ) -> dict[str, Any] | None:
        return self._call(self.sagemaker, operation, missing_ok=missing_ok, **params)

    # ---- deploy ------------------------------------------------------------------------

    def plan(self, kind: Kind, settings: EndpointDeploySettings, **kwargs: Any) -> DeployPlan:
        plan = plan_deploy(kind, settings, self.region, now=self.now(), **kwargs)
        return plan_deploy(kind, settings, self.region, now=plan.created_at, owner=self.owner,
                           **kwargs)  # validated before asking STS who we are

    def backstop_plan(self, name: str, expires_at: datetime) -> BackstopPlan:
        owner = self.owner
        account = account_of(owner.principal_arn)
        if not account:
            raise DeployConfigError(
                "Could not tell which AWS account these credentials belong to, so the "
                "server-side lifetime limit cannot be set up.")
        return BackstopPlan(name, self.region, account, owner.installation_id, expires_at)

    def backstop_expires_at(self, name: str) -> datetime | None:
        """When the server deletes ``name`` (None: no backstop schedule of ours)."""
        if self.backstop is None:
            return None
        return self.backstop.expires_at(name, self.owner.installation_id)

    def renew_backstop(self, name: str, lifetime: timedelta) -> datetime | None:
        """Push the server-side deletion of ``name`` to now + ``lifetime`` (app in use)."""
        if self.backstop is None:
            return None
        expires_at = self.now().astimezone(UTC).replace(microsecond=0) + lifetime
        self.backstop.renew(self.backstop_plan(name, expires_at), self.owner)
        return expires_at

    def estimate(self, plan: DeployPlan) -> CostEstimate:
        prices = [self.prices.lookup(t, self.region) for t in plan.instance_types]
        known = [p.hourly for p in prices if p is not None]
        unknown = tuple(t for t, p in zip(plan.instance_types, prices, strict=True) if p is None)
        return CostEstimate(
            low=min(known) if known else None,
            high=max(known) if known else None,
            currency=self.prices.currency,
            exact=not unknown and all(p is not None and p.exact for p in prices),
            unknown_types=unknown,
        )

    def deploy(self, plan: DeployPlan, *, on_step: Callable[[str], None] | None = None) -> str:
        """Arm the backstop, then create model → endpoint config → endpoint; returns the name.

        Does not wait for InService (see captioner.cloud.watch). If a step fails, what
        was already created is deleted before the typed error is raised. The backstop
        comes first, so no endpoint exists without its deletion scheduled.
        """
        if plan.expires_at is not None and self.backstop is not None:
            if on_step:
                on_step(f"scheduling deletion of {plan.name} at its maximum lifetime")
            self.backstop.arm(self.backstop_plan(plan.name, plan.expires_at), self.owner)
        steps = (
            ("model", "create_model", plan.model_request),
            ("endpoint config", "create_endpoint_config", plan.config_request),
            ("endpoint", "create_endpoint", plan.endpoint_request),
        )
        created: list[str] = []
        for label, operation, request in steps:
            if on_step:
                on_step(f"creating {label} {plan.name}")
            try:
                self.call_sm(operation, **request)
            except EndpointControlError as exc:
                if label == "endpoint":
                    made = self._made_anyway(plan.name)
                    if made:
                        log.warning("! create_endpoint failed (%s), but %s exists: following it",
                                    exc, plan.name)
                        return plan.name
                    if made is None:  # cannot tell: remove nothing, keep Stop offered
                        _note_leftovers(exc, plan.name, [f"endpoint {plan.name} (if AWS made "
                                                         "it)", *created])
                        raise
                leftovers = self._cleanup_partial(plan.name, created, plan.expires_at)
                if leftovers:
                    _note_leftovers(exc, plan.name, leftovers)
                raise
            created.append(label)
            log.info("= created %s %s", label, plan.name)
        return plan.name

    def _made_anyway(self, name: str) -> bool | None:
        """Whether a create_endpoint that failed made the endpoint all the same: its answer
        lost to a timeout, or botocore's retry of it refused as "already existing". None
        when AWS cannot be asked either. Cleaning up after an endpoint that exists would
        remove its backstop and forget it while it bills."""
        try:
            return self.describe(name) is not None
        except EndpointControlError as exc:
            log.warning("! could not tell whether %s was created: %s", name, exc)
            return None

    def _cleanup_partial(self, name: str, created: list[str], expires_at: datetime | None
                         ) -> list[str]:
        """Delete what a failed deploy created; returns what could not be deleted."""
        leftovers: list[str] = []
        if expires_at is not None and self.backstop is not None:
            try:
                self.backstop.disarm(name, self.owner.installation_id)
            except EndpointControlError as exc:  # harmless: it deletes nothing that exists
                log.warning("! could not remove the backstop of %s: %s", name, exc)
        for label, operation, key in (
            ("endpoint config", "delete_endpoint_config", "EndpointConfigName"),
            ("model", "delete_model", "ModelName"),
        ):
            if label not in created:
                continue
            try:
                self.call_sm(operation, missing_ok=True, **{key: name})
                log.info("= removed %s %s after failed deploy", label, name)
            except EndpointControlError as exc:
                log.warning("! could not remove %s %s: %s", label, name, exc)
                leftovers.append(f"{label} {name}")
        return leftovers

    # ---- status ------------------------------------------------------------------------

    def describe(self, name: str) -> dict[str, Any] | None:
        return self.call_sm("describe_endpoint", missing_ok=True, EndpointName=name)

    def _config(self, config_name: str) -> dict[str, Any] | None:
        config = self._configs.get(config_name)
        if config is None:
            config = self.call_sm(
                "describe_endpoint_config", missing_ok=True, EndpointConfigName=config_name
            )
            if config is not None:
                self._configs[config_name] = config
        return config

    def snapshot(self, name: str) -> EndpointSnapshot:
        """Current status; stage GONE when the endpoint does not exist (not an error)."""
        endpoint = self.describe(name)
        config_name = (endpoint or {}).get("EndpointConfigName")
        config = self._config(config_name) if config_name else None
        return build_snapshot(
            name, endpoint, config, now=self.now(), prices=self.prices, region=self.region
        )

    def find_managed_endpoints(self, kind: Kind | None = None, *, mine_only: bool = False
                               ) -> list[ManagedEndpoint]:
        """Endpoints tagged captioner:managed=true in this region (survives app restarts).

        Everyone's, each with its ``ownership``; ``mine_only`` keeps this installation's.
        """
        found: list[ManagedEndpoint] = []
        token: str | None = None
        while True:
            params: dict[str, Any] = {"NameContains": f"{NAME_PREFIX}-", "MaxResults": 100}
            if token:
                params["NextToken"] = token
            page = self.call_sm("list_endpoints", **params) or {}
            for summary in page.get("Endpoints", []):
                tags = self.tags_of(summary["EndpointArn"])
                if tags is None or tags.get(TAG_MANAGED) != "true":
                    continue
                endpoint_kind = tags.get(TAG_KIND) or kind_of(summary["EndpointName"])
                if kind is not None and endpoint_kind != kind:
                    continue
                ownership = self.owner.ownership(tags)
                if mine_only and not ownership.mine:
                    continue
                found.append(
                    ManagedEndpoint(
                        name=summary["EndpointName"],
                        arn=summary["EndpointArn"],
                        status=summary.get("EndpointStatus", ""),
                        kind=endpoint_kind if endpoint_kind in ("stt", "tts") else None,
                        created_at=summary.get("CreationTime"),
                        tags=tags,
                        ownership=ownership,
                        region=self.region,
                    )
                )
            token = page.get("NextToken")
            if not token:
                break
        found.sort(key=lambda e: e.created_at or datetime.min.replace(tzinfo=UTC))
        return found

    def tags_of(self, arn: str) -> dict[str, str] | None:
        tags: dict[str, str] = {}
        token: str | None = None
        while True:
            params: dict[str, Any] = {"ResourceArn": arn, "MaxResults": 100}
            if token:
                params["NextToken"] = token
            page = self.call_sm("list_tags", missing_ok=True, **params)
            if page is None:
                return None  # deleted between list and tags
            tags.update({t["Key"]: t["Value"] for t in page.get("Tags", [])})
            token = page.get("NextToken")
            if not token:
                return tags

    def clean_leftovers(self, min_age: timedelta = inventory.LEFTOVER_MIN_AGE) -> list[str]:
        """Delete our configs and models whose endpoint is gone (see inventory)."""
        return inventory.clean_leftovers(self, min_age)

    def orphans(self, exclude: Iterable[str] = ()) -> list[EndpointSnapshot]:
        """This installation's endpoints that may be billing, except those in ``exclude``."""
        skip = set(exclude)
        snapshots = []
        for endpoint in self.find_managed_endpoints(mine_only=True):
            if endpoint.name in skip or not endpoint.stage.billing:
                continue
            snap = self.snapshot(endpoint.name)
            if snap.stage.billing:
                snapshots.append(snap)
        return snapshots

    # ---- autoscaling -------------------------------------------------------------------

    def apply_autoscaling(self, name: str, policy: scaling.AutoscalingPolicy) -> None:
        """Register the variant as scalable and attach target tracking (endpoint InService)."""
        if self.autoscaling is None:
            raise DeployConfigError("No Application Auto Scaling client was provided.")
        self._call(self.autoscaling, "register_scalable_target",
                   **scaling.register_request(name, policy))
        self._call(self.autoscaling, "put_scaling_policy",
                   **scaling.scaling_policy_request(name, policy))
        log.info("= autoscaling %s: %d–%d instances", name, policy.min_capacity,
                 policy.max_capacity)

    def remove_autoscaling(self, name: str) -> bool:
        """Deregister the scalable target (its policies go with it); False if there was none."""
        if self.autoscaling is None:
            return False
        found = self._call(
            self.autoscaling, "describe_scalable_targets",
            ServiceNamespace=scaling.SERVICE_NAMESPACE,
            ResourceIds=[scaling.resource_id(name)],
            ScalableDimension=scaling.SCALABLE_DIMENSION,
        ) or {}
        if not found.get("ScalableTargets"):
            return False
        self._call(
            self.autoscaling, "deregister_scalable_target", missing_ok=True,
            ServiceNamespace=scaling.SERVICE_NAMESPACE,
            ResourceId=scaling.resource_id(name),
            ScalableDimension=scaling.SCALABLE_DIMENSION,
        )
        log.info("= autoscaling removed from %s", name)
        return True

    # ---- stop --------------------------------------------------------------------------

    def stop(
        self,
        name: str,
        *,
        on_snapshot: Callable[[EndpointSnapshot], None] | None = None,
        poll_interval: float = 10.0,
        timeout: float = 1800.0,
        confirm_name: str | None = None,
    ) -> StopReport:
        """Delete endpoint → wait until gone → delete config → delete model; drop the backstop.

        Safe to repeat and to resume after an interruption; pieces already gone are
        reported in ``already_gone``. Refuses (:class:`NotOwnedError`) unless the
        endpoint, its config and its model all carry this installation's id — so neither
        a typo nor the app can delete a colleague's endpoint — except as a forced stop:
        ``confirm_name`` is the name the user typed, and it must equal ``name``.
        """
        report = StopReport(name)
        endpoint = self.describe(name)
        config_name = (endpoint or {}).get("EndpointConfigName") or name
        self._configs.pop(config_name, None)
        config = self._config(config_name)
        models = [v["ModelName"] for v in (config or {}).get("ProductionVariants", [])] or [name]
        report.forced = self._check_owned(name, endpoint, config, models, confirm_name)
        self.remove_autoscaling(name)

        if endpoint is None:
            report.already_gone.append(f"endpoint {name}")
        else:
            if endpoint.get("EndpointStatus") != "Deleting":
                gone = self.call_sm("delete_endpoint", missing_ok=True, EndpointName=name) is None
                log.info("= deleting endpoint %s", name)
            else:
                gone = False
            watch.wait_for(self, name, lambda s: s.stage is Stage.GONE,
                           on_snapshot=on_snapshot, poll_interval=poll_interval, timeout=timeout)
            (report.already_gone if gone else report.deleted).append(f"endpoint {name}")

        if self.backstop is not None:  # ours, or harmlessly absent
            self.backstop.disarm(name, self.owner.installation_id)
        self._delete(report, "endpoint config", "delete_endpoint_config",
                     EndpointConfigName=config_name)
        self._configs.pop(config_name, None)
        for model in dict.fromkeys(models):
            self._delete(report, "model", "delete_model", ModelName=model)
        log.info("= stopped %s (deleted: %s)", name, ", ".join(report.deleted) or "nothing")
        return report

    def _delete(self, report: StopReport, label: str, operation: str, **params: Any) -> None:
        (resource,) = params.values()
        if self.call_sm(operation, missing_ok=True, **params) is None:
            report.already_gone.append(f"{label} {resource}")
        else:
            report.deleted.append(f"{label} {resource}")

    def _check_owned(self, name: str, endpoint: dict[str, Any] | None,
                     config: dict[str, Any] | None, models: list[str],
                     confirm_name: str | None) -> bool:
        """Raise NotOwnedError unless the whole stack is ours; True for a confirmed forced stop."""
        if endpoint is None and config is None and kind_of(name) is None:
            raise DeployConfigError(
                f"{name!r} is not a Captioner endpoint name (captioner-stt-…/captioner-tts-…)."
            )
        arns = [(endpoint or {}).get("EndpointArn"), (config or {}).get("EndpointConfigArn")]
        for model in dict.fromkeys(models):
            found = self.call_sm("describe_model", missing_ok=True, ModelName=model)
            arns.append((found or {}).get("ModelArn"))
        tag_sets = [self.tags_of(arn) if arn else None for arn in arns]
        ownership = stack_ownership(self.owner, *tag_sets)
        if ownership.mine:
            return False
        if confirm_name is not None and confirm_name.strip() == name:
            log.warning("! forced stop of %s (%s)", name, ownership.phrase)
            return True
        creator = next((owner_text(t, ownership) for t in tag_sets if t and TAG_OWNER in t), "")
        raise NotOwnedError(name, ownership, creator)


def _note_leftovers(exc: EndpointControlError, name: str, leftovers: list[str]) -> None:
    """Tell the user, in the error itself, what a failed deploy left behind and how to remove it."""
    note = (f" Could not remove {', '.join(leftovers)}: run `captioner endpoint stop {name}` "
            "once the problem is fixed.")
    exc.args = (f"{exc.args[0] if exc.args else ''}{note}", *exc.args[1:])
    exc.leftovers = tuple(leftovers)


def _brief(params: dict[str, Any]) -> str:
    """Names only: requests may carry environment values that should not be logged."""
    keys = ("EndpointName", "EndpointConfigName", "ModelName", "ResourceArn", "ResourceId")
    return " ".join(f"{k}={params[k]}" for k in keys if k in params)


def control_from_settings(settings: Settings, *, region: str | None = None,
                          profile: str | None = None) -> EndpointControl:
    """Blocking: clients signed with the user's AWS profile or the keys in the keyring."""
    region = region or settings.aws.region
    return EndpointControl.from_session(session_from_settings(settings, region, profile), region)


def account_clients_from_settings(settings: Settings, *, region: str | None = None,
                                  profile: str | None = None) -> AccountClients:
    """Blocking: the set-up's clients (STS, IAM, ECR, S3, Service Quotas, CodeBuild),
    signed like :func:`control_from_settings`."""
    region = region or settings.aws.region
    session = session_from_settings(settings, region, profile)
    return AccountClients.from_factory(client_factory(session, region))


def cloud_configured(settings: Settings, state: Path | None = None) -> bool:
    """Has the user set up AWS at all, or deployed from this installation (the command
    line with the default credentials names nothing in the settings)? Only then look for
    running endpoints at start."""
    aws, cloud = settings.aws, settings.cloud
    return bool(aws.profile or aws.use_keyring or cloud.stt.role_arn or cloud.tts.role_arn
                or deployed_before(state))
