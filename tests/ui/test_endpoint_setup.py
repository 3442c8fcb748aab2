"""The Endpoints set-up driven like a newcomer would, on a fresh profile, against a moto
server (IAM, ECR, STS, SageMaker) with Stubbers where moto has no model (Service Quotas,
IAM policy simulation): from no settings to InService to stopped, every step asserted on
what the widgets show."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import boto3
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from captioner import settings as settings_io
from captioner.cloud.manager import Phase
from captioner.cloud.preflight import ORDER
from captioner.ui.endpoints.aws_setup import AccountSetupService
from captioner.ui.endpoints.runner import Runner
from captioner.ui.endpoints_page import EndpointsPage
from tests.ui.conftest import run_async, wait_until
from tests.ui.endpoint_setup_support import (
    ACCOUNT,
    IMAGE,
    NoKeys,
    TestClients,
    make_manager,
    push_image,
)

CHEAP = "ml.g4dn.xlarge"  # moto knows this type; the bundled price is $0.7364/hour


@pytest.fixture
def aws(moto_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)  # botocore sends every call there
    return moto_url


def tick(pool, itype: str, on: bool) -> None:
    for i in range(pool.list.count()):
        item = pool.list.item(i)
        if item.data(Qt.ItemDataRole.UserRole) == itype:
            item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
            return
    raise AssertionError(f"{itype} is not in the pool list")


def texts(setup) -> dict[str, str]:
    """The preflight lines shown, by check id."""
    return {key: label.text() for key, label in setup.preflight.labels.items()}


def test_newcomer_sets_up_starts_and_stops_the_captions_endpoint(qapp, qtbot, store, aws):
    clients = TestClients(quota=None)  # this user may not read Service Quotas
    sm = boto3.client("sagemaker", region_name="us-east-1", endpoint_url=aws)
    iam = boto3.client("iam", region_name="us-east-1", endpoint_url=aws)
    scheduler = boto3.client("scheduler", region_name="us-east-1", endpoint_url=aws)

    async def scenario() -> None:
        service = AccountSetupService(clients)
        manager = make_manager(store, service)
        runner = Runner()
        page = EndpointsPage(manager, store, service, keys=NoKeys(), runner=runner)
        qtbot.addWidget(page)
        page.resize(900, 1400)
        page.load(store.settings)
        page.show()
        stt = page.setups["stt"]
        row = stt.row
        assert row.status_label.text() == "Not running"
        assert stt.preflight.summary.text() == "Not checked yet."

        # Start with nothing set up: the checks run, say what is missing, nothing is made.
        row.start_button.click()
        await wait_until(lambda: stt.preflight.labels, 30, "the preflight list")
        lines = texts(stt)
        assert lines["credentials"] == (f"✔ PASS  AWS credentials: Account {ACCOUNT} as "
                                        "user/moto.")
        assert lines["role"].startswith(
            "✘ FAIL  Execution role: No execution role is chosen. Fix: Choose a role that "
            "SageMaker may assume, or let Captioner create one")
        assert lines["pass-role"] == ("? UNKNOWN  Permission to pass the role: Not checked "
                                      "until the execution role is sorted out.")
        assert "pass-role" not in stt.preflight.overrides  # fixed at the role, not gone past
        assert lines["image"] == (
            "✘ FAIL  Container image: No STT image is chosen. Fix: Choose an image from your "
            "ECR repositories, or press “Build it in my account” under Image (AWS CodeBuild "
            "builds it; nothing to install), or build and push one with Docker: "
            f"container/build_and_push.sh us-east-1 {ACCOUNT}")
        assert stt.preflight.summary.text() == ("Not ready: the execution role check fails. "
                                                "Fix it below, then press Check again.")
        assert page.confirmation is None
        assert sm.list_endpoints()["Endpoints"] == []

        # 1. The account, checked live.
        page.account.check_button.click()
        await wait_until(lambda: page.account.result.text().startswith("✔"), 30, "identity")
        assert page.account.result.text() == f"✔ Account {ACCOUNT} — user/moto"
        await wait_until(lambda: stt.build_box.isVisible()
                         and not stt.role_note.text().startswith("Looking"), 30, "the lists")
        assert stt.role_note.text() == ("No role in this account trusts SageMaker yet: "
                                        "press Create role.")
        command = f"container/build_and_push.sh us-east-1 {ACCOUNT}"
        assert stt.build_command.text() == command
        stt.copy_button.click()
        assert QGuiApplication.clipboard().text() == command

        # 2. The image, once pushed, is in the list.
        push_image(aws)
        stt.refresh_button.click()
        await wait_until(lambda: not stt.build_box.isVisible(), 30, "the image list")
        assert stt.image.itemText(0) == IMAGE
        stt.image.setCurrentText(IMAGE)

        # 3. The role: its exact policies are shown before it is created.
        stt.create_role_button.click()
        await wait_until(lambda: page.role_dialog is not None
                         and page.role_dialog.isVisible(), 30, "the role dialog")
        dialog = page.role_dialog
        trust = json.loads(dialog.trust_view.toPlainText())
        permissions = json.loads(dialog.permission_view.toPlainText())
        assert trust["Statement"][0]["Principal"] == {"Service": "sagemaker.amazonaws.com"}
        pull = next(s for s in permissions["Statement"] if s["Sid"] == "PullImage")
        assert pull["Resource"] == f"arn:aws:ecr:us-east-1:{ACCOUNT}:repository/{REPO_NAME}"
        assert iam.list_roles()["Roles"] == []  # nothing before the user agrees
        assert dialog.cancel_button.isDefault()
        dialog.create_button.click()
        await wait_until(lambda: stt.role_note.text().startswith("✔ Created"), 30, "role")
        (role,) = iam.list_roles()["Roles"]
        assert stt.role.currentText() == role["Arn"]
        assert role["RoleName"] == "captioner-endpoint-stt"
        policy = iam.get_role_policy(RoleName=role["RoleName"],
                                     PolicyName="captioner-endpoint")["PolicyDocument"]
        assert policy == permissions  # exactly what was shown

        # 4. The pool: a type this account can run (moto knows g4dn), with its price.
        tick(stt.pool, "ml.g6.4xlarge", False)
        tick(stt.pool, CHEAP, True)
        assert f"{CHEAP} — $0.74/hour" in [stt.pool.list.item(i).text()
                                           for i in range(stt.pool.list.count())]

        # 5. Preflight: everything passes but the quota, which cannot be read here.
        stt.check_button.click()
        await wait_until(lambda: stt.check_button.isEnabled()
                         and stt.preflight.preflight is not None, 30, "the checks")
        lines = texts(stt)
        assert list(lines) == [c.value for c in ORDER]  # every check, in its order
        assert [lines[k] for k in ("role", "pass-role", "image", "model", "quota", "price")] == [
            "✔ PASS  Execution role: Role captioner-endpoint-stt exists and SageMaker may "
            "assume it.",
            "✔ PASS  Permission to pass the role: user/moto may pass captioner-endpoint-stt "
            "to SageMaker.",
            f"✔ PASS  Container image: {REPO_NAME}:latest exists, pushed "
            f"{datetime.now(UTC):%Y-%m-%d}.",
            "✔ PASS  Model source: Hugging Face model mistralai/Voxtral-Mini-4B-Realtime-2602; "
            "the endpoint downloads it when it starts.",
            "? UNKNOWN  Endpoint quota: These credentials may not read Service Quotas "
            "(servicequotas:ListServiceQuotas). Fix: Ask for servicequotas:ListServiceQuotas, "
            "or override this check if you know it is fine.",
            "✔ PASS  Price per hour: about $0.74/hour, billed until stopped."]
        assert stt.preflight.summary.text().startswith(
            "Not ready: the endpoint quota check could not be read.")
        override = stt.preflight.overrides["quota"]
        assert override.text().startswith("Go past the endpoint quota check: I know it is fine")
        assert override.accessibleDescription().startswith(
            "These credentials may not read Service Quotas")
        override.click()
        assert stt.preflight.summary.text() == ("All checks pass: the captions endpoint can "
                                                "be started.")
        assert store.settings.cloud.stt.accepted_unknown == ["quota"]

        # 6. Start: checks again, then the cost, then the deploy, every stage shown.
        row.start_button.click()
        await wait_until(lambda: page.confirmation is not None
                         and page.confirmation.isVisible(), 30, "the cost confirmation")
        assert "Estimated cost: about $0.74/hour" in page.confirmation.text()
        assert ("Maximum lifetime: AWS deletes it at " in page.confirmation.informativeText()
                and "(8 h after creation;" in page.confirmation.informativeText())
        assert sm.list_endpoints()["Endpoints"] == []
        page.confirmation.deploy_button.click()
        await wait_until(lambda: manager.status("stt").phase is Phase.READY, 60, "InService")
        name = manager.status("stt").name
        assert row.status_label.text() == f"InService — {name}"
        assert row.instance_label.text() == f"1× {CHEAP}"
        assert row.progress_text() == "InService"
        assert [e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]] == [name]
        assert manager.endpoint == f"sagemaker://{name}?region=us-east-1"
        # the server-side backstop exists while it runs
        assert [s["Name"] for s in scheduler.list_schedules()["Schedules"]] == [name]

        # 7. Stop.
        row.stop_button.click()
        await wait_until(lambda: manager.status("stt").phase is Phase.OFF, 60, "stopped")
        assert row.status_label.text() == "Not running"
        assert sm.list_endpoints()["Endpoints"] == []
        assert scheduler.list_schedules()["Schedules"] == []
        await manager.close()
        await runner.close()

    run_async(qapp, scenario, timeout=240)
    saved = settings_io.load()  # the fresh profile now holds the plan, no secret
    assert saved.cloud.stt.image_uri == IMAGE
    assert saved.cloud.stt.role_arn.endswith(":role/captioner-endpoint-stt")
    assert saved.cloud.stt.instance_types == [CHEAP]
    assert saved.cloud.stt.accepted_unknown == ["quota"]
    # iam:PassRole was asked at the check and at Start, whose result the manager's deploy
    # gate holds to its rule instead of asking every check again
    assert clients.simulations == 2


REPO_NAME = "captioner-stt"


def test_access_keys_go_to_the_keyring_and_the_account_check_uses_them(
        qapp, qtbot, store, aws, memory_keyring, monkeypatch):
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)  # nothing but the typed keys can sign

    async def scenario() -> None:
        service = AccountSetupService(TestClients())
        runner = Runner()
        page = EndpointsPage(make_manager(store, service), store, service, runner=runner)
        qtbot.addWidget(page)
        page.load(store.settings)
        account = page.account
        account.use_keys.click()
        assert account.key_id.isEnabled() and not account.profile.isEnabled()
        account.check_button.click()  # no keys typed, none stored: said, nothing sent
        assert account.error.text() == "Enter the access key ID and the secret access key."
        assert account.result.text() == ("✘ Enter the access key ID and the secret access "
                                         "key.")
        account.key_id.setText("AKIAIOSFODNN7EXAMPLE")
        account.secret.setText(secret)
        account.check_button.click()
        await wait_until(lambda: account.result.text().startswith("✔"), 30, "identity")
        assert account.result.text() == f"✔ Account {ACCOUNT} — user/moto"
        assert account.key_id.text() == "" and account.secret.text() == ""
        assert account.keys_note.text() == "Keys are stored in the OS keyring."
        await runner.close()

    run_async(qapp, scenario)
    (stored,) = memory_keyring.store.values()
    assert json.loads(stored)["secret_access_key"] == secret
    assert store.settings.aws.use_keyring and store.settings.aws.profile is None
    text = settings_io.settings_path().read_text(encoding="utf-8")
    assert secret not in text and "AKIAIOSFODNN7EXAMPLE" not in text


def test_access_keys_typed_then_start_are_stored_and_used(qapp, qtbot, store, aws,
                                                          memory_keyring, monkeypatch):
    """No "Check account" first: Start saves the page, typed keys included."""
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)  # nothing but the typed keys can sign

    async def scenario() -> None:
        service = AccountSetupService(TestClients())
        runner = Runner()
        page = EndpointsPage(make_manager(store, service), store, service, runner=runner)
        qtbot.addWidget(page)
        page.load(store.settings)
        account, stt = page.account, page.setups["stt"]
        account.use_keys.click()
        account.key_id.setText("AKIAIOSFODNN7EXAMPLE")
        account.secret.setText(secret)
        stt.row.start_button.click()
        await wait_until(lambda: stt.preflight.labels, 30, "the preflight list")
        assert texts(stt)["credentials"] == (f"✔ PASS  AWS credentials: Account {ACCOUNT} as "
                                             "user/moto.")
        assert account.key_id.text() == "" and account.secret.text() == ""
        await runner.close()

    run_async(qapp, scenario, timeout=60)
    (stored,) = memory_keyring.store.values()
    assert json.loads(stored)["secret_access_key"] == secret
    assert store.settings.aws.use_keyring
    text = settings_io.settings_path().read_text(encoding="utf-8")
    assert secret not in text and "AKIAIOSFODNN7EXAMPLE" not in text


def test_start_says_when_the_keyring_refuses_the_keys_and_saves_nothing(qapp, qtbot, store,
                                                                        aws, no_keyring):
    async def scenario() -> None:
        service = AccountSetupService(TestClients())
        runner = Runner()
        page = EndpointsPage(make_manager(store, service), store, service, runner=runner)
        qtbot.addWidget(page)
        page.load(store.settings)
        account, stt = page.account, page.setups["stt"]
        account.use_keys.click()
        account.key_id.setText("AKIAIOSFODNN7EXAMPLE")
        account.secret.setText("wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY")
        account.region.setCurrentText("eu-west-1")
        stt.row.start_button.click()
        refusal = "This desktop has no keyring service to keep AWS keys in"
        assert stt.preflight.summary.text().startswith(f"Fix the set-up first: {refusal}")
        assert account.error.text().startswith(refusal)
        assert stt.row.start_button.isEnabled()
        # the saved settings are as they were; the typed keys wait for another try
        assert not store.settings.aws.use_keyring and store.settings.aws.region == "us-east-1"
        assert account.key_id.text() == "AKIAIOSFODNN7EXAMPLE"
        await runner.close()

    run_async(qapp, scenario)
