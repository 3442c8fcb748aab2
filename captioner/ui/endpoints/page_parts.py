"""Small parts of the Endpoints page: the wheel guard, the banner, what the preflight
reads, and text colours that read on light and dark desktop themes alike."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QWidget,
)

from captioner.cloud.deploy_plan import KINDS
from captioner.settings import Settings
from captioner.ui.contrast import TEXT_CONTRAST, most_legible

# Text colours by meaning: a dark shade for light themes, a light one for dark themes. No
# one colour reads on both (#C62828 is 4.9:1 on a light window, 2.4:1 on a dark one); each
# shade here reaches 4.5:1 (WCAG AA) on its kind of window and on the panels drawn on it
# (a dark theme's tab page is lighter than its window: down to #505050; a light one's
# darker: down to #E0E0E0).
OK_SHADES = ("#1B5E20", "#A5D6A7")
ERROR_SHADES = ("#B71C1C", "#FFB4AB")
WARNING_SHADES = ("#8D4B00", "#FFCC80")
# A coloured background brings its own text colour: the theme's may be light as well.
BANNER_BACKGROUND, BANNER_TEXT = "#FFF3E0", "#3E2723"
NOTE_BACKGROUND, NOTE_TEXT = "#E3F2FD", "#0D47A1"


def text_color(shades: tuple[str, str], widget: QWidget) -> str:
    """Of ``shades``, the one that reads on ``widget``'s window (theme) colour."""
    window = widget.palette().color(QPalette.ColorRole.Window).name()
    return most_legible(shades, window, TEXT_CONTRAST)


def color_style(shades: tuple[str, str], widget: QWidget) -> str:
    """A style sheet giving ``widget`` the readable one of ``shades`` as text colour."""
    return f"color: {text_color(shades, widget)};"


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
    """A warning line with its button on a light background (the button keeps the
    theme's own look, which reads on its own background)."""
    box = QFrame()
    box.setObjectName("banner")
    box.setStyleSheet(f"QFrame#banner {{ background: {BANNER_BACKGROUND}; }}"
                      f"QLabel {{ color: {BANNER_TEXT}; }}")
    layout = QHBoxLayout(box)
    layout.addWidget(label, 1)
    layout.addWidget(button)
    box.hide()
    return box


__all__ = ["BANNER_BACKGROUND", "BANNER_TEXT", "ERROR_SHADES", "NOTE_BACKGROUND", "NOTE_TEXT",
           "OK_SHADES", "WARNING_SHADES", "WheelGuard", "banner", "checked_part",
           "color_style", "text_color"]
