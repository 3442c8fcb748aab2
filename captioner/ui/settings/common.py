"""Pieces shared by the settings pages: the page protocol, inline error labels, and
labels whose changing text screen readers can reach."""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QFormLayout, QLabel, QWidget

from captioner.settings import Settings
from captioner.ui.a11y import announce, show_text
from captioner.ui.contrast import TEXT_CONTRAST, most_legible

Errors = dict[str, str]  # field key → readable message

# Dark reds for light themes, light reds for dark ones: the first readable one is used.
ERROR_REDS = ("#C62828", "#8E0000", "#FF8A80", "#FFB3B3", "#FFCDD2")
_PLAIN_DESCRIPTION = "plainAccessibleDescription"  # a field's own description, kept aside


def tie_error(field: QWidget, message: str | None) -> None:
    """Put ``message`` in the field's accessible description, so it is read when the field
    gets the focus; the field's own description comes back once it is fine."""
    plain = field.property(_PLAIN_DESCRIPTION)
    if message:
        if plain is None:
            field.setProperty(_PLAIN_DESCRIPTION, field.accessibleDescription())
        field.setAccessibleDescription(message)
    elif plain is not None:
        field.setAccessibleDescription(plain)
        field.setProperty(_PLAIN_DESCRIPTION, None)


def describe(field: QWidget, text: str) -> None:
    """Set the field's own accessible description; while an error is tied to it, the
    error stays and this comes back once it is fixed."""
    if field.property(_PLAIN_DESCRIPTION) is None:
        field.setAccessibleDescription(text)
    else:
        field.setProperty(_PLAIN_DESCRIPTION, text)


class StatusLabel(QLabel):
    """A named label for changing status. A fixed accessible name hides a QLabel's text
    from screen readers, so the text is mirrored into the description (and announced)."""

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName(name)

    def show_status(self, text: str, *, spoken: bool = False) -> None:
        """Show ``text``; ``spoken``: also announce it (a result of what the user did)."""
        show_text(self, text)
        if spoken:
            announce(self, text)


class ErrorLabel(QLabel):
    """A red message under a field; empty and hidden when the field is fine."""

    def __init__(self, field_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setAccessibleName(f"{field_name} error")
        self._recolor()
        self.hide()

    def show_error(self, message: str | None) -> None:
        self.setText(message or "")
        self.setAccessibleDescription(message or "")
        self.setVisible(bool(message))

    def changeEvent(self, event: QEvent) -> None:
        """A fixed red is unreadable on some themes: pick it again when the theme changes."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._recolor()

    def _recolor(self) -> None:
        palette = self.palette()
        # behind it: a window's Window colour, or a tab page's Button colour, which Fusion
        # lightens by up to 135 % on dark themes
        button = palette.color(QPalette.ColorRole.Button)
        behind = [palette.color(QPalette.ColorRole.Window).name(), button.name(),
                  button.lighter(135).name()]
        red = most_legible(ERROR_REDS, behind, TEXT_CONTRAST)
        if palette.color(QPalette.ColorRole.WindowText).name().upper() != red:
            own = QPalette()  # only the text colour is ours; the rest follows the theme
            own.setColor(QPalette.ColorRole.WindowText, QColor(red))
            self.setPalette(own)  # sends PaletteChange again, which then changes nothing


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
        """Each message under its field and in the field's description, which a screen
        reader reads when the dialog moves the focus there."""
        for key, label in self.errors.items():
            label.show_error(errors.get(key))
            if (field := self.fields.get(key)) is not None:
                tie_error(field, errors.get(key))

    def error_text(self, key: str) -> str:
        label = self.errors.get(key)
        return label.text() if label is not None and label.isVisibleTo(self) else ""
