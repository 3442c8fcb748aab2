"""The local Realtime server follows docs/realtime-protocol.md exactly, over a real socket."""

from __future__ import annotations

import base64
import contextlib
import json

import pytest
from websockets.sync.client import connect

from tests.support.transcribers import tone_words_pcm

MODEL = "test-model"


def b64(pcm: bytes) -> str:
    return base64.b64encode(pcm).decode()


class Client:
    def __init__(self, ws) -> None:
        self.ws = ws
        self.created = self.recv()

    def send(self, **event) -> None:
        self.ws.send(json.dumps(event))

    def recv(self, timeout: float = 10) -> dict:
        return json.loads(self.ws.recv(timeout))

    def until_done(self) -> tuple[str, dict]:
        deltas = []
        while True:
            event = self.recv()
            if event["type"] == "transcription.delta":
                deltas.append(event["delta"])
            elif event["type"] == "transcription.done":
                return "".join(deltas), event
            else:
                raise AssertionError(f"unexpected {event}")


@pytest.fixture
def client(realtime_server):
    with connect(realtime_server.url) as ws:
        yield Client(ws)


def test_session_created_on_accept(client):
    assert client.created["type"] == "session.created"
    assert client.created["id"].startswith("sess-")
    assert isinstance(client.created["created"], int)


def test_transcribes_queued_audio_then_done(client, tone_factory):
    pcm = tone_words_pcm(["alpha", "bravo", "charlie"])
    client.send(type="session.update", model=MODEL)
    client.send(type="input_audio_buffer.append", audio=b64(pcm))  # queued before commit
    client.send(type="input_audio_buffer.commit")
    client.send(type="input_audio_buffer.commit", final=True)
    text, done = client.until_done()
    assert text == " alpha bravo charlie"
    assert done["text"] == text
    assert done["usage"]["total_tokens"] == (
        done["usage"]["prompt_tokens"] + done["usage"]["completion_tokens"]
    )
    assert tone_factory.received == pcm


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("not json", "invalid_json"),
        ('["a list"]', "invalid_event"),
        ('{"type": "session.update"}', "invalid_event"),
        ('{"type": "nope"}', "unknown_event"),
        ('{"type": "input_audio_buffer.append", "audio": "***"}', "invalid_audio"),
        ('{"type": "input_audio_buffer.commit"}', "model_not_validated"),
    ],
)
def test_error_codes(client, frame, code):
    client.ws.send(frame)
    event = client.recv()
    assert event["type"] == "error"
    assert event["code"] == code
    assert event["error"]


def test_binary_frames_are_refused(client):
    client.ws.send(b"\x00\x01")
    event = client.recv()
    assert (event["type"], event["code"]) == ("error", "invalid_json")


def test_model_not_found(realtime_server):
    from tests.support.transcribers import RecordingFactory, ThreadedServer

    with contextlib.ExitStack() as stack:
        server = stack.enter_context(ThreadedServer(RecordingFactory(), models={"only-this"}))
        c = Client(stack.enter_context(connect(server.url)))
        c.send(type="session.update", model="other")
        assert c.recv()["code"] == "model_not_found"
        c.send(type="session.update", model="only-this")
        c.send(type="input_audio_buffer.commit", final=True)
        assert c.until_done()[1]["type"] == "transcription.done"


def test_later_commits_are_ignored_while_generating(client, tone_factory):
    client.send(type="session.update", model=MODEL)
    client.send(type="input_audio_buffer.commit")
    for word in ["alpha", "bravo"]:
        client.send(type="input_audio_buffer.append", audio=b64(tone_words_pcm([word])))
        client.send(type="input_audio_buffer.commit")  # ignored: same request goes on
    client.send(type="input_audio_buffer.commit", final=True)
    text, _ = client.until_done()
    assert text == " alpha bravo"
    assert len(tone_factory.made) == 1


def test_audio_after_final_is_dropped_and_next_commit_is_fresh():
    import threading

    from tests.support.transcribers import RecordingFactory, ThreadedServer, ToneWordTranscriber

    gate = threading.Event()

    class SlowFinish(ToneWordTranscriber):
        def finish(self):
            gate.wait(10)  # hold "done" until the client knows its late append arrived
            return super().finish()

    factory = RecordingFactory()

    def make():
        factory.made.append(SlowFinish())
        return factory.made[-1]

    with ThreadedServer(make) as server, connect(server.url) as ws:
        client = Client(ws)
        client.send(type="session.update", model=MODEL)
        client.send(type="input_audio_buffer.append", audio=b64(tone_words_pcm(["alpha"])))
        client.send(type="input_audio_buffer.commit")
        client.send(type="input_audio_buffer.commit", final=True)
        # appended after final, before done: the server must drop it
        client.send(type="input_audio_buffer.append", audio=b64(tone_words_pcm(["bravo"])))
        client.ws.send("{}")  # an error reply proves the server has read everything before it
        while (event := client.recv())["type"] != "error":
            assert event["type"] == "transcription.delta"
        gate.set()
        text, _ = client.until_done()
        assert "bravo" not in text
        client.send(type="input_audio_buffer.append", audio=b64(tone_words_pcm(["charlie"])))
        client.send(type="input_audio_buffer.commit")
        client.send(type="input_audio_buffer.commit", final=True)
        text, _ = client.until_done()
        assert text == " charlie"  # fresh request: no "bravo", no "alpha" context
        assert len(factory.made) == 2
        assert factory.made[1].received == tone_words_pcm(["charlie"])


def test_transcriber_failure_is_processing_error(realtime_server):
    from tests.support.transcribers import ThreadedServer

    class Broken:
        def push(self, pcm):
            raise RuntimeError("boom")

        def finish(self):
            return ""

    with ThreadedServer(Broken) as server, connect(server.url) as ws:
        c = Client(ws)
        c.send(type="session.update", model=MODEL)
        c.send(type="input_audio_buffer.append", audio=b64(b"\0\0" * 320))
        c.send(type="input_audio_buffer.commit")
        event = c.recv()
        assert (event["type"], event["code"]) == ("error", "processing_error")
        assert "boom" in event["error"]


def test_wrong_path_is_404(realtime_server):
    from websockets.exceptions import InvalidStatus

    url = realtime_server.url.replace("/v1/realtime", "/elsewhere")
    with pytest.raises(InvalidStatus) as info, connect(url):
        pass
    assert info.value.response.status_code == 404
