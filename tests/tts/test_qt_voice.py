"""The Qt platform-voice adapter, with Qt's own 'mock' speech engine, on the qasync loop."""

from __future__ import annotations

import asyncio

import qasync
from PySide6.QtTextToSpeech import QTextToSpeech

from captioner.tts.errors import LocalVoiceError
from captioner.tts.events import SessionConfig
from captioner.tts.speaker import Speaker, SpeakerState, SpokenReply
from captioner.ui.tts_fallback import QtLocalVoice, available_engines


def run_on_qt(coro):
    return asyncio.run(asyncio.wait_for(coro, 20), loop_factory=qasync.QEventLoop)


def test_the_mock_engine_is_listed_last(qapp) -> None:
    engines = available_engines()
    assert "mock" in engines and engines[-1] == "mock"


def test_speaker_without_endpoint_speaks_with_the_qt_voice(qapp) -> None:
    spoken: list[SpokenReply] = []
    states: list[SpeakerState] = []

    async def main():
        voice = QtLocalVoice("English", engine="mock")
        speaker = Speaker(None, None, SessionConfig(voice="vivian", language="English"),
                          local_voice=voice, on_status=lambda s: states.append(s.state),
                          on_spoken=spoken.append)
        result = await speaker.speak("Hello from Qt.")
        voice.close()
        return voice, result

    voice, result = run_on_qt(main())
    assert result.completed and result.via == "local"
    assert voice.name == "mock voice"
    assert spoken == [SpokenReply("Hello from Qt.", "local")]
    assert states == [SpeakerState.SPEAKING, SpeakerState.IDLE]


def test_stop_ends_a_pending_say_mid_speech(qapp) -> None:
    async def main():
        voice = QtLocalVoice("German", engine="mock")
        speaking = asyncio.get_running_loop().create_future()
        voice.engine.stateChanged.connect(
            lambda state: state == QTextToSpeech.State.Speaking and not speaking.done()
            and speaking.set_result(None))
        task = asyncio.ensure_future(voice.say("A long sentence to be cut short. " * 20))
        await asyncio.wait_for(speaking, 5)
        voice.stop()
        await asyncio.wait_for(task, 5)
        state = voice.engine.state()
        voice.close()
        return state

    assert run_on_qt(main()) != QTextToSpeech.State.Speaking


def test_a_closed_voice_refuses_politely(qapp) -> None:
    async def main():
        voice = QtLocalVoice("English", engine="mock")
        voice.close()
        voice.stop()  # harmless
        try:
            await voice.say("Hello")
        except LocalVoiceError as exc:
            return str(exc)
        return None

    assert run_on_qt(main()) == "mock voice was closed"
