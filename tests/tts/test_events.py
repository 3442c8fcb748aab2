"""Events of the speech-stream protocol: validation, JSON round-trips, hostile input."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from captioner.tts.errors import InvalidRequest, ProtocolError
from captioner.tts.events import (
    LANGUAGES,
    MAX_TEXT_BYTES,
    VOICES,
    AudioChunk,
    AudioDone,
    AudioStart,
    Error,
    InputDone,
    InputText,
    SessionClose,
    SessionConfig,
    SessionDone,
    decode_client_event,
    decode_server_event,
    encode,
)


def test_session_config_is_the_documented_json() -> None:
    frame = encode(SessionConfig(voice="vivian", language="English"))
    assert json.loads(frame) == {
        "type": "session.config", "voice": "vivian", "language": "English",
        "response_format": "pcm", "stream_audio": True,
    }


@pytest.mark.parametrize("voice", VOICES)
@pytest.mark.parametrize("language", LANGUAGES)
def test_every_voice_and_language_round_trips(voice: str, language: str) -> None:
    config = SessionConfig(voice=voice, language=language)
    assert decode_client_event(encode(config)) == config


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"voice": "alice"}, "unknown voice"),
        ({"voice": "vivian", "language": "Klingon"}, "unknown language"),
        ({"voice": "vivian", "speed": 0.2, "stream_audio": False}, "between 0.25 and 4.0"),
        ({"voice": "vivian", "speed": 4.5, "stream_audio": False}, "between 0.25 and 4.0"),
        ({"voice": "vivian", "speed": float("nan"), "stream_audio": False}, "between"),
        ({"voice": "vivian", "speed": 1.5}, "needs response_format 'pcm' and speed 1.0"),
        ({"voice": "vivian", "response_format": "wav"}, "needs response_format 'pcm'"),
        ({"voice": "vivian", "response_format": "ogg", "stream_audio": False}, "format"),
    ],
)
def test_session_config_refuses_what_the_server_would(kwargs: dict, words: str) -> None:
    with pytest.raises(InvalidRequest, match=words):
        SessionConfig(**kwargs)


def test_non_streaming_config_may_change_speed_and_format() -> None:
    config = SessionConfig(voice="ryan", speed=1.5, response_format="wav", stream_audio=False,
                           instructions="calm", task_type="CustomVoice")
    obj = json.loads(encode(config))
    assert obj["speed"] == 1.5 and obj["stream_audio"] is False
    assert obj["instructions"] == "calm" and obj["task_type"] == "CustomVoice"
    assert decode_client_event(encode(config)) == config


def test_input_text_limit_is_128_kib_of_utf8() -> None:
    InputText("é" * (MAX_TEXT_BYTES // 2))
    with pytest.raises(InvalidRequest, match="128 KiB"):
        InputText("é" * (MAX_TEXT_BYTES // 2 + 1))


@pytest.mark.parametrize(
    "event",
    [
        InputText("Hello there."), InputDone(), SessionClose(),
        AudioStart(2, "Hi.", "pcm", 24_000), AudioChunk(b"\x01\x02\x03\x04", 1),
        AudioDone(3, 4800, True), SessionDone(5), Error("boom"),
    ],
)
def test_round_trip(event) -> None:
    server_types = ("audio.start", "audio.chunk", "audio.done", "session.done", "error")
    decode = decode_server_event if event.type in server_types else decode_client_event
    assert decode(encode(event)) == event


@pytest.mark.parametrize(
    "frame, code",
    [
        ("not json", "invalid_json"),
        (b"\xff\xfe", "invalid_json"),
        ("[1, 2]", "invalid_event"),
        ('{"type": 7}', "invalid_event"),
        ('{"type": "audio.start", "sentence_index": "one"}', "invalid_event"),
        ('{"type": "audio.start", "sentence_index": true}', "invalid_event"),
        ('{"type": "audio.start", "sample_rate": -5}', "invalid_event"),
        ('{"type": "audio.chunk", "audio_b64": "***"}', "invalid_audio"),
        ('{"type": "audio.chunk"}', "invalid_event"),
        ('{"type": "session.done", "total_sentences": 1.5}', "invalid_event"),
        ('{"type": "transcription.delta", "delta": "x"}', "unknown_event"),
    ],
)
def test_malformed_server_frames_raise_protocol_error(frame, code: str) -> None:
    with pytest.raises(ProtocolError) as info:
        decode_server_event(frame)
    assert info.value.code == code


def test_bad_client_values_become_protocol_errors_on_the_server_side() -> None:
    with pytest.raises(ProtocolError, match="unknown voice"):
        decode_client_event('{"type": "session.config", "voice": "nobody"}')


def test_error_message_is_taken_from_message_or_error() -> None:
    assert decode_server_event('{"type":"error","message":"idle"}') == Error("idle")
    assert decode_server_event('{"type":"error","error":{"message":"x"}}') == Error("x")


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
_types = st.sampled_from([
    "audio.start", "audio.chunk", "audio.done", "session.done", "error", "session.config",
    "input.text", "input.done", "session.close", "other",
])
_fields = st.sampled_from([
    "sentence_index", "sentence_text", "format", "sample_rate", "audio_b64", "total_bytes",
    "error", "total_sentences", "message", "voice", "language", "speed", "stream_audio",
    "response_format", "text", "instructions", "task_type",
])


@given(st.one_of(st.text(), st.binary()))
def test_arbitrary_frames_raise_nothing_but_protocol_error(frame) -> None:
    for decode in (decode_server_event, decode_client_event):
        with contextlib.suppress(ProtocolError):
            decode(frame)


@given(_types, st.dictionaries(_fields, _json_values, max_size=6))
def test_arbitrary_events_raise_nothing_but_protocol_error(kind: str, fields: dict) -> None:
    frame = json.dumps({"type": kind, **fields})
    for decode in (decode_server_event, decode_client_event):
        with contextlib.suppress(ProtocolError):
            decode(frame)
