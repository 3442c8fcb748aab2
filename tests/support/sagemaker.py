"""Fixtures around the fake SageMaker Runtime (tests/support/fake_sagemaker)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import pytest
from websockets.asyncio.server import serve

from captioner.aws import AwsCredentials, StaticCredentials
from captioner.transport.sagemaker import SageMakerTarget
from tests.support.fake_sagemaker import FakeSageMaker


class SageMakerFixture(FakeSageMaker):
    """The fake plus helpers that build client-side objects pointed at it."""

    def target(self, **overrides) -> SageMakerTarget:
        values = dict(endpoint_name=self.endpoint_name, region=self.region,
                      endpoint_uri=self.endpoint_uri, connect_timeout=10.0)
        values.update(overrides)
        return SageMakerTarget(**values)

    def aws_credentials(self, secret: str | None = None) -> AwsCredentials:
        c = self.credentials
        return AwsCredentials(c.access_key_id, secret or c.secret_access_key, c.session_token)

    def provider(self, secret: str | None = None) -> StaticCredentials:
        return StaticCredentials(self.aws_credentials(secret))


class EchoBackend:
    """A WebSocket server echoing every frame (text stays text, bytes stay bytes), or
    answering each with ``reply(frame)`` when given."""

    def __init__(self, reply: Callable[[str | bytes], str | bytes] | None = None) -> None:
        self.reply = reply
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.url = ""
        self._server = None

    async def _echo(self, ws) -> None:
        async for message in ws:
            await ws.send(message if self.reply is None else self.reply(message))

    def __enter__(self) -> EchoBackend:
        self._thread.start()

        async def start():
            return await serve(self._echo, "127.0.0.1", 0, max_size=None)

        self._server = asyncio.run_coroutine_threadsafe(start(), self.loop).result(10)
        self.url = f"ws://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/"
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop():
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


@pytest.fixture
def echo_backend() -> Iterator[EchoBackend]:
    with EchoBackend() as backend:
        yield backend


@pytest.fixture
def fake_sagemaker(monkeypatch: pytest.MonkeyPatch) -> Iterator[SageMakerFixture]:
    """A started fake SageMaker Runtime whose CA the CRT client trusts via SSL_CERT_FILE.

    Point it at a backend with ``fake_sagemaker.backend_url = ws_url``.
    """
    fake = SageMakerFixture().start()
    monkeypatch.setenv("SSL_CERT_FILE", fake.ca_file)
    try:
        yield fake
    finally:
        fake.stop()
