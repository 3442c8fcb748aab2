"""One-click endpoint control in the tray menu, visible where the user looks.

``EndpointTray(manager, menu, tray=…, gate=…, open_setup=…)`` puts "Start captions
endpoint" / "Stop captions endpoint" (and, while an idle stop is pending, "Keep …
running") above "Quit Captioner". Start runs the preflight of the saved plan: when
every check passes it asks about the cost (:class:`StartFlow`) and deploys; when one
blocks, Settings opens at the Endpoints set-up on that check. Progress and failures
show as a tooltip line ("Captions endpoint: Creating — 0:03:12"), as the ``progress``
signal (the app puts it on the overlay's status strip, since many desktops show no
tray balloons) and as a notification: nothing fails silently. A "$" badge stays on
while anything bills.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from captioner.cloud.deploy_plan import KINDS, Kind
from captioner.cloud.manager import KIND_LABELS, EndpointManager, KindStatus, Phase
from captioner.cloud.preflight import Preflight
from captioner.cloud.pricing import format_cost
from captioner.ui.endpoints.preflight_list import line_of
from captioner.ui.endpoints.service import gate
from captioner.ui.endpoints.start_flow import GuardedStart, StartFlow
from captioner.ui.endpoints.status_row import hms

REFRESH_MS = 5_000
NOUNS: dict[Kind, str] = {"stt": "captions", "tts": "replies"}

OpenSetup = Callable[[Kind, Preflight], None]


class TrayLike(Protocol):
    def set_tooltip_line(self, key: str, line: str | None) -> None: ...
    def set_badge(self, text: str | None, color: str = ...) -> None: ...
    def notify(self, title: str, message: str, *, critical: bool = False) -> bool: ...


def tooltip_key(kind: Kind) -> str:
    return f"endpoint-{kind}"


class EndpointTray(QObject):
    tooltip_changed = Signal(str)  # "" when no endpoint line
    progress = Signal(str, str)  # (kind, line) for the overlay's status strip; "" clears

    def __init__(self, manager: EndpointManager, menu: QMenu | list[QMenu], *,
                 tray: TrayLike | None = None,
                 kind: Kind = "stt", before: QAction | None = None,
                 gate: GuardedStart | None = None, open_setup: OpenSetup | None = None,
                 parent: QObject | None = None) -> None:
        menus = menu if isinstance(menu, list) else [menu]
        super().__init__(parent or menus[0])
        self.manager = manager
        self.tray = tray
        self.kind = kind
        self.gate = gate
        self.flow = gate.flow if gate is not None else StartFlow(manager)
        if gate is not None:
            gate.on_checks = self._on_checks
        self.open_setup = open_setup
        noun = NOUNS[kind]
        self.label = f"{noun.capitalize()} endpoint"
        self.start_action = QAction(f"Start {noun} endpoint…", self)
        self.stop_action = QAction(f"Stop {noun} endpoint", self)
        self.keep_action = QAction(f"Keep {noun} endpoint running", self)
        self.separator = QAction(self)
        self.separator.setSeparator(True)
        for m in menus:  # the tray's menu and, without a tray, the overlay's menus
            for action in (self.separator, self.start_action, self.stop_action,
                           self.keep_action):
                if before is not None and before in m.actions():
                    m.insertAction(before, action)
                else:
                    m.addAction(action)
        self.keep_action.setVisible(False)
        self.start_action.triggered.connect(self.start)
        self.stop_action.triggered.connect(self.stop)
        self.keep_action.triggered.connect(lambda: self.manager.cancel_idle_stop(self.kind))
        self.tooltip_line = ""
        self.note = ""  # "checking set-up…" / "set-up needed: …" until the status moves on
        self._last_error: str | None = None
        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()
        hooks = ((manager.status_changed, self._on_status),
                 (manager.idle_warning, self._on_idle),
                 (manager.auto_stopped, self._on_auto_stopped))
        for hook, callback in hooks:
            hook.connect(callback)
        self.destroyed.connect(lambda *_: [h.disconnect(c) for h, c in hooks])
        self.refresh()

    # ---- actions -------------------------------------------------------------------------

    def start(self) -> None:
        if self.gate is None:
            self.flow.request(self.kind)
            return
        self.start_action.setEnabled(False)
        self.note = "checking the set-up…"
        self.refresh()
        self.gate.request(self.kind)

    def stop(self) -> None:
        self.stop_action.setEnabled(False)
        self.manager.spawn(self.manager.stop(self.kind))

    def settings_changed(self) -> None:
        """The user edited the set-up: a "set-up needed" note is no longer current."""
        if self.note.startswith("set-up needed"):
            self.note = ""
            self.refresh()

    def _on_checks(self, kind: Kind, preflight: Preflight, blocked: bool) -> None:
        if kind != self.kind:
            return
        if not blocked:
            self.note = "confirm the cost to start…"
            self.refresh()
            return
        blocking = gate(preflight, getattr(self.gate.settings().cloud, kind).accepted_unknown
                        ) if self.gate else None
        reason = line_of(blocking) if blocking is not None else "a check did not pass"
        self.note = f"set-up needed — {reason}"
        self.refresh()
        self._notify("set-up needed", f"{reason} Settings → Endpoints is open at this step.",
                     critical=True)
        if self.open_setup is not None:
            self.open_setup(kind, preflight)

    # ---- display -------------------------------------------------------------------------

    def line_for(self, status: KindStatus) -> str:
        """"Captions endpoint: InService — $1.23 so far" (empty when nothing runs)."""
        if status.phase is Phase.ERROR:
            return f"{self.label}: failed — {status.error or 'see Settings → Endpoints'}"
        if self.note and status.name is None:
            return f"{self.label}: {self.note}"
        if status.name is None:
            return ""
        if status.phase.busy:
            uptime = self.manager.uptime(status.kind)
            elapsed = f" — {hms(uptime)}" if uptime is not None else ""
            return f"{self.label}: {status.stage_text}{elapsed}"
        cost = self.manager.cost_so_far(status.kind)
        currency = status.snapshot.currency if status.snapshot is not None else "USD"
        money = f"{format_cost(cost, currency)} so far" if cost is not None else "cost unknown"
        return f"{self.label}: {status.stage_text} — {money}"

    def refresh(self) -> None:
        status = self.manager.status(self.kind)
        checking = self.note == "checking the set-up…"
        self.start_action.setEnabled(status.can_start and not checking)
        self.stop_action.setEnabled(status.can_stop)
        line = self.line_for(status)
        billing = any(self.manager.status(k).name for k in KINDS) or bool(self.manager.orphans)
        if self.tray is not None:
            self.tray.set_tooltip_line(tooltip_key(self.kind), line or None)
            self.tray.set_badge("$" if billing else None)
        if line != self.tooltip_line:
            self.tooltip_line = line
            self.tooltip_changed.emit(line)
            self.progress.emit(self.kind, line)

    def _on_status(self, status: KindStatus) -> None:
        if status.kind != self.kind:
            return
        if status.phase is not Phase.OFF or status.name is not None:
            self.note = ""  # the deploy (or a stop) moved on: the status says the rest
        if status.phase is Phase.ERROR and status.error and status.error != self._last_error:
            self._notify("failed", status.error, critical=True)
        self._last_error = status.error if status.phase is Phase.ERROR else None
        if status.phase is Phase.READY and status.snapshot is not None:
            self.note = ""
        self.refresh()

    def _notify(self, what: str, message: str, *, critical: bool = False) -> None:
        if self.tray is not None:
            self.tray.notify(f"{self.label}: {what}", message, critical=critical)

    def _on_idle(self, kind: Kind, seconds_left: float | None) -> None:
        if kind != self.kind:
            return
        self.keep_action.setVisible(seconds_left is not None)
        if seconds_left is not None:
            self._notify("idle", f"No activity: it stops in {round(seconds_left)} s to save "
                         "cost. Choose “Keep … running” in the tray menu to keep it.")

    def _on_auto_stopped(self, kind: Kind) -> None:
        if kind == self.kind:
            self._notify("stopped", "It was idle, so it is being deleted to save cost.")


__all__ = ["KIND_LABELS", "EndpointTray", "TrayLike", "tooltip_key"]
