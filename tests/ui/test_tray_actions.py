"""Each QAction of the tray menu, triggered, with its effect on a real app instance
(real overlay, real caption session against the local Realtime server)."""

import asyncio
from itertools import pairwise
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt

from captioner.audio.errors import CaptureError, DeviceNotFound
from captioner.audio.files import FileSource
from captioner.realtime.captions import LineKind
from captioner.transcript.journal import read_journal
from captioner.ui.app import CaptionerApp
from captioner.ui.tray import Tray, state_icon
from tests.support.speech import write_wav
from tests.support.transcribers import tone_words_pcm
from tests.ui.conftest import WORDS, run_async, wait_until


def build(store, realtime_server, wav: Path, **kw):
    store.settings.recognition.endpoint = realtime_server.url
    store.settings.recognition.model = "test-model"
    store.settings.audio.chunk_bytes = 2048
    return CaptionerApp(store, source_factory=lambda audio: FileSource(
        wav, chunk_bytes=2048, realtime=True), **kw)


def test_start_stop_action_runs_captions_into_overlay_history_and_journal(
        qapp, store, realtime_server, tone_wav):
    async def scenario():
        app = build(store, realtime_server, tone_wav, tray_available=False)
        app.start()  # checks the start/stop action
        assert app.actions.start_stop.isChecked() and app.controller.running
        # Its label says what the tick means, so it must not flip to "Stop …" while ticked.
        label = app.actions.start_stop.text()
        assert label.replace("&", "") == "Live captions"
        await wait_until(lambda: all(w in " ".join(line.text for line in app.controller.lines)
                                     for w in WORDS), 20, "all words finalized")
        await wait_until(lambda: not app.controller.running, 15, "the file to end")
        assert not app.actions.start_stop.isChecked()
        assert app.actions.start_stop.text() == label
        shown = " ".join(line.text for line in app.history.sessions["current"].lines)
        assert all(w in shown for w in WORDS)
        journal = app.history.current_journal
        assert journal is not None and journal.exists()
        assert "foxtrot" in journal.read_text()
        await app.shutdown()

    run_async(qapp, scenario)


def test_a_second_start_goes_on_in_this_sessions_history_with_a_new_journal(
        qapp, store, realtime_server, tone_wav):
    """Stop, then start again: the history's "This session" goes on in the order said
    (its times do not jump back to 0), and the new journal's times start at 0."""
    async def scenario():
        app = build(store, realtime_server, tone_wav, tray_available=False)
        journals = []
        app.controller.journal_opened.connect(journals.append)
        for run in (1, 2):
            app.actions.start_stop.trigger()
            await wait_until(lambda: app.controller.running, 5, "start")
            await wait_until(lambda: not app.controller.running, 20, "the file to end")
            await wait_until(lambda run=run: len(app.controller.lines) >= run, 5, "lines")
        app.replies.spoken.emit("typed while stopped")  # follows the lines said before it
        await app.shutdown()
        return app.history.sessions["current"].lines, [read_journal(p) for p in journals]

    lines, journals = run_async(qapp, scenario)
    first, second = journals
    assert (lines[-1].kind, lines[-1].text) == (LineKind.TYPED, "typed while stopped")
    typed, lines = lines[-1], lines[:-1]
    assert typed.start >= lines[-1].end
    assert len(first.lines) + len(second.lines) == len(lines)
    assert all(b.start >= a.end for a, b in pairwise(lines)), lines
    assert lines[len(first.lines)].start >= first.lines[-1].end  # goes on after run 1
    assert second.lines[0].start < first.lines[-1].end  # a new file starts from 0
    assert [line.text for line in second.lines] == [line.text for line in first.lines]


def test_each_menu_action_has_its_effect(qapp, store, realtime_server, tone_wav):
    async def scenario():
        app = build(store, realtime_server, tone_wav, tray_available=False)
        app.start()
        a, o = app.actions, app.overlay
        quits = []
        app.quit_requested.connect(lambda: quits.append(1))

        a.start_stop.trigger()  # stop
        await wait_until(lambda: not app.controller.running, 15, "stop")
        a.start_stop.trigger()  # start again
        assert app.controller.running
        a.start_stop.trigger()
        await wait_until(lambda: not app.controller.running, 15, "stop")

        a.show_overlay.trigger()
        assert not o.isVisible()
        a.show_overlay.trigger()
        assert o.isVisible()

        a.click_through.trigger()
        assert o.windowFlags() & Qt.WindowType.WindowTransparentForInput
        a.click_through.trigger()
        assert not o.windowFlags() & Qt.WindowType.WindowTransparentForInput

        size = store.settings.appearance.font_size
        a.font_bigger.trigger()
        assert store.settings.appearance.font_size == size + 2
        a.font_smaller.trigger()
        assert store.settings.appearance.font_size == size

        a.history.trigger()
        assert app.history.isVisible()
        a.settings.trigger()
        assert app.settings_dialog is not None and app.settings_dialog.isVisible()
        a.quit.trigger()
        assert quits == [1]
        await app.shutdown()

    run_async(qapp, scenario)


def test_failure_is_persistent_with_reason_and_retry_restarts(qapp, store, realtime_server,
                                                              tone_wav):
    attempts = []

    def flaky_source(audio):
        attempts.append(1)
        if len(attempts) == 1:  # not a device gone (that is waited for): a broken driver
            raise RuntimeError("Speakers: the sound driver does not answer")
        return FileSource(tone_wav, chunk_bytes=2048, realtime=True)

    async def scenario():
        store.settings.recognition.endpoint = realtime_server.url
        app = CaptionerApp(store, source_factory=flaky_source, tray_available=True)
        app.start()
        await wait_until(lambda: app.controller.current.failed, 5, "the failure")
        assert "Speakers" in app.overlay.strip.state_label.text()
        assert app.tray.state == "error" and "Speakers" in app.tray.tooltip()
        assert app.tray.messages and app.tray.messages[-1][0] == "Captions stopped"
        assert "Speakers" in app.overlay.live_region.text()  # screen readers are told
        await asyncio.sleep(1.0)
        assert len(attempts) == 1  # a failure stays, until the user retries
        assert app.actions.retry.isEnabled()
        app.actions.retry.trigger()
        await wait_until(lambda: app.controller.current.state == "listening", 10, "retry")
        assert not app.actions.retry.isEnabled()
        await app.shutdown()

    run_async(qapp, scenario)


def test_a_missing_device_is_waited_for_and_captions_start_when_it_appears(
        qapp, store, realtime_server, tone_wav):
    attempts = []

    def plugged_in_later(audio):
        attempts.append(1)
        if len(attempts) <= 3:
            raise DeviceNotFound("System audio: no device of this kind.")
        return FileSource(tone_wav, chunk_bytes=2048, realtime=True)

    async def scenario():
        store.settings.recognition.endpoint = realtime_server.url
        app = CaptionerApp(store, source_factory=plugged_in_later, tray_available=True)
        levels: list[float] = []
        app.controller.level.connect(levels.append)
        app.start()
        await wait_until(lambda: len(attempts) >= 2, 5, "a second try")
        status = app.controller.current
        assert status.state == "reconnecting" and not status.failed, status
        assert "Waiting for the audio device" in app.overlay.strip.state_label.text()
        assert "no device of this kind" in app.tray.tooltip()
        assert [m for m in app.tray.messages if m[0] == "Audio device lost"] == [
            ("Audio device lost", "Captions go on when it is back. Why: System audio: "
                                  "no device of this kind.")]  # once, not at every try
        assert "Audio device lost" in app.overlay.live_region.text()
        assert app.actions.retry.isEnabled()
        await wait_until(lambda: app.controller.current.state == "listening", 15,
                         "captions to start by themselves")
        assert len(attempts) == 4
        await wait_until(lambda: not app.controller.running, 30, "the file's end")
        await app.shutdown()
        return list(app.controller.lines)

    lines = run_async(qapp, scenario)
    assert " ".join(line.text for line in lines).split() == WORDS
    assert all(line.kind is LineKind.SPEECH for line in lines)  # nothing was lost before


def test_stop_while_waiting_for_a_device_stops(qapp, store, realtime_server):
    def never(audio):
        raise DeviceNotFound("Microphone: no device of this kind.")

    async def scenario():
        store.settings.recognition.endpoint = realtime_server.url
        app = CaptionerApp(store, source_factory=never, tray_available=False)
        app.start()
        await wait_until(lambda: app.controller.current.state == "reconnecting", 5, "waiting")
        app.actions.start_stop.trigger()
        await wait_until(lambda: not app.controller.running, 5, "the stop")
        assert app.controller.current.state == "idle"
        await app.shutdown()

    run_async(qapp, scenario)


def test_without_a_tray_the_menu_is_on_the_overlay(qapp, store):
    app = CaptionerApp(store, tray_available=False)
    assert not app.tray.available and app.tray.icon is None
    button = app.overlay.strip.menu_button
    assert not button.isHidden()
    assert app.actions.settings in button.menu().actions()
    assert not app.tray.notify("t", "m")  # the caller shows it on the overlay instead


def test_tray_state_badge_and_tooltip_lines(qapp, store):
    app = CaptionerApp(store, tray_available=True)
    tray = app.tray
    tray.set_state("listening", "listening")
    listening = tray.current_icon().pixmap(64).toImage()
    tray.set_badge("$", "#1565C0")
    badged = tray.current_icon().pixmap(64).toImage()
    assert listening != badged
    tray.set_tooltip_line("endpoint", "Endpoint stt-1: InService, $1.20/h")
    assert "stt-1" in tray.tooltip() and "listening" in tray.tooltip()
    tray.set_tooltip_line("endpoint", None)
    assert "stt-1" not in tray.tooltip()
    assert state_icon("idle").pixmap(64).toImage() != state_icon("error").pixmap(64).toImage()
    assert isinstance(Tray(app.actions, available=False).menu.actions(), list)


def test_a_spoken_reply_heard_back_is_captioned_once(qapp, store, realtime_server, tone_wav):
    """The reply goes to the output the captions listen to and comes back as caption
    text: it is shown once, as the typed line; the words after it are captioned."""
    reply = " ".join(WORDS[:4])

    async def scenario():
        app = build(store, realtime_server, tone_wav, tray_available=False)
        app.start()
        await wait_until(lambda: app.controller.current.state == "listening", 20, "listening")
        shown: list[str] = []  # live and unconfirmed text the overlay was given
        app.controller.update.connect(lambda u: shown.append(
            f"{u.live.text if u.live else ''} {u.unconfirmed}"))
        app.replies.spoken.emit(reply)  # as the reply box does when the voice starts
        await wait_until(lambda: not app.controller.running, 20, "the file to end")
        assert any("foxtrot" in text for text in shown)
        assert not any(word in text for text in shown for word in WORDS[1:4]), shown
        lines = [(line.kind, line.text) for line in app.controller.lines]
        journal = app.history.current_journal.read_text()
        await app.shutdown()
        assert lines == [(LineKind.TYPED, reply), (LineKind.SPEECH, " ".join(WORDS[4:]))]
        assert journal.count("alpha") == 1  # the typed line only

    run_async(qapp, scenario)


def test_a_device_half_gone_at_the_first_try_is_stood_in_for_without_alarm(
        qapp, store, realtime_server, tone_wav):
    """Right after a loss the device can still be listed but fail to open; half a second
    later it is gone and the default stands in: no "lost" alarm, no amber flash."""
    asked: list[str | None] = []

    class Unplugged:
        """A capture whose device goes away after its first chunk."""

        level_dbfs = -30.0

        async def start(self) -> None:
            pass

        async def stop(self) -> None:
            pass

        async def chunks(self):
            yield bytes(2048)
            await asyncio.sleep(0.2)
            raise CaptureError("system capture: the stream from 'Headset' stopped by itself")

    def headset_going(audio):
        asked.append(audio.system_device)
        if len(asked) == 1:
            return Unplugged()
        if len(asked) == 2:
            raise CaptureError("cannot open 'Headset' for capture: Error opening InputStream")
        if audio.system_device:
            raise DeviceNotFound("System audio: no device matches 'Headset'.")
        return FileSource(tone_wav, chunk_bytes=2048, realtime=True)

    async def scenario():
        store.settings.recognition.endpoint = realtime_server.url
        store.settings.audio.system_device = "Headset"
        app = CaptionerApp(store, source_factory=headset_going, tray_available=True)
        states: list[str] = []
        app.controller.status.connect(lambda status: states.append(status.state))
        app.start()
        await wait_until(lambda: app.controller.current.state == "listening", 10,
                         "the default device standing in")
        await wait_until(lambda: not app.controller.running, 30, "the file's end")
        await app.shutdown()
        return states, app.tray.messages

    states, messages = run_async(qapp, scenario)
    assert asked[:4] == ["Headset", "Headset", "Headset", None], asked
    assert "reconnecting" not in states and "error" not in states
    assert "idle" not in states[:-1]  # "stopped" only at the end of the file
    assert not [m for m in messages if m[0] == "Audio device lost"]


def test_a_device_back_within_a_second_carries_on_the_same_session(
        qapp, store, realtime_server, tone_factory, tmp_path):
    """The same device opens again at once (a sound server restarted, a USB hiccup): the
    session goes on, so a phrase said across the loss is read whole, with a line where
    audio was missing and no alarm."""
    first, rest = WORDS[:3], WORDS[3:]
    opened: list[int] = []

    def wav(name: str, words: list[str]) -> Path:
        pcm = np.frombuffer(tone_words_pcm(words), "<i2") / 32768
        return write_wav(tmp_path / name, np.concatenate([pcm, np.zeros(16_000)]), 16_000)

    class GoesAway(FileSource):
        """The first words, then the device goes away."""

        async def chunks(self):
            async for chunk in super().chunks():
                yield chunk
            raise CaptureError("system capture: the stream from 'Headset' stopped by itself")

    def reopened(audio):
        opened.append(1)
        if len(opened) == 1:
            return GoesAway(wav("1.wav", first), chunk_bytes=2048, realtime=True)
        return FileSource(wav("2.wav", rest), chunk_bytes=2048, realtime=True)

    async def scenario():
        store.settings.recognition.endpoint = realtime_server.url
        app = CaptionerApp(store, source_factory=reopened, tray_available=True)
        states: list[str] = []
        app.controller.status.connect(lambda status: states.append(status.state))
        app.start()
        await wait_until(lambda: len(opened) == 2, 20, "the device to open again")
        await wait_until(lambda: not app.controller.running, 30, "the second file's end")
        await app.shutdown()
        return states, app.tray.messages, list(app.controller.lines)

    states, messages, lines = run_async(qapp, scenario)
    assert len(tone_factory.made) == 1  # one session, one request, from start to end
    said = [line for line in lines if line.kind is LineKind.SPEECH]
    assert " ".join(line.text for line in said).split() == WORDS
    (gap,) = [line for line in lines if line.kind is LineKind.GAP]
    assert gap.text == "[the audio device was gone for a moment]"
    before = " ".join(line.text for line in lines[:lines.index(gap)]).split()
    assert before[:len(first)] == first  # after the line the loss fell in
    assert all(b.start >= a.start for a, b in pairwise(lines))
    assert "reconnecting" not in states and "error" not in states
    assert "idle" not in states[:-1]
    assert not [m for m in messages if m[0] == "Audio device lost"]
