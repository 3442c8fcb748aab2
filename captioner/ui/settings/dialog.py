"""The settings dialog: tabs of pages, inline validation, apply without restarting.

Apply validates every page into a copy of the settings; any error is shown under
its field (and its tab is opened) and nothing changes. Otherwise the store adopts
the copy (one save, one ``changed`` signal): the overlay restyles at once and a
changed source or endpoint restarts the session (see ``CaptionerApp.apply_settings``).
The dialog is non-modal and opened with ``show()``.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from captioner.audio.devices import list_devices
from captioner.ui.actions import AppActions
from captioner.ui.settings.appearance_page import AppearancePage
from captioner.ui.settings.audio_page import AudioPage, DeviceLister
from captioner.ui.settings.common import Errors, Page, StatusLabel
from captioner.ui.settings.feed_page import FeedPage
from captioner.ui.settings.other_pages import (
    AlertsPage,
    EndpointsPlaceholder,
    RepliesPage,
    ShortcutsPage,
    TranscriptPage,
)
from captioner.ui.settings.recognition_page import KeyStore, RecognitionPage
from captioner.ui.settings_store import SettingsStore


class SettingsDialog(QDialog):
    applied = Signal(object)  # frozenset of changed sections

    def __init__(self, store: SettingsStore, actions: AppActions | None = None, *,
                 devices: DeviceLister = list_devices, keys: KeyStore | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings — Captioner")
        self.setAccessibleName("Captioner settings")
        self.store = store
        self.audio = AudioPage(devices)
        self.recognition = RecognitionPage(keys)
        self.replies = RepliesPage()
        self.appearance = AppearancePage()
        self.alerts = AlertsPage()
        self.transcript = TranscriptPage()
        self.shortcuts = ShortcutsPage()
        self.feed = FeedPage()
        self.endpoints: Page = EndpointsPlaceholder()
        self.tabs = QTabWidget()
        self.tabs.setAccessibleName("Settings pages")
        for page in self.pages():
            self.tabs.addTab(page, page.title)
        self.summary = StatusLabel("Settings status")
        self.summary.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Apply
                                        | QDialogButtonBox.StandardButton.Cancel)
        for role, name in ((QDialogButtonBox.StandardButton.Ok, "OK: apply and close"),
                           (QDialogButtonBox.StandardButton.Apply, "Apply"),
                           (QDialogButtonBox.StandardButton.Cancel, "Cancel")):
            self.buttons.button(role).setAccessibleName(name)
        self.buttons.button(QDialogButtonBox.StandardButton.Apply).clicked.connect(self.apply)
        self.buttons.accepted.connect(self._ok)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(self.summary)
        layout.addWidget(self.buttons)
        if actions is not None:
            self.addActions(actions.keyboard())
        self.reload()
        store.changed.connect(self._saved)

    def _saved(self, _sections: object) -> None:
        """Settings were saved (here, or by the Endpoints page's Start or Check account):
        what the summary said about an earlier try no longer holds."""
        self.summary.show_status("")

    def pages(self) -> Sequence[Page]:
        return (self.audio, self.recognition, self.replies, self.appearance, self.alerts,
                self.transcript, self.shortcuts, self.feed, self.endpoints)

    def set_endpoints_page(self, page: Page) -> None:
        """The endpoint-control work puts its page here (replacing the placeholder)."""
        index = self.tabs.indexOf(self.endpoints)
        self.tabs.removeTab(index)
        self.endpoints.deleteLater()
        self.endpoints = page
        self.tabs.insertTab(index, page, page.title or "Endpoints")
        page.load(self.store.settings)

    def reload(self) -> None:
        """Fill every page from the current settings and clear old messages."""
        for page in self.pages():
            page.load(self.store.settings)
            page.show_errors({})
        self.summary.show_status("")

    def apply(self) -> bool:
        """Validate all pages; apply when everything is valid. Returns success."""
        new = self.store.copy()
        first_bad: Page | None = None
        all_errors: Errors = {}
        for page in self.pages():
            errors = page.write(new)
            page.show_errors(errors)
            if errors and first_bad is None:
                first_bad = page
            all_errors.update(errors)
        if first_bad is not None:
            self.tabs.setCurrentWidget(first_bad)
            field = next((first_bad.fields[k] for k in all_errors if k in first_bad.fields),
                         None)
            if field is not None:
                field.setFocus()
            n = len(all_errors)
            self.summary.show_status(f"{n} setting{'s' * (n > 1)} need{'s' * (n == 1)} "
                                     "fixing before they can be applied.", spoken=True)
            return False
        for page in self.pages():
            secret_errors = page.commit_secrets()
            if secret_errors:
                page.show_errors(secret_errors)
                self.tabs.setCurrentWidget(page)
                self.summary.show_status(next(iter(secret_errors.values())), spoken=True)
                return False
        changed = self.store.replace(new)
        self.summary.show_status("Settings applied." if changed else "Nothing changed.",
                                 spoken=True)
        self.applied.emit(changed)
        return True

    def _ok(self) -> None:
        if self.apply():
            self.accept()


__all__ = ["SettingsDialog"]
