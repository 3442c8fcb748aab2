"""The overlay in two-stream mode: each speaker's rows named and in their own colour."""

import dataclasses

import pytest
from PySide6.QtGui import QColor

from captioner.realtime.captions import CaptionLine, CaptionUpdate
from captioner.settings import AppearanceSettings
from captioner.ui.appearance import PRESETS, palette
from captioner.ui.caption_view import PADDING, CaptionView


def said(text, speaker, start, final=True):
    return CaptionLine(text, start, start + 1, final=final, speaker=speaker)


def make_view(qtbot, preset="yellow-on-black", lines=3):
    appearance = dataclasses.replace(AppearanceSettings(preset=preset), outline=False,
                                     background_opacity=1.0, lines=lines)
    view = CaptionView(appearance)
    qtbot.addWidget(view)
    view.resize(900, 200)
    view.show()
    return view, palette(appearance)


def count(image, colour, top, height):
    target = QColor(colour).rgb() & 0xFFFFFF
    return sum(1 for x in range(0, image.width(), 2) for y in range(top, top + height)
               if image.pixel(x, y) & 0xFFFFFF == target)


@pytest.mark.parametrize("preset", list(PRESETS))
def test_two_labelled_rows_are_painted_in_their_speakers_colours(qtbot, preset):
    view, colours = make_view(qtbot, preset, lines=2)
    view.show_update(CaptionUpdate((said("Can everyone hear me?", "Others", 0.0),
                                    said("Yes, loud and clear.", "You", 1.5))))
    assert view.visible_rows() == [("Others: Can everyone hear me?", False),
                                   ("You: Yes, loud and clear.", False)]
    assert view.visible_colours() == [colours.speakers[1], colours.speakers[0]]
    image = view.grab().toImage()
    height = int(view.line_height)
    top = int(view.height() - PADDING - 2 * view.line_height)
    others_row, you_row = (top, height), (top + height, height)
    you, others = colours.speakers
    assert count(image, others, *others_row) > 50 and count(image, you, *others_row) == 0
    assert count(image, you, *you_row) > 50 and count(image, others, *you_row) == 0


def test_a_voice_flows_on_its_rows_and_a_new_voice_starts_a_named_row(qtbot):
    view, _ = make_view(qtbot)
    view.show_update(CaptionUpdate((said("So the plan is", "Others", 0.0),
                                    said("simple.", "Others", 1.0))))
    assert view.visible_rows() == [("Others: So the plan is simple.", False)]
    view.show_update(CaptionUpdate((), said("wait a second", "You", 2.0, final=False)))
    assert view.visible_rows() == [("Others: So the plan is simple.", False),
                                   ("You: wait a second", False)]
    view.show_update(CaptionUpdate((said("wait a second", "You", 2.0),),
                                   said("what plan", "You", 3.0, final=False)))
    assert view.visible_rows() == [("Others: So the plan is simple.", False),
                                   ("You: wait a second what plan", False)]


def test_renamed_you_keeps_the_you_colour(qtbot):
    view, colours = make_view(qtbot)
    view.set_you("Ana")
    view.show_update(CaptionUpdate((said("hello", "Ana", 0.0), said("hi", "Team", 1.0))))
    assert view.visible_rows()[-2:] == [("Ana: hello", False), ("Team: hi", False)]
    assert view.visible_colours()[-2:] == list(colours.speakers)


def test_one_stream_rows_carry_no_name_and_the_text_colour(qtbot):
    view, colours = make_view(qtbot)
    view.show_update(CaptionUpdate((CaptionLine("Plain captions.", 0, 1),),
                                   CaptionLine("still live", 1, 2, final=False)))
    assert view.visible_rows() == [("Plain captions. still live", False)]
    assert view.visible_colours() == [colours.text]


def test_unconfirmed_words_of_a_new_voice_start_its_named_row(qtbot):
    view, colours = make_view(qtbot)
    view.show_update(CaptionUpdate((said("Shall we begin?", "Others", 0.0),)))
    view.show_update(CaptionUpdate((), None, "yes let's", speaker="You"))
    assert view.visible_rows() == [("Others: Shall we begin?", False),
                                   ("You: yes let's", True)]
    assert view.visible_colours() == [colours.speakers[1], colours.speakers[0]]
    view.show_update(CaptionUpdate((), said("yes", "You", 1.0, final=False), "let's go",
                                   speaker="You"))
    assert view.visible_rows()[-1] == ("You: yes let's go", True)
