"""The preflight list: one line per check, PASS / FAIL / UNKNOWN with the fix in words.

A check that could not be read (UNKNOWN) gets a "Go past this check" box carrying
its reason; ticking it records the check's id in the kind's ``accepted_unknown``
setting. A FAIL can never be gone past. ``ready()`` says whether a deploy may start.
The report itself is ``captioner.cloud.preflight``'s, the same as ``endpoint check``.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QLabel, QPushButton, QVBoxLayout, QWidget

from captioner.cloud.preflight import Check, Preflight, Status
from captioner.cloud.preflight.checks import NOT_CHECKED_CREDENTIALS, NOT_CHECKED_ROLE
from captioner.ui.endpoints.page_parts import (
    ERROR_SHADES,
    OK_SHADES,
    WARNING_SHADES,
    color_style,
)
from captioner.ui.endpoints.service import gate

STATE_COLORS = {Status.PASS: OK_SHADES, Status.FAIL: ERROR_SHADES, Status.UNKNOWN: WARNING_SHADES}
# "not checked because an earlier check failed": fixed by that check, never gone past
NOT_CHECKED = (NOT_CHECKED_CREDENTIALS, NOT_CHECKED_ROLE)
STATE_MARKS = {Status.PASS: "✔", Status.FAIL: "✘", Status.UNKNOWN: "?"}


def line_of(check: Check) -> str:
    """"FAIL  Execution role: No execution role is chosen. Fix: Choose a role…"."""
    text = f"{check.status.value}  {check.title}: {check.detail}"
    return f"{text} Fix: {check.fix}" if check.fix and not check.passed else text


class PreflightList(QWidget):
    accepted_changed = Signal()
    quota_requested = Signal()  # "Ask AWS for more" under a failing quota check
    move_first_requested = Signal(str)  # put this pool type (which has quota) first

    def __init__(self, noun: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.noun = noun
        self.setAccessibleName(f"{noun} preflight checks")
        self.preflight: Preflight | None = None
        self.accepted: list[str] = []
        self.labels: dict[str, QLabel] = {}
        self.overrides: dict[str, QCheckBox] = {}
        self.quota_button: QPushButton | None = None  # under a quota check it can fix
        self.first_button: QPushButton | None = None  # puts a type with quota first
        self.fallback_focus: QWidget | None = None  # takes the focus the list cannot keep
        self.summary = QLabel("Not checked yet.")
        self.summary.setWordWrap(True)
        self.summary.setAccessibleName(f"{noun} preflight result")
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.addWidget(self.summary)

    def set_running(self, text: str) -> None:
        self.summary.setText(text)
        self.summary.setAccessibleDescription(text)
        self.summary.setStyleSheet("")

    def mark_stale(self) -> None:
        """What the shown results checked has changed: clear them and say so."""
        if self.preflight is not None:
            self.set_preflight(None)
            self.set_running("The set-up changed since the last check: press Check set-up.")

    def set_accepted(self, keys: list[str]) -> None:
        self.accepted = list(keys)
        for key, box in self.overrides.items():
            box.blockSignals(True)
            box.setChecked(key in self.accepted)
            box.blockSignals(False)
        self._show_summary()

    @property
    def checks(self) -> tuple[Check, ...]:
        return self.preflight.checks if self.preflight is not None else ()

    def set_preflight(self, preflight: Preflight | None) -> None:
        """Show ``preflight`` (None clears the list).

        The keyboard focus stays in the list across the rebuild: on the summary while
        the lines are gone (it says "Checking…"), then on the new line's button where
        there is one, else on ``fallback_focus`` (the "Check set-up" button): a deleted
        focused button would send the next Tab back to the top of the window."""
        window_focus = self.window().focusWidget()
        held = window_focus is not None and (window_focus is self.summary
                                             or self.isAncestorOf(window_focus))
        if held:
            self.summary.setFocus(Qt.FocusReason.OtherFocusReason)
        buttons = [b for b in (self.first_button, self.quota_button) if b is not None]
        for widget in [*self.labels.values(), *self.overrides.values(), *buttons]:
            self._layout.removeWidget(widget)
            widget.deleteLater()
        self.labels, self.overrides = {}, {}
        self.quota_button = self.first_button = None
        self.preflight = preflight
        for check in self.checks:
            key, line = check.id.value, line_of(check)
            label = QLabel(f"{STATE_MARKS[check.status]} {line}")
            label.setWordWrap(True)
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            label.setStyleSheet(color_style(STATE_COLORS[check.status], self))
            label.setAccessibleName(f"{check.title} check")
            label.setAccessibleDescription(line)
            self._layout.addWidget(label)
            self.labels[key] = label
            if check.status is Status.UNKNOWN and check.detail not in NOT_CHECKED:
                box = QCheckBox(f"Go past the {check.title.lower()} check: I know it is "
                                "fine (the reason it could not be read is above)")
                box.setAccessibleName(f"Go past the {check.title.lower()} check")
                box.setAccessibleDescription(check.detail)
                box.setChecked(key in self.accepted)
                box.toggled.connect(lambda on, key=key: self._toggle(key, on))
                self._layout.addWidget(box)
                self.overrides[key] = box
            if check.move_first:
                # the one letter free on the page: Alt+Z
                self.first_button = QPushButton(f"Prioriti&ze {check.move_first} in the pool "
                                                "(it has the quota)")
                self.first_button.setAccessibleName(
                    f"Put {check.move_first}, which has quota, first in the instance pool")
                self.first_button.clicked.connect(
                    lambda _=False, t=check.move_first: self.move_first_requested.emit(t))
                self._layout.addWidget(self.first_button, 0, Qt.AlignmentFlag.AlignLeft)
            if check.can_ask_quota:
                self.quota_button = QPushButton("Ask AWS for more &quota…")
                self.quota_button.setAccessibleName("Ask AWS for more endpoint quota")
                self.quota_button.clicked.connect(self.quota_requested.emit)
                self._layout.addWidget(self.quota_button, 0, Qt.AlignmentFlag.AlignLeft)
        self._show_summary()
        if held and preflight is not None:
            target = self.first_button or self.quota_button or self.fallback_focus
            if target is not None and target.isEnabled():
                target.setFocus(Qt.FocusReason.OtherFocusReason)

    def _toggle(self, key: str, on: bool) -> None:
        if on and key not in self.accepted:
            self.accepted.append(key)
        elif not on and key in self.accepted:
            self.accepted.remove(key)
        self._show_summary()
        self.accepted_changed.emit()

    def blocking(self) -> Check | None:
        return gate(self.preflight, self.accepted) if self.preflight is not None else None

    def ready(self) -> bool:
        return self.preflight is not None and self.blocking() is None

    def _show_summary(self) -> None:
        if self.preflight is None:
            return
        blocking = self.blocking()
        if blocking is None:
            self.summary.setText(f"All checks pass: the {self.noun} can be started.")
            self.summary.setStyleSheet(color_style(STATE_COLORS[Status.PASS], self))
        else:
            verb = "fails" if blocking.status is Status.FAIL else "could not be read"
            self.summary.setText(f"Not ready: the {blocking.title.lower()} check {verb}. "
                                 "Fix it below, then press Check again.")
            self.summary.setStyleSheet(color_style(STATE_COLORS[blocking.status], self))
        self.summary.setAccessibleDescription(self.summary.text())


__all__ = ["PreflightList", "line_of"]
