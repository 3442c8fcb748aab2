"""The server-side backstop: an endpoint deletes itself at its maximum lifetime.

Idle auto-stop runs inside the app; a crash, a sleeping laptop or a CLI deploy would
leave the GPU billing. So every deploy also creates an EventBridge Scheduler one-time
schedule that calls SageMaker ``DeleteEndpoint`` on that endpoint at
``created + max lifetime`` (UTC), with no laptop involved. While the app is in use it
moves that time forward (``renew``); a normal stop removes the schedule (``disarm``).
The schedule deletes itself after it fires. The endpoint's config and model stay
behind (they cost nothing); the next start cleans them.

Schedules cannot carry tags, so ownership lives in the schedule *group*: one group per
installation (``captioner-<installation id>``), tagged like the stacks, and each
schedule is named after its endpoint. The role the scheduler assumes trusts only
``scheduler.amazonaws.com`` from this account and, per endpoint, may only call
``sagemaker:DeleteEndpoint`` on that one endpoint (one inline policy per endpoint,
removed with the schedule).

The request builders are pure; :class:`Backstop` makes the calls through the
control's ``call`` (which retries throttling and translates errors).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from captioner.cloud.errors import ServiceValidationError
from captioner.cloud.ownership import TAG_MANAGED, Owner

log = logging.getLogger(__name__)

Call = Callable[..., dict[str, Any] | None]  # (client, operation, *, missing_ok, **params)

DELETE_ENDPOINT_TARGET = "arn:aws:scheduler:::aws-sdk:sagemaker:deleteEndpoint"
SCHEDULER_PRINCIPAL = "scheduler.amazonaws.com"
ROLE_PREFIX = "captioner-backstop-"
GROUP_PREFIX = "captioner-"
ROLE_PATH = "/captioner/"
FRESH_ROLE_RETRIES = 5  # a new IAM role takes seconds before the scheduler may assume it
FRESH_ROLE_DELAY = 2.0  # s, doubled per retry


@dataclass(frozen=True, slots=True)
class BackstopPlan:
    """Where and when one endpoint is deleted server-side."""

    endpoint: str
    region: str
    account: str
    installation_id: str
    expires_at: datetime

    @property
    def group(self) -> str:
        return group_name(self.installation_id)

    @property
    def role_name(self) -> str:
        return role_name(self.installation_id)

    @property
    def endpoint_arn(self) -> str:
        return f"arn:aws:sagemaker:{self.region}:{self.account}:endpoint/{self.endpoint}"


def group_name(installation_id: str) -> str:
    return GROUP_PREFIX + installation_id


def role_name(installation_id: str) -> str:
    return ROLE_PREFIX + installation_id


def at_expression(when: datetime) -> str:
    """Scheduler's one-time expression, in UTC to the second."""
    return f"at({when.astimezone(UTC):%Y-%m-%dT%H:%M:%S})"


def trust_policy(account: str) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow",
        "Principal": {"Service": SCHEDULER_PRINCIPAL},
        "Action": "sts:AssumeRole",
        "Condition": {"StringEquals": {"aws:SourceAccount": account}},
    }]}


def delete_policy(plan: BackstopPlan) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Action": "sagemaker:DeleteEndpoint", "Resource": plan.endpoint_arn,
    }]}


def schedule_request(plan: BackstopPlan, role_arn: str) -> dict[str, Any]:
    """create_schedule / update_schedule parameters (update needs all of them again)."""
    return {
        "Name": plan.endpoint,
        "GroupName": plan.group,
        "ScheduleExpression": at_expression(plan.expires_at),
        "ScheduleExpressionTimezone": "UTC",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "ActionAfterCompletion": "DELETE",
        "Description": (f"Captioner backstop: delete endpoint {plan.endpoint} at its maximum "
                        f"lifetime (installation {plan.installation_id})."),
        "Target": {
            "Arn": DELETE_ENDPOINT_TARGET,
            "RoleArn": role_arn,
            "Input": json.dumps({"EndpointName": plan.endpoint}),
        },
    }


def account_of(principal_arn: str) -> str:
    """The account id field of an ARN ("" when it is not one)."""
    parts = principal_arn.split(":")
    return parts[4] if len(parts) > 5 and parts[0] == "arn" else ""


class Backstop:
    """Arms, renews and disarms the backstop schedule of endpoints in one region (blocking)."""

    def __init__(self, scheduler: Any, iam: Any, call: Call, *,
                 sleep: Callable[[float], None]) -> None:
        self.scheduler = scheduler
        self.iam = iam
        self._call = call
        self._sleep = sleep
        self._role_arn: str | None = None
        self._groups: set[str] = set()

    def _ensure_role(self, plan: BackstopPlan, owner: Owner) -> str:
        if self._role_arn is None:
            found = self._call(self.iam, "get_role", missing_ok=True, RoleName=plan.role_name)
            if found is None:
                found = self._call(
                    self.iam, "create_role", RoleName=plan.role_name, Path=ROLE_PATH,
                    AssumeRolePolicyDocument=json.dumps(trust_policy(plan.account)),
                    Description="Lets EventBridge Scheduler delete Captioner endpoints "
                                "at their maximum lifetime.",
                    Tags=[{"Key": TAG_MANAGED, "Value": "true"}, *owner.tags()])
                log.info("= created backstop role %s", plan.role_name)
            assert found is not None
            self._role_arn = str(found["Role"]["Arn"])
        self._call(self.iam, "put_role_policy", RoleName=plan.role_name,
                   PolicyName=plan.endpoint, PolicyDocument=json.dumps(delete_policy(plan)))
        return self._role_arn

    def _ensure_group(self, plan: BackstopPlan, owner: Owner) -> None:
        if plan.group in self._groups:
            return
        if self._call(self.scheduler, "get_schedule_group", missing_ok=True,
                      Name=plan.group) is None:
            self._call(self.scheduler, "create_schedule_group", Name=plan.group,
                       Tags=[{"Key": TAG_MANAGED, "Value": "true"}, *owner.tags()])
        self._groups.add(plan.group)

    def arm(self, plan: BackstopPlan, owner: Owner) -> None:
        """Create the role (when missing), its permission on this endpoint and the schedule."""
        role_arn = self._ensure_role(plan, owner)
        self._ensure_group(plan, owner)
        request = schedule_request(plan, role_arn)
        for attempt in range(FRESH_ROLE_RETRIES + 1):
            try:
                self._call(self.scheduler, "create_schedule", **request)
                break
            except ServiceValidationError as exc:
                if "role" not in str(exc).lower() or attempt == FRESH_ROLE_RETRIES:
                    raise
                self._sleep(FRESH_ROLE_DELAY * 2**attempt)  # the new role is not visible yet
        log.info("= backstop armed: %s is deleted at %s UTC", plan.endpoint,
                 plan.expires_at.astimezone(UTC).isoformat(timespec="seconds"))

    def renew(self, plan: BackstopPlan, owner: Owner) -> bool:
        """Move the deletion to ``plan.expires_at``; False when there is no schedule (re-armed)."""
        role_arn = self._ensure_role(plan, owner)
        request = schedule_request(plan, role_arn)
        if self._call(self.scheduler, "update_schedule", missing_ok=True, **request) is None:
            self._ensure_group(plan, owner)
            self._call(self.scheduler, "create_schedule", **request)
            return False
        return True

    def expires_at(self, endpoint: str, installation_id: str) -> datetime | None:
        """When the schedule deletes ``endpoint`` (None: no schedule)."""
        found = self._call(self.scheduler, "get_schedule", missing_ok=True, Name=endpoint,
                           GroupName=group_name(installation_id))
        if found is None:
            return None
        text = str(found["ScheduleExpression"]).removeprefix("at(").removesuffix(")")
        return datetime.fromisoformat(text).replace(tzinfo=UTC)

    def disarm(self, endpoint: str, installation_id: str) -> bool:
        """Remove the schedule and the role's permission on the endpoint; False if none was."""
        gone = self._call(self.scheduler, "delete_schedule", missing_ok=True, Name=endpoint,
                          GroupName=group_name(installation_id)) is None
        self._call(self.iam, "delete_role_policy", missing_ok=True,
                   RoleName=role_name(installation_id), PolicyName=endpoint)
        if not gone:
            log.info("= backstop removed for %s", endpoint)
        return not gone
