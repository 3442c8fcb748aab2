"""Text that can always be written as UTF-8.

JSON may carry a lone UTF-16 surrogate (``"\\ud800"`` is valid JSON), and Python then
holds a ``str`` that no UTF-8 encoder accepts: writing it raises UnicodeEncodeError.
Every place that writes caption text to a file passes it through
:func:`replace_lone_surrogates` first, so the line is kept with U+FFFD where the
broken character was.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (the same object when clean)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub(REPLACEMENT, text)
    return text


__all__ = ["REPLACEMENT", "replace_lone_surrogates"]
