"""The preflight's report: check ids in order, PASS/FAIL/UNKNOWN lines, and whether a
deploy may start (every check passed, or only UNKNOWNs the user overrode)."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from captioner.cloud.account import CallerIdentity
from captioner.cloud.deploy_plan import Kind
from captioner.cloud.errors import DeployConfigError


class CheckId(enum.Enum):
    """The checks, in the order they run; values are the CLI's names for them."""

    CREDENTIALS = "credentials"
    ROLE = "role"
    PASS_ROLE = "pass-role"
    ROLE_ACCESS = "role-access"
    IMAGE = "image"
    MODEL = "model"
    QUOTA = "quota"
    PRICE = "price"

    @property
    def title(self) -> str:
        return _TITLES[self]

    @property
    def section(self) -> str:
        """The part of the set-up that fixes it (pass-role and role-access: the role)."""
        return "role" if self in (CheckId.PASS_ROLE, CheckId.ROLE_ACCESS) else self.value


_TITLES = {
    CheckId.CREDENTIALS: "AWS credentials",
    CheckId.ROLE: "Execution role",
    CheckId.PASS_ROLE: "Permission to pass the role",
    CheckId.ROLE_ACCESS: "Role's own permissions",
    CheckId.IMAGE: "Container image",
    CheckId.MODEL: "Model source",
    CheckId.QUOTA: "Endpoint quota",
    CheckId.PRICE: "Price per hour",
}
ORDER: tuple[CheckId, ...] = tuple(CheckId)


class Status(enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the preflight: what was found (``detail``) and what fixes it (``fix``)."""

    id: CheckId
    status: Status
    detail: str
    fix: str = ""
    can_ask_quota: bool = False  # the fix is a quota request the set-up can file itself
    move_first: str | None = None  # a pool type with the quota the first one lacks

    @property
    def title(self) -> str:
        return self.id.title

    @property
    def passed(self) -> bool:
        return self.status is Status.PASS


@dataclass(frozen=True, slots=True)
class Preflight:
    """The result of all checks for one kind; ``overrides`` are UNKNOWNs the user accepted."""

    kind: Kind
    region: str
    checks: tuple[Check, ...]
    overrides: frozenset[CheckId] = frozenset()
    identity: CallerIdentity | None = field(default=None, compare=False)

    def check(self, check_id: CheckId) -> Check:
        return next(c for c in self.checks if c.id is check_id)

    def is_overridden(self, check: Check) -> bool:
        return check.status is Status.UNKNOWN and check.id in self.overrides

    @property
    def blocking(self) -> tuple[Check, ...]:
        """Checks that stop a deploy: every FAIL and every UNKNOWN not overridden."""
        return tuple(c for c in self.checks if not c.passed and not self.is_overridden(c))

    @property
    def may_deploy(self) -> bool:
        return not self.blocking

    @property
    def all_passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def first_failure(self) -> Check | None:
        """Where the set-up should open (None when deploy may start)."""
        return self.blocking[0] if self.blocking else None

    def with_overrides(self, overrides: Iterable[CheckId | str]) -> Preflight:
        return replace(self, overrides=parse_overrides(overrides))

    def summary(self) -> str:
        """One sentence for a status line or an error."""
        first = self.first_failure
        if first is None:
            return "All preflight checks passed." if self.all_passed else (
                "Preflight passed with overridden checks: "
                + ", ".join(c.title for c in self.checks if self.is_overridden(c)) + ".")
        text = f"{first.title}: {first.detail}"
        return f"{text} {first.fix}" if first.fix else text

    def lines(self) -> list[str]:
        """The report as terminal lines: status, title, detail, and an indented fix."""
        out = []
        for c in self.checks:
            status = "OVERRIDE" if self.is_overridden(c) else c.status.value
            out.append(f"{status:8} {c.title:28} {c.detail}")
            if c.fix and not c.passed:
                out.append(f"{'':8} {'':28} fix: {c.fix}")
        return out


class PreflightFailedError(DeployConfigError):
    """Deploy refused: a preflight check failed (or is unknown and not overridden)."""

    def __init__(self, preflight: Preflight) -> None:
        super().__init__(f"Not deploying the {preflight.kind} endpoint: {preflight.summary()}")
        self.preflight = preflight


def parse_overrides(values: Iterable[CheckId | str]) -> frozenset[CheckId]:
    """Check ids from their CLI/settings names; DeployConfigError for an unknown name."""
    ids = set()
    for value in values:
        if isinstance(value, CheckId):
            ids.add(value)
            continue
        try:
            ids.add(CheckId(value.strip()))
        except ValueError:
            names = ", ".join(c.value for c in CheckId)
            raise DeployConfigError(f"{value!r} is not a preflight check ({names}).") from None
    return frozenset(ids)


def require(preflight: Preflight) -> Preflight:
    """The deploy gate: returns ``preflight`` if it allows a deploy, else raises."""
    if not preflight.may_deploy:
        raise PreflightFailedError(preflight)
    return preflight
