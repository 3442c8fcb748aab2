"""Small parts of the Endpoints page: the wheel guard, the banner, what the preflight reads."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QHBoxLayout, QLabel, QPushButton, QScrollArea, QWidget

from captioner.cloud.deploy_plan import KINDS
from captioner.settings import Settings


class WheelGuard(QObject):
    """The mouse wheel scrolls the page instead of changing a spin box or list it passes
    over (a control changes by wheel only once it has the focus)."""

    def __init__(self, scroll: QScrollArea, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.scroll = scroll

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Wheel and isinstance(watched, QWidget) \
                and not watched.hasFocus():
            QApplication.sendEvent(self.scroll.verticalScrollBar(), event)
            return True
        return False


def checked_part(settings: Settings) -> tuple:
    """What the preflight looks at: the account and both plans, minus the go-past list."""
    plans = []
    for kind in KINDS:
        plan = getattr(settings.cloud, kind)
        plans.append((plan.image_uri, plan.model_source, plan.role_arn,
                      tuple(plan.instance_types)))
    aws = settings.aws
    return (aws.region, aws.profile, aws.use_keyring, *plans)


def banner(label: QLabel, button: QPushButton) -> QWidget:
    box = QWidget()
    box.setStyleSheet("background: #FFF3E0;")
    layout = QHBoxLayout(box)
    layout.addWidget(label, 1)
    layout.addWidget(button)
    box.hide()
    return box


__all__ = ["WheelGuard", "banner", "checked_part"]
