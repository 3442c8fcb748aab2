"""A disk that fills up, for real: the process's file-size limit (RLIMIT_FSIZE).

Writes that cross the limit are cut short and the next one fails with EFBIG, exactly
as a write on a full disk is cut short and then fails with ENOSPC. No mount, no root.
"""

from __future__ import annotations

import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def file_size_limit(nbytes: int) -> Iterator[None]:
    """No file may grow past ``nbytes`` inside the block (SIGXFSZ ignored → EFBIG)."""
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)
