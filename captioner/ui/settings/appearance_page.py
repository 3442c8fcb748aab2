"""Settings → Appearance, with a live preview drawn by the overlay's own caption view."""

from __future__ import annotations

import copy

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFontComboBox,
    QFormLayout,
    QLineEdit,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from captioner.realtime.captions import CaptionLine, CaptionUpdate
from captioner.settings import AppearanceSettings, Settings
from captioner.ui.appearance import (
    MAX_FONT_PT,
    MAX_LINES,
    MAX_ROW_CHARS,
    MIN_FONT_PT,
    MIN_LINES,
    MIN_ROW_CHARS,
    PRESET_TITLES,
)
from captioner.ui.caption_view import CaptionView
from captioner.ui.settings.common import Errors, Page

DOCKS = (("bottom", "Docked at the bottom of the screen"),
         ("top", "Docked at the top of the screen"), ("floating", "Floating"))
# Every style the overlay draws: finalized text, the live line and its unconfirmed words
# (italic, dimmer), so the contrast of each can be judged before it is chosen.
PREVIEW = CaptionUpdate((CaptionLine("Finalized captions look like this.", 0, 2),),
                        CaptionLine("The live line,", 2, 3, final=False),
                        unconfirmed="still changing")


class AppearancePage(Page):
    title = "Appearance"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        outer = QVBoxLayout(self)
        form = QFormLayout()
        outer.addLayout(form)
        self.preset = QComboBox()
        for key, text in PRESET_TITLES.items():
            self.preset.addItem(text, key)
        self.add_row(form, "preset", "&Colours:", self.preset, "Colour preset")
        self.text_color = QLineEdit()
        self.text_color.setPlaceholderText("#FFFF00")
        self.add_row(form, "text_color", "&Text colour:", self.text_color)
        self.background_color = QLineEdit()
        self.background_color.setPlaceholderText("#000000")
        self.add_row(form, "background_color", "&Background colour:", self.background_color)
        self.font_box = QFontComboBox()
        self.add_row(form, "font", "&Font:", self.font_box, "Font family")
        self.font_size = QSpinBox()
        self.font_size.setRange(MIN_FONT_PT, MAX_FONT_PT)
        self.font_size.setSuffix(" pt")
        self.add_row(form, "size", "&Size:", self.font_size, "Font size")
        self.line_count = QSpinBox()
        self.line_count.setRange(MIN_LINES, MAX_LINES)
        self.add_row(form, "lines", "&Lines:", self.line_count, "Number of caption lines")
        self.row_chars = QSpinBox()
        self.row_chars.setRange(MIN_ROW_CHARS, MAX_ROW_CHARS)
        self.row_chars.setSuffix(" characters")
        self.add_row(form, "row_chars", "Ro&w length:", self.row_chars,
                     "Longest caption row, in characters")
        self.outline = QCheckBox("&Outline around letters")
        self.outline.setAccessibleName("Outline around letters")
        form.addRow(self.outline)
        self.opacity = QSlider(Qt.Orientation.Horizontal)
        self.opacity.setRange(0, 100)
        self.add_row(form, "opacity", "Back&ground opacity:", self.opacity)
        self.dock = QComboBox()
        for key, text in DOCKS:
            self.dock.addItem(text, key)
        self.add_row(form, "dock", "&Position:", self.dock, "Overlay position")
        self.linger = QDoubleSpinBox()
        self.linger.setRange(1.0, 120.0)
        self.linger.setSuffix(" s")
        self.add_row(form, "linger", "&Keep last caption for:", self.linger,
                     "Keep the last caption for")
        self.announce = QCheckBox("Announce new lines to the screen &reader")
        self.announce.setAccessibleName("Announce new lines to the screen reader")
        form.addRow(self.announce)
        self._base = AppearanceSettings()
        self.preview = CaptionView(copy.deepcopy(self._base))
        self.preview.setAccessibleName("Caption preview")
        self.preview.setMinimumHeight(90)
        self.preview.linger_timer.timeout.disconnect()  # the preview never fades
        outer.addWidget(self.preview)
        for signal in (self.preset.currentIndexChanged, self.text_color.textChanged,
                       self.background_color.textChanged, self.font_box.currentFontChanged,
                       self.font_size.valueChanged, self.line_count.valueChanged,
                       self.row_chars.valueChanged,
                       self.outline.toggled, self.opacity.valueChanged):
            signal.connect(self._update_preview)

    def load(self, settings: Settings) -> None:
        a = settings.appearance
        self._base = copy.deepcopy(a)
        self.preset.setCurrentIndex(max(0, self.preset.findData(a.preset)))
        self.text_color.setText(a.text_color)
        self.background_color.setText(a.background_color)
        self.font_box.setCurrentFont(QFont(a.font_family))
        self.font_size.setValue(a.font_size)
        self.line_count.setValue(a.lines)
        self.row_chars.setValue(a.row_chars)
        self.outline.setChecked(a.outline)
        self.opacity.setValue(round(a.background_opacity * 100))
        self.dock.setCurrentIndex(max(0, self.dock.findData(a.dock)))
        self.linger.setValue(a.linger_seconds)
        self.announce.setChecked(a.announce_lines)
        self._update_preview()

    def _collect(self, a: AppearanceSettings) -> Errors:
        errors: Errors = {}
        a.preset = self.preset.currentData()
        for key, edit in (("text_color", self.text_color),
                          ("background_color", self.background_color)):
            text = edit.text().strip()
            if a.preset == "custom" and not QColor.isValidColorName(text):
                errors[key] = f"“{text}” is not a colour: write it like #FFCC00 or yellow."
            elif text:
                setattr(a, key, text)
        a.font_family = self.font_box.currentFont().family()
        a.font_size = self.font_size.value()
        a.lines = self.line_count.value()
        a.row_chars = self.row_chars.value()
        a.outline = self.outline.isChecked()
        a.background_opacity = self.opacity.value() / 100
        dock = self.dock.currentData()
        if dock != a.dock:
            a.dock = dock
        a.linger_seconds = round(self.linger.value(), 1)
        a.announce_lines = self.announce.isChecked()
        return errors

    def _update_preview(self) -> None:
        preview = copy.deepcopy(self._base)
        self._collect(preview)
        enabled = self.preset.currentData() == "custom"
        self.text_color.setEnabled(enabled)
        self.background_color.setEnabled(enabled)
        self.preview.apply_appearance(preview)
        self.preview.clear()
        self.preview.show_update(PREVIEW)

    def write(self, out: Settings) -> Errors:
        return self._collect(out.appearance)
