"""Live (unconfirmed) text, our local server's extension: wire format, bounds, server rules.

The client takes ``captioner.transcription.live`` only inside a request and only
within the audio's text budget (with the request's confirmed text); anything else
is a counted bad frame, never shown. The server rules send it after a push when it
changed or a delta may have confirmed part of it, and never outside a request.
"""

from __future__ import annotations

import json

from captioner.realtime.client_protocol import (
    IMPOSSIBLE_LIVE_TEXT,
    BadFrame,
    ClientConnection,
    text_budget,
)
from captioner.realtime.events import (
    AudioAppend,
    AudioCommit,
    SessionUpdate,
    TranscriptionDelta,
    TranscriptionDone,
    TranscriptionLive,
    decode_server_event,
    encode,
)
from captioner.realtime.server_protocol import Send, ServerConnection

SECOND = b"\x01\x00" * 16_000


def generating(audio: bytes = SECOND) -> ClientConnection:
    conn = ClientConnection()
    conn.send_session_update("tiny.en")
    conn.send_commit()
    conn.send_audio(audio)
    conn.data_to_send()
    return conn


def feed(conn: ClientConnection, *frames: str) -> list:
    for frame in frames:
        conn.receive_text(frame)
    return conn.events_received()


def test_wire_format():
    frame = encode(TranscriptionLive(" world is"))
    assert json.loads(frame) == {"type": "captioner.transcription.live", "text": " world is"}
    assert decode_server_event(frame) == TranscriptionLive(" world is")


def test_live_text_inside_a_request_is_passed_on():
    conn = generating()
    events = feed(conn, encode(TranscriptionLive("Hello wor")),
                  encode(TranscriptionDelta("Hello")), encode(TranscriptionLive(" world")))
    assert events == [TranscriptionLive("Hello wor"), TranscriptionDelta("Hello"),
                      TranscriptionLive(" world")]
    assert conn.request_chars == len("Hello")  # live text is not counted as said
    assert conn.bad_frames == 0


def test_malformed_live_frames_are_bad_frames_and_parsing_goes_on():
    conn = generating()
    frames = ['{"type":"captioner.transcription.live"}',  # no text
              '{"type":"captioner.transcription.live","text":42}',
              '{"type":"captioner.transcription.live","text":null}',
              '{"type":"captioner.transcription.live","text":["a"]}',
              encode(TranscriptionLive(" fine"))]
    events = feed(conn, *frames)
    assert [type(e) for e in events] == [BadFrame] * 4 + [TranscriptionLive]
    assert events[-1] == TranscriptionLive(" fine")
    assert conn.bad_frames == 4


def test_oversized_live_text_is_rejected_and_cleared_but_the_request_goes_on():
    conn = generating(SECOND * 2)
    budget = text_budget(2.0)
    confirmed = "a" * 100
    too_much = " " + "b" * (budget - len(confirmed))  # one character over with the delta
    events = feed(conn, encode(TranscriptionDelta(confirmed)),
                  encode(TranscriptionLive(too_much)), encode(TranscriptionLive(" c")))
    assert events[0] == TranscriptionDelta(confirmed)
    assert isinstance(events[1], BadFrame) and events[1].code == IMPOSSIBLE_LIVE_TEXT
    assert events[2] == TranscriptionLive("")  # what was shown goes
    assert events[3] == TranscriptionLive(" c")  # and the request is still trusted
    assert conn.rejected_texts == 0 and conn.bad_frames == 1
    # exactly at the budget is possible
    assert feed(conn, encode(TranscriptionLive("b" * (budget - len(confirmed))))) == [
        TranscriptionLive("b" * (budget - len(confirmed)))]


def test_64_kib_of_live_text_for_a_second_of_audio_is_never_passed_on():
    conn = generating()
    events = feed(conn, encode(TranscriptionLive("x" * 65536)))
    assert [type(e) for e in events] == [BadFrame, TranscriptionLive]
    assert events[1].text == ""


def test_live_text_outside_a_request_is_a_bad_frame():
    conn = ClientConnection()
    conn.send_session_update("tiny.en")
    events = feed(conn, encode(TranscriptionLive(" stray")))
    assert [type(e) for e in events] == [BadFrame]
    assert events[0].code == "unexpected_event"


def server_in_request() -> ServerConnection:
    server = ServerConnection()
    server.accept()
    server.receive(encode(SessionUpdate("tiny.en")))
    server.receive(encode(AudioAppend(SECOND)))
    server.receive(encode(AudioCommit()))
    return server


def sent(actions: list) -> list:
    return [a.event for a in actions if isinstance(a, Send)]


def test_server_sends_live_text_after_the_delta_when_it_changes():
    server = server_in_request()
    assert sent(server.transcribed("", "Hello")) == [TranscriptionLive("Hello")]
    assert sent(server.transcribed("", "Hello")) == []  # unchanged: nothing to send
    assert sent(server.transcribed("", "Hello world")) == [TranscriptionLive("Hello world")]
    assert sent(server.transcribed("Hello", " world")) == [
        TranscriptionDelta("Hello"), TranscriptionLive(" world")]
    # a delta with live text the same as before: sent again, the delta may have
    # taken it off the client's copy
    assert sent(server.transcribed(" there", " world")) == [
        TranscriptionDelta(" there"), TranscriptionLive(" world")]
    assert sent(server.transcribed(" world", "")) == [
        TranscriptionDelta(" world"), TranscriptionLive("")]


def test_server_without_a_live_transcriber_sends_only_deltas():
    server = server_in_request()
    assert sent(server.transcribed(" hi")) == [TranscriptionDelta(" hi")]


def test_live_text_is_not_part_of_the_done_text_and_resets_per_request():
    server = server_in_request()
    server.transcribed("Ask", " not what")
    server.receive(encode(AudioCommit(final=True)))
    done = sent(server.finished(" not"))
    assert done[-1] == TranscriptionDone("Ask not", done[-1].usage)
    assert sent(server.transcribed(" late", " late")) == []  # no request: nothing
    server.receive(encode(AudioCommit()))
    # a fresh request: the same live text as the old request's last is sent again
    assert sent(server.transcribed("", " not what")) == [TranscriptionLive(" not what")]
