"""The bridge relays a Realtime session unchanged, over real sockets on 127.0.0.1.

Direct vs. bridged runs use the lead's RealtimeServer with the tone-word
transcriber; close/drop/handshake behaviour uses a scripted backend.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import struct
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from bridge.config import BridgeConfig
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.container.servers import WAIT, BridgeThread, ScriptedBackend
from tests.support.transcribers import tone_words_pcm

MODEL = "voxtral-test"


def script(*requests: list[str]) -> list[list[str]]:
    """Rounds of frames: two protocol errors and the update, then one round per request.

    Each round ends with a final commit; the next is sent only after its
    ``transcription.done``, since audio appended while finishing is dropped.
    """
    setup = ["not json", json.dumps({"type": "input_audio_buffer.commit"})]
    setup.append(json.dumps({"type": "session.update", "model": MODEL}))
    rounds = [setup]
    for words in requests:
        pcm = tone_words_pcm(words)
        frames = []
        for start in range(0, len(pcm), 4096):
            chunk = base64.b64encode(pcm[start : start + 4096]).decode()
            frames.append(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))
        frames.append(json.dumps({"type": "input_audio_buffer.commit"}))
        frames.append(json.dumps({"type": "input_audio_buffer.commit", "final": True}))
        rounds.append(frames)
    return rounds


def run(url: str, rounds: list[list[str]], *, binary: bool = False) -> list[dict]:
    """Play ``rounds``; collect events until each request's transcription.done."""
    events: list[dict] = []
    with connect(url, open_timeout=WAIT) as ws:
        setup, *requests = rounds
        for frame in setup:
            ws.send(frame.encode() if binary else frame)
        for frames in requests:
            for frame in frames:
                ws.send(frame.encode() if binary else frame)
            while not events or events[-1]["type"] != "transcription.done":
                events.append(json.loads(ws.recv(timeout=WAIT)))
            events.append({"type": "-- round --"})
    return events


def normalized(events: list[dict]) -> list[dict]:
    """Drop the values that differ per session (id, created)."""
    return [{"type": e["type"]} if e["type"] == "session.created" else e for e in events]


def done_texts(events: list[dict]) -> list[str]:
    return [e["text"] for e in events if e["type"] == "transcription.done"]


@pytest.fixture
def bridge(realtime_server):
    with BridgeThread(BridgeConfig(backend_url=realtime_server.url)) as bridge:
        yield bridge


def test_bridged_events_equal_direct_events(realtime_server, bridge):
    frames = script(["alpha", "bravo", "charlie"], ["delta", "echo"])
    direct = run(realtime_server.url, frames)
    bridged = run(bridge.url(), frames)

    assert normalized(bridged) == normalized(direct)
    assert [e["code"] for e in bridged if e["type"] == "error"] == [
        "invalid_json",
        "model_not_validated",
    ]
    assert done_texts(bridged) == [" alpha bravo charlie", " delta echo"]


def test_binary_frames_are_relayed_as_text(realtime_server, bridge):
    frames = script(["foxtrot", "golf"], ["hotel"])
    direct = run(realtime_server.url, frames)
    bridged = run(bridge.url(), frames, binary=True)

    assert normalized(bridged) == normalized(direct)
    assert done_texts(bridged) == [" foxtrot golf", " hotel"]


def test_undecodable_binary_frame_is_an_invalid_json_error_and_session_goes_on(bridge):
    setup, *requests = script(["india"], ["juliet"])
    with connect(bridge.url(), open_timeout=WAIT) as ws:
        assert json.loads(ws.recv(timeout=WAIT))["type"] == "session.created"
        ws.send(b"\xff\xfe not utf-8")
        error = json.loads(ws.recv(timeout=WAIT))
        assert error["type"] == "error"
        assert error["code"] == "invalid_json"
        assert "UTF-8" in error["error"]
        ws.send(setup[-1])  # the update, without the script's own two errors
        events = []
        for frames in requests:
            for frame in frames:
                ws.send(frame)
            events += [json.loads(ws.recv(timeout=WAIT)) for _ in range(2)]  # delta, done
    assert done_texts(events) == [" india", " juliet"]


def test_four_concurrent_sessions_get_their_own_transcripts(bridge):
    words = [
        (["alpha", "bravo"], ["charlie"]),
        (["delta", "echo"], ["foxtrot"]),
        (["golf", "hotel"], ["india"]),
        (["juliet", "kilo"], ["lima"]),
    ]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda w: run(bridge.url(), script(*w)), words))

    for (first, second), events in zip(words, results, strict=True):
        assert done_texts(events) == [" " + " ".join(first), " " + " ".join(second)]


def test_model_invocation_path_is_routed_to_the_same_backend_path(realtime_server, bridge):
    events = run(bridge.url("/v1/realtime"), script(["mike"], ["november"]))
    assert done_texts(events) == [" mike", " november"]


def test_unknown_path_reports_the_backend_refusal(bridge):
    with connect(bridge.url("/v1/nowhere"), open_timeout=WAIT) as ws:
        error = json.loads(ws.recv(timeout=WAIT))
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=WAIT)
    assert error["type"] == "error"
    assert error["code"] == "processing_error"
    assert "HTTP 404" in error["error"]
    assert ws.close_code == 1011


# --- scripted backend: close codes, drops, slow handshakes --------------------


@pytest.fixture
def backend():
    with ScriptedBackend() as backend:
        yield backend


@pytest.fixture
def scripted_bridge(backend):
    with BridgeThread(BridgeConfig(backend_url=backend.url)) as bridge:
        yield bridge


@contextlib.contextmanager
def open_session(bridge: BridgeThread) -> Iterator[ClientConnection]:
    """A bridged connection whose backend side is up (an echo round trip proves it)."""
    with connect(bridge.url(), open_timeout=WAIT) as ws:
        ws.send("hello")
        assert ws.recv(timeout=WAIT) == "hello"
        yield ws


def test_client_close_closes_backend_with_code_and_reason(scripted_bridge, backend):
    with open_session(scripted_bridge) as ws:
        ws.close(4002, "user stopped captions")

    record = backend.connections[0]
    assert record.ended.wait(WAIT)
    assert (record.close_code, record.close_reason) == (4002, "user stopped captions")


def test_client_drop_closes_backend(scripted_bridge, backend):
    with open_session(scripted_bridge) as ws:
        # RST without a close frame
        ws.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        ws.socket.close()

        record = backend.connections[0]
        assert record.ended.wait(WAIT)
    # uvicorn reports a dropped client as "no status" (1005) → 1000; a 1006 would give 1001.
    assert record.close_code in (1000, 1001)


def test_backend_close_closes_client_with_code_and_reason(scripted_bridge, backend):
    with open_session(scripted_bridge) as ws:
        ws.send("close 4003 model unloaded")
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=WAIT)
    assert (ws.close_code, ws.close_reason) == (4003, "model unloaded")


def test_backend_drop_sends_error_event_then_closes_client(scripted_bridge, backend):
    with open_session(scripted_bridge) as ws:
        ws.send("drop")
        error = json.loads(ws.recv(timeout=WAIT))
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=WAIT)
    assert error == {
        "type": "error",
        "error": "connection to the speech backend was lost",
        "code": "processing_error",
    }
    assert ws.close_code == 1011


def test_client_is_accepted_before_backend_and_early_frames_are_buffered(scripted_bridge, backend):
    backend.hold_handshakes()
    with connect(scripted_bridge.url(), open_timeout=WAIT) as ws:
        # The handshake with the bridge completed although the backend's is held.
        ws.send("first")
        ws.send(b"second")
        assert not backend.connected.is_set()
        backend.release_handshakes()
        assert ws.recv(timeout=WAIT) == "first"
        assert ws.recv(timeout=WAIT) == "second"  # binary in, text out
    assert backend.connections[0].received == ["first", "second"]


def test_non_ascii_text_crosses_both_ways_intact(scripted_bridge, backend):
    with open_session(scripted_bridge) as ws:
        ws.send('{"type":"x","text":"ü—字"}')
        assert ws.recv(timeout=WAIT) == '{"type":"x","text":"ü—字"}'
        ws.send('{"type":"y","text":"é"}'.encode())
        assert ws.recv(timeout=WAIT) == '{"type":"y","text":"é"}'


def test_backend_binary_frames_reach_the_client_as_binary(scripted_bridge, backend):
    # vLLM-Omni speech streams send raw PCM as binary frames; the bridge passes them on.
    with open_session(scripted_bridge) as ws:
        ws.send("bytes")
        assert ws.recv(timeout=WAIT) == b"\x00\x01pcm"
