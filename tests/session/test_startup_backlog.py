"""Audio that waited for the connection (the on-device model loading, a slow endpoint)
goes out at once when it opens; sending it is not a stall, and every word arrives."""

from __future__ import annotations

import asyncio

from captioner.session import CaptionSession, SessionOptions
from captioner.transport.websocket import websocket_connector
from tests.support.transcribers import VOCABULARY, tone_words_pcm

CHUNK = 2560


def test_a_backlog_longer_than_the_stall_limit_is_no_stall(realtime_server, tone_factory):
    pcm = tone_words_pcm(VOCABULARY)  # 7.2 s, far more sound than the 4 s stall limit
    captured = asyncio.Event()

    async def capture():
        for start in range(0, len(pcm), CHUNK):
            yield pcm[start:start + CHUNK]
        captured.set()

    async def slow_to_open():
        await captured.wait()  # everything was said before the endpoint was there
        return await websocket_connector(realtime_server.url)()

    async def main():
        session = CaptionSession(slow_to_open, SessionOptions(model="test", chunk_bytes=CHUNK))
        await session.run(capture())
        return session

    session = asyncio.run(asyncio.wait_for(main(), 60))
    assert session.stats.stalls == 0
    assert session.captions.text.split() == VOCABULARY
    assert tone_factory.received == pcm


def test_a_backlog_longer_than_the_log_keeps_shows_the_hole(realtime_server, tone_factory):
    """More said before the first connection than the log keeps (its outage buffer):
    the oldest part is shown as a hole, and the rest is sent once, exactly as captured
    (the log used to hand back other audio than asked for, so one chunk went out again
    and again and words went missing without a word)."""
    words = VOCABULARY * 3  # 21.6 s of tone words
    pcm = tone_words_pcm(words)
    captured = asyncio.Event()

    async def capture():
        for start in range(0, len(pcm), CHUNK):
            yield pcm[start:start + CHUNK]
        captured.set()

    async def slow_to_open():
        await captured.wait()
        return await websocket_connector(realtime_server.url)()

    async def main():
        session = CaptionSession(slow_to_open, SessionOptions(
            model="test", chunk_bytes=CHUNK, outage_buffer_seconds=10.0))
        await session.run(capture())
        return session

    session = asyncio.run(asyncio.wait_for(main(), 60))
    kept_from = round(session.audio.start_seconds * 32000)
    assert kept_from > 0
    assert tone_factory.received == pcm[kept_from:]  # the kept audio, each byte once
    gaps = [line for line in session.captions.lines if line.text.startswith("[")]
    assert len(gaps) == 1 and gaps[0].end == session.audio.start_seconds
    shown = session.captions.text.split()
    assert shown == words[len(words) - len(shown):]  # the end of what was said, in order
