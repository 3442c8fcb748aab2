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
