"""Endpoint strings used in settings and on the command line, parsed into typed specs.

    embedded
    ws://host:port/v1/realtime          wss://host/v1/realtime
    sagemaker://ENDPOINT_NAME?region=us-east-1&profile=work&variant=AllTraffic
               &path=v1/audio/speech/stream&endpoint_uri=https://vpce-…:8443
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qs, urlencode, urlsplit

from captioner.aws import CredentialsProvider, ProfileCredentials
from captioner.transport.base import Connector

_ENDPOINT_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
_SAGEMAKER_KEYS = {"region", "profile", "variant", "path", "endpoint_uri"}


@dataclass(frozen=True, slots=True)
class EndpointSpec:
    """One parsed endpoint; only the fields of its ``kind`` are set."""

    kind: Literal["embedded", "websocket", "sagemaker"]
    url: str | None = None  # websocket
    endpoint_name: str | None = None  # sagemaker …
    region: str | None = None
    profile: str | None = None
    variant: str | None = None
    invocation_path: str | None = None
    endpoint_uri: str | None = None

    def __str__(self) -> str:
        return format_endpoint(self)


def parse_endpoint(text: str) -> EndpointSpec:
    """Parse an endpoint string; ValueError with a readable reason when it is wrong."""
    raw = (text or "").strip()
    if not raw:
        raise ValueError("The endpoint is empty: use 'embedded', a ws:// URL or sagemaker://NAME.")
    if raw.lower() == "embedded":
        return EndpointSpec("embedded")
    parts = urlsplit(raw)
    scheme = parts.scheme.lower()
    if scheme in ("ws", "wss"):
        if not parts.hostname:
            raise ValueError(f"{raw!r} has no host: write e.g. ws://127.0.0.1:8000/v1/realtime.")
        try:
            parts.port  # noqa: B018 - validates the port
        except ValueError as exc:
            raise ValueError(f"{raw!r} has an invalid port.") from exc
        return EndpointSpec("websocket", url=raw)
    if scheme == "sagemaker":
        return _parse_sagemaker(raw, parts)
    raise ValueError(
        f"Unknown endpoint {raw!r}: use 'embedded', ws://…, wss://… or sagemaker://ENDPOINT?region=…."
    )


def _parse_sagemaker(raw: str, parts) -> EndpointSpec:
    name = parts.netloc
    if parts.path not in ("", "/"):
        raise ValueError(f"{raw!r}: put options after '?', e.g. sagemaker://{name}?region=us-east-1.")
    if not name or not _ENDPOINT_NAME.match(name):
        raise ValueError(
            f"{raw!r}: {name!r} is not a SageMaker endpoint name "
            "(letters, digits and hyphens, at most 63)."
        )
    query = parse_qs(parts.query, keep_blank_values=True)
    unknown = set(query) - _SAGEMAKER_KEYS
    if unknown:
        raise ValueError(
            f"{raw!r}: unknown option(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(_SAGEMAKER_KEYS))}."
        )
    options: dict[str, str | None] = {}
    for key, values in query.items():
        if len(values) > 1:
            raise ValueError(f"{raw!r}: option {key!r} is given twice.")
        options[key] = values[0].strip() or None
    region = options.get("region")
    if region is not None and not _REGION.match(region):
        raise ValueError(f"{raw!r}: {region!r} is not an AWS region (e.g. us-east-1).")
    path = options.get("path")
    if path is not None and path.startswith("/"):
        raise ValueError(f"{raw!r}: the invocation path must not start with '/' "
                         f"(SageMaker answers 400); write path={path.lstrip('/')}.")
    uri = options.get("endpoint_uri")
    if uri is not None:
        u = urlsplit(uri)
        if u.scheme != "https" or not u.hostname:
            raise ValueError(f"{raw!r}: endpoint_uri must be an https:// URL, got {uri!r}.")
    return EndpointSpec("sagemaker", endpoint_name=name, region=region,
                        profile=options.get("profile"), variant=options.get("variant"),
                        invocation_path=path, endpoint_uri=uri)


def format_endpoint(spec: EndpointSpec) -> str:
    """The string form of ``spec`` (round-trips through :func:`parse_endpoint`)."""
    if spec.kind == "embedded":
        return "embedded"
    if spec.kind == "websocket":
        return spec.url or ""
    options = {k: v for k, v in (("region", spec.region), ("profile", spec.profile),
                                 ("variant", spec.variant), ("path", spec.invocation_path),
                                 ("endpoint_uri", spec.endpoint_uri)) if v is not None}
    query = f"?{urlencode(options, safe='/:')}" if options else ""
    return f"sagemaker://{spec.endpoint_name}{query}"


def connector_for(
    spec: EndpointSpec,
    *,
    credentials_provider: CredentialsProvider | None = None,
    default_region: str = "us-east-1",
    ca_file: str | None = None,
) -> Connector:
    """A Connector for a websocket or sagemaker spec (the embedded engine is the app's).

    ``credentials_provider`` defaults to the spec's ``profile`` (or boto3's default
    chain); ``default_region`` applies when the spec names none.
    """
    if spec.kind == "websocket":
        from captioner.transport.websocket import websocket_connector  # written by the lead

        assert spec.url is not None
        return websocket_connector(spec.url)
    if spec.kind == "sagemaker":
        from captioner.transport.sagemaker import SageMakerTarget, sagemaker_connector

        assert spec.endpoint_name is not None
        target = SageMakerTarget(
            endpoint_name=spec.endpoint_name,
            region=spec.region or default_region,
            endpoint_uri=spec.endpoint_uri,
            target_variant=spec.variant,
            model_invocation_path=spec.invocation_path,
            ca_file=ca_file,
        )
        provider = credentials_provider or ProfileCredentials(spec.profile)
        return sagemaker_connector(target, provider)
    raise ValueError("The embedded engine has no network connector; the app starts it itself.")
