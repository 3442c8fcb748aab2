"""Live (unconfirmed) text through the real local server and CaptionSession.

Live words are shown before they are confirmed and never become confirmed text by
themselves; a restarted or rotated request, which says some shown words again,
never shows them twice; live words count as the server's progress for the stall
watchdog.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from captioner.captioning import session_options
from captioner.realtime.captions import CaptionUpdate
from captioner.session import CaptionSession
from captioner.settings import Settings
from captioner.transport.endpoint_url import parse_endpoint
from captioner.transport.websocket import websocket_connector
from tests.session.test_caption_session import WORDS, options, paced, run, words_of
from tests.support.transcribers import (
    VOCABULARY,
    LiveToneTranscriber,
    ThreadedServer,
    tone_words_pcm,
)


class Screen:
    """What a reader sees after each update: finalized lines, the live line, the
    unconfirmed words (as the overlay flows them), and which words were unconfirmed."""

    def __init__(self) -> None:
        self.final: list[str] = []
        self.shots: list[tuple[list[str], list[str]]] = []  # (confirmed, unconfirmed)

    def __call__(self, update: CaptionUpdate) -> None:
        for line in update.finalized:
            self.final += line.text.split()
        live = update.live.text.split() if update.live else []
        self.shots.append((self.final + live, update.unconfirmed.split()))

    def first_index(self, word: str, *, confirmed: bool) -> int | None:
        for i, (done, pending) in enumerate(self.shots):
            if word in done or (not confirmed and word in pending):
                return i
        return None


def live_factory(**kw) -> tuple[Callable[[], LiveToneTranscriber], list[LiveToneTranscriber]]:
    made: list[LiveToneTranscriber] = []

    def make() -> LiveToneTranscriber:
        made.append(LiveToneTranscriber(**kw))
        return made[-1]

    return make, made


def caption(make, screen: Screen, *, on_chunk=None, **opts) -> CaptionSession:
    with ThreadedServer(make) as server:
        session = CaptionSession(websocket_connector(server.url), options(**opts),
                                 on_update=screen)
        run(session.run(paced(tone_words_pcm(WORDS), on_chunk=on_chunk)))
    return session


def assert_never_doubled(screen: Screen, words: list[str] = WORDS) -> None:
    for done, pending in screen.shots:
        shown = done + pending
        assert shown == words[: len(shown)], shown  # every screen is a prefix of the words


def test_live_words_are_shown_before_they_are_confirmed():
    make, _ = live_factory()
    screen = Screen()
    session = caption(make, screen)
    assert words_of(session) == WORDS
    for word in WORDS[:-1]:  # the last word is committed at once by the final commit
        shown = screen.first_index(word, confirmed=False)
        confirmed = screen.first_index(word, confirmed=True)
        assert shown is not None and confirmed is not None and shown < confirmed, word
    assert_never_doubled(screen)
    assert screen.shots[-1][1] == []  # nothing unconfirmed is left on screen


def test_live_words_never_become_confirmed_by_themselves():
    """A transcriber whose last words stay live and are never committed: they are shown,
    then go; the transcript has only what was committed."""

    class NeverCommitsTheLast(LiveToneTranscriber):
        def finish(self) -> str:
            self._held = []
            return ""

    made = []

    def make():
        made.append(NeverCommitsTheLast(hold=2))
        return made[-1]

    screen = Screen()
    session = caption(make, screen)
    assert words_of(session) == WORDS[:-2]
    assert any(WORDS[-1] in pending for _, pending in screen.shots)  # it was shown live
    assert screen.shots[-1] == (WORDS[:-2], [])


@pytest.mark.parametrize("fault", ["drop", "rotate-mid-word", "rotate-at-pause"])
def test_a_restarted_request_never_shows_a_word_twice(fault):
    make, made = live_factory()
    screen = Screen()
    chunks = len(tone_words_pcm(WORDS)) // 4096
    server_box = {}

    def drop(i):
        if fault == "drop" and i in (chunks // 3, 2 * chunks // 3):
            server_box["server"].drop_connections()

    opts = {}
    if fault.startswith("rotate"):
        opts = {"rotate_after_seconds": 1.3, "pause_seconds": 0.1,
                "rotate_grace_seconds": 0.0 if fault == "rotate-mid-word" else 30.0}
    with ThreadedServer(make) as server:
        server_box["server"] = server
        session = CaptionSession(websocket_connector(server.url), options(**opts),
                                 on_update=screen)
        run(session.run(paced(tone_words_pcm(WORDS), on_chunk=drop)))
    assert session.stats.reconnects + session.stats.rotations >= 2
    assert len(made) >= 3  # the requests did restart, with live text in each
    assert words_of(session) == WORDS
    assert_never_doubled(screen)


def test_live_words_show_while_a_restarted_requests_seam_is_open():
    """An engine that holds words back keeps a replay's seam open for seconds (it
    confirms too few words to decide): its live words still show meanwhile, without the
    words the replay says again."""
    words = VOCABULARY[:24]
    make, made = live_factory(hold=4)
    screen = Screen()
    pcm = tone_words_pcm(words)
    chunks = len(pcm) // 4096
    server_box = {}

    def drop(i):
        if i == chunks * 3 // 5:
            server_box["server"].drop_connections()

    with ThreadedServer(make) as server:
        server_box["server"] = server
        session = CaptionSession(websocket_connector(server.url), options(),
                                 on_update=screen)
        run(session.run(paced(pcm, on_chunk=drop)))
    assert session.stats.reconnects >= 1 and len(made) >= 2
    assert words_of(session) == words
    assert_never_doubled(screen, words)
    late = [w for w in words[:-1]
            if screen.first_index(w, confirmed=False) == screen.first_index(w, confirmed=True)]
    assert late == []  # each was live before it was confirmed


def test_live_words_are_progress_for_the_stall_watchdog():
    """An engine that is behind commits nothing for seconds but its live text moves:
    no restart. The same engine without live text is taken for a stalled server —
    except with the on-device engine's longer watchdog."""
    def behind():
        return LiveToneTranscriber(hold=len(WORDS))  # commits only at the end

    class Silent(LiveToneTranscriber):
        tentative = ""  # type: ignore[assignment]  # says nothing until the end

        def __init__(self):
            super().__init__(hold=len(WORDS))

    screen = Screen()
    session = caption(behind, screen, stall_seconds=1.0)
    assert session.stats.stalls == 0 and session.stats.reconnects == 0
    assert words_of(session) == WORDS
    session = caption(Silent, Screen(), stall_seconds=1.0)
    assert session.stats.stalls >= 1  # the contrast: no text, no live text = a stall
    # the on-device engine's watchdog waits longer than a server's: an engine that is
    # behind and says nothing for seconds of sound is not restarted
    settings = Settings()
    embedded = session_options(settings, parse_endpoint("embedded")).stall_seconds
    remote = session_options(settings, parse_endpoint("ws://127.0.0.1:9/v1/realtime"))
    assert remote.stall_seconds == settings.recognition.stall_seconds < embedded
    session = caption(Silent, Screen(), stall_seconds=embedded)
    assert session.stats.stalls == 0 and words_of(session) == WORDS
