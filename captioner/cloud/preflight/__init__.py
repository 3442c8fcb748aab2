"""Preflight: the ordered checks that must pass before an endpoint is deployed.

One list, shared by the Endpoints set-up page and ``captioner endpoint check``; deploy
(CLI and app) refuses to start unless it passes. Each check ends PASS, FAIL or UNKNOWN
and says, in words, what was found and what fixes it. UNKNOWN means the check could not
be read (typically these credentials may not look, e.g. Service Quotas or IAM policy
simulation without permission); the user may override an UNKNOWN, never a FAIL.

Order (the set-up opens at the first failing one)::

    credentials → role → pass-role → role-access → image → model → quota → price

The checks are blocking boto3 calls on injected clients (run them off the GUI loop).

Modules: ``report`` (ids, lines, the deploy gate), ``checks`` (one function per check),
``run`` (the ordered run, from clients or from settings).
"""

from captioner.cloud.preflight.report import (
    ORDER,
    Check,
    CheckId,
    Preflight,
    PreflightFailedError,
    Status,
    parse_overrides,
    require,
)
from captioner.cloud.preflight.run import preflight_from_settings, run_preflight

__all__ = [
    "ORDER",
    "Check",
    "CheckId",
    "Preflight",
    "PreflightFailedError",
    "Status",
    "parse_overrides",
    "preflight_from_settings",
    "require",
    "run_preflight",
]
