"""Idle auto-stop and the quit prompt on a fake clock; the price table and its override."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from captioner.cloud.cost_guard import IdleAction, IdleAutoStop, IdleState, quit_prompt
from captioner.cloud.pricing import PriceTable, bundled_prices_path, load_prices
from captioner.cloud.status import EndpointSnapshot, Stage


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def run_until(guard: IdleAutoStop, clock: Clock, seconds: float, step: float = 1.0
              ) -> list[tuple[float, IdleAction]]:
    """Tick every ``step`` seconds for ``seconds``; the non-NONE actions with their times."""
    events = []
    end = clock.t + seconds
    while clock.t < end:
        clock.t += step
        action = guard.tick()
        if action is not IdleAction.NONE:
            events.append((clock.t - 1000.0, action))
    return events


def test_warns_a_minute_before_then_stops_once() -> None:
    clock = Clock()
    guard = IdleAutoStop(30, clock=clock)
    events = run_until(guard, clock, 40 * 60)
    assert events == [(29 * 60, IdleAction.WARN), (30 * 60, IdleAction.STOP)]
    assert guard.state is IdleState.STOPPED
    assert guard.seconds_left() is None


def test_activity_postpones_and_withdraws_the_warning() -> None:
    clock = Clock()
    guard = IdleAutoStop(30, clock=clock)
    assert run_until(guard, clock, 29 * 60 + 10) == [(29 * 60, IdleAction.WARN)]
    guard.activity()  # a caption arrived during the warning
    assert guard.state is IdleState.WATCHING
    assert guard.seconds_left() == 30 * 60
    events = run_until(guard, clock, 31 * 60)
    assert events == [(58 * 60 + 10, IdleAction.WARN), (59 * 60 + 10, IdleAction.STOP)]


def test_cancel_after_warning_gives_a_full_new_period() -> None:
    clock = Clock()
    guard = IdleAutoStop(10, clock=clock)
    run_until(guard, clock, 9 * 60 + 30)
    assert guard.state is IdleState.WARNED
    guard.cancel()
    assert run_until(guard, clock, 8 * 60 + 59) == []
    assert guard.seconds_left() == pytest.approx(61)
    assert run_until(guard, clock, 1) == [(18 * 60 + 30, IdleAction.WARN)]


def test_zero_minutes_disables() -> None:
    clock = Clock()
    guard = IdleAutoStop(0, clock=clock)
    assert run_until(guard, clock, 3 * 3600, step=60) == []
    assert guard.state is IdleState.DISABLED


def test_a_shorter_period_applies_to_the_running_countdown() -> None:
    clock = Clock()
    guard = IdleAutoStop(60, clock=clock)
    run_until(guard, clock, 20 * 60)  # 20 idle minutes of a 60-minute period
    guard.set_minutes(15)  # the user shortens it: already over, so it stops now
    assert run_until(guard, clock, 1) == [(20 * 60 + 1, IdleAction.STOP)]


def test_a_longer_period_withdraws_a_warning_that_no_longer_applies() -> None:
    clock = Clock()
    guard = IdleAutoStop(10, clock=clock)
    run_until(guard, clock, 9 * 60 + 30)
    assert guard.state is IdleState.WARNED
    guard.set_minutes(30)
    assert guard.state is IdleState.WATCHING
    assert guard.seconds_left() == pytest.approx(20 * 60 + 30)
    assert run_until(guard, clock, 21 * 60) == [(29 * 60, IdleAction.WARN),
                                               (30 * 60, IdleAction.STOP)]


def test_enabling_a_disabled_guard_starts_a_full_period() -> None:
    clock = Clock()
    guard = IdleAutoStop(0, clock=clock)
    run_until(guard, clock, 3600, step=60)
    guard.set_minutes(5)
    assert guard.state is IdleState.WATCHING
    assert guard.seconds_left() == 5 * 60
    guard.set_minutes(0)
    assert guard.state is IdleState.DISABLED


def snapshot(name: str, stage: Stage, price: float | None, itype: str | None = "ml.g6.xlarge"
             ) -> EndpointSnapshot:
    t0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    return EndpointSnapshot(name=name, stage=stage, status=stage.value,
                            observed_at=t0 + timedelta(hours=2), created_at=t0,
                            instance_type=itype, instance_count=1, hourly_price=price)


def test_quit_prompt_lists_only_billing_endpoints() -> None:
    snaps = [snapshot("captioner-stt-a", Stage.IN_SERVICE, 1.654),
             snapshot("captioner-tts-b", Stage.CREATING, 1.006, None),
             snapshot("captioner-tts-c", Stage.FAILED, 1.0),
             snapshot("captioner-tts-d", Stage.GONE, None)]
    prompt = quit_prompt(snaps)
    assert prompt is not None
    assert [s.name for s in prompt.endpoints] == ["captioner-stt-a", "captioner-tts-b"]
    assert prompt.hourly_cost == pytest.approx(2.66)
    assert "2 SageMaker endpoints are still running" in prompt.message
    assert "$2.66/hour" in prompt.message
    assert "instance pending" in prompt.message
    assert quit_prompt(snaps[2:]) is None
    assert quit_prompt([snapshot("x", Stage.IN_SERVICE, None)]).hourly_cost is None
    assert snaps[0].cost_so_far == pytest.approx(3.308)


def test_bundled_table_has_the_gpu_families(tmp_path: Path) -> None:
    raw = json.loads(bundled_prices_path().read_text(encoding="utf-8"))
    assert "approximate" in raw["_note"]
    table = load_prices(user=tmp_path / "none.json")
    for family in ("g4dn", "g5", "g6", "g6e"):
        for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge"):
            price = table.lookup(f"ml.{family}.{size}", "us-east-1")
            assert price is not None and price.exact and 0.3 < price.hourly < 20
    other = table.lookup("ml.g6.xlarge", "eu-west-1")
    assert other is not None and not other.exact
    assert table.lookup("ml.p5.48xlarge", "us-east-1") is None


def test_user_copy_overrides_entry_by_entry(tmp_path: Path) -> None:
    user = tmp_path / "prices.json"
    user.write_text(json.dumps({"regions": {
        "us-east-1": {"ml.g6.xlarge": 0.99, "ml.bad": "cheap"},
        "eu-west-1": {"ml.g6.xlarge": 1.2}}}), encoding="utf-8")
    table = load_prices(user=user)
    assert table.hourly("ml.g6.xlarge", "us-east-1") == 0.99
    assert table.hourly("ml.g5.xlarge", "us-east-1") == 1.408  # untouched bundled entry
    assert table.lookup("ml.g6.xlarge", "eu-west-1").exact
    assert table.hourly("ml.bad", "us-east-1") is None


def test_unreadable_user_copy_falls_back_to_bundled(tmp_path: Path) -> None:
    user = tmp_path / "prices.json"
    user.write_text("{not json", encoding="utf-8")
    assert load_prices(user=user).hourly("ml.g6.xlarge", "us-east-1") == 1.006
    empty = PriceTable()
    assert empty.pool_range(("ml.g6.xlarge",), "us-east-1") is None
