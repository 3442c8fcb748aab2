"""Settings → Audio: source, devices, gains, latency (chunk size)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QFormLayout, QLabel, QWidget

from captioner.audio.devices import AudioDevice, list_devices
from captioner.settings import Settings
from captioner.ui.settings.common import Errors, Page

log = logging.getLogger(__name__)

SOURCES = (("system", "What this computer plays (system audio)"),
           ("mic", "Microphone"), ("both", "Both, mixed (calls)"))
LATENCIES = ((2560, "Low — 80 ms chunks, one speech-model frame"),
             (4096, "Balanced — 128 ms chunks"),
             (8192, "Relaxed — 256 ms chunks (least overhead)"))
DeviceLister = Callable[[], Sequence[AudioDevice]]


class AudioPage(Page):
    title = "&Audio"

    def __init__(self, devices: DeviceLister = list_devices,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._list_devices = devices
        form = QFormLayout(self)
        self.source = QComboBox()
        for key, text in SOURCES:
            self.source.addItem(text, key)
        self.add_row(form, "source", "&Listen to:", self.source, "Audio source")
        self.system_device = QComboBox()
        self.add_row(form, "system_device", "S&ystem audio device:", self.system_device)
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
        self.device_note.setAccessibleName("Device list status")
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
                    combo.addItem(dev.label(), dev.name)
            if current is not None:
                index = combo.findData(current)
                if index < 0:  # a device that is gone now: keep it selectable
                    combo.addItem(f"{current} (not found)", current)
                    index = combo.count() - 1
                combo.setCurrentIndex(index)

    def _enable(self) -> None:
        source = self.source.currentData()
        for w in (self.mic_device, self.mic_gain):
            w.setEnabled(source in ("mic", "both"))
        for w in (self.system_device, self.system_gain):
            w.setEnabled(source in ("system", "both"))

    def load(self, settings: Settings) -> None:
        a = settings.audio
        self.source.setCurrentIndex(max(0, self.source.findData(a.source)))
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
        a.source = self.source.currentData()
        a.mic_device = self.mic_device.currentData()
        a.system_device = self.system_device.currentData()
        a.mic_gain = round(self.mic_gain.value(), 2)
        a.system_gain = round(self.system_gain.value(), 2)
        a.chunk_bytes = int(self.latency.currentData())
        return {}
