"""SageMaker endpoint quotas per instance type: read them, and ask AWS for more.

A fresh account often has a quota of 0 for the GPU types the endpoints need. Asking for
more is a Service Quotas request (free; AWS answers by email, often within a day), which
a newcomer should not have to find in the console. A request still open is shown, never
made twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from captioner.cloud.calls import call

SERVICE_CODE = "sagemaker"
QUOTA_NAME = "{instance_type} for endpoint usage"
OPEN_STATUSES = ("PENDING", "CASE_OPENED")


@dataclass(frozen=True, slots=True)
class Quota:
    name: str
    code: str
    value: float


@dataclass(frozen=True, slots=True)
class QuotaRequest:
    """An increase asked for (AWS's ``RequestedQuota``)."""

    desired: float
    status: str  # PENDING, CASE_OPENED, APPROVED, DENIED, CASE_CLOSED, …
    created: datetime | None

    @property
    def open(self) -> bool:
        return self.status in OPEN_STATUSES

    def describe(self) -> str:
        when = f" on {self.created:%Y-%m-%d}" if self.created else ""
        return (f"An increase to {self.desired:g} was asked for{when} "
                f"({self.status.replace('_', ' ').lower()})")


def find_quota(quotas: Any, instance_type: str) -> Quota | None:
    """The applied quota of ``instance_type``'s endpoint usage, else its default; None
    when Service Quotas has none of that name."""
    return find_quotas(quotas, [instance_type]).get(instance_type)


def find_quotas(quotas: Any, instance_types: list[str] | tuple[str, ...]
                ) -> dict[str, Quota]:
    """The endpoint-usage quota of each of ``instance_types`` that Service Quotas
    knows, the applied value else the default, in one pass over each list (a pool has
    up to five types; the lists hold hundreds of SageMaker quotas)."""
    wanted = {QUOTA_NAME.format(instance_type=t): t for t in instance_types}
    found: dict[str, Quota] = {}
    for operation in ("list_service_quotas", "list_aws_default_service_quotas"):
        token: str | None = None
        while len(found) < len(wanted):
            params: dict[str, Any] = {"ServiceCode": SERVICE_CODE, "MaxResults": 100}
            if token:
                params["NextToken"] = token
            page = call(quotas, operation, **params)
            for quota in page.get("Quotas", []):
                name = quota.get("QuotaName")
                if name in wanted and wanted[name] not in found and "Value" in quota:
                    found[wanted[name]] = Quota(name, str(quota.get("QuotaCode", "")),
                                                float(quota["Value"]))
            token = page.get("NextToken")
            if not token:
                break
    return found


def open_request(quotas: Any, quota: Quota) -> QuotaRequest | None:
    """The newest increase of ``quota`` still waiting for AWS's answer, if any."""
    page = call(quotas, "list_requested_service_quota_change_history_by_quota",
                ServiceCode=SERVICE_CODE, QuotaCode=quota.code)
    requests = [_request(r) for r in page.get("RequestedQuotas", [])]
    waiting = [r for r in requests if r.open]
    return max(waiting, key=lambda r: r.created.timestamp() if r.created else 0.0,
               default=None)


def request_increase(quotas: Any, quota: Quota, desired: int) -> QuotaRequest:
    """Ask AWS to raise ``quota`` to ``desired``; a request still open is returned
    instead of asking twice."""
    if (waiting := open_request(quotas, quota)) is not None:
        return waiting
    answer = call(quotas, "request_service_quota_increase", ServiceCode=SERVICE_CODE,
                  QuotaCode=quota.code, DesiredValue=float(desired))
    return _request(answer["RequestedQuota"])


def _request(raw: dict[str, Any]) -> QuotaRequest:
    created = raw.get("Created")
    return QuotaRequest(float(raw.get("DesiredValue", 0.0)), str(raw.get("Status", "")),
                        created if isinstance(created, datetime) else None)


__all__ = ["QUOTA_NAME", "SERVICE_CODE", "Quota", "QuotaRequest", "find_quota", "find_quotas",
           "open_request", "request_increase"]
