"""Status texts reach screen readers: a QLabel with a fixed accessible name offers that
name instead of its text, so the text must be in its description too; and an endpoint's
change of phase, minutes after Start, is announced."""

from __future__ import annotations

from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import QLabel, QWidget

from captioner.cloud.endpoints import ManagedEndpoint
from captioner.cloud.errors import AccessDeniedError
from captioner.cloud.manager import KindStatus, Phase
from captioner.cloud.ownership import Ownership
from captioner.cloud.status import EndpointSnapshot, Stage
from captioner.ui.endpoints.status_row import EndpointRow
from captioner.ui.overlay import Overlay
from tests.ui.test_endpoints_page import NAME, T0, make, page_for
from tests.ui.test_endpoints_page import snap as page_snap


def read_aloud(widget: QWidget) -> str:
    """What a screen reader gets from ``widget``: its name, description and value."""
    face = QAccessible.queryAccessibleInterface(widget)
    return " ".join(face.text(t) for t in (QAccessible.Text.Name, QAccessible.Text.Description,
                                           QAccessible.Text.Value))


def unreadable(root: QWidget, *decoration: QLabel) -> list[str]:
    """The shown labels under ``root`` whose text a screen reader never gets."""
    return [f"{label.accessibleName()}: {label.text()}" for label in root.findChildren(QLabel)
            if label.text().strip() and label.text() not in read_aloud(label)
            and label not in decoration]


def snap(stage: Stage) -> EndpointSnapshot:
    return EndpointSnapshot(name=NAME, stage=stage, status=stage.value, observed_at=T0,
                            kind="stt", created_at=T0, instance_type="ml.g6.4xlarge",
                            instance_count=1, hourly_price=1.98)


def test_the_overlay_status_texts_and_hint_are_read(qtbot, settings, announced) -> None:
    overlay = Overlay(settings.appearance)
    qtbot.addWidget(overlay)
    overlay.set_status("reconnecting", "Reconnecting in 5 s (attempt 2)")
    overlay.set_notice("Echo cancellation off, captions go on: use headphones.")
    overlay.strip.set_source("System audio")
    overlay.strip.set_endpoint("On this computer")
    hint = "Captioning what this computer plays, on this computer. Menu → Settings."
    overlay.set_hint(hint)
    assert unreadable(overlay, overlay.strip.dot) == []
    assert "reconnecting" in read_aloud(overlay.strip.dot)  # what its colour says
    assert (hint, QAccessible.AnnouncementPoliteness.Polite) in announced


def test_the_endpoint_row_values_are_read(qtbot) -> None:
    row = EndpointRow("stt")
    qtbot.addWidget(row)
    row.show_status(KindStatus("stt", Phase.STARTING, name=NAME, snapshot=snap(Stage.CREATING)),
                    723.0, 0.4, 1.98)
    assert row.status_label.text() == f"Creating — {NAME}"
    assert row.cost_label.text() == "$0.40 so far ($1.98/hour)"
    assert unreadable(row) == []


def test_a_change_of_phase_is_announced_once(qtbot, announced) -> None:
    row = EndpointRow("stt")
    qtbot.addWidget(row)
    row.show()
    creating = KindStatus("stt", Phase.STARTING, name=NAME, snapshot=snap(Stage.CREATING))
    row.show_status(creating, 10.0, 0.01, 1.98)  # what the page shows on opening: no news
    row.show_status(creating, 11.0, 0.01, 1.98)  # the one-second refresh: no news either
    assert announced == []
    row.show_status(KindStatus("stt", Phase.READY, name=NAME, snapshot=snap(Stage.IN_SERVICE)),
                    300.0, 0.2, 1.98)
    denied = AccessDeniedError("AWS denied access (describe_endpoint).", code="AccessDenied")
    row.show_status(KindStatus("stt", Phase.ERROR, name=NAME, failure=denied), 301.0, 0.2, 1.98)
    polite, assertive = (QAccessible.AnnouncementPoliteness.Polite,
                         QAccessible.AnnouncementPoliteness.Assertive)
    assert announced == [
        ("Captions endpoint: InService.", polite),
        ("Captions endpoint: Error. AWS denied access (describe_endpoint).", assertive)]


def test_the_endpoint_page_banners_are_read_and_the_idle_stop_announced(
        qapp, qtbot, announced) -> None:
    _control, manager = make()
    page = page_for(manager)
    qtbot.addWidget(page)
    page.show()
    page._on_idle("stt", 59.0)
    page._on_idle("stt", 58.0)  # the countdown: shown, not said again every second
    page._on_orphans([page_snap(Stage.IN_SERVICE)])
    page._on_others([ManagedEndpoint("captioner-tts-x", "arn:x", "InService", "tts", T0,
                                     ownership=Ownership.FOREIGN)])
    assert unreadable(page.idle_box) == []
    assert unreadable(page.orphans_box) == []
    assert page.others_label.text() in read_aloud(page.others_label)
    assert announced == [("No activity: the captions endpoint stops in 59 s to save cost.",
                          QAccessible.AnnouncementPoliteness.Polite)]
