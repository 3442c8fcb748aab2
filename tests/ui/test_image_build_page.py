"""A newcomer with no captions image builds one from the Endpoints page: what the build
creates is shown before anything exists, then the build is followed to its end. AWS is a
moto server; what only real AWS does (the build's own pushing of the image, and its
minutes of progress) is played at that edge."""

from __future__ import annotations

import json

import boto3
import pytest

from captioner.cloud import image_build as ib
from captioner.ui.endpoints import image_flow
from captioner.ui.endpoints.aws_setup import AccountSetupService
from captioner.ui.endpoints.page_parts import ERROR_SHADES, text_color
from tests.ui.conftest import run_async, wait_until
from tests.ui.endpoint_setup_support import ACCOUNT, IMAGE, MANIFEST, TestClients, open_page


@pytest.fixture
def aws(moto_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    monkeypatch.setattr(image_flow, "BUILD_POLL_SECONDS", 0.05)
    return moto_url


class CodeBuildEdge(AccountSetupService):
    """The real service against moto, plus what CodeBuild itself would do: a build that
    runs for a while (moto finishes at once), then pushes the image or fails."""

    def __init__(self, moto_url: str, outcome: ib.BuildProgress) -> None:
        super().__init__(TestClients())
        self.moto_url, self.outcome = moto_url, outcome
        self.looks = 0

    def image_build_progress(self, aws, build_id):
        real = super().image_build_progress(aws, build_id)  # moto knows the build
        self.looks += 1
        if self.looks == 1:
            return ib.BuildProgress("IN_PROGRESS", "BUILD", 125.0)
        if self.outcome.succeeded:  # the build's docker push, into the repository it made
            ecr = boto3.client("ecr", region_name="us-east-1", endpoint_url=self.moto_url)
            ecr.put_image(repositoryName="captioner-stt", imageTag="latest",
                          imageManifest=json.dumps(MANIFEST))
        return ib.BuildProgress(self.outcome.status, real.phase, self.outcome.seconds,
                                self.outcome.failure)


def test_a_newcomer_builds_the_captions_image_from_the_page(qapp, qtbot, store, aws):
    service = CodeBuildEdge(aws, ib.BuildProgress("SUCCEEDED", "COMPLETED", 1510.0))
    codebuild = boto3.client("codebuild", region_name="us-east-1", endpoint_url=aws)
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=aws)
    seen: list[str] = []

    async def scenario() -> None:
        page = open_page(qtbot, store, service)
        stt = page.setups["stt"]
        page.account.check_button.click()
        await wait_until(lambda: stt.build_box.isVisible(), 30, "the empty image list")
        assert "Captioner can have AWS build" in stt.build_hint.text()
        assert stt.build_button.isEnabled()

        stt.build_button.click()
        await wait_until(lambda: page.image_flow.dialog is not None
                         and page.image_flow.dialog.isVisible(), 30, "the build dialog")
        dialog = page.image_flow.dialog
        intro = dialog.findChildren(type(stt.build_hint))[0].text()
        assert f"captioner-build-{ACCOUNT}-us-east-1" in intro and IMAGE in intro
        assert "a month" in intro  # the storage that bills after the build, too
        trust = json.loads(dialog.trust_view.toPlainText())
        assert trust["Statement"][0]["Principal"] == {"Service": "codebuild.amazonaws.com"}
        assert dialog.cancel_button.isDefault()
        assert codebuild.list_projects()["projects"] == []  # nothing before the user agrees
        assert s3.list_buckets()["Buckets"] == []
        dialog.build_button.click()

        await wait_until(lambda: "Building in AWS CodeBuild" in stt.build_status.text(), 30,
                         "the build's progress")
        seen.append(stt.build_status.text())
        assert not stt.build_button.isEnabled()  # one build at a time
        await wait_until(lambda: stt.build_status.text().startswith("✔"), 30, "the end")
        seen.append(stt.build_status.text())
        await wait_until(lambda: stt.image.count() == 1, 30, "the refreshed image list")
        assert stt.image.currentText() == IMAGE
        await wait_until(lambda: not stt.build_offer.isVisible(), 30, "the offer to go")
        assert stt.build_status.isVisible()  # the outcome stays in view, the image listed
        await page.runner.close()

    run_async(qapp, scenario, timeout=120)
    assert seen[0] == ("Building in AWS CodeBuild — build, 0:02:05 (usually 20–30 min). It "
                       "goes on if you close Captioner.")
    assert seen[1] == f"✔ Built and pushed {IMAGE} in 0:25:10; it is now the image."
    assert store.settings.cloud.stt.image_uri == IMAGE
    assert codebuild.list_projects()["projects"] == [ib.PROJECT]


def test_a_failed_build_says_what_failed_and_can_be_tried_again(qapp, qtbot, store, aws):
    failure = "Error while executing command: docker push. Reason: exit status 1"
    service = CodeBuildEdge(aws, ib.BuildProgress("FAILED", "COMPLETED", 300.0, failure))

    async def scenario() -> None:
        page = open_page(qtbot, store, service)
        stt = page.setups["stt"]
        page.account.check_button.click()
        await wait_until(lambda: stt.build_box.isVisible(), 30, "the empty image list")
        stt.build_button.click()
        await wait_until(lambda: page.image_flow.dialog is not None
                         and page.image_flow.dialog.isVisible(), 30, "the build dialog")
        page.image_flow.dialog.build_button.click()
        await wait_until(lambda: stt.build_status.text().startswith("The image build"), 30,
                         "the failure")
        assert stt.build_status.text() == (
            f"The image build ended failed: {failure}. Its log is in CloudWatch "
            f"(CodeBuild project {ib.PROJECT}).")
        assert text_color(ERROR_SHADES, stt) in stt.build_status.styleSheet()
        assert stt.build_button.isEnabled()
        assert stt.image.currentText() == ""
        await page.runner.close()

    run_async(qapp, scenario, timeout=120)


def test_a_build_needs_a_readable_account(qapp, qtbot, store, aws, monkeypatch):
    service = CodeBuildEdge(aws, ib.BuildProgress("SUCCEEDED", "COMPLETED", 1.0))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "")  # no credentials at all
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")

    async def scenario() -> None:
        page = open_page(qtbot, store, service)
        stt = page.setups["stt"]
        stt.build_box.show()
        stt.build_button.click()
        await wait_until(lambda: stt.build_status.text().startswith("Could not build"), 30,
                         "the refusal")
        assert page.image_flow.dialog is None
        assert stt.build_button.isEnabled()
        await page.runner.close()

    run_async(qapp, scenario, timeout=60)


class StillBuilding:
    """CodeBuild with a build started before Captioner was closed: running for two more
    looks, then done."""

    def __init__(self) -> None:
        self.looks = 0

    def list_builds_for_project(self, projectName, sortOrder):
        return {"ids": [f"{ib.PROJECT}:earlier"]}

    def batch_get_builds(self, ids):
        from datetime import UTC, datetime, timedelta
        self.looks += 1
        start = datetime.now(tz=UTC) - timedelta(minutes=12)
        done = self.looks > 2
        return {"builds": [{"id": ids[0], "buildStatus": "SUCCEEDED" if done else "IN_PROGRESS",
                            "currentPhase": "COMPLETED" if done else "BUILD",
                            "startTime": start,
                            **({"endTime": start + timedelta(minutes=25)} if done else {})}]}


def test_reopening_the_page_follows_a_build_still_running(qapp, qtbot, store, aws):
    codebuild = StillBuilding()

    class Clients(TestClients):
        def __call__(self, settings):
            from dataclasses import replace
            return replace(super().__call__(settings), codebuild=codebuild)

    service = AccountSetupService(Clients())

    async def scenario() -> None:
        page = open_page(qtbot, store, service)
        stt = page.setups["stt"]
        page.account.check_button.click()  # nothing else: the page finds the build itself
        await wait_until(lambda: "Building in AWS CodeBuild — build, 0:12:"
                         in stt.build_status.text(), 30, "the running build")
        assert not stt.build_button.isEnabled()
        await wait_until(lambda: stt.build_status.text().startswith("✔"), 30, "its end")
        assert stt.build_status.text() == (f"✔ Built and pushed {IMAGE} in 0:25:00; it is "
                                           "now the image.")
        assert stt.image.currentText() == IMAGE
        await page.runner.close()

    run_async(qapp, scenario, timeout=120)
