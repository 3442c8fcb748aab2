"""End to end: live (unconfirmed) words of the real embedded engine reach the overlay
before they are confirmed — real Whisper model, the real local Realtime server on
loopback, the app's controller and session, real Qt widgets (offscreen).

Real speech (J. F. Kennedy, the speech set) is fed at real-time pace. Each paint of
the caption view is recorded: the words it shows and which of them are unconfirmed
(italic). A word of the final transcript counts as "live first" when a paint showed
it unconfirmed, at its place in the text, before any paint showed it confirmed.
The finalized lines carry the times their words were first shown.
"""

from __future__ import annotations

import time

from captioner.audio.files import FileSource
from captioner.engine.streaming import word_key
from captioner.ui.app import CaptionerApp
from tests.support.speech_set import clip, word_errors
from tests.ui.conftest import run_async, wait_until

RUN_TIMEOUT = 240.0  # model load plus 11 s of speech at real time, on a loaded machine


def test_live_words_reach_the_overlay_before_their_commit(qapp, store):
    speech = clip("jfk")
    store.settings.appearance.linger_seconds = 120.0  # nothing fades during the clip
    paints: list[tuple[float, list[str], int]] = []  # (time, words, confirmed count)

    async def scenario():
        app = CaptionerApp(store, tray_available=False, source_factory=lambda _a: FileSource(
            speech.path, chunk_bytes=2560, realtime=True))
        view = app.overlay.view

        def on_paint() -> None:
            confirmed = [w for line in view.finalized for w in line.text.split()]
            confirmed += view.live.text.split() if view.live else []
            pending = view.unconfirmed.split()
            rows = " ".join(text for text, _ in view.visible_rows()).split()
            if pending:  # the unconfirmed words are on screen, after the confirmed ones
                assert rows[-len(pending):] == pending
                assert view.visible_rows()[-1][1]  # ... in the live (italic) style
            paints.append((time.monotonic(), confirmed + pending, len(confirmed)))

        view.painted.connect(on_paint)
        app.start()
        await wait_until(lambda: app.controller.running, 30, "captions to start")
        await wait_until(lambda: not app.controller.running, RUN_TIMEOUT, "the clip to end")
        await app.shutdown()
        return app.controller.lines

    lines = run_async(qapp, scenario, timeout=RUN_TIMEOUT + 60)
    text = " ".join(line.text for line in lines)
    assert word_errors(speech.reference, text).rate <= 0.3, text
    final = [word_key(w) for w in text.split()]
    live_first = 0
    for i, key in enumerate(final):
        seen_live = next((t for t, words, n in paints
                          if n <= i < len(words) and word_key(words[i]) == key), None)
        confirmed = next(t for t, words, n in paints if n > i)
        live_first += seen_live is not None and seen_live < confirmed
    # Most words are seen live first (a final decode at a pause may commit a word that
    # no earlier decode heard); without live text none would be.
    assert live_first >= len(final) // 2, (live_first, len(final))
    assert paints[-1][2] == len(paints[-1][1])  # at the end nothing is left unconfirmed
    # A line's words are placed when they were first shown, not when the utterance's end
    # confirmed them all at once: the last sentence (2.5 s of speech) spans its time.
    times = [t for line in lines for t in (line.start, line.end)]
    assert times == sorted(times), lines
    assert lines[-1].end - lines[-1].start >= 0.8, lines
