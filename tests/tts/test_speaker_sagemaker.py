"""The speaker through SageMaker HTTP/2 bidi (the real SDK against the fake runtime)."""

from __future__ import annotations

import asyncio
import wave
from pathlib import Path

import pytest

from captioner.audio.playback import WavSink
from captioner.tts.connect import SPEECH_STREAM_PATH, tts_connector
from captioner.tts.events import SessionConfig
from captioner.tts.speaker import Speaker, SpeakerState
from tests.support.omni_server import ThreadedOmniServer

TEXT = "Through SageMaker this time. Binary parts carry the audio."


# The stream's close runs on after the reply and the loop's end cuts it short: that must
# not leave the CRT an error to print from its thread.
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("keep_open", [False, True], ids=["closes-after-done", "keeps-open"])
def test_speaks_through_sagemaker_bidi(fake_sagemaker, omni_server: ThreadedOmniServer,
                                       tmp_path: Path, keep_open: bool) -> None:
    omni_server.behavior.keep_open = keep_open
    # The fake routes the invocation path onto the backend, as SageMaker does.
    fake_sagemaker.backend_url = omni_server.url.removesuffix("/" + SPEECH_STREAM_PATH)
    connector = tts_connector(
        f"sagemaker://{fake_sagemaker.endpoint_name}?region={fake_sagemaker.region}"
        f"&endpoint_uri={fake_sagemaker.endpoint_uri}",
        credentials_provider=fake_sagemaker.provider(),
    )
    sink = WavSink(tmp_path / "reply.wav")
    states: list[SpeakerState] = []

    async def main():
        speaker = Speaker(connector, sink, SessionConfig(voice="serena", language="English"),
                          on_status=lambda s: states.append(s.state))
        result = await speaker.speak(TEXT)
        await sink.close()
        return result

    result = asyncio.run(asyncio.wait_for(main(), 40))
    session = omni_server.sessions[0]
    assert result.error is None and result.completed and result.sentences == 2
    assert session.texts == [TEXT]
    with wave.open(str(tmp_path / "reply.wav"), "rb") as wav:
        assert wav.readframes(wav.getnframes()) == bytes(session.pcm)
    assert states == [SpeakerState.CONNECTING, SpeakerState.SPEAKING, SpeakerState.IDLE]
    if keep_open:
        assert session.ended.wait(10) and session.received[-1] == "session.close"
