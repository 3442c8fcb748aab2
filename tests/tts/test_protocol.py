"""The client connection, bytes in → events out, with no sockets."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from captioner.tts.errors import InvalidState
from captioner.tts.events import (
    MAX_TEXT_BYTES,
    AudioChunk,
    AudioDone,
    AudioStart,
    Error,
    SessionConfig,
    SessionDone,
    encode,
)
from captioner.tts.protocol import BadFrame, ClientConnection, State, StreamEnded
from captioner.tts.text import split_text, utf8_len

CONFIG = SessionConfig(voice="vivian", language="English")


def started() -> ClientConnection:
    conn = ClientConnection()
    conn.send_config(CONFIG)
    conn.send_text("Hello there. How are you?")
    conn.send_input_done()
    return conn


def test_sends_config_text_done_in_order() -> None:
    conn = started()
    frames = [json.loads(f) for f in conn.data_to_send()]
    assert [f["type"] for f in frames] == ["session.config", "input.text", "input.done"]
    assert frames[1]["text"] == "Hello there. How are you?"
    assert conn.data_to_send() == []
    assert conn.state is State.INPUT_DONE


def test_text_before_config_is_a_caller_error() -> None:
    conn = ClientConnection()
    with pytest.raises(InvalidState, match="send text in state new"):
        conn.send_text("hi")
    conn.send_config(CONFIG)
    with pytest.raises(InvalidState):
        conn.send_config(CONFIG)
    conn.send_input_done()
    with pytest.raises(InvalidState):
        conn.send_text("late")


def test_long_text_is_split_into_several_messages() -> None:
    conn = ClientConnection()
    conn.send_config(CONFIG)
    text = "A sentence of some length, repeated. " * 10_000  # ≈ 370 KB
    conn.send_text(text)
    frames = [json.loads(f) for f in conn.data_to_send()[1:]]
    assert len(frames) >= 3
    assert all(utf8_len(f["text"]) <= MAX_TEXT_BYTES for f in frames)
    assert "".join(f["text"] for f in frames) == text
    assert all(f["text"].endswith("repeated. ") for f in frames[:-1])  # cut after sentences


def _reply(conn: ClientConnection, pcm: bytes, *, binary: bool = True) -> list:
    conn.receive_text(encode(AudioStart(0, "Hello there.", "pcm", 24_000)))
    if binary:
        conn.receive_bytes(pcm)
    else:
        conn.receive_text(encode(AudioChunk(pcm, 0)))
    conn.receive_text(encode(AudioDone(0, len(pcm))))
    conn.receive_text(encode(SessionDone(1)))
    return conn.events_received()


@pytest.mark.parametrize("binary", [True, False], ids=["binary-frames", "audio_b64"])
def test_server_that_closes_after_input_done(binary: bool) -> None:
    conn = started()
    conn.data_to_send()
    events = _reply(conn, b"\x01\x00\x02\x00", binary=binary)
    assert events == [AudioStart(0, "Hello there.", "pcm", 24_000),
                      AudioChunk(b"\x01\x00\x02\x00", 0), AudioDone(0, 4), SessionDone(1)]
    assert conn.state is State.DONE and conn.sample_rate == 24_000
    conn.send_close()  # the client still says goodbye; the transport may already be gone
    assert [json.loads(f)["type"] for f in conn.data_to_send()] == ["session.close"]
    conn.receive_eof()
    assert conn.events_received() == []  # closed by our own session.close first
    assert conn.state is State.CLOSED


def test_server_closing_after_done_reports_a_complete_stream() -> None:
    conn = started()
    _reply(conn, b"\x00\x00")
    conn.receive_eof()
    assert conn.events_received() == [StreamEnded(complete=True)]


def test_server_that_keeps_the_session_open_needs_session_close() -> None:
    conn = started()
    conn.data_to_send()
    _reply(conn, b"\x00\x00")
    assert conn.state is State.DONE
    conn.send_close()
    assert json.loads(conn.data_to_send()[0]) == {"type": "session.close"}
    conn.send_close()  # idempotent
    assert conn.data_to_send() == []


def test_stream_that_ends_early_is_reported_incomplete() -> None:
    conn = started()
    conn.receive_text(encode(AudioStart(0, "Hello there.")))
    conn.receive_eof()
    assert conn.events_received()[-1] == StreamEnded(complete=False)


def test_bad_frames_are_skipped_and_parsing_goes_on() -> None:
    conn = started()
    conn.receive_text("{oops")
    conn.receive_text(encode(Error("slow down")))
    conn.receive_text(encode(SessionDone(0)))
    events = conn.events_received()
    assert isinstance(events[0], BadFrame) and events[0].code == "invalid_json"
    assert events[1:] == [Error("slow down"), SessionDone(0)]


def test_pcm_split_mid_sample_is_rejoined() -> None:
    conn = started()
    conn.receive_text(encode(AudioStart(0, "x")))
    conn.receive_bytes(b"\x01\x02\x03")
    conn.receive_bytes(b"\x04\x05")
    chunks = [e.audio for e in conn.events_received() if isinstance(e, AudioChunk)]
    assert chunks == [b"\x01\x02", b"\x03\x04"]
    conn.receive_bytes(b"\x06")
    assert [e.audio for e in conn.events_received()] == [b"\x05\x06"]


def test_session_done_before_config_is_a_bad_frame_not_a_crash() -> None:
    conn = ClientConnection()
    conn.receive_text(encode(SessionDone(0)))
    assert isinstance(conn.events_received()[0], BadFrame)
    assert conn.state is State.NEW


@given(st.lists(st.one_of(st.text(), st.binary()), max_size=20))
def test_arbitrary_input_never_raises(frames: list) -> None:
    conn = started()
    for frame in frames:
        if isinstance(frame, str):
            conn.receive_text(frame)
        else:
            conn.receive_bytes(frame)
    conn.receive_eof()
    events = conn.events_received()
    assert isinstance(events[-1], StreamEnded)


@given(st.text(max_size=3000), st.integers(min_value=4, max_value=200))
def test_split_text_is_lossless_and_within_the_limit(text: str, limit: int) -> None:
    pieces = split_text(text, limit)
    assert "".join(pieces) == text
    assert all(utf8_len(p) <= limit for p in pieces)
    assert all(pieces[:-1])  # no empty piece in the middle


def test_split_text_prefers_sentence_then_word_boundaries() -> None:
    assert split_text("One two. Three four five.", 15) == ["One two. ", "Three four ", "five."]
    assert split_text("abcdefghij", 4) == ["abcd", "efgh", "ij"]


def test_the_protocol_core_imports_no_io() -> None:
    code = ("import sys, captioner.tts, captioner.tts.protocol, captioner.tts.events; "
            "io = {'asyncio', 'socket', 'websockets', 'PySide6', 'sounddevice'}; "
            "bad = io & set(sys.modules); "
            "print(sorted(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
