"""A local SageMaker Runtime for the HTTP/2 bidirectional-streaming operation.

HTTP/2 over TLS (ALPN h2, a throwaway ``trustme`` CA) on 127.0.0.1, served with
``h2`` on asyncio in a background thread so sync and async tests can both use it.
It checks SigV4 on the request and on every envelope, then bridges payload parts to a
WebSocket backend exactly as SageMaker bridges to a container: UTF8 parts → text
frames (PARTIAL…COMPLETE runs joined), BINARY → binary frames, and frames coming back →
``PayloadPart`` events. Faults can be armed per fixture or injected on demand.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import logging
import re
import ssl
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import trustme
from smithy_aws_event_stream.events import EventMessage
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from tests.support.fake_sagemaker.sigv4 import (
    ChunkChain,
    SignatureError,
    decode_inner,
    parse_envelope,
    split_messages,
    verify_request,
)

log = logging.getLogger(__name__)
logging.getLogger("hpack").setLevel(logging.INFO)  # its DEBUG dumps every header, tokens too

ROUTE = re.compile(r"^/endpoints/(?P<name>[^/?]+)/invocations-bidirectional-stream$")
EVENT_STREAM = "application/vnd.amazon.eventstream"


class Fault(enum.Enum):
    DROP = "drop"  # abort the TCP connection, no goodbye
    MODEL_STREAM_ERROR = "model_stream_error"  # ModelStreamError exception event
    INTERNAL_STREAM_FAILURE = "internal_stream_failure"  # InternalStreamFailure event
    STALL = "stall"  # stop relaying in both directions; the connection stays up


@dataclass
class Refusal:
    status: int
    error_type: str
    message: str
    error_code: str | None = None


REFUSALS = {
    400: ("InputValidationError", "Endpoint request is not valid."),
    424: ("ModelError", "Received server error (500) from primary with message \"boom\"."),
    500: ("InternalServerError", "An internal error occurred."),
    503: ("ServiceUnavailableError", "The service is unavailable. Try again later."),
}


@dataclass
class Counters:
    requests: int = 0  # HTTP/2 requests to the route
    accepted: int = 0  # requests answered 200 and bridged
    parts: int = 0  # client payload parts received (all connections)
    frames_to_backend: int = 0
    parts_to_client: int = 0
    bad_envelopes: int = 0
    peak_calls: int = 0  # most bridged calls open at the same moment


@dataclass
class Faults:
    """Armed faults. Set attributes directly, or use :meth:`FakeSageMaker.inject`."""

    refuse: Refusal | None = None  # answer every request with this status
    after_parts: tuple[int, Fault] | None = None  # on the Nth client part of a call
    model_error_code: str = "ModelStreamError.Generic"
    model_error_message: str = "Model container closed the WebSocket (1011)."
    failure_message: str = "Internal stream failure."
    stalled: bool = False
    stall_released: threading.Event = field(default_factory=threading.Event)


@dataclass
class Credentials:
    access_key_id: str = "AKIDFAKESAGEMAKER01"
    secret_access_key: str = "fake-secret-7b1c3f0e9a"
    session_token: str | None = None


class FakeSageMaker:
    """Start with :meth:`start` (or ``with``); point clients at :attr:`endpoint_uri`."""

    def __init__(
        self,
        backend_url: str | None = None,
        *,
        endpoint_name: str = "captioner-test-stt",
        region: str = "us-west-2",
        credentials: Credentials | None = None,
        variants: tuple[str, ...] = ("AllTraffic",),
    ) -> None:
        self.backend_url = backend_url
        self.endpoint_name = endpoint_name
        self.region = region
        self.credentials = credentials or Credentials()
        self.variants = variants
        self.faults = Faults()
        self.counters = Counters()
        self.seen_headers: list[dict[str, str]] = []
        self.port = 0
        self._ca = trustme.CA()
        self._dir = tempfile.TemporaryDirectory(prefix="fake-sagemaker-")
        self.ca_file = str(Path(self._dir.name) / "ca.pem")
        self._ca.cert_pem.write_to_path(self.ca_file)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._calls: set[_Call] = set()
        self._connections: set[_Connection] = set()

    # ---- lifecycle -------------------------------------------------------------------
    @property
    def endpoint_uri(self) -> str:
        return f"https://localhost:{self.port}"

    def start(self) -> FakeSageMaker:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name="fake-sagemaker", daemon=True
        )
        self._thread.start()
        if not ready.wait(10) or self._server is None:
            raise RuntimeError("fake SageMaker did not start")
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        self.faults.stall_released.set()
        fut = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        with contextlib.suppress(Exception):
            fut.result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
        self._loop = None
        self._dir.cleanup()

    def __enter__(self) -> FakeSageMaker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, ready: threading.Event) -> None:
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._listen())
        ready.set()
        self._loop.run_forever()

    async def _listen(self) -> None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
        context.set_alpn_protocols(["h2"])
        self._server = await asyncio.start_server(
            self._serve_connection, "127.0.0.1", 0, ssl=context, ssl_handshake_timeout=5
        )
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("= fake SageMaker listening on %s", self.endpoint_uri)

    async def _shutdown(self) -> None:
        for connection in list(self._connections):
            connection.abort()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    # ---- fault controls (callable from any thread) -------------------------------------
    def refuse(self, status: int, message: str | None = None, *, error_type: str | None = None,
               error_code: str | None = None) -> None:
        """Answer every new request with ``status`` and the error body the SDK parses."""
        default_type, default_message = REFUSALS.get(status, ("UnknownError", "Refused"))
        self.faults.refuse = Refusal(
            status, error_type or default_type, message or default_message, error_code
        )

    def fail_after(self, parts: int, fault: Fault) -> None:
        """Trigger ``fault`` when a call has received its ``parts``-th payload part."""
        self.faults.after_parts = (parts, fault)

    def inject(self, fault: Fault) -> None:
        """Trigger ``fault`` now on every open call."""
        if fault is Fault.STALL:
            self.stall()
            return
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._inject_all, fault)

    def stall(self) -> None:
        self.faults.stall_released.clear()
        self.faults.stalled = True

    def unstall(self) -> None:
        self.faults.stalled = False
        self.faults.stall_released.set()

    def reset(self) -> None:
        self.unstall()
        self.faults = Faults()

    def _inject_all(self, fault: Fault) -> None:
        for call in list(self._calls):
            call.trigger(fault)

    # ---- connections -----------------------------------------------------------------
    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        connection = _Connection(self, reader, writer)
        self._connections.add(connection)
        try:
            await connection.run()
        finally:
            self._connections.discard(connection)


class _Connection:
    """One client TCP/TLS connection: the h2 state machine and its streams."""

    def __init__(self, fake: FakeSageMaker, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.fake = fake
        self.reader = reader
        self.writer = writer
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        )
        self.calls: dict[int, _Call] = {}
        self.window_open = asyncio.Event()
        self.closed = False

    def abort(self) -> None:
        self.closed = True
        self.writer.transport.abort()

    def flush(self) -> None:
        data = self.h2.data_to_send()
        if data and not self.closed:
            self.writer.write(data)

    async def run(self) -> None:
        self.h2.initiate_connection()
        self.flush()
        try:
            while not self.closed:
                data = await self.reader.read(65536)
                if not data:
                    break
                try:
                    events = self.h2.receive_data(data)
                except h2.exceptions.ProtocolError:
                    log.warning("! fake SageMaker: h2 protocol error")
                    break
                for event in events:
                    self.handle(event)
                self.flush()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            self.closed = True
            for call in list(self.calls.values()):
                call.connection_gone()
            with contextlib.suppress(Exception):
                self.writer.close()

    def handle(self, event: h2.events.Event) -> None:
        match event:
            case h2.events.RequestReceived(stream_id=sid, headers=headers):
                call = _Call(self, sid, {k.lower(): v for k, v in headers})
                self.calls[sid] = call
                call.task = asyncio.create_task(call.run())
            case h2.events.DataReceived(stream_id=sid, data=data, flow_controlled_length=n):
                self.h2.acknowledge_received_data(n, sid)
                if (call := self.calls.get(sid)) is not None:
                    call.feed(data)
            case h2.events.StreamEnded(stream_id=sid):
                if (call := self.calls.get(sid)) is not None:
                    call.input_ended()
            case h2.events.StreamReset(stream_id=sid):
                if (call := self.calls.pop(sid, None)) is not None:
                    call.connection_gone()
            case h2.events.WindowUpdated() | h2.events.RemoteSettingsChanged():
                self.window_open.set()
            case h2.events.ConnectionTerminated():
                self.closed = True

    async def send_data(self, sid: int, data: bytes, *, end: bool = False) -> None:
        """Send ``data`` on stream ``sid``, waiting for flow-control window as needed."""
        view = memoryview(data)
        while view and not self.closed:
            window = min(self.h2.local_flow_control_window(sid), self.h2.max_outbound_frame_size)
            if window <= 0:
                self.window_open.clear()
                await self.window_open.wait()
                continue
            chunk, view = view[:window], view[window:]
            self.h2.send_data(sid, bytes(chunk))
            self.flush()
        if end and not self.closed:
            self.h2.end_stream(sid)
            self.flush()
        with contextlib.suppress(ConnectionError):
            await self.writer.drain()


class _Call:
    """One InvokeEndpointWithBidirectionalStream call, bridged to one backend WebSocket."""

    def __init__(self, connection: _Connection, sid: int, headers: dict[str, str]) -> None:
        self.connection = connection
        self.fake = connection.fake
        self.sid = sid
        self.headers = headers
        self.task: asyncio.Task | None = None
        self.inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.ws: ClientConnection | None = None
        self.parts = 0
        self.responded = False
        self.finished = False
        self.input_done = False
        self.background: set[asyncio.Future] = set()
        self.stalled_frames: list[str | bytes] = []

    # -- events from the connection (sync, on the loop) --
    def feed(self, data: bytes) -> None:
        self.inbox.put_nowait(data)

    def input_ended(self) -> None:
        self.input_done = True
        self.inbox.put_nowait(None)

    def connection_gone(self) -> None:
        self.finished = True
        self.inbox.put_nowait(None)
        if self.ws is not None:
            self.background.add(asyncio.ensure_future(self.ws.close()))

    def trigger(self, fault: Fault) -> None:
        if self.finished:
            return
        if fault is Fault.DROP:
            log.info("= fake SageMaker: dropping the connection")
            self.connection.abort()
        elif fault is Fault.STALL:
            self.fake.stall()
        else:
            self.background.add(asyncio.ensure_future(self.send_exception(fault)))

    # -- the call --
    async def run(self) -> None:
        try:
            await self.start()
        except Exception:
            log.exception("! fake SageMaker: call failed")
            self.connection.abort()

    async def start(self) -> None:
        fake = self.fake
        h = self.headers
        fake.seen_headers.append(dict(h))
        path = h.get(":path", "")
        match = ROUTE.match(path.split("?")[0])
        if h.get(":method") != "POST" or match is None:
            await self.respond_error(404, "UnknownOperationException", "Unknown operation")
            return
        fake.counters.requests += 1
        try:
            auth = verify_request(
                "POST", path, h,
                secrets={fake.credentials.access_key_id: fake.credentials.secret_access_key},
                session_tokens={fake.credentials.access_key_id: fake.credentials.session_token},
                region=fake.region,
            )
        except SignatureError as exc:
            status = 403
            await self.respond_error(status, exc.code, exc.message)
            return
        if (refusal := fake.faults.refuse) is not None:
            await self.respond_error(refusal.status, refusal.error_type, refusal.message,
                                     refusal.error_code)
            return
        name = match.group("name")
        if name != fake.endpoint_name:
            await self.respond_error(
                400, "InputValidationError",
                f"Endpoint {name} of account 123456789012 not found.", "ValidationError",
            )
            return
        variant = h.get("x-amzn-sagemaker-target-variant")
        if variant is not None and variant not in fake.variants:
            await self.respond_error(
                400, "InputValidationError",
                f"Variant {variant} not found for endpoint {name}.", "ValidationError",
            )
            return
        invocation_path = h.get("x-amzn-sagemaker-model-invocation-path")
        if invocation_path is not None and invocation_path.startswith("/"):
            await self.respond_error(
                400, "InputValidationError",
                "Model invocation path must not start with '/'.", "ValidationError",
            )
            return
        try:
            self.ws = await ws_connect(self.backend_url(invocation_path), max_size=None,
                                       open_timeout=5)
        except (OSError, TimeoutError, Exception) as exc:
            await self.respond_error(
                424, "ModelError",
                f"Received client error from primary with message \"{exc}\".",
                "ModelError",
            )
            return
        fake.counters.accepted += 1
        fake._calls.add(self)
        fake.counters.peak_calls = max(fake.counters.peak_calls, len(fake._calls))
        self.connection.h2.send_headers(self.sid, [
            (":status", "200"),
            ("content-type", EVENT_STREAM),
            ("x-amzn-invoked-production-variant", variant or fake.variants[0]),
            ("x-amzn-requestid", f"fake-{self.sid}"),
        ])
        self.connection.flush()
        self.responded = True
        relay_back = asyncio.create_task(self.backend_to_client())
        try:
            await self.client_to_backend(auth)
            await relay_back
        finally:
            relay_back.cancel()
            fake._calls.discard(self)
            self.finished = True
            if self.ws is not None:
                await self.ws.close()

    def backend_url(self, invocation_path: str | None) -> str:
        if self.fake.backend_url is None:
            raise RuntimeError("fake SageMaker has no backend URL")
        if invocation_path is None:
            return self.fake.backend_url
        scheme, netloc, *_ = urlsplit(self.fake.backend_url)
        return urlunsplit((scheme, netloc, "/" + invocation_path, "", ""))

    async def respond_error(self, status: int, error_type: str, message: str,
                            error_code: str | None = None) -> None:
        body: dict[str, str] = {"message": message, "Message": message}
        if error_code is not None:
            body["ErrorCode"] = error_code
        self.connection.h2.send_headers(self.sid, [
            (":status", str(status)),
            ("content-type", "application/json"),
            ("x-amzn-errortype", error_type),
            ("x-amzn-requestid", f"fake-{self.sid}"),
        ])
        self.connection.flush()
        await self.connection.send_data(self.sid, json.dumps(body).encode(), end=True)
        self.finished = True

    async def client_to_backend(self, auth) -> None:
        chain = ChunkChain(auth, self.fake.region)
        buffer = bytearray()
        text: list[bytes] = []
        binary: list[bytes] = []
        while True:
            data = await self.inbox.get()
            if data is None:
                break
            buffer.extend(data)
            for raw_headers, payload in split_messages(buffer):
                envelope = parse_envelope(raw_headers, payload)
                try:
                    chain.verify(envelope)
                except SignatureError as exc:
                    self.fake.counters.bad_envelopes += 1
                    await self.send_error_event(exc.code, exc.message)
                    return
                if envelope.is_end:
                    self.input_done = True
                    log.debug("< fake SageMaker: end of input")
                    if self.ws is not None:
                        await self.ws.close()
                    return
                inner = decode_inner(envelope.payload)
                if inner.headers.get(":event-type") != "PayloadPart":
                    continue
                self.parts += 1
                self.fake.counters.parts += 1
                await self.wait_while_stalled()
                frame_parts = text if inner.headers.get("DataType") == "UTF8" else binary
                frame_parts.append(inner.payload)
                if inner.headers.get("CompletionState", "COMPLETE") == "COMPLETE":
                    await self.to_backend(text, binary)
                armed = self.fake.faults.after_parts
                if armed is not None and self.parts == armed[0]:
                    self.trigger(armed[1])
                    if armed[1] is not Fault.STALL:
                        return

    async def to_backend(self, text: list[bytes], binary: list[bytes]) -> None:
        assert self.ws is not None
        try:
            if text:
                await self.ws.send(b"".join(text).decode("utf-8"))
            if binary:
                await self.ws.send(b"".join(binary))
        except ConnectionClosed:
            return
        finally:
            self.fake.counters.frames_to_backend += 1
            text.clear()
            binary.clear()

    async def wait_while_stalled(self) -> None:
        while self.fake.faults.stalled and not self.finished:
            await asyncio.to_thread(self.fake.faults.stall_released.wait, 0.5)

    async def backend_to_client(self) -> None:
        assert self.ws is not None
        with contextlib.suppress(ConnectionClosed):
            async for frame in self.ws:
                await self.wait_while_stalled()
                if self.finished:
                    return
                is_text = isinstance(frame, str)
                payload = frame.encode("utf-8") if is_text else frame
                message = EventMessage(
                    headers={
                        ":message-type": "event",
                        ":event-type": "PayloadPart",
                        ":content-type": "application/octet-stream",
                        "DataType": "UTF8" if is_text else "BINARY",
                        "CompletionState": "COMPLETE",
                    },
                    payload=payload,
                )
                await self.connection.send_data(self.sid, message.encode())
                self.fake.counters.parts_to_client += 1
        if not self.finished and not self.connection.closed:
            self.finished = True
            await self.connection.send_data(self.sid, b"", end=True)
            if not self.input_done:
                # Response complete while the request is still open: like SageMaker,
                # stop the request side too (RST_STREAM NO_ERROR, RFC 9113 §8.1).
                with contextlib.suppress(h2.exceptions.ProtocolError):
                    self.connection.h2.reset_stream(self.sid, error_code=0)
                    self.connection.flush()

    async def send_exception(self, fault: Fault) -> None:
        faults = self.fake.faults
        if fault is Fault.MODEL_STREAM_ERROR:
            kind = "ModelStreamError"
            body = {"Message": faults.model_error_message, "ErrorCode": faults.model_error_code}
        else:
            kind = "InternalStreamFailure"
            body = {"Message": faults.failure_message}
        message = EventMessage(
            headers={
                ":message-type": "exception",
                ":exception-type": kind,
                ":content-type": "application/json",
            },
            payload=json.dumps(body).encode(),
        )
        await self.finish_with(message)

    async def send_error_event(self, code: str, text: str) -> None:
        message = EventMessage(
            headers={":message-type": "error", ":error-code": code, ":error-message": text}
        )
        await self.finish_with(message)

    async def finish_with(self, message: EventMessage) -> None:
        if self.finished or self.connection.closed:
            return
        self.finished = True
        await self.connection.send_data(self.sid, message.encode(), end=True)
        if self.ws is not None:
            await self.ws.close()
