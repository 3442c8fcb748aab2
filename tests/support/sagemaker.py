"""Fixtures around the fake SageMaker Runtime (tests/support/fake_sagemaker)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from captioner.aws import AwsCredentials, StaticCredentials
from captioner.transport.sagemaker import SageMakerTarget
from tests.support.fake_sagemaker import FakeSageMaker
from tests.support.ws_thread import ThreadedWebSocketServer


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


class EchoBackend(ThreadedWebSocketServer):
    """A WebSocket server echoing every frame (text stays text, bytes stay bytes), or
    answering each with ``reply(frame)`` when given."""

    def __init__(self, reply: Callable[[str | bytes], str | bytes] | None = None) -> None:
        super().__init__()
        self.reply = reply

    async def handler(self, ws) -> None:
        async for message in ws:
            await ws.send(message if self.reply is None else self.reply(message))

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"


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
