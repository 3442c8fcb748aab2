"""Someone done with cloud captions removes the captions image (which bills ECR storage
every month) and what built it, from the Endpoints page: what goes is listed first,
Cancel is the default, and the image field no longer names what is gone. AWS is a moto
server."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import boto3
import pytest
from PySide6.QtWidgets import QApplication, QMessageBox

from captioner.cloud import image_build as ib
from captioner.cloud.inventory import ManagedEndpoint
from captioner.cloud.lifecycle import KindStatus, Phase
from captioner.cloud.manager import EndpointManager
from captioner.cloud.status import EndpointSnapshot, Stage
from captioner.ui.endpoints.aws_setup import AccountSetupService
from tests.ui.conftest import run_async, wait_until
from tests.ui.endpoint_setup_support import ACCOUNT, IMAGE, MANIFEST, TestClients, open_page


@pytest.fixture
def aws(moto_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    return moto_url


def built(store, moto_url: str, *, saved: bool = True) -> None:
    """What an image build leaves (moto's build pushes nothing: the push is played)."""
    clients = TestClients()(store.settings.aws)
    ib.start_build(clients, ib.BuildPlan(ACCOUNT, "us-east-1"), b"build files",
                   installation_id="0123456789abcdef",
                   principal_arn=f"arn:aws:iam::{ACCOUNT}:user/moto")
    clients.ecr.put_image(repositoryName="captioner-stt", imageTag="latest",
                          imageManifest=json.dumps(MANIFEST))
    if saved:
        new = store.copy()
        new.cloud.stt.image_uri = IMAGE
        store.replace(new)


async def question(qtbot) -> QMessageBox:
    await wait_until(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox), 30,
                     "the question")
    return QApplication.activeModalWidget()


@pytest.mark.parametrize("saved", [True, False], ids=["saved", "only-listed"])
def test_the_image_and_its_build_are_removed_after_the_user_agrees(qapp, qtbot, store, aws,
                                                                   saved):
    """Saved as the plan's image, or only picked by the field from the account's list:
    either way the field no longer names the image once it is gone."""
    built(store, aws, saved=saved)
    ecr = boto3.client("ecr", region_name="us-east-1", endpoint_url=aws)
    service = AccountSetupService(TestClients())

    async def scenario() -> None:
        page = open_page(qtbot, store, service)
        stt = page.setups["stt"]
        assert not stt.remove_row.isVisible()  # nothing known of the account yet
        page.account.check_button.click()
        await wait_until(lambda: stt.remove_row.isVisible(), 30, "the image listed")
        assert stt.image.currentText() == IMAGE

        stt.remove_button.click()
        box = await question(qtbot)
        text = box.text()
        assert text.startswith(f"Remove from account {ACCOUNT} (us-east-1):")
        assert "• ECR repository captioner-stt (1 image" in text and "a month" in text
        assert f"• S3 bucket captioner-build-{ACCOUNT}-us-east-1" in text
        assert "• CodeBuild project captioner-stt-image" in text
        assert "• IAM role captioner-codebuild" in text
        box.defaultButton().click()  # Cancel: nothing goes
        await wait_until(lambda: not box.isVisible(), 10, "the box to close")
        assert len(ecr.describe_repositories()["repositories"]) == 1

        stt.remove_button.click()
        box = await question(qtbot)
        next(b for b in box.buttons() if b.text() == "&Remove").click()
        await wait_until(lambda: stt.build_status.text().startswith("✔"), 30, "the removal")
        assert stt.build_status.text().endswith("None of it bills any more.")
        await wait_until(lambda: stt.build_offer.isVisible(), 30, "the offer to build again")
        assert not stt.remove_row.isVisible()
        assert stt.image.currentText() == ""
        await page.runner.close()

    run_async(qapp, scenario, timeout=120)
    assert ecr.describe_repositories()["repositories"] == []
    assert store.settings.cloud.stt.image_uri == ""  # the checks would only fail on it


MINE = KindStatus("stt", Phase.READY, name="captioner-stt-1")
ORPHAN = EndpointSnapshot("captioner-stt-3", Stage.IN_SERVICE, "InService",
                          datetime(2026, 12, 6, tzinfo=UTC), kind="stt")
COLLEAGUES = ManagedEndpoint("captioner-stt-2", "arn:aws:sagemaker:us-east-1:1:endpoint/x",
                             "InService", "stt", None, region="us-east-1")


@pytest.mark.parametrize("whose", ["mine", "an orphan of mine", "a colleague's"])
def test_nothing_is_removed_while_a_captions_endpoint_runs(qapp, qtbot, store, aws,
                                                           monkeypatch, whose):
    built(store, aws)
    service = AccountSetupService(TestClients())

    async def scenario() -> None:
        page = open_page(qtbot, store, service)
        stt = page.setups["stt"]
        if whose == "mine":
            monkeypatch.setattr(page.manager, "status", lambda kind: MINE)
        elif whose == "an orphan of mine":  # left running by an earlier run, not attached
            monkeypatch.setattr(EndpointManager, "orphans", property(lambda m: [ORPHAN]))
        else:
            monkeypatch.setattr(EndpointManager, "others", property(lambda m: [COLLEAGUES]))
        page.account.check_button.click()
        await wait_until(lambda: stt.remove_row.isVisible(), 30, "the image listed")
        stt.remove_button.click()
        name = {"mine": MINE.name, "an orphan of mine": ORPHAN.name}.get(whose, COLLEAGUES.name)
        assert stt.build_status.text() == (f"Stop {name} first: a new instance of a captions "
                                           "endpoint would need the image.")
        assert QApplication.activeModalWidget() is None
        await page.runner.close()

    run_async(qapp, scenario, timeout=60)
    ecr = boto3.client("ecr", region_name="us-east-1", endpoint_url=aws)
    assert len(ecr.describe_repositories()["repositories"]) == 1
