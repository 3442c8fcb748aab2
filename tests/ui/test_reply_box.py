"""The reply box and its controller: real widgets offscreen, the real Speaker over a real
WebSocket to the local vLLM-Omni server, replies written to a WAV file (or played on the
PulseAudio null sink); only the computer's voice is a recording fake (the true edge)."""

from __future__ import annotations

import os
import socket
import wave
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QApplication, QComboBox, QLineEdit, QWidget

from captioner import settings as settings_io
from captioner.audio.playback import OutputDevice, Player, WavSink, list_output_devices
from captioner.tts.events import LANGUAGES, VOICES
from captioner.tts.fallback import rendering_voice
from captioner.tts.speaker import SpeakerState
from captioner.ui.reply_box import SYSTEM_DEFAULT, ReplyBox
from captioner.ui.reply_controller import (
    BAD_ENDPOINT,
    DEFAULT_OUTPUT_ONLY,
    FALLBACK,
    NO_ENDPOINT,
    NO_OUTPUT,
    OPENING_OUTPUT,
    OUTPUT_GONE,
    ReplyController,
    ReplyStatus,
)
from captioner.ui.settings_store import SettingsStore
from tests.support.omni_server import ThreadedOmniServer
from tests.support.pulse import Headset
from tests.ui.conftest import run_async, wait_until

LONG = " ".join(f"Sentence number {i} is spoken slowly here." for i in range(12))


class RecordingVoice:
    """Stands in for the platform voice: records what it was asked to say."""

    name = "test voice"

    def __init__(self) -> None:
        self.said: list[str] = []
        self.languages: list[str] = []

    async def say(self, text: str, on_start=None) -> None:
        self.said.append(text)
        if on_start is not None:
            on_start()

    def stop(self) -> None:
        pass

    def set_language(self, language: str) -> None:
        self.languages.append(language)


class Harness:
    """A box + controller on a store saved under tmp_path, replies into a WAV file."""

    def __init__(self, tmp_path: Path, endpoint: str, *, sink_factory=None,
                 devices: list[OutputDevice] | None = None, **controller_kwargs) -> None:
        self.path = tmp_path / "settings.json"
        settings = settings_io.Settings()
        settings.tts.endpoint = endpoint
        self.store = SettingsStore(settings, self.path, save_delay_ms=10)
        self.wav = tmp_path / "reply.wav"
        self.devices_asked: list[str | None] = []
        self.voice = RecordingVoice()
        # The recording voice stands for this computer's voice unless a test renders it.
        controller_kwargs.setdefault("rendering_voice_factory", lambda _sink, _language: None)
        self.controller = ReplyController(
            self.store, sink_factory=sink_factory or self._wav_sink, local_voice=self.voice,
            **controller_kwargs)
        self.box = ReplyBox(self.controller, self.store,
                            output_devices=lambda: list(devices or []))
        self.spoken: list[str] = []
        self.statuses: list[ReplyStatus] = []
        self.controller.spoken.connect(self.spoken.append)
        self.controller.status_changed.connect(self.statuses.append)
        self.box.show()
        self.box.activateWindow()

    def _wav_sink(self, device: str | None) -> WavSink:
        self.devices_asked.append(device)
        return WavSink(self.wav)

    def saved(self) -> settings_io.Settings:
        self.store.flush()
        return settings_io.load(self.path)

    def pcm(self) -> bytes:
        with wave.open(str(self.wav), "rb") as wav:
            return wav.readframes(wav.getnframes())


def refused_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"ws://127.0.0.1:{port}/v1/audio/speech/stream"


def focus(qtbot, widget: QWidget) -> None:
    widget.activateWindow()
    widget.setFocus()
    qtbot.waitUntil(widget.hasFocus, timeout=2000)


def type_and_enter(qtbot, box: ReplyBox, text: str) -> None:
    focus(qtbot, box.text_edit)
    qtbot.keyClicks(box.text_edit, text)
    qtbot.keyClick(box.text_edit, Qt.Key.Key_Return)


def test_enter_speaks_through_the_endpoint_and_emits_spoken(qapp, qtbot, tmp_path,
                                                            omni_server: ThreadedOmniServer):
    h = Harness(tmp_path, omni_server.url)
    h.store.settings.tts.voice = "ryan"
    h.box.sync_from_settings()

    async def scenario():
        type_and_enter(qtbot, h.box, "Hello there. How are you?")
        await wait_until(lambda: h.spoken, 10, "spoken")
        await wait_until(lambda: h.controller.status.text == "Ready.", 10, "the reply to end")
        await h.controller.aclose()

    run_async(qapp, scenario)
    assert h.spoken == ["Hello there. How are you?"]
    assert h.box.text_edit.toPlainText() == ""  # cleared for the next reply
    (session,) = omni_server.sessions
    assert session.config.voice == "ryan" and session.config.language == "English"
    assert "".join(session.texts) == "Hello there. How are you?"
    assert h.pcm() == bytes(session.pcm) and len(session.pcm) > 0
    assert [(s.state, s.text) for s in h.statuses][:2] == [
        (SpeakerState.CONNECTING, OPENING_OUTPUT),
        (SpeakerState.CONNECTING, "Connecting to the voice service…")]
    assert h.statuses[2].state is SpeakerState.SPEAKING
    assert h.voice.said == []


def test_shift_enter_starts_a_new_line_and_speaks_nothing(qapp, qtbot, tmp_path):
    h = Harness(tmp_path, "")
    focus(qtbot, h.box.text_edit)
    qtbot.keyClicks(h.box.text_edit, "first line")
    qtbot.keyClick(h.box.text_edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(h.box.text_edit, "second line")
    assert h.box.text_edit.toPlainText() == "first line\nsecond line"
    assert h.controller.pending == 0 and h.spoken == []

    async def scenario():  # Enter now speaks both lines as one reply
        qtbot.keyClick(h.box.text_edit, Qt.Key.Key_Enter)
        await wait_until(lambda: h.voice.said, 5, "the local voice")
        await h.controller.aclose()

    run_async(qapp, scenario)
    assert h.voice.said == ["first line\nsecond line"]


def test_phrases_add_edit_reorder_persist_and_one_click_speaks(qapp, qtbot, tmp_path):
    h = Harness(tmp_path, "")
    box = h.box
    for text in ("Yes", "No", "Give me a moment"):
        box.text_edit.setPlainText(text)
        qtbot.mouseClick(box.add_button, Qt.MouseButton.LeftButton)
    assert h.saved().tts.phrases == ["Yes", "No", "Give me a moment"]

    # Edit in place from the keyboard: select "No", F2, type, Enter.
    focus(qtbot, box.phrase_list)
    box.phrase_list.setCurrentRow(1)
    qtbot.keyClick(box.phrase_list, Qt.Key.Key_F2)
    editor = box.phrase_list.findChild(QLineEdit)
    assert editor is not None and editor.hasFocus()
    editor.selectAll()
    qtbot.keyClicks(editor, "No, thank you")
    qtbot.keyClick(editor, Qt.Key.Key_Return)  # the delegate commits on the next loop turn
    qtbot.waitUntil(lambda: box.tts.phrases[1] == "No, thank you", timeout=2000)
    assert h.saved().tts.phrases == ["Yes", "No, thank you", "Give me a moment"]

    # Reorder: the Move up button, Alt+Down, then a drop (what dragging does to the model).
    box.phrase_list.setCurrentRow(2)
    qtbot.mouseClick(box.up_button, Qt.MouseButton.LeftButton)
    assert h.saved().tts.phrases == ["Yes", "Give me a moment", "No, thank you"]
    box.phrase_list.setCurrentRow(0)
    focus(qtbot, box.phrase_list)
    qtbot.keyClick(box.phrase_list, Qt.Key.Key_Down, Qt.KeyboardModifier.AltModifier)
    assert h.saved().tts.phrases == ["Give me a moment", "Yes", "No, thank you"]
    root = box.phrase_list.rootIndex()
    assert box.phrase_list.model().moveRow(root, 2, root, 0)
    assert h.saved().tts.phrases == ["No, thank you", "Give me a moment", "Yes"]

    # Remove with the Delete key on the list.
    box.phrase_list.setCurrentRow(1)
    qtbot.keyClick(box.phrase_list, Qt.Key.Key_Delete)
    assert h.saved().tts.phrases == ["No, thank you", "Yes"]

    async def scenario():
        item = box.phrase_list.item(1)
        rect = box.phrase_list.visualItemRect(item)
        qtbot.mouseClick(box.phrase_list.viewport(), Qt.MouseButton.LeftButton,
                         pos=rect.center())
        await wait_until(lambda: h.spoken == ["Yes"], 5, "the clicked phrase")
        box.phrase_list.setCurrentRow(0)
        qtbot.keyClick(box.phrase_list, Qt.Key.Key_Return)
        await wait_until(lambda: len(h.spoken) == 2, 5, "the phrase chosen with Enter")
        await h.controller.aclose()

    run_async(qapp, scenario)
    assert h.spoken == ["Yes", "No, thank you"]
    assert h.voice.said == ["Yes", "No, thank you"]


def test_stop_cancels_the_reply_and_drops_the_queue(qapp, qtbot, tmp_path,
                                                   omni_server: ThreadedOmniServer):
    omni_server.behavior.realtime_factor = 1.0  # the server "generates" in real time
    h = Harness(tmp_path, omni_server.url)

    async def scenario():
        type_and_enter(qtbot, h.box, LONG)
        type_and_enter(qtbot, h.box, "This one is queued.")
        await wait_until(lambda: h.controller.status.state is SpeakerState.SPEAKING, 10,
                         "speaking")
        qtbot.mouseClick(h.box.stop_button, Qt.MouseButton.LeftButton)
        await wait_until(lambda: h.box.status_label.text() == "Stopped.", 5, "stopped")
        await wait_until(lambda: omni_server.sessions[0].ended.is_set(), 5, "stream closed")
        await h.controller.aclose()

    run_async(qapp, scenario)
    assert h.spoken == [LONG]  # the queued reply was dropped
    assert len(omni_server.sessions) == 1
    assert omni_server.sessions[0].closed_by == "client"
    assert len(omni_server.sessions[0].sentences) < 12


def test_esc_right_after_enter_stops_the_reply_while_the_output_opens(qapp, qtbot, tmp_path,
                                                                    pulse):
    """The first reply waits seconds for the output to warm up; Esc then must stop it, as
    Stop does, not hide the box and let it play."""
    h = Harness(tmp_path, "", sink_factory=Player)

    async def scenario():
        type_and_enter(qtbot, h.box, "Please hold on a second.")
        await wait_until(lambda: h.controller.pending == 0, 5, "the worker to take the reply")
        assert h.box.status_label.text() == OPENING_OUTPUT
        qtbot.keyClick(h.box.text_edit, Qt.Key.Key_Escape)
        assert h.box.isVisible()
        assert h.box.status_label.text() == "Stopped."
        type_and_enter(qtbot, h.box, "The next one.")  # spoken once the output is open
        await wait_until(lambda: h.spoken, 15, "the next reply")
        await h.controller.aclose()

    run_async(qapp, scenario)
    assert h.spoken == h.voice.said == ["The next one."]


def test_endpoint_down_uses_this_computers_voice_and_says_so(qapp, qtbot, tmp_path):
    h = Harness(tmp_path, refused_url())

    async def scenario():
        type_and_enter(qtbot, h.box, "Can you hear me?")
        await wait_until(lambda: h.voice.said, 10, "the local voice")
        await wait_until(lambda: h.controller.status.state is SpeakerState.IDLE, 5, "idle")
        await h.controller.aclose()

    run_async(qapp, scenario)
    assert h.voice.said == ["Can you hear me?"]
    assert h.spoken == ["Can you hear me?"]
    assert h.box.status_label.text() == FALLBACK
    assert "endpoint down — using this computer's voice" in h.box.status_label.text()
    assert "unavailable" in h.box.status_label.toolTip()  # the reason, for who wants it
    assert any(s.local_voice and s.state is SpeakerState.SPEAKING for s in h.statuses)


def test_a_wrong_endpoint_setting_is_named_and_the_local_voice_speaks(qapp, qtbot, tmp_path):
    h = Harness(tmp_path, "http://not-a-voice-endpoint")

    async def scenario():
        type_and_enter(qtbot, h.box, "Hello.")
        await wait_until(lambda: h.voice.said, 10, "the local voice")
        await h.controller.aclose()

    run_async(qapp, scenario)
    assert h.box.status_label.text() == BAD_ENDPOINT
    assert h.box.status_label.toolTip()  # the parser's reason
    # the default output, opened for this computer's voice (rendered where it can be)
    assert h.devices_asked == [None]


def test_voice_and_language_pickers_list_qwen_values_and_persist(qapp, qtbot, tmp_path,
                                                                 omni_server: ThreadedOmniServer):
    h = Harness(tmp_path, omni_server.url)
    box = h.box
    assert [box.voice_combo.itemData(i) for i in range(box.voice_combo.count())] == list(VOICES)
    assert ([box.language_combo.itemData(i) for i in range(box.language_combo.count())]
            == list(LANGUAGES))
    assert box.voice_combo.currentData() == "vivian"
    assert box.language_combo.currentData() == "English"

    focus(qtbot, box.voice_combo)
    qtbot.keyClick(box.voice_combo, Qt.Key.Key_Up)  # keyboard only
    box.language_combo.setCurrentIndex(box.language_combo.findData("German"))
    saved = h.saved()
    assert saved.tts.voice == VOICES[VOICES.index("vivian") - 1]
    assert saved.tts.language == "German"

    async def scenario():  # the next reply uses them
        type_and_enter(qtbot, box, "Guten Tag.")
        await wait_until(lambda: omni_server.sessions and omni_server.sessions[0].config, 10,
                         "the session config")
        await wait_until(lambda: h.controller.status.text == "Ready.", 10, "the reply")
        await h.controller.aclose()

    run_async(qapp, scenario)
    config = omni_server.sessions[0].config
    assert (config.voice, config.language) == (saved.tts.voice, "German")
    assert h.voice.languages[-1] == "German"

    # A change made elsewhere (the settings dialog) shows in the pickers.
    new = h.store.copy()
    new.tts.voice, new.tts.language = "aiden", "Japanese"
    h.store.replace(new)
    assert (box.voice_combo.currentData(), box.language_combo.currentData()) == (
        "aiden", "Japanese")

    # The voices are the endpoint's: without one (the computer's voice) there is no choice,
    # until a replies endpoint the app started serves.
    def voices() -> list[str | None]:
        return [box.voice_combo.itemData(i) for i in range(box.voice_combo.count())]

    new = h.store.copy()
    new.tts.endpoint = ""
    h.store.replace(new)
    assert voices() == [None] and box.voice_combo.currentText() == "This computer's voice"
    assert "Settings → Replies" in box.voice_combo.accessibleDescription()
    assert box.language_combo.isEnabled()  # the computer's voice speaks it too
    assert h.saved().tts.voice == "aiden"  # the choice waits for an endpoint
    h.controller.set_endpoint_override(omni_server.url)
    assert voices() == list(VOICES) and box.voice_combo.currentData() == "aiden"
    assert not box.voice_combo.accessibleDescription()
    h.controller.set_endpoint_override(None)
    assert voices() == [None]


def test_output_picker_lists_devices_and_the_reply_plays_on_the_chosen_one(
        qapp, qtbot, tmp_path, pulse, omni_server: ThreadedOmniServer):
    devices = list_output_devices()
    players: list[Player] = []

    def player(device):
        players.append(Player(device))
        return players[-1]

    h = Harness(tmp_path, omni_server.url, sink_factory=player, devices=devices)
    combo = h.box.output_combo
    names = [combo.itemText(i) for i in range(combo.count())]
    assert names[0] == SYSTEM_DEFAULT
    assert names[1:] == list(dict.fromkeys(d.name for d in devices)) and names[1:]
    combo.setCurrentIndex(1)
    assert h.saved().tts.output_device == names[1]

    async def scenario():
        type_and_enter(qtbot, h.box, "Played on the chosen output.")
        await wait_until(lambda: h.spoken, 10, "spoken")
        await wait_until(lambda: h.controller.status.text == "Ready.", 15, "the reply")
        await h.controller.aclose()

    run_async(qapp, scenario)
    (used,) = players
    assert used.device is not None and used.device.name == names[1]
    assert used.stats().samples_played > 0


def test_this_computers_voice_plays_on_the_chosen_output_too(qapp, qtbot, tmp_path, pulse):
    """No voice endpoint (a newcomer's set-up) and a device picked, say a call's virtual
    microphone: the computer's voice must reach that device, not the default output."""
    devices = list_output_devices()
    players: list[Player] = []

    def player(device):
        players.append(Player(device))
        return players[-1]

    h = Harness(tmp_path, "", sink_factory=player, devices=devices,
                rendering_voice_factory=rendering_voice)
    h.box.output_combo.setCurrentIndex(1)
    chosen = h.box.output_combo.currentText()

    async def scenario():
        type_and_enter(qtbot, h.box, "The computer's voice, on the chosen output.")
        await wait_until(lambda: h.spoken, 10, "spoken")
        await wait_until(lambda: h.controller.status.text == "Ready.", 20, "the reply")
        await h.controller.aclose()

    run_async(qapp, scenario)
    (used,) = players
    assert used.device is not None and used.device.name == chosen
    assert used.stats().samples_played > 22_050  # espeak-ng's second or more of speech
    assert h.voice.said == []  # not the platform voice, which plays on the default output
    assert any(s.local_voice and s.text == NO_ENDPOINT for s in h.statuses)


def test_where_the_computers_voice_cannot_reach_the_chosen_output_the_status_says_so(
        qapp, qtbot, tmp_path, pulse):
    devices = list_output_devices()
    h = Harness(tmp_path, "", sink_factory=Player, devices=devices,
                rendering_voice_factory=lambda sink, language: None)
    h.box.output_combo.setCurrentIndex(1)

    async def scenario():
        type_and_enter(qtbot, h.box, "Only on the default output.")
        await wait_until(lambda: h.voice.said, 10, "the platform voice")
        await wait_until(lambda: h.controller.status.text == DEFAULT_OUTPUT_ONLY, 10,
                         "the status")
        h.store.settings.tts.output_device = "Unplugged headset"
        type_and_enter(qtbot, h.box, "And now the headset is gone.")
        await wait_until(lambda: len(h.voice.said) == 2, 10, "the platform voice again")
        await wait_until(lambda: h.controller.status.text == NO_OUTPUT, 10, "the status")
        await h.controller.aclose()

    run_async(qapp, scenario)
    assert h.voice.said == ["Only on the default output.", "And now the headset is gone."]
    assert "Unplugged headset" in h.controller.status.detail


def test_every_control_has_an_accessible_name_and_tab_reaches_it(qapp, qtbot, tmp_path):
    h = Harness(tmp_path, "")
    h.store.settings.tts.phrases = ["Hi"]
    h.box.sync_from_settings()
    controls = [w for w in h.box.findChildren(QWidget)
                if isinstance(w, QAbstractButton | QComboBox) or w in (
                    h.box.text_edit, h.box.phrase_list, h.box.status_label)]
    assert len(controls) >= 13
    assert all(w.accessibleName() for w in controls), [
        w.objectName() or type(w).__name__ for w in controls if not w.accessibleName()]

    focus(qtbot, h.box.text_edit)
    reached = set()
    for _ in range(40):
        reached.add(QApplication.focusWidget())
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
    assert h.box.voice_combo.currentText() == "This computer's voice"  # no voice endpoint
    assert {w for w in controls if w.isEnabled()} <= reached
    assert h.box.voice_combo in reached  # it says what speaks, to a screen reader too


def test_output_follows_the_setting_and_is_released_when_idle(qapp, qtbot, tmp_path,
                                                              omni_server: ThreadedOmniServer):
    h = Harness(tmp_path, omni_server.url,
                devices=[OutputDevice(3, "Headset", "ALSA", 48_000.0, 2)])
    h.controller.idle_close_seconds = 0.3
    assert [h.box.output_combo.itemText(i) for i in range(h.box.output_combo.count())] == [
        SYSTEM_DEFAULT, "Headset"]

    async def scenario():
        type_and_enter(qtbot, h.box, "On the default output.")
        await wait_until(lambda: h.spoken, 10, "the first reply")
        await wait_until(lambda: h.controller.status.text == "Ready.", 10, "its end")
        h.box.output_combo.setCurrentIndex(1)  # picked between replies
        type_and_enter(qtbot, h.box, "On the headset.")
        await wait_until(lambda: len(h.spoken) == 2, 10, "the second reply")
        await wait_until(lambda: h.controller.sink is None, 5, "the output released when idle")
        await h.controller.aclose()

    run_async(qapp, scenario)
    assert h.devices_asked == [None, "Headset"]
    assert h.spoken == ["On the default output.", "On the headset."]


def test_a_reply_whose_output_is_unplugged_says_so_and_the_next_one_plays(
        qapp, qtbot, tmp_path, pulse, omni_server: ThreadedOmniServer):
    players: list[Player] = []

    def player(device):
        players.append(Player(device))
        return players[-1]

    with Headset(pulse, "captioner_phones", "Phones"):
        h = Harness(tmp_path, omni_server.url, sink_factory=player,
                    devices=list_output_devices())
        combo = h.box.output_combo
        names = [combo.itemText(i) for i in range(combo.count())]
        combo.setCurrentIndex(names.index("Phones (captioner_phones)"))
        assert h.saved().tts.output_device == "Phones (captioner_phones)"

        async def scenario():
            type_and_enter(qtbot, h.box, "A long reply. " * 20)  # about eight seconds
            await wait_until(lambda: players and players[0].stats().samples_played > 4800,
                             15, "the reply to play")
            pulse.end_streams(os.getpid(), "sink-input")  # unplugged, and plugged back
            await wait_until(lambda: h.controller.status.text == OUTPUT_GONE, 10,
                             "the reply box to say so")
            assert "Phones" in h.controller.status.detail
            type_and_enter(qtbot, h.box, "And the next one plays.")
            await wait_until(lambda: len(players) == 2 and h.controller.status.text
                             == "Ready." and len(h.spoken) == 2, 15, "the next reply")
            await h.controller.aclose()

        run_async(qapp, scenario, timeout=60)
    assert players[1].failure is None and players[1].stats().samples_played > 0
