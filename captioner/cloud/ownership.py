"""Whose endpoint is this? Ownership tags of a Captioner stack, decided without I/O.

Every resource of a deploy (endpoint, endpoint config, model) carries, besides
``captioner:managed``, the id of the installation that made it and the ARN of the
principal that was signed in. The installation id is what makes a stack *yours*: the
app adopts, idle-stops and stops at quit only stacks whose three resources all carry
this installation's id. Stacks of colleagues in the same account (another installation
id) and stacks from before ownership tags existed are listed read-only; deleting one
needs a forced stop, for which the user types the endpoint's name.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

TAG_MANAGED = "captioner:managed"
TAG_INSTALLATION = "captioner:installation"
TAG_OWNER = "captioner:owner"  # the principal ARN that created the stack (informative)


class Ownership(enum.Enum):
    MINE = "yours"
    FOREIGN = "another installation"  # a colleague, or this user on another computer
    UNOWNED = "no owner tag"  # Captioner-managed, made before ownership tags
    UNMANAGED = "not Captioner's"

    @property
    def mine(self) -> bool:
        return self is Ownership.MINE

    @property
    def phrase(self) -> str:
        """Completes "Endpoint X is …"."""
        return _PHRASES[self]


_PHRASES = {
    Ownership.MINE: "yours",
    Ownership.FOREIGN: "owned by another Captioner installation",
    Ownership.UNOWNED: "a Captioner endpoint without owner tags (made by an older version)",
    Ownership.UNMANAGED: f"not created by Captioner (no {TAG_MANAGED} tag)",
}


@dataclass(frozen=True, slots=True)
class Owner:
    """This installation and the principal signed in now."""

    installation_id: str
    principal_arn: str = ""  # "" while unknown (e.g. STS not reachable in a test)

    def tags(self) -> list[dict[str, str]]:
        tags = [{"Key": TAG_INSTALLATION, "Value": self.installation_id}]
        if self.principal_arn:
            tags.append({"Key": TAG_OWNER, "Value": self.principal_arn})
        return tags

    def ownership(self, tags: Mapping[str, str] | None) -> Ownership:
        """How a resource with these tags relates to us (None: no tags could be read)."""
        tags = tags or {}
        if tags.get(TAG_MANAGED) != "true":
            return Ownership.UNMANAGED
        installation = tags.get(TAG_INSTALLATION)
        if not installation:
            return Ownership.UNOWNED
        return Ownership.MINE if installation == self.installation_id else Ownership.FOREIGN


def owner_text(tags: Mapping[str, str], ownership: Ownership) -> str:
    """Who made it, for a read-only list: "yours", "arn:aws:iam::…:user/ana", …"""
    if ownership.mine:
        return "yours"
    return tags.get(TAG_OWNER) or ownership.value


def stack_ownership(owner: Owner, *resource_tags: Mapping[str, str] | None) -> Ownership:
    """The stack is ours only when every existing resource of it is (None = already gone)."""
    seen = [owner.ownership(tags) for tags in resource_tags if tags is not None]
    for worst in (Ownership.UNMANAGED, Ownership.UNOWNED, Ownership.FOREIGN):
        if worst in seen:
            return worst
    return Ownership.MINE
