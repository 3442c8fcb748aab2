"""The overlay's status strip: long texts never widen the overlay past the screen."""

from __future__ import annotations

from captioner.ui.status_strip import StatusStrip

LONG = ("Audio source unavailable: System audio: no device of this kind. There are no "
        "system-audio sources on this computer. ") * 3


def test_long_state_and_cloud_lines_keep_the_strip_narrow(qapp, qtbot) -> None:
    strip = StatusStrip()
    qtbot.addWidget(strip)
    strip.set_state("error", "Failed")
    strip.set_cloud("stt", "Creating")
    narrow = strip.minimumSizeHint().width()
    strip.set_state("error", LONG)
    strip.set_cloud("stt", "Captions endpoint: set-up needed — " + LONG)
    assert strip.minimumSizeHint().width() == narrow
    assert strip.cloud_label.toolTip().startswith("Captions endpoint: set-up needed")
    assert strip.state_label.toolTip() == LONG  # the whole text is one hover away


def test_cloud_lines_per_kind_join_and_clear(qapp, qtbot) -> None:
    strip = StatusStrip()
    qtbot.addWidget(strip)
    assert strip.cloud_label.isHidden()
    strip.set_cloud("stt", "Captions endpoint: Creating — 0:01:00")
    strip.set_cloud("tts", "Replies endpoint: InService — $0.10 so far")
    assert strip.cloud_label.text() == ("Captions endpoint: Creating — 0:01:00 · "
                                        "Replies endpoint: InService — $0.10 so far")
    assert not strip.cloud_label.isHidden()
    strip.set_cloud("stt", "")
    strip.set_cloud("tts", "")
    assert strip.cloud_label.text() == "" and strip.cloud_label.isHidden()


def test_a_text_that_does_not_fit_ends_in_an_ellipsis(qapp, qtbot) -> None:
    strip = StatusStrip()
    qtbot.addWidget(strip)
    strip.resize(700, 30)
    strip.show()
    strip.set_state("error", LONG)
    qtbot.waitExposed(strip)
    shown = strip.state_label.shown_text()
    assert shown.endswith("…") and LONG.startswith(shown[:-1])
    label = strip.state_label
    assert label.fontMetrics().horizontalAdvance(shown) <= label.contentsRect().width()
    strip.resize(1600, 30)
    strip.set_state("listening", "listening")
    assert strip.state_label.shown_text() == "listening"  # a text that fits, unchanged
