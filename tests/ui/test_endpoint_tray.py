"""One click in the tray, against a moto server: unconfigured → Settings opens at the
Endpoints set-up on the failing check; configured → cost, deploy and stop, with the
progress in the tray tooltip and on the overlay's status strip."""

from __future__ import annotations

import boto3
import pytest

from captioner.audio.files import FileSource
from captioner.cloud.manager import Phase
from captioner.ui.app import CaptionerApp
from captioner.ui.endpoint_tray import tooltip_key
from captioner.ui.endpoints.aws_setup import AccountSetupService
from captioner.ui.endpoints_page import EndpointsPage
from tests.ui.conftest import run_async, wait_until
from tests.ui.endpoint_setup_support import TestClients, make_manager, push_image
from tests.ui.test_endpoint_setup import CHEAP

ROLE_MISSING = ("FAIL  Execution role: No execution role is chosen. Fix: Choose a role that "
                "SageMaker may assume, or let Captioner create one (Settings → Endpoints; "
                "--role-arn on the command line).")


@pytest.fixture
def aws(moto_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    return moto_url


def make_app(store, tone_wav, clients: TestClients) -> CaptionerApp:
    service = AccountSetupService(clients)
    return CaptionerApp(store, tray_available=False, endpoints=make_manager(store, service),
                        endpoint_setup=service,
                        source_factory=lambda a: FileSource(tone_wav, chunk_bytes=2048,
                                                            realtime=True))


def test_endpoint_items_sit_above_quit_in_every_menu(qapp, store, tone_wav, aws, tray_app_settings):
    async def scenario() -> None:
        app = make_app(store, tone_wav, TestClients())
        # the tray's menu and, as this desktop has no tray, the overlay's button and
        # context menus: every one reaches the endpoints
        assert len(app.actions.menus) == 3
        assert app.overlay.strip.menu_button.menu() in app.actions.menus
        for menu in app.actions.menus:
            texts = [a.text() for a in menu.actions() if not a.isSeparator()]
            quit_at = texts.index("&Quit Captioner")
            assert quit_at == len(texts) - 1
            for item in ("Start captions endpoint…", "Stop captions endpoint",
                         "Start replies endpoint…", "Stop replies endpoint"):
                assert texts.index(item) < quit_at
        await app.shutdown()

    run_async(qapp, scenario)


def test_unconfigured_tray_start_opens_setup_at_the_failing_check(qapp, store, tone_wav, aws,
                                                                  tray_app_settings):
    sm = boto3.client("sagemaker", region_name="us-east-1", endpoint_url=aws)

    async def scenario() -> None:
        app = make_app(store, tone_wav, TestClients())
        item = app.endpoint_trays["stt"]
        assert app.settings_dialog is None
        item.start_action.trigger()
        assert app.overlay.strip.cloud_label.text() == ("Captions endpoint: checking the "
                                                        "set-up…")
        await wait_until(lambda: app.settings_dialog is not None
                         and app.settings_dialog.isVisible(), 30, "the settings dialog")
        dialog = app.settings_dialog
        page = dialog.endpoints
        assert isinstance(page, EndpointsPage)
        assert dialog.tabs.currentWidget() is page
        assert page.kind_tabs.currentWidget() is page.setups["stt"]
        lines = [label.text() for label in page.setups["stt"].preflight.labels.values()]
        assert lines[1] == "✘ " + ROLE_MISSING
        assert page.setups["stt"].preflight.summary.text().startswith(
            "Not ready: the execution role check fails.")
        # …and the failing line sits under the field that fixes it
        assert page.setups["stt"].errors["role"].text() == ROLE_MISSING
        assert page.setups["stt"].errors["role"].isVisibleTo(page)
        # Visible outside the settings too: the strip, the tooltip and a notification.
        expected = f"Captions endpoint: set-up needed — {ROLE_MISSING}"
        assert app.overlay.strip.cloud_label.text() == expected
        assert app.overlay.strip.cloud_label.isVisibleTo(app.overlay)
        assert app.tray.tooltip_lines[tooltip_key("stt")] == expected
        assert app.tray.messages[-1][0] == "Captions endpoint: set-up needed"
        assert item.start_action.isEnabled()
        assert sm.list_endpoints()["Endpoints"] == []
        await app.shutdown()

    run_async(qapp, scenario, timeout=120)


def test_configured_tray_start_and_stop_show_progress(qapp, store, tone_wav, aws,
                                                      tray_app_settings):
    image = push_image(aws)
    iam = boto3.client("iam", region_name="us-east-1", endpoint_url=aws)
    clients = TestClients(quota=1)
    service = AccountSetupService(clients)
    proposal = service.propose_role(_with_image(store, image), "stt")
    role = service.create_role(store.settings.aws, proposal)
    plan = store.settings.cloud.stt
    plan.role_arn, plan.instance_types = role.arn, [CHEAP]
    assert iam.get_role(RoleName=role.name)
    sm = boto3.client("sagemaker", region_name="us-east-1", endpoint_url=aws)

    async def scenario() -> None:
        app = make_app(store, tone_wav, clients)
        item = app.endpoint_trays["stt"]
        strip = app.overlay.strip.cloud_label
        seen: list[str] = []
        item.progress.connect(lambda _kind, line: seen.append(line))
        ran: list[str] = []  # every preflight run (each is a dozen AWS calls)
        checks = app.endpoint_setup.preflight
        app.endpoint_setup.preflight = lambda settings, kind: (ran.append(kind),
                                                               checks(settings, kind))[1]
        item.start_action.trigger()
        await wait_until(lambda: item.flow.dialog is not None and item.flow.dialog.isVisible(),
                         30, "the cost confirmation")
        assert ran == ["stt"]  # the tray's checks are the deploy gate's: not run twice
        assert app.settings_dialog is None  # nothing to fix: no settings window
        assert "Estimated cost: about $0.74/hour" in item.flow.dialog.text()
        item.flow.dialog.deploy_button.click()
        await wait_until(lambda: app.endpoints.status("stt").phase is Phase.READY, 60,
                         "InService")
        await wait_until(lambda: strip.text().startswith("Captions endpoint: InService — $"),
                         10, "the strip line")
        assert app.tray.tooltip_lines[tooltip_key("stt")] == strip.text()
        assert app.tray.badge == "$"
        assert any(line.startswith("Captions endpoint: Creating") for line in seen), seen
        assert len(sm.list_endpoints()["Endpoints"]) == 1
        # a new idle period chosen in Settings applies to the endpoint already serving
        assert app.endpoints.idle_seconds_left("stt") > 20 * 60
        shorter = store.copy()
        shorter.cloud.idle_stop_minutes = 5
        store.replace(shorter)
        assert app.endpoints.idle_seconds_left("stt") <= 5 * 60
        item.stop_action.trigger()
        await wait_until(lambda: app.endpoints.status("stt").phase is Phase.OFF, 60, "stopped")
        assert any(line.startswith("Captions endpoint: Deleting") for line in seen), seen
        assert strip.text() == "" and not strip.isVisibleTo(app.overlay)
        assert tooltip_key("stt") not in app.tray.tooltip_lines
        assert app.tray.badge is None
        assert sm.list_endpoints()["Endpoints"] == []
        await app.shutdown()

    run_async(qapp, scenario, timeout=180)


def _with_image(store, image: str):
    store.settings.cloud.stt.image_uri = image
    return store.settings
