"""The computer's own voice, for when no TTS endpoint is configured or it fails.

:class:`LocalVoice` is all the speaker needs. The GUI passes a QTextToSpeech
adapter (``captioner.ui.tts_fallback``); headless code uses espeak-ng, which
renders to WAV on stdout so the audio goes through the same player and output
device as endpoint replies, or speech-dispatcher's ``spd-say`` as a last resort.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import struct
from typing import Protocol

from captioner.tts.errors import LocalVoiceError
from captioner.tts.sink import AudioSink

log = logging.getLogger(__name__)

# Qwen3-TTS language → espeak-ng voice.
ESPEAK_VOICES = {
    "Auto": "en", "English": "en", "Chinese": "cmn", "Japanese": "ja", "Korean": "ko",
    "German": "de", "French": "fr", "Russian": "ru", "Portuguese": "pt", "Spanish": "es",
    "Italian": "it",
}


class LocalVoice(Protocol):
    name: str  # shown in status messages, e.g. "espeak-ng"

    async def say(self, text: str) -> None:
        """Speak ``text``; returns when done. Raises LocalVoiceError if it cannot."""
        ...

    def stop(self) -> None:
        """Stop speaking now; a pending ``say`` returns."""
        ...


class EspeakVoice:
    """espeak-ng rendered to PCM and played through ``sink`` (else espeak-ng plays it)."""

    name = "espeak-ng"

    def __init__(self, sink: AudioSink | None = None, *, language: str = "English",
                 executable: str | None = None) -> None:
        self.sink = sink
        self.voice = ESPEAK_VOICES.get(language, "en")
        self.executable = executable or shutil.which("espeak-ng") or "espeak-ng"
        self._proc: asyncio.subprocess.Process | None = None

    async def say(self, text: str) -> None:
        args = [self.executable, "-v", self.voice]
        if self.sink is not None:
            args.append("--stdout")
        try:
            self._proc = proc = await asyncio.create_subprocess_exec(
                *args, text,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE if self.sink else asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise LocalVoiceError(f"cannot run espeak-ng: {exc.strerror or exc}") from exc
        try:
            if self.sink is not None and proc.stdout is not None:
                await _play_wav_stream(proc.stdout, self.sink)
            _, err = await proc.communicate()
        finally:
            self._proc = None
        if proc.returncode and proc.returncode > 0:
            detail = err.decode(errors="replace").strip() if err else ""
            raise LocalVoiceError(f"espeak-ng failed ({proc.returncode}) {detail}".strip())
        if self.sink is not None:
            self.sink.finish_reply()
            await self.sink.drained()

    def stop(self) -> None:
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        if self.sink is not None:
            self.sink.cancel()


class SpdSayVoice:
    """speech-dispatcher's ``spd-say --wait``; it picks its own output."""

    name = "speech-dispatcher"

    def __init__(self, *, language: str = "English", executable: str | None = None) -> None:
        self.language = ESPEAK_VOICES.get(language, "en")
        self.executable = executable or shutil.which("spd-say") or "spd-say"
        self._proc: asyncio.subprocess.Process | None = None

    async def say(self, text: str) -> None:
        try:
            self._proc = proc = await asyncio.create_subprocess_exec(
                self.executable, "--wait", "-l", self.language, text,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise LocalVoiceError(f"cannot run spd-say: {exc.strerror or exc}") from exc
        try:
            _, err = await proc.communicate()
        finally:
            self._proc = None
        if proc.returncode and proc.returncode > 0:
            detail = err.decode(errors="replace").strip() if err else ""
            raise LocalVoiceError(f"spd-say failed ({proc.returncode}) {detail}".strip())

    def stop(self) -> None:
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()


def find_local_voice(sink: AudioSink | None = None, *, language: str = "English"
                     ) -> LocalVoice | None:
    """The best headless voice installed here, or None."""
    if shutil.which("espeak-ng"):
        return EspeakVoice(sink, language=language)
    if shutil.which("spd-say"):
        return SpdSayVoice(language=language)
    return None


async def _play_wav_stream(stream: asyncio.StreamReader, sink: AudioSink) -> None:
    """Feed a streamed WAV (sizes may be bogus) to ``sink`` as it arrives."""
    try:
        header = await stream.readexactly(12)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return  # nothing to say (empty text)
        raise LocalVoiceError("espeak-ng produced no WAV header") from exc
    if header[:4] != b"RIFF" or header[8:12] != b"WAVE":
        raise LocalVoiceError("espeak-ng output is not WAV")
    rate = 22_050
    while True:
        try:
            chunk = await stream.readexactly(8)
            kind, size = chunk[:4], struct.unpack("<I", chunk[4:])[0]
            if kind == b"data":
                break
            body = await stream.readexactly(size + (size & 1))
        except asyncio.IncompleteReadError as exc:
            raise LocalVoiceError("espeak-ng output ended inside the WAV header") from exc
        if kind == b"fmt ":
            channels, rate, bits = (struct.unpack("<H", body[2:4])[0],
                                    struct.unpack("<I", body[4:8])[0],
                                    struct.unpack("<H", body[14:16])[0])
            if channels != 1 or bits != 16:
                raise LocalVoiceError("espeak-ng WAV is not 16-bit mono")
    sink.start_reply(rate)
    odd = b""
    while data := await stream.read(8192):
        data = odd + data
        cut = len(data) - len(data) % 2
        odd = data[cut:]
        if cut:
            await sink.write(data[:cut])
