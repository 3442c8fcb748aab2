from PySide6.QtCore import QCoreApplication, QPoint, QRect, Qt
from PySide6.QtGui import QColor, QGuiApplication
from PySide6.QtTest import QTest

from captioner.realtime.captions import CaptionLine, CaptionUpdate
from captioner.ui.caption_view import MIN_ROW_SECONDS, CaptionView
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


def test_a_remembered_place_off_the_screen_is_brought_back_onto_it(qtbot, settings):
    """A place saved mostly off the screen (a drag gone wrong, a smaller screen now)
    hid most of the captions; the overlay comes back whole on the screen."""
    overlay = make_overlay(qtbot, settings)
    area = overlay.current_screen().availableGeometry()
    name = overlay.current_screen().name()
    for saved in ([area.left() - 1291, area.top() + 21, 600, 160],
                  [area.right() - 100, area.bottom() - 50, 600, 160],
                  [area.left(), area.top(), area.width() + 500, 160]):
        settings.appearance.geometry[name] = saved
        overlay.dock("floating")
        g = overlay.geometry()
        assert area.contains(g), (saved, g)
        assert g.width() == min(saved[2], area.width())


def test_a_click_does_not_move_the_overlay_and_a_drag_does(qtbot, settings):
    """A quick click handed to the window manager as a move raced its release: the
    overlay then followed the pointer with no button held. Only a press that moves
    (past the drag distance) moves it now."""
    overlay = make_overlay(qtbot, settings)
    overlay.dock("floating")
    overlay.setGeometry(QRect(300, 300, 600, 160))
    start = overlay.geometry().topLeft()
    inside = QPoint(300, 80)
    QTest.mouseClick(overlay, Qt.MouseButton.LeftButton, pos=inside)
    QTest.mouseMove(overlay, inside + QPoint(-200, -150))
    assert overlay.geometry().topLeft() == start
    QTest.mousePress(overlay, Qt.MouseButton.LeftButton, pos=inside)
    QTest.mouseMove(overlay, inside + QPoint(2, 1))  # a hand's tremble: not a drag
    assert overlay.geometry().topLeft() == start
    QTest.mouseMove(overlay, inside + QPoint(-120, -90))
    QTest.mouseRelease(overlay, Qt.MouseButton.LeftButton, pos=inside + QPoint(-120, -90))
    assert overlay.geometry().topLeft() == start + QPoint(-120, -90)


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
    overlay.view.resize(900, overlay.view.sizeHint().height())
    sentences = ["It was the best of times, it was the worst of times.",
                 "It was the age of wisdom, it was the age of foolishness."]
    overlay.show_update(CaptionUpdate(tuple(final(t, i) for i, t in enumerate(sentences)),
                                      live("it was the epoch"), "of belief"))
    # whole rows roll up, broken at phrase boundaries; the unconfirmed words flow on below
    assert overlay.view.visible_rows() == [("it was the age of foolishness.", False),
                                           ("it was the epoch of belief", True)]
    settings.appearance.lines = 4
    overlay.apply_appearance(settings.appearance)
    overlay.view.resize(900, overlay.view.sizeHint().height())
    assert [t for t, _ in overlay.view.visible_rows()] == [
        "It was the best of times, it was the worst",
        "of times. It was the age of wisdom,",
        "it was the age of foolishness.",
        "it was the epoch of belief",
    ]
    assert overlay.view.sizeHint().height() > 3 * overlay.view.line_height


def test_unconfirmed_words_are_italic_and_dimmer_than_confirmed_text(qtbot, settings):
    """The live line is confirmed text (it never changes): it looks final. Only the
    unconfirmed words after it, which the engine may still revise, are italic."""
    settings.appearance.lines = 2
    settings.appearance.background_opacity = 1.0
    overlay = make_overlay(qtbot, settings)
    view = overlay.view
    view.resize(800, view.sizeHint().height())
    overlay.show_update(CaptionUpdate((final("FINAL"),), live("TEXT"), "LIVE TEXT"))
    assert view.visible_rows() == [("FINAL TEXT LIVE TEXT", True)]  # one flowing row
    assert view.font_live.italic() and not view.font_final.italic()
    image = view.grab().toImage()
    h, pad = view.line_height, 10
    top = view.height() - pad - h
    split = pad + view.metrics.horizontalAdvance("FINAL TEXT ")
    final_peak = _peak(image, top, top + h, pad, split - 4)
    live_peak = _peak(image, top, top + h, split + 4, view.width() - pad)
    assert final_peak >= 250  # full-strength yellow
    assert 0 < live_peak < 0.85 * final_peak
    confirmed_start = pad + view.metrics.horizontalAdvance("FINAL ")
    assert _peak(image, top, top + h, confirmed_start + 4, split - 4) >= 250  # "TEXT"
    # a delta confirms the first unconfirmed word: it turns final, the rest stays live
    overlay.show_update(CaptionUpdate((), live("TEXT LIVE"), "TEXT"))
    assert view.visible_rows() == [("FINAL TEXT LIVE TEXT", True)]
    image = view.grab().toImage()
    split = pad + view.metrics.horizontalAdvance("FINAL TEXT LIVE ")
    assert _peak(image, top, top + h, split - 40, split - 4) >= 250
    overlay.show_update(CaptionUpdate((), live("TEXT LIVE"), ""))  # cleared: no live row
    assert view.visible_rows() == [("FINAL TEXT LIVE", False)]


def _peak(image, top, bottom, left, right):
    """Brightest yellow-ish red channel in a box."""
    peak = 0
    for y in range(int(top), int(bottom), 2):
        for x in range(int(left), int(right), 2):
            c = QColor(image.pixel(x, y))
            if c.red() > 60 and c.green() > 60 and c.blue() < 40:
                peak = max(peak, c.red())
    return peak


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


def test_a_burst_of_text_rolls_in_no_faster_than_rows_can_be_read(qtbot, settings):
    settings.appearance.lines = 2
    now = [100.0]
    view = CaptionView(settings.appearance, clock=lambda: now[0])
    qtbot.addWidget(view)
    view.resize(900, view.sizeHint().height())
    view.show()
    qtbot.waitExposed(view)
    view.show_update(CaptionUpdate((final("It was the best of times, it was the worst"),
                                    final("of times.", 1)), None))
    view.grab()  # painted: both rows are now on screen, seen at t=100
    assert [t for t, _ in view.visible_rows()] == ["It was the best of times, it was the worst",
                                                   "of times."]
    # a catch-up burst: three more rows at once, 0.2 s later
    now[0] += 0.2
    view.show_update(CaptionUpdate(
        (final("It was the age of wisdom, it was the age of foolishness,", 2),
         final("it was the epoch of belief, it was the epoch of incredulity,", 3)), None))
    view.grab()
    rows = [t for t, _ in view.visible_rows()]
    assert rows[0] == "It was the best of times, it was the worst", "held for its reading time"
    assert view.hold_timer.isActive()
    shown = {rows[0]: 0.0}
    for _ in range(40):  # the hold timer's steps, 0.1 s apart
        now[0] += 0.1
        view.grab()
        rows = [t for t, _ in view.visible_rows()]
        for row in shown:
            if row in rows:
                shown[row] += 0.1
        shown.update({row: 0.0 for row in rows if row not in shown})
    assert rows[-1].endswith("epoch of incredulity,")
    assert len(shown) >= 4, "the burst rolled in row by row, not straight to its end"
    assert all(t >= MIN_ROW_SECONDS - 0.3 for row, t in shown.items() if row not in rows)


def test_a_new_word_is_painted_at_once_and_a_repeat_not_at_all(qtbot, settings):
    overlay = make_overlay(qtbot, settings)
    view = overlay.view
    QCoreApplication.processEvents()  # the first paint after show(), before measuring
    paints = []
    view.painted.connect(lambda: paints.append(view.visible_text()))
    overlay.show_update(CaptionUpdate((), live("hello")))
    assert paints == ["hello"]  # painted before show_update returned, not on a later loop pass
    overlay.show_update(CaptionUpdate((), live("hello")))  # the session's tick: nothing new
    assert paints == ["hello"]
    overlay.show_update(CaptionUpdate((), live("hello there")))
    assert paints == ["hello", "hello there"]


def test_speech_at_a_normal_pace_is_never_held_back(qtbot, settings):
    """A row is the same row while it fills: its reading time runs from its first word,
    so even at a fast speaking pace (4 words a second, confirmed in bursts as the engine
    does) the newest word is always on screen."""
    settings.appearance.lines = 2
    now = [0.0]
    view = CaptionView(settings.appearance, clock=lambda: now[0])
    qtbot.addWidget(view)
    view.resize(900, view.sizeHint().height())
    view.show()
    qtbot.waitExposed(view)
    text = ("It was the best of times, it was the worst of times, it was the age of wisdom, "
            "it was the age of foolishness, it was the epoch of belief, it was the epoch "
            "of incredulity, it was the season of Light, it was the season of Darkness")
    words = text.split()
    step = 3  # the engine confirms a few words a second and shows the next ones live
    for i in range(0, len(words), step):
        now[0] += 0.75
        live_words = words[i + step : i + 2 * step]
        view.show_update(CaptionUpdate((final(" ".join(words[i : i + step]), i),),
                                       live(" ".join(live_words)) if live_words else None))
        view.grab()
        newest = (live_words or words[i : i + step])[-1]
        assert view.visible_text().endswith(newest), (i, view.visible_rows())
