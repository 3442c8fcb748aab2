"""Colour presets and font choices for the caption overlay."""

from __future__ import annotations

from PySide6.QtGui import QColor, QFont

from captioner.settings import AppearanceSettings

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
ALERT_COLOR = QColor("#FF5A1F")


def colors(appearance: AppearanceSettings) -> tuple[QColor, QColor]:
    """(text, background) colours of the current preset, opacity applied to the background."""
    text, background = PRESETS.get(appearance.preset,
                                   (appearance.text_color, appearance.background_color))
    fg, bg = QColor(text), QColor(background)
    if not fg.isValid():
        fg = QColor("#FFFF00")
    if not bg.isValid():
        bg = QColor("#000000")
    bg.setAlphaF(max(0.0, min(1.0, appearance.background_opacity)))
    return fg, bg


def clamp_font_size(size: int) -> int:
    return max(MIN_FONT_PT, min(MAX_FONT_PT, int(size)))


def clamp_lines(lines: int) -> int:
    return max(MIN_LINES, min(MAX_LINES, int(lines)))


def caption_font(appearance: AppearanceSettings, *, live: bool = False) -> QFont:
    font = QFont(appearance.font_family)
    font.setPointSize(clamp_font_size(appearance.font_size))
    font.setWeight(QFont.Weight.DemiBold)
    font.setItalic(live)
    return font
