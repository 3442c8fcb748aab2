"""The first connection: an endpoint that is still starting is waited for, with the wait
visible; what retrying cannot fix fails at once. Real sockets, real speech."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from captioner.session import CaptionSession, SessionFailed, SessionOptions, SessionState
from captioner.session.policy import FIRST_CONNECT_BUDGET_SECONDS
from captioner.transport.websocket import websocket_connector
from tests.session.test_faults import assert_same_words, paced
from tests.support.refusing_front import RefusingFront
from tests.support.speech import write_wav

LOADING = (424, "model container is loading")
UNAVAILABLE = (503, "Service Unavailable")
REPO = Path(__file__).resolve().parents[2]


def options(**kw) -> SessionOptions:
    kw.setdefault("backoff_initial", 0.05)
    kw.setdefault("backoff_max", 0.2)
    return SessionOptions(model="voxtral", fail_fast=True, **kw)


def test_endpoint_still_starting_is_waited_for_with_the_reason_shown(strict_server, jfk_script):
    jfk = jfk_script
    server = strict_server(jfk)
    statuses = []
    with RefusingFront(server.url, [UNAVAILABLE, UNAVAILABLE, LOADING]) as front:
        session = CaptionSession(websocket_connector(front.url), options(),
                                 on_status=statuses.append)
        asyncio.run(asyncio.wait_for(session.run(paced(jfk.pcm)), 120))
    assert front.refused == 3 and front.handshakes == 4
    waiting = [s for s in statuses if s.retry_in is not None]
    assert [s.state for s in waiting] == [SessionState.CONNECTING] * 3
    assert "HTTP 503" in str(waiting[0]) and "model container is loading" in str(waiting[2])
    assert str(waiting[0]).startswith("connecting in ")
    assert_same_words(session, jfk, server)  # nothing captured while waiting was lost


def test_a_server_that_accepts_then_closes_is_retried_with_backoff(strict_server, jfk_script):
    """Accepted, then closed before a frame went (a restarting or overloaded server): the
    session reconnects, backing off, and loses nothing said meanwhile."""
    jfk = jfk_script
    server = strict_server(jfk)
    statuses = []
    with RefusingFront(server.url, [], closes=3) as front:
        session = CaptionSession(websocket_connector(front.url), options(),
                                 on_status=statuses.append)
        asyncio.run(asyncio.wait_for(session.run(paced(jfk.pcm)), 120))
    assert front.handshakes == 4  # three closed, then served: no storm of reconnects
    waits = [s for s in statuses if s.retry_in is not None]
    assert len(waits) == 3 and "1013: try again later" in str(waits[0])
    assert_same_words(session, jfk, server)


def test_a_request_the_server_ends_by_itself_is_started_again(strict_server, jfk_script):
    """A ``transcription.done`` nobody asked for (vLLM sends one whenever its generation
    stops): audio sent after it would go to no request, so the request starts again
    from a resume point, and every word comes once."""
    jfk = jfk_script
    server = strict_server(jfk)
    with RefusingFront(server.url, [], end_request_after=4.0) as front:
        session = CaptionSession(websocket_connector(front.url), options())
        asyncio.run(asyncio.wait_for(session.run(paced(jfk.pcm)), 120))
    assert front.ended_requests == 1
    assert session.stats.reconnects == 1 and session.stats.stalls == 0  # at once, not 4 s on
    assert_same_words(session, jfk, server)


def test_waiting_is_bounded():
    clock = [0.0]

    async def sleep(delay):
        clock[0] += delay

    with RefusingFront("ws://127.0.0.1:9/", [UNAVAILABLE] * 1000) as front:
        session = CaptionSession(websocket_connector(front.url), options(backoff_max=30.0),
                                 sleep=sleep, clock=lambda: clock[0], jitter=lambda: 1.0)

        async def silence():
            yield bytes(4096)
            await asyncio.Event().wait()  # capture goes on while we wait

        with pytest.raises(SessionFailed, match=r"503.*still refusing after 1[2-5]\d s"):
            asyncio.run(asyncio.wait_for(session.run(silence()), 60))
    assert FIRST_CONNECT_BUDGET_SECONDS <= clock[0] <= FIRST_CONNECT_BUDGET_SECONDS + 30
    assert 4 < front.handshakes < 20  # capped exponential, not a storm
    assert session.status.state is SessionState.FAILED


@pytest.mark.parametrize("refusal", [(401, "Unauthorized"), (403, "Forbidden"),
                                     (404, "no such route")])
def test_what_retrying_cannot_fix_fails_at_once(refusal):
    with RefusingFront("ws://127.0.0.1:9/", [refusal] * 5) as front:
        session = CaptionSession(websocket_connector(front.url), options())
        with pytest.raises(SessionFailed, match=f"HTTP {refusal[0]}"):
            asyncio.run(asyncio.wait_for(session.run(paced(bytes(32000))), 30))
    assert front.handshakes == 1


def test_cli_transcribe_waits_for_a_starting_endpoint(strict_server, jfk_script, tmp_path):
    jfk = jfk_script
    server = strict_server(jfk)
    wav = write_wav(tmp_path / "jfk.wav", np.frombuffer(jfk.pcm, "<i2") / 32768.0, 16_000)
    env = dict(os.environ, PYTHONPATH=str(REPO), HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_STATE_HOME=str(tmp_path / "state"))
    with RefusingFront(server.url, [UNAVAILABLE, LOADING]) as front:
        done = subprocess.run([sys.executable, "-m", "captioner", "transcribe", str(wav),
                               "--endpoint", front.url], env=env, capture_output=True,
                              text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "[connecting in" in done.stderr and "HTTP 503" in done.stderr
    assert "model container is loading" in done.stderr
    assert done.stdout.split() == jfk.text_words
    assert server.log.violations == []


def test_stop_while_waiting_for_the_endpoint_ends_at_once():
    with RefusingFront("ws://127.0.0.1:9/", [UNAVAILABLE] * 100) as front:
        async def main():
            waiting = asyncio.Event()

            def on_status(status):
                if status.retry_in is not None:
                    waiting.set()

            session = CaptionSession(websocket_connector(front.url),
                                     options(backoff_initial=60.0, backoff_max=60.0),
                                     on_status=on_status)
            task = asyncio.create_task(session.run(paced(bytes(32000 * 30))))
            await waiting.wait()
            session.stop()  # as quitting the app does, in the middle of a 30–60 s wait
            await asyncio.wait_for(task, 10)
            return session

        session = asyncio.run(asyncio.wait_for(main(), 60))
    assert session.status.state is SessionState.STOPPED
    assert front.handshakes == 2  # the refused one, and one last try when asked to stop
