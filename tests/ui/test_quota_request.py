"""A fresh account has no quota for the GPU type: the newcomer asks AWS for more from the
Endpoints page, and the check then says the request is open. IAM, ECR and STS are a moto
server; Service Quotas is a Stubber (moto has no model of it), answering like AWS."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractButton, QApplication, QMessageBox

from captioner.ui.endpoints.aws_setup import AccountSetupService
from tests.ui.conftest import run_async, wait_until
from tests.ui.endpoint_setup_support import TestClients, _offline, open_page, push_image

TYPE = "ml.g4dn.xlarge"
HISTORY = "list_requested_service_quota_change_history_by_quota"


@pytest.fixture
def aws(moto_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    return moto_url


class NoQuota(TestClients):
    """Service Quotas of a fresh account: 0 of ``TYPE``; a request, once made, is open."""

    def __init__(self) -> None:
        super().__init__(quota=0, quota_type=TYPE)
        self.requests: list[dict[str, Any]] = []

    def _quotas(self) -> Any:
        from botocore.stub import Stubber
        client = _offline("service-quotas")
        client.meta.events.register(
            "provide-client-params.service-quotas.RequestServiceQuotaIncrease",
            lambda params, **_: self.requests.append(dict(params)))
        stub = Stubber(client)
        stub.add_response("list_service_quotas", {"Quotas": [
            {"QuotaName": f"{TYPE} for endpoint usage", "QuotaCode": "L-0001", "Value": 0.0}]})
        opened = [{"DesiredValue": 1.0, "Status": "CASE_OPENED",
                   "Created": datetime(2026, 12, 6, 3, 0, tzinfo=UTC)}] if self.requests else []
        stub.add_response(HISTORY, {"RequestedQuotas": opened})
        stub.add_response("request_service_quota_increase", {"RequestedQuota": {
            "DesiredValue": 1.0, "Status": "PENDING"}})
        stub.activate()
        return client


def with_image(store, aws: str, pool: list[str]) -> None:
    new = store.copy()
    new.cloud.stt.image_uri = push_image(aws)
    new.cloud.stt.instance_types = pool
    store.replace(new)


async def checked(qtbot, store, service):
    """The page after Check set-up, and its captions set-up."""
    page = open_page(qtbot, store, service)
    stt = page.setups["stt"]
    stt.check_button.click()
    await wait_until(lambda: "quota" in stt.preflight.labels, 30, "the checks")
    return page, stt


def test_a_newcomer_asks_aws_for_quota_from_the_page(qapp, qtbot, store, aws):
    clients = NoQuota()
    service = AccountSetupService(clients)
    with_image(store, aws, [TYPE])

    async def scenario() -> None:
        page, stt = await checked(qtbot, store, service)
        line = stt.preflight.labels["quota"].text()
        assert line.startswith(f"✘ FAIL  Endpoint quota: The quota “{TYPE} for endpoint "
                               "usage” is 0")
        button = stt.preflight.quota_button
        assert button is not None and button.isVisible()

        button.click()  # the question first; Cancel asks nothing
        await wait_until(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox),
                         10, "the question")
        box = QApplication.activeModalWidget()
        assert "to 1?" in box.text() and "free" in box.text()
        box.defaultButton().click()
        await wait_until(lambda: not box.isVisible(), 10, "the box to close")
        assert clients.requests == []

        stt.preflight.quota_button.click()
        await wait_until(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox),
                         10, "the question again")
        box = QApplication.activeModalWidget()
        next(b for b in box.buttons() if b.text() == "&Ask AWS").click()
        def quota_line() -> str:
            label = stt.preflight.labels.get("quota")
            return label.text() if label is not None else ""

        await wait_until(lambda: "was asked for" in quota_line(), 30, "the check again")
        assert quota_line().endswith("Fix: Wait for AWS's answer (by email, often within a "
                                     "day), then press Check set-up; or put a type with quota "
                                     "first in the pool.")
        assert "An increase to 1 was asked for on 2026-12-06 (case opened)." in quota_line()
        assert stt.preflight.quota_button is None  # nothing more to ask while it is open
        await page.runner.close()

    run_async(qapp, scenario, timeout=120)
    assert clients.requests == [{"ServiceCode": "sagemaker", "QuotaCode": "L-0001",
                                 "DesiredValue": 1.0}]


class QuotaForTheSecondType(TestClients):
    """Quota for the pool's second type only (a fresh account asked for it earlier)."""

    def _quotas(self) -> Any:
        from botocore.stub import Stubber
        client = _offline("service-quotas")
        stub = Stubber(client)
        stub.add_response("list_service_quotas", {"Quotas": [
            {"QuotaName": f"{t} for endpoint usage", "QuotaCode": code, "Value": value}
            for t, code, value in (("ml.g6.xlarge", "L-0002", 0.0), (TYPE, "L-0001", 1.0))]})
        stub.add_response(HISTORY, {"RequestedQuotas": []})
        stub.activate()
        return client


def test_a_pool_type_with_quota_is_put_first_in_one_click(qapp, qtbot, store, aws):
    service = AccountSetupService(QuotaForTheSecondType())
    with_image(store, aws, ["ml.g6.xlarge", TYPE])

    async def scenario() -> None:
        page, stt = await checked(qtbot, store, service)
        assert f"Quota for 1 is there for {TYPE} in the pool." in (
            stt.preflight.labels["quota"].text())
        button = stt.preflight.first_button
        assert button is not None and button.text() == (f"Prioriti&ze {TYPE} in the pool "
                                                        "(it has the quota)")
        clashes = [w.text() for w in page.findChildren(QAbstractButton)
                   if w.isVisible() and w is not button and "&z" in w.text().lower()]
        assert clashes == []  # Alt+Z reaches it alone
        page.activateWindow()
        button.setFocus()
        QTest.keyClick(page, Qt.Key.Key_Z, Qt.KeyboardModifier.AltModifier)
        await wait_until(lambda: stt.preflight.labels.get("quota") is not None
                         and "PASS" in stt.preflight.labels["quota"].text(), 30,
                         "the check again")
        assert stt.preflight.first_button is None
        assert stt.pool.chosen() == [TYPE, "ml.g6.xlarge"]
        await page.runner.close()

    run_async(qapp, scenario, timeout=120)
    assert store.settings.cloud.stt.instance_types == [TYPE, "ml.g6.xlarge"]


class FewerAskedFor(TestClients):
    """A quota of 1 for ``TYPE``, and a request for 2 that AWS has not answered yet."""

    def _quotas(self) -> Any:
        from botocore.stub import Stubber
        client = _offline("service-quotas")
        stub = Stubber(client)
        stub.add_response("list_service_quotas", {"Quotas": [
            {"QuotaName": f"{TYPE} for endpoint usage", "QuotaCode": "L-0001", "Value": 1.0}]})
        stub.add_response(HISTORY, {"RequestedQuotas": [{"DesiredValue": 2.0,
                                                         "Status": "PENDING"}]})
        stub.activate()
        return client


def test_an_open_request_for_fewer_instances_says_how_to_deploy_with_them(
        qapp, qtbot, store, aws):
    service = AccountSetupService(FewerAskedFor())
    with_image(store, aws, [TYPE])

    async def scenario() -> None:
        page = open_page(qtbot, store, service)
        stt = page.setups["stt"]
        stt.autoscale.click()  # autoscale between 1 and 3, as a user sets it
        stt.scale_max.setValue(3)

        def quota_line() -> str:
            label = stt.preflight.labels.get("quota")
            return label.text() if label is not None else ""

        stt.check_button.click()
        await wait_until(lambda: "fewer" in quota_line(), 30, "the checks")
        assert "the deploy needs 3. An increase to 2 was asked for (pending)" in quota_line()
        assert "Fix: Set Scaling (above) to at most 2 instances" in quota_line()
        assert stt.preflight.quota_button is None  # AWS would refuse a second request

        stt.scale_max.setValue(2)  # the fix: then the open request is what it waits for
        stt.check_button.click()
        await wait_until(lambda: "Wait for AWS's answer" in quota_line(), 30, "the check again")
        assert "fewer" not in quota_line()
        await page.runner.close()

    run_async(qapp, scenario, timeout=120)
    assert store.settings.cloud.stt.autoscale_max == 2
