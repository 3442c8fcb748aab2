"""The app's composition: endpoint switch and fall-back, typed replies in the transcript,
the reply box and Endpoints page reachable, the quit prompt while endpoints bill."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from captioner.audio.files import FileSource
from captioner.audio.playback import WavSink
from captioner.cloud.cost_guard import quit_prompt
from captioner.cloud.errors import NetworkError
from captioner.cloud.status import EndpointSnapshot, Stage
from captioner.realtime.captions import LineKind
from captioner.transcript.journal import read_journal
from captioner.ui.app import CaptionerApp
from captioner.ui.endpoints_page import EndpointsPage
from tests.cloud.test_manager import moto_factory, moto_manager  # noqa: F401 - fixture
from tests.support.transcribers import RecordingFactory, ThreadedServer
from tests.ui.conftest import run_async, wait_until


def make_app(store, tone_wav) -> CaptionerApp:
    return CaptionerApp(store, tray_available=False,
                        source_factory=lambda a: FileSource(tone_wav, chunk_bytes=2048,
                                                            realtime=True))


def test_captions_switch_to_a_started_endpoint_and_fall_back(qapp, store, tone_wav):
    configured, started = RecordingFactory(), RecordingFactory()
    with ThreadedServer(configured) as a, ThreadedServer(started) as b:
        async def scenario():
            store.settings.recognition.endpoint = a.url
            app = make_app(store, tone_wav)
            app.start()
            await wait_until(lambda: configured.made, 10, "captions on the configured endpoint")
            app.endpoints.endpoint_changed.emit(b.url)  # e.g. the Voxtral endpoint is InService
            await wait_until(lambda: started.made and app.controller.current.state == "listening",
                             15, "captions on the started endpoint")
            assert app.overlay.strip.endpoint_label.text() == b.url
            before = len(configured.made)
            app.endpoints.endpoint_changed.emit(None)  # it stopped serving: fall back
            await wait_until(lambda: len(configured.made) > before, 15, "the fall-back")
            assert app.overlay.strip.endpoint_label.text() == a.url
            await app.shutdown()

        run_async(qapp, scenario)


def test_replies_use_a_started_replies_endpoint_and_fall_back(qapp, store, tone_wav, tmp_path,
                                                             omni_server):
    """No voice endpoint in the settings: the computer's voice speaks, until the app's
    replies endpoint serves; when it stops, the computer's voice again."""
    from tests.ui.test_reply_box import RecordingVoice

    voice = RecordingVoice()
    used: list[str] = []  # what restarted an endpoint's idle countdown

    async def scenario():
        app = make_app(store, tone_wav)
        app.endpoints.activity = used.append
        app.replies._voice = voice
        app.replies._rendering_factory = lambda _sink, _language: None  # the voice above
        app.replies._sink_factory = lambda _device: WavSink(tmp_path / "reply.wav")
        app.replies.say("Before the endpoint.")
        await wait_until(lambda: voice.said, 10, "the computer's voice")
        app.endpoints.replies_endpoint_changed.emit(omni_server.url)  # it serves
        app.replies.say("Through the endpoint.")
        await wait_until(lambda: omni_server.sessions and omni_server.sessions[0].texts,
                         10, "the reply on the endpoint")
        await wait_until(lambda: app.replies.status.text == "Ready.", 10, "the reply to end")
        app.endpoints.replies_endpoint_changed.emit(None)  # it stopped serving
        app.replies.say("After the endpoint.")
        await wait_until(lambda: len(voice.said) == 2, 10, "the computer's voice again")
        await app.shutdown()

    run_async(qapp, scenario)
    assert voice.said == ["Before the endpoint.", "After the endpoint."]
    assert used == ["tts"]  # only the reply it spoke keeps the endpoint from idling
    assert "".join(omni_server.sessions[0].texts) == "Through the endpoint."
    assert len(omni_server.sessions) == 1


def test_spoken_reply_is_a_typed_line_in_captions_and_journal(qapp, store, realtime_server,
                                                              tone_wav):
    async def scenario():
        store.settings.recognition.endpoint = realtime_server.url
        app = make_app(store, tone_wav)
        app.start()
        await wait_until(lambda: app.controller.current.state == "listening", 10, "listening")
        app.replies.spoken.emit("I will be right back")
        await wait_until(lambda: any(line.kind is LineKind.TYPED
                                     for line in app.controller.lines), 5, "the typed line")
        journal = app.history.current_journal
        await app.shutdown()
        return journal

    journal = run_async(qapp, scenario)
    lines = read_journal(journal).lines
    typed = [line for line in lines if line.kind is LineKind.TYPED]
    assert [line.text for line in typed] == ["I will be right back"]


def test_reply_action_and_endpoints_page_are_reachable(qapp, store, tone_wav):
    async def scenario():
        app = make_app(store, tone_wav)
        assert app.actions.reply in app.tray.menu.actions()
        assert app.actions.reply.shortcut().toString() == store.settings.shortcuts.reply
        app.overlay.strip.reply_button.click()  # the overlay's own button
        assert app.reply_box.isVisible()
        app.reply_box.hide()
        app.actions.reply.trigger()  # tray item and shortcut
        assert app.reply_box.isVisible()
        app.show_settings()
        pages = [app.settings_dialog.tabs.widget(i)
                 for i in range(app.settings_dialog.tabs.count())]
        assert any(isinstance(p, EndpointsPage) for p in pages)
        menu_texts = [a.text() for a in app.tray.menu.actions()]
        assert any("Start captions endpoint" in t for t in menu_texts)
        await app.shutdown()

    run_async(qapp, scenario)


@pytest.mark.parametrize(("choice", "quits", "stops"),
                         [("Cancel", False, False), ("Keep running and quit", True, False),
                          ("Stop and quit", True, True)])
def test_quit_asks_while_an_endpoint_bills(qapp, store, tone_wav, choice, quits, stops):
    stopped = []

    async def scenario():
        app = make_app(store, tone_wav)
        snap = EndpointSnapshot(name="captioner-stt-20261129-170000", stage=Stage.IN_SERVICE,
                                status="InService", observed_at=datetime.now(UTC), kind="stt",
                                instance_type="ml.g6.4xlarge", hourly_price=1.86)
        app.endpoints.quit_decision = lambda: None if stopped else quit_prompt([snap])

        async def stop_all():
            stopped.append(True)

        app.endpoints.stop_all = stop_all
        answer = app.spawn(app.confirm_quit())
        await wait_until(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox)
                         or _box() is not None, 5, "the question")
        box = _box()
        assert "captioner-stt-20261129-170000" in box.text() and "1.86" in box.text()
        [button] = [b for b in box.buttons() if b.text().replace("&", "") == choice]
        button.click()
        result = await answer
        await app.shutdown()
        return result

    assert run_async(qapp, scenario) is quits
    assert bool(stopped) is stops


@pytest.mark.parametrize(("choice", "quits"),
                         [("Cancel", False), ("Quit when it is done", True)])
def test_quit_waits_for_the_multilingual_install_or_stays(qapp, store, tone_wav, tmp_path,
                                                          choice, quits):
    """Quitting mid-install cut pip off half-way (its output pipe closed under it)."""
    installed = tmp_path / "installed"

    async def scenario():
        app = make_app(store, tone_wav)
        app.show_settings()
        page = app.settings_dialog.recognition
        page._installer = ["bash", "-c", f"sleep 1; touch {installed}"]  # a real process
        page._start_install()
        assert page.installing
        answer = app.spawn(app.confirm_quit())
        await wait_until(lambda: _box() is not None, 5, "the question")
        box = _box()
        assert "still installing" in box.windowTitle() + box.text()
        [button] = [b for b in box.buttons() if b.text().replace("&", "") == choice]
        button.click()
        result = await answer
        finished_first = installed.exists()
        await wait_until(lambda: not page.installing, 10, "the install's end")
        await app.shutdown()
        return result, finished_first

    assert run_async(qapp, scenario) == (quits, quits)  # quitting waited; staying did not


def test_the_quit_question_is_on_the_screen_above_the_overlay(qapp, store, tone_wav):
    """The overlay stays on top of every window: a question centred on it was hidden
    under it, its buttons below the bottom of the screen."""
    async def scenario():
        app = make_app(store, tone_wav)
        snap = EndpointSnapshot(name="captioner-stt-20261129-170000", stage=Stage.IN_SERVICE,
                                status="InService", observed_at=datetime.now(UTC), kind="stt",
                                instance_type="ml.g6.4xlarge", hourly_price=1.86)
        app.endpoints.quit_decision = lambda: quit_prompt([snap])
        answer = app.spawn(app.confirm_quit())
        await wait_until(lambda: _box() is not None, 5, "the question")
        box = _box()
        where, overlay = box.frameGeometry(), app.overlay.frameGeometry()
        screen = app.overlay.screen().availableGeometry()
        on_top = bool(box.windowFlags() & Qt.WindowType.WindowStaysOnTopHint)
        box.reject()  # Cancel
        assert await answer is False
        await app.shutdown()
        return on_top, screen.contains(where), where.intersects(overlay)

    on_top, on_screen, under_overlay = run_async(qapp, scenario)
    assert on_top and on_screen and not under_overlay


@pytest.mark.parametrize(("last", "quits", "gone"),
                         [("Try again", True, True), ("Quit anyway", True, False),
                          ("Cancel", False, False)])
def test_quit_asks_again_while_the_stop_fails(qapp, store, moto_factory,  # noqa: F811
                                              tray_app_settings, last, quits, gone):
    """A failed stop leaves the endpoint billing: quitting would cancel the retry."""
    manager = moto_manager(moto_factory())

    async def scenario():
        name = (await manager.start("tts")).name
        control = await manager.control()

        def unreachable(_name: str, **_kw: Any) -> None:
            raise NetworkError("Could not reach AWS (describe_endpoint): timed out")

        control.stop = unreachable
        app = CaptionerApp(store, tray_available=False, endpoints=manager)
        answer = app.spawn(app.confirm_quit())
        _click(await _question(None), "Stop and quit")
        box = await _question(None)
        assert name in box.text() and "may still be billing" in box.text()
        assert f"{name}: Could not reach AWS (describe_endpoint): timed out" in box.text()
        _click(box, "Try again")  # AWS is still out of reach: asked again
        box = await _question(box)
        if last == "Try again":
            del control.stop  # reachable again
        _click(box, last)
        result = await answer
        names = [e["EndpointName"] for e in control.sagemaker.list_endpoints()["Endpoints"]]
        await app.shutdown()
        return result, names

    result, names = run_async(qapp, scenario)
    assert result is quits
    assert (names == []) is gone


def test_no_prompt_when_nothing_bills(qapp, store, tone_wav):
    async def scenario():
        app = make_app(store, tone_wav)
        result = await app.confirm_quit()
        await app.shutdown()
        return result

    assert run_async(qapp, scenario) is True


async def _question(previous: QMessageBox | None) -> QMessageBox:
    """The next question box shown (not ``previous``, answered already)."""
    await wait_until(lambda: _box() not in (None, previous), 10, "the question")
    box = _box()
    assert box is not None
    return box


def _click(box: QMessageBox, label: str) -> None:
    [button] = [b for b in box.buttons() if b.text().replace("&", "") == label]
    button.click()


def _box() -> QMessageBox | None:
    for widget in QApplication.topLevelWidgets():
        if isinstance(widget, QMessageBox) and widget.isVisible():
            return widget
    return None


def test_without_a_tray_click_through_never_locks_the_overlay(qapp, store, tone_wav):
    async def scenario():
        store.settings.appearance.click_through = True  # saved by an earlier run
        app = make_app(store, tone_wav)  # no tray on this "platform"
        assert not app.overlay.click_through  # starts clickable: nothing else could undo it
        app.actions.click_through.trigger()
        assert app.overlay.click_through
        notice = app.overlay.strip.notice_label.text()
        assert "Click-through is on" in notice and store.settings.shortcuts.click_through in notice
        await app.shutdown()

    run_async(qapp, scenario)
