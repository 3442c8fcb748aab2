"""Mask secrets in the container's log: ``python3 -m bridge.redact`` copies stdin to stderr.

The entrypoint pipes vLLM's output through it: vLLM prints its arguments at start, and
an ``SM_VLLM_API_KEY`` or ``SM_VLLM_HF_TOKEN`` would otherwise reach CloudWatch. Masked:
the values of environment variables whose names say they are secret (``HF_TOKEN``,
``*_API_KEY``, ``*_SECRET*``, ``*_PASSWORD``…) wherever they appear, ``hf_…`` tokens, and
the value after any secret-looking key (``'api_key': '…'``, ``--api-key …``,
``token=…``). Standard library only: it runs before anything else is importable.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping

MASK = "***"
MIN_SECRET = 6  # shorter values would mask ordinary text
SECRET_NAME = re.compile(r"(token|secret|password|passwd|api[-_]?key|credential)", re.I)
_NAME = r"[\w.-]*(?:token|secret|password|passwd|api[-_]?key)"
_VALUE = r"""(?!\*\*\*)[^"'\s,;&}\[\]()]+"""
_KEY_VALUE = (
    re.compile(rf"""(?i)(["']?{_NAME}["']?\s*[:=]\s*\[?\s*b?["']?){_VALUE}"""),  # key: value
    re.compile(rf"(?i)(--{_NAME}\s+){_VALUE}"),  # --api-key value
)
_HF_TOKEN = re.compile(r"\bhf_[A-Za-z0-9]{16,}")


def secret_values(env: Mapping[str, str]) -> list[str]:
    """Values of the variables whose names say they hold a secret, longest first."""
    values = {v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET}
    return sorted(values, key=len, reverse=True)


def redact(line: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        line = line.replace(secret, MASK)
    line = _HF_TOKEN.sub(f"hf_{MASK}", line)
    for pattern in _KEY_VALUE:
        line = pattern.sub(rf"\g<1>{MASK}", line)
    return line


def main() -> None:
    secrets = secret_values(os.environ)
    for line in sys.stdin:
        sys.stderr.write(redact(line, secrets))
        sys.stderr.flush()


if __name__ == "__main__":
    main()
