"""The instance pool: tick the GPU types to try, in order, each with its hourly price.

SageMaker takes the first type of the pool that has capacity, so order matters:
Move up / Move down (Alt+U / Alt+N) reorder the ticked types.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from captioner.cloud.pricing import format_cost

PriceOf = Callable[[str], float | None]
TYPE_ROLE = Qt.ItemDataRole.UserRole


class PoolEditor(QWidget):
    changed = Signal()

    def __init__(self, noun: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.list = QListWidget()
        self.list.setAccessibleName(f"{noun} instance pool")
        self.list.setAccessibleDescription("Ticked types are tried in this order; "
                                           "the first with capacity wins.")
        self.up = QPushButton("Move &up")
        self.down = QPushButton("Move dow&n")
        self.up.setAccessibleName("Move the instance type up")
        self.down.setAccessibleName("Move the instance type down")
        buttons = QVBoxLayout()
        buttons.addWidget(self.up)
        buttons.addWidget(self.down)
        buttons.addStretch(1)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.list, 1)
        layout.addLayout(buttons)
        self.up.clicked.connect(lambda: self._move(-1))
        self.down.clicked.connect(lambda: self._move(1))
        self.list.itemChanged.connect(lambda _item: self.changed.emit())

    def fill(self, chosen: list[str], candidates: list[str], price_of: PriceOf) -> None:
        """Ticked ``chosen`` first (in their order), then the other ``candidates``."""
        self.list.blockSignals(True)
        self.list.clear()
        for itype in [*chosen, *(c for c in candidates if c not in chosen)]:
            price = price_of(itype)
            text = f"{itype} — {format_cost(price)}/hour" if price is not None else (
                f"{itype} — price unknown")
            item = QListWidgetItem(text)
            item.setData(TYPE_ROLE, itype)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if itype in chosen
                               else Qt.CheckState.Unchecked)
            self.list.addItem(item)
        self.list.blockSignals(False)
        if self.list.count():
            self.list.setCurrentRow(0)
        self.changed.emit()

    def chosen(self) -> list[str]:
        return [self.list.item(i).data(TYPE_ROLE) for i in range(self.list.count())
                if self.list.item(i).checkState() == Qt.CheckState.Checked]

    def move_to_front(self, itype: str) -> None:
        """``itype`` ticked and first: the type SageMaker tries first."""
        for row in range(self.list.count()):
            if self.list.item(row).data(TYPE_ROLE) == itype:
                self.list.blockSignals(True)
                item = self.list.takeItem(row)
                item.setCheckState(Qt.CheckState.Checked)
                self.list.insertItem(0, item)
                self.list.blockSignals(False)
                self.list.setCurrentRow(0)
                self.changed.emit()
                return

    def _move(self, step: int) -> None:
        row = self.list.currentRow()
        target = row + step
        if row < 0 or not 0 <= target < self.list.count():
            return
        item = self.list.takeItem(row)
        self.list.insertItem(target, item)
        self.list.setCurrentRow(target)
        self.changed.emit()


__all__ = ["PoolEditor"]
