"""The preflight list: one line per check, PASS / FAIL / UNKNOWN with the fix in words.

A check that could not be read (UNKNOWN) gets a "Go past this check" box carrying
its reason; ticking it records the check's key in the kind's ``accepted_unknown``
setting. A FAIL can never be gone past. ``ready()`` says whether a deploy may start.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QLabel, QVBoxLayout, QWidget

from captioner.ui.endpoints.service import Check, CheckState, first_blocking

STATE_COLORS = {CheckState.PASS: "#2E7D32", CheckState.FAIL: "#C62828",
                CheckState.UNKNOWN: "#E65100"}
STATE_MARKS = {CheckState.PASS: "✔", CheckState.FAIL: "✘", CheckState.UNKNOWN: "?"}


class PreflightList(QWidget):
    accepted_changed = Signal()

    def __init__(self, noun: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.noun = noun
        self.setAccessibleName(f"{noun} preflight checks")
        self.checks: list[Check] = []
        self.accepted: list[str] = []
        self.labels: dict[str, QLabel] = {}
        self.overrides: dict[str, QCheckBox] = {}
        self.summary = QLabel("Not checked yet.")
        self.summary.setWordWrap(True)
        self.summary.setAccessibleName(f"{noun} preflight result")
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.addWidget(self.summary)

    def set_running(self, text: str) -> None:
        self.summary.setText(text)
        self.summary.setStyleSheet("")

    def set_accepted(self, keys: list[str]) -> None:
        self.accepted = list(keys)
        for key, box in self.overrides.items():
            box.blockSignals(True)
            box.setChecked(key in self.accepted)
            box.blockSignals(False)
        self._show_summary()

    def set_checks(self, checks: list[Check]) -> None:
        for widget in [*self.labels.values(), *self.overrides.values()]:
            self._layout.removeWidget(widget)
            widget.deleteLater()
        self.labels, self.overrides = {}, {}
        self.checks = list(checks)
        for check in checks:
            label = QLabel(f"{STATE_MARKS[check.state]} {check.line}")
            label.setWordWrap(True)
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            label.setStyleSheet(f"color: {STATE_COLORS[check.state]};")
            label.setAccessibleName(f"{check.title} check")
            label.setAccessibleDescription(check.line)
            self._layout.addWidget(label)
            self.labels[check.key] = label
            if check.state is CheckState.UNKNOWN:
                box = QCheckBox(f"Go past the {check.title.lower()} check: I know it is "
                                "fine (the reason it could not be read is above)")
                box.setAccessibleName(f"Go past the {check.title.lower()} check")
                box.setAccessibleDescription(check.detail)
                box.setChecked(check.key in self.accepted)
                box.toggled.connect(lambda on, key=check.key: self._toggle(key, on))
                self._layout.addWidget(box)
                self.overrides[check.key] = box
        self._show_summary()

    def _toggle(self, key: str, on: bool) -> None:
        if on and key not in self.accepted:
            self.accepted.append(key)
        elif not on and key in self.accepted:
            self.accepted.remove(key)
        self._show_summary()
        self.accepted_changed.emit()

    def blocking(self) -> Check | None:
        return first_blocking(self.checks, self.accepted)

    def ready(self) -> bool:
        return bool(self.checks) and self.blocking() is None

    def _show_summary(self) -> None:
        if not self.checks:
            return
        blocking = self.blocking()
        if blocking is None:
            self.summary.setText(f"All checks pass: the {self.noun} can be started.")
            self.summary.setStyleSheet(f"color: {STATE_COLORS[CheckState.PASS]};")
        else:
            verb = "fails" if blocking.state is CheckState.FAIL else "could not be read"
            self.summary.setText(f"Not ready: the {blocking.title.lower()} check {verb}. "
                                 "Fix it below, then press Check again.")
            self.summary.setStyleSheet(f"color: {STATE_COLORS[blocking.state]};")
        self.summary.setAccessibleDescription(self.summary.text())


__all__ = ["PreflightList"]
