"""Typed status snapshots of an endpoint, built from describe_endpoint answers (no I/O).

A snapshot is what the UI and the CLI show: stage, how long it has been going, which
instance type a pool actually got, and what it has cost so far. Cost is an estimate
that errs high: it counts from the endpoint's CreationTime (instances start billing
while the endpoint is still Creating) at the price of the chosen type, or of the
dearest pool type while the choice is not known yet.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from captioner.cloud.deploy_plan import NAME_PREFIX, Kind
from captioner.cloud.pricing import PriceTable


class Stage(enum.Enum):
    CREATING = "Creating"
    IN_SERVICE = "InService"
    UPDATING = "Updating"
    DELETING = "Deleting"
    FAILED = "Failed"
    GONE = "Gone"  # describe_endpoint says it does not exist
    OTHER = "Other"  # OutOfService, SystemUpdating, RollingBack, UpdateRollbackFailed

    @property
    def terminal(self) -> bool:
        return self in (Stage.IN_SERVICE, Stage.FAILED, Stage.GONE)

    @property
    def billing(self) -> bool:
        """Instances may be running (and costing money) in this stage."""
        return self in (Stage.CREATING, Stage.IN_SERVICE, Stage.UPDATING, Stage.OTHER)


_STAGES = {
    "Creating": Stage.CREATING,
    "InService": Stage.IN_SERVICE,
    "Updating": Stage.UPDATING,
    "Deleting": Stage.DELETING,
    "Failed": Stage.FAILED,
}


def stage_of(status: str) -> Stage:
    return _STAGES.get(status, Stage.OTHER)


def kind_of(name: str) -> Kind | None:
    for kind in ("stt", "tts"):
        if name.startswith(f"{NAME_PREFIX}-{kind}-"):
            return kind  # type: ignore[return-value]
    return None


@dataclass(frozen=True, slots=True)
class EndpointSnapshot:
    name: str
    stage: Stage
    status: str  # SageMaker's EndpointStatus verbatim ("" when gone)
    observed_at: datetime
    kind: Kind | None = None
    failure_reason: str | None = None  # verbatim from AWS
    created_at: datetime | None = None
    instance_type: str | None = None  # the type actually running (pool winner)
    instance_count: int = 0
    candidate_types: tuple[str, ...] = ()  # the configured pool, in priority order
    hourly_price: float | None = None  # per hour for the whole endpoint
    currency: str = "USD"

    @property
    def elapsed_seconds(self) -> float:
        """Seconds since creation: the "Creating… 7:12" figure and the uptime once running."""
        if self.created_at is None:
            return 0.0
        return max(0.0, (self.observed_at - self.created_at).total_seconds())

    @property
    def cost_so_far(self) -> float | None:
        if self.hourly_price is None or self.created_at is None:
            return None
        if not self.stage.billing and self.stage is not Stage.DELETING:
            return None
        return self.hourly_price * self.elapsed_seconds / 3600.0


def chosen_instance(endpoint: dict[str, Any]) -> tuple[str | None, int]:
    """Instance type and count running now, from ProductionVariants' pool summaries."""
    for variant in endpoint.get("ProductionVariants") or []:
        count = int(variant.get("CurrentInstanceCount") or 0)
        for pool in variant.get("InstancePools") or []:
            if int(pool.get("CurrentInstanceCount") or 0) > 0:
                return pool.get("InstanceType"), int(pool["CurrentInstanceCount"])
        if variant.get("InstanceType"):  # not in the real model's summary, but harmless
            return variant["InstanceType"], count
        return None, count
    return None, 0


def configured_types(config: dict[str, Any] | None) -> tuple[str, ...]:
    """Instance types of the endpoint config's first variant, in priority order."""
    if not config:
        return ()
    for variant in config.get("ProductionVariants") or []:
        if variant.get("InstanceType"):
            return (variant["InstanceType"],)
        pools = sorted(variant.get("InstancePools") or [], key=lambda p: p.get("Priority", 0))
        return tuple(p["InstanceType"] for p in pools if p.get("InstanceType"))
    return ()


def build_snapshot(
    name: str,
    endpoint: dict[str, Any] | None,
    config: dict[str, Any] | None,
    *,
    now: datetime,
    prices: PriceTable,
    region: str,
) -> EndpointSnapshot:
    """A snapshot from describe_endpoint (None = not found) and describe_endpoint_config."""
    kind = kind_of(name)
    if endpoint is None:
        return EndpointSnapshot(name=name, stage=Stage.GONE, status="", observed_at=now, kind=kind)
    status = str(endpoint.get("EndpointStatus", ""))
    stage = stage_of(status)
    candidates = configured_types(config)
    chosen, count = chosen_instance(endpoint)
    if chosen is None and len(candidates) == 1:
        chosen = candidates[0]
    if chosen is not None:
        price = prices.hourly(chosen, region)
        hourly = price * max(count, 1) if price is not None else None
    else:
        known = prices.pool_range(candidates, region)
        hourly = known[1] if known else None
    return EndpointSnapshot(
        name=name,
        stage=stage,
        status=status,
        observed_at=now,
        kind=kind,
        failure_reason=endpoint.get("FailureReason"),
        created_at=endpoint.get("CreationTime"),
        instance_type=chosen,
        instance_count=count,
        candidate_types=candidates,
        hourly_price=hourly,
        currency=prices.currency,
    )
