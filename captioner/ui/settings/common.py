"""Pieces shared by the settings pages: the page protocol and inline error labels."""

from __future__ import annotations

from PySide6.QtWidgets import QFormLayout, QLabel, QWidget

from captioner.settings import Settings

Errors = dict[str, str]  # field key → readable message


class ErrorLabel(QLabel):
    """A red message under a field; empty and hidden when the field is fine."""

    def __init__(self, field_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setStyleSheet("color: #C62828;")
        self.setAccessibleName(f"{field_name} error")
        self.hide()

    def show_error(self, message: str | None) -> None:
        self.setText(message or "")
        self.setAccessibleDescription(message or "")
        self.setVisible(bool(message))


class Page(QWidget):
    """One tab. ``load`` fills the widgets; ``write`` validates and copies into ``out``."""

    title = ""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.errors: dict[str, ErrorLabel] = {}
        self.fields: dict[str, QWidget] = {}

    def add_row(self, form: QFormLayout, key: str, label: str, widget: QWidget,
                accessible: str | None = None) -> QWidget:
        """A labelled field (``label`` carries the &mnemonic) with its error label."""
        name = accessible or label.replace("&", "").rstrip(":")
        widget.setAccessibleName(name)
        caption = QLabel(label)
        caption.setBuddy(widget)
        form.addRow(caption, widget)
        error = ErrorLabel(name)
        form.addRow("", error)
        self.errors[key] = error
        self.fields[key] = widget
        return widget

    def load(self, settings: Settings) -> None:
        raise NotImplementedError

    def write(self, out: Settings) -> Errors:
        raise NotImplementedError

    def commit_secrets(self) -> Errors:
        """After every page validated: store typed secrets (OS keyring), then clear them."""
        return {}

    def show_errors(self, errors: Errors) -> None:
        for key, label in self.errors.items():
            label.show_error(errors.get(key))

    def error_text(self, key: str) -> str:
        label = self.errors.get(key)
        return label.text() if label is not None and label.isVisibleTo(self) else ""
