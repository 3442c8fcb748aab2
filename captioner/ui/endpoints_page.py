"""Settings → Endpoints: start, watch and stop the SageMaker endpoints (one row per kind).

The page only shows :class:`~captioner.cloud.manager.EndpointManager` state and asks it
to act; all AWS work runs in the manager's tasks. Before anything is created the
estimated hourly cost is shown in a confirmation opened with ``open()`` (never
``exec()``: a nested event loop would break the running asyncio task). AWS errors are
shown verbatim, selectable, under the row they concern.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from captioner.cloud.deploy_plan import KINDS, Kind
from captioner.cloud.manager import EndpointManager, KindStatus, Phase, PreparedDeploy
from captioner.cloud.pricing import format_cost
from captioner.cloud.status import EndpointSnapshot
from captioner.settings import Settings
from captioner.ui.settings.common import Errors, Page

log = logging.getLogger(__name__)

KIND_TITLES: dict[Kind, str] = {"stt": "Captions (Voxtral speech-to-text)",
                                "tts": "Spoken replies (Qwen3-TTS)"}
KIND_NOUNS: dict[Kind, str] = {"stt": "captions endpoint", "tts": "replies endpoint"}
REFRESH_MS = 1000


def hms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class DeployConfirmation(QMessageBox):
    """"Deploy … at about $X/hour?" — opened with ``open()``; Deploy = accepted."""

    def __init__(self, prepared: PreparedDeploy, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        plan = prepared.plan
        noun = KIND_NOUNS[prepared.kind]
        self.setWindowTitle(f"Start the {noun}?")
        self.setIcon(QMessageBox.Icon.Question)
        self.setText(f"Start the {noun} {plan.name} in {plan.region}?\n\n"
                     f"Estimated cost: {prepared.cost_text()}.")
        self.setInformativeText(
            f"Instances: {' → '.join(plan.instance_types)}. It bills every hour until it is "
            "stopped; the first start takes many minutes. Prices are approximate — the AWS "
            "pricing page is the truth.")
        self.deploy_button = self.addButton("&Deploy", QMessageBox.ButtonRole.AcceptRole)
        self.cancel_button = self.addButton(QMessageBox.StandardButton.Cancel)
        self.deploy_button.setAccessibleName(f"Deploy the {noun}")
        self.cancel_button.setAccessibleName("Cancel: create nothing")
        self.setDefaultButton(self.cancel_button)  # Enter must not spend money by accident
        self.setEscapeButton(self.cancel_button)
        self.setAccessibleName(f"Confirm starting the {noun}")
        self.setAccessibleDescription(self.text())
        self.setWindowModality(Qt.WindowModality.WindowModal)


class StartFlow:
    """Start button → prepare (plan + cost) → confirmation → ``manager.start``.

    Shared by the page and the tray; ``dialog`` is the open confirmation (tests use it).
    """

    def __init__(self, manager: EndpointManager, parent: QWidget | None = None) -> None:
        self.manager = manager
        self.parent = parent
        self.dialog: DeployConfirmation | None = None

    def request(self, kind: Kind) -> None:
        self.manager.spawn(self._prepare_and_ask(kind))

    async def _prepare_and_ask(self, kind: Kind) -> None:
        prepared = await self.manager.prepare(kind)
        if prepared is None:
            return  # the error is in the kind's status
        dialog = DeployConfirmation(prepared, self.parent)
        dialog.accepted.connect(lambda: self.manager.spawn(self.manager.start(kind, prepared)))
        dialog.rejected.connect(lambda: self.manager.cancel_prepared(kind))
        dialog.finished.connect(dialog.deleteLater)
        self.dialog = dialog
        dialog.open()


class EndpointRow(QGroupBox):
    """Status, instance, uptime, cost, progress and Start/Stop of one kind."""

    def __init__(self, kind: Kind, parent: QWidget | None = None) -> None:
        super().__init__(KIND_TITLES[kind], parent)
        self.kind = kind
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
        self.error_label.setStyleSheet("color: #C62828;")
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
        self.status_label.setText(f"{status.stage_text}{where}")
        self.instance_label.setText(_instance_text(snap))
        self.uptime_label.setText(hms(uptime) if status.name else "—")
        currency = snap.currency if snap is not None else "USD"
        if status.name and hourly is not None:
            self.cost_label.setText(f"{format_cost(cost, currency)} so far "
                                    f"({format_cost(hourly, currency)}/hour)")
        elif status.name:
            self.cost_label.setText("unknown (no price for this instance type)")
        else:
            self.cost_label.setText("—")
        if status.phase.busy:
            self.progress.setRange(0, 0)  # indeterminate: SageMaker gives no percentage
            text = status.stage_text + (f" — {hms(uptime)}" if uptime is not None else "")
        else:
            self.progress.setRange(0, 1)
            self.progress.setValue(1 if status.phase is Phase.READY else 0)
            text = status.stage_text
        self.progress.setFormat(text.replace("%", "%%"))
        self.progress.setAccessibleDescription(text)
        self.error_label.setText(status.error or "")
        self.error_label.setAccessibleDescription(status.error or "")
        self.error_label.setVisible(bool(status.error))
        self.start_button.setEnabled(status.can_start)
        self.stop_button.setEnabled(status.can_stop)

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


class EndpointsPage(Page):
    """The Endpoints tab: ``EndpointsPage(manager)``; see the module docstring."""

    title = "&Endpoints"

    def __init__(self, manager: EndpointManager, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Endpoints")
        self.manager = manager
        self.flow = StartFlow(manager, self)
        self.rows: dict[Kind, EndpointRow] = {k: EndpointRow(k) for k in KINDS}
        intro = QLabel("Run the recognition and reply models on your own SageMaker endpoints. "
                       "They bill every hour while running; idle ones stop by themselves.")
        intro.setWordWrap(True)

        self.idle_label = QLabel()
        self.idle_label.setWordWrap(True)
        self.idle_label.setAccessibleName("Idle auto-stop warning")
        self.keep_button = QPushButton("&Keep running")
        self.keep_button.setAccessibleName("Keep the endpoint running: cancel the idle stop")
        self.idle_box = _banner(self.idle_label, self.keep_button)
        self._idle_kind: Kind | None = None

        self.orphans_label = QLabel()
        self.orphans_label.setWordWrap(True)
        self.orphans_label.setAccessibleName("Other running endpoints")
        self.orphans_button = QPushButton("Stop ot&hers")
        self.orphans_button.setAccessibleName("Stop the other running endpoints")
        self.orphans_box = _banner(self.orphans_label, self.orphans_button)

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.idle_box)
        layout.addWidget(self.orphans_box)
        for row in self.rows.values():
            layout.addWidget(row)
            row.start_button.clicked.connect(lambda _=False, k=row.kind: self.start(k))
            row.stop_button.clicked.connect(lambda _=False, k=row.kind: self.stop(k))
        layout.addStretch(1)
        self.keep_button.clicked.connect(self._keep_running)
        self.orphans_button.clicked.connect(self._stop_orphans)

        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()
        hooks = ((manager.status_changed, self._on_status),
                 (manager.idle_warning, self._on_idle),
                 (manager.orphans_changed, self._on_orphans))
        for hook, callback in hooks:
            hook.connect(callback)
        self.destroyed.connect(lambda *_: [h.disconnect(c) for h, c in hooks])
        self.refresh()
        self._on_orphans(manager.orphans)
        self._on_idle(None, None)

    # ---- actions -------------------------------------------------------------------

    @property
    def confirmation(self) -> DeployConfirmation | None:
        return self.flow.dialog

    def start(self, kind: Kind) -> None:
        self.rows[kind].start_button.setEnabled(False)
        self.flow.request(kind)

    def stop(self, kind: Kind) -> None:
        self.rows[kind].stop_button.setEnabled(False)
        self.manager.spawn(self.manager.stop(kind))

    def _keep_running(self) -> None:
        if self._idle_kind is not None:
            self.manager.cancel_idle_stop(self._idle_kind)

    def _stop_orphans(self) -> None:
        self.orphans_button.setEnabled(False)
        self.manager.spawn(self.manager.stop_orphans())

    # ---- display -------------------------------------------------------------------

    def refresh(self) -> None:
        for kind, row in self.rows.items():
            m = self.manager
            row.show_status(m.status(kind), m.uptime(kind), m.cost_so_far(kind),
                            m.hourly_cost(kind))

    def _on_status(self, status: KindStatus) -> None:
        self.refresh()

    def _on_idle(self, kind: Kind | None, seconds_left: float | None) -> None:
        self._idle_kind = kind if seconds_left is not None else None
        if kind is None or seconds_left is None:
            self.idle_box.hide()
            return
        self.idle_label.setText(f"No activity: the {KIND_NOUNS[kind]} stops in "
                                f"{round(seconds_left)} s to save cost.")
        self.idle_box.show()

    def _on_orphans(self, orphans: list[EndpointSnapshot]) -> None:
        self.orphans_button.setEnabled(True)
        if not orphans:
            self.orphans_box.hide()
            return
        names = ", ".join(o.name for o in orphans)
        self.orphans_label.setText(f"Also running (and billing): {names}.")
        self.orphans_box.show()

    # ---- Page protocol (nothing here is saved in settings) --------------------------

    def load(self, settings: Settings) -> None:
        self.refresh()

    def write(self, out: Settings) -> Errors:
        return {}


def _banner(label: QLabel, button: QPushButton) -> QWidget:
    box = QWidget()
    box.setStyleSheet("background: #FFF3E0;")
    layout = QHBoxLayout(box)
    layout.addWidget(label, 1)
    layout.addWidget(button)
    box.hide()
    return box


__all__ = ["DeployConfirmation", "EndpointRow", "EndpointsPage", "StartFlow", "hms"]
