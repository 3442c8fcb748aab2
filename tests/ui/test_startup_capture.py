"""Start-up: what is said while the on-device model still loads is captioned, not lost.

Real audio: tone words played into the PulseAudio null sink and captured from its
monitor, right after the user asked for captions, while the engine's load is held
back until the clip has finished playing.
"""

from __future__ import annotations

import asyncio
import threading

from captioner.audio.capture import AudioCapture
from captioner.audio.files import FileSource
from captioner.captioning import EmbeddedEngine
from captioner.ui.controller import CaptionController, CaptionStatus
from tests.support.transcribers import RecordingFactory
from tests.ui.conftest import WORDS, run_async, wait_until

LOAD_TIMEOUT = 60.0


class StartedCapture(AudioCapture):
    """The app's real capture, telling the test when its streams run."""

    started: asyncio.Event

    async def start(self) -> None:
        await super().start()
        self.started.set()


def test_words_said_while_the_model_loads_are_captioned(qapp, store, pulse, tone_wav):
    gate = threading.Event()  # the model "finishes loading" only when the test says so
    factory = RecordingFactory()

    def slow_load(_recognition):
        if not gate.wait(LOAD_TIMEOUT):
            raise TimeoutError("the test never released the model")
        return factory

    async def scenario():
        started = asyncio.Event()

        def source(audio):
            capture = StartedCapture.from_settings(audio)
            capture.started = started
            return capture

        statuses: list[str] = []
        engine = EmbeddedEngine(store.settings, load=slow_load)
        controller = CaptionController(store, embedded=engine, source_factory=source)
        controller.status.connect(lambda s: statuses.append(s.state))
        controller.start()
        try:
            await asyncio.wait_for(started.wait(), 20)  # fails if capture waits for the model
            assert controller.current == CaptionStatus("loading", "Loading speech model…")
            await asyncio.to_thread(pulse.play, tone_wav)
            assert not engine.ready
            gate.set()
            await wait_until(lambda: controller.current.state == "listening", 20, "listening")
            controller.stop()  # the final commit flushes every word
            await controller.wait_stopped(30)
        finally:
            gate.set()
            await controller.shutdown()
        heard = " ".join(line.text for line in controller.lines).split()
        assert heard == WORDS
        assert statuses[:2] == ["loading", "listening"]

    run_async(qapp, scenario, timeout=120)


def test_a_model_that_cannot_load_is_reported_and_capture_stops(qapp, store, tone_wav):
    def broken(_recognition):
        raise RuntimeError("model.bin is truncated")

    async def scenario():
        sources: list[FileSource] = []

        def source(_audio):
            sources.append(FileSource(tone_wav, chunk_bytes=2048, realtime=True))
            return sources[-1]

        controller = CaptionController(store, embedded=EmbeddedEngine(store.settings, broken),
                                       source_factory=source)
        controller.start()
        await wait_until(lambda: not controller.running, 20, "the run to end")
        assert controller.current == CaptionStatus(
            "error", "The on-device speech model could not load: model.bin is truncated")
        await controller.shutdown()

    run_async(qapp, scenario)
