"""Run the checks in order, from injected clients or from the user's settings."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from captioner.cloud import account as acct
from captioner.cloud.deploy_plan import KINDS, REGION_RE, Kind
from captioner.cloud.endpoints import account_clients_from_settings
from captioner.cloud.errors import CredentialsError, DeployConfigError
from captioner.cloud.preflight.checks import (
    AWS_CHECKS,
    NOT_CHECKED_CREDENTIALS,
    SETUP_PLACE,
    Context,
    check_credentials,
    check_price,
    guarded,
)
from captioner.cloud.preflight.report import Check, CheckId, Preflight, Status, parse_overrides
from captioner.cloud.pricing import PriceTable, load_prices
from captioner.settings import EndpointDeploySettings, Settings

log = logging.getLogger(__name__)


def run_preflight(
    kind: Kind,
    settings: EndpointDeploySettings,
    clients: acct.AccountClients | None,
    *,
    region: str,
    prices: PriceTable,
    overrides: Iterable[CheckId | str] = (),
    credentials_error: CredentialsError | None = None,
) -> Preflight:
    """Run every check in order and return the report (never raises for AWS's answers).

    ``clients=None`` with ``credentials_error`` reports credentials that could not even
    be loaded (no profile, empty keyring): the AWS checks are then "not checked".
    """
    if kind not in KINDS:
        raise DeployConfigError(f"Unknown endpoint kind {kind!r}; use stt or tts.")
    if not REGION_RE.match(region or ""):
        raise DeployConfigError(f"{region!r} is not an AWS region (e.g. us-east-1).")
    ctx = Context(kind, region, settings, clients, prices)
    if clients is None or credentials_error is not None:
        credentials = Check(CheckId.CREDENTIALS, Status.FAIL,
                            str(credentials_error or "No AWS credentials are set up."),
                            f"Choose a profile or store access keys in {SETUP_PLACE}.")
    else:
        credentials = check_credentials(ctx)
    checks = [credentials]
    for check_id, what, permission, run in AWS_CHECKS:
        if not credentials.passed:
            checks.append(Check(check_id, Status.UNKNOWN, NOT_CHECKED_CREDENTIALS))
            continue
        checks.append(guarded(check_id, what, permission, run)(ctx))
    checks.append(guarded(CheckId.PRICE, "", "", check_price)(ctx))
    preflight = Preflight(kind, region, tuple(checks), parse_overrides(overrides),
                          identity=ctx.identity)
    log.info("= preflight %s in %s: %s", kind, region, preflight.summary())
    return preflight


def preflight_from_settings(
    kind: Kind,
    settings: Settings,
    *,
    deploy: EndpointDeploySettings | None = None,
    region: str | None = None,
    profile: str | None = None,
    overrides: Iterable[CheckId | str] | None = None,
    prices: PriceTable | None = None,
) -> Preflight:
    """Blocking: the preflight with the user's credentials, region and saved plan.

    ``deploy`` replaces the saved plan of ``kind`` (CLI flags); ``overrides`` default to
    the UNKNOWN checks the user accepted for this kind in settings.
    """
    deploy = deploy if deploy is not None else getattr(settings.cloud, kind)
    region = region or settings.aws.region
    if overrides is None:
        overrides = deploy.accepted_unknown
    prices = prices if prices is not None else load_prices()
    try:
        clients = account_clients_from_settings(settings, region=region, profile=profile)
    except CredentialsError as exc:
        return run_preflight(kind, deploy, None, region=region, prices=prices,
                             overrides=overrides, credentials_error=exc)
    return run_preflight(kind, deploy, clients, region=region, prices=prices,
                         overrides=overrides)
