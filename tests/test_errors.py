"""Every package's error root derives from the one CaptionerError."""

from __future__ import annotations

import pytest

from captioner.errors import CaptionerError


def test_root_is_an_exception_with_a_readable_message() -> None:
    with pytest.raises(CaptionerError, match="readable"):
        raise CaptionerError("readable")
