"""`captioner say` end to end: real local server, real espeak-ng, WAV output."""

from __future__ import annotations

import socket
import wave
from pathlib import Path

import pytest

from captioner.cli import main
from tests.support.omni_server import ThreadedOmniServer


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAPTIONER_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("CAPTIONER_LOG_DIR", str(tmp_path / "logs"))


def _frames(path: Path) -> tuple[int, bytes]:
    with wave.open(str(path), "rb") as wav:
        return wav.getframerate(), wav.readframes(wav.getnframes())


def test_say_through_the_endpoint(omni_server: ThreadedOmniServer, tmp_path: Path) -> None:
    out = tmp_path / "reply.wav"
    code = main(["say", "--endpoint", omni_server.url, "--voice", "ryan", "--language", "German",
                 "--wav", str(out), "Guten Tag.", "Wie geht's?"])
    assert code == 0
    session = omni_server.sessions[0]
    assert session.texts == ["Guten Tag. Wie geht's?"]
    assert session.config is not None and session.config.voice == "ryan"
    assert session.config.language == "German"
    assert _frames(out) == (24_000, bytes(session.pcm))


def test_say_falls_back_to_espeak_when_the_endpoint_is_down(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "reply.wav"
    code = main(["say", "--endpoint", f"ws://127.0.0.1:{port}/v1/audio/speech/stream",
                 "--wav", str(out), "Hello from the fallback."])
    assert code == 0
    err = capsys.readouterr().err
    assert "voice service is unavailable" in err and "computer's voice (espeak-ng)" in err
    rate, pcm = _frames(out)
    assert rate == 22_050 and len(pcm) > rate  # more than half a second of speech


def test_no_endpoint_uses_the_computers_voice(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "reply.wav"
    assert main(["say", "--wav", str(out), "Hi."]) == 0
    assert "No voice endpoint is set up" in capsys.readouterr().err
    assert len(_frames(out)[1]) > 0


def test_list_voices(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["say", "--list-voices"]) == 0
    out = capsys.readouterr().out
    assert "vivian" in out and "uncle_fu" in out and "Portuguese" in out


@pytest.mark.parametrize("endpoint, words", [
    ("embedded", "no embedded text-to-speech"),
    ("http://example", "Unknown endpoint"),
])
def test_bad_endpoint_is_a_readable_error(endpoint: str, words: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["say", "--endpoint", endpoint, "Hi."]) == 2
    assert words in capsys.readouterr().err
