"""Every colour drawn on captions reaches 7:1 on what is behind it, in every preset."""

from __future__ import annotations

import dataclasses

import pytest
from PySide6.QtGui import QColor

from captioner.alerts import AlertMatcher
from captioner.realtime.captions import CaptionLine, CaptionUpdate
from captioner.settings import AppearanceSettings
from captioner.ui.appearance import PRESETS, palette
from captioner.ui.caption_view import PADDING, CaptionView
from captioner.ui.contrast import blend, contrast, distance

CUSTOM = [("#FFFFFF", "#333333"), ("#111111", "#F0E68C"), ("#00FF00", "#000000"),
          ("#FFFFFF", "#5A0000")]
CASES = [(name, AppearanceSettings(preset=name)) for name in PRESETS] + [
    (f"custom {t} on {b}", AppearanceSettings(preset="custom", text_color=t,
                                              background_color=b)) for t, b in CUSTOM]


def test_contrast_arithmetic_matches_wcag():
    assert contrast("#000000", "#FFFFFF") == pytest.approx(21.0)
    assert contrast("#FFFFFF", "#FFFFFF") == pytest.approx(1.0)
    assert contrast("#767676", "#FFFFFF") == pytest.approx(4.54, abs=0.01)  # WCAG's AA grey
    assert blend("#FFFFFF", "#000000", 0.5) == "#808080"


def test_the_old_alert_colour_fails_where_the_issue_measured_it():
    assert contrast("#FF5A1F", "#000000") == pytest.approx(6.7, abs=0.05)
    assert contrast("#FF5A1F", "#FFFFFF") == pytest.approx(3.1, abs=0.05)


@pytest.mark.parametrize(("name", "appearance"), CASES, ids=[c[0] for c in CASES])
def test_every_colour_on_captions_reaches_7_to_1(name, appearance):
    p = palette(appearance)
    bg = p.background
    if appearance.preset != "custom":
        assert contrast(p.text, bg) >= 12, "preset text"
    assert contrast(p.live, bg) >= 7, "live and gap text"
    assert contrast(p.alert, bg) >= 7, "alert highlight against the caption background"
    assert contrast(p.alert_text, p.alert) >= 7, "alert word on its highlight"
    you, others = p.speakers
    assert contrast(you, bg) >= 7, "the You colour (two-stream mode)"
    assert others == p.text, "Others keep the preset's text colour"
    if appearance.preset != "custom":
        assert contrast(others, bg) >= 7, "the Others colour"
    assert all(contrast(c, bg) >= 7 for c in p.speakers_live), "each speaker's live words"
    assert distance(you, others) >= 150, "the two speakers' colours tell apart at a glance"


def _count(image, color: str, rect) -> int:
    target = QColor(color).rgb() & 0xFFFFFF
    return sum(
        1
        for x in range(int(rect.left()) + 1, int(rect.right()))
        for y in range(int(rect.top()) + 1, int(rect.bottom()))
        if image.pixel(x, y) & 0xFFFFFF == target
    )


@pytest.mark.parametrize("preset", list(PRESETS))
def test_alert_word_is_painted_in_inverse_video_with_the_palette(qtbot, preset):
    appearance = dataclasses.replace(AppearanceSettings(preset=preset), outline=False,
                                     background_opacity=1.0)
    view = CaptionView(appearance, matcher=AlertMatcher(["question"]))
    qtbot.addWidget(view)
    view.resize(900, 200)
    view.show()
    view.show_update(CaptionUpdate((CaptionLine("I have a question today", 0.0, 1.0),)))
    image = view.grab().toImage()
    p = palette(appearance)
    rows = view._rows_on_screen()
    top = view.height() - PADDING - len(rows) * view.line_height
    highlight = rows[-1][0].highlights[0].translated(PADDING, top)
    area = highlight.width() * highlight.height()
    fill = _count(image, p.alert, highlight)
    glyphs = _count(image, p.alert_text, highlight)
    assert fill > area / 3, "the highlight is drawn in the palette's fill"
    assert glyphs > 20, "the alert word is drawn on it in the background colour"
    assert _count(image, p.text, highlight) == 0, "no caption-coloured glyph on the highlight"
