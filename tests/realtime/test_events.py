import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from captioner.realtime.events import (
    AudioAppend,
    AudioCommit,
    ProtocolError,
    ServerError,
    SessionCreated,
    SessionUpdate,
    TranscriptionDelta,
    TranscriptionDone,
    TranscriptionLive,
    Usage,
    decode_client_event,
    decode_server_event,
    encode,
)

CLIENT_EVENTS = [
    SessionUpdate(model="mistralai/Voxtral-Mini-4B-Realtime-2602"),
    AudioAppend(audio=b"\x01\x02" * 100),
    AudioAppend(audio=b""),
    AudioCommit(),
    AudioCommit(final=True),
]
SERVER_EVENTS = [
    SessionCreated(id="sess-1", created=1764400000),
    TranscriptionDelta(delta=" héllo"),
    TranscriptionDelta(delta=""),
    TranscriptionLive(text=" world is"),
    TranscriptionLive(text=""),
    TranscriptionDone(text="hello world", usage=Usage(10, 2, 12)),
    ServerError(error="bad", code="invalid_audio"),
    ServerError(error="no code"),
]


@pytest.mark.parametrize("event", CLIENT_EVENTS, ids=repr)
def test_client_events_round_trip(event):
    assert decode_client_event(encode(event)) == event


@pytest.mark.parametrize("event", SERVER_EVENTS, ids=repr)
def test_server_events_round_trip(event):
    assert decode_server_event(encode(event)) == event


def test_wire_format_matches_vllm():
    assert json.loads(encode(AudioCommit())) == {"type": "input_audio_buffer.commit"}
    assert json.loads(encode(AudioCommit(final=True)))["final"] is True
    assert json.loads(encode(AudioAppend(b"\x00\x00"))) == {
        "type": "input_audio_buffer.append", "audio": "AAA="}


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("{", "invalid_json"),
        (b"\xff", "invalid_json"),
        ("1", "invalid_event"),
        ('{"type": 3}', "invalid_event"),
        ('{"type": "session.update", "model": 5}', "invalid_event"),
        ('{"type": "session.update", "model": ""}', "invalid_event"),
        ('{"type": "input_audio_buffer.append", "audio": "AAE"}', "invalid_audio"),
        ('{"type": "input_audio_buffer.append", "audio": "AAEA"}', "invalid_audio"),  # odd bytes
        ('{"type": "input_audio_buffer.commit", "final": "yes"}', "invalid_event"),
        ('{"type": "response.create"}', "unknown_event"),
    ],
)
def test_client_decode_errors_are_typed(frame, code):
    with pytest.raises(ProtocolError) as info:
        decode_client_event(frame)
    assert info.value.code == code


@pytest.mark.parametrize(
    "frame",
    [
        '{"type": "transcription.delta"}',
        '{"type": "transcription.delta", "delta": 1}',
        '{"type": "session.created", "created": 1e999}',
        '{"type": "transcription.done", "text": []}',
    ],
)
def test_server_decode_errors_are_typed(frame):
    with pytest.raises(ProtocolError):
        decode_server_event(frame)


def test_lenient_usage_and_nested_error():
    done = decode_server_event(
        '{"type":"transcription.done","text":"x","usage":{"prompt_tokens":"a"}}'
    )
    assert done.usage == Usage()
    err = decode_server_event('{"type":"error","error":{"message":"boom"},"code":7}')
    assert err == ServerError(error="boom", code=None)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12,
)
event_like = st.fixed_dictionaries(
    {"type": st.sampled_from([
        "session.update", "input_audio_buffer.append", "input_audio_buffer.commit",
        "session.created", "transcription.delta", "transcription.done", "error", "x",
    ])},
    optional={k: json_values for k in
              ("model", "audio", "final", "id", "created", "delta", "text", "usage", "error",
               "code")},
)


@given(st.one_of(st.binary(), st.text(), json_values.map(json.dumps), event_like.map(json.dumps)))
def test_decoders_raise_only_protocol_error(frame):
    for decode in (decode_client_event, decode_server_event):
        with contextlib.suppress(ProtocolError):  # anything else fails the test
            decode(frame)
