"""Text-level echo suppression on real transcripts.

The lines are what the embedded engine (tiny.en) wrote, grouped into caption
lines by pauses, for the scene of tests/support/echo_scene.py: Sonnet 1 played
as system audio ("Others"), the microphone hearing it at -6 dB (or -18 dB) 100 ms
later while Kennedy speaks from 6 s on ("You"). Times are seconds of audio.
"""

import pytest

from captioner.realtime.captions import CaptionLine, LineKind
from captioner.transcript.echo_text import echo_words, suppress_echo


def lines(speaker: str, rows: list[tuple[float, float, str]]) -> list[CaptionLine]:
    return [CaptionLine(text, start, end, speaker=speaker) for start, end, text in rows]


OTHERS = lines("Others", [
    (0.00, 1.02, "1."),
    (2.76, 5.42, "From fairest creatures we desire increase,"),
    (6.02, 9.44, "that thereby beauty's rose might never die, but"),
    (9.44, 11.58, "as the writer should by time deceased,"),
    (12.18, 14.40, "his tender air might bear his memory."),
    (15.32, 18.60, "But thou, contracted to thy known bright eyes,"),
    (19.06, 22.54, "feet thy lights flame with self-substantial fuel,"),
    (23.02, 25.36, "making a famine where abundance lies,"),
    (26.06, 29.48, "thy self thy foe, to thy sweet self"),
])

# The mic without cancellation: the echo, with recognition errors, and Kennedy.
YOU_ECHO_ONLY = lines("You", [
    (0.00, 0.96, "1."),
    (3.12, 5.60, "From fairest creatures we desire increase,"),
    (19.68, 22.70, "lights flame with self-substantial fuel"),
    (22.70, 25.58, "Making a famine where abundance lies"),
    (25.58, 28.88, "Thy self thy foe to thy sweet"),
    # the weaker echo: "Feeds" for "feet", full stops the others' line lacks
    (19.32, 22.64, "Feeds thy lights flame with self-substantial fuel."),
    (25.92, 28.88, "Thy self thy foe. To thy sweet"),
])

# Kennedy alone (the cleaned mic): genuine near-end speech while the others speak.
YOU_NEAR = lines("You", [
    (6.02, 8.46, "And so my fellow Americans"),
    (8.46, 11.70, "ask not what"),
    (11.70, 14.94, "your country can do for you as what"),
    (14.94, 16.76, "you can do in your country."),
])


def others_before(line: CaptionLine) -> list[CaptionLine]:
    """The "Others" lines the two-stream captioner would hold when ``line`` is final."""
    return [o for o in OTHERS if o.start <= line.end + 3.0]


@pytest.mark.parametrize("line", YOU_ECHO_ONLY, ids=lambda line: line.text[:24])
def test_echoed_lines_are_dropped(line):
    assert suppress_echo(line, others_before(line)) is None


@pytest.mark.parametrize("line", YOU_NEAR, ids=lambda line: line.text[:24])
def test_near_end_speech_is_kept_whole(line):
    assert suppress_echo(line, others_before(line)) == line


def test_a_line_mixing_both_loses_only_the_echo():
    """A mic line where Kennedy ends and the echo of the sonnet follows (engine output,
    -6 dB echo): the repeated run goes, his words stay."""
    line = CaptionLine("do for your country Trapped into thy known bright eyes Feeds thy",
                       16.26, 19.68, speaker="You")
    kept = suppress_echo(line, others_before(line))
    assert kept is not None
    assert kept.text == "do for your country Trapped into"
    assert (kept.start, kept.end, kept.speaker) == (line.start, line.end, line.speaker)


def test_garbled_mix_is_kept():
    """Echo and near-end speech so mixed the engine wrote neither ("their lives who
    life fell America"): three shared words, scattered, are not a repeat."""
    line = CaptionLine("that their lives who life fell America and never die", 6.22, 9.34)
    assert suppress_echo(line, OTHERS) == line


@pytest.mark.parametrize(("others", "you"), [
    # replies (after the question) sharing its words
    ("I think the release is ready to ship on Friday.", "I think the release should wait."),
    ("Can you send me the slides after the call?", "Yes, I can send you the slides."),
    ("What do you think about the budget for next year?",
     "I think the budget for travel is too small."),
    # the same content words, but not a run in order
    ("The budget review moved to Thursday morning.", "Thursday morning works, the review is fine"),
])
def test_replies_sharing_words_are_kept(others, you):
    other = CaptionLine(others, 10.0, 13.0, speaker="Others")
    line = CaptionLine(you, 13.3, 15.5, speaker="You")
    assert suppress_echo(line, [other]) == line


def test_a_short_reply_after_the_others_is_kept_but_a_coinciding_repeat_goes():
    said = CaptionLine("Sounds good to me.", 10.0, 11.0, speaker="Others")
    reply = CaptionLine("Sounds good.", 11.4, 12.0, speaker="You")
    echo = CaptionLine("sounds good to me", 10.1, 11.1, speaker="You")
    assert suppress_echo(reply, [said]) == reply
    assert suppress_echo(echo, [said]) is None


def test_only_lines_of_the_same_moment_count():
    """Quoting the others' words well after they said them is not echo."""
    said = CaptionLine("From fairest creatures we desire increase,", 2.76, 5.42)
    quoted = CaptionLine("from fairest creatures we desire increase", 9.5, 12.0)
    assert suppress_echo(quoted, [said]) == quoted
    echoed = CaptionLine("from fairest creatures we desire increase", 3.0, 5.6)
    assert suppress_echo(echoed, [said]) is None


def test_echo_words_names_the_repeated_words():
    line = CaptionLine("And so my fellow Americans making a famine where abundance lies",
                       22.0, 25.5)
    assert sorted(echo_words(line, OTHERS)) == list(range(5, 11))
    assert echo_words(line, []) == set()
    assert echo_words(CaptionLine("", 22.0, 22.0), OTHERS) == set()


def test_non_speech_text_is_not_special():
    """The filter judges words only; the captioner passes it speech lines."""
    line = CaptionLine("[3 s of audio not transcribed]", 4.0, 7.0, kind=LineKind.GAP)
    assert suppress_echo(line, OTHERS) == line
