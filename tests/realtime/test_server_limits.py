"""The server rules' own limits, bytes in → actions out (no sockets)."""

from __future__ import annotations

import base64
import json

from captioner.realtime.events import ServerError
from captioner.realtime.server_protocol import (
    AUDIO_BUFFER_FULL,
    BYTES_PER_SECOND,
    CLOSE_POLICY,
    CLOSE_TOO_BIG,
    MESSAGE_TOO_LARGE,
    Close,
    Feed,
    Limits,
    Send,
    ServerConnection,
    StartRequest,
)


def append(pcm: bytes) -> str:
    return json.dumps({"type": "input_audio_buffer.append",
                       "audio": base64.b64encode(pcm).decode()})


def test_a_frame_over_the_limit_is_answered_then_closed() -> None:
    conn = ServerConnection(limits=Limits(max_message_bytes=1000))
    actions = conn.receive("x" * 1001)
    assert len(actions) == 2
    error, close = actions
    assert isinstance(error, Send) and isinstance(error.event, ServerError)
    assert error.event.code == MESSAGE_TOO_LARGE
    assert "1,001 bytes" in error.event.error and "1,000" in error.event.error
    assert close == Close(CLOSE_TOO_BIG, MESSAGE_TOO_LARGE)
    assert conn.receive('{"type": "session.update", "model": "m"}') == []  # closed: ignored


def test_audio_queued_without_a_commit_is_capped() -> None:
    one_second = b"\x00\x01" * (BYTES_PER_SECOND // 2)
    conn = ServerConnection(limits=Limits(max_queued_bytes=3 * BYTES_PER_SECOND))
    for _ in range(3):
        assert conn.receive(append(one_second)) == []
    error, close = conn.receive(append(one_second))
    assert isinstance(error, Send) and error.event.code == AUDIO_BUFFER_FULL
    assert "3 s of audio" in error.event.error
    assert close == Close(CLOSE_POLICY, AUDIO_BUFFER_FULL)


def test_a_commit_empties_the_queue_so_the_cap_applies_anew() -> None:
    one_second = b"\x00\x01" * (BYTES_PER_SECOND // 2)
    conn = ServerConnection(limits=Limits(max_queued_bytes=2 * BYTES_PER_SECOND))
    conn.receive('{"type": "session.update", "model": "m"}')
    conn.receive(append(one_second))
    conn.receive(append(one_second))
    actions = conn.receive('{"type": "input_audio_buffer.commit"}')
    assert actions == [StartRequest(), Feed(one_second * 2)]
    for _ in range(10):  # generating: appends feed the request, nothing is queued
        assert conn.receive(append(one_second)) == [Feed(one_second)]
