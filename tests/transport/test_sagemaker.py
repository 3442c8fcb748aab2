"""SageMakerTransport with the real SDK, through the fake SageMaker Runtime, to real backends."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import time

import pytest

from captioner.realtime.events import (
    AudioAppend,
    AudioCommit,
    SessionUpdate,
    TranscriptionDelta,
    TranscriptionDone,
    decode_server_event,
    encode,
)
from captioner.transport.base import AuthError, ConnectError, ConnectionLost, EndpointError
from captioner.transport.sagemaker import (
    CLOSE_GRACE_SECONDS,
    SageMakerTransport,
    sagemaker_connector,
)
from tests.support.fake_sagemaker import Fault
from tests.support.transcribers import tone_words_pcm

TIMEOUT = 20


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT))


async def _transcribe(transport, words: list[str]) -> tuple[str, str]:
    await transport.send_text(encode(SessionUpdate(model="test-model")))
    pcm = tone_words_pcm(words)
    for start in range(0, len(pcm), 4096):
        await transport.send_text(encode(AudioAppend(audio=pcm[start:start + 4096])))
    await transport.send_text(encode(AudioCommit()))
    await transport.send_text(encode(AudioCommit(final=True)))
    deltas = []
    while True:
        frame = await transport.recv()
        assert frame is not None, "stream ended before transcription.done"
        event = decode_server_event(frame)
        if isinstance(event, TranscriptionDelta):
            deltas.append(event.delta)
        elif isinstance(event, TranscriptionDone):
            return "".join(deltas), event.text


def test_realtime_session_through_fake_sagemaker(fake_sagemaker, realtime_server, caplog):
    fake_sagemaker.backend_url = realtime_server.url
    words = ["alpha", "delta", "kilo"]
    caplog.set_level(logging.DEBUG)

    async def main():
        connect = sagemaker_connector(fake_sagemaker.target(), fake_sagemaker.provider())
        transport = await connect()
        try:
            return await _transcribe(transport, words)
        finally:
            await transport.close()

    deltas, done = run(main())
    assert deltas.split() == words
    assert done.split() == words
    assert fake_sagemaker.counters.accepted == 1
    assert fake_sagemaker.counters.parts >= 4
    assert fake_sagemaker.counters.bad_envelopes == 0
    # Nothing secret in any log line, the SDK's DEBUG request dumps included.
    secret = fake_sagemaker.credentials.secret_access_key
    assert any("smithy" in r.name for r in caplog.records)
    assert all(secret not in r.getMessage() for r in caplog.records)


def test_session_token_is_sent_but_never_logged(fake_sagemaker, echo_backend, caplog):
    fake_sagemaker.backend_url = echo_backend.url
    token = "FwoGZXIvYXdzEXAMPLEsessiontoken0123456789"
    fake_sagemaker.credentials.session_token = token
    caplog.set_level(logging.DEBUG)

    async def main():
        transport = await SageMakerTransport.connect(
            fake_sagemaker.target(), fake_sagemaker.aws_credentials())
        await transport.send_text("hello")
        reply = await transport.recv()
        await transport.close()
        return reply

    assert run(main()) == "hello"
    assert fake_sagemaker.seen_headers[-1]["x-amz-security-token"] == token
    assert all(token not in r.getMessage() for r in caplog.records)


def test_text_and_binary_parts_round_trip(fake_sagemaker, echo_backend):
    fake_sagemaker.backend_url = echo_backend.url
    pcm = bytes(range(256)) * 40

    async def main():
        transport = await SageMakerTransport.connect(
            fake_sagemaker.target(), fake_sagemaker.aws_credentials())
        await transport.send_text('{"type":"ping","text":"héllo"}')
        text = await transport.recv()
        await transport.send_bytes(pcm)
        data = await transport.recv()
        await transport.close()
        await transport.close()  # idempotent
        return text, data

    text, data = run(main())
    assert text == '{"type":"ping","text":"héllo"}' and isinstance(text, str)
    assert data == pcm and isinstance(data, bytes)
    assert fake_sagemaker.counters.frames_to_backend == 2


def test_backend_closing_is_a_clean_end(fake_sagemaker, realtime_server):
    # A backend that ends the session (here: the realtime server on a bad path) → None.
    fake_sagemaker.backend_url = realtime_server.url

    async def main():
        transport = await SageMakerTransport.connect(
            fake_sagemaker.target(), fake_sagemaker.aws_credentials())
        await transport.send_text(encode(SessionUpdate(model="test-model")))
        first = await transport.recv()
        realtime_server.drop_connections()
        rest = await transport.recv()
        with pytest.raises(ConnectionLost):
            for _ in range(50):  # sending after the end fails, typed
                await transport.send_text("{}")
        await transport.close()
        return first, rest

    first, rest = run(main())
    assert "session.created" in first
    assert rest is None


def test_wrong_secret_is_auth_error(fake_sagemaker, echo_backend):
    fake_sagemaker.backend_url = echo_backend.url
    target = fake_sagemaker.target()

    async def main():
        await SageMakerTransport.connect(target, fake_sagemaker.aws_credentials("not-the-secret"))

    with pytest.raises(AuthError, match="rejected the credentials") as info:
        run(main())
    assert info.value.retryable is False
    assert fake_sagemaker.counters.accepted == 0


@pytest.mark.parametrize(
    ("status", "retryable", "words"),
    [(400, False, "rejected the request"), (424, True, "model"), (500, True, "internal"),
     (503, True, "unavailable")],
)
def test_http_refusals_map_to_endpoint_error(fake_sagemaker, echo_backend, status, retryable,
                                             words):
    fake_sagemaker.backend_url = echo_backend.url
    fake_sagemaker.refuse(status)

    async def main():
        await SageMakerTransport.connect(fake_sagemaker.target(), fake_sagemaker.aws_credentials())

    with pytest.raises(EndpointError) as info:
        run(main())
    assert info.value.status == status
    assert info.value.retryable is retryable
    assert words in str(info.value).lower()


def test_unknown_endpoint_is_not_retryable_and_named(fake_sagemaker, echo_backend):
    fake_sagemaker.backend_url = echo_backend.url

    async def main():
        await SageMakerTransport.connect(fake_sagemaker.target(endpoint_name="no-such-endpoint"),
                                         fake_sagemaker.aws_credentials())

    with pytest.raises(EndpointError) as info:
        run(main())
    assert info.value.status == 400 and info.value.retryable is False
    assert "no-such-endpoint" in str(info.value)


def test_connection_refused_is_connect_error(fake_sagemaker):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def main():
        await SageMakerTransport.connect(
            fake_sagemaker.target(endpoint_uri=f"https://localhost:{port}"),
            fake_sagemaker.aws_credentials())

    with pytest.raises(ConnectError) as info:
        run(main())
    assert type(info.value) is ConnectError and info.value.retryable
    assert "refused" in str(info.value).lower()


def test_a_name_that_cannot_be_looked_up_says_so(fake_sagemaker):
    """No internet (or no name server): the CRT's AWS_IO_DNS_… code means nothing to a
    reader; the message names the host and the likely cause."""
    async def main():
        await SageMakerTransport.connect(
            fake_sagemaker.target(endpoint_uri="https://runtime.no-such-host.invalid:8443"),
            fake_sagemaker.aws_credentials())

    with pytest.raises(ConnectError) as info:
        run(main())
    assert info.value.retryable
    assert "runtime.no-such-host.invalid could not be looked up (no internet connection" \
        in str(info.value)


@pytest.mark.parametrize(
    ("fault", "message"),
    [(Fault.MODEL_STREAM_ERROR, "[ModelStreamError.Generic]"),
     (Fault.INTERNAL_STREAM_FAILURE, "SageMaker broke the stream"),
     (Fault.DROP, "was lost")],
)
def test_stream_faults_are_connection_lost(fake_sagemaker, echo_backend, fault, message):
    fake_sagemaker.backend_url = echo_backend.url
    fake_sagemaker.fail_after(3, fault)

    async def main():
        transport = await SageMakerTransport.connect(
            fake_sagemaker.target(), fake_sagemaker.aws_credentials())
        echoed = []
        try:
            for i in range(3):
                await transport.send_text(f"part {i}")
            with pytest.raises(ConnectionLost) as info:
                while True:
                    echoed.append(await transport.recv())
            with pytest.raises(ConnectionLost):  # stays failed
                await transport.recv()
            return echoed, info.value
        finally:
            await transport.close()

    echoed, error = run(main())
    assert message in str(error)
    assert echoed == ["part 0", "part 1", "part 2"][: len(echoed)]
    assert fake_sagemaker.counters.parts == 3


def test_fault_injected_on_demand(fake_sagemaker, echo_backend):
    fake_sagemaker.backend_url = echo_backend.url

    async def main():
        transport = await SageMakerTransport.connect(
            fake_sagemaker.target(), fake_sagemaker.aws_credentials())
        await transport.send_text("one")
        assert await transport.recv() == "one"
        fake_sagemaker.inject(Fault.MODEL_STREAM_ERROR)
        with pytest.raises(ConnectionLost, match="broke the stream"):
            await transport.recv()
        await transport.close()

    run(main())


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_stall_then_close_does_not_hang(fake_sagemaker, echo_backend):
    """Nor leave the CRT to answer a read we cancelled (an error printed from its thread)."""
    fake_sagemaker.backend_url = echo_backend.url

    async def main():
        transport = await SageMakerTransport.connect(
            fake_sagemaker.target(), fake_sagemaker.aws_credentials())
        await transport.send_text("before")
        assert await transport.recv() == "before"
        fake_sagemaker.stall()
        await transport.send_text("during")
        pending = asyncio.ensure_future(transport.recv())
        done, _ = await asyncio.wait({pending}, timeout=0.5)
        assert not done  # nothing relayed while stalled
        started = time.monotonic()
        await transport.close()  # the session's watchdog would do this
        assert time.monotonic() - started < 2 * CLOSE_GRACE_SECONDS + 1
        result = await pending
        fake_sagemaker.unstall()
        return result

    assert run(main()) is None


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("spins", [0, 1, 2, 3, 5, 8])
def test_close_cut_short_leaves_the_crt_nothing_to_trip_on(fake_sagemaker, echo_backend,
                                                          spins):
    """A close cancelled midway (the app quitting, a loop ending) must not cancel the
    CRT's own shutdown future, which its thread sets later (an error printed there)."""
    fake_sagemaker.backend_url = echo_backend.url

    async def main():
        transport = await SageMakerTransport.connect(
            fake_sagemaker.target(), fake_sagemaker.aws_credentials())
        await transport.send_text("x")
        assert await transport.recv() == "x"
        connections = list(transport._http._connections.values())
        closing = asyncio.ensure_future(transport.close())
        while transport._http._connections:  # the SDK's close has begun
            await asyncio.sleep(0)
        for _ in range(spins):  # ... and waits on the CRT's shutdown
            await asyncio.sleep(0)
        closing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await closing
        return [c.shutdown_future for c in connections]

    shutdowns = run(main())
    assert shutdowns and not any(f.cancelled() for f in shutdowns)
    concurrent.futures.wait(shutdowns, timeout=30)  # the CRT thread, on a loaded machine
    assert all(f.done() for f in shutdowns)


def test_connector_fetches_credentials_each_time(fake_sagemaker, echo_backend):
    fake_sagemaker.backend_url = echo_backend.url
    calls = []
    inner = fake_sagemaker.provider()

    class Counting:
        def describe(self):
            return "test"

        def get_credentials(self):
            calls.append(1)
            return inner.get_credentials()

    connect = sagemaker_connector(fake_sagemaker.target(), Counting())

    async def main():
        for _ in range(2):
            transport = await connect()
            await transport.send_text("x")
            assert await transport.recv() == "x"
            await transport.close()

    run(main())
    assert len(calls) == 2
    assert fake_sagemaker.counters.accepted == 2
