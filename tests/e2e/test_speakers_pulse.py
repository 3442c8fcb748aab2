"""End to end, two labelled streams: `captioner listen --source both --speakers` as a
user runs it, with the embedded engine and real speech through PulseAudio.

The call's other side (Kennedy) plays into the system output (a null sink, captured
from its monitor); then "you" (a LibriVox reading of Sonnet 1) speak into the
microphone (a null sink's monitor remapped as an ordinary input source, so it is
listed and chosen as a microphone). Every printed line must carry the right name,
hold only its own speaker's words, and come out in the order they were spoken.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.listen_run import quiet, run_listen, sox
from tests.support.speech_set import clip

MIC_SINK = "captioner_voice"
OTHERS_WORDS = {"fellow", "americans", "ask", "country"}
YOU_WORDS = {"fairest", "creatures", "desire", "increase", "beauty", "rose", "never", "die"}
READING_SECONDS = 9  # of the sonnet: "… beauty's rose might never die"


@pytest.fixture(scope="module")
def microphone(pulse):
    return pulse.microphone(MIC_SINK)


def words(text: str) -> set[str]:
    return {word.removesuffix("'s") for word in re.sub(r"[^a-z' ]", " ", text.lower()).split()}


def your_reading(folder: Path) -> Path:
    """What "you" say: the first seconds of the sonnet reading (16 kHz mono, as every clip)."""
    path = folder / "reading.wav"
    sox(clip("sonnet").path, path, "trim", "0", str(READING_SECONDS))
    return path


@pytest.mark.slow
def test_listen_speakers_labels_both_sides_in_spoken_order(pulse, microphone, tmp_path):
    reading = your_reading(tmp_path)
    lines = run_listen(pulse, microphone, tmp_path, [
        lambda: pulse.play(clip("jfk").path),  # the others, through the speakers
        lambda: pulse.play(reading, MIC_SINK),  # then you, into the microphone
        lambda: pulse.play(quiet(tmp_path), MIC_SINK)])
    assert lines and all(re.match(r"(You|Others): ", line) for line in lines), lines
    speakers = [line.split(":", 1)[0] for line in lines]
    assert speakers == sorted(speakers, key=["Others", "You"].index), lines  # Others, then You
    others = words(" ".join(line for line in lines if line.startswith("Others:")))
    you = words(" ".join(line for line in lines if line.startswith("You:")))
    assert len(others & OTHERS_WORDS) >= 3 and not others & YOU_WORDS, lines
    assert len(you & YOU_WORDS) >= 4 and not you & (OTHERS_WORDS - {"ask"}), lines


ECHO_DELAY_SECONDS = 0.08  # speakers to microphone, as in a small room
ECHO_GAIN = 0.4  # the echo is quieter than the voice at the microphone
LAST_PHRASE_SECONDS = 7.6  # Kennedy from here: "… ask what you can do for your country."

@pytest.mark.slow
@pytest.mark.parametrize("cancel", [True, False], ids=["cancelled", "off"])
def test_the_others_echo_in_the_microphone_is_not_captioned_as_you(pulse, microphone,
                                                                     tmp_path, cancel):
    """No headphones: the microphone hears a delayed, quieter copy of the others (Kennedy),
    first while you read, then alone while you listen to them say more. Only your words
    may come out as "You" — and with echo suppression turned off, the echo does (the scene
    is a real test of it: his voice alone on the mic, not only under yours, where the
    recogniser may hear just the louder voice)."""
    kennedy, more = clip("jfk").path, tmp_path / "more.wav"
    sox(kennedy, more, "trim", str(LAST_PHRASE_SECONDS))
    said = tmp_path / "said.wav"  # Kennedy, then his last phrase once more
    sox(kennedy, more, said)
    reading = your_reading(tmp_path)
    echo = tmp_path / "echo.wav"
    sox(said, echo, "vol", str(ECHO_GAIN), "pad", str(ECHO_DELAY_SECONDS))
    mic = tmp_path / "mic.wav"  # one room: his echo throughout, your voice over its start
    sox("-m", echo, reading, mic)
    settings = {"audio": {"echo_cancel": cancel}}
    lines = run_listen(pulse, microphone, tmp_path, [
        [lambda: pulse.play(said), lambda: pulse.play(mic, MIC_SINK)],  # at once
        lambda: pulse.play(quiet(tmp_path), MIC_SINK)], settings)
    you = words(" ".join(line for line in lines if line.startswith("You:")))
    them = words(" ".join(line for line in lines if line.startswith("Others:")))
    assert len(them & OTHERS_WORDS) >= 3, lines
    # your reading comes through either way (with the echo left in, the recogniser hears two
    # voices at once on the mic and gets fewer of yours right: "fairy speeches", "crease")
    assert len(you & YOU_WORDS) >= (3 if cancel else 1), lines
    echoed = you & (OTHERS_WORDS - {"ask"})
    assert bool(echoed) is not cancel, lines  # the echo: gone, or there when not cancelled
