"""SageMaker AI bidirectional streaming (HTTP/2, AWS event stream, SigV4) as a Transport.

Each whole message travels as ONE payload part: text as ``UTF8`` (SageMaker turns it
into a WebSocket text frame for the container), bytes as ``BINARY``. Signing of the
request and of every event is the SDK's (``aws-sdk-sagemaker-runtime-http2``); this
module only feeds it frozen credentials per connection and maps its errors onto
:mod:`captioner.transport.base`:

* HTTP 400 ``InputValidationError`` (bad endpoint/variant/path) → EndpointError, not retryable
* 424 ``ModelError``, 500, 503 → EndpointError, retryable
* 403 / signature / token errors → AuthError
* refused connection, TLS failure, timeout → ConnectError
* ``ModelStreamError`` / ``InternalStreamFailure`` / a dropped connection → ConnectionLost

The SDK's receiver runs in one background task feeding a queue: a ``receive()`` is
never cancelled mid-flight except on close, and never wrapped in a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
from aws_sdk_sagemaker_runtime_http2.config import AsyncSageMakerRuntimeHTTP2Config
from aws_sdk_sagemaker_runtime_http2.models import (
    InputValidationError,
    InternalServerError,
    InternalStreamFailure,
    InvokeEndpointWithBidirectionalStreamInput,
    ModelError,
    ModelStreamError,
    RequestPayloadPart,
    RequestStreamEventPayloadPart,
    ResponseStreamEventPayloadPart,
    ServiceUnavailableError,
)
from awscrt import io as crt_io
from awscrt.exceptions import AwsCrtError
from smithy_aws_core.identity import AWSCredentialsIdentity, StaticCredentialsResolver
from smithy_aws_event_stream.exceptions import UnmodeledEventError
from smithy_core.exceptions import CallError, SmithyError
from smithy_http.aio.crt import AWSCRTHTTPClient, AWSCRTHTTPClientConfig, _AWSCRTEventLoop

from captioner.aws import AwsCredentials, CredentialsError, CredentialsProvider, protect_logs
from captioner.transport.base import (
    AuthError,
    ConnectError,
    ConnectionLost,
    Connector,
    EndpointError,
    TransportError,
)

log = logging.getLogger(__name__)

STREAM_COMPLETED = "AWS_ERROR_HTTP_STREAM_HAS_COMPLETED"
_AUTH_HINTS = ("signature", "token", "credential", "accessdenied", "unrecognizedclient",
               "authenticat", "forbidden", "expired")
_END = object()
CLOSE_GRACE_SECONDS = 2.0  # for the end envelope to go out and the response to finish


def default_endpoint_uri(region: str) -> str:
    """Bidirectional streaming lives on port 8443 (the SDK's default would say 443)."""
    return f"https://runtime.sagemaker.{region}.amazonaws.com:8443"


@dataclass(frozen=True, slots=True)
class SageMakerTarget:
    """Where to stream: an endpoint, optionally one variant and a container route."""

    endpoint_name: str
    region: str
    endpoint_uri: str | None = None  # None = the public regional :8443 URI
    target_variant: str | None = None
    model_invocation_path: str | None = None  # e.g. "v1/audio/speech/stream", no leading /
    ca_file: str | None = None  # extra trust (None = system store, which honours SSL_CERT_FILE)
    connect_timeout: float = 30.0

    @property
    def uri(self) -> str:
        return self.endpoint_uri or default_endpoint_uri(self.region)

    def describe(self) -> str:
        variant = f" (variant {self.target_variant})" if self.target_variant else ""
        return f"SageMaker endpoint {self.endpoint_name!r} in {self.region}{variant}"


class _CrtClient(AWSCRTHTTPClient):
    """The SDK's CRT client with a CA file option and a handle on each request's body
    writer, whose end-of-stream failure must be collected rather than leaked."""

    def __init__(self, *, ca_file: str | None = None, eventloop: Any = None,
                 client_config: AWSCRTHTTPClientConfig | None = None) -> None:
        super().__init__(eventloop=eventloop or _shared_crt_loop(), client_config=client_config
                         or AWSCRTHTTPClientConfig(force_http_2=True))
        self._ca_file = ca_file
        if ca_file:
            options = crt_io.TlsContextOptions()
            options.override_default_trust_store_from_path(ca_filepath=ca_file)
            self._tls_ctx = crt_io.ClientTlsContext(options)
        self.writers: list[asyncio.Task[Any]] = []
        self.streams: list[Any] = []

    async def send(self, request: Any, *, request_config: Any = None) -> Any:
        response = await super().send(request, request_config=request_config)
        crt_stream = getattr(response, "_stream", None)
        if crt_stream is not None:
            self.streams.append(crt_stream)
        writer = getattr(crt_stream, "_writer", None)
        if isinstance(writer, asyncio.Future):
            writer.add_done_callback(_collect_writer_result)
            self.writers.append(writer)
        return response

    def response_ended_cleanly(self) -> bool:
        """Did the server end the response with END_STREAM (not a reset or a drop)?

        The SDK reports both as "no more events"; only the CRT stream knows which.
        """
        if not self.streams:
            return False
        remote_end = getattr(self.streams[-1], "_remote_completion_future", None)
        return bool(remote_end is not None and remote_end.done()
                    and not remote_end.cancelled() and remote_end.exception() is None)

    async def close(self) -> None:
        # The SDK awaits each connection's shutdown future through asyncio.wrap_future,
        # which passes a cancellation on to it (a close cut short, or the loop's end), and
        # the CRT later sets that cancelled future from its thread: InvalidStateError
        # printed. A running future cannot be cancelled, so mark them running first.
        # The SDK closes each connection in a task of its own; cancelled before those
        # started, no connection was ever told to close (its socket left open). Shielded,
        # they run even when this close is cut short.
        for connection in self._connections.values():
            with contextlib.suppress(RuntimeError):  # finished meanwhile
                connection.shutdown_future.set_running_or_notify_cancel()
        await asyncio.shield(super().close())

    def __deepcopy__(self, memo: Any) -> _CrtClient:
        # The SDK deep-copies its config; keep the TLS choice and share the CRT loop.
        return self


_CRT_LOOP: list[_AWSCRTEventLoop] = []


def _shared_crt_loop() -> _AWSCRTEventLoop:
    """One CRT I/O thread for all streams instead of a new one per (re)connect."""
    if not _CRT_LOOP:
        _CRT_LOOP.append(_AWSCRTEventLoop())
    return _CRT_LOOP[0]


def _collect_writer_result(task: asyncio.Future[Any]) -> None:
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None and STREAM_COMPLETED not in str(exc):
        log.debug("! request body writer ended: %s", exc)


def _is_stream_completed(exc: BaseException | None) -> bool:
    while exc is not None:
        if STREAM_COMPLETED in str(exc) or getattr(exc, "name", "") == STREAM_COMPLETED:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _looks_like_auth(text: str) -> bool:
    text = text.lower().replace(" ", "")
    return any(hint in text for hint in _AUTH_HINTS)


def map_connect_error(exc: BaseException, target: SageMakerTarget) -> TransportError:
    """Turn an SDK/CRT failure while opening the stream into our typed error."""
    where = target.describe()
    detail = (getattr(exc, "message", None) or str(exc) or type(exc).__name__).rstrip(".")
    if isinstance(exc, TransportError):
        return exc
    if "DNS" in f"{getattr(exc, 'name', '')} {detail}":  # AWS_IO_DNS_INVALID_NAME, …
        host = urlsplit(target.uri).hostname or target.uri
        return ConnectError(f"Could not reach {where}: {host} could not be looked up (no "
                            "internet connection, or its name server is out of reach).")
    if isinstance(exc, InputValidationError):
        code = f" [{exc.error_code}]" if exc.error_code else ""
        return EndpointError(
            f"{where} rejected the request{code}: {detail}. Check the endpoint name, "
            "region, variant and invocation path.", 400, retryable=False)
    if isinstance(exc, ModelError):
        status = f" (model answered {exc.original_status_code})" if exc.original_status_code else ""
        return EndpointError(f"The model behind {where} failed{status}: {detail}", 424,
                             retryable=True)
    if isinstance(exc, ServiceUnavailableError):
        return EndpointError(f"{where} is temporarily unavailable: {detail}", 503, retryable=True)
    if isinstance(exc, InternalServerError):
        return EndpointError(f"{where} had an internal error: {detail}", 500, retryable=True)
    if isinstance(exc, CallError):
        status = exc.response_metadata.http_status_code
        if status in (401, 403) or _looks_like_auth(detail):
            return AuthError(
                f"AWS rejected the credentials for {where} (HTTP {status}): {detail}. "
                "Check the profile or keys, refresh an SSO login, and that the clock is right.")
        if status is not None:
            return EndpointError(f"{where} answered HTTP {status}: {detail}", status,
                                 retryable=status >= 500 or status == 429)
        if isinstance(exc.__cause__, AwsCrtError):
            return _map_crt_error(exc.__cause__, target)
        return ConnectError(f"Could not reach {where}: {detail}")
    if isinstance(exc, AwsCrtError):
        return _map_crt_error(exc, target)
    if isinstance(exc, TimeoutError):
        return ConnectError(f"{where} did not answer within {target.connect_timeout:g} s.")
    if isinstance(exc, OSError | SmithyError):
        return ConnectError(f"Could not reach {where}: {detail}")
    return ConnectError(f"Could not open a stream to {where}: {detail}")


def _map_crt_error(exc: AwsCrtError, target: SageMakerTarget) -> ConnectError:
    name = exc.name
    if "TLS" in name or "PKI" in name or "CERT" in name:
        return ConnectError(
            f"TLS handshake with {target.uri} failed ({name}). If a proxy or VPC endpoint "
            "re-signs TLS, give its CA file.")
    if "HTTP2" in name or "PROTOCOL" in name:
        return ConnectError(f"{target.uri} did not speak HTTP/2 ({name}).")
    return ConnectError(f"Could not connect to {target.uri} ({name}: {exc.message}).")


def map_stream_error(exc: BaseException, target: SageMakerTarget) -> TransportError:
    """Turn a failure of an open stream into ConnectionLost (or AuthError for bad signing)."""
    where = target.describe()
    if isinstance(exc, ModelStreamError):
        code = exc.error_code or "no code"
        return ConnectionLost(f"The model behind {where} broke the stream [{code}]: "
                              f"{exc.message or 'no message'}")
    if isinstance(exc, InternalStreamFailure):
        return ConnectionLost(f"SageMaker broke the stream to {where}: "
                              f"{exc.message or 'internal stream failure'}")
    if isinstance(exc, UnmodeledEventError):
        text = str(exc)
        if _looks_like_auth(text):
            return AuthError(f"AWS rejected the signed stream to {where}: {text}")
        return ConnectionLost(f"{where} ended the stream with an error: {text}")
    detail = str(exc.__cause__ or exc) or type(exc).__name__
    return ConnectionLost(f"The connection to {where} was lost: {detail}")


class SageMakerTransport:
    """One open bidirectional stream. Use :meth:`connect`; then send/recv/close."""

    def __init__(self, target: SageMakerTarget, client: AsyncSageMakerRuntimeHTTP2Client,
                 http: _CrtClient, stream: Any, receiver: Any) -> None:
        self.target = target
        self._client = client
        self._http = http
        self._stream = stream
        self._publisher = stream.input_stream
        self._receiver = receiver
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._failure: TransportError | None = None
        self._ended = False  # the response side finished (cleanly or not)
        self._closed = False
        self._close_lock = asyncio.Lock()
        self._send_lock = asyncio.Lock()
        self._reader = asyncio.create_task(self._read_loop(), name="sagemaker-receive")

    def __repr__(self) -> str:
        return f"SageMakerTransport({self.target.describe()}, closed={self._closed})"

    @classmethod
    async def connect(cls, target: SageMakerTarget,
                      credentials: AwsCredentials) -> SageMakerTransport:
        """Open the stream and wait for SageMaker's response headers."""
        protect_logs(credentials)
        identity = AWSCredentialsIdentity(
            access_key_id=credentials.access_key_id,
            secret_access_key=credentials.secret_access_key,
            session_token=credentials.session_token,
            expiration=credentials.expiry,
        )
        http = _CrtClient(ca_file=target.ca_file)
        client: AsyncSageMakerRuntimeHTTP2Client | None = None
        stream = None
        log.info("= connecting to %s at %s", target.describe(), target.uri)
        try:
            config = await AsyncSageMakerRuntimeHTTP2Config.resolve(
                endpoint_uri=target.uri,
                region=target.region,
                aws_credentials_identity_resolver=StaticCredentialsResolver(identity),
                transport=http,
            )
            client = AsyncSageMakerRuntimeHTTP2Client(config=config)
            stream = await client.invoke_endpoint_with_bidirectional_stream(
                InvokeEndpointWithBidirectionalStreamInput(
                    endpoint_name=target.endpoint_name,
                    target_variant=target.target_variant,
                    model_invocation_path=target.model_invocation_path,
                )
            )
            output, receiver = await asyncio.wait_for(stream.await_output(),
                                                      target.connect_timeout)
        except BaseException as exc:
            if stream is not None:
                await _abandon_input(stream.input_stream)
            await _close_quietly(client, http)
            if isinstance(exc, asyncio.CancelledError):
                raise
            error = map_connect_error(exc, target)
            log.warning("! %s", error)
            raise error from exc
        log.info("= connected to %s (variant %s)", target.describe(),
                 output.invoked_production_variant)
        return cls(target, client, http, stream, receiver)

    # ---- sending -------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        await self._send(text.encode("utf-8"), "UTF8")

    async def send_bytes(self, data: bytes) -> None:
        await self._send(bytes(data), "BINARY")

    async def _send(self, payload: bytes, data_type: str) -> None:
        if self._closed:
            raise ConnectionLost(f"The stream to {self.target.describe()} is closed.")
        if self._failure is not None:
            raise self._failure
        if self._ended:
            raise ConnectionLost(f"{self.target.describe()} already ended the stream.")
        event = RequestStreamEventPayloadPart(value=RequestPayloadPart(
            bytes_=payload, data_type=data_type, completion_state="COMPLETE"))
        try:
            async with self._send_lock:
                await self._publisher.send(event)
        except Exception as exc:
            if self._failure is not None:
                raise self._failure from exc
            if self._closed:
                raise ConnectionLost(
                    f"The stream to {self.target.describe()} was closed.") from exc
            if _is_stream_completed(exc) or self._ended:
                raise ConnectionLost(
                    f"{self.target.describe()} already ended the stream.") from exc
            error = map_stream_error(exc, self.target)
            log.warning("! send failed: %s", error)
            raise error from exc
        if log.isEnabledFor(logging.DEBUG):
            log.debug("> %s part, %d bytes", data_type, len(payload))

    # ---- receiving -----------------------------------------------------------------
    async def _read_loop(self) -> None:
        try:
            while True:
                event = await self._receiver.receive()
                if event is None:
                    if self._http.response_ended_cleanly():
                        log.info("= %s ended the stream", self.target.describe())
                    elif not self._closed:
                        self._failure = ConnectionLost(
                            f"The connection to {self.target.describe()} was lost.")
                        log.warning("! %s", self._failure)
                    break
                if isinstance(event, ResponseStreamEventPayloadPart):
                    part = event.value
                    data = part.bytes_ or b""
                    if part.data_type == "UTF8":
                        self._queue.put_nowait(data.decode("utf-8", errors="replace"))
                    else:
                        self._queue.put_nowait(data)
                    if log.isEnabledFor(logging.DEBUG):
                        log.debug("< %s part, %d bytes", part.data_type, len(data))
                else:
                    log.debug("< ignoring %s", type(event).__name__)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not self._closed:
                self._failure = map_stream_error(exc, self.target)
                log.warning("! %s", self._failure)
        finally:
            self._ended = True
            self._queue.put_nowait(_END)

    async def recv(self) -> str | bytes | None:
        """Next message (str for UTF8 parts, bytes otherwise); None at a clean end."""
        if self._queue.empty() and self._ended:
            if self._failure is not None:
                raise self._failure
            return None
        item = await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)  # every later recv() sees the end too
            if self._failure is not None:
                raise self._failure
            return None
        return item

    # ---- closing -------------------------------------------------------------------
    async def close(self) -> None:
        """End our input (signed empty envelope), let the response finish, free the client."""
        async with self._close_lock:
            if self._closed:
                return
            self._closed = True
            # Not under the send lock: a send blocked on a dead or stalled stream must
            # not keep us from closing. The end envelope is bounded in time.
            closer = asyncio.create_task(self._publisher.close())
            done, _ = await asyncio.wait({closer}, timeout=CLOSE_GRACE_SECONDS)
            if closer in done:
                exc = closer.exception()
                if exc is not None and not _is_stream_completed(exc):
                    log.debug("! closing input: %s", exc)  # the server may have ended first
            else:
                closer.cancel()
                await _abandon_input(self._publisher)
            if not self._reader.done():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._reader), CLOSE_GRACE_SECONDS)
            if not self._reader.done():
                # A stalled response: end the connection first, which answers the read the
                # CRT holds (cancelling that read first leaves the CRT to answer a cancelled
                # future later, an error printed from its thread).
                await _close_quietly(self._client, self._http)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._reader), CLOSE_GRACE_SECONDS)
            if not self._reader.done():
                self._reader.cancel()
                with contextlib.suppress(BaseException):
                    await self._reader
            with contextlib.suppress(Exception):
                await self._receiver.close()
            await _close_quietly(self._client, self._http)
            log.info("= closed stream to %s", self.target.describe())


async def _abandon_input(publisher: Any) -> None:
    """Drop unsent input and wake blocked writers (they then fail, and we map that)."""
    writer = getattr(publisher, "_writer", None)
    close = getattr(writer, "close", None)
    if close is None:
        return
    with contextlib.suppress(Exception):
        await asyncio.wait_for(close(flush=False), CLOSE_GRACE_SECONDS)


async def _close_quietly(client: AsyncSageMakerRuntimeHTTP2Client | None,
                         http: _CrtClient) -> None:
    for writer in http.writers:
        if not writer.done():
            writer.cancel()
    with contextlib.suppress(Exception):
        if client is not None:
            await client.close()
    with contextlib.suppress(Exception):
        await http.close()


def sagemaker_connector(target: SageMakerTarget, credentials: CredentialsProvider) -> Connector:
    """A Connector that fetches fresh credentials (off the loop) before every connect."""

    async def connect() -> SageMakerTransport:
        try:
            creds = await asyncio.to_thread(credentials.get_credentials)
        except CredentialsError as exc:
            raise AuthError(str(exc)) from exc
        return await SageMakerTransport.connect(target, creds)

    return connect
