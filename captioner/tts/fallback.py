"""The computer's own voice, for when no TTS endpoint is configured or it fails.

:class:`LocalVoice` is all the speaker needs. The GUI passes a QTextToSpeech
adapter (``captioner.ui.tts_fallback``) where nothing else can speak, which plays on
the system's default output; headless code uses espeak-ng, which renders to WAV on
stdout so the audio goes through the same player and output device as endpoint
replies, or speech-dispatcher's ``spd-say`` as a last resort.

The GUI prefers :func:`rendering_voice`: a voice that renders to a WAV played
through our player, macOS's ``say``, Windows' own voices through PowerShell's
System.Speech, else espeak-ng. That plays on the output the user picked (a call's
virtual microphone, a headset), which QTextToSpeech cannot be told (PySide6 does not
bind its ``synthesize``), and gives the captures the samples to cancel
(``captioner.audio.reply_cancel``). QTextToSpeech is left for where nothing renders.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
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


OnStart = Callable[[], None] | None


class LocalVoice(Protocol):
    """The computer's voice."""

    name: str  # shown in status messages, e.g. "espeak-ng"

    async def say(self, text: str, on_start: OnStart = None) -> None:
        """Speak ``text``; returns when done. Raises LocalVoiceError if it cannot.

        ``on_start`` is called once when its audio starts (a voice that cannot tell:
        when it begins): the speaker reports the reply as spoken then, so a reply that
        never sounds is not reported."""
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

    def set_language(self, language: str) -> None:
        self.voice = ESPEAK_VOICES.get(language, "en")

    async def say(self, text: str, on_start: OnStart = None) -> None:
        if not text.strip():
            return
        # "--": a reply such as "-1 from me" is text, not an option
        args = [self.executable, "-v", self.voice,
                *(["--stdout"] if self.sink is not None else []), "--", text]
        try:
            self._proc = proc = await asyncio.create_subprocess_exec(
                *args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE if self.sink else asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise LocalVoiceError(f"cannot run espeak-ng: {exc.strerror or exc}") from exc
        failure: LocalVoiceError | None = None
        try:
            if self.sink is not None and proc.stdout is not None:
                try:
                    await _play_wav_stream(proc.stdout, self.sink, self.name, on_start)
                except LocalVoiceError as exc:
                    failure = exc  # told after espeak-ng's own reason, if it gave one
            elif on_start is not None:
                on_start()  # it plays by itself: as good a start as can be told
            _, err = await proc.communicate()
        finally:
            self._proc = None
            if proc.returncode is None:  # cancelled, or the output went away
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
        if proc.returncode is not None and proc.returncode < 0:
            return  # killed by stop()
        detail = err.decode(errors="replace").strip()[-300:] if err else ""
        if proc.returncode:
            raise LocalVoiceError(f"espeak-ng failed ({proc.returncode}) {detail}".strip())
        if failure is not None:  # e.g. no audio, having printed why and exited 0
            raise LocalVoiceError(f"{failure} ({detail})" if detail else str(failure))
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

    async def say(self, text: str, on_start: OnStart = None) -> None:
        try:
            self._proc = proc = await asyncio.create_subprocess_exec(
                self.executable, "--wait", "-l", self.language, "--", text,  # text, not options
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise LocalVoiceError(f"cannot run spd-say: {exc.strerror or exc}") from exc
        if on_start is not None:
            on_start()  # it plays by itself: as good a start as can be told
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


RenderArgs = Callable[[str, str], list[str]]  # (WAV path, language) → command line

# Qwen3-TTS language → the culture a platform voice is picked by ("Auto": the default voice).
CULTURES = {
    "English": "en-US", "Chinese": "zh-CN", "Japanese": "ja-JP", "Korean": "ko-KR",
    "German": "de-DE", "French": "fr-FR", "Russian": "ru-RU", "Portuguese": "pt-BR",
    "Spanish": "es-ES", "Italian": "it-IT",
}
_MAC_VOICE = re.compile(r"^(?P<name>\S.*?)\s+(?P<locale>[a-z]{2,3})_[A-Za-z0-9]+\s+#")


def mac_voice(language: str, listing: str) -> str | None:
    """The first voice of ``language`` in ``say -v ?``'s listing; None for English (the
    user's own system voice) or when none is installed."""
    culture = CULTURES.get(language)
    if culture is None or culture.startswith("en-"):
        return None
    for line in listing.splitlines():
        if (match := _MAC_VOICE.match(line)) and match["locale"] == culture[:2]:
            return match["name"]
    return None


@functools.cache
def _mac_voices() -> str:
    try:
        return subprocess.run(["say", "-v", "?"], capture_output=True, text=True,
                              timeout=5, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def say_args(path: str, language: str, listing: Callable[[], str] = _mac_voices
             ) -> list[str]:
    """macOS's ``say``: a voice of the language into a 16-bit WAV; the text comes on stdin."""
    voice = mac_voice(language, listing())
    return ["say", *(["-v", voice] if voice else []), "-o", path,
            "--data-format=LEI16@22050", "-f", "-"]


# The text comes on stdin, the path and culture in the environment: none is parsed as code.
_SAPI_SCRIPT = (
    "$ErrorActionPreference = 'Stop'; "
    "[Console]::InputEncoding = [Text.Encoding]::UTF8; "
    "Add-Type -AssemblyName System.Speech; "
    "$voice = New-Object System.Speech.Synthesis.SpeechSynthesizer; "
    "if ($env:CAPTIONER_REPLY_CULTURE) { try { $voice.SelectVoiceByHints('NotSet', "
    "'NotSet', 0, [Globalization.CultureInfo]::GetCultureInfo("
    "$env:CAPTIONER_REPLY_CULTURE)) } catch { } }; "
    "$format = New-Object System.Speech.AudioFormat.SpeechAudioFormatInfo(22050, "
    "[System.Speech.AudioFormat.AudioBitsPerSample]::Sixteen, "
    "[System.Speech.AudioFormat.AudioChannel]::Mono); "
    "$voice.SetOutputToWaveFile($env:CAPTIONER_REPLY_WAV, $format); "
    "$voice.Speak([Console]::In.ReadToEnd()); "
    "$voice.Dispose()"
)


def sapi_args(path: str, language: str) -> list[str]:
    """Windows' own voices (System.Speech) through PowerShell, into a 16-bit mono WAV."""
    return ["powershell", "-NoProfile", "-NonInteractive", "-Command", _SAPI_SCRIPT]


class RenderedVoice:
    """A voice that renders a reply to a WAV file, played through ``sink`` when done.

    A renderer that hangs is killed after ``timeout`` (plus a little per character),
    so one stuck reply does not hold up the ones typed after it."""

    def __init__(self, sink: AudioSink, name: str, args: RenderArgs, *,
                 language: str = "English", timeout: float = 20.0) -> None:
        self.sink, self.name, self._args, self.language = sink, name, args, language
        self.timeout = timeout
        self._proc: asyncio.subprocess.Process | None = None

    def set_language(self, language: str) -> None:
        self.language = language

    async def say(self, text: str, on_start: OnStart = None) -> None:
        if not text.strip():
            return
        with tempfile.TemporaryDirectory(prefix="captioner-reply-") as folder:
            path = str(Path(folder) / "reply.wav")
            # off the event loop: macOS lists its voices once (a subprocess)
            args = await asyncio.to_thread(self._args, path, self.language)
            try:
                self._proc = proc = await asyncio.create_subprocess_exec(
                    *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
                    stderr=asyncio.subprocess.PIPE,
                    env=dict(os.environ, CAPTIONER_REPLY_WAV=path,
                             CAPTIONER_REPLY_CULTURE=CULTURES.get(self.language, "")))
            except OSError as exc:
                raise LocalVoiceError(f"cannot run {args[0]}: {exc.strerror or exc}") from exc
            try:
                _, err = await asyncio.wait_for(proc.communicate(text.encode("utf-8")),
                                                self.timeout + 0.05 * len(text))
            except TimeoutError:
                proc.kill()
                await proc.wait()
                raise LocalVoiceError(f"{self.name} did not finish rendering the reply in "
                                      f"{self.timeout + 0.05 * len(text):.0f} s") from None
            finally:
                self._proc = None
            if proc.returncode:  # killed by stop() (negative) or failed
                if proc.returncode < 0:
                    return
                detail = err.decode(errors="replace").strip()[-300:] if err else ""
                raise LocalVoiceError(f"{self.name} failed ({proc.returncode}) {detail}".strip())
            try:
                wav = Path(path).read_bytes()
            except OSError as exc:
                raise LocalVoiceError(f"{self.name} wrote no audio: {exc}") from exc
        stream = asyncio.StreamReader()
        stream.feed_data(wav)
        stream.feed_eof()
        await _play_wav_stream(stream, self.sink, self.name, on_start)
        self.sink.finish_reply()
        await self.sink.drained()

    def stop(self) -> None:
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        self.sink.cancel()


def rendering_voice(sink: AudioSink, language: str = "English", *,
                    platform: str = sys.platform,
                    which: Callable[[str], str | None] = shutil.which) -> LocalVoice | None:
    """The computer's voice played through ``sink`` (so on its output device), or None
    where nothing here can render one: the platform's own voices first, else espeak-ng."""
    if platform == "darwin" and which("say"):
        return RenderedVoice(sink, "macOS voice", say_args, language=language)
    if platform == "win32" and which("powershell"):
        return RenderedVoice(sink, "Windows voice", sapi_args, language=language)
    if which("espeak-ng"):
        return EspeakVoice(sink, language=language)
    return None


def find_local_voice(sink: AudioSink | None = None, *, language: str = "English",
                     platform: str = sys.platform,
                     which: Callable[[str], str | None] = shutil.which) -> LocalVoice | None:
    """The best headless voice installed here, or None: with a ``sink``, one played
    through it (``rendering_voice``); else espeak-ng or spd-say playing by themselves."""
    if sink is not None:
        voice = rendering_voice(sink, language, platform=platform, which=which)
        if voice is not None:
            return voice
    elif which("espeak-ng"):
        return EspeakVoice(None, language=language)
    if which("spd-say"):
        return SpdSayVoice(language=language)
    return None


async def _play_wav_stream(stream: asyncio.StreamReader, sink: AudioSink, who: str,
                           on_start: OnStart = None) -> None:
    """Feed a streamed WAV (sizes may be bogus) from ``who`` to ``sink`` as it arrives.

    The reply starts on the sink (and ``on_start`` is called) with its first samples;
    a WAV without any is a LocalVoiceError: the text was not empty, so it went unsaid."""
    try:
        header = await stream.readexactly(12)
    except asyncio.IncompleteReadError as exc:
        what = "no WAV header" if exc.partial else "no audio"
        raise LocalVoiceError(f"{who} produced {what}") from exc
    if header[:4] != b"RIFF" or header[8:12] != b"WAVE":
        raise LocalVoiceError(f"{who} output is not WAV")
    rate = 22_050
    while True:
        try:
            chunk = await stream.readexactly(8)
            kind, size = chunk[:4], struct.unpack("<I", chunk[4:])[0]
            if kind == b"data":
                break
            body = await stream.readexactly(size + (size & 1))
        except asyncio.IncompleteReadError as exc:
            raise LocalVoiceError(f"{who} output ended inside the WAV header") from exc
        if kind == b"fmt ":
            channels, rate, bits = (struct.unpack("<H", body[2:4])[0],
                                    struct.unpack("<I", body[4:8])[0],
                                    struct.unpack("<H", body[14:16])[0])
            if channels != 1 or bits != 16:
                raise LocalVoiceError(f"{who} WAV is not 16-bit mono")
    started = False
    odd = b""
    while data := await stream.read(8192):
        data = odd + data
        cut = len(data) - len(data) % 2
        odd = data[cut:]
        if cut:
            if not started:
                started = True
                sink.start_reply(rate)
                if on_start is not None:
                    on_start()
            await sink.write(data[:cut])
    if not started:
        raise LocalVoiceError(f"{who} produced no audio")
