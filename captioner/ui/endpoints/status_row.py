"""One kind's endpoint at a glance: status, instance, uptime, cost, progress, Start/Stop."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from captioner.cloud.deploy_plan import Kind
from captioner.cloud.manager import KindStatus, Phase
from captioner.cloud.pricing import format_cost
from captioner.cloud.status import EndpointSnapshot
from captioner.ui.a11y import announce, show_text
from captioner.ui.endpoints.page_parts import ERROR_SHADES, color_style

KIND_TITLES: dict[Kind, str] = {"stt": "Captions (Voxtral speech-to-text)",
                                "tts": "Spoken replies (Qwen3-TTS)"}
KIND_NOUNS: dict[Kind, str] = {"stt": "captions endpoint", "tts": "replies endpoint"}


def hms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"



class EndpointRow(QGroupBox):
    """Status, instance, uptime, cost, progress and Start/Stop of one kind.

    The value labels keep their names ("captions endpoint status") for screen readers,
    with the shown text as description; a change of phase (Creating → InService → an
    error) is announced while the row is on screen, as it comes minutes after Start."""

    def __init__(self, kind: Kind, parent: QWidget | None = None) -> None:
        super().__init__(KIND_TITLES[kind], parent)
        self.kind = kind
        self._phase: Phase | None = None  # the last shown, to announce a change
        noun = KIND_NOUNS[kind]
        self.setAccessibleName(KIND_TITLES[kind])
        self.status_label = self._value(f"{noun} status")
        self.instance_label = self._value(f"{noun} instance")
        self.uptime_label = self._value(f"{noun} uptime")
        self.cost_label = self._value(f"{noun} cost")
        self.progress = QProgressBar()
        self.progress.setAccessibleName(f"{noun} progress")
        self.progress.setTextVisible(True)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                                 | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.error_label.setAccessibleName(f"{noun} error")
        self.error_label.hide()
        self.start_button = QPushButton("&Start" if kind == "stt" else "S&tart")
        self.start_button.setAccessibleName(f"Start {noun}")
        self.stop_button = QPushButton("St&op" if kind == "stt" else "Sto&p")
        self.stop_button.setAccessibleName(f"Stop {noun}")

        grid = QGridLayout()
        for row, (caption, label) in enumerate((
                ("Status:", self.status_label), ("Instance:", self.instance_label),
                ("Uptime:", self.uptime_label), ("Cost:", self.cost_label))):
            grid.addWidget(QLabel(caption), row, 0)
            grid.addWidget(label, row, 1)
        grid.setColumnStretch(1, 1)  # values sit next to their captions
        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.stop_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(grid)
        layout.addWidget(self.progress)
        layout.addWidget(self.error_label)
        layout.addLayout(buttons)
        self.setTabOrder(self.start_button, self.stop_button)

    def _value(self, name: str) -> QLabel:
        label = QLabel("—")
        label.setAccessibleName(name)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        return label

    def show_status(self, status: KindStatus, uptime: float | None, cost: float | None,
                    hourly: float | None) -> None:
        snap = status.snapshot
        where = f" — {status.name}" if status.name else ""
        show_text(self.status_label, f"{status.stage_text}{where}")
        show_text(self.instance_label, _instance_text(snap))
        show_text(self.uptime_label, hms(uptime) if status.name else "—")
        currency = snap.currency if snap is not None else "USD"
        if status.name and hourly is not None:
            show_text(self.cost_label, f"{format_cost(cost, currency)} so far "
                                       f"({format_cost(hourly, currency)}/hour)")
        elif status.name:
            show_text(self.cost_label, "unknown (no price for this instance type)")
        else:
            show_text(self.cost_label, "—")
        if status.phase.busy:
            self.progress.setRange(0, 0)  # indeterminate: SageMaker gives no percentage
            text = status.stage_text + (f" — {hms(uptime)}" if uptime is not None else "")
        else:
            self.progress.setRange(0, 1)
            self.progress.setValue(1 if status.phase is Phase.READY else 0)
            text = status.stage_text
        self.progress.setFormat(text.replace("%", "%%"))
        self.progress.setAccessibleDescription(text)
        if self.error_label.styleSheet() != (style := color_style(ERROR_SHADES, self)):
            self.error_label.setStyleSheet(style)  # the theme's light or dark shade
        show_text(self.error_label, status.error or "")
        self.error_label.setVisible(bool(status.error))
        self.start_button.setEnabled(status.can_start)
        self.stop_button.setEnabled(status.can_stop)
        if self._phase not in (None, status.phase) and self.isVisible():
            failed = status.phase is Phase.ERROR
            said = f"{KIND_NOUNS[self.kind].capitalize()}: {status.stage_text}."
            announce(self.status_label, f"{said} {status.error}" if failed and status.error
                     else said, assertive=failed)
        self._phase = status.phase

    def progress_text(self) -> str:
        return self.progress.format().replace("%%", "%")


def _instance_text(snap: EndpointSnapshot | None) -> str:
    if snap is None:
        return "—"
    if snap.instance_type:
        return f"{snap.instance_count or 1}× {snap.instance_type}"
    if snap.candidate_types:
        return "pool " + " → ".join(snap.candidate_types) + " (waiting for capacity)"
    return "—"


__all__ = ["KIND_NOUNS", "KIND_TITLES", "EndpointRow", "hms"]
