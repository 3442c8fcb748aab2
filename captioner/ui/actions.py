"""The app's commands as one set of QActions, shared by the tray menu, the overlay's
context menu / menu button and the keyboard shortcuts (so each works the same way)."""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QWidget

from captioner.settings import ShortcutSettings
from captioner.ui.settings.validation import shortcut_error

log = logging.getLogger(__name__)


class AppActions(QObject):
    def __init__(self, shortcuts: ShortcutSettings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        # A toggle named for what its check mark means (checked = captioning), as the OS
        # live-caption switches are; a label that flips to "Stop" beside a ticked box
        # reads, and is announced, as "captions stopped".
        self.start_stop = self._action("&Live captions", checkable=True)
        self.show_overlay = self._action("Show &overlay", checkable=True)
        self.show_overlay.setChecked(True)
        self.click_through = self._action("&Click-through", checkable=True)
        self.font_bigger = self._action("&Bigger text")
        self.font_smaller = self._action("S&maller text")
        self.retry = self._action("&Retry now")
        self.retry.setEnabled(False)
        self.history = self._action("Transcript &history…")
        self.settings = self._action("S&ettings…")
        self.reply = self._action("Type a &reply to speak…")
        self.quit = self._action("&Quit Captioner")
        self.menus: list[QMenu] = []  # every menu built, so later items reach them all
        self.apply_shortcuts(shortcuts)

    def _action(self, text: str, *, checkable: bool = False) -> QAction:
        action = QAction(text, self)
        action.setCheckable(checkable)
        action.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
        return action

    def apply_shortcuts(self, shortcuts: ShortcutSettings) -> None:
        """A saved shortcut the Shortcuts page would refuse (Shift+Tab, a plain letter,
        from an older version or a hand-edited file) gives way to the default: it would
        take that key from typing or moving around in every window."""
        defaults = ShortcutSettings()
        for action, name in ((self.start_stop, "start_stop"),
                             (self.click_through, "click_through"),
                             (self.font_bigger, "font_bigger"),
                             (self.font_smaller, "font_smaller"), (self.reply, "reply")):
            seq = getattr(shortcuts, name)
            if (problem := shortcut_error(seq)) is not None:
                log.warning("! shortcut %s: %s Using %s.", name, problem,
                            getattr(defaults, name))
                seq = getattr(defaults, name)
            action.setShortcut(QKeySequence(seq) if seq else QKeySequence())

    def all(self) -> list[QAction]:
        return [self.start_stop, self.retry, self.show_overlay, self.click_through,
                self.font_bigger, self.font_smaller, self.reply, self.history, self.settings,
                self.quit]

    def keyboard(self) -> list[QAction]:
        """The actions with shortcuts; add them to every window so the keys work anywhere."""
        return [self.start_stop, self.click_through, self.font_bigger, self.font_smaller,
                self.reply]

    def build_menu(self, parent: QWidget | None = None) -> QMenu:
        menu = QMenu("Captioner", parent)
        menu.setAccessibleName("Captioner menu")
        menu.addAction(self.start_stop)
        menu.addAction(self.retry)
        menu.addSeparator()
        menu.addAction(self.show_overlay)
        menu.addAction(self.click_through)
        menu.addAction(self.font_bigger)
        menu.addAction(self.font_smaller)
        menu.addSeparator()
        menu.addAction(self.reply)
        menu.addAction(self.history)
        menu.addAction(self.settings)
        self.extra_separator = menu.addSeparator()  # endpoint controls go here later
        menu.addAction(self.quit)
        self.menus.append(menu)
        menu.destroyed.connect(lambda *_: self.menus.remove(menu) if menu in self.menus else None)
        return menu
