"""Settings changed while someone speaks: the captions switch over and lose no word.

Real audio: tone words played into the PulseAudio null sink, captured from its
monitor by the app's own capture, which here takes 1.5 s to open (a Bluetooth
headset does). Changing the endpoint or a recognition option moves the running
caption session to the new endpoint, with the audio it holds; a change that needs a
new session hands the running capture to it instead of closing and opening the
device again. A gain change is applied to the running capture.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path
from typing import ClassVar

import numpy as np

from captioner.audio.capture import AudioCapture, State
from captioner.audio.dual import DualCapture
from captioner.audio.errors import CaptureError
from captioner.captioning import EmbeddedEngine
from captioner.realtime.captions import CaptionLine
from captioner.settings import AudioSettings
from captioner.transcript.journal import journal_files, read_journal
from captioner.ui.app import CaptionerApp
from captioner.ui.history import CURRENT
from tests.support.speech import write_wav
from tests.support.transcribers import (
    VOCABULARY,
    RecordingFactory,
    ToneWordTranscriber,
    tone_words_pcm,
)
from tests.ui.conftest import run_async, wait_until

WORDS = VOCABULARY[:16]  # 5.8 s of tone words (and a pause)
OPEN_SECONDS = 1.5
RATE = 16_000


class SlowCapture(AudioCapture):
    """The app's real capture, on a device that takes a while to open."""

    opened: ClassVar[list[SlowCapture]] = []

    async def start(self) -> None:
        await asyncio.sleep(OPEN_SECONDS)
        await super().start()
        SlowCapture.opened.append(self)


def words_wav(tmp_path):
    """The words, with a pause after the eighth (the others follow each other closely)."""
    pcm = b"".join([tone_words_pcm(WORDS[:8]), bytes(2 * RATE * 6 // 10),
                    tone_words_pcm(WORDS[8:]), bytes(RATE)])
    return write_wav(tmp_path / "words.wav", np.frombuffer(pcm, "<i2") / 32768, RATE)


def tone_words(pcm: np.ndarray) -> list[str]:
    transcriber = ToneWordTranscriber()
    return (transcriber.push(pcm.astype("<i2").tobytes()) + transcriber.finish()).split()


def spoken_seconds(pcm: np.ndarray) -> float:
    """Audio received since the first word began."""
    loud = np.flatnonzero(np.abs(pcm) > 3000)
    return (len(pcm) - loud[0]) / RATE if len(loud) else 0.0


def received(factory: RecordingFactory, request: int = 0) -> np.ndarray:
    """The audio a request's transcriber got (none before the server made it)."""
    pcm = bytes(factory.made[request].received) if len(factory.made) > request else b""
    return np.frombuffer(pcm, "<i2").astype(np.float32)


@dataclass
class Heard:
    words: list[str]  # the finalized captions
    factory: RecordingFactory  # one transcriber per request the engine served
    runs: int  # captioning runs (sessions) the words went through
    lines: list[CaptionLine]  # every finalized line, as the controller kept them
    history: list[CaptionLine]  # the history window's "This session"
    journals: list[Path]  # the transcript files written

    def one_transcript(self) -> None:
        """A restart goes on with the same transcript: one journal with every line, and
        times that go on from the run before (the history and exports sort by them)."""
        words = " ".join(line.text for line in self.lines).split()
        for speaker in {line.speaker for line in self.lines}:  # each voice's lines follow
            said = [line for line in self.lines if line.speaker == speaker]
            assert all(b.start >= a.end for a, b in pairwise(said)), said
        assert self.history == self.lines  # in the order said, none moved to the top
        assert len(self.journals) == 1
        journal = read_journal(self.journals[0])
        assert journal.finished and " ".join(line.text for line in journal.lines).split() == words
        assert [line.start for line in journal.lines] == [round(line.start, 3)
                                                          for line in self.lines]


def slow_source(audio: AudioSettings) -> SlowCapture | DualCapture:
    if not audio.two_streams:
        return SlowCapture.from_settings(audio)
    return DualCapture(*(SlowCapture.from_settings(replace(audio, source=role))
                         for role in ("mic", "system")))


def speak_and_change(qapp, store, pulse, tmp_path, change, online: bool = True,
                     speaker: str | None = None, anyone: bool = False,
                     source=None) -> Heard:
    """Play the words; a second or so into them, ``change`` the settings. ``speaker``:
    the words of that speaker's lines only (two-stream mode); ``anyone``: of all lines."""
    wav = words_wav(tmp_path)
    factory = RecordingFactory()
    SlowCapture.opened = []

    async def scenario():
        app = CaptionerApp(store, embedded=EmbeddedEngine(store.settings, lambda _r: factory),
                           source_factory=source or slow_source, tray_available=False)
        app.start()
        runs = {app.controller.task}
        try:
            await wait_until(lambda: SlowCapture.opened and (
                app.controller.current.state == "listening" or not online), 20, "capturing")
            playing = asyncio.ensure_future(asyncio.to_thread(pulse.play, wav))
            if online:
                await wait_until(lambda: max(spoken_seconds(received(factory, i))
                                             for i in range(len(factory.made) or 1)) > 1.2,
                                 20, "the first words to reach the engine")
            else:  # the endpoint refuses: the session holds what it hears
                await asyncio.sleep(1.5)
            new = store.copy()
            change(new)
            store.replace(new)
            await playing
            runs.add(app.controller.task)
            await asyncio.sleep(0.5)  # the words' last chunks reach the capture
            app.controller.stop()  # the final commit flushes every word
            await app.controller.wait_stopped(30)
        finally:
            await app.shutdown()
        lines = [line for line in app.controller.lines if anyone or line.speaker == speaker]
        return Heard(" ".join(line.text for line in lines).split(), factory, len(runs),
                     list(app.controller.lines), list(app.history.sessions[CURRENT].lines),
                     journal_files(store.settings.transcript.folder))

    return run_async(qapp, scenario, timeout=120)


def test_a_new_endpoint_goes_on_with_the_running_session(qapp, store, pulse, tmp_path):
    def change(new):
        new.recognition.stall_seconds = 9.0  # recognition options: a switch, not a restart

    heard = speak_and_change(qapp, store, pulse, tmp_path, change)
    assert heard.words == WORDS  # every word once, none lost in the switch
    assert heard.runs == 1 and len(SlowCapture.opened) == 1  # one session, one capture ...
    assert len(heard.factory.made) == 2  # ... whose next request went to the new endpoint


def test_what_an_unreachable_endpoint_held_goes_to_the_new_one(qapp, store, pulse, tmp_path):
    store.settings.recognition.endpoint = "ws://127.0.0.1:9/v1/realtime"  # refused

    def change(new):
        new.recognition.endpoint = "embedded"

    heard = speak_and_change(qapp, store, pulse, tmp_path, change, online=False)
    assert heard.words == WORDS  # the words said while it was unreachable too
    assert heard.runs == 1 and len(SlowCapture.opened) == 1


def test_a_restart_goes_on_from_the_running_capture_at_a_pause(qapp, store, pulse, tmp_path):
    def change(new):
        new.audio.mic_label = "Me"  # the speakers' names: a new session, the same capture

    heard = speak_and_change(qapp, store, pulse, tmp_path, change)
    assert heard.words == WORDS  # every word once, none lost in the switch
    assert heard.runs == 2 and len(SlowCapture.opened) == 1
    # It waited for the pause (asked for during the fourth word), so no word was cut.
    assert tone_words(received(heard.factory, 0)) == WORDS[:8]
    assert tone_words(received(heard.factory, 1)) == WORDS[8:]
    heard.one_transcript()


def test_a_gain_change_applies_to_the_running_capture(qapp, store, pulse, tmp_path):
    def change(new):
        new.audio.system_gain = 1.5

    heard = speak_and_change(qapp, store, pulse, tmp_path, change)
    assert heard.words == WORDS
    assert heard.runs == 1 and len(heard.factory.made) == 1  # no restart at all
    pcm = received(heard.factory)
    start = len(pcm) - round(spoken_seconds(pcm) * RATE)
    # The tones' level, not their peak sample: an onset rings a few samples higher.
    early = np.percentile(np.abs(pcm[start : start + RATE]), 99)  # the first words, gain 1
    late = np.percentile(np.abs(pcm[-3 * RATE :]), 99)  # the last ones, at 1.5
    assert abs(late / early - 1.5) < 0.05


def test_aws_settings_leave_on_device_captions_alone(qapp, store, pulse, tmp_path):
    def change(new):
        new.aws.region = "eu-west-1"  # the endpoint is on this computer: nothing to redo

    heard = speak_and_change(qapp, store, pulse, tmp_path, change)
    assert heard.words == WORDS
    assert heard.runs == 1 and len(heard.factory.made) == 1


def test_both_sides_of_a_call_switch_endpoint_without_losing_words(qapp, store, pulse,
                                                                  tmp_path):
    audio = store.settings.audio
    audio.source, audio.speakers, audio.echo_cancel = "both", True, False
    audio.mic_device = pulse.microphone("captioner_quiet_mic")  # hears nothing
    audio.system_device = pulse.monitor

    def change(new):
        new.recognition.stall_seconds = 9.0

    heard = speak_and_change(qapp, store, pulse, tmp_path, change, speaker="Others")
    assert heard.words == WORDS  # the others' words (system audio), once each
    assert heard.runs == 1 and len(SlowCapture.opened) == 2  # its two devices, opened once
    assert len(heard.factory.made) == 4  # each side's next request on the new endpoint


def test_a_new_device_opens_before_the_old_one_closes(qapp, store, pulse, tmp_path):
    def change(new):
        new.audio.system_device = pulse.monitor  # named: the same sound, another device

    heard = speak_and_change(qapp, store, pulse, tmp_path, change)
    assert heard.words == WORDS  # none lost while it opened, none heard by both
    assert heard.runs == 2 and len(SlowCapture.opened) == 2
    # The new session went on at the pause, where the old one stopped.
    assert tone_words(received(heard.factory, 0)) == WORDS[:8]
    assert tone_words(received(heard.factory, 1)) == WORDS[8:]


def test_turning_on_both_sides_of_a_call_loses_no_word(qapp, store, pulse, tmp_path):
    audio = store.settings.audio
    audio.mic_device = pulse.microphone("captioner_quiet_mic")  # hears nothing
    audio.system_device = pulse.monitor

    def change(new):
        new.audio.source, new.audio.speakers, new.audio.echo_cancel = "both", True, False

    heard = speak_and_change(qapp, store, pulse, tmp_path, change, anyone=True)
    assert heard.words == WORDS  # system audio's words, then the others' lines: once each
    assert heard.runs == 2 and len(SlowCapture.opened) == 3  # one device, then both
    heard.one_transcript()


class OneAtATimeCapture(SlowCapture):
    """A device that cannot be opened while another capture is open."""

    async def start(self) -> None:
        if any(other.state is State.RUNNING for other in SlowCapture.opened):
            raise CaptureError("device busy")
        await super().start()


def test_a_device_that_cannot_open_twice_opens_after_the_old_one(qapp, store, pulse,
                                                                 tmp_path):
    def change(new):
        new.audio.system_device = pulse.monitor

    heard = speak_and_change(qapp, store, pulse, tmp_path, change,
                             source=OneAtATimeCapture.from_settings)
    assert heard.runs == 2 and len(SlowCapture.opened) == 2  # the captions went on
    assert heard.words[:3] == WORDS[:3] and heard.words[-3:] == WORDS[-3:]
