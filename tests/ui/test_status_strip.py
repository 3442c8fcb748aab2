"""The overlay's status strip: its text grows with the captions, long state, cloud and
notice lines wrap whole (in click-through mode there is no tooltip to hover), and long
texts never widen the overlay past the screen."""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QFontMetrics, QGuiApplication
from PySide6.QtWidgets import QLabel

from captioner.realtime.captions import CaptionLine, CaptionUpdate
from captioner.ui.overlay import Overlay
from captioner.ui.status_strip import StatusStrip

LONG = ("Audio source unavailable: System audio: no device of this kind. There are no "
        "system-audio sources on this computer. ") * 3
STATE = ("Waiting for the audio device… the microphone “USB Headset” was unplugged; "
         "captions go on when it is back")
NOTICE = ("2 Captioner endpoints still running and billing: captioner-stt-20261129-101500, "
          "captioner-tts-20261129-101800. Stop from Settings → Endpoints.")


def shown_whole(label: QLabel) -> bool:
    """Whether ``label`` is tall enough for all of its text, wrapped at its width."""
    room = label.contentsRect()
    needed = QFontMetrics(label.font()).boundingRect(
        QRect(0, 0, room.width(), 100_000), Qt.TextFlag.TextWordWrap, label.text())
    return needed.height() <= room.height() and needed.width() <= room.width()


def big_overlay(qtbot, settings, size: int, lines: int) -> Overlay:
    settings.appearance.font_size, settings.appearance.lines = size, lines
    settings.appearance.dock = "bottom"
    overlay = Overlay(settings.appearance)
    qtbot.addWidget(overlay)
    overlay.show()
    qtbot.waitExposed(overlay)
    return overlay


def test_long_state_and_cloud_lines_keep_the_strip_narrow(qapp, qtbot) -> None:
    strip = StatusStrip()
    qtbot.addWidget(strip)
    strip.set_state("error", "Failed")
    strip.set_cloud("stt", "Creating")
    narrow = strip.minimumSizeHint().width()
    strip.set_state("error", LONG)
    strip.set_cloud("stt", "Captions endpoint: set-up needed — " + LONG)
    assert strip.minimumSizeHint().width() <= narrow
    assert strip.state_label.accessibleDescription() == LONG


def test_cloud_lines_per_kind_join_and_clear(qapp, qtbot) -> None:
    strip = StatusStrip()
    qtbot.addWidget(strip)
    assert strip.state_label.text() == "idle" and strip.notice_label.isHidden()
    assert strip.cloud_label.isHidden()
    strip.set_cloud("stt", "Captions endpoint: Creating — 0:01:00")
    strip.set_cloud("tts", "Replies endpoint: InService — $0.10 so far")
    assert strip.cloud_label.text() == ("Captions endpoint: Creating — 0:01:00 · "
                                        "Replies endpoint: InService — $0.10 so far")
    assert not strip.cloud_label.isHidden()
    strip.set_cloud("stt", "")
    strip.set_cloud("tts", "")
    assert strip.cloud_label.text() == "" and strip.cloud_label.isHidden()


def test_an_endpoint_that_does_not_fit_ends_in_an_ellipsis(qapp, qtbot) -> None:
    strip = StatusStrip()
    qtbot.addWidget(strip)
    strip.resize(420, 30)
    strip.show()
    url = "wss://captions.example.org:8443/v1/realtime?model=voxtral-mini&language=en"
    strip.set_endpoint(url)
    qtbot.waitExposed(strip)
    qtbot.waitUntil(lambda: strip.endpoint_label.shown_text().endswith("…"))
    shown = strip.endpoint_label.shown_text()
    assert shown.endswith("…") and url.startswith(shown[:-1])
    assert strip.endpoint_label.toolTip() == url == strip.endpoint_label.accessibleDescription()
    strip.resize(1600, 30)
    strip.set_endpoint("On this computer")
    qtbot.waitUntil(lambda: strip.endpoint_label.shown_text() == "On this computer")


def test_the_strip_text_grows_with_the_captions(qtbot, settings) -> None:
    normal = QGuiApplication.font().pointSize()
    small = big_overlay(qtbot, settings, 8, 2)
    assert small.strip.state_label.font().pointSize() == normal  # never below normal
    big = big_overlay(qtbot, settings, 72, 2)
    big.set_status("listening", "Listening")
    qtbot.wait(10)
    for label in (big.strip.state_label, big.strip.source_label, big.strip.notice_label):
        assert label.font().pointSize() >= 0.4 * 72
    assert big.strip.reply_button.font().pointSize() >= 0.4 * 72


def test_a_long_notice_and_state_wrap_whole_and_the_captions_keep_their_lines(
        qtbot, settings) -> None:
    overlay = big_overlay(qtbot, settings, 72, 5)
    overlay.show_update(CaptionUpdate(tuple(
        CaptionLine(f"line {n} of the speech", n, n + 1) for n in range(8)), None))
    overlay.set_status("reconnecting", STATE)
    overlay.set_notice(NOTICE)
    overlay.strip.set_cloud("stt", "Captions endpoint: Creating — 0:03:12")
    qtbot.wait(50)
    strip = overlay.strip
    for label in (strip.state_label, strip.cloud_label, strip.notice_label):
        assert shown_whole(label), label.accessibleName()
    area = overlay.current_screen().availableGeometry()
    assert area.contains(overlay.geometry())
    assert overlay.view.height() >= overlay.view.sizeHint().height()  # all 5 lines
    assert strip.state_label.font().pointSize() >= QGuiApplication.font().pointSize()
    overlay.set_notice("")  # the room goes back to nobody: the window shrinks
    qtbot.wait(50)
    assert strip.notice_label.isHidden()
    assert overlay.height() == overlay.preferred_height()


def test_a_floating_overlay_grows_for_a_notice_and_its_captions_keep_their_height(
        qtbot, settings) -> None:
    overlay = big_overlay(qtbot, settings, 28, 3)
    overlay.dock("floating")
    qtbot.wait(50)
    captions = overlay.view.height()
    overlay.set_notice(NOTICE * 2)
    qtbot.wait(50)
    assert shown_whole(overlay.strip.notice_label)
    assert overlay.view.height() == captions
