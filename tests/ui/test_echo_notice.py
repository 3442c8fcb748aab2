"""An echo canceller whose native library cannot load: the overlay's notice line says
echo cancellation is off and why, once, while both speakers' captions go on."""

import asyncio
import threading

from captioner.audio.dual import DualCapture
from captioner.audio.echo import EchoCanceller
from captioner.ui.app import CaptionerApp
from tests.audio.test_capture import Opener
from tests.session.test_two_streams import MIC, SILENCE, SYSTEM, play
from tests.support.transcribers import tone_words_pcm
from tests.ui.conftest import run_async, wait_until

MISSING = "liblivekit_ffi.so: cannot open shared object file"


def missing_library():
    raise OSError(MISSING)


def test_a_canceller_that_cannot_load_is_a_notice_and_captions_go_on(qapp, store,
                                                                     realtime_server):
    settings = store.settings
    settings.audio.source, settings.audio.speakers = "both", True
    settings.recognition.endpoint = realtime_server.url
    opener = Opener()
    sides = {"system": tone_words_pcm(["charlie", "delta"]) + SILENCE * 3,
             "mic": SILENCE + tone_words_pcm(["alpha", "bravo"]) + SILENCE * 2}
    sides["mic"] += b"\0" * (len(sides["system"]) - len(sides["mic"]))

    def dual(audio):
        return DualCapture.from_settings(audio, [MIC, SYSTEM], opener,
                                         mic_filter=EchoCanceller(make_backend=missing_library))

    async def scenario():
        app = CaptionerApp(store, tray_available=False, source_factory=dual)
        notices = []
        app.controller.notice.connect(notices.append)
        app.start()
        await wait_until(lambda: len(opener.streams) == 2
                         and all(s.started for s in opener.streams.values()), 20, "capture")
        feeders = [threading.Thread(target=play, args=(opener.streams[side], pcm))
                   for side, pcm in sides.items()]
        for feeder in feeders:
            feeder.start()
        await asyncio.to_thread(lambda: [f.join() for f in feeders])
        await wait_until(lambda: {(x.speaker, x.text) for x in app.controller.lines} >= {
            ("Others", "charlie delta"), ("You", "alpha bravo")}, 30, "both sides captioned")
        shown = app.overlay.strip.notice_label.text()
        assert not app.controller.current.failed
        await app.shutdown()
        return notices, shown

    notices, shown = run_async(qapp, scenario, timeout=90)
    echo = [text for text in notices if "echo cancellation" in text.lower()]
    assert len(echo) == 1, notices  # once, though every mic chunk passed the canceller
    assert shown == echo[0]
    assert shown.startswith("Echo cancellation off, captions go on") and "“You”" in shown
    assert MISSING in shown  # and why
