"""Settings → Audio: source (one stream, or you and others as two), speaker names,
devices, gains, latency (chunk size)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QWidget,
)

from captioner.audio.devices import AudioDevice, list_devices
from captioner.settings import Settings
from captioner.ui.settings.common import Errors, Page

log = logging.getLogger(__name__)

SPEAKERS = "speakers"  # the combo's key for source "both" captioned as two streams
SOURCES = (("system", "What this computer plays (system audio)"),
           ("mic", "Microphone"), ("both", "Both, mixed (calls)"),
           (SPEAKERS, "Both, as two speakers: you (microphone) and others (calls)"))
MAX_LABEL_CHARS = 24
LATENCIES = ((2560, "Low — 80 ms chunks, one speech-model frame"),
             (4096, "Balanced — 128 ms chunks"),
             (8192, "Relaxed — 256 ms chunks (least overhead)"))
DeviceLister = Callable[[], Sequence[AudioDevice]]


class AudioPage(Page):
    title = "Audio"

    def __init__(self, devices: DeviceLister = list_devices,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._list_devices = devices
        form = QFormLayout(self)
        self.source = QComboBox()
        for key, text in SOURCES:
            self.source.addItem(text, key)
        self.add_row(form, "source", "&Listen to:", self.source, "Audio source")
        self.mic_label = QLineEdit()
        self.mic_label.setMaxLength(MAX_LABEL_CHARS)
        self.add_row(form, "mic_label", "Your &name in captions:", self.mic_label,
                     "Name for the microphone's captions")
        self.system_label = QLineEdit()
        self.system_label.setMaxLength(MAX_LABEL_CHARS)
        self.add_row(form, "system_label", "&Others' name in captions:", self.system_label,
                     "Name for the system audio's captions")
        self.echo_cancel = QCheckBox("Cancel what the microphone picks up from the speakers "
                                     "(echo); off with headphones")
        self.echo_cancel.setToolTip("The others' voices in two-speaker mode, and your own "
                                    "spoken replies")
        self.echo_cancel.setAccessibleName("Echo cancellation")
        form.addRow("", self.echo_cancel)
        self.system_device = QComboBox()
        self.add_row(form, "system_device", "System audio &device:", self.system_device)
        self.mic_device = QComboBox()
        self.add_row(form, "mic_device", "&Microphone:", self.mic_device)
        self.system_gain = self._gain()
        self.add_row(form, "system_gain", "System audio &gain:", self.system_gain)
        self.mic_gain = self._gain()
        self.add_row(form, "mic_gain", "M&icrophone gain:", self.mic_gain)
        self.latency = QComboBox()
        for size, text in LATENCIES:
            self.latency.addItem(text, size)
        self.add_row(form, "chunk", "La&tency:", self.latency, "Latency")
        self.device_note = QLabel()
        self.device_note.setWordWrap(True)
        form.addRow(self.device_note)
        self.source.currentIndexChanged.connect(self._enable)

    @staticmethod
    def _gain() -> QDoubleSpinBox:
        spin = QDoubleSpinBox()
        spin.setRange(0.0, 8.0)
        spin.setSingleStep(0.1)
        spin.setDecimals(1)
        spin.setSuffix(" ×")
        return spin

    def _fill_devices(self, current_mic: str | None, current_system: str | None) -> None:
        try:
            devices = list(self._list_devices())
            self.device_note.setText("")
        except Exception as exc:  # no audio system at all: keep the settings as they are
            log.warning("! listing audio devices: %s", exc)
            devices = []
            self.device_note.setText(f"Audio devices could not be listed: {exc}")
        for combo, kind, current in ((self.mic_device, "mic", current_mic),
                                     (self.system_device, "system", current_system)):
            combo.clear()
            combo.addItem("System default", None)
            for dev in devices:
                if dev.kind == kind:
                    combo.addItem(dev.title(), dev.name)  # the CLI's numbers mean nothing here
            if current is not None:
                index = combo.findData(current)
                if index < 0:  # a device that is gone now: keep it selectable
                    combo.addItem(f"{current} (not found)", current)
                    index = combo.count() - 1
                combo.setCurrentIndex(index)

    def _enable(self) -> None:
        source = self.source.currentData()
        for w in (self.mic_device, self.mic_gain):
            w.setEnabled(source in ("mic", "both", SPEAKERS))
        for w in (self.system_device, self.system_gain):
            w.setEnabled(source in ("system", "both", SPEAKERS))
        for w in (self.mic_label, self.system_label):
            w.setEnabled(source == SPEAKERS)
        self.echo_cancel.setEnabled(source in ("mic", SPEAKERS))

    def load(self, settings: Settings) -> None:
        a = settings.audio
        key = SPEAKERS if a.two_streams else a.source
        self.source.setCurrentIndex(max(0, self.source.findData(key)))
        self.mic_label.setText(a.mic_label)
        self.system_label.setText(a.system_label)
        self.echo_cancel.setChecked(a.echo_cancel)
        self._fill_devices(a.mic_device, a.system_device)
        self.mic_gain.setValue(a.mic_gain)
        self.system_gain.setValue(a.system_gain)
        index = self.latency.findData(a.chunk_bytes)
        if index < 0:
            self.latency.addItem(f"Custom — {a.chunk_bytes * 1000 // 32000} ms chunks",
                                 a.chunk_bytes)
            index = self.latency.count() - 1
        self.latency.setCurrentIndex(index)
        self._enable()

    def write(self, out: Settings) -> Errors:
        a = out.audio
        key = self.source.currentData()
        errors = self._label_errors()
        if errors and key == SPEAKERS:
            return errors
        a.source, a.speakers = ("both", True) if key == SPEAKERS else (key, False)
        if not errors:
            a.mic_label = self.mic_label.text().strip()
            a.system_label = self.system_label.text().strip()
        a.echo_cancel = self.echo_cancel.isChecked()
        a.mic_device = self.mic_device.currentData()
        a.system_device = self.system_device.currentData()
        a.mic_gain = round(self.mic_gain.value(), 2)
        a.system_gain = round(self.system_gain.value(), 2)
        a.chunk_bytes = int(self.latency.currentData())
        return {}

    def _label_errors(self) -> Errors:
        mine, theirs = self.mic_label.text().strip(), self.system_label.text().strip()
        errors = {key: "Give a name, e.g. “You” or “Others”."
                  for key, text in (("mic_label", mine), ("system_label", theirs)) if not text}
        if mine and mine.casefold() == theirs.casefold():
            errors["system_label"] = "Use a name different from yours."
        return errors
