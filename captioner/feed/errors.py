"""The feed's error root (see captioner.feed)."""

from __future__ import annotations

from captioner.errors import CaptionerError


class FeedError(CaptionerError):
    """A caption output failed; the captions themselves go on."""


__all__ = ["FeedError"]
