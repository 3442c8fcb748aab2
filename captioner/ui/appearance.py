"""Colour presets and font choices for the caption overlay.

Every colour drawn on captions comes from the preset's ``Palette``, chosen so that
it reaches 7:1 against what is behind it (tests check every preset): the live line
is dimmed only as far as that allows, and an alert word is drawn in inverse video
(the preset's background colour on a highlight that itself stands 7:1 off it). In
two-stream mode "You" get a colour of their own, "Others" the preset's text colour.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor, QFont

from captioner.settings import AppearanceSettings
from captioner.ui.contrast import (
    ENHANCED_CONTRAST,
    blend,
    contrast,
    most_distinct,
    most_legible,
)

# name → (text, background); "custom" uses the colours in the settings.
PRESETS: dict[str, tuple[str, str]] = {
    "yellow-on-black": ("#FFFF00", "#000000"),
    "white-on-black": ("#FFFFFF", "#000000"),
    "black-on-white": ("#000000", "#FFFFFF"),
    "white-on-blue": ("#FFFFFF", "#002B80"),
}
PRESET_TITLES: dict[str, str] = {
    "yellow-on-black": "Yellow on black (high contrast)",
    "white-on-black": "White on black",
    "black-on-white": "Black on white",
    "white-on-blue": "White on blue",
    "custom": "Custom colours",
}
MIN_FONT_PT = 8
MAX_FONT_PT = 72
MIN_LINES = 1
MAX_LINES = 5
MIN_ROW_CHARS = 20
MAX_ROW_CHARS = 120
# Highlight fills for alert words, light ones for dark backgrounds and dark ones for light
# backgrounds; the palette takes the first that reaches 7:1 on the preset's background.
ALERT_FILLS = ["#FFB27F", "#FFC299", "#FFD8B8", "#8A2500", "#6E1D00", "#4A1400"]
# "You" in two-stream mode: of these, the one reaching 7:1 on the background that differs
# most from the text colour, which "Others" keep (light blue or green on dark backgrounds,
# dark blue or purple on light ones).
YOU_COLOURS = ["#66D9FF", "#8CF0A0", "#003A8C", "#5C0099"]
LIVE_DIMMING = (0.72, 0.8, 0.9, 1.0)  # opacities tried for the live line, dimmest first
CONTRAST_MARGIN = 0.2  # the live line stays this far above 7:1 (rounding of blended colours)


@dataclass(frozen=True, slots=True)
class Palette:
    """Opaque #RRGGBB colours of one preset (the background's opacity is applied apart)."""

    text: str
    background: str
    live: str  # the unconfirmed line and gap notes: the text colour dimmed over the background
    alert: str  # highlight behind an alert word
    alert_text: str  # an alert word drawn on its highlight
    speakers: tuple[str, str]  # two-stream mode: "You", "Others" (the text colour)
    speakers_live: tuple[str, str]  # their unconfirmed words, dimmed like ``live``


def palette(appearance: AppearanceSettings) -> Palette:
    text, background = PRESETS.get(appearance.preset,
                                   (appearance.text_color, appearance.background_color))
    if not QColor(text).isValid():
        text = "#FFFF00"
    if not QColor(background).isValid():
        background = "#000000"
    text, background = QColor(text).name().upper(), QColor(background).name().upper()
    alert = most_legible(ALERT_FILLS, background)
    you = most_distinct(YOU_COLOURS, background, text)
    return Palette(text, background, _dimmed(text, background), alert, background,
                   (you, text), (_dimmed(you, background), _dimmed(text, background)))


def _dimmed(colour: str, background: str) -> str:
    """``colour`` dimmed over ``background`` as far as 7:1 (with a margin) allows."""
    dim = colour
    for alpha in LIVE_DIMMING:
        dim = blend(colour, background, alpha)
        if contrast(dim, background) >= ENHANCED_CONTRAST + CONTRAST_MARGIN:
            break
    return dim


def colors(appearance: AppearanceSettings) -> tuple[QColor, QColor]:
    """(text, background) colours of the current preset, opacity applied to the background."""
    colours = palette(appearance)
    fg, bg = QColor(colours.text), QColor(colours.background)
    bg.setAlphaF(max(0.0, min(1.0, appearance.background_opacity)))
    return fg, bg


def clamp_font_size(size: int) -> int:
    return max(MIN_FONT_PT, min(MAX_FONT_PT, int(size)))


def clamp_lines(lines: int) -> int:
    return max(MIN_LINES, min(MAX_LINES, int(lines)))


def clamp_row_chars(chars: int) -> int:
    return max(MIN_ROW_CHARS, min(MAX_ROW_CHARS, int(chars)))


def caption_font(appearance: AppearanceSettings, *, live: bool = False) -> QFont:
    font = QFont(appearance.font_family)
    font.setPointSize(clamp_font_size(appearance.font_size))
    font.setWeight(QFont.Weight.DemiBold)
    font.setItalic(live)
    return font
