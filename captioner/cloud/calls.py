"""One blocking AWS call with its failure translated into the cloud error tree (the
set-up's queries; the endpoint control plane has its own retrying caller)."""

from __future__ import annotations

import logging
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from botocore.parsers import ResponseParserError

from captioner.cloud.errors import AwsError, error_code, translate

log = logging.getLogger(__name__)


def call(client: Any, operation: str, **params: Any) -> dict[str, Any]:
    """``client.operation(**params)``; raises a typed EndpointControlError on failure."""
    try:
        return getattr(client, operation)(**params)
    except (ClientError, BotoCoreError) as exc:
        log.info("! %s failed: %s", operation,
                 error_code(exc) if isinstance(exc, ClientError) else type(exc).__name__)
        raise translate(exc, operation) from exc
    except ResponseParserError as exc:  # e.g. an HTML error page from a proxy
        log.info("! %s: unreadable answer", operation)
        raise AwsError(f"AWS sent an answer that could not be read ({operation}).",
                       operation=operation) from exc
