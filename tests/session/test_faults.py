"""Every server fault, on real speech, over a real socket: the same words as without it.

The strict server (tests/support/strict_speech.py) says exactly the words of the audio
each request receives, 480 ms after each word (as Voxtral does), so the words the
session shows are those of the audio it sent: a word lost in a stall, a word doubled
at a seam, garbage let through — each shows up as a difference from the script, which
is also what the same run without the fault shows (first test).
"""

from __future__ import annotations

import asyncio
import difflib

import pytest

from captioner.session import CaptionSession, SessionOptions
from captioner.transport.websocket import websocket_connector
from tests.support.strict_speech import IMPOSSIBLE_TEXT, Faults, SpeechScript

CHUNK = 4096
SPEED = 4.0  # times real time: fast enough for a test, slow enough to be live audio


@pytest.fixture
def sonnet(sonnet_script) -> SpeechScript:
    return sonnet_script


@pytest.fixture
def jfk(jfk_script) -> SpeechScript:
    return jfk_script


async def paced(pcm: bytes):
    for start in range(0, len(pcm), CHUNK):
        yield pcm[start:start + CHUNK]
        await asyncio.sleep(CHUNK / 32000 / SPEED)


def transcribe(server, **options) -> CaptionSession:
    opts = SessionOptions(model="voxtral", chunk_bytes=CHUNK, backoff_initial=0.01,
                          backoff_max=0.05, **options)
    session = CaptionSession(websocket_connector(server.url), opts)
    asyncio.run(asyncio.wait_for(session.run(paced(server.script.pcm)), 240))
    return session


def assert_same_words(session: CaptionSession, script: SpeechScript, server) -> None:
    got, want = session.captions.text.split(), script.text_words
    diff = [(op, want[a:b], got[c:d]) for op, a, b, c, d in
            difflib.SequenceMatcher(a=want, b=got, autojunk=False).get_opcodes()
            if op != "equal"]
    assert diff == [], "words lost (left) or doubled/garbage (right)"
    assert server.log.violations == []
    assert all(IMPOSSIBLE_TEXT[:12] not in line.text for line in session.captions.lines)


def test_without_faults_the_words_are_the_script(strict_server, jfk):
    server = strict_server(jfk)
    session = transcribe(server)
    assert_same_words(session, jfk, server)
    assert len(jfk.text_words) > 15 and session.stats.reconnects == 0
    assert len(server.log.requests) == 1


@pytest.mark.parametrize("at", [5.5, 8.5], ids=["in-first-ask", "in-second-ask"])
def test_impossible_delta_is_rejected_and_the_request_recovers(strict_server, jfk, at):
    server = strict_server(jfk, Faults(impossible_at=at))
    session = transcribe(server)
    assert session.stats.rejected_texts == 1 and session.stats.protocol_errors == 1
    assert session.stats.reconnects == 1
    assert_same_words(session, jfk, server)


def test_impossible_delta_added_to_good_text(strict_server, jfk):
    server = strict_server(jfk, Faults(impossible_at=7.0, impossible_replaces_word=False))
    session = transcribe(server)
    assert session.stats.rejected_texts == 1
    assert_same_words(session, jfk, server)


@pytest.mark.parametrize("at", [5.5, 7.0, 8.5])
def test_processing_error_in_a_repeated_phrase_neither_drops_nor_doubles(strict_server, jfk,
                                                                         at):
    server = strict_server(jfk, Faults(error_at=at))
    session = transcribe(server)
    assert session.stats.server_errors == 1 and session.stats.reconnects == 1
    assert_same_words(session, jfk, server)


def test_stall_is_detected_within_5_s_of_speech_and_its_words_come_back(strict_server,
                                                                        sonnet):
    server = strict_server(sonnet, Faults(stall_at=12.0))
    session = transcribe(server)
    assert session.stats.stalls == 1
    stalled = server.log.requests[0]
    # the stalled request got no more than 5 s of audio past the point its text stopped
    assert len(stalled.received) / 32000 <= 12.0 + 5.0 + 0.5
    assert_same_words(session, sonnet, server)


def test_recurring_stalls_shorten_rotation(strict_server, sonnet):
    server = strict_server(sonnet, Faults(stall_at=12.0, stall_requests=10))
    session = transcribe(server)
    assert session.stats.stalls == 2  # the second one at the same age teaches rotation
    assert session.rotation.due_after < 12.0
    assert session.stats.rotations >= 2
    assert all(len(r.received) / 32000 < 12.0 + 5.5 for r in server.log.requests)
    assert_same_words(session, sonnet, server)


def test_context_limit_is_learned_and_rotation_comes_before_it(strict_server, sonnet):
    limit_tokens = 200  # 16 s of audio
    server = strict_server(sonnet, Faults(max_model_len=limit_tokens))
    session = transcribe(server)
    assert session.stats.context_limits == 1  # learned from the first error only
    assert session.rotation.context_limit == pytest.approx(16.0)
    assert session.stats.rotations >= 2
    assert sum(r.failed for r in server.log.requests) == 1
    assert_same_words(session, sonnet, server)  # includes: no final commit while idle


def test_context_limit_from_endpoint_configuration_never_hits_it(strict_server, sonnet):
    server = strict_server(sonnet, Faults(max_model_len=200))
    session = transcribe(server, max_model_len=200)
    assert session.stats.context_limits == 0 and session.stats.rotations >= 3
    assert_same_words(session, sonnet, server)


def test_after_a_long_outage_the_replay_shows_each_word_once(strict_server, sonnet):
    """The network is down for 8 s of speech, longer than the seam holds text. On
    reconnect the replay and all audio captured meanwhile go out in one burst, long
    before the server can answer it; the seam still waits for the replay's words to
    drop the ones shown already."""
    server = strict_server(sonnet, Faults(compute=1 / 8))  # 8× real time
    outage = 8.0
    dropped_at: list[float] = []
    session: CaptionSession | None = None

    async def connector():
        while dropped_at and session.audio.end_seconds < dropped_at[0] + outage:
            await asyncio.sleep(0.005)  # the network is down
        return await websocket_connector(server.url)()

    async def audio():
        async for chunk in paced(sonnet.pcm):
            if session.audio.end_seconds >= 20.0 and not dropped_at:
                dropped_at.append(session.audio.end_seconds)
                server.drop_connections()
            yield chunk

    opts = SessionOptions(model="voxtral", chunk_bytes=CHUNK, backoff_initial=0.01,
                          backoff_max=0.05)
    session = CaptionSession(connector, opts)
    asyncio.run(asyncio.wait_for(session.run(audio()), 240))
    assert session.stats.reconnects == 1
    assert_same_words(session, sonnet, server)
    assert session.stats.repeated_words_dropped > 0
