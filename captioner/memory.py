"""Keep the process's memory flat over a long session (glibc's malloc).

glibc serves large allocations with ``mmap`` and returns them to the system when
freed, but each time it frees such a block it raises that size limit (up to
32 MB), so that later blocks of that size come faster from its heap. The
engine's per-decode buffers (0.2–3 MB: features, encoder outputs, attention
keys, logits) then live in the heap, and the holes they leave stay resident.
Measured with ``bench/bench_engine.py``'s two-hour session: RSS grew 8 % (live
decodes in CTranslate2) and 4.9 % (in numpy), about 15 MB either way.

Fixing the limit (``mallopt``) stopped the growth but made every large buffer a
fresh ``mmap`` with its page faults: the encoder's CPU rose by half. Instead,
``malloc_trim`` hands the free pages back now and then. It is cheap itself, but
the next decode faults its working memory in again (feature extraction went
from 4 to 13 ms per audio second when trimming after every utterance), so the
engine trims after every eighth utterance.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys
from collections.abc import Callable

log = logging.getLogger(__name__)


def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    trim.argtypes = (ctypes.c_size_t,)
    trim.restype = ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def return_free_memory() -> bool:
    """Give the system back the free pages inside malloc's heap (glibc only).

    Returns whether any memory was released; False off glibc.
    """
    return bool(_TRIM(0)) if _TRIM is not None else False
