"""Merging two labelled caption streams (sans-I/O)."""

from captioner.realtime.captions import CaptionLine, CaptionModel, CaptionUpdate
from captioner.realtime.speakers import SpeakerMerge, in_time_order, time_index


def live(text, speaker, start=0.0):
    return CaptionLine(text, start, start + 1, final=False, speaker=speaker)


def test_model_stamps_its_speaker_on_live_final_and_gap_lines():
    model = CaptionModel(speaker="You")
    update = model.add_text("Hello there, everyone. How are you doing today", 1.0)
    assert update.finalized[0].speaker == "You"
    assert update.live.speaker == "You"
    assert all(line.speaker == "You" for line in model.gap(2.0, 9.0).finalized)


def test_overlay_shows_the_live_line_of_whoever_spoke_last():
    merge = SpeakerMerge()
    assert merge.apply("Others", CaptionUpdate(live=live("so the plan", "Others"))).live.text \
        == "so the plan"
    shown = merge.apply("You", CaptionUpdate(live=live("wait", "You")))
    assert shown.live.speaker == "You"
    # Others' text repeated with every chunk does not take the line back from You …
    assert merge.apply("Others", CaptionUpdate(live=live("so the plan", "Others"))).live \
        .speaker == "Others"
    # … and once one live line ends, the other one still showing comes back
    assert merge.apply("Others", CaptionUpdate()).live.speaker == "You"
    final = CaptionLine("wait a moment", 0, 1, speaker="You")
    after = merge.apply("You", CaptionUpdate((final,), None))
    assert after.finalized == (final,) and after.live is None


def test_lines_are_put_in_spoken_order_stably():
    lines = [CaptionLine("b", 2.0, 3.0, speaker="Others"), CaptionLine("a", 1.0, 4.0,
             speaker="You"), CaptionLine("c", 2.0, 2.5, speaker="You")]
    assert [line.text for line in in_time_order(lines)] == ["a", "b", "c"]
    ordered = in_time_order(lines)
    assert time_index(ordered, CaptionLine("x", 1.5, 2, speaker="You")) == 1
    assert time_index(ordered, CaptionLine("y", 2.0, 2, speaker="You")) == 3


def test_one_stream_is_never_reordered():
    lines = [CaptionLine("typed", 9.0, 9.0), CaptionLine("then", 1.0, 2.0)]
    assert in_time_order(lines) == lines
    assert time_index(lines, CaptionLine("z", 0.0, 1.0)) == 2


def test_unconfirmed_words_go_with_their_speakers_live_line():
    merge = SpeakerMerge()
    shown = merge.apply("Others", CaptionUpdate(live=live("so the", "Others"),
                                                unconfirmed="plan is"))
    assert (shown.live.text, shown.unconfirmed) == ("so the", "plan is")
    shown = merge.apply("You", CaptionUpdate(unconfirmed="wait"))  # You start: words live only
    assert shown.live is None and shown.unconfirmed == "wait"
    shown = merge.apply("You", CaptionUpdate())  # You's words were voided
    assert (shown.live.text, shown.unconfirmed) == ("so the", "plan is")
