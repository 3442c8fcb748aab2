"""Settings changed while someone speaks: the captions switch over and lose no word.

Real audio: tone words played into the PulseAudio null sink, captured from its
monitor by the app's own capture, which here takes 1.5 s to open (a Bluetooth
headset does). Changing a recognition setting restarts the caption session; the
capture goes on into the new session instead of being closed and opened again.
A gain change is applied to the running capture without any restart.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

import numpy as np

from captioner.audio.capture import AudioCapture
from captioner.captioning import EmbeddedEngine
from captioner.ui.app import CaptionerApp
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


def speak_and_change(qapp, store, pulse, tmp_path, change) -> tuple[list[str], RecordingFactory]:
    """Play the words; a second into them, ``change`` the settings. What was captioned."""
    wav = words_wav(tmp_path)
    factory = RecordingFactory()
    SlowCapture.opened = []

    async def scenario():
        app = CaptionerApp(store, embedded=EmbeddedEngine(store.settings, lambda _r: factory),
                           source_factory=SlowCapture.from_settings, tray_available=False)
        app.start()
        try:
            await wait_until(lambda: app.controller.current.state == "listening", 20,
                             "listening")
            playing = asyncio.ensure_future(asyncio.to_thread(pulse.play, wav))
            await wait_until(lambda: spoken_seconds(received(factory)) > 1.2, 20,
                             "the first words to reach the engine")
            new = store.copy()
            change(new)
            store.replace(new)
            await playing
            await asyncio.sleep(0.5)  # the words' last chunks reach the capture
            app.controller.stop()  # the final commit flushes every word
            await app.controller.wait_stopped(30)
        finally:
            await app.shutdown()
        return " ".join(line.text for line in app.controller.lines).split()

    heard = run_async(qapp, scenario, timeout=120)
    return heard, factory


def test_a_new_session_goes_on_from_the_running_capture(qapp, store, pulse, tmp_path):
    def change(new):
        new.recognition.stall_seconds = 9.0  # any recognition change restarts the session

    heard, factory = speak_and_change(qapp, store, pulse, tmp_path, change)
    assert heard == WORDS  # every word once, none lost in the switch
    assert len(factory.made) == 2  # a second session (request) took over ...
    assert len(SlowCapture.opened) == 1  # ... from the capture that was running
    # It waited for the pause (asked for during the fourth word), so no word was cut.
    assert tone_words(received(factory, 0)) == WORDS[:8]
    assert tone_words(received(factory, 1)) == WORDS[8:]


def test_a_gain_change_applies_to_the_running_capture(qapp, store, pulse, tmp_path):
    def change(new):
        new.audio.system_gain = 1.5

    heard, factory = speak_and_change(qapp, store, pulse, tmp_path, change)
    assert len(factory.made) == 1 and len(SlowCapture.opened) == 1  # no restart at all
    assert heard == WORDS
    pcm = received(factory)
    start = len(pcm) - round(spoken_seconds(pcm) * RATE)
    early = np.abs(pcm[start : start + RATE]).max()  # the first words, at gain 1
    late = np.abs(pcm[-3 * RATE :]).max()  # the last ones, at 1.5
    assert abs(late / early - 1.5) < 0.05
