"""One-click endpoint control in the tray menu, and the cost line in the tray tooltip.

``EndpointTray(manager, menu, tray=…)`` adds "Start captions endpoint" / "Stop captions
endpoint" (and, while an idle stop is pending, "Keep captions endpoint running") to the
menu, and keeps a tooltip line such as "Voxtral endpoint: InService — $1.23 so far"
plus a "$" badge while something bills: a forgotten endpoint stays hard to miss.
Start still shows the cost confirmation (see :class:`StartFlow`).
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from captioner.cloud.deploy_plan import KINDS, Kind
from captioner.cloud.manager import KIND_LABELS, EndpointManager, KindStatus, Phase
from captioner.cloud.pricing import format_cost
from captioner.ui.endpoints_page import StartFlow

TOOLTIP_KEY = "endpoint"
REFRESH_MS = 30_000


class TrayLike(Protocol):
    def set_tooltip_line(self, key: str, line: str | None) -> None: ...
    def set_badge(self, text: str | None, color: str = ...) -> None: ...
    def notify(self, title: str, message: str, *, critical: bool = False) -> bool: ...


class EndpointTray(QObject):
    tooltip_changed = Signal(str)  # "" when no endpoint line

    def __init__(self, manager: EndpointManager, menu: QMenu, *, tray: TrayLike | None = None,
                 kind: Kind = "stt", parent: QObject | None = None) -> None:
        super().__init__(parent or menu)
        self.manager = manager
        self.tray = tray
        self.kind = kind
        self.flow = StartFlow(manager)
        noun = "captions" if kind == "stt" else "replies"
        menu.addSeparator()
        self.start_action = QAction(f"Start {noun} endpoint…", menu)
        self.stop_action = QAction(f"Stop {noun} endpoint", menu)
        self.keep_action = QAction(f"Keep {noun} endpoint running", menu)
        for action in (self.start_action, self.stop_action, self.keep_action):
            menu.addAction(action)
        self.keep_action.setVisible(False)
        self.start_action.triggered.connect(lambda: self.flow.request(self.kind))
        self.stop_action.triggered.connect(
            lambda: self.manager.spawn(self.manager.stop(self.kind)))
        self.keep_action.triggered.connect(lambda: self.manager.cancel_idle_stop(self.kind))
        self.tooltip_line = ""
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

    def line_for(self, status: KindStatus) -> str:
        """"Voxtral endpoint: InService — $1.23 so far" (empty when nothing runs)."""
        label = f"{KIND_LABELS[status.kind]} endpoint"
        if status.phase is Phase.ERROR:
            return f"{label}: error — see Settings → Endpoints"
        if status.name is None:
            return ""
        cost = self.manager.cost_so_far(status.kind)
        currency = status.snapshot.currency if status.snapshot is not None else "USD"
        money = f"{format_cost(cost, currency)} so far" if cost is not None else "cost unknown"
        return f"{label}: {status.stage_text} — {money}"

    def refresh(self) -> None:
        status = self.manager.status(self.kind)
        self.start_action.setEnabled(status.can_start)
        self.stop_action.setEnabled(status.can_stop)
        line = self.line_for(status)
        billing = any(self.manager.status(k).name for k in KINDS) or bool(self.manager.orphans)
        if self.tray is not None:
            self.tray.set_tooltip_line(TOOLTIP_KEY, line or None)
            self.tray.set_badge("$" if billing else None)
        if line != self.tooltip_line:
            self.tooltip_line = line
            self.tooltip_changed.emit(line)

    def _on_status(self, status: KindStatus) -> None:
        self.refresh()

    def _on_idle(self, kind: Kind, seconds_left: float | None) -> None:
        if kind != self.kind:
            return
        self.keep_action.setVisible(seconds_left is not None)
        if seconds_left is not None and self.tray is not None:
            self.tray.notify(f"{KIND_LABELS[kind]} endpoint idle",
                             f"No activity: it stops in {round(seconds_left)} s to save cost. "
                             "Choose “Keep … running” in the tray menu to keep it.")

    def _on_auto_stopped(self, kind: Kind) -> None:
        if kind == self.kind and self.tray is not None:
            self.tray.notify(f"{KIND_LABELS[kind]} endpoint stopped",
                             "It was idle, so it is being deleted to save cost.")


__all__ = ["EndpointTray", "TrayLike"]
