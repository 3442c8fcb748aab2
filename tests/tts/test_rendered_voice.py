"""This computer's voice rendered to a WAV and played through our sink, so a reply reaches
the output device the user picked. The renderer here is a real child process (a Python
script standing in for macOS's ``say`` or PowerShell, which this Linux machine lacks);
espeak-ng is the real one on Linux."""

from __future__ import annotations

import asyncio
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

from captioner.audio.playback import WavSink
from captioner.tts.errors import LocalVoiceError
from captioner.tts.events import SessionConfig
from captioner.tts.fallback import (
    EspeakVoice,
    RenderedVoice,
    SpdSayVoice,
    find_local_voice,
    mac_voice,
    rendering_voice,
    sapi_args,
    say_args,
)
from captioner.tts.speaker import Speaker, SpeakerStatus, SpokenReply

RENDERER = """
import math, os, struct, sys, time, wave
text = sys.stdin.buffer.read().decode("utf-8")
open(sys.argv[1], "w", encoding="utf-8").write(text)
open(sys.argv[1] + ".culture", "w").write(os.environ["CAPTIONER_REPLY_CULTURE"])
if "slowly" in text:
    time.sleep(30)
if "fail" in text:
    print("no voice for that", file=sys.stderr)
    sys.exit(3)
with wave.open(os.environ["CAPTIONER_REPLY_WAV"], "wb") as wav:
    wav.setnchannels(1); wav.setsampwidth(2); wav.setframerate(22050)
    if "unsayable" not in text:  # else a WAV without a sample, and success
        wav.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i / 10)))
                                 for i in range(22050 // 4)))
"""

# spd-say's own option parsing (GNU getopt): an unknown option is an error, exit 1.
SPD_SAY = """
import getopt, sys
try:
    options, words = getopt.gnu_getopt(sys.argv[2:], "wl:", ["wait", "language="])
except getopt.GetoptError as exc:
    sys.exit(f"spd-say: {exc}")
open(sys.argv[1], "w", encoding="utf-8").write(" ".join(words))
"""


MAC_VOICES = """Alex                en_US    # Most people recognize me by my voice.
Bad News            en_US    # The light you see at the end of the tunnel is a train.
Amélie              fr_CA    # Bonjour, je m’appelle Amélie.
Anna                de_DE    # Hallo, ich heiße Anna und ich bin eine deutsche Stimme.
Eddy (German (Germany)) de_DE    # Hallo! Ich heiße Eddy.
"""


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def renderer(tmp_path: Path):
    script = tmp_path / "render.py"
    script.write_text(RENDERER)
    heard = tmp_path / "heard.txt"
    return (lambda path, language: [sys.executable, str(script), str(heard)]), heard


def samples(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as wav:
        assert wav.getframerate() == 22050
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")


def test_a_reply_is_rendered_then_played_through_the_sink(tmp_path, renderer):
    args, heard = renderer
    sink = WavSink(tmp_path / "played.wav")

    async def main():
        voice = RenderedVoice(sink, "test voice", args)
        voice.set_language("German")
        await voice.say("Héllo — “quoted” $(not code)")
        await sink.close()

    run(main())
    assert heard.read_text(encoding="utf-8") == "Héllo — “quoted” $(not code)"  # stdin, as is
    assert Path(f"{heard}.culture").read_text() == "de-DE"  # the voice is picked by it
    played = samples(tmp_path / "played.wav")
    assert len(played) == 22050 // 4 and np.abs(played).max() > 7000


def test_a_failing_or_missing_renderer_is_a_clear_error(tmp_path, renderer):
    args, _heard = renderer
    voice = RenderedVoice(WavSink(tmp_path / "x.wav"), "test voice", args)
    with pytest.raises(LocalVoiceError, match=r"test voice failed \(3\) no voice for that"):
        run(voice.say("this will fail"))
    missing = RenderedVoice(WavSink(tmp_path / "y.wav"), "test voice",
                            lambda path, language: [str(tmp_path / "no-such-renderer")])
    with pytest.raises(LocalVoiceError, match="cannot run"):
        run(missing.say("anything"))


def test_stop_ends_a_reply_while_it_renders(tmp_path, renderer):
    args, _heard = renderer
    sink = WavSink(tmp_path / "z.wav")
    voice = RenderedVoice(sink, "test voice", args)

    async def main():
        task = asyncio.create_task(voice.say("said slowly"))
        for _ in range(200):
            if voice._proc is not None:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        voice.stop()
        await asyncio.wait_for(task, 5)  # returns quietly, nothing played

    run(main())
    assert sink.bytes_written == 0


def test_a_renderer_that_hangs_is_stopped_with_a_clear_error(tmp_path, renderer):
    args, _heard = renderer
    voice = RenderedVoice(WavSink(tmp_path / "h.wav"), "test voice", args, timeout=0.5)
    with pytest.raises(LocalVoiceError, match="did not finish rendering the reply in 1 s"):
        run(asyncio.wait_for(voice.say("said slowly"), 10))
    assert voice._proc is None


def test_the_platforms_own_voice_is_chosen_and_never_given_the_text_as_code():
    sink = WavSink("unused.wav")
    found = {"say", "powershell", "espeak-ng"}

    def which(name):
        return f"/bin/{name}" if name in found else None

    mac = rendering_voice(sink, platform="darwin", which=which)
    windows = rendering_voice(sink, platform="win32", which=which)
    linux = rendering_voice(sink, "German", platform="linux", which=which)
    assert isinstance(mac, RenderedVoice) and mac.name == "macOS voice"
    assert isinstance(windows, RenderedVoice) and windows.name == "Windows voice"
    assert isinstance(linux, EspeakVoice) and linux.voice == "de"
    found.discard("say")
    assert isinstance(rendering_voice(sink, platform="darwin", which=which), EspeakVoice)
    assert rendering_voice(sink, platform="linux", which=lambda name: None) is None
    # the text goes on stdin: the command lines are the same whatever is said
    assert say_args("/t/reply.wav", "English", lambda: MAC_VOICES) == [
        "say", "-o", "/t/reply.wav", "--data-format=LEI16@22050", "-f", "-"]
    assert say_args("/t/reply.wav", "German", lambda: MAC_VOICES)[:3] == ["say", "-v", "Anna"]
    assert say_args("/t/reply.wav", "Korean", lambda: MAC_VOICES)[1] == "-o"  # none installed
    script = sapi_args("/t/reply.wav", "English")[-1]
    assert "$env:CAPTIONER_REPLY_WAV" in script and "[Console]::In.ReadToEnd()" in script
    assert "/t/reply.wav" not in script


def test_the_say_command_finds_the_platforms_voice_for_its_sink_too():
    sink = WavSink("unused.wav")
    mac = find_local_voice(sink, platform="darwin", which=lambda name: f"/usr/bin/{name}")
    assert isinstance(mac, RenderedVoice) and mac.sink is sink
    spd_only = find_local_voice(sink, platform="linux",
                                which=lambda name: "/usr/bin/spd-say" if name == "spd-say"
                                else None)
    assert isinstance(spd_only, SpdSayVoice)
    alone = find_local_voice(None, platform="linux", which=lambda name: f"/usr/bin/{name}")
    assert isinstance(alone, EspeakVoice) and alone.sink is None


def test_a_macos_voice_is_picked_by_the_reply_language():
    assert [mac_voice(language, MAC_VOICES) for language in (
        "German", "French", "English", "Auto", "Japanese")] == [
            "Anna", "Amélie", None, None, None]


def test_espeak_follows_the_reply_language(tmp_path):
    voice = EspeakVoice(WavSink(tmp_path / "e.wav"), language="English")
    voice.set_language("French")
    assert voice.voice == "fr"


def test_a_rendered_reply_without_audio_fails_and_is_not_reported_spoken(tmp_path, renderer):
    args, _heard = renderer
    sink = WavSink(tmp_path / "n.wav")
    spoken: list[SpokenReply] = []
    statuses: list[SpeakerStatus] = []
    speaker = Speaker(None, sink, SessionConfig(voice="vivian"),
                      local_voice=RenderedVoice(sink, "test voice", args),
                      on_status=statuses.append, on_spoken=spoken.append)
    result = run(speaker.speak("An unsayable reply."))
    assert not result.completed and isinstance(result.error, LocalVoiceError)
    assert statuses[-1].message == "The computer's voice failed: test voice produced no audio"
    assert spoken == [] and sink.bytes_written == 0


def test_speech_dispatcher_is_given_a_reply_starting_with_a_dash_as_text(tmp_path):
    script, heard = tmp_path / "spd_say.py", tmp_path / "spd-heard.txt"
    script.write_text(SPD_SAY)
    launcher = tmp_path / "spd-say"
    launcher.write_text(f"#!/bin/sh\nexec '{sys.executable}' '{script}' '{heard}' \"$@\"\n")
    launcher.chmod(0o755)
    run(SpdSayVoice(executable=str(launcher)).say("-1 from me, sorry"))
    assert heard.read_text(encoding="utf-8") == "-1 from me, sorry"
