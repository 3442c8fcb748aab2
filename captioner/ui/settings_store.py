"""The app's one Settings object, its change notifications and its saving (one place).

Widgets never save settings themselves: they call :meth:`SettingsStore.replace`
(a whole new Settings from the dialog) or :meth:`touched` (a small in-place edit
such as the overlay geometry or the font size), and the store saves with
:func:`captioner.settings.save` — at once, or debounced for in-place edits.

Loading never overwrites what the user wrote: an unreadable file is moved to a
``.bak`` before anything is saved (and when it cannot be moved, nothing is saved);
``problems`` holds the sentences the app shows about it and about dropped values.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from captioner import settings as settings_io
from captioner.settings import Settings

log = logging.getLogger(__name__)

SECTIONS = tuple(f.name for f in dataclasses.fields(Settings))


class SettingsStore(QObject):
    changed = Signal(object)  # frozenset of top-level section names that changed
    save_failed = Signal(str)

    def __init__(self, settings: Settings | None = None, path: Path | None = None,
                 save_delay_ms: int = 500, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.path = path
        loaded = (settings_io.LoadResult(settings) if settings is not None
                  else settings_io.read(path, keep_unreadable=True))
        for problem in loaded.problems:
            log.warning("! %s", problem)
        self._settings = loaded.settings
        self.problems: tuple[str, ...] = loaded.problems
        self.writable = loaded.writable
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(save_delay_ms)
        self._timer.timeout.connect(self.save)

    @property
    def settings(self) -> Settings:
        return self._settings

    def copy(self) -> Settings:
        """A deep copy for editing (the settings dialog)."""
        return copy.deepcopy(self._settings)

    def replace(self, new: Settings) -> frozenset[str]:
        """Adopt ``new``; emits ``changed`` with the sections that differ and saves now.

        The objects are updated in place, so widgets holding a section keep seeing
        the current values.
        """
        changed = frozenset(name for name in SECTIONS
                            if getattr(new, name) != getattr(self._settings, name))
        for name in changed:
            current = getattr(self._settings, name)
            value = copy.deepcopy(getattr(new, name))
            if dataclasses.is_dataclass(current):
                for f in dataclasses.fields(current):
                    setattr(current, f.name, getattr(value, f.name))
            else:
                setattr(self._settings, name, value)
        if changed:
            log.info("= settings changed: %s", ", ".join(sorted(changed)))
            self.save()
            self.changed.emit(changed)
        return changed

    def touched(self, *sections: str) -> None:
        """Something edited the settings in place: notify and save soon."""
        self._timer.start()
        if sections:
            self.changed.emit(frozenset(sections))

    def save(self) -> bool:
        self._timer.stop()
        if not self.writable:
            log.info("= settings not saved: the file on disk could not be kept")
            return False
        try:
            settings_io.save(self._settings, self.path)
        except OSError as exc:
            message = f"Settings could not be saved: {exc.strerror or exc}"
            log.warning("! %s", message)
            self.save_failed.emit(message)
            return False
        return True

    def flush(self) -> None:
        """Save now if a debounced save is pending (on quit)."""
        if self._timer.isActive():
            self.save()
