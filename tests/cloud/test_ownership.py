"""Only this installation's endpoints are adopted or stopped; colleagues' are listed read-only.

Against a real moto server: a colleague (another installation id, same account) has a
Captioner-managed TTS endpoint; we deploy ours with the CLI, then stop "all of ours".
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest

from captioner.cloud.endpoints import EndpointControl, client_factory
from captioner.cloud.errors import NotOwnedError
from captioner.cloud.manager import EndpointManager, Phase
from captioner.cloud.ownership import TAG_INSTALLATION, TAG_OWNER, Owner, Ownership
from captioner.cloud.state import load_state
from captioner.settings import EndpointDeploySettings
from tests.cloud.test_endpoint_cli import ROLE, cli, endpoints
from tests.cloud.test_manager import run
from tests.support.aws_account import PAST_MOTO

COLLEAGUE = "c011ea9ec011ea9e"
TTS = EndpointDeploySettings(instance_types=["ml.g4dn.xlarge"], role_arn=ROLE)


def colleague_deploys(moto_url: str) -> str:
    control = EndpointControl.from_factory(
        client_factory(boto3.Session(region_name="us-east-1"), "us-east-1",
                       endpoint_url=moto_url),
        installation_id=COLLEAGUE, now=lambda: datetime(2026, 11, 1, 9, 0, tzinfo=UTC))
    return control.deploy(control.plan("tts", TTS))


def test_owner_tags_decide_ownership() -> None:
    me = Owner("mine", "arn:aws:iam::123456789012:user/me")
    managed = {"captioner:managed": "true"}
    assert me.ownership({**managed, TAG_INSTALLATION: "mine"}) is Ownership.MINE
    assert me.ownership({**managed, TAG_INSTALLATION: "theirs"}) is Ownership.FOREIGN
    assert me.ownership(managed) is Ownership.UNOWNED
    assert me.ownership({TAG_INSTALLATION: "mine"}) is Ownership.UNMANAGED
    assert me.ownership(None) is Ownership.UNMANAGED
    assert {"Key": TAG_OWNER, "Value": me.principal_arn} in me.tags()


def test_stop_all_of_mine_leaves_a_colleagues_endpoint(cli_env: Path, moto_url: str,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    theirs = colleague_deploys(moto_url)
    assert cli("deploy", "--kind", "tts", "--instance-type", "ml.g4dn.xlarge",
               "--role-arn", ROLE, "--yes", *PAST_MOTO) == 0
    (mine,) = set(endpoints(moto_url)) - {theirs}
    capsys.readouterr()

    assert cli("list") == 0
    listing = capsys.readouterr().out
    assert f"{mine}" in listing and f"{theirs}" in listing
    line = next(row for row in listing.splitlines() if row.startswith(theirs))
    assert line.rstrip().endswith("arn:aws:sts::123456789012:user/moto")  # who made it
    assert next(r for r in listing.splitlines() if r.startswith(mine)).rstrip().endswith("yours")

    assert cli("stop", "--kind", "tts", "--yes") == 0
    out = capsys.readouterr().out
    assert f"Leaving {theirs} alone: not yours" in out
    assert f"deleted endpoint {mine}" in out
    assert endpoints(moto_url) == [theirs]
    sm = boto3.client("sagemaker", region_name="us-east-1", endpoint_url=moto_url)
    assert [m["ModelName"] for m in sm.list_models()["Models"]] == [theirs]
    assert sm.describe_endpoint(EndpointName=theirs)["EndpointStatus"] == "InService"


def test_stopping_a_colleagues_endpoint_needs_its_name_typed(
    cli_env: Path, moto_url: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    theirs = colleague_deploys(moto_url)
    assert cli("stop", theirs) == 2
    err = capsys.readouterr().err
    assert "owned by another Captioner installation" in err and "--force" in err
    assert endpoints(moto_url) == [theirs]

    monkeypatch.setattr("sys.stdin", io.StringIO("captioner-tts\n"))  # a wrong name
    assert cli("stop", theirs, "--force") == 1
    assert "did not match; nothing was deleted" in capsys.readouterr().out
    assert endpoints(moto_url) == [theirs]

    monkeypatch.setattr("sys.stdin", io.StringIO(f"{theirs}\n"))
    assert cli("stop", theirs, "--force") == 0
    assert f"Type {theirs} to delete it anyway" in capsys.readouterr().out
    assert endpoints(moto_url) == []


def test_the_app_never_adopts_or_stops_a_colleagues_endpoint(cli_env: Path, moto_url: str
                                                             ) -> None:
    theirs = colleague_deploys(moto_url)

    def control() -> EndpointControl:
        return EndpointControl.from_factory(client_factory(
            boto3.Session(region_name="us-east-1"), "us-east-1", endpoint_url=moto_url))

    manager = EndpointManager(control, {"tts": TTS}.__getitem__, poll_interval=0.01,
                              monitor_interval=3600, stop_poll_interval=0.01,
                              tick_interval=None)
    others: list[list[str]] = []
    manager.others_changed.connect(lambda found: others.append([e.name for e in found]))

    async def scenario() -> None:
        assert await manager.attach() == []  # not an orphan of ours either
        assert manager.status("tts").name is None
        assert [e.name for e in manager.others] == [theirs]
        assert manager.others[0].owner == "arn:aws:sts::123456789012:user/moto"
        assert manager.quit_decision() is None  # nothing of ours bills

        status = await manager.start("tts")
        assert status.phase is Phase.READY and status.name != theirs
        await manager.stop_all()  # what "Stop" at quit and idle auto-stop end in
        with pytest.raises(NotOwnedError):
            await manager.force_stop(theirs, typed_name="")
        await manager.close()

    run(scenario)
    assert others == [[theirs]]
    assert endpoints(moto_url) == [theirs]
    assert load_state().installation_id != COLLEAGUE
