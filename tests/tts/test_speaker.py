"""The speaker over a real WebSocket to the local vLLM-Omni-compatible server."""

from __future__ import annotations

import asyncio
import json
import socket
import wave
from pathlib import Path

import pytest
from websockets.asyncio.server import serve

from captioner.audio.playback import WavSink
from captioner.transport.websocket import WebSocketTransport, websocket_connector
from captioner.tts.errors import (
    EndpointUnavailable,
    GenerationFailed,
    IdleTimeout,
    LocalVoiceError,
    StreamBroken,
)
from captioner.tts.events import (
    AudioDone,
    AudioStart,
    Error,
    SessionConfig,
    SessionDone,
    encode,
)
from captioner.tts.fallback import EspeakVoice
from captioner.tts.protocol import ClientConnection, StreamEnded
from captioner.tts.speaker import Speaker, SpeakerState, SpeakerStatus, SpokenReply
from tests.support.omni_server import ThreadedOmniServer

CONFIG = SessionConfig(voice="vivian", language="English")
THREE = "The first sentence is here. The second one follows. And the third ends it."


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


class RecordingVoice:
    """Stands in for the platform voice (the true edge): records what it was asked to say."""

    name = "test voice"

    def __init__(self, fail: bool = False) -> None:
        self.said: list[str] = []
        self.stopped = 0
        self.fail = fail

    async def say(self, text: str, on_start=None) -> None:
        if self.fail:
            raise LocalVoiceError("no speech engine")
        self.said.append(text)
        if on_start is not None:
            on_start()

    def stop(self) -> None:
        self.stopped += 1


class Observed:
    def __init__(self) -> None:
        self.statuses: list[SpeakerStatus] = []
        self.spoken: list[SpokenReply] = []

    def states(self) -> list[SpeakerState]:
        return [s.state for s in self.statuses]


def make_speaker(url: str | None, sink, observed: Observed, **kwargs) -> Speaker:
    return Speaker(websocket_connector(url) if url else None, sink, CONFIG,
                   on_status=observed.statuses.append, on_spoken=observed.spoken.append,
                   **kwargs)


def wav_bytes(path: Path) -> bytes:
    with wave.open(str(path), "rb") as wav:
        assert wav.getframerate() == 24_000 and wav.getnchannels() == 1
        return wav.readframes(wav.getnframes())


@pytest.mark.parametrize("keep_open", [False, True], ids=["closes-after-done", "keeps-open"])
@pytest.mark.parametrize("b64", [False, True], ids=["binary", "audio_b64"])
def test_speaks_a_reply_for_both_session_styles(omni_server: ThreadedOmniServer, tmp_path: Path,
                                                keep_open: bool, b64: bool) -> None:
    omni_server.behavior.keep_open = keep_open
    omni_server.behavior.b64_chunks = b64
    observed = Observed()
    sink = WavSink(tmp_path / "reply.wav")

    async def main():
        speaker = make_speaker(omni_server.url, sink, observed)
        result = await speaker.speak(THREE)
        await sink.close()
        return result

    result = run(main())
    session = omni_server.sessions[0]
    assert session.ended.wait(5)
    assert result.completed and result.via == "endpoint" and result.error is None
    assert result.sentences == 3 and len(session.sentences) == 3
    assert wav_bytes(tmp_path / "reply.wav") == bytes(session.pcm)
    assert result.pcm_bytes == len(session.pcm)
    assert session.texts == [THREE]
    assert session.config == CONFIG
    if keep_open:
        assert session.received[-1] == "session.close" and session.closed_by == "client"
    else:
        assert session.closed_by == "server"
    assert observed.states() == [SpeakerState.CONNECTING, SpeakerState.SPEAKING,
                                 SpeakerState.IDLE]
    assert observed.spoken == [SpokenReply(THREE, "endpoint")]


def test_queued_replies_are_spoken_in_order(omni_server: ThreadedOmniServer,
                                            tmp_path: Path) -> None:
    observed = Observed()
    sink = WavSink(tmp_path / "replies.wav")

    async def main():
        speaker = make_speaker(omni_server.url, sink, observed)
        for text in ("One.", "Two words.", "Three more words."):
            speaker.say(text)
        await speaker.wait_idle()
        await speaker.aclose()
        await sink.close()
        return speaker.results

    results = run(main())
    assert [r.text for r in results] == ["One.", "Two words.", "Three more words."]
    assert [s.texts for s in omni_server.sessions] == [["One."], ["Two words."],
                                                       ["Three more words."]]
    assert wav_bytes(tmp_path / "replies.wav") == b"".join(
        bytes(s.pcm) for s in omni_server.sessions)
    assert [r.text for r in observed.spoken] == ["One.", "Two words.", "Three more words."]


def test_stop_cancels_mid_sentence_and_abandons_the_stream(omni_server: ThreadedOmniServer,
                                                           tmp_path: Path) -> None:
    omni_server.behavior.realtime_factor = 1.0  # a 3 s sentence takes 3 s to arrive
    omni_server.behavior.min_sentence_seconds = 3.0
    voice = RecordingVoice()

    async def main():
        speaker: Speaker

        def on_status(status: SpeakerStatus) -> None:
            if status.state is SpeakerState.SPEAKING:
                speaker.stop()  # the user presses Stop as soon as audio plays

        speaker = Speaker(websocket_connector(omni_server.url), WavSink(tmp_path / "x.wav"),
                          CONFIG, local_voice=voice, on_status=on_status)
        speaker.say("Short.")
        speaker.say("Never spoken.")
        result_task = asyncio.ensure_future(speaker.wait_idle())
        await result_task
        await speaker.aclose()
        return speaker

    speaker = run(main())
    session = omni_server.sessions[0]
    assert session.ended.wait(5)
    assert [r.cancelled for r in speaker.results] == [True]
    assert len(omni_server.sessions) == 1  # the queued reply was dropped
    assert session.closed_by == "client"
    assert len(session.pcm) < 3 * 24_000 * 2 // 2  # abandoned well before the end
    assert speaker.state is SpeakerState.IDLE and speaker.status.message == "Stopped."
    assert voice.said == [] and voice.stopped == 1


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_endpoint_down_falls_back_to_the_local_voice(tmp_path: Path) -> None:
    observed = Observed()
    voice = RecordingVoice()
    url = f"ws://127.0.0.1:{_unused_port()}/v1/audio/speech/stream"
    speaker = make_speaker(url, WavSink(tmp_path / "x.wav"), observed, local_voice=voice)

    result = run(speaker.speak("Can you hear me?"))
    assert voice.said == ["Can you hear me?"]
    assert result.via == "local" and result.completed
    assert isinstance(result.error, EndpointUnavailable)
    error = next(s for s in observed.statuses if s.state is SpeakerState.ERROR)
    assert "voice service is unavailable" in error.message and "refused" in error.message
    local = observed.statuses[-2]
    assert local.state is SpeakerState.SPEAKING and local.local_voice
    assert "computer's voice (test voice)" in local.message
    assert observed.states()[-1] is SpeakerState.IDLE
    assert observed.spoken == [SpokenReply("Can you hear me?", "local")]


def test_no_endpoint_configured_uses_the_local_voice() -> None:
    observed = Observed()
    voice = RecordingVoice()
    speaker = make_speaker(None, None, observed, local_voice=voice)
    result = run(speaker.speak("Hello."))
    assert voice.said == ["Hello."] and result.via == "local" and result.error is None
    assert observed.statuses[0].message.startswith("No voice endpoint is set up")


def test_no_voice_at_all_is_a_clear_error() -> None:
    observed = Observed()
    speaker = make_speaker(None, None, observed, local_voice=RecordingVoice(fail=True))
    result = run(speaker.speak("Hello."))
    assert not result.completed
    assert isinstance(result.error, LocalVoiceError)
    assert observed.statuses[-1].state is SpeakerState.ERROR
    assert observed.statuses[-1].message == "The computer's voice failed: no speech engine"


def test_generation_error_mid_reply_hands_the_rest_to_the_local_voice(
        omni_server: ThreadedOmniServer, tmp_path: Path) -> None:
    omni_server.behavior.fail_sentence = 1
    observed = Observed()
    voice = RecordingVoice()
    sink = WavSink(tmp_path / "x.wav")
    result = run(make_speaker(omni_server.url, sink, observed, local_voice=voice).speak(THREE))
    assert isinstance(result.error, GenerationFailed)
    assert result.sentences == 1 and result.via == "local" and result.completed
    assert voice.said == ["The second one follows. And the third ends it."]
    error = next(s for s in observed.statuses if s.state is SpeakerState.ERROR)
    assert error.message == ("The voice service failed on sentence 2: "
                             "generation failed for sentence 1")
    assert sink.bytes_written > 0  # the first sentence (and half the second) played
    assert observed.spoken == [SpokenReply(THREE, "endpoint")]  # one transcript entry


def test_idle_server_times_out_and_the_rest_is_spoken_locally(
        omni_server: ThreadedOmniServer, tmp_path: Path) -> None:
    omni_server.behavior.stall_after_sentences = 1
    observed = Observed()
    voice = RecordingVoice()
    speaker = make_speaker(omni_server.url, WavSink(tmp_path / "x.wav"), observed,
                           local_voice=voice, idle_timeout=0.5)
    result = run(speaker.speak(THREE))
    assert isinstance(result.error, IdleTimeout)
    assert voice.said == ["The second one follows. And the third ends it."]
    assert "went silent for 0.5 s" in next(
        s.message for s in observed.statuses if s.state is SpeakerState.ERROR)
    assert omni_server.sessions[0].ended.wait(5)
    assert omni_server.sessions[0].closed_by == "client"


def test_stream_closed_before_session_done_is_reported_and_the_rest_spoken(
        omni_server: ThreadedOmniServer) -> None:
    omni_server.behavior.close_after_sentences = 2
    observed = Observed()
    voice = RecordingVoice()
    result = run(make_speaker(omni_server.url, None, observed, local_voice=voice).speak(THREE))
    assert isinstance(result.error, StreamBroken)
    assert result.sentences == 2 and voice.said == ["And the third ends it."]
    assert "ended the reply before finishing" in next(
        s.message for s in observed.statuses if s.state is SpeakerState.ERROR)


def test_server_idle_timeout_sends_error_then_closes(omni_server: ThreadedOmniServer) -> None:
    omni_server.behavior.idle_timeout = 0.3

    async def main():
        transport = await WebSocketTransport.connect(omni_server.url)
        conn = ClientConnection()
        conn.send_config(CONFIG)
        for frame in conn.data_to_send():
            await transport.send_text(frame)
        events = []
        while not events or not isinstance(events[-1], StreamEnded):
            message = await transport.recv()
            if message is None:
                conn.receive_eof()
            else:
                conn.receive_text(message)
            events += conn.events_received()
        await transport.close()
        return events

    events = run(main())
    assert isinstance(events[0], Error) and "idle timeout" in events[0].message
    assert events[-1] == StreamEnded(complete=False)


def test_espeak_voice_renders_through_the_sink(tmp_path: Path) -> None:
    sink = WavSink(tmp_path / "espeak.wav")

    async def main():
        await EspeakVoice(sink, language="English").say("Hello from the computer's voice.")
        await sink.close()

    run(main())
    with wave.open(str(tmp_path / "espeak.wav"), "rb") as wav:
        seconds = wav.getnframes() / wav.getframerate()
    assert 1.0 < seconds < 6.0


@pytest.mark.parametrize("text", ["-1 from me, sorry", "--> see chat"])
def test_a_reply_starting_with_a_dash_is_spoken_by_espeak(tmp_path: Path, text: str) -> None:
    """espeak-ng read such a reply as an option: it wrote no audio and exited 0."""
    observed = Observed()
    sink = WavSink(tmp_path / "dash.wav")

    async def main():
        speaker = make_speaker(None, sink, observed, local_voice=EspeakVoice(sink))
        result = await speaker.speak(text)
        await sink.close()
        return result

    result = run(main())
    assert result.completed and result.error is None
    with wave.open(str(tmp_path / "dash.wav"), "rb") as wav:
        assert wav.getnframes() / wav.getframerate() > 0.5
    assert observed.spoken == [SpokenReply(text, "local")]


SILENT_ESPEAK = """#!/bin/sh
echo "espeak-ng: invalid option -- '1'" >&2
"""


def test_a_computer_voice_that_writes_no_audio_fails_and_is_not_reported_spoken(
        tmp_path: Path) -> None:
    """espeak-ng's way of refusing a reply: a reason on stderr, no audio, exit status 0."""
    silent = tmp_path / "espeak-ng"
    silent.write_text(SILENT_ESPEAK)
    silent.chmod(0o755)
    observed = Observed()
    sink = WavSink(tmp_path / "silent.wav")
    voice = EspeakVoice(sink, executable=str(silent))
    result = run(make_speaker(None, sink, observed, local_voice=voice).speak("Hello."))
    assert not result.completed and isinstance(result.error, LocalVoiceError)
    assert observed.statuses[-1].state is SpeakerState.ERROR
    assert observed.statuses[-1].message == (
        "The computer's voice failed: espeak-ng produced no audio "
        "(espeak-ng: invalid option -- '1')")
    assert observed.spoken == []  # not put in the transcript as said


def _silent_session_server(style: str):
    """A speech-stream server that ends a reply with ``session.done`` and no audio, as
    vLLM-Omni does when generation yields none ("no audio": an empty sentence) or when it
    drops an ``input.text`` it refuses ("refused": only an ``error`` event)."""

    async def handle(ws) -> None:
        async for message in ws:
            kind = json.loads(message)["type"]
            if kind == "input.done":
                if style == "refused":
                    await ws.send(encode(Error("input.text message too large")))
                else:
                    await ws.send(encode(AudioStart(0, "👍", "pcm", 24_000)))
                    await ws.send(encode(AudioDone(0, 0, error=False)))
                await ws.send(encode(SessionDone(total_sentences=int(style != "refused"))))
            elif kind == "session.close":
                await ws.close()
                return

    return serve(handle, "127.0.0.1", 0)


@pytest.mark.parametrize(("style", "why"), [
    ("no audio", "The voice service sent no audio for the reply"),
    ("refused", "The voice service failed: input.text message too large")])
def test_a_session_that_ends_without_audio_is_spoken_by_the_local_voice(
        style: str, why: str) -> None:
    observed = Observed()
    voice = RecordingVoice()

    async def main():
        async with _silent_session_server(style) as server:
            port = server.sockets[0].getsockname()[1]
            url = f"ws://127.0.0.1:{port}/v1/audio/speech/stream"
            return await make_speaker(url, None, observed, local_voice=voice).speak("👍")

    result = run(main())
    assert isinstance(result.error, GenerationFailed) and str(result.error) == why
    assert result.via == "local" and result.completed and result.pcm_bytes == 0
    assert voice.said == ["👍"]  # all of it: nothing was heard
    assert next(s for s in observed.statuses if s.state is SpeakerState.ERROR).message == why
    assert observed.spoken == [SpokenReply("👍", "local")]
