from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QGuiApplication

from captioner.realtime.captions import CaptionLine, CaptionUpdate
from captioner.ui.overlay import Overlay


def make_overlay(qtbot, settings):
    overlay = Overlay(settings.appearance)
    qtbot.addWidget(overlay)
    overlay.show()
    qtbot.waitExposed(overlay)
    return overlay


def final(text, start=0.0):
    return CaptionLine(text, start, start + 1)


def live(text, start=9.0):
    return CaptionLine(text, start, start + 1, final=False)


def test_dock_bottom_and_top_span_the_available_geometry(qtbot, settings):
    overlay = make_overlay(qtbot, settings)
    area = QGuiApplication.primaryScreen().availableGeometry()
    overlay.dock("bottom")
    g = overlay.geometry()
    assert (g.left(), g.width(), g.bottom()) == (area.left(), area.width(), area.bottom())
    overlay.dock("top")
    g = overlay.geometry()
    assert (g.left(), g.width(), g.top()) == (area.left(), area.width(), area.top())
    assert g.height() == overlay.preferred_height()


def test_floating_geometry_is_remembered_per_screen(qtbot, settings):
    overlay = make_overlay(qtbot, settings)
    overlay.dock("floating")
    with qtbot.waitSignal(overlay.geometry_saved, timeout=3000):
        overlay.setGeometry(QRect(40, 50, 500, 120))
    name = overlay.current_screen().name()
    assert settings.appearance.geometry[name] == [40, 50, 500, 120]
    overlay.dock("bottom")
    overlay.dock("floating")
    assert overlay.geometry() == QRect(40, 50, 500, 120)


def test_click_through_toggles_transparent_for_input(qtbot, settings):
    overlay = make_overlay(qtbot, settings)
    flag = Qt.WindowType.WindowTransparentForInput
    assert not overlay.windowFlags() & flag
    overlay.set_click_through(True)
    assert overlay.windowFlags() & flag and overlay.isVisible()
    assert settings.appearance.click_through
    overlay.set_click_through(False)
    assert not overlay.windowFlags() & flag


def test_line_limit_shows_only_the_last_rows(qtbot, settings):
    settings.appearance.lines = 2
    overlay = make_overlay(qtbot, settings)
    overlay.show_update(CaptionUpdate(tuple(final(f"Line {i}.", i) for i in range(5)),
                                      live("now speaking")))
    assert overlay.view.visible_rows() == [("Line 4.", False), ("now speaking", True)]
    settings.appearance.lines = 4
    overlay.apply_appearance(settings.appearance)
    assert [t for t, _ in overlay.view.visible_rows()] == ["Line 2.", "Line 3.", "Line 4.",
                                                          "now speaking"]
    assert overlay.view.sizeHint().height() > 3 * overlay.view.line_height


def _text_pixels(image, rows):
    """Brightest yellow-ish pixel value per row band."""
    best = []
    for top, bottom in rows:
        peak = 0
        for y in range(int(top), int(bottom), 2):
            for x in range(0, image.width(), 2):
                c = QColor(image.pixel(x, y))
                if c.red() > 60 and c.green() > 60 and c.blue() < 40:
                    peak = max(peak, c.red())
        best.append(peak)
    return best


def test_live_line_is_italic_and_dimmer_than_final_text(qtbot, settings):
    settings.appearance.lines = 2
    settings.appearance.background_opacity = 1.0
    overlay = make_overlay(qtbot, settings)
    view = overlay.view
    view.resize(800, view.sizeHint().height())
    overlay.show_update(CaptionUpdate((final("FINAL TEXT HERE"),), live("LIVE TEXT HERE")))
    assert view.font_live.italic() and not view.font_final.italic()
    image = view.grab().toImage()
    h, pad = view.line_height, 10
    top = view.height() - pad - 2 * h
    final_peak, live_peak = _text_pixels(image, [(top, top + h), (top + h, top + 2 * h)])
    assert final_peak >= 250  # full-strength yellow
    assert 0 < live_peak < 0.85 * final_peak


def test_finalized_lines_are_laid_out_once(qtbot, settings):
    overlay = make_overlay(qtbot, settings)
    overlay.show_update(CaptionUpdate((final("First line."), final("Second line.", 1)), None))
    with qtbot.waitSignal(overlay.view.painted, timeout=3000):
        overlay.view.repaint()
    made = overlay.view.layouts_made
    for n in range(20):
        overlay.show_update(CaptionUpdate((), live("growing " * (n % 4 + 1))))
        overlay.view.repaint()
    assert overlay.view.layouts_made == made


def test_last_caption_lingers_then_fades(qtbot, settings):
    settings.appearance.linger_seconds = 0.2
    overlay = make_overlay(qtbot, settings)
    assert overlay.view.linger_timer.interval() == 200
    overlay.show_update(CaptionUpdate((final("Stay a moment."),), None))
    assert overlay.view.linger_timer.isActive() and overlay.view.fade == 1.0
    with qtbot.waitSignal(overlay.view.faded, timeout=3000):
        pass
    assert overlay.view.fade == 0.0
    assert overlay.view.visible_rows() == []
    overlay.show_update(CaptionUpdate((), live("back again")))
    assert overlay.view.fade == 1.0 and overlay.view.linger_timer.isActive()


def test_font_size_steps_are_clamped(qtbot, settings):
    settings.appearance.font_size = 70
    overlay = make_overlay(qtbot, settings)
    with qtbot.waitSignal(overlay.appearance_changed):
        assert overlay.change_font_size(4) == 72
    assert overlay.change_font_size(4) == 72
    assert overlay.view.font_final.pointSize() == 72
