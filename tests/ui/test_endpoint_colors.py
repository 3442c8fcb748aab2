"""Every coloured text of the Endpoints page reads (WCAG AA, 4.5:1) against what is
actually painted behind it, under a light and under a dark desktop theme: a banner's
light background with the theme's white text, or a dark red on a dark window, did not."""

from __future__ import annotations

from collections import Counter

import pytest
from PySide6.QtCore import QSignalBlocker
from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtWidgets import QWidget

from captioner.cloud.account import CallerIdentity
from captioner.cloud.endpoints import ManagedEndpoint
from captioner.cloud.errors import AccessDeniedError
from captioner.cloud.manager import KindStatus, Phase
from captioner.cloud.ownership import Ownership
from captioner.cloud.preflight import Check, Preflight, Status
from captioner.cloud.preflight.report import CheckId
from captioner.cloud.status import Stage
from captioner.ui.contrast import contrast
from captioner.ui.endpoints.page_parts import (
    BANNER_BACKGROUND,
    BANNER_TEXT,
    ERROR_SHADES,
    NOTE_BACKGROUND,
    NOTE_TEXT,
    OK_SHADES,
    WARNING_SHADES,
    text_color,
)
from tests.ui.test_endpoints_page import NAME, T0, make, page_for, snap

AA = 4.5
R = QPalette.ColorRole
DARK = {R.Window: "#2D2D2D", R.WindowText: "#FFFFFF", R.Base: "#1E1E1E", R.Text: "#FFFFFF",
        R.Button: "#3C3C3C", R.ButtonText: "#FFFFFF", R.AlternateBase: "#353535"}


@pytest.fixture(params=["light", "dark"])
def theme(qapp, request) -> QPalette:
    """The application palette of a light (Qt's own) or a dark desktop theme."""
    previous = qapp.palette()
    palette = qapp.style().standardPalette()
    if request.param == "dark":
        for role, color in DARK.items():
            palette.setColor(role, QColor(color))
    qapp.setPalette(palette)
    yield palette
    qapp.setPalette(previous)


def test_every_colour_pair_reads_on_its_own_kind_of_window(theme) -> None:
    window = theme.color(R.Window).name()
    # the window, and the darkest (lightest) panel a style draws on a light (dark) one
    panels = [window, "#E0E0E0" if theme.color(R.Window).lightness() > 127 else "#505050"]
    for shades in (OK_SHADES, ERROR_SHADES, WARNING_SHADES):
        chosen = text_color(shades, QWidget())
        for panel in panels:
            assert contrast(chosen, panel) >= AA, (shades, panel)
    assert contrast(BANNER_TEXT, BANNER_BACKGROUND) >= AA
    assert contrast(NOTE_TEXT, NOTE_BACKGROUND) >= AA


def background(image: QImage, widget: QWidget, root: QWidget) -> str:
    """The colour painted most inside ``widget`` (behind its text) in ``root``'s image."""
    at = widget.mapTo(root, widget.rect().topLeft())
    seen = Counter(image.pixel(x, y) for x in range(at.x(), at.x() + widget.width(), 2)
                   for y in range(at.y(), at.y() + widget.height(), 2))
    return QColor(seen.most_common(1)[0][0]).name()


def unreadable(root: QWidget, widgets: list[QWidget]) -> list[str]:
    image = root.grab().toImage()
    low = []
    for widget in widgets:
        assert widget.isVisibleTo(root), widget.accessibleName()
        text = widget.palette().color(widget.foregroundRole()).name()
        behind = background(image, widget, root)
        if contrast(text, behind) < AA:
            low.append(f"{widget.accessibleName() or widget.text()}: {text} on {behind} "
                       f"{contrast(text, behind):.2f}:1")
    return low


def test_the_endpoints_page_reads_on_light_and_dark_themes(qapp, qtbot, theme) -> None:
    _control, manager = make()
    page = page_for(manager)
    qtbot.addWidget(page)
    page.resize(900, 760)
    page.show()
    page._on_idle("stt", 59.0)
    page._on_orphans([snap(Stage.IN_SERVICE)])
    page._on_others([ManagedEndpoint("captioner-tts-x", "arn:x", "InService", "tts", T0,
                                     ownership=Ownership.FOREIGN)])
    stt = page.setups["stt"]
    stt.preflight.set_preflight(Preflight("stt", "us-east-1", (
        Check(CheckId.CREDENTIALS, Status.PASS, "Account 123456789012."),
        Check(CheckId.QUOTA, Status.UNKNOWN, "These credentials may not read Service Quotas."),
        Check(CheckId.IMAGE, Status.FAIL, "No image is chosen.", "Choose or build an image."))))
    denied = AccessDeniedError("AWS denied access (create_model).", code="AccessDenied")
    page.rows["stt"].show_status(KindStatus("stt", Phase.ERROR, failure=denied), None, None,
                                 None)
    stt.set_build_status("The image build ended failed.", failed=True)
    page.account._failed("The credentials were refused.")
    qtbot.wait(20)
    content = page.scroll.widget()
    coloured = [page.idle_label, page.keep_button, page.orphans_label, page.orphans_button,
                page.others_label, *stt.preflight.labels.values(), stt.preflight.summary,
                page.rows["stt"].error_label, stt.build_status, page.account.result]
    assert unreadable(content, coloured) == []
    with QSignalBlocker(page.account):  # (a checked account would list roles and images)
        page.account._identified(CallerIdentity("123456789012", f"arn:aws:iam::1:user/{NAME}"))
    stt.preflight.set_preflight(None)
    stt.preflight.set_preflight(Preflight("stt", "us-east-1", (
        Check(CheckId.CREDENTIALS, Status.PASS, "Account 123456789012."),)))
    qtbot.wait(20)
    assert unreadable(content, [page.account.result, stt.preflight.summary]) == []
