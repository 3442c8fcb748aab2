"""AWS without AWS: a moto server on loopback, Stubber-backed clients, fake credentials.

``moto_url`` gives each test a freshly reset server (state is wiped through moto's
reset API) and sets fake AWS credentials and region in the environment, so nothing
can reach real AWS. ``aws_env`` alone gives the fake credentials; ``stubbed_aws`` gives
an EndpointControl on Stubber-wrapped clients and a fake clock.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.stub import Stubber
from moto.server import ThreadedMotoServer

from captioner.cloud.endpoints import EndpointControl
from captioner.cloud.pricing import PriceTable

FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
_UNSET = ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_ENDPOINT_URL")


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    empty = tmp_path_factory.mktemp("aws-config")
    for key in _UNSET:
        monkeypatch.delenv(key, raising=False)
    for key, value in FAKE_ENV.items():
        monkeypatch.setenv(key, value)
    # Point the shared config/credentials files at an empty folder: no real profile leaks in.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty / "credentials"))
    # Nor does this machine's Captioner config (its installation id, its regions).
    monkeypatch.setenv("CAPTIONER_CONFIG_DIR", str(tmp_path_factory.mktemp("captioner-config")))


@pytest.fixture(scope="session")
def moto_server_url() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def moto_url(moto_server_url: str, aws_env: None) -> str:
    request = urllib.request.Request(f"{moto_server_url}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    return moto_server_url


class FakeClock:
    """Wall clock, monotonic clock and sleep in one, advanced only by ``sleep``/``advance``."""

    def __init__(self, start: datetime | None = None) -> None:
        self.start = start or datetime(2026, 11, 29, 10, 15, 0, tzinfo=UTC)
        self.t = 0.0
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.t)

    def monotonic(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds

    advance = sleep


@dataclass
class StubbedAws:
    """An EndpointControl whose boto3 clients answer from botocore Stubbers.

    Every expected request is validated against the real service model, and
    ``expected_params`` must match exactly.
    """

    control: EndpointControl
    sm: Stubber
    aas: Stubber
    clock: FakeClock


TEST_INSTALLATION = "0123456789abcdef"
TEST_PRICES = PriceTable(
    regions={"us-east-1": {"ml.g6.xlarge": 1.0, "ml.g6e.xlarge": 2.0, "ml.g5.xlarge": 1.5,
                           "ml.g4dn.xlarge": 0.5, "ml.g6.4xlarge": 1.6}},
)


@pytest.fixture(scope="session")
def _boto_session() -> boto3.Session:
    """One session for all stubbed tests: its loader caches the (large) service models."""
    return boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                         region_name="us-east-1")


@pytest.fixture
def stubbed_aws(aws_env: None, _boto_session: boto3.Session) -> Iterator[StubbedAws]:
    sm_client = _boto_session.client("sagemaker")
    aas_client = _boto_session.client("application-autoscaling")
    clock = FakeClock()
    control = EndpointControl(
        sm_client, aas_client, installation_id=TEST_INSTALLATION, prices=TEST_PRICES,
        now=clock.now, sleep=clock.sleep, monotonic=clock.monotonic,
    )
    with Stubber(sm_client) as sm, Stubber(aas_client) as aas:
        yield StubbedAws(control, sm, aas, clock)
        sm.assert_no_pending_responses()
        aas.assert_no_pending_responses()
