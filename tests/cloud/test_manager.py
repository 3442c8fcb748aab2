"""EndpointManager: start → serve → stop against moto on loopback; transitions and AWS
errors through botocore Stubber sequences (moto has no Creating → InService); idle
auto-stop on a fake clock."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError, ProfileNotFound

from captioner.cloud.endpoints import EndpointControl, client_factory
from captioner.cloud.errors import NetworkError, ServiceValidationError
from captioner.cloud.lifecycle import Event
from captioner.cloud.manager import EndpointManager, KindStatus, Phase
from captioner.cloud.pricing import PriceTable
from captioner.cloud.status import Stage
from captioner.settings import EndpointDeploySettings
from tests.cloud.test_endpoints_stubbed import (
    ACCOUNT_ARN,
    ROLE,
    STT_IMAGE,
    T0,
    config_description,
    endpoint_description,
    expect_deploy,
    expect_ownership_check,
    not_found,
    tags,
)
from tests.support.moto_server import StubbedAws

PRICES = PriceTable(regions={"us-east-1": {"ml.g4dn.xlarge": 0.75}})
MOTO_SETTINGS = {
    "stt": EndpointDeploySettings(image_uri=STT_IMAGE, model_source="s3://models/voxtral/",
                                  instance_types=["ml.g4dn.xlarge"], role_arn=ROLE),
    "tts": EndpointDeploySettings(instance_types=["ml.g4dn.xlarge"], role_arn=ROLE),
}
STT_NAME = "captioner-stt-20261129-101500"
STT_CONTAINER = {
    "Image": STT_IMAGE,
    "Environment": {
        "SM_VLLM_MAX_MODEL_LEN": "45000",
        "SM_VLLM_COMPILATION_CONFIG": '{"cudagraph_mode":"PIECEWISE"}',
        "SM_VLLM_MODEL": "mistralai/Voxtral-Mini-4B-Realtime-2602",
    },
}
STT_SINGLE = {"InstanceType": "ml.g6.4xlarge"}
STUB_SETTINGS = EndpointDeploySettings(image_uri=STT_IMAGE, instance_types=["ml.g6.4xlarge"],
                                       role_arn=ROLE)


class Recorder:
    """Everything the manager told its observers, in order."""

    def __init__(self, manager: EndpointManager) -> None:
        self.statuses: list[KindStatus] = []
        self.endpoints: list[str | None] = []
        self.replies: list[str | None] = []
        self.warnings: list[tuple[str, float | None]] = []
        self.auto_stopped: list[str] = []
        manager.status_changed.connect(self.statuses.append)
        manager.endpoint_changed.connect(self.endpoints.append)
        manager.replies_endpoint_changed.connect(self.replies.append)
        manager.idle_warning.connect(lambda kind, left: self.warnings.append((kind, left)))
        manager.auto_stopped.connect(self.auto_stopped.append)

    def phases(self, kind: str) -> list[Phase]:
        out: list[Phase] = []
        for s in self.statuses:
            if s.kind == kind and (not out or out[-1] is not s.phase):
                out.append(s.phase)
        return out


def run(coro_fn: Callable[[], Any], timeout: float = 20.0) -> Any:
    """Run on a fresh loop; fail on any exception the loop saw but nobody awaited."""
    seen: list[dict[str, Any]] = []

    async def wrapper() -> Any:
        asyncio.get_running_loop().set_exception_handler(lambda _l, ctx: seen.append(ctx))
        return await asyncio.wait_for(coro_fn(), timeout)

    result = asyncio.run(wrapper())
    assert not seen, f"the loop saw errors: {seen}"
    return result


def started(manager: EndpointManager, kind: str = "stt") -> KindStatus:
    """Start ``kind`` (until it serves or fails), close the manager; the status then."""
    async def scenario() -> KindStatus:
        status = await manager.start(kind)
        await manager.close()
        return status

    return run(scenario)


async def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)
    assert predicate(), what


# ---- moto: real control plane on loopback -----------------------------------------------


@pytest.fixture
def moto_factory(moto_url: str) -> Callable[..., Callable[[], EndpointControl]]:
    """Controls on the moto server; each deploy gets its own second (stack names differ)."""
    ticks = itertools.count()

    def make(start: datetime = T0) -> Callable[[], EndpointControl]:
        def control() -> EndpointControl:
            session = boto3.Session(region_name="us-east-1")
            return EndpointControl.from_factory(
                client_factory(session, "us-east-1", endpoint_url=moto_url), prices=PRICES,
                now=lambda: start + timedelta(seconds=next(ticks)))
        return control

    return make


def moto_manager(factory: Callable[[], EndpointControl], **kwargs: Any) -> EndpointManager:
    options: dict[str, Any] = {"poll_interval": 0.01, "monitor_interval": 3600,
                               "stop_poll_interval": 0.01, "tick_interval": None}
    return EndpointManager(factory, MOTO_SETTINGS.__getitem__, **{**options, **kwargs})


def test_start_serves_then_stop_falls_back(moto_factory) -> None:
    # moto stamps CreationTime with the real clock; look at it from an hour later
    manager = moto_manager(moto_factory(), now=lambda: datetime.now(UTC) + timedelta(hours=1))
    seen = Recorder(manager)

    async def scenario() -> None:
        prepared = await manager.prepare("stt")
        assert prepared is not None
        assert prepared.cost_text() == "about $0.75/hour"
        status = await manager.start("stt", prepared)
        assert status.phase is Phase.READY
        name = status.name
        assert name is not None and name.startswith("captioner-stt-")
        assert seen.endpoints == [f"sagemaker://{name}?region=us-east-1"]
        assert manager.endpoint == seen.endpoints[0]
        assert status.snapshot is not None and status.snapshot.instance_type == "ml.g4dn.xlarge"
        uptime = manager.uptime("stt")
        assert uptime is not None and uptime > 0
        assert manager.cost_so_far("stt") == pytest.approx(0.75 * uptime / 3600)
        assert not status.can_start and status.can_stop

        stopped = await manager.stop("stt")
        assert stopped.phase is Phase.OFF and stopped.name is None and stopped.error is None
        assert seen.endpoints[-1] is None  # the app falls back to the embedded engine
        control = await manager.control()
        assert control.find_managed_endpoints() == []
        assert control.sagemaker.list_models()["Models"] == []
        await manager.close()

    run(scenario)
    assert seen.phases("stt") == [Phase.PREPARING, Phase.OFF, Phase.DEPLOYING, Phase.STARTING,
                                  Phase.READY, Phase.STOPPING, Phase.OFF]
    assert seen.phases("tts") == [] and seen.replies == []


def test_reattach_after_restart_finds_endpoints_by_tag(moto_factory) -> None:
    first = moto_manager(moto_factory())
    older = moto_factory(T0 - timedelta(days=1))()  # an endpoint from a run long ago

    async def before_restart() -> tuple[str, str, str]:
        stale = older.deploy(older.plan("stt", MOTO_SETTINGS["stt"]))
        stt = await first.start("stt")
        tts = await first.start("tts")
        assert first.quit_decision() is not None
        await first.close()  # the app quits and leaves them running
        assert stt.name and tts.name
        return stt.name, tts.name, stale

    stt_name, tts_name, stale = run(before_restart)

    second = moto_manager(moto_factory())
    seen = Recorder(second)

    async def after_restart() -> None:
        orphans = await second.attach()
        assert second.status("stt").name == stt_name
        assert second.status("tts").name == tts_name
        assert second.status("stt").phase is Phase.READY
        assert seen.endpoints == [f"sagemaker://{stt_name}?region=us-east-1"]
        assert seen.replies == [f"sagemaker://{tts_name}?region=us-east-1"]  # replies use it
        assert [o.name for o in orphans] == [stale] == [o.name for o in second.orphans]

        prompt = second.quit_decision()
        assert prompt is not None
        assert {s.name for s in prompt.endpoints} == {stt_name, tts_name, stale}
        assert prompt.hourly_cost == pytest.approx(3 * 0.75)
        assert "3 SageMaker endpoints are still running" in prompt.message

        assert await second.stop_orphans() == []
        assert second.orphans == []
        assert await second.stop_all() == []  # no reasons: every stop went through
        assert second.quit_decision() is None
        assert (await second.control()).find_managed_endpoints() == []
        await second.close()

    run(after_restart)
    assert seen.endpoints[-1] is None and seen.replies[-1] is None


def left_running(moto_factory) -> str:
    """An stt endpoint a previous run of the app left running; its name."""
    first = moto_manager(moto_factory())

    async def before_restart() -> str:
        status = await first.start("stt")
        await first.close()
        assert status.name
        return status.name

    return run(before_restart)


def offline_at_first(make: Callable[[], EndpointControl]) -> Callable[[], EndpointControl]:
    """A control factory that cannot reach AWS the first time (offline at start-up)."""
    calls = itertools.count()

    def factory() -> EndpointControl:
        if next(calls) == 0:
            raise EndpointConnectionError(endpoint_url="https://api.sagemaker.us-east-1.amazonaws.com/")
        return make()

    return factory


def test_start_after_a_failed_search_searches_first_and_adopts(moto_factory) -> None:
    """Offline at start-up, then Start: the endpoint left running is found and adopted,
    not a second one started beside it."""
    name = left_running(moto_factory)
    manager = moto_manager(offline_at_first(moto_factory()))

    async def scenario() -> KindStatus:
        await manager.attach()
        status = manager.status("stt")
        assert status.phase is Phase.ERROR and "Could not reach AWS" in (status.error or "")
        status = await manager.start("stt")
        await manager.close()
        return status

    status = run(scenario)
    assert status.name == name and status.phase is Phase.READY and status.error is None
    found = moto_factory()().find_managed_endpoints()
    assert [e.name for e in found] == [name]  # no second endpoint


def test_a_failed_search_is_made_again_by_itself(moto_factory, monkeypatch) -> None:
    monkeypatch.setattr("captioner.cloud.manager.SEARCH_RETRY", (0.05, 0.05))
    name = left_running(moto_factory)
    manager = moto_manager(offline_at_first(moto_factory()))

    async def scenario() -> KindStatus:
        await manager.attach()
        assert manager.status("stt").phase is Phase.ERROR
        await wait_until(lambda: manager.status("stt").name == name, "adopted on the retry")
        await manager.close()
        return manager.status("stt")

    status = run(scenario)
    assert status.phase is Phase.READY and status.error is None
    assert manager.status("tts").phase is Phase.OFF and manager.status("tts").error is None


def test_idle_auto_stop_warns_cancels_then_stops(moto_factory) -> None:
    clock = [0.0]
    manager = moto_manager(moto_factory(), idle_minutes=30, clock=lambda: clock[0])
    seen = Recorder(manager)

    async def scenario() -> None:
        await manager.start("stt")
        clock[0] += 28 * 60
        manager.tick()
        assert seen.warnings == []
        clock[0] += 60.5  # 59.5 s left: warn once
        manager.tick()
        manager.tick()
        assert seen.warnings == [("stt", pytest.approx(59.5))]
        manager.activity("stt")  # a caption arrived: warning withdrawn, countdown restarts
        assert seen.warnings[-1] == ("stt", None)
        assert manager.idle_seconds_left("stt") == pytest.approx(30 * 60)

        clock[0] += 29 * 60 + 30
        manager.tick()
        assert seen.warnings[-1] == ("stt", pytest.approx(30))
        manager.cancel_idle_stop("stt")  # the user pressed Cancel
        assert seen.warnings[-1] == ("stt", None)
        clock[0] += 29 * 60
        manager.tick()
        assert manager.status("stt").phase is Phase.READY and seen.auto_stopped == []

        clock[0] += 60
        manager.tick()
        assert seen.auto_stopped == ["stt"]
        await wait_until(lambda: manager.status("stt").phase is Phase.OFF, "auto-stop")
        assert seen.endpoints[-1] is None
        assert (await manager.control()).find_managed_endpoints() == []
        await manager.close()

    run(scenario)


def test_a_new_idle_period_from_settings_applies_to_a_serving_endpoint(moto_factory) -> None:
    clock = [0.0]
    manager = moto_manager(moto_factory(), idle_minutes=60, clock=lambda: clock[0])
    seen = Recorder(manager)

    async def scenario() -> None:
        await manager.start("stt")
        clock[0] += 9 * 60 + 30
        manager.tick()
        assert seen.warnings == [] and seen.auto_stopped == []
        manager.set_idle_minutes(10)  # the user shortens it in Settings: warned at once
        manager.tick()
        assert seen.warnings == [("stt", pytest.approx(30))]
        manager.set_idle_minutes(60)  # … and lengthens it again: the warning is withdrawn
        assert seen.warnings[-1] == ("stt", None)
        manager.set_idle_minutes(5)  # already idle longer than 5 min: stopped on the tick
        manager.tick()
        assert seen.auto_stopped == ["stt"]
        await wait_until(lambda: manager.status("stt").phase is Phase.OFF, "auto-stop")
        await manager.close()

    run(scenario)


def test_ticker_drives_idle_stop_on_its_own(moto_factory) -> None:
    clock = [0.0]
    manager = moto_manager(moto_factory(), idle_minutes=1, clock=lambda: clock[0],
                           tick_interval=0.01)
    seen = Recorder(manager)

    async def scenario() -> None:
        await manager.start("tts")
        clock[0] += 61
        await wait_until(lambda: manager.status("tts").phase is Phase.OFF, "ticker stop")
        await manager.close()

    run(scenario)
    assert seen.auto_stopped == ["tts"]


def test_control_factory_errors_are_readable() -> None:
    def broken() -> EndpointControl:
        raise ProfileNotFound(profile="work")

    manager = EndpointManager(broken, MOTO_SETTINGS.__getitem__, tick_interval=None)

    async def scenario() -> None:
        assert await manager.prepare("stt") is None
        await manager.close()

    run(scenario)
    status = manager.status("stt")
    assert status.phase is Phase.ERROR and status.can_start
    assert status.error is not None and "'work' is not in the AWS config files" in status.error


def test_invalid_settings_fail_before_any_aws_call(moto_factory) -> None:
    manager = EndpointManager(moto_factory(), lambda kind: EndpointDeploySettings(),
                              tick_interval=None)

    async def scenario() -> None:
        assert await manager.prepare("tts") is None
        await manager.close()

    run(scenario)
    assert "execution role ARN is required" in (manager.status("tts").error or "")
    assert manager.status("tts").name is None


# ---- Stubber: transitions and AWS errors ------------------------------------------------


def stub_manager(stub: StubbedAws, **kwargs: Any) -> EndpointManager:
    options: dict[str, Any] = {"poll_interval": 0, "monitor_interval": 3600,
                               "stop_poll_interval": 1, "tick_interval": None,
                               "now": stub.clock.now}
    return EndpointManager(lambda: stub.control, lambda kind: STUB_SETTINGS,
                           **{**options, **kwargs})


def describe(stub: StubbedAws, status: str, **extra: Any) -> None:
    stub.sm.add_response("describe_endpoint", endpoint_description(STT_NAME, status, **extra),
                         {"EndpointName": STT_NAME})


def expect_cleanup(stub: StubbedAws) -> None:
    """control.stop on an endpoint that is Failed."""
    expect_ownership_check(stub, STT_NAME, "stt", STT_SINGLE, status="Failed")
    stub.aas.add_response("describe_scalable_targets", {"ScalableTargets": []})
    stub.sm.add_response("delete_endpoint", {}, {"EndpointName": STT_NAME})
    not_found(stub, "describe_endpoint", "endpoint", STT_NAME, {"EndpointName": STT_NAME})
    stub.sm.add_response("delete_endpoint_config", {}, {"EndpointConfigName": STT_NAME})
    stub.sm.add_response("delete_model", {}, {"ModelName": STT_NAME})


def test_creating_to_in_service_then_switch(stubbed_aws: StubbedAws) -> None:
    expect_deploy(stubbed_aws, STT_NAME, "stt", STT_CONTAINER, STT_SINGLE)
    describe(stubbed_aws, "Creating")
    stubbed_aws.sm.add_response("describe_endpoint_config",
                                config_description(STT_NAME, STT_SINGLE))
    describe(stubbed_aws, "Creating")
    describe(stubbed_aws, "InService")
    manager = stub_manager(stubbed_aws)
    seen = Recorder(manager)
    texts: list[str] = []
    manager.status_changed.connect(lambda s: texts.append(s.stage_text))

    async def scenario() -> KindStatus:
        prepared = await manager.prepare("stt")
        assert prepared is not None and prepared.cost_text() == "about $1.60/hour"
        status = await manager.start("stt", prepared)
        await manager.close()
        return status

    status = run(scenario)
    assert status.phase is Phase.READY
    assert seen.phases("stt") == [Phase.PREPARING, Phase.OFF, Phase.DEPLOYING, Phase.STARTING,
                                  Phase.READY]
    assert f"Creating model {STT_NAME}" in texts
    assert f"Creating endpoint {STT_NAME}" in texts
    assert "Creating" in texts and texts[-1] == "InService"
    starting = [s for s in seen.statuses if s.phase is Phase.STARTING and s.snapshot]
    assert starting and starting[0].snapshot.stage is Stage.CREATING
    assert seen.endpoints == [f"sagemaker://{STT_NAME}?region=us-east-1"]


def test_failed_endpoint_shows_reason_verbatim_and_is_cleaned_up(stubbed_aws: StubbedAws
                                                                 ) -> None:
    reason = ("Unable to provision requested ML compute capacity due to "
              "InsufficientInstanceCapacity error.")
    expect_deploy(stubbed_aws, STT_NAME, "stt", STT_CONTAINER, STT_SINGLE)
    describe(stubbed_aws, "Creating")
    stubbed_aws.sm.add_response("describe_endpoint_config",
                                config_description(STT_NAME, STT_SINGLE))
    describe(stubbed_aws, "Failed", FailureReason=reason)
    expect_cleanup(stubbed_aws)
    manager = stub_manager(stubbed_aws)
    seen = Recorder(manager)

    status = started(manager, "stt")
    assert status.phase is Phase.OFF and status.name is None and status.can_start
    assert status.error == f"Endpoint {STT_NAME} failed: {reason}"
    assert Phase.STOPPING in seen.phases("stt")
    assert seen.endpoints == []  # never served: captions never switched


def test_access_denied_on_deploy_is_readable_and_leaves_nothing(stubbed_aws: StubbedAws
                                                                ) -> None:
    stubbed_aws.sm.add_client_error(
        "create_model", "AccessDeniedException",
        "User: arn:aws:iam::123456789012:user/ana is not authorized to perform: "
        "sagemaker:CreateModel")
    manager = stub_manager(stubbed_aws)

    status = started(manager, "stt")
    assert status.phase is Phase.ERROR
    assert status.name is None and status.can_start and not status.can_stop
    assert status.error is not None
    assert status.error.startswith("AWS denied access (create_model): User: arn:aws:iam::")
    assert "Check the IAM policy" in status.error
    assert status.stage_text == "Error"


def test_stop_access_denied_keeps_the_name_so_stop_can_be_retried(stubbed_aws: StubbedAws
                                                                  ) -> None:
    stubbed_aws.sm.add_response("list_endpoints", {"Endpoints": [{
        "EndpointName": STT_NAME, "EndpointArn": f"{ACCOUNT_ARN}:endpoint/{STT_NAME}",
        "CreationTime": T0, "LastModifiedTime": T0, "EndpointStatus": "InService"}]})
    stubbed_aws.sm.add_response("list_tags", {"Tags": tags("stt")})
    describe(stubbed_aws, "InService")
    stubbed_aws.sm.add_response("describe_endpoint_config",
                                config_description(STT_NAME, STT_SINGLE))
    describe(stubbed_aws, "InService")
    stubbed_aws.sm.add_response("describe_endpoint_config",
                                config_description(STT_NAME, STT_SINGLE))
    stubbed_aws.sm.add_response("describe_model", {
        "ModelName": STT_NAME, "ModelArn": f"{ACCOUNT_ARN}:model/{STT_NAME}",
        "CreationTime": T0, "PrimaryContainer": {"Image": STT_IMAGE}})
    stubbed_aws.sm.add_client_error("list_tags", "AccessDeniedException", "no ListTags for you")
    manager = stub_manager(stubbed_aws)
    seen = Recorder(manager)

    async def scenario() -> KindStatus:
        assert await manager.attach() == []
        assert manager.status("stt").phase is Phase.READY
        status = await manager.stop("stt")
        await manager.close()
        return status

    status = run(scenario)
    assert status.phase is Phase.ERROR and status.name == STT_NAME and status.can_stop
    assert "AWS denied access (list_tags): no ListTags for you" in (status.error or "")
    assert seen.endpoints == [f"sagemaker://{STT_NAME}?region=us-east-1", None]


def test_endpoint_deleted_behind_our_back_falls_back(stubbed_aws: StubbedAws) -> None:
    expect_deploy(stubbed_aws, STT_NAME, "stt", STT_CONTAINER, STT_SINGLE)
    describe(stubbed_aws, "InService")
    stubbed_aws.sm.add_response("describe_endpoint_config",
                                config_description(STT_NAME, STT_SINGLE))
    describe(stubbed_aws, "InService")
    not_found(stubbed_aws, "describe_endpoint", "endpoint", STT_NAME, {"EndpointName": STT_NAME})
    manager = stub_manager(stubbed_aws, monitor_interval=0)
    seen = Recorder(manager)

    async def scenario() -> None:
        await manager.start("stt")
        await wait_until(lambda: manager.status("stt").phase is Phase.OFF, "drop noticed")
        await manager.close()

    run(scenario)
    assert seen.endpoints == [f"sagemaker://{STT_NAME}?region=us-east-1", None]
    status = manager.status("stt")
    assert status.name is None
    assert status.error == (
        f"Endpoint {STT_NAME} no longer exists (it was deleted outside Captioner).")


def test_monitor_blip_keeps_serving(stubbed_aws: StubbedAws) -> None:
    expect_deploy(stubbed_aws, STT_NAME, "stt", STT_CONTAINER, STT_SINGLE)
    describe(stubbed_aws, "InService")
    stubbed_aws.sm.add_response("describe_endpoint_config",
                                config_description(STT_NAME, STT_SINGLE))
    stubbed_aws.sm.add_client_error("describe_endpoint", "ExpiredTokenException", "expired")
    describe(stubbed_aws, "InService")
    manager = stub_manager(stubbed_aws, monitor_interval=0)
    seen = Recorder(manager)
    errors: list[str | None] = []

    def on_status(status: KindStatus) -> None:
        errors.append(status.error)
        if status.error is None and any(errors):  # recovered: stop polling (stubs run out)
            manager._follow["stt"].cancel()

    manager.status_changed.connect(on_status)

    async def scenario() -> None:
        await manager.start("stt")
        await wait_until(lambda: "stt" not in manager._follow, "recovered")
        await manager.close()

    run(scenario)
    assert manager.status("stt").phase is Phase.READY
    assert any(e and "credentials have expired" in e for e in errors)
    assert seen.endpoints == [f"sagemaker://{STT_NAME}?region=us-east-1"]


def test_a_blip_while_creating_keeps_following_it_to_serving(stubbed_aws: StubbedAws
                                                             ) -> None:
    """One failed look while the endpoint is Creating must not end the watch: it goes on
    billing, and only the watch brings it to READY, where captions switch to it and the
    idle stop can act."""
    expect_deploy(stubbed_aws, STT_NAME, "stt", STT_CONTAINER, STT_SINGLE)
    describe(stubbed_aws, "Creating")
    stubbed_aws.sm.add_response("describe_endpoint_config",
                                config_description(STT_NAME, STT_SINGLE))
    stubbed_aws.sm.add_client_error("describe_endpoint", "ExpiredTokenException", "expired")
    describe(stubbed_aws, "Creating")
    describe(stubbed_aws, "InService")
    manager = stub_manager(stubbed_aws)
    seen = Recorder(manager)

    status = started(manager, "stt")
    assert status.phase is Phase.READY and status.error is None
    assert seen.phases("stt")[-3:] == [Phase.DEPLOYING, Phase.STARTING, Phase.READY]
    shown = [s.error for s in seen.statuses if s.phase is Phase.STARTING]
    assert any(e and "credentials have expired" in e for e in shown)
    assert shown[-1] is None  # the next good look cleared it
    assert seen.endpoints == [f"sagemaker://{STT_NAME}?region=us-east-1"]


def lost_create_answer(make: Callable[[], EndpointControl], *, describe_fails: bool = False
                       ) -> tuple[Callable[[], EndpointControl], list[EndpointControl]]:
    """Controls whose create_endpoint reaches AWS but whose answer is lost (the retry is
    refused as already existing); optionally AWS cannot be asked afterwards either."""
    controls: list[EndpointControl] = []

    def factory() -> EndpointControl:
        control = make()
        real = control.call_sm
        made = False

        def call_sm(operation: str, **params: Any) -> Any:
            nonlocal made
            if made and describe_fails and operation == "describe_endpoint":
                raise NetworkError("Could not reach AWS (describe_endpoint): timed out")
            out = real(operation, **params)
            if operation == "create_endpoint":
                made = True
                raise ServiceValidationError("AWS rejected the request (create_endpoint): "
                                             "Cannot create already existing endpoint")
            return out

        control.call_sm = call_sm  # type: ignore[method-assign]
        controls.append(control)
        return control

    return factory, controls


def test_an_endpoint_created_though_its_answer_was_lost_is_followed(moto_factory) -> None:
    factory, controls = lost_create_answer(moto_factory())
    manager = moto_manager(factory)

    status = started(manager, "tts")
    assert status.phase is Phase.READY and status.name is not None and status.can_stop
    sm = controls[0].sagemaker
    assert [e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]] == [status.name]
    schedules = controls[0].backstop.scheduler.list_schedules()["Schedules"]
    assert len(schedules) == 1  # its server-side deletion stays armed
    assert manager.quit_decision() is not None


def test_when_aws_cannot_say_whether_it_was_created_nothing_is_removed(moto_factory) -> None:
    factory, controls = lost_create_answer(moto_factory(), describe_fails=True)
    manager = moto_manager(factory)

    status = started(manager, "tts")
    assert status.phase is Phase.ERROR and status.name is not None and status.can_stop
    assert "if AWS made it" in (status.error or "")
    sm = controls[0].sagemaker
    assert len(sm.list_endpoints()["Endpoints"]) == 1
    assert len(sm.list_models()["Models"]) == 1
    assert len(controls[0].backstop.scheduler.list_schedules()["Schedules"]) == 1
    assert manager.quit_decision() is not None


def test_stop_during_deploy_waits_for_the_create_call(moto_factory) -> None:
    manager = moto_manager(moto_factory())

    async def scenario() -> None:
        prepared = await manager.prepare("tts")
        assert prepared is not None
        started = asyncio.get_running_loop().create_future()
        manager.status_changed.connect(
            lambda s: s.phase is Phase.DEPLOYING and not started.done() and started.set_result(1))
        task = manager.spawn(manager.start("tts", prepared))
        await started
        status = await manager.stop("tts")
        assert task.done()
        assert status.phase is Phase.OFF and status.name is None
        control = await manager.control()
        assert control.find_managed_endpoints() == []
        assert control.sagemaker.list_models()["Models"] == []
        await manager.close()

    run(scenario)


def test_quit_decision_counts_an_endpoint_still_deploying() -> None:
    manager = EndpointManager(lambda: None, MOTO_SETTINGS.__getitem__, tick_interval=None,  # type: ignore[arg-type,return-value]
                              now=lambda: datetime(2026, 11, 29, tzinfo=UTC))
    assert manager.quit_decision() is None
    manager._move("stt", Event.DEPLOY, name=STT_NAME)
    prompt = manager.quit_decision()
    assert prompt is not None and STT_NAME in prompt.message
    assert prompt.hourly_cost is None and "unknown amount" in prompt.message
