"""The same CaptionSession over the real SageMaker SDK, through the fake SageMaker
Runtime, to the local Realtime server: faults mid-sentence lose no words."""

from __future__ import annotations

import pytest

from captioner.session import CaptionSession, SessionFailed
from captioner.transport.sagemaker import sagemaker_connector
from tests.session.test_caption_session import WORDS, options, paced, run, words_of
from tests.session.test_faults import assert_same_words
from tests.session.test_faults import paced as real_time_paced
from tests.support.fake_sagemaker.server import Fault
from tests.support.transcribers import tone_words_pcm


@pytest.fixture
def sagemaker(fake_sagemaker, realtime_server):
    fake_sagemaker.backend_url = realtime_server.url
    return fake_sagemaker


def transcript(sagemaker, sleep=None, **kw):
    extra = {"sleep": sleep} if sleep else {}

    def once(status):  # a fault strikes once; the reconnected stream stays healthy
        if status.state.value == "reconnecting":
            sagemaker.reset()

    extra["on_status"] = once
    session = CaptionSession(
        sagemaker_connector(sagemaker.target(), sagemaker.provider()), options(**kw), **extra
    )
    run(session.run(paced(tone_words_pcm(WORDS))))
    return session


def test_captions_through_sagemaker(sagemaker):
    session = transcript(sagemaker)
    assert words_of(session) == WORDS
    assert sagemaker.counters.requests == 1


@pytest.mark.parametrize("fault", [Fault.DROP, Fault.MODEL_STREAM_ERROR,
                                   Fault.INTERNAL_STREAM_FAILURE])
def test_fault_mid_sentence_loses_no_words(sagemaker, fault):
    sagemaker.fail_after(15, fault)  # in the middle of the sixth word
    session = transcript(sagemaker)
    assert session.stats.reconnects == 1
    assert words_of(session) == WORDS  # identical to the run without the fault


def test_refused_503_then_recovers(sagemaker):
    sagemaker.refuse(503)
    waits = []

    async def sleep(delay):
        waits.append(sagemaker.counters.requests)
        sagemaker.reset()  # the endpoint comes back while we back off

    session = transcript(sagemaker, sleep=sleep)
    assert waits[0] == 1  # the refused attempt, then a backoff
    assert words_of(session) == WORDS
    assert session.stats.reconnects == 0


def test_bad_secret_fails_without_reconnect_storm(sagemaker):
    session = CaptionSession(
        sagemaker_connector(sagemaker.target(), sagemaker.provider(secret="wrong")), options()
    )
    with pytest.raises(SessionFailed):
        run(session.run(paced(tone_words_pcm(WORDS[:3]))))
    assert sagemaker.counters.requests == 1


# --- real speech through the strict server -------------------------------------------


def strict_session(sagemaker) -> CaptionSession:
    def once(status):  # a fault strikes once
        if status.state.value == "reconnecting":
            sagemaker.reset()

    return CaptionSession(sagemaker_connector(sagemaker.target(), sagemaker.provider()),
                          options(), on_status=once)


@pytest.mark.parametrize("fault", [Fault.DROP, Fault.MODEL_STREAM_ERROR])
def test_real_speech_fault_in_a_repeated_phrase(fake_sagemaker, strict_server, jfk_script,
                                               fault):
    server = strict_server(jfk_script)
    fake_sagemaker.backend_url = server.url
    fake_sagemaker.fail_after(62, fault)  # ≈ 7.7 s in: "…can do for you, ask what…"
    session = strict_session(fake_sagemaker)
    run(session.run(real_time_paced(jfk_script.pcm)))
    assert session.stats.reconnects == 1
    assert_same_words(session, jfk_script, server)


def test_model_container_loading_is_waited_for(fake_sagemaker, strict_server, jfk_script):
    server = strict_server(jfk_script)
    fake_sagemaker.backend_url = server.url
    fake_sagemaker.refuse(424, "Model container is loading. Please retry later.")
    waits = []

    async def sleep(delay):
        waits.append(delay)
        if len(waits) == 2:
            fake_sagemaker.reset()  # the container is up

    statuses = []
    session = CaptionSession(
        sagemaker_connector(fake_sagemaker.target(), fake_sagemaker.provider()),
        options(fail_fast=True), sleep=sleep, on_status=statuses.append)
    run(session.run(real_time_paced(jfk_script.pcm)))
    assert len(waits) == 2 and fake_sagemaker.counters.requests == 3
    assert any("loading" in str(s) and s.retry_in is not None for s in statuses)
    assert_same_words(session, jfk_script, server)
