"""``GET /ping`` for SageMaker: healthy exactly when vLLM's ``/health`` answers 200.

A raw HTTP/1.1 GET on asyncio keeps the bridge free of an HTTP client
dependency; the timeout keeps a wedged vLLM from hanging SageMaker's poll.
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit


async def check_health(url: str, timeout: float) -> tuple[bool, str]:
    """Return (healthy, reason). Never raises: every failure is a reason."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = parts.port or 80
    path = parts.path or "/"
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
            try:
                request = (
                    f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n\r\n"
                )
                writer.write(request.encode("ascii"))
                await writer.drain()
                status_line = await reader.readline()
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
    except TimeoutError:
        return False, f"backend health check timed out after {timeout:g} s"
    except OSError as exc:
        return False, f"backend unreachable: {exc.strerror or exc}"
    fields = status_line.split()
    if len(fields) < 2 or not fields[1].isdigit():
        return False, "backend sent no valid HTTP status"
    status = int(fields[1])
    if status != 200:
        return False, f"backend health returned HTTP {status}"
    return True, "healthy"
