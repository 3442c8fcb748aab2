"""The sans-I/O Realtime client: bytes in, events out, no sockets.

Property tests drive it with arbitrary frames and arbitrary call sequences, and pair it
in memory with the server rules (``ServerConnection``) the local engine runs.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import captioner.realtime.client_protocol as cp
from captioner.errors import CaptionerError
from captioner.realtime.client_protocol import (
    BadFrame,
    ClientConnection,
    Refused,
    RejectedText,
    RequestEnded,
    RequestFailed,
    State,
    StreamEnded,
    parse_context_limit,
    text_budget,
)
from captioner.realtime.errors import (
    InvalidRequest,
    InvalidState,
    ProtocolError,
    UsageError,
)
from captioner.realtime.events import (
    ServerError,
    SessionCreated,
    TranscriptionDelta,
    TranscriptionDone,
    encode,
)
from captioner.realtime.server_protocol import (
    FinishRequest,
    Send,
    ServerConnection,
)

SECOND = b"\x01\x00" * 16_000


def generating(model: str = "voxtral") -> ClientConnection:
    conn = ClientConnection()
    conn.send_session_update(model)
    conn.send_commit()
    conn.data_to_send()
    return conn


def feed(conn: ClientConnection, *events) -> list:
    for event in events:
        conn.receive_text(encode(event))
    return conn.events_received()


def test_frames_queue_in_order_and_drain():
    conn = ClientConnection()
    conn.send_session_update("voxtral")
    conn.send_audio(b"\x00\x00" * 4)
    conn.send_commit()
    frames = [json.loads(f) for f in conn.data_to_send()]
    assert [f["type"] for f in frames] == ["session.update", "input_audio_buffer.append",
                                           "input_audio_buffer.commit"]
    assert "final" not in frames[2]
    assert conn.data_to_send() == []
    assert conn.state is State.GENERATING and conn.request_samples == 4


def test_final_commit_needs_a_running_request():
    conn = ClientConnection()
    conn.send_session_update("voxtral")
    with pytest.raises(InvalidState, match="final commit in state idle"):
        conn.send_commit(final=True)
    assert conn.data_to_send() == [encode_update("voxtral")]


def encode_update(model: str) -> str:
    conn = ClientConnection()
    conn.send_session_update(model)
    return conn.data_to_send()[0]


def test_audio_after_final_commit_is_our_bug():
    conn = generating()
    conn.send_commit(final=True)
    with pytest.raises(InvalidState):
        conn.send_audio(SECOND)  # the server would discard it silently
    assert feed(conn, TranscriptionDone("hi")) == [TranscriptionDone("hi")]
    conn.send_audio(SECOND)  # idle again: queued for the next request
    assert conn.state is State.IDLE


def test_a_done_nobody_asked_for_ends_the_request_and_says_so():
    conn = generating()
    assert feed(conn, TranscriptionDone("hi")) == [TranscriptionDone("hi"), RequestEnded()]
    assert conn.state is State.IDLE  # audio sent now waits for a request that never runs
    conn.send_commit()
    conn.send_commit(final=True)
    assert feed(conn, TranscriptionDone("")) == [TranscriptionDone("")]  # asked for


def test_misuse_and_peer_faults_are_separate_trees():
    assert issubclass(InvalidState, UsageError) and not issubclass(InvalidState, ProtocolError)
    assert issubclass(ProtocolError, CaptionerError) and issubclass(UsageError, CaptionerError)
    with pytest.raises(InvalidRequest):
        ClientConnection().send_session_update("")
    conn = ClientConnection()
    conn.send_session_update("m")
    with pytest.raises(InvalidRequest):
        conn.send_audio(b"\x00")


def test_impossible_delta_is_rejected_and_the_request_withheld():
    conn = generating()
    conn.send_audio(SECOND * 2)
    events = feed(conn, TranscriptionDelta(" it was"), TranscriptionDelta("x" * 65536),
                  TranscriptionDelta(" the best"), TranscriptionDone(" it was" + "x" * 65536))
    assert events[0] == TranscriptionDelta(" it was")
    assert isinstance(events[1], RejectedText) and events[1].chars == 65536
    assert events[2] == TranscriptionDone("")  # the rest of that request is not shown
    assert conn.rejected_texts == 1
    conn.send_commit()  # a fresh request is trusted again
    conn.send_audio(SECOND)
    assert feed(conn, TranscriptionDelta(" of times")) == [TranscriptionDelta(" of times")]


def test_text_budget_grows_with_audio():
    conn = generating()
    allowed = "a" * text_budget(0)
    assert feed(conn, TranscriptionDelta(allowed)) == [TranscriptionDelta(allowed)]
    assert isinstance(feed(conn, TranscriptionDelta("b"))[0], RejectedText)
    conn = generating()
    conn.send_audio(SECOND * 10)
    speech = " word" * 40  # 200 characters in 10 s is ordinary speech
    assert feed(conn, TranscriptionDelta(speech), TranscriptionDelta(speech)) == [
        TranscriptionDelta(speech)] * 2


def test_context_limit_error_is_parsed_and_ends_the_request():
    conn = generating()
    message = ("The decoder prompt (length 1013) is longer than the maximum model length "
               "of 1000. Make sure that `max_model_len` is no smaller than the number of "
               "text tokens.")
    [event] = feed(conn, ServerError(message, "processing_error"))
    assert event == RequestFailed(message, 1000, 1013) and event.context_limit
    assert conn.state is State.IDLE
    with pytest.raises(InvalidState):  # no generation runs: no final commit
        conn.send_commit(final=True)


def test_plain_processing_error_has_no_limit():
    conn = generating()
    [event] = feed(conn, ServerError("CUDA error", "processing_error"))
    assert isinstance(event, RequestFailed) and not event.context_limit
    assert parse_context_limit("maximum context length is 8192 tokens") == (8192, None)


def test_refusal_and_unexpected_events():
    conn = ClientConnection()
    conn.send_session_update("nope")
    events = feed(conn, SessionCreated("sess-1", 0), ServerError("model not found",
                  "model_not_found"), TranscriptionDelta("stray"), TranscriptionDone("x"))
    assert events[0] == SessionCreated("sess-1", 0)
    assert events[1] == Refused("model_not_found", "model not found")
    assert [type(e) for e in events[2:]] == [BadFrame, BadFrame]
    conn.receive_eof()
    assert conn.events_received() == [StreamEnded(idle=True)] and conn.state is State.CLOSED


def test_the_core_imports_no_io():
    tree = ast.parse(Path(cp.__file__).read_text())
    names = {alias.name.split(".")[0] for node in ast.walk(tree)
             if isinstance(node, ast.Import | ast.ImportFrom)
             for alias in (node.names if isinstance(node, ast.Import) else
                           [type("A", (), {"name": node.module or ""})])}
    assert not names & {"asyncio", "socket", "threading", "websockets", "PySide6", "ssl"}


# --- properties ---------------------------------------------------------------

frames = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=64),
    st.builds(lambda t, d: json.dumps({"type": t, "delta": d}),
              st.sampled_from(["transcription.delta", "transcription.done", "error",
                               "session.created", "bogus"]),
              st.one_of(st.text(max_size=30), st.integers(), st.none())),
    st.builds(lambda m, c: json.dumps({"type": "error", "error": m, "code": c}),
              st.text(max_size=80), st.sampled_from(["processing_error", "model_not_found",
                                                     "invalid_audio", None])),
)
calls = st.lists(st.one_of(
    st.tuples(st.just("audio"), st.integers(0, 4000)),
    st.tuples(st.just("commit"), st.booleans()),
    st.tuples(st.just("frame"), frames),
    st.tuples(st.just("eof"), st.none()),
), max_size=40)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(calls)
def test_any_sequence_follows_the_table_and_never_raises_on_input(sequence):
    conn = ClientConnection()
    conn.send_session_update("m")
    shown = 0
    for kind, arg in sequence:
        before = conn.state
        if kind == "frame":
            conn.receive_text(arg)
        elif kind == "eof":
            conn.receive_eof()
        else:
            what = ("send audio" if kind == "audio" else
                    "send final commit" if arg else "send commit")
            allowed = (before, what) in cp._TRANSITIONS
            try:
                conn.send_audio(b"\x00\x00" * arg) if kind == "audio" else conn.send_commit(
                    final=arg)
            except InvalidState:
                assert not allowed and conn.state is before
            else:
                assert allowed and conn.state is cp._TRANSITIONS[(before, what)]
        for event in conn.events_received():
            if isinstance(event, TranscriptionDelta):
                shown += len(event.delta)
            if isinstance(event, TranscriptionDone):
                shown = 0  # a new request starts its own budget
        assert conn.request_chars <= text_budget(conn.request_seconds)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(1, 3200), st.just("commit"), st.just("final"),
                          st.just("done")), max_size=60))
def test_paired_with_the_server_rules_no_frame_is_refused(script):
    """Whatever the driver does within the client's rules, the strict server never
    answers with an error and never sees a final commit without a request."""
    client, server = ClientConnection(), ServerConnection({"m"})
    client.send_session_update("m")
    pending_finish = False
    for step in script:
        try:
            if step == "commit":
                client.send_commit()
            elif step == "final":
                client.send_commit(final=True)
            elif step == "done":
                if not pending_finish:
                    continue
                for action in server.finished(""):
                    assert isinstance(action, Send)
                    client.receive_text(encode(action.event))
                pending_finish = False
            else:
                client.send_audio(b"\x00\x00" * step)
        except InvalidState:
            continue
        for frame in client.data_to_send():
            for action in server.receive(frame):
                assert not (isinstance(action, Send) and isinstance(action.event, ServerError))
                pending_finish |= isinstance(action, FinishRequest)
        client.events_received()
    assert server.protocol_errors == 0 and server.final_without_request == 0
