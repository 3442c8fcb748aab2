"""Keyboard operation of Settings: every Alt+letter on a page reaches exactly one control.

Two visible controls with the same mnemonic make Alt+letter cycle between them instead of
acting, which a keyboard or screen-reader user cannot tell apart from a broken key. Tabs
carry no mnemonics (they would take letters from every page); Ctrl+Tab switches pages.
"""

from __future__ import annotations

import re
from collections import defaultdict

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractButton, QGroupBox, QLabel, QWidget

from captioner.ui.app import CaptionerApp
from captioner.ui.settings.audio_page import SPEAKERS
from tests.ui.conftest import run_async

_MNEMONIC = re.compile(r"&([^&\s])")


def mnemonic(text: str) -> str | None:
    found = _MNEMONIC.search(text.replace("&&", ""))
    return found.group(1).lower() if found else None


def clashes(dialog: QWidget, page: QWidget) -> dict[str, list[str]]:
    """Mnemonics used by more than one visible control of ``page`` or the dialog's buttons."""
    seen: dict[str, list[str]] = defaultdict(list)
    controls = [*dialog.buttons.buttons(), *page.findChildren(QAbstractButton),
                *page.findChildren(QLabel), *page.findChildren(QGroupBox)]
    for widget in controls:
        text = widget.title() if isinstance(widget, QGroupBox) else widget.text()
        key = mnemonic(text)
        if key and widget.isVisibleTo(dialog):
            seen[key].append(text)
    return {key: texts for key, texts in seen.items() if len(texts) > 1}


def test_mnemonic_finder_sees_a_clash(qtbot) -> None:
    from PySide6.QtWidgets import QDialogButtonBox, QVBoxLayout

    dialog = QWidget()
    dialog.buttons = QDialogButtonBox(dialog)  # type: ignore[attr-defined]
    page = QWidget(dialog)
    layout = QVBoxLayout(page)
    for text in ("&Start", "&Size:", "Re&gion:"):
        layout.addWidget(QLabel(text))
    qtbot.addWidget(dialog)
    assert clashes(dialog, page) == {"s": ["&Start", "&Size:"]}


def test_every_settings_page_has_distinct_mnemonics(qapp, store) -> None:
    async def scenario() -> None:
        app = CaptionerApp(store, tray_available=False, source_factory=lambda a: None)
        app.show_settings()
        dialog = app.settings_dialog
        tabs = dialog.tabs
        found: dict[str, dict[str, list[str]]] = {}
        recognition, audio = dialog.recognition, dialog.audio
        choices = {  # each choice shows its own fields
            recognition: [button.click for button in (
                recognition.embedded, recognition.websocket, recognition.sagemaker)],
            audio: [lambda key=key: audio.source.setCurrentIndex(audio.source.findData(key))
                    for key in ("mic", SPEAKERS)],
        }
        for index in range(tabs.count()):
            tabs.setCurrentIndex(index)
            page = tabs.widget(index)
            assert mnemonic(tabs.tabText(index)) is None, tabs.tabText(index)
            for choose in choices.get(page, [lambda: None]):
                choose()
                if found_here := clashes(dialog, page):
                    found[tabs.tabText(index)] = found_here
        assert found == {}
        # pages are reached from the keyboard with Ctrl+Tab / Ctrl+Shift+Tab
        tabs.setCurrentIndex(0)
        QTest.keyClick(tabs.currentWidget(), Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
        assert tabs.currentIndex() == 1
        await app.shutdown()

    run_async(qapp, scenario)
