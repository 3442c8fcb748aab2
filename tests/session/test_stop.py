"""Stop while the engine is behind: the words said before Stop still come, or the hole
shows. Real local server and sockets; a tone-word transcriber that takes real time."""

from __future__ import annotations

import asyncio
import random
import time

from captioner.realtime.captions import LineKind
from captioner.session import CaptionSession, SessionOptions
from captioner.transport.websocket import websocket_connector
from tests.support.refusing_front import RefusingFront
from tests.support.transcribers import (
    VOCABULARY,
    ThreadedServer,
    ToneWordTranscriber,
    tone_words_pcm,
)

CHUNK = 4096
random.seed(5)
WORDS = [random.choice(VOCABULARY) for _ in range(24)]  # about 9 s of speech
PCM = tone_words_pcm(WORDS)


class BusyTone(ToneWordTranscriber):
    """Half real time: a busy CPU, so audio sent fast waits for it in the server."""

    def push(self, pcm: bytes) -> str:
        time.sleep(len(pcm) / 32000 / 2)
        return super().push(pcm)


async def fast_audio():
    """Captured faster than the engine reads it, as when it fell behind."""
    for start in range(0, len(PCM), CHUNK):
        yield PCM[start:start + CHUNK]
        await asyncio.sleep(CHUNK / 32000 / 10)


def run(url: str, **options) -> CaptionSession:
    session = CaptionSession(websocket_connector(url), SessionOptions(
        model="test", chunk_bytes=CHUNK, stall_seconds=1e9, **options))
    asyncio.run(asyncio.wait_for(session.run(fast_audio()), 60))
    return session


def test_stop_waits_while_a_busy_engine_still_answers():
    """The engine is seconds behind at the end: longer than ``done_timeout``, but its
    words keep coming, so every word said before Stop is shown."""
    with ThreadedServer(BusyTone) as server:
        session = run(server.url, done_timeout=2.0)
    assert session.captions.text.split() == WORDS
    assert not [line for line in session.captions.lines if line.kind is LineKind.GAP]


def test_a_server_that_never_finishes_leaves_a_gap_line():
    """The server hangs 4 s in: no more text and no ``transcription.done``. Stop gives up
    after ``done_timeout`` and says what it lost."""
    with ThreadedServer(ToneWordTranscriber) as server, \
            RefusingFront(server.url, [], wedge_after=4.0) as front:
        session = run(front.url, done_timeout=1.0)
    gaps = [line for line in session.captions.lines if line.kind is LineKind.GAP]
    assert len(gaps) == 1 and gaps[0].text.endswith("s of audio not transcribed]")
    assert session.stats.gap_seconds > 2


def test_a_rotation_waits_while_a_busy_engine_still_answers():
    """A rotation's final commit, too, is answered seconds later by an engine that fell
    behind: the request rotates on the same connection instead of restarting."""
    with ThreadedServer(BusyTone) as server:
        session = run(server.url, done_timeout=1.5, rotate_after_seconds=3.0,
                      rotate_grace_seconds=0.0)
    assert session.stats.rotations >= 1
    assert session.stats.reconnects == 0
    assert session.captions.text.split() == WORDS
