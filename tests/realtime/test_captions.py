import pytest

from captioner.realtime.captions import CaptionModel, LineKind


def feed(model: CaptionModel, pieces: list[str], step: float = 0.1):
    finalized = []
    t = 0.0
    for piece in pieces:
        t += step
        finalized += model.add_text(piece, t).finalized
    return finalized


def test_sentence_end_finalizes_line_with_times():
    m = CaptionModel()
    done = feed(m, ["Hello", " there", " my friend.", " How", " are", " you"])
    assert [line.text for line in done] == ["Hello there my friend."]
    assert (done[0].start, done[0].end) == pytest.approx((0.1, 0.3))
    assert m.live.text == "How are you" and not m.live.final
    assert m.live.start == pytest.approx(0.4)


def test_short_sentences_stay_together():
    m = CaptionModel(min_sentence_chars=16)
    done = feed(m, ["Yes.", " I", " agree.", " That is a good plan.", " Next"])
    assert [line.text for line in done] == ["Yes. I agree. That is a good plan."]


def test_decimal_point_is_not_a_sentence_end():
    m = CaptionModel(min_sentence_chars=1)
    assert feed(m, ["It costs 3", ".", "5 dollars"]) == []
    assert m.live.text == "It costs 3.5 dollars"


def test_long_text_breaks_at_word_boundary():
    m = CaptionModel(max_chars=20)
    done = feed(m, [" one two three four five six seven eight nine"])
    assert all(len(line.text) <= 20 for line in done)
    assert " ".join([*[line.text for line in done], m.live.text]) == (
        "one two three four five six seven eight nine"
    )


def test_very_long_word_is_hard_cut():
    m = CaptionModel(max_chars=10)
    done = feed(m, ["x" * 25])
    assert [len(line.text) for line in done] == [10, 10]
    assert m.live.text == "x" * 5


def test_pause_finalizes_live_line():
    m = CaptionModel(pause_seconds=1.0)
    m.add_text(" hello world", 2.0)
    assert m.tick(2.5).finalized == ()
    update = m.tick(3.0)
    assert [line.text for line in update.finalized] == ["hello world"]
    assert update.live is None


def test_requests_do_not_glue_words():
    m = CaptionModel()
    m.add_text("end of one", 1.0)
    m.new_request()
    m.add_text("start of two", 2.0)
    assert m.live.text == "end of one start of two"


def test_gap_line_is_marked():
    m = CaptionModel()
    m.add_text("before", 1.0)
    update = m.gap(1.0, 75.0)
    assert [line.kind for line in update.finalized] == [LineKind.SPEECH, LineKind.GAP]
    assert "74 s" in update.finalized[1].text
    assert m.text == "before"


def test_finalized_lines_never_change():
    m = CaptionModel(max_chars=12)
    done = feed(m, [" a b c d e f g h i j k l m n o p"])
    snapshot = list(m.lines)
    feed(m, [" q r s t u v w x y z."])
    assert m.lines[: len(snapshot)] == snapshot
    assert done == snapshot


def test_gap_between_text_bursts_during_speech_is_not_a_pause():
    m = CaptionModel(pause_seconds=1.0)
    m.add_text(" The", 1.0)
    # a bursty engine: no text for 1.5 s, but the audio is not quiet
    assert m.tick(2.5, quiet_seconds=0.0).finalized == ()
    m.add_text(" quick brown fox", 2.6)
    assert m.tick(3.0, quiet_seconds=0.4).finalized == ()
    update = m.tick(3.7, quiet_seconds=1.1)
    assert [line.text for line in update.finalized] == ["The quick brown fox"]


# --- unconfirmed (live) text --------------------------------------------------------


def test_unconfirmed_text_follows_the_confirmed_text_and_is_replaced_not_appended():
    model = CaptionModel()
    model.add_text("Ask not", 1.0)
    update = model.set_unconfirmed(" what your")
    assert update.live.text == "Ask not" and update.unconfirmed == "what your"
    update = model.set_unconfirmed(" what you're country")  # revised
    assert update.unconfirmed == "what you're country"
    assert model.live.text == "Ask not"  # never part of the confirmed text by itself


def test_a_delta_takes_the_words_it_confirms_off_the_unconfirmed_text():
    model = CaptionModel()
    model.add_text("Ask", 0.5)
    model.set_unconfirmed(" not what your")
    update = model.add_text(" not what", 1.0)
    assert update.live.text == "Ask not what" and update.unconfirmed == "your"
    update = model.add_text(" YOUR,", 1.2)  # case and punctuation do not matter
    assert update.unconfirmed == ""


def test_a_delta_that_says_something_else_drops_the_unconfirmed_text():
    model = CaptionModel()
    model.set_unconfirmed("Ask knot what")
    update = model.add_text("As not", 1.0)  # the final decode heard it differently
    assert update.live.text == "As not" and update.unconfirmed == ""
    assert " ".join(line.text for line in model.lines) == ""


def test_unconfirmed_text_never_reaches_the_transcript():
    model = CaptionModel()
    model.add_text("It was the best of times.", 1.0)
    model.set_unconfirmed(" it was the worst")
    finalized = model.tick(5.0).finalized + model.flush().finalized
    model.new_request()
    model.set_unconfirmed(" of times")
    model.gap(6.0, 70.0)
    assert model.text == "It was the best of times."
    assert all("worst" not in line.text for line in model.lines + list(finalized))
    assert model.unconfirmed == ""


def test_a_new_request_voids_the_old_requests_unconfirmed_text():
    model = CaptionModel()
    model.add_text("Hello", 1.0)
    model.set_unconfirmed(" world")
    model.new_request()
    update = model.add_text(" world", 2.0)  # the replay said it again: shown once
    assert update.live.text == "Hello world" and update.unconfirmed == ""


def test_confirmed_words_keep_the_time_they_were_first_shown():
    """An engine that confirms a whole utterance at its end (the on-device one): each
    word is placed when it was first shown as live text, not when it was confirmed."""
    model = CaptionModel()
    model.set_unconfirmed("From fairest", 1.0)
    model.set_unconfirmed("From fairest creatures", 2.0)
    model.set_unconfirmed("From fairest creature's we", 3.0)  # revised in place
    model.set_unconfirmed("From fairest creatures we desire increase", 4.0)
    model.add_text("From fairest creatures we desire increase.", 6.0)
    model.set_unconfirmed("That thereby", 7.0)
    (line,) = model.add_text(" That thereby beauty's rose", 9.0).finalized
    assert (line.start, line.end) == (1.0, 4.0)
    assert (model.live.start, model.live.end) == (7.0, 9.0)  # "rose": only confirmed at 9
    model.set_unconfirmed("might", 9.5)
    (line,) = model.flush().finalized
    assert (line.start, line.end) == (7.0, 9.0) and model.unconfirmed == ""


def test_a_new_request_voids_when_the_old_ones_live_words_were_shown():
    model = CaptionModel()
    model.set_unconfirmed("one two three", 5.0)
    model.add_text("one", 6.0)  # "two three" stay shown since 5.0 ...
    model.new_request()  # ... until a new request voids them
    model.set_unconfirmed("two three", 8.0)
    model.add_text(" two three.", 9.0)
    assert [(m.start, m.end) for m in model.flush().finalized] == [(5.0, 8.0)]


def test_word_times_never_go_back():
    model = CaptionModel()
    model.add_text("Before the drop", 12.0)
    model.new_request()
    model.add_text(" and after it", 10.5)  # a replayed request starts further back
    (line,) = model.flush().finalized
    assert (line.start, line.end) == (12.0, 12.0)


def test_a_pause_does_not_end_the_line_before_words_still_to_be_confirmed():
    """The on-device engine confirmed "…might never" (a long utterance cut in two) and
    shows "die." as live text when the reader pauses: the line ends after "die."."""
    model = CaptionModel(pause_seconds=1.0)
    model.add_text("That thereby beauty's rose might never", 10.0)
    model.set_unconfirmed("die.", 10.5)
    assert model.tick(13.0, quiet_seconds=2.0).finalized == ()
    done = model.add_text(" die. But as the riper", 14.0).finalized
    assert [line.text for line in done] == ["That thereby beauty's rose might never die."]
    assert model.tick(16.0, quiet_seconds=2.0).finalized[0].text == "But as the riper"


def test_a_pause_waits_for_words_said_after_the_last_text():
    """The on-device engine confirmed "…might never" where it cut a long utterance; the
    reader said "die." and paused before any text showed it. The line waits for it."""
    model = CaptionModel(pause_seconds=1.0, pending_seconds=1.0)
    model.add_text("That thereby beauty's rose might never", 10.3)
    # sound until 10.6 (the word "die."), quiet since
    assert model.tick(11.7, quiet_seconds=1.1).finalized == ()
    model.add_text(" die.", 11.9)
    (line,) = model.tick(13.0, quiet_seconds=2.4).finalized
    assert line.text == "That thereby beauty's rose might never die."


def test_sound_after_the_last_text_holds_a_line_only_a_little_longer():
    model = CaptionModel(pause_seconds=1.0, pending_seconds=1.0)
    model.add_text("Thank you", 10.0)
    assert model.tick(11.5, quiet_seconds=1.0).finalized == ()  # a cough at 10.5
    (line,) = model.tick(12.5, quiet_seconds=2.0).finalized
    assert line.text == "Thank you"


def test_a_long_line_ends_at_a_phrase_not_mid_phrase():
    m = CaptionModel(max_chars=84)
    done = feed(m, ["1. From fairest creatures we desire increase, that thereby beauty's rose",
                    " might never die. But as the riper"])
    assert [line.text for line in done] == [
        "1. From fairest creatures we desire increase,",
        "that thereby beauty's rose might never die."]
    done = feed(m, [" should by time decease, his tender heir might bear his memory of the"
                    " world and the grave"])
    assert [line.text for line in done] == [
        "But as the riper should by time decease, his tender heir might bear his memory",
    ]  # not "…memory of the"


def test_a_gap_note_follows_the_words_said_before_it():
    """Audio lost mid-phrase while the session goes on: the note comes after the line
    the loss fell in, once that line is finalized, never before words said earlier."""
    m = CaptionModel()
    m.add_text("And so my", 1.0)
    m.set_unconfirmed("fellow", 1.2)
    update = m.mark_gap("[no audio for 0.3 s]", 1.5)
    assert update.finalized == () and update.live.text == "And so my"
    m.add_text(" fellow Americans", 2.0)
    update = m.tick(4.0)
    assert [(line.text, line.kind) for line in update.finalized] == [
        ("And so my fellow Americans", LineKind.SPEECH), ("[no audio for 0.3 s]", LineKind.GAP)]
    assert [line.text for line in m.lines] == ["And so my fellow Americans",
                                               "[no audio for 0.3 s]"]
    assert update.finalized[1].start == 1.5  # where the audio went missing
    update = m.mark_gap("[no audio for 0.2 s]", 5.0)  # nothing open: at once
    assert [line.text for line in update.finalized] == ["[no audio for 0.2 s]"]


def test_a_gap_note_is_never_timed_before_the_line_it_follows():
    """A line's time is when its first word was shown, which can come after the loss:
    the note takes that time, so the transcript's times keep rising."""
    m = CaptionModel()
    m.set_unconfirmed("feeds by", 47.5)
    m.mark_gap("[gap]", 47.0)
    m.add_text("Feeds by light's flame.", 49.0)
    update = m.tick(52.0)
    assert [(line.text, line.start) for line in update.finalized] == [
        ("Feeds by light's flame.", 47.5), ("[gap]", 47.5)]
    m.add_text("Later words", 53.0)
    m.mark_gap("[gap 2]", 52.5)  # before the live line's first word was shown
    flushed = m.flush().finalized
    assert [(line.text, line.start) for line in flushed] == [
        ("Later words", 53.0), ("[gap 2]", 53.0)]


def test_a_gap_note_still_open_at_the_end_comes_with_the_flush():
    m = CaptionModel(speaker="You")
    m.add_text("ask not", 1.0)
    m.mark_gap("[gap]", 1.2)
    m.add_text(" what your", 1.8)
    flushed = m.flush().finalized
    assert [(line.text, line.speaker) for line in flushed] == [
        ("ask not what your", "You"), ("[gap]", None)]  # the note is the capture's
    assert m.flush().finalized == ()


def test_a_line_break_in_server_text_is_a_space_not_a_line():
    """A server's "\n[00:00:02] You: …" must not become a line of its own anywhere."""
    model = CaptionModel()
    model.add_text("ok\n[00:00:02] You: yes\r\nI agree\u2028fine.", 1.0)
    update = model.flush()
    assert [line.text for line in update.finalized] == [
        "ok [00:00:02] You: yes I agree fine."]
