"""What of Captioner's is in the account: managed endpoints with their owners, the search
at start-up over every region used before, and leftovers to clean (blocking boto3 calls
through :class:`~captioner.cloud.endpoints.EndpointControl`; the app runs them in an
executor)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from captioner.cloud.deploy_plan import NAME_PREFIX, Kind
from captioner.cloud.errors import EndpointControlError
from captioner.cloud.ownership import Ownership, owner_text
from captioner.cloud.status import EndpointSnapshot, Stage, kind_of, stage_of

if TYPE_CHECKING:
    from captioner.cloud.endpoints import EndpointControl

log = logging.getLogger(__name__)

LEFTOVER_MIN_AGE = timedelta(minutes=30)  # younger configs/models may be a deploy in progress


@dataclass(frozen=True, slots=True)
class ManagedEndpoint:
    """A Captioner-tagged endpoint found in the account/region (list_endpoints + list_tags)."""

    name: str
    arn: str
    status: str
    kind: Kind | None
    created_at: datetime | None
    tags: dict[str, str] = field(default_factory=dict)
    ownership: Ownership = Ownership.MINE
    region: str = ""

    @property
    def stage(self) -> Stage:
        return stage_of(self.status)

    @property
    def mine(self) -> bool:
        """Made by this installation: the app may adopt and stop it."""
        return self.ownership.mine

    @property
    def owner(self) -> str:
        """"yours", or who made it (the creating principal's ARN) for a read-only list."""
        return owner_text(self.tags, self.ownership)


@dataclass
class Inventory:
    """What the start-up search found; ``mine`` holds billing snapshots, oldest first."""

    mine: dict[str, list[EndpointSnapshot]] = field(default_factory=dict)  # region → ours
    others: list[ManagedEndpoint] = field(default_factory=list)  # not ours: read-only
    expires_at: dict[str, datetime | None] = field(default_factory=dict)  # name → backstop
    cleaned: list[str] = field(default_factory=list)  # leftover configs/models removed


def take_inventory(controls: list[EndpointControl]) -> Inventory:
    """Search each region's control: ours that bill (with their backstop time), everyone
    else's, and remove our leftovers. A region that cannot be searched raises."""
    found = Inventory()
    for control in controls:
        everyone = control.find_managed_endpoints()
        found.others += [e for e in everyone if not e.mine]
        billing = []
        for endpoint in everyone:
            if not endpoint.mine or not endpoint.stage.billing:
                continue
            snap = control.snapshot(endpoint.name)
            if snap.stage.billing:
                billing.append(snap)
                found.expires_at[snap.name] = control.backstop_expires_at(snap.name)
        found.mine[control.region] = billing
        try:
            found.cleaned += control.clean_leftovers()
        except EndpointControlError as exc:  # they cost nothing; try again next start
            log.warning("! could not remove leftover configs/models in %s: %s",
                        control.region, exc)
    return found


def clean_leftovers(control: EndpointControl, min_age: timedelta = LEFTOVER_MIN_AGE
                    ) -> list[str]:
    """Delete configs and models of ours whose endpoint is gone (the backstop fired,
    or a stop was interrupted); returns what was deleted. Young ones are left alone:
    a deploy may be creating them right now."""
    deleted: list[str] = []
    cutoff = control.now() - min_age
    for label, listing, key, arn_key, delete, param in (
        ("endpoint config", "list_endpoint_configs", "EndpointConfigs", "EndpointConfigArn",
         "delete_endpoint_config", "EndpointConfigName"),
        ("model", "list_models", "Models", "ModelArn", "delete_model", "ModelName"),
    ):
        page = control.call_sm(listing, NameContains=f"{NAME_PREFIX}-", MaxResults=100) or {}
        for item in page.get(key, []):
            name = item[param]
            created = item.get("CreationTime")
            if kind_of(name) is None or (created is not None and created > cutoff):
                continue
            if control.describe(name) is not None:
                continue  # its endpoint still exists: stop handles it
            if not control.owner.ownership(control.tags_of(item[arn_key])).mine:
                continue
            if control.call_sm(delete, missing_ok=True, **{param: name}) is not None:
                deleted.append(f"{label} {name}")
                log.info("= removed leftover %s %s", label, name)
    return deleted

