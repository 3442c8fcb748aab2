"""The Endpoints page and the tray's endpoint actions, on a real EndpointManager whose
control plane is a scripted fake at the AWS edge (each describe answer is handed over
by the test, so every stage can be looked at)."""

from __future__ import annotations

import queue
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QCheckBox,
    QComboBox,
    QLabel,
    QLineEdit,
    QListWidget,
    QMenu,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QRadioButton,
)

from captioner.cloud.deploy_plan import DeployPlan, Kind, plan_deploy
from captioner.cloud.endpoints import CostEstimate, ManagedEndpoint, StopReport
from captioner.cloud.errors import AccessDeniedError
from captioner.cloud.manager import EndpointManager, Phase
from captioner.cloud.ownership import Ownership
from captioner.cloud.preflight import ORDER, Check, Preflight, Status
from captioner.cloud.preflight.report import CheckId
from captioner.cloud.status import EndpointSnapshot, Stage
from captioner.settings import EndpointDeploySettings, Settings, ShortcutSettings
from captioner.ui.actions import AppActions
from captioner.ui.endpoint_tray import EndpointTray
from captioner.ui.endpoints_page import EndpointsPage
from captioner.ui.settings_store import SettingsStore
from captioner.ui.tray import Tray
from tests.ui.conftest import run_async, wait_until
from tests.ui.endpoint_setup_support import NoKeys

T0 = datetime(2026, 11, 29, 10, 15, 0, tzinfo=UTC)
NAME = "captioner-stt-20261129-101500"
ROLE = "arn:aws:iam::123456789012:role/CaptionerSageMaker"
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/captioner-stt:1"
SETTINGS = EndpointDeploySettings(image_uri=IMAGE, instance_types=["ml.g6.4xlarge"],
                                  role_arn=ROLE)
ACCESS_DENIED = ("AWS denied access (create_model): User: arn:aws:iam::123456789012:user/ana "
                 "is not authorized to perform: sagemaker:CreateModel. "
                 "Check the IAM policy of these credentials.")


class ScriptedControl:
    """EndpointControl's surface; describe answers come from ``answers`` (test-fed)."""

    region = "us-east-1"

    def __init__(self) -> None:
        self.answers: queue.Queue[EndpointSnapshot] = queue.Queue()
        self.deployed: list[str] = []
        self.stopped: list[str] = []
        self.deploy_error: Exception | None = None
        self.managed: list[ManagedEndpoint] = []

    def plan(self, kind: Kind, settings: EndpointDeploySettings) -> DeployPlan:
        return plan_deploy(kind, settings, self.region, now=T0)

    def estimate(self, plan: DeployPlan) -> CostEstimate:
        return CostEstimate(low=1.6, high=1.6, currency="USD", exact=True)

    def deploy(self, plan: DeployPlan, *, on_step: Any = None) -> str:
        if on_step:
            on_step(f"creating model {plan.name}")
        if self.deploy_error is not None:
            raise self.deploy_error
        self.deployed.append(plan.name)
        return plan.name

    def snapshot(self, name: str) -> EndpointSnapshot:
        return self.answers.get(timeout=10)

    def stop(self, name: str, *, on_snapshot: Any = None, poll_interval: float = 0) -> StopReport:
        self.stopped.append(name)
        return StopReport(name, deleted=[f"endpoint {name}"])

    def find_managed_endpoints(self, kind: Kind | None = None) -> list[ManagedEndpoint]:
        return list(self.managed)

    def backstop_expires_at(self, name: str) -> None:
        return None  # this fake has no server-side backstop

    def renew_backstop(self, name: str, lifetime: Any) -> None:
        return None

    def clean_leftovers(self) -> list[str]:
        return []


class PassingService:
    """The account side of the set-up, answering that every check passes (AWS edge)."""

    def profiles(self) -> list[str]:
        return []

    def preflight(self, settings: Any, kind: Kind) -> Preflight:
        return Preflight(kind, "us-east-1",
                         tuple(Check(check_id, Status.PASS, "Fine.") for check_id in ORDER))

    def instance_types(self, kind: Kind, region: str) -> list[str]:
        return ["ml.g6.4xlarge", "ml.g6.xlarge"]

    def hourly_price(self, instance_type: str, region: str) -> float | None:
        return 1.6


def page_for(manager: EndpointManager) -> EndpointsPage:
    store = SettingsStore(Settings())
    store.settings.cloud.stt = SETTINGS
    page = EndpointsPage(manager, store, PassingService(), keys=NoKeys())  # type: ignore[arg-type]
    page.load(store.settings)
    return page


def snap(stage: Stage, **extra: Any) -> EndpointSnapshot:
    return EndpointSnapshot(name=NAME, stage=stage, status=stage.value,
                            observed_at=T0, kind="stt", created_at=T0,
                            candidate_types=("ml.g6.4xlarge",), hourly_price=1.6, **extra)


def make(clock: list[float] | None = None) -> tuple[ScriptedControl, EndpointManager]:
    control = ScriptedControl()
    ticks = clock if clock is not None else [0.0]
    manager = EndpointManager(
        lambda: control, lambda kind: SETTINGS,  # type: ignore[arg-type,return-value]
        poll_interval=0, monitor_interval=3600, tick_interval=None,
        clock=lambda: ticks[0], now=lambda: T0 + timedelta(minutes=6, seconds=5))
    return control, manager


def test_start_confirms_cost_then_shows_progress_and_running_row(qapp, qtbot) -> None:
    control, manager = make()
    page = page_for(manager)
    qtbot.addWidget(page)
    row = page.rows["stt"]
    assert row.status_label.text() == "Not running"
    assert row.start_button.isEnabled() and not row.stop_button.isEnabled()

    async def scenario() -> None:
        row.start_button.click()
        await wait_until(lambda: page.confirmation is not None
                         and page.confirmation.isVisible(), what="the cost confirmation")
        dialog = page.confirmation
        assert "Estimated cost: about $1.60/hour" in dialog.text()
        assert NAME in dialog.text()
        assert control.deployed == []  # nothing is created before the user agrees
        dialog.deploy_button.click()

        await wait_until(lambda: control.deployed == [NAME], what="deploy")
        control.answers.put(snap(Stage.CREATING))
        await wait_until(lambda: row.progress_text().startswith("Creating — "),
                         what="creating stage")
        assert row.progress_text() == "Creating — 0:06:05"
        assert row.progress.maximum() == 0  # busy indicator
        assert row.status_label.text() == f"Creating — {NAME}"
        assert row.instance_label.text() == "pool ml.g6.4xlarge (waiting for capacity)"
        assert not row.start_button.isEnabled() and row.stop_button.isEnabled()

        control.answers.put(snap(Stage.IN_SERVICE, instance_type="ml.g6.4xlarge",
                                 instance_count=1))
        await wait_until(lambda: manager.status("stt").phase is Phase.READY, what="ready")
        assert row.progress_text() == "InService"
        assert row.progress.maximum() == 1 and row.progress.value() == 1
        assert row.status_label.text() == f"InService — {NAME}"
        assert row.instance_label.text() == "1× ml.g6.4xlarge"
        assert row.uptime_label.text() == "0:06:05"
        assert row.cost_label.text() == "$0.16 so far ($1.60/hour)"
        assert manager.endpoint == f"sagemaker://{NAME}?region=us-east-1"

        row.stop_button.click()
        await wait_until(lambda: manager.status("stt").phase is Phase.OFF, what="stopped")
        assert control.stopped == [NAME]
        assert row.status_label.text() == "Not running"
        assert row.cost_label.text() == "—"
        assert row.start_button.isEnabled() and not row.stop_button.isEnabled()
        assert manager.endpoint is None
        await manager.close()

    run_async(qapp, scenario)


def test_keyboard_start_and_escape_creates_nothing(qapp, qtbot) -> None:
    control, manager = make()
    page = page_for(manager)
    qtbot.addWidget(page)
    page.show()
    row = page.rows["stt"]

    async def scenario() -> None:
        row.start_button.setFocus()
        QTest.keyClick(row.start_button, Qt.Key.Key_Space)
        # the focus stays by the checks (a disabled Start would hand it to a field far below)
        assert page.focusWidget() is page.setups["stt"].check_button
        await wait_until(lambda: page.confirmation is not None
                         and page.confirmation.isVisible(), what="the cost confirmation")
        assert page.confirmation.defaultButton() is page.confirmation.cancel_button
        QTest.keyClick(page.confirmation, Qt.Key.Key_Escape)
        await wait_until(lambda: not page.confirmation.isVisible(), what="dialog closed")
        await wait_until(lambda: row.start_button.isEnabled(), what="start enabled again")
        assert control.deployed == []
        assert manager.status("stt").phase is Phase.OFF
        await manager.close()

    run_async(qapp, scenario)


def test_aws_error_is_shown_verbatim_and_start_stays_available(qapp, qtbot) -> None:
    control, manager = make()
    control.deploy_error = AccessDeniedError(ACCESS_DENIED, code="AccessDeniedException")
    page = page_for(manager)
    qtbot.addWidget(page)
    page.show()
    row = page.rows["stt"]

    async def scenario() -> None:
        row.start_button.click()
        await wait_until(lambda: page.confirmation is not None, what="confirmation")
        page.confirmation.deploy_button.click()
        await wait_until(lambda: manager.status("stt").phase is Phase.ERROR, what="error")
        await manager.close()

    run_async(qapp, scenario)
    assert row.error_label.text() == ACCESS_DENIED
    assert row.error_label.isVisible()
    assert row.error_label.accessibleDescription() == ACCESS_DENIED
    assert row.progress_text() == "Error"
    assert row.start_button.isEnabled() and not row.stop_button.isEnabled()
    assert control.deployed == []


def test_idle_warning_banner_and_keep_running(qapp, qtbot) -> None:
    clock = [0.0]
    control, manager = make(clock)
    control.managed = [ManagedEndpoint(NAME, f"arn:{NAME}", "InService", "stt", T0)]
    control.answers.put(snap(Stage.IN_SERVICE, instance_type="ml.g6.4xlarge"))
    page = page_for(manager)
    qtbot.addWidget(page)
    page.show()

    async def scenario() -> None:
        assert await manager.attach() == []  # re-attached to the running endpoint
        assert page.rows["stt"].status_label.text() == f"InService — {NAME}"
        clock[0] += 29 * 60 + 15
        manager.tick()
        assert page.idle_box.isVisible()
        assert page.idle_label.text() == ("No activity: the captions endpoint stops in 45 s "
                                          "to save cost.")
        page.keep_button.click()
        assert not page.idle_box.isVisible()
        assert manager.idle_seconds_left("stt") == 30 * 60
        await manager.close()

    run_async(qapp, scenario)


def test_every_control_has_an_accessible_name(qapp, qtbot) -> None:
    _, manager = make()
    page = page_for(manager)
    qtbot.addWidget(page)
    kinds = (QPushButton, QProgressBar, QComboBox, QLineEdit, QAbstractSpinBox, QCheckBox,
             QRadioButton, QListWidget, QPlainTextEdit)
    controls = [w for kind in kinds for w in page.findChildren(kind)
                if not isinstance(w.parent(), QComboBox | QAbstractSpinBox)]  # their insides
    assert len(controls) > 30
    unnamed = [f"{type(w).__name__} {getattr(w, 'text', lambda: '')()}" for w in controls
               if not w.accessibleName()]
    assert unnamed == []
    labels = [label for row in page.rows.values() for label in row.findChildren(QLabel)
              if label.accessibleName()]
    assert len(labels) >= 8
    names = {w.accessibleName() for w in page.findChildren(QPushButton)}
    assert {"Start captions endpoint", "Stop captions endpoint", "Start replies endpoint",
            "Stop replies endpoint", "Check the AWS account",
            "Create an execution role for the captions endpoint",
            "Check the captions endpoint set-up", "Copy the build command"} <= names


def test_tray_actions_and_tooltip_line(qapp, qtbot, request) -> None:
    # A tray app (as CaptionerApp sets it up): closing the confirmation must not quit.
    previous = qapp.quitOnLastWindowClosed()
    qapp.setQuitOnLastWindowClosed(False)
    request.addfinalizer(lambda: qapp.setQuitOnLastWindowClosed(previous))
    control, manager = make()
    tray = Tray(AppActions(ShortcutSettings()), available=False)
    menu = QMenu()
    endpoint_tray = EndpointTray(manager, menu, tray=tray)
    texts = [a.text() for a in menu.actions()]
    assert "Start captions endpoint…" in texts and "Stop captions endpoint" in texts
    assert endpoint_tray.start_action.isEnabled() and not endpoint_tray.stop_action.isEnabled()
    assert tray.tooltip() == "Captioner — idle"

    async def scenario() -> None:
        endpoint_tray.start_action.trigger()
        await wait_until(lambda: endpoint_tray.flow.dialog is not None, what="confirmation")
        assert "about $1.60/hour" in endpoint_tray.flow.dialog.text()
        control.answers.put(snap(Stage.IN_SERVICE, instance_type="ml.g6.4xlarge"))
        endpoint_tray.flow.dialog.deploy_button.click()
        await wait_until(lambda: manager.status("stt").phase is Phase.READY, what="ready")
        assert tray.tooltip() == ("Captioner — idle\n"
                                  "Captions endpoint: InService — $0.16 so far")
        assert tray.badge == "$"
        assert endpoint_tray.stop_action.isEnabled()
        assert not endpoint_tray.start_action.isEnabled()
        endpoint_tray.stop_action.trigger()
        await wait_until(lambda: manager.status("stt").phase is Phase.OFF, what="stopped")
        assert control.stopped == [NAME]
        await manager.close()

    run_async(qapp, scenario)
    assert tray.tooltip() == "Captioner — idle"
    assert tray.badge is None
    assert endpoint_tray.tooltip_line == ""


def test_results_go_stale_when_what_they_checked_changes(qapp, qtbot) -> None:
    _, manager = make()
    page = page_for(manager)
    qtbot.addWidget(page)
    stt = page.setups["stt"]

    async def check() -> None:
        stt.check_button.click()
        await wait_until(lambda: len(stt.preflight.labels) == len(ORDER), what="checks")
        assert stt.preflight.summary.text() == ("All checks pass: the captions endpoint can "
                                                "be started.")

    def stale() -> bool:
        return stt.preflight.labels == {} and stt.preflight.summary.text() == (
            "The set-up changed since the last check: press Check set-up.")

    async def scenario() -> None:
        await check()
        assert page.commit() is None  # nothing changed: the results stand
        assert len(stt.preflight.labels) == len(ORDER)
        stt.model.setText("s3://my-models/voxtral/")  # an edit makes them stale at once
        assert stale()
        assert page.commit() is None
        assert page.store.settings.cloud.stt.model_source == "s3://my-models/voxtral/"
        await check()
        stt.pool.list.item(1).setCheckState(Qt.CheckState.Checked)  # a pool tick too
        assert stale()
        await check()
        page.account.region.setCurrentText("eu-west-1")  # the account: stale once saved
        assert page.commit() is None
        assert stale()
        await manager.close()

    run_async(qapp, scenario)


def test_wheel_over_a_spin_box_scrolls_the_page_instead(qapp, qtbot) -> None:
    _, manager = make()
    page = page_for(manager)
    qtbot.addWidget(page)
    page.resize(700, 400)
    page.show()
    qtbot.waitExposed(page)
    bar = page.scroll.verticalScrollBar()
    page.scroll.ensureWidgetVisible(page.idle_minutes)
    before_value, before_scroll = page.idle_minutes.value(), bar.value()
    assert not page.idle_minutes.hasFocus()
    center = page.idle_minutes.rect().center()
    wheel = QWheelEvent(QPointF(center), QPointF(page.idle_minutes.mapToGlobal(center)),
                        QPoint(0, 0), QPoint(0, 120), Qt.MouseButton.NoButton,
                        Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(page.idle_minutes, wheel)
    assert page.idle_minutes.value() == before_value
    assert bar.value() < before_scroll  # the wheel went to the page


def test_other_peoples_endpoints_are_listed_and_left_alone(qapp, qtbot) -> None:
    control, manager = make()
    theirs = "captioner-tts-20261129-090000"
    control.managed = [ManagedEndpoint(theirs, f"arn:{theirs}", "InService", "tts", T0,
                                       ownership=Ownership.FOREIGN)]
    page = page_for(manager)
    qtbot.addWidget(page)
    page.show()
    assert page.others_label.isHidden()

    async def scenario() -> None:
        assert await manager.attach() == []
        await manager.close()

    run_async(qapp, scenario)
    assert page.others_label.isVisible()
    assert page.others_label.text() == (
        "Also in this account, started by other people's Captioner (this app leaves them "
        f"alone): {theirs} (InService, another installation).")
    assert manager.status("tts").name is None  # not adopted
    assert control.stopped == []


class QuotaOnTheSecondType(PassingService):
    """No quota for the pool's first type; the check suggests putting the second first."""

    def preflight(self, settings: Any, kind: Kind) -> Preflight:
        first = getattr(settings.cloud, kind).instance_types[0]
        return Preflight(kind, "us-east-1", tuple(
            Check(check_id, Status.FAIL, f"No quota for {first}.", "Use ml.g6.xlarge",
                  move_first="ml.g6.xlarge")
            if check_id is CheckId.QUOTA and first != "ml.g6.xlarge"
            else Check(check_id, Status.PASS, "Fine.") for check_id in ORDER))


def test_prioritizing_a_type_from_the_keyboard_keeps_the_focus_by_the_checks(
        qapp, qtbot) -> None:
    _control, manager = make()
    store = SettingsStore(Settings())
    store.settings.cloud.stt = replace(SETTINGS, instance_types=["ml.g6.4xlarge",
                                                                 "ml.g6.xlarge"])
    service: Any = QuotaOnTheSecondType()
    page = EndpointsPage(manager, store, service, keys=NoKeys())
    page.load(store.settings)
    qtbot.addWidget(page)
    page.show()
    stt = page.setups["stt"]

    async def scenario() -> None:
        page.check("stt")
        await wait_until(lambda: stt.preflight.first_button is not None, what="the check")
        stt.preflight.first_button.setFocus()
        QTest.keyClick(stt.preflight.first_button, Qt.Key.Key_Space)  # the button is deleted
        await wait_until(lambda: "quota" in stt.preflight.labels
                         and "PASS" in stt.preflight.labels["quota"].text(), what="the recheck")
        assert page.focusWidget() is stt.check_button  # not lost: Tab goes on from here
        QTest.keyClick(stt.check_button, Qt.Key.Key_Tab)
        assert stt.isAncestorOf(page.focusWidget())
        await page.runner.close()
        await manager.close()

    run_async(qapp, scenario)
