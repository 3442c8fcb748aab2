"""A newcomer's set-up: captions of system audio on the on-device engine, no voice
endpoint, a typed reply spoken by this computer's voice on the default output.

The app as it is built (its own capture, player and engine) on the PulseAudio null
sink: the reply is shown once, as the typed line, and the captions never hear it
(what they read stays at the level of silence while it plays, a chunk or two aside).
"""

from __future__ import annotations

import shutil

import pytest

from captioner.realtime.captions import LineKind
from captioner.ui.app import CaptionerApp
from tests.ui.conftest import run_async, wait_until

REPLY = "Hello there. I will be right back after this call."


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed")
def test_a_spoken_reply_is_shown_as_typed_and_never_as_the_others_words(qapp, store, pulse):
    levels: list[float] = []

    async def scenario():
        app = CaptionerApp(store, tray_available=False)
        app.controller.level.connect(levels.append)
        app.start()
        try:
            await wait_until(lambda: app.controller.current.state == "listening", 90,
                             "the on-device engine")
            quiet = len(levels)
            assert app.replies.say(REPLY)
            await wait_until(lambda: app.replies.status.busy, 20, "the reply to start")
            await wait_until(lambda: not app.replies.status.busy, 30, "the reply to end")
            await wait_until(lambda: len(levels) > quiet + 30, 10, "three seconds of level")
            app.controller.stop()  # the final commit: every word heard is out
            await app.controller.wait_stopped(30)
        finally:
            await app.shutdown()
        return levels[quiet:], list(app.controller.lines)

    during, lines = run_async(qapp, scenario, timeout=180)
    # Near silence: uncancelled, the reply reads about -20 dBFS in 26 of these polls. A
    # few may leak while AEC3 finds the echo at its onset, more on a loaded machine
    # (3 polls above -40 dBFS in one CI run); a fifth of the reply would be words.
    assert sum(level > -40 for level in during) <= 6, during
    assert sorted(during)[len(during) // 2] < -55
    assert [line.text for line in lines if line.kind is LineKind.TYPED] == [REPLY]
    assert [line.text for line in lines if line.kind is LineKind.SPEECH] == []


def test_only_replies_on_the_default_output_are_cancelled_from_the_captures(qapp, store):
    """A device picked for replies (a call's virtual microphone, a headset) is one the
    captures do not hear; a canceller running on a reference that never comes back would
    still change the others' words meanwhile."""
    async def scenario() -> None:
        app = CaptionerApp(store, tray_available=False, source_factory=lambda audio: None)
        try:
            assert app._reply_player(None).tap is app.played
            assert app._reply_player("Null Output (mic)").tap is None
        finally:
            await app.shutdown()

    run_async(qapp, scenario)
