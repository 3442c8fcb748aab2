"""A device that goes away while captions run: the app's real capture on PulseAudio,
the device a null sink that is unplugged (its streams ended, as where no sound server
moves them elsewhere) and plugged in again.

Every word said before, meanwhile (into the default device standing in) and after
appears once, in one transcript, with a line where there was no audio.
"""

from __future__ import annotations

import asyncio
import os
from itertools import pairwise

import numpy as np

from captioner.audio.capture import AudioCapture
from captioner.audio.errors import DeviceNotFound
from captioner.captioning import EmbeddedEngine
from captioner.realtime.captions import LineKind
from captioner.transcript.journal import journal_files, read_journal
from captioner.ui.app import CaptionerApp
from tests.support.pulse import Headset
from tests.support.speech import write_wav
from tests.support.transcribers import VOCABULARY, RecordingFactory, tone_words_pcm
from tests.ui.conftest import run_async, wait_until

RATE = 16_000


def words_wav(path, words: list[str]):
    pcm = tone_words_pcm(words) + bytes(2 * RATE)  # and a pause: the handover waits for one
    return write_wav(path, np.frombuffer(pcm, "<i2") / 32768, RATE)


def with_headset(qapp, pulse, scenario):
    """Run ``scenario(headset)``; its caption lines, their words, and the gap lines."""
    with Headset(pulse, "captioner_headset", "USB_Headset") as headset:
        lines = run_async(qapp, lambda: scenario(headset), timeout=150)
    said = [line for line in lines if line.kind is LineKind.SPEECH]
    return (lines, " ".join(line.text for line in said).split(),
            [line for line in lines if line.kind is LineKind.GAP])


def test_a_picked_device_unplugged_has_the_default_stand_in_until_it_is_back(
        qapp, store, pulse, tmp_path):
    before, meanwhile, after = VOCABULARY[:5], VOCABULARY[5:10], VOCABULARY[10:15]
    factory = RecordingFactory()
    notices: list[str] = []
    states: list[str] = []

    async def scenario(headset: Headset):
        store.settings.audio.source = "system"
        store.settings.audio.system_device = headset.monitor
        app = CaptionerApp(store, embedded=EmbeddedEngine(store.settings, lambda _r: factory),
                           tray_available=True)
        app.controller.notice.connect(notices.append)
        app.controller.status.connect(lambda status: states.append(status.state))
        pid = os.getpid()
        app.start()
        try:
            await wait_until(lambda: app.controller.current.state == "listening"
                             and pulse.recordings_of(pid) == 1, 30, "capturing the headset")
            await asyncio.to_thread(pulse.play, words_wav(tmp_path / "1.wav", before),
                                    headset.name)
            await asyncio.sleep(0.5)
            requests = len(factory.made)
            headset.unplug(pid)
            await wait_until(lambda: any("is not there" in n for n in notices), 20,
                             "the default device to stand in")
            assert headset.monitor in notices[-1], notices
            await wait_until(lambda: app.controller.current.state == "listening", 10,
                             "captions on the default device")
            assert not [m for m in app.tray.messages if m[0] == "Audio device lost"]
            await asyncio.to_thread(pulse.play, words_wav(tmp_path / "2.wav", meanwhile))
            # the same session went on (a phrase said across the loss is read whole)
            assert len(factory.made) == requests and app.controller.current.state == "listening"
            headset.plug_in()
            await wait_until(lambda: notices[-1] == "" and app.controller.current.state
                             == "listening" and pulse.recordings_of(pid) == 1, 30,
                             "the headset to be taken back")
            await asyncio.to_thread(pulse.play, words_wav(tmp_path / "3.wav", after),
                                    headset.name)
            await asyncio.sleep(0.5)
            app.controller.stop()
            await app.controller.wait_stopped(30)
            assert states.count("idle") == 1  # only at the stop: going on never looks stopped
        finally:
            await app.shutdown()
        return list(app.controller.lines)

    lines, words, gaps = with_headset(qapp, pulse, scenario)
    assert words == before + meanwhile + after
    assert [gap.text for gap in gaps] == [
        "[the audio device went away: the default device stands in]"]
    assert all(b.start >= a.start for a, b in pairwise(lines))
    (journal,) = journal_files(store.settings.transcript.folder)
    assert [line.text for line in read_journal(journal).lines] == [
        line.text for line in lines]


def test_with_no_device_to_stand_in_captions_wait_and_go_on_when_it_is_back(
        qapp, store, pulse, tmp_path):
    before, after = VOCABULARY[:5], VOCABULARY[5:10]
    factory = RecordingFactory()
    states: list[str] = []
    levels: list[float] = []

    async def scenario(headset: Headset):
        def the_only_device(audio):  # this computer lists no other (the edge: PortAudio)
            if not headset.plugged:
                raise DeviceNotFound("System audio: no device of this kind.")
            return AudioCapture.from_settings(audio)

        store.settings.audio.source = "system"
        store.settings.audio.system_device = headset.monitor
        app = CaptionerApp(store, embedded=EmbeddedEngine(store.settings, lambda _r: factory),
                           source_factory=the_only_device, tray_available=True)
        app.controller.status.connect(lambda status: states.append(status.state))
        app.controller.level.connect(levels.append)
        pid = os.getpid()
        app.start()
        try:
            await wait_until(lambda: app.controller.current.state == "listening"
                             and pulse.recordings_of(pid) == 1, 30, "capturing the headset")
            await asyncio.to_thread(pulse.play, words_wav(tmp_path / "1.wav", before),
                                    headset.name)
            headset.unplug(pid)
            await wait_until(lambda: app.controller.current.state == "reconnecting", 10,
                             "waiting for the device")
            assert "Waiting for the audio device" in app.overlay.strip.state_label.text()
            assert app.actions.retry.isEnabled() and app.controller.running
            await asyncio.sleep(2.5)
            assert levels[-1] == -100.0  # the meter shows no audio
            lost = [m for m in app.tray.messages if m[0] == "Audio device lost"]
            assert len(lost) == 1 and "stopped by itself" in lost[0][1], lost
            headset.plug_in()
            await wait_until(lambda: app.controller.current.state == "listening", 15,
                             "captions to go on by themselves")
            await asyncio.to_thread(pulse.play, words_wav(tmp_path / "2.wav", after),
                                    headset.name)
            app.controller.stop()
            await app.controller.wait_stopped(30)
        finally:
            await app.shutdown()
        return list(app.controller.lines)

    lines, words, gaps = with_headset(qapp, pulse, scenario)
    assert words == before + after
    assert len(gaps) == 1 and gaps[0].text.endswith("s: the audio device was gone]"), gaps
    assert gaps[0].end - gaps[0].start >= 2.5
    at = lines.index(gaps[0])  # between the words before and after
    assert " ".join(line.text for line in lines[:at]).split() == before
    assert states.count("idle") == 1 and "error" not in states
    assert len(journal_files(store.settings.transcript.folder)) == 1
