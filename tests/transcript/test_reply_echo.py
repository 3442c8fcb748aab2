"""The app's own spoken replies are not captioned a second time.

"Heard" lines are what the embedded engine (tiny.en) wrote for espeak-ng reading the
replies into the output the captions listen to, or that text with one word misheard;
times are seconds on the captions' audio clock.
"""

from captioner.realtime.captions import CaptionLine, LineKind
from captioner.transcript.reply_echo import ReplyEcho

REPLY = "Be right back, I need to answer the door."


def heard(text: str, start: float, end: float | None = None) -> CaptionLine:
    return CaptionLine(text, start, start if end is None else end, speaker="Others")


def replied(text: str = REPLY, at: float = 10.0) -> ReplyEcho:
    echo = ReplyEcho()
    echo.spoken(text, at)
    return echo


def test_the_reply_heard_back_is_left_out() -> None:
    assert replied().filter(heard("Be right back, I need to answer the door.", 13.2)) is None


def test_a_misheard_word_does_not_let_the_reply_through() -> None:
    assert replied().filter(heard("Be right back. I need to answer the floor.", 11.5, 14.0)) is None


def test_a_short_reply_heard_back_whole_is_left_out() -> None:
    echo = replied("Thank you.")
    assert echo.filter(heard("Thank you.", 12.0)) is None


def test_other_words_in_the_same_line_stay() -> None:
    line = heard("Be right back, I need to answer the door. Sure, take your time.", 13.0)
    kept = replied().filter(line)
    assert kept is not None and kept.text == "Sure, take your time."
    assert kept.speaker == "Others" and kept.start == line.start


def test_an_answer_in_other_words_is_captioned() -> None:
    line = heard("No problem, we will wait for you here.", 12.0)
    assert replied().filter(line) == line


def test_the_same_words_outside_the_reply_window_are_captioned() -> None:
    echo = replied()
    before = heard("I need to answer the door.", 4.0, 6.0)
    later = heard("Be right back, I need to answer the door.", 60.0)
    assert echo.filter(before) == before  # said before the reply was sent
    assert echo.filter(later) == later  # long after it: someone quoting it


def test_typed_lines_and_gaps_pass_through() -> None:
    echo = replied()
    typed = CaptionLine(REPLY, 10.0, 10.0, kind=LineKind.TYPED)
    assert echo.filter(typed) == typed


def test_without_a_reply_nothing_is_touched() -> None:
    line = heard(REPLY, 13.0)
    assert ReplyEcho().filter(line) == line


def test_live_text_repeating_the_reply_is_not_shown() -> None:
    echo = replied()
    live = heard("Be right back, I need", 11.0, 12.5)
    assert echo.filter_live(live, "to answer", 12.6) == (None, "")
    kept, unconfirmed = echo.filter_live(live, "to answer the door. Sure, take", 13.0)
    assert kept is None and unconfirmed == "Sure, take"


def test_live_text_of_other_words_is_shown_as_it_is() -> None:
    echo = replied()
    live = heard("Sure, take your time,", 11.0, 12.5)
    assert echo.filter_live(live, "we will wait", 12.6) == (live, "we will wait")
    late = heard("Be right back, I need", 40.0, 41.0)
    assert echo.filter_live(late, "to answer", 41.0) == (late, "to answer")
