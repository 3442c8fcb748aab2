"""CaptionSession against the real local Realtime server over real WebSockets."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from captioner.audio.errors import CaptureError
from captioner.realtime.captions import LineKind
from captioner.session import CaptionSession, SessionFailed, SessionOptions, SessionState
from captioner.transport.base import AuthError, ConnectError, Transport
from captioner.transport.websocket import websocket_connector
from tests.support.transcribers import (
    VOCABULARY,
    RecordingFactory,
    ThreadedServer,
    ToneWordTranscriber,
    UtteranceToneTranscriber,
    tone_words_pcm,
)

WORDS = VOCABULARY[:12]
CHUNK = 4096


async def paced(pcm: bytes, *, speed: float = 20.0, on_chunk=None):
    """Audio as capture would deliver it, `speed` times faster than real time."""
    for i, start in enumerate(range(0, len(pcm), CHUNK)):
        if on_chunk is not None:
            on_chunk(i)
        yield pcm[start : start + CHUNK]
        await asyncio.sleep(CHUNK / 32000 / speed)


def options(**kw) -> SessionOptions:
    kw.setdefault("backoff_initial", 0.01)
    kw.setdefault("backoff_max", 0.05)
    return SessionOptions(model="test", chunk_bytes=CHUNK, **kw)


def words_of(session: CaptionSession) -> list[str]:
    return session.captions.text.split()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_captions_arrive_and_stop_is_graceful(realtime_server, tone_factory):
    pcm = tone_words_pcm(WORDS)
    statuses = []
    session = CaptionSession(websocket_connector(realtime_server.url), options(),
                             on_status=statuses.append)
    run(session.run(paced(pcm)))
    assert words_of(session) == WORDS
    assert tone_factory.received == pcm  # every byte reached the server, once
    assert tone_factory.made[0].finished  # final commit was sent
    states = [s.state for s in statuses]
    assert states[0] is SessionState.LIVE and states[-1] is SessionState.STOPPED
    assert all(line.start <= line.end for line in session.captions.lines)


def test_drop_mid_sentence_loses_no_words(realtime_server, tone_factory):
    pcm = tone_words_pcm(WORDS)
    chunks = len(pcm) // CHUNK

    def drop(i):
        if i in (chunks // 3, 2 * chunks // 3):
            realtime_server.drop_connections()

    session = CaptionSession(websocket_connector(realtime_server.url), options())
    run(session.run(paced(pcm, on_chunk=drop)))
    assert session.stats.reconnects == 2
    assert words_of(session) == WORDS  # same transcript as without the fault
    assert len(tone_factory.made) == 3


def test_audio_that_ends_in_an_error_still_shows_every_word_before_it(realtime_server,
                                                                     tone_factory):
    """A device unplugged mid-sentence: what it heard before is captioned and shown, and
    the capture's error still reaches the caller (who waits for the device)."""
    pcm = tone_words_pcm(WORDS)
    shown: list[str] = []

    async def unplugged():
        async for chunk in paced(pcm):
            yield chunk
        raise CaptureError("system capture: the device went away")

    session = CaptionSession(websocket_connector(realtime_server.url), options(),
                             on_update=lambda u: shown.extend(
                                 w for line in u.finalized for w in line.text.split()))
    with pytest.raises(CaptureError):
        run(session.run(unplugged()))
    assert words_of(session) == WORDS
    assert shown == WORDS


@pytest.mark.parametrize("grace", [0.0, 30.0], ids=["forced-mid-word", "at-pause"])
def test_rotation_seam_has_each_word_once(realtime_server, tone_factory, grace):
    pcm = tone_words_pcm(WORDS)
    opts = options(rotate_after_seconds=1.3, rotate_grace_seconds=grace, pause_seconds=0.1)
    session = CaptionSession(websocket_connector(realtime_server.url), opts)
    run(session.run(paced(pcm)))
    assert session.stats.rotations >= 2
    assert session.stats.reconnects == 0
    assert words_of(session) == WORDS
    assert len(tone_factory.made) == session.stats.rotations + 1


def test_stall_watchdog_restarts_request():
    class Stalls(ToneWordTranscriber):
        """First request goes quiet after two words, like vLLM's known stall."""

        count = 0

        def __init__(self):
            super().__init__()
            Stalls.count += 1
            self.first = Stalls.count == 1
            self.words = 0

        def push(self, pcm):
            text = super().push(pcm)
            if self.first and self.words >= 2:
                return ""
            self.words += len(text.split())
            return text

    factory = RecordingFactory()
    factory_fn = lambda: factory.made.append(Stalls()) or factory.made[-1]  # noqa: E731
    with ThreadedServer(factory_fn) as server:
        session = CaptionSession(websocket_connector(server.url), options(stall_seconds=1.0))
        run(session.run(paced(tone_words_pcm(WORDS))))
    assert session.stats.stalls >= 1
    assert words_of(session) == WORDS


def test_an_engine_confirming_whole_utterances_loses_no_word_when_a_replay_misreads_one():
    """The on-device engine confirms an utterance at its end, so all its words arrive
    at once and look as late as its last one: after a drop the audio alone would say
    all of them are repeated, though the replay starts near the end. The replay
    misreads one of the words it repeats; the text still finds them, and the new words
    after them are shown."""
    utterances = [VOCABULARY[0:6], VOCABULARY[6:20], VOCABULARY[0:8], VOCABULARY[8:14]]
    pause = bytes(32000 * 5 // 2)  # 2.5 s: each utterance is confirmed 2 s after it
    pcm = b"".join(tone_words_pcm(words) + pause for words in utterances)
    words = [word for utterance in utterances for word in utterance]
    made: list[UtteranceToneTranscriber] = []

    class Misreads(UtteranceToneTranscriber):
        """A replayed request reads the second word of its first utterance wrong."""

        def __init__(self) -> None:
            super().__init__(pause=2.0)
            self.misread = bool(made)
            made.append(self)

        def _confirm(self) -> str:
            heard = super()._confirm().split()
            if self.misread and len(heard) > 1:
                heard[1], self.misread = "zulu", False
            return "".join(" " + w for w in heard)

    before_third = sum(len(tone_words_pcm(words) + pause) for words in utterances[:2])
    mid_third = (before_third + len(tone_words_pcm(utterances[2][:4]))) // CHUNK

    def drop(i):
        if i == mid_third:  # the second utterance was confirmed, the third is not
            server.drop_connections()

    with ThreadedServer(Misreads) as server:
        session = CaptionSession(websocket_connector(server.url),
                                 options(stall_seconds=15.0))
        run(session.run(paced(pcm, speed=5.0, on_chunk=drop)))
    assert words_of(session) == words  # the misread word was one of the repeated
    assert session.stats.reconnects == 1 and len(made) == 2
    assert 0 < session.stats.repeated_words_dropped < len(utterances[1]) / 2


def test_outage_longer_than_buffer_is_a_visible_gap():
    up = asyncio.Event()
    attempts = 0

    async def connector():
        nonlocal attempts
        attempts += 1
        if attempts == 2 and not up.is_set():
            raise ConnectError("refused")
        return await websocket_connector(server.url)()

    async def sleep(delay):
        await up.wait()  # the endpoint stays down until all audio is captured

    async def audio():
        async for chunk in paced(pcm):
            yield chunk
        up.set()

    pcm = tone_words_pcm(WORDS)
    with ThreadedServer(RecordingFactory()) as server:
        opts = options(outage_buffer_seconds=1.0)
        session = CaptionSession(connector, opts, sleep=sleep)

        async def main():
            task = asyncio.create_task(session.run(audio()))
            while session.status.state is not SessionState.LIVE:
                await asyncio.sleep(0.01)
            server.drop_connections()
            return await task

        run(main())
    gaps = [line for line in session.captions.lines if line.kind is LineKind.GAP]
    assert len(gaps) == 1 and session.stats.gap_seconds > 1.0
    assert "not transcribed" in gaps[0].text
    assert words_of(session)[-2:] == WORDS[-2:]  # the buffered tail was replayed


def test_bad_credentials_fail_once_without_storm():
    calls = 0

    async def connector():
        nonlocal calls
        calls += 1
        raise AuthError("the security token included in the request is expired")

    statuses = []
    session = CaptionSession(connector, options(), on_status=statuses.append)
    with pytest.raises(SessionFailed, match="expired"):
        run(session.run(paced(tone_words_pcm(WORDS[:2]))))
    assert calls == 1
    assert statuses[-1].state is SessionState.FAILED


def test_refused_endpoint_fail_fast_message():
    session = CaptionSession(websocket_connector("ws://127.0.0.1:9/v1/realtime"),
                             options(fail_fast=True))
    with pytest.raises(SessionFailed, match="refused"):
        run(session.run(paced(tone_words_pcm(WORDS[:2]))))


def test_refused_endpoint_retries_with_visible_countdown():
    delays = []

    async def sleep(delay):
        delays.append(delay)
        if len(delays) == 4:
            session.stop()

    statuses = []
    session = CaptionSession(websocket_connector("ws://127.0.0.1:9/v1/realtime"),
                             options(backoff_initial=1.0, backoff_max=4.0),
                             on_status=statuses.append, sleep=sleep, jitter=lambda: 1.0)
    run(session.run(paced(tone_words_pcm(WORDS[:2]))))
    assert delays == [1.0, 2.0, 4.0, 4.0]  # exponential, capped
    retrying = [s for s in statuses if s.retry_in is not None]
    assert "refused" in str(retrying[0]) and "in 1 s" in str(retrying[0])


def test_malformed_server_events_are_counted_not_fatal(realtime_server):
    class Noisy:
        def __init__(self, inner: Transport):
            self.inner, self.n = inner, 0

        async def send_text(self, text):
            await self.inner.send_text(text)

        async def recv(self):
            self.n += 1
            if self.n in (2, 3, 4):
                return ["{not json", json.dumps({"type": "bogus"}), b"\xff\xfe"][self.n - 2]
            return await self.inner.recv()

        async def close(self):
            await self.inner.close()

    async def connector():
        return Noisy(await websocket_connector(realtime_server.url)())

    session = CaptionSession(connector, options())
    run(session.run(paced(tone_words_pcm(WORDS))))
    assert session.stats.protocol_errors == 3
    assert words_of(session) == WORDS


def test_unknown_model_fails_with_server_message():
    with ThreadedServer(RecordingFactory(), models={"voxtral"}) as server:
        session = CaptionSession(websocket_connector(server.url), options())
        with pytest.raises(SessionFailed, match="not found"):
            run(session.run(paced(tone_words_pcm(WORDS))))


def test_a_switch_to_another_endpoint_goes_on_with_each_word_once(realtime_server,
                                                                 tone_factory):
    pcm = tone_words_pcm(WORDS)
    other = RecordingFactory()
    with ThreadedServer(other) as second:
        session = CaptionSession(websocket_connector(realtime_server.url), options())
        switch_at = len(pcm) // CHUNK // 2  # mid-sentence, mid-word

        def switch(i):
            if i == switch_at:
                session.switch(websocket_connector(second.url), options())

        run(session.run(paced(pcm, on_chunk=switch)))
    assert words_of(session) == WORDS  # the seam replays, and shows no word twice
    assert session.stats.reconnects == 0
    assert len(tone_factory.made) == 1 and len(other.made) == 1
    assert other.received.endswith(pcm[switch_at * CHUNK :])  # the rest went to the new one


def test_a_switch_while_offline_sends_what_was_held_to_the_new_endpoint(realtime_server,
                                                                      tone_factory):
    pcm = tone_words_pcm(WORDS)
    session = CaptionSession(websocket_connector("ws://127.0.0.1:9/v1/realtime"),
                             options(backoff_initial=30.0, backoff_max=30.0))

    def switch(i):
        if i == len(pcm) // CHUNK - 1:  # the whole clip waited for a connection
            session.switch(websocket_connector(realtime_server.url), options())

    began = time.monotonic()
    run(session.run(paced(pcm, on_chunk=switch)))
    assert words_of(session) == WORDS
    assert tone_factory.received == pcm
    assert time.monotonic() - began < 15  # the switch ended the 30 s wait to retry


@pytest.mark.parametrize("speech", [True, False], ids=["speech", "silence"])
def test_a_stop_while_offline_shows_what_was_never_transcribed(speech):
    pcm = tone_words_pcm(WORDS) if speech else bytes(len(tone_words_pcm(WORDS)))
    session = CaptionSession(websocket_connector("ws://127.0.0.1:9/v1/realtime"),
                             options(backoff_initial=30.0, backoff_max=30.0))

    def stop(i):
        if i == len(pcm) // CHUNK - 1:
            session.stop()

    run(session.run(paced(pcm, on_chunk=stop)))
    gaps = [line for line in session.captions.lines if line.kind is LineKind.GAP]
    if speech:  # the hole is shown, not hidden
        held = session.stats.audio_seconds  # all of it: no connection ever came
        assert [line.text for line in gaps] == [f"[{held:.0f} s of audio not transcribed]"]
        assert session.stats.gap_seconds == held
    else:  # silence lost is nothing to show
        assert gaps == [] and session.stats.gap_seconds == 0.0


@pytest.mark.parametrize("drop_after", [5, 6], ids=["in-the-silence", "as-speech-resumes"])
def test_a_reconnect_after_a_long_silence_shows_no_false_gap(realtime_server, drop_after):
    """Only silence was sent since the last word, longer ago than the outage buffer
    holds: nothing was lost, so no "[N s of audio not transcribed]" line."""
    first, second = tone_words_pcm(WORDS[:4]), tone_words_pcm(WORDS[4:])
    pcm = first + bytes(32000 * 6) + second  # 6 s of silence between
    at_drop = (len(first) + 32000 * drop_after) // CHUNK  # the connection drops

    def drop(i):
        if i == at_drop:
            realtime_server.drop_connections()

    session = CaptionSession(websocket_connector(realtime_server.url),
                             options(outage_buffer_seconds=2.0))
    run(session.run(paced(pcm, on_chunk=drop)))
    assert session.stats.reconnects == 1
    assert [line.text for line in session.captions.lines if line.kind is LineKind.GAP] == []
    assert words_of(session) == WORDS
