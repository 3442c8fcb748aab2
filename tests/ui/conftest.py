"""UI test helpers: isolated settings, a qasync loop that fails on any loop error, a
tone-word audio file for real caption sessions against the local Realtime server."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import qasync
from PySide6.QtGui import QAccessible, QAccessibleEvent

from captioner.settings import Settings
from captioner.ui.settings_store import SettingsStore
from tests.support.speech import write_wav
from tests.support.transcribers import tone_words_pcm

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "config"
    monkeypatch.setenv("CAPTIONER_CONFIG_DIR", str(folder))
    return folder


@pytest.fixture
def settings(tmp_path: Path, config_dir: Path) -> Settings:
    s = Settings()
    s.transcript.folder = str(tmp_path / "transcripts")
    s.appearance.font_family = "DejaVu Sans"
    return s


@pytest.fixture
def store(settings: Settings, qapp) -> SettingsStore:
    return SettingsStore(settings)


@pytest.fixture
def tone_wav(tmp_path: Path) -> Path:
    """Tone "words" the ToneWordTranscriber hears, followed by a second of silence."""
    pcm = np.frombuffer(tone_words_pcm(WORDS), "<i2").astype(np.float32) / 32768
    audio = np.concatenate([pcm, np.zeros(16_000, dtype=np.float32)])
    return write_wav(tmp_path / "tones.wav", audio, 16_000)


def run_async(qapp, coro_fn: Callable[[], Coroutine[Any, Any, Any]], timeout: float = 30.0):
    """Run ``coro_fn()`` on a qasync loop; fail if the loop saw any unhandled exception."""
    seen: list[dict[str, Any]] = []

    async def wrapper():
        asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: seen.append(ctx))
        return await asyncio.wait_for(coro_fn(), timeout)

    result = asyncio.run(wrapper(), loop_factory=qasync.QEventLoop)
    assert not seen, f"the event loop saw errors: {seen}"
    return result


async def wait_until(predicate: Callable[[], bool], timeout: float = 10.0,
                     what: str = "condition") -> None:
    """Wait (yielding to the loop) until ``predicate()`` holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


@pytest.fixture
def tray_app_settings(qapp, request):
    previous = qapp.quitOnLastWindowClosed()
    qapp.setQuitOnLastWindowClosed(False)  # a tray app: closing a dialog must not quit
    request.addfinalizer(lambda: qapp.setQuitOnLastWindowClosed(previous))


@pytest.fixture(autouse=True)
def _quiet_qt(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)


@pytest.fixture
def announced(monkeypatch) -> list[tuple[str, QAccessible.AnnouncementPoliteness]]:
    """Announcements (text, politeness), as a screen reader (an active accessibility
    bridge) would get them."""
    said: list[tuple[str, QAccessible.AnnouncementPoliteness]] = []

    def record(event: QAccessibleEvent) -> None:
        if event.type() == QAccessible.Event.Announcement:
            said.append((event.message(), event.politeness()))

    monkeypatch.setattr(QAccessible, "isActive", staticmethod(lambda: True))
    monkeypatch.setattr(QAccessible, "updateAccessibility", staticmethod(record))
    return said
