"""The platform voice through Qt (QTextToSpeech), as a ``captioner.tts.fallback.LocalVoice``.

Used by the GUI when no TTS endpoint is configured or it fails. ``say`` resolves a
Future from Qt's state signals, so it needs the qasync loop (the GUI's), never a
nested event loop.
"""

from __future__ import annotations

import asyncio
import logging

from PySide6.QtCore import QLocale, QObject
from PySide6.QtTextToSpeech import QTextToSpeech

from captioner.tts.errors import LocalVoiceError
from captioner.tts.fallback import OnStart

log = logging.getLogger(__name__)

_LANGUAGES = {
    "English": QLocale.Language.English, "Chinese": QLocale.Language.Chinese,
    "Japanese": QLocale.Language.Japanese, "Korean": QLocale.Language.Korean,
    "German": QLocale.Language.German, "French": QLocale.Language.French,
    "Russian": QLocale.Language.Russian, "Portuguese": QLocale.Language.Portuguese,
    "Spanish": QLocale.Language.Spanish, "Italian": QLocale.Language.Italian,
}


def available_engines() -> list[str]:
    """Qt's speech engines here, best first (the 'mock' test engine last)."""
    engines = list(QTextToSpeech.availableEngines())
    return sorted(engines, key=lambda e: e == "mock")


class QtLocalVoice:
    """Speaks with the operating system's voice (SAPI/WinRT, AVSpeech, speech-dispatcher)."""

    def __init__(self, language: str = "English", *, engine: str | None = None,
                 parent: QObject | None = None) -> None:
        engines = available_engines()
        if engine is None and engines:
            engine = engines[0]
        self._tts: QTextToSpeech | None = (
            QTextToSpeech(engine, parent) if engine else QTextToSpeech(parent))
        self.name = f"{engine or 'system'} voice"
        self._future: asyncio.Future[None] | None = None
        self._started = False
        self._on_start: OnStart = None
        self._tts.stateChanged.connect(self._on_state)
        self._tts.errorOccurred.connect(self._on_error)
        self.set_language(language)

    @property
    def engine(self) -> QTextToSpeech:
        """The Qt object, e.g. to list voices or follow ``stateChanged``."""
        return self._tts

    def set_language(self, language: str) -> None:
        wanted = _LANGUAGES.get(language)
        if wanted is None or self._tts is None:
            return  # "Auto": keep the system default
        for locale in self._tts.availableLocales():
            if locale.language() == wanted:
                self._tts.setLocale(locale)
                return
        log.info("= no %s voice in %s; using its default", language, self.name)

    async def say(self, text: str, on_start: OnStart = None) -> None:
        if self._tts is None:
            raise LocalVoiceError(f"{self.name} was closed")
        if self._tts.state() == QTextToSpeech.State.Error:
            raise LocalVoiceError(f"{self.name} is unavailable: {self._tts.errorString()}")
        self.stop()
        future = asyncio.get_running_loop().create_future()
        self._future, self._started, self._on_start = future, False, on_start
        self._tts.say(text)
        try:
            await future
        finally:
            if self._future is future:
                self._future = None

    def stop(self) -> None:
        future, self._future = self._future, None
        busy = (QTextToSpeech.State.Speaking, QTextToSpeech.State.Paused,
                QTextToSpeech.State.Synthesizing)
        if self._tts is not None and self._tts.state() in busy:
            self._tts.stop()
        if future is not None and not future.done():
            future.set_result(None)

    def close(self) -> None:
        """Release the Qt engine now, on this (the GUI) thread.

        Its signal connections make a reference cycle with this object; left to the
        cyclic garbage collector, the engine could be deleted on whatever thread
        happens to run a collection, which crashes Qt.
        """
        self.stop()
        tts, self._tts = self._tts, None
        if tts is not None:
            tts.stateChanged.disconnect(self._on_state)
            tts.errorOccurred.disconnect(self._on_error)
            tts.deleteLater()

    def _on_state(self, state: QTextToSpeech.State) -> None:
        future = self._future
        if future is None or future.done():
            return
        if state in (QTextToSpeech.State.Speaking, QTextToSpeech.State.Synthesizing):
            if not self._started and self._on_start is not None:
                self._on_start()
            self._started = True
        elif state == QTextToSpeech.State.Ready and self._started:
            future.set_result(None)

    def _on_error(self, _reason: QTextToSpeech.ErrorReason, message: str) -> None:
        future = self._future
        if future is not None and not future.done():
            future.set_exception(LocalVoiceError(f"{self.name} failed: {message}"))
