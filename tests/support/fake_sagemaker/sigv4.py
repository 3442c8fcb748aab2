"""Server-side SigV4 checks, as SageMaker Runtime does them: request headers, then the
chunk-signature chain of every signed event-stream envelope.

Written independently of the client's signer (only hashlib/hmac), so a signing bug in
the client cannot hide behind the same bug here.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qsl, quote

from smithy_aws_event_stream.events import EventHeaderDecoder, EventMessage

EVENT_STREAM_HASH = "STREAMING-AWS4-HMAC-SHA256-EVENTS"
MAX_SKEW_SECONDS = 5 * 60


class SignatureError(Exception):
    """The request or an envelope is not signed with the expected key; ``code`` is AWS's."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    k = _hmac(f"AWS4{secret}".encode(), date)
    k = _hmac(k, region)
    k = _hmac(k, service)
    return _hmac(k, "aws4_request")


@dataclass(frozen=True)
class RequestAuth:
    """What a verified request header signature yields: the seed of the chunk chain."""

    access_key_id: str
    scope: str  # date/region/service/aws4_request
    signature: str  # hex
    key: bytes


def verify_request(
    method: str,
    path: str,
    headers: dict[str, str],
    *,
    secrets: dict[str, str],
    session_tokens: dict[str, str | None],
    region: str,
    service: str = "sagemaker",
    now: datetime | None = None,
) -> RequestAuth:
    """Check the Authorization header of an HTTP/2 request (``headers`` lower-cased)."""
    auth = headers.get("authorization")
    if not auth or not auth.startswith("AWS4-HMAC-SHA256 "):
        raise SignatureError("MissingAuthenticationTokenException", "Missing Authentication Token")
    parts = dict(
        item.strip().split("=", 1) for item in auth[len("AWS4-HMAC-SHA256 "):].split(",")
    )
    try:
        credential, signed_headers, signature = (
            parts["Credential"], parts["SignedHeaders"], parts["Signature"]
        )
        akid, date, cred_region, cred_service, terminator = credential.split("/")
    except (KeyError, ValueError) as exc:
        raise SignatureError("IncompleteSignatureException", "Malformed Authorization") from exc
    if akid not in secrets:
        raise SignatureError(
            "UnrecognizedClientException", "The security token included in the request is invalid."
        )
    if (cred_region, cred_service, terminator) != (region, service, "aws4_request"):
        raise SignatureError(
            "InvalidSignatureException",
            f"Credential should be scoped to a valid region/service, "
            f"not {cred_region}/{cred_service}",
        )
    expected_token = session_tokens.get(akid)
    if expected_token is not None and headers.get("x-amz-security-token") != expected_token:
        raise SignatureError(
            "UnrecognizedClientException", "The security token included in the request is invalid."
        )
    amz_date = headers.get("x-amz-date", "")
    try:
        when = datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError as exc:
        raise SignatureError("IncompleteSignatureException", "Missing X-Amz-Date") from exc
    now = now or datetime.now(UTC)
    if abs((now - when).total_seconds()) > MAX_SKEW_SECONDS:
        raise SignatureError("InvalidSignatureException", "Signature expired")

    raw_path, _, query = path.partition("?")
    canonical_query = "&".join(
        sorted(f"{quote(k, safe='')}={quote(v, safe='')}"
               for k, v in parse_qsl(query, keep_blank_values=True))
    )
    names = signed_headers.split(";")
    lines = []
    for name in names:
        value = headers.get(name)
        if value is None and name == "host":
            value = headers.get(":authority")
        if value is None:
            raise SignatureError("InvalidSignatureException", f"Signed header {name} missing")
        lines.append(f"{name}:{' '.join(value.split())}\n")
    payload_hash = headers.get("x-amz-content-sha256", hashlib.sha256(b"").hexdigest())
    canonical = "\n".join([
        method, quote(raw_path, safe="/"), canonical_query, "".join(lines), signed_headers,
        payload_hash,
    ])
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join([
        "AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()
    ])
    key = signing_key(secrets[akid], date, region, service)
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature):
        raise SignatureError(
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided. "
            "Check your AWS Secret Access Key and signing method.",
        )
    return RequestAuth(akid, scope, signature, key)


@dataclass
class Envelope:
    """One signed envelope of the request stream; ``inner`` is None for the final empty one."""

    raw_headers: bytes
    headers: dict
    payload: bytes

    @property
    def is_end(self) -> bool:
        return not self.payload


def split_messages(buffer: bytearray) -> list[tuple[bytes, bytes]]:
    """Pop every complete event-stream message from ``buffer`` → (raw headers, payload)."""
    out = []
    while len(buffer) >= 12:
        total, headers_len = struct.unpack("!II", buffer[:8])
        if len(buffer) < total:
            break
        message = bytes(buffer[:total])
        del buffer[:total]
        body = message[12:-4]
        out.append((body[:headers_len], body[headers_len:]))
    return out


def parse_envelope(raw_headers: bytes, payload: bytes) -> Envelope:
    return Envelope(raw_headers, EventHeaderDecoder(raw_headers).decode_headers(), payload)


class ChunkChain:
    """Verifies each envelope's ``:chunk-signature`` against the running chain."""

    def __init__(self, auth: RequestAuth, region: str, service: str = "sagemaker") -> None:
        self._prior = auth.signature
        self._secret_key = auth.key
        self._scope_date = auth.scope.split("/")[0]
        self._region = region
        self._service = service
        self.finished = False

    def verify(self, envelope: Envelope) -> None:
        if self.finished:
            raise SignatureError("InvalidSignatureException", "Envelope after the final one")
        date = envelope.headers.get(":date")
        signature = envelope.headers.get(":chunk-signature")
        if not isinstance(date, datetime) or not isinstance(signature, bytes):
            raise SignatureError("InvalidSignatureException", "Envelope is not signed")
        # Only the ":date" header is covered; ":chunk-signature" is appended after signing.
        date_header = _date_header_bytes(envelope.raw_headers)
        timestamp = date.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
        scope = f"{timestamp[:8]}/{self._region}/{self._service}/aws4_request"
        to_sign = "\n".join([
            "AWS4-HMAC-SHA256-PAYLOAD", timestamp, scope, self._prior,
            hashlib.sha256(date_header).hexdigest(), hashlib.sha256(envelope.payload).hexdigest(),
        ])
        key = self._secret_key
        if timestamp[:8] != self._scope_date:
            raise SignatureError("InvalidSignatureException", "Envelope date outside the scope")
        expected = hmac.new(key, to_sign.encode(), hashlib.sha256).digest()
        if not hmac.compare_digest(expected, signature):
            raise SignatureError(
                "InvalidSignatureException", "The event-stream chunk signature does not match."
            )
        self._prior = signature.hex()
        if envelope.is_end:
            self.finished = True


def _date_header_bytes(raw_headers: bytes) -> bytes:
    """The encoded ``:date`` header alone, cut from the raw header block."""
    pos = 0
    while pos < len(raw_headers):
        name_len = raw_headers[pos]
        name = raw_headers[pos + 1: pos + 1 + name_len]
        type_pos = pos + 1 + name_len
        kind = raw_headers[type_pos]
        if kind == 8:  # timestamp
            end = type_pos + 1 + 8
        elif kind in (6, 7):  # bytes / string
            (length,) = struct.unpack("!H", raw_headers[type_pos + 1: type_pos + 3])
            end = type_pos + 3 + length
        else:
            raise SignatureError("InvalidSignatureException", f"Unexpected header type {kind}")
        if name == b":date":
            return raw_headers[pos:end]
        pos = end
    raise SignatureError("InvalidSignatureException", "Envelope has no :date header")


def decode_inner(payload: bytes) -> EventMessage:
    """The event carried inside a signed envelope."""
    [(raw_headers, inner_payload)] = split_messages(bytearray(payload))
    headers = EventHeaderDecoder(raw_headers).decode_headers()
    return EventMessage(headers=headers, payload=inner_payload)
