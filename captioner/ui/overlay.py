"""The floating caption window: frameless, translucent, always on top, not in the taskbar.

Drag anywhere to move and drag an edge to resize (the window manager does both via
``QWindow.startSystemMove/Resize``; where the platform cannot, a manual drag takes
over). Presets: dock top / bottom (full width of the screen's available area) or
floating, with the floating geometry remembered per screen in
``settings.appearance.geometry``. Click-through makes the window transparent to
the mouse (``Qt.WindowTransparentForInput``); the tray, the shortcut and the
menu bring it back.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QPoint, QRect, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QContextMenuEvent,
    QGuiApplication,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
    QScreen,
)
from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget

from captioner.alerts import AlertMatcher
from captioner.realtime.captions import CaptionUpdate, LineKind
from captioner.settings import AppearanceSettings
from captioner.ui.a11y import announce
from captioner.ui.actions import AppActions
from captioner.ui.appearance import clamp_font_size, colors, palette
from captioner.ui.caption_view import CaptionView
from captioner.ui.status_strip import StatusStrip

log = logging.getLogger(__name__)

EDGE = 6  # px from the border where a drag resizes instead of moving
FLASH_MS = 250
FLASHES = 6
DEFAULT_WIDTH = 900


class Overlay(QWidget):
    geometry_saved = Signal()  # appearance.geometry changed (the app persists it)
    alert = Signal(str, str)  # alert word, caption text
    appearance_changed = Signal()  # font size changed from the keyboard

    def __init__(self, appearance: AppearanceSettings, actions: AppActions | None = None,
                 matcher: AlertMatcher | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Captions — Captioner")
        self.setAccessibleName("Captioner caption overlay")
        self.setWindowFlags(Qt.WindowType.FramelessWindowHint | Qt.WindowType.Tool
                            | Qt.WindowType.WindowStaysOnTopHint)
        self.setAttribute(Qt.WidgetAttribute.WA_TranslucentBackground)
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
        self.setMouseTracking(True)
        self.appearance = appearance
        self.actions = actions
        self.matcher = matcher or AlertMatcher()
        self.view = CaptionView(appearance, self.matcher, self)
        self.strip = StatusStrip(self)
        self.hint = QLabel(self)  # no fixed accessible name: it would hide the text
        self.hint.setWordWrap(True)
        self.hint.hide()
        self.live_region = QLabel(self)  # screen readers: the latest finalized line
        self.live_region.setAccessibleName("Latest caption")
        self.live_region.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.hint)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.strip)
        if actions is not None:
            self.addActions(actions.keyboard())
            self.strip.menu_button.setMenu(actions.build_menu(self))
            self.strip.reply_button.clicked.connect(actions.reply.trigger)
        self._menu = actions.build_menu(self) if actions is not None else None
        self._drag_from: QPoint | None = None
        self._pressed_at: QPoint | None = None  # a left press that may become a move
        self._resize_edges = Qt.Edge(0)
        self._applying_geometry = False
        self._alerted: set[tuple[float, int]] = set()
        self._flash_left = 0
        self._flash_on = False
        self.flash_timer = QTimer(self)
        self.flash_timer.setInterval(FLASH_MS)
        self.flash_timer.timeout.connect(self._flash_step)
        self._save_timer = QTimer(self)
        self._save_timer.setSingleShot(True)
        self._save_timer.setInterval(300)
        self._save_timer.timeout.connect(self._remember_geometry)
        self._strip_height = 0  # what the strip needed at the last placing
        self._fit_timer = QTimer(self)  # one fit for a burst of strip changes
        self._fit_timer.setSingleShot(True)
        self._fit_timer.setInterval(0)
        self._fit_timer.timeout.connect(self._fit_height)
        self.strip.text_changed.connect(self._fit_timer.start)
        self.apply_appearance(appearance)

    # --- appearance ---------------------------------------------------------

    def apply_appearance(self, appearance: AppearanceSettings) -> None:
        """Apply new appearance settings at once (fonts, colours, lines, dock)."""
        self.appearance = appearance
        self.view.apply_appearance(appearance)
        fg, _bg = colors(appearance)
        self.strip.set_colors(fg)
        self.strip.set_text_size(appearance.font_size)
        self.hint.setFont(self.strip.font())
        self.hint.setStyleSheet(f"color: {fg.name()}; background: rgba(0,0,0,150);"
                                " padding: 4px; border-radius: 4px;")
        self.set_click_through(appearance.click_through)
        self.place()
        self.update()

    def set_matcher(self, matcher: AlertMatcher) -> None:
        self.matcher = matcher
        self.view.set_matcher(matcher)

    def change_font_size(self, step: int) -> int:
        size = clamp_font_size(self.appearance.font_size + step)
        if size != self.appearance.font_size:
            self.appearance.font_size = size
            self.apply_appearance(self.appearance)
            self.appearance_changed.emit()
        return size

    def set_hint(self, text: str) -> None:
        self.hint.setText(text)
        self.hint.setAccessibleDescription(text)
        self.hint.setVisible(bool(text))
        self.place()
        if text:
            announce(self.hint, text)

    # --- captions -----------------------------------------------------------

    def show_update(self, update: CaptionUpdate) -> None:
        self.view.show_update(update)
        for line in update.finalized:
            if line.kind is LineKind.SPEECH:
                self._check_alerts(line.text, line.start)
                if self.appearance.announce_lines:
                    self.announce(line.text)
        if update.live is not None:
            self._check_alerts(update.live.text, update.live.start)

    def _check_alerts(self, text: str, start: float) -> None:
        for match in self.matcher.find(text):
            key = (round(start, 2), match.start)
            if key in self._alerted:
                continue
            self._alerted.add(key)
            if len(self._alerted) > 500:
                self._alerted.clear()
                self._alerted.add(key)
            self.flash()
            self.alert.emit(match.word, text)

    def flash(self) -> None:
        self._flash_left = FLASHES
        self._flash_on = True
        self.flash_timer.start()
        self.update()

    @property
    def flashing(self) -> bool:
        return self.flash_timer.isActive()

    def _flash_step(self) -> None:
        self._flash_left -= 1
        self._flash_on = self._flash_left > 0 and not self._flash_on
        if self._flash_left <= 0:
            self.flash_timer.stop()
            self._flash_on = False
        self.update()

    def announce(self, text: str) -> None:
        """Tell screen readers about a finalized line (polite announcement + live label)."""
        self.live_region.setText(text)
        self.live_region.setAccessibleDescription(text)
        announce(self.live_region, text)

    # --- status -------------------------------------------------------------

    def set_status(self, state: str, text: str) -> None:
        self.strip.set_state(state, text)

    def set_level(self, dbfs: float) -> None:
        self.strip.meter.set_level(dbfs)

    def set_notice(self, text: str) -> None:
        self.strip.set_notice(text)

    def set_menu_button_visible(self, visible: bool) -> None:
        """Shown when there is no system tray, so the menu is always reachable."""
        self.strip.menu_button.setVisible(visible)
        self.strip.arrange()

    # --- click-through ------------------------------------------------------

    def set_click_through(self, on: bool) -> None:
        self.appearance.click_through = on
        flag = Qt.WindowType.WindowTransparentForInput
        if bool(self.windowFlags() & flag) == on:
            return
        visible = self.isVisible()
        self.setWindowFlag(flag, on)  # re-creates the native window, which hides it
        if visible:
            self.show()
        log.info("= click-through %s", "on" if on else "off")

    @property
    def click_through(self) -> bool:
        return bool(self.windowFlags() & Qt.WindowType.WindowTransparentForInput)

    # --- geometry -----------------------------------------------------------

    def current_screen(self) -> QScreen:
        return self.screen() or QGuiApplication.primaryScreen()

    def preferred_height(self, width: int | None = None) -> int:
        """The height that shows every caption line and the whole strip at ``width``
        (by default the window's): wrapped strip lines need more the narrower it is."""
        return self.layout().totalHeightForWidth(self.width() if width is None else width)

    def minimum_height(self, width: int) -> int:
        """One caption line and the whole strip (and hint): less would cut a notice."""
        return self.layout().totalMinimumHeightForWidth(width)

    def dock(self, where: str) -> None:
        """Dock "top", "bottom" or go "floating"; remembered in the settings."""
        if where not in ("top", "bottom", "floating"):
            raise ValueError(f"dock must be top, bottom or floating, not {where!r}")
        self.appearance.dock = where  # type: ignore[assignment]
        self.place()
        self.geometry_saved.emit()

    def place(self) -> None:
        """Put the window where the dock preset (or the remembered geometry) says."""
        screen = self.current_screen()
        area = screen.availableGeometry()
        saved = self.appearance.geometry.get(screen.name())
        floating = self.appearance.dock == "floating"
        if floating and saved and len(saved) == 4:
            rect = _inside(QRect(*saved), area)  # the screen layout changed, or a drag
            self._fit_strip(rect.width(), area)
            self._grow_to_minimum(rect, area)
            self._set_geometry(rect)
            return
        width = min(DEFAULT_WIDTH, area.width()) if floating else area.width()
        self._fit_strip(width, area)
        height = min(self.preferred_height(width), area.height())
        if self.appearance.dock == "top":
            rect = QRect(area.left(), area.top(), width, height)
        elif self.appearance.dock == "bottom":
            rect = QRect(area.left(), area.bottom() - height + 1, width, height)
        else:
            rect = QRect(0, 0, width, height)
            rect.moveCenter(area.center())
            rect.moveBottom(area.bottom() - 80)
        self._set_geometry(rect)

    def _fit_strip(self, width: int, area: QRect) -> None:
        """The strip may take the screen height the captions leave (at least a quarter):
        past that its text gets smaller rather than push the captions off the screen."""
        captions = self.view.sizeHint().height() + self.layout().spacing()
        self.strip.fit(width, max(area.height() - captions, area.height() // 4))

    def _grow_to_minimum(self, rect: QRect, area: QRect) -> None:
        """Grow ``rect`` upwards (captions sit at its bottom) to the minimum height; past
        the top of the screen, move it down instead (and cut what still does not fit)."""
        need = min(self.minimum_height(rect.width()), area.height())
        if rect.height() < need:
            rect.setTop(rect.bottom() - need + 1)
        if rect.top() < area.top():
            rect.moveTop(area.top())
            rect.setBottom(min(rect.bottom(), area.bottom()))

    def _fit_height(self) -> None:
        """After a strip text changed: docked, take the height it now needs; floating,
        grow or shrink by as much as the strip did, so that the captions keep theirs."""
        if self.appearance.dock != "floating":
            self.place()
        elif self.isVisible() and self._drag_from is None:
            rect, area = self.geometry(), self.current_screen().availableGeometry()
            self._fit_strip(rect.width(), area)
            grown = self.strip.heightForWidth(rect.width()) - self._strip_height
            rect.setTop(rect.top() - grown)
            self._grow_to_minimum(rect, area)
            self._set_geometry(rect)

    def _set_geometry(self, rect: QRect) -> None:
        self._strip_height = self.strip.heightForWidth(rect.width())
        self._applying_geometry = True
        try:
            self.setGeometry(rect)
        finally:
            self._applying_geometry = False

    def _user_geometry_changed(self) -> None:
        if self._applying_geometry or not self.isVisible():
            return
        self._save_timer.start()

    def _remember_geometry(self) -> None:
        if self.appearance.dock != "floating":
            return
        g = self.geometry()
        self.appearance.geometry[self.current_screen().name()] = [g.x(), g.y(), g.width(),
                                                                  g.height()]
        self.geometry_saved.emit()

    def moveEvent(self, event) -> None:
        super().moveEvent(event)
        self._user_geometry_changed()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._user_geometry_changed()

    # --- mouse: move and resize ---------------------------------------------

    def _edges_at(self, pos: QPoint) -> Qt.Edge:
        edges = Qt.Edge(0)
        if pos.x() <= EDGE:
            edges |= Qt.Edge.LeftEdge
        if pos.x() >= self.width() - EDGE:
            edges |= Qt.Edge.RightEdge
        if pos.y() <= EDGE:
            edges |= Qt.Edge.TopEdge
        if pos.y() >= self.height() - EDGE:
            edges |= Qt.Edge.BottomEdge
        return edges

    def mousePressEvent(self, event: QMouseEvent) -> None:
        """A press only marks where a move or resize may start (``mouseMoveEvent``).

        Handing the press to the window manager at once raced a quick click: the
        release came before its grab, and (openbox) the overlay then followed the
        pointer after the click, off the screen, and was remembered there."""
        if event.button() != Qt.MouseButton.LeftButton:
            return super().mousePressEvent(event)
        self._pressed_at = event.position().toPoint()
        event.accept()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._drag_from is not None:
            self.move(event.globalPosition().toPoint() - self._drag_from)
            return
        if self._pressed_at is not None and event.buttons() & Qt.MouseButton.LeftButton:
            moved = event.position().toPoint() - self._pressed_at
            if moved.manhattanLength() >= QApplication.startDragDistance():
                self._start_move(event)
            return
        edges = self._edges_at(event.position().toPoint())
        horizontal = edges & (Qt.Edge.LeftEdge | Qt.Edge.RightEdge)
        vertical = edges & (Qt.Edge.TopEdge | Qt.Edge.BottomEdge)
        if horizontal and vertical:
            self.setCursor(Qt.CursorShape.SizeFDiagCursor)
        elif horizontal:
            self.setCursor(Qt.CursorShape.SizeHorCursor)
        elif vertical:
            self.setCursor(Qt.CursorShape.SizeVerCursor)
        else:
            self.setCursor(Qt.CursorShape.SizeAllCursor)

    def _start_move(self, event: QMouseEvent) -> None:
        """The pointer moved with the button held: the window manager moves or resizes
        the window (or, where it cannot, a manual drag follows the pointer)."""
        assert self._pressed_at is not None
        pressed, self._pressed_at = self._pressed_at, None
        edges = self._edges_at(pressed)
        if self.appearance.dock != "floating":
            self.appearance.dock = "floating"  # a user move leaves the dock
        handle = self.windowHandle()
        started = False
        if handle is not None:
            started = handle.startSystemResize(edges) if edges else handle.startSystemMove()
        if not started and not edges:
            self._drag_from = self.mapToGlobal(pressed) - self.frameGeometry().topLeft()
            self.move(event.globalPosition().toPoint() - self._drag_from)
        self._save_timer.start()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        self._drag_from = self._pressed_at = None
        super().mouseReleaseEvent(event)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        if self._menu is not None:
            self._menu.popup(event.globalPos())  # popup, never exec (see STYLE: qasync)

    # --- painting -----------------------------------------------------------

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        _, bg = colors(self.appearance)
        strip_bg = QColor(bg)
        strip_bg.setAlphaF(max(0.35, bg.alphaF() * 0.8))
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(strip_bg)
        painter.drawRoundedRect(self.strip.geometry().adjusted(0, 0, 0, 0), 6, 6)
        if self._flash_on:
            pen = QPen(QColor(palette(self.appearance).alert), 4)
            painter.setPen(pen)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(self.rect().adjusted(2, 2, -2, -2), 8, 8)
        painter.end()


def _inside(rect: QRect, area: QRect) -> QRect:
    """``rect`` moved (and narrowed, shortened) to lie on the screen ``area``: captions
    partly off the screen are captions lost."""
    out = QRect(rect)
    out.setWidth(min(out.width(), area.width()))
    out.setHeight(min(out.height(), area.height()))
    out.moveLeft(max(area.left(), min(out.left(), area.right() - out.width() + 1)))
    out.moveTop(max(area.top(), min(out.top(), area.bottom() - out.height() + 1)))
    return out
