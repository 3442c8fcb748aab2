"""Qt glue for type-to-speak: one :class:`Speaker` built from ``settings.tts``.

The controller keeps its own queue of replies and, before each one, brings the
speaker in line with the settings as they are now (voice, language, endpoint,
output device), so pickers and the settings dialog take effect on the next
reply without a restart. A replies endpoint the app started (Settings → Endpoints)
is used while it serves, in place of the one in the settings. The output device is
opened on the first reply and closed again after a while without replies, so an
idle tray app does not hold the sound card. This computer's voice is rendered to audio
for our player too (``captioner.tts.fallback.rendering_voice``), so it plays on the
chosen output and the captures can cancel what they hear of it
(``captioner.audio.reply_cancel``); where nothing can render it, the platform's speech
engine (QtTextToSpeech) speaks on the default output.
Every outcome becomes a :class:`ReplyStatus` (a sentence for the status line) and every
reply that starts playing a ``spoken(text)`` signal, for the transcript
(``CaptionModel.add_typed``). Nothing here raises into Qt slots.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from PySide6.QtCore import QObject, Signal

from captioner.audio.playback import PlaybackError, Player
from captioner.aws import provider_for
from captioner.settings import AwsSettings, Settings, TtsSettings
from captioner.transport.base import Connector
from captioner.transport.endpoint_url import connector_for
from captioner.tts.connect import tts_endpoint
from captioner.tts.errors import InvalidRequest, SpeechFailure
from captioner.tts.events import SessionConfig
from captioner.tts.fallback import LocalVoice, rendering_voice
from captioner.tts.sink import AudioSink
from captioner.tts.speaker import Speaker, SpeakerState, SpeakerStatus, SpokenReply
from captioner.ui.settings_store import SettingsStore
from captioner.ui.tts_fallback import QtLocalVoice

log = logging.getLogger(__name__)

FALLBACK = "Voice endpoint down — using this computer's voice."
NO_ENDPOINT = "No voice endpoint set — using this computer's voice."
BAD_ENDPOINT = "Voice endpoint setting is wrong — using this computer's voice."
NO_OUTPUT = "Audio output unavailable — using this computer's voice."
DEFAULT_OUTPUT_ONLY = "This computer's voice plays on the default output only."
OUTPUT_GONE = "The reply stopped: its audio output went away."
OPENING_OUTPUT = "Opening the audio output…"
IDLE_CLOSE_SECONDS = 30.0


class OutputSink(AudioSink, Protocol):
    """An :class:`AudioSink` that is opened and closed (``Player``, ``WavSink``)."""

    failure: str | None  # why the output went away while open; None while it plays

    async def open(self) -> None: ...

    async def close(self) -> None: ...


SinkFactory = Callable[[str | None], OutputSink]  # output device name (None = default)
ConnectorFactory = Callable[[str], Connector | None]
LocalVoiceFactory = Callable[[str], LocalVoice]  # language → voice
RenderingVoiceFactory = Callable[[AudioSink, str], LocalVoice | None]  # (sink, language)


def _qt_local_voice(language: str) -> LocalVoice:
    return QtLocalVoice(language)


def _speaking(voice: LocalVoice | None, language: str) -> LocalVoice | None:
    """``voice`` set to the reply's language, where it can be."""
    set_language = getattr(voice, "set_language", None)
    if callable(set_language):
        set_language(language)
    return voice


@dataclass(frozen=True, slots=True)
class ReplyStatus:
    """What the reply box's status line shows."""

    state: SpeakerState
    text: str  # one short sentence
    detail: str = ""  # the full reason, for a tooltip / accessible description
    local_voice: bool = False  # this computer's voice is (or was last) speaking

    @property
    def busy(self) -> bool:
        return self.state in (SpeakerState.CONNECTING, SpeakerState.SPEAKING)


def describe(status: SpeakerStatus, setup_problem: str | None = None) -> ReplyStatus:
    """Turn the speaker's status into the status line; ``setup_problem`` is the
    headline when the settings themselves kept the endpoint out of use."""
    state, message, error = status.state, status.message, status.error
    fallback_used = status.local_voice or (
        state is SpeakerState.IDLE and isinstance(error, SpeechFailure))
    if fallback_used:
        detail = str(error) if error is not None else message
        if setup_problem is not None:
            return ReplyStatus(state, setup_problem, detail, True)
        headline = FALLBACK if error is not None else NO_ENDPOINT
        return ReplyStatus(state, headline, detail, True)
    if state is SpeakerState.ERROR:
        return ReplyStatus(state, message, message)
    return ReplyStatus(state, message)


class ReplyController(QObject):
    """Speaks typed replies; ``spoken(text)`` once per reply that started playing."""

    spoken = Signal(str)
    status_changed = Signal(object)  # ReplyStatus
    endpoint_changed = Signal()  # the app's replies endpoint came or went
    endpoint_used = Signal()  # a reply was spoken through the app's replies endpoint

    def __init__(self, settings: Settings | SettingsStore, *,
                 sink_factory: SinkFactory = Player,
                 connector_factory: ConnectorFactory | None = None,
                 local_voice: LocalVoice | None = None,
                 local_voice_factory: LocalVoiceFactory = _qt_local_voice,
                 rendering_voice_factory: RenderingVoiceFactory = rendering_voice,
                 idle_close_seconds: float = IDLE_CLOSE_SECONDS,
                 parent: QObject | None = None) -> None:
        """``rendering_voice_factory`` makes this computer's voice play through the open
        output (None: nothing here can render it). Where it cannot, ``local_voice`` speaks
        on the default output; without it ``local_voice_factory`` makes one (the platform
        voice through QtTextToSpeech) on first need."""
        super().__init__(parent)
        self._settings = settings.settings if isinstance(settings, SettingsStore) else settings
        self._sink_factory = sink_factory
        self._connector_factory = connector_factory or self._signed_connector
        self._voice: LocalVoice | None = local_voice
        self._voice_factory: LocalVoiceFactory | None = local_voice_factory
        self._rendering_factory = rendering_voice_factory
        self._rendered: LocalVoice | None = None  # this computer's voice on ``self.sink``
        self._rendered_sink: OutputSink | None = None
        self.idle_close_seconds = idle_close_seconds
        self.speaker: Speaker | None = None
        self.sink: OutputSink | None = None
        self._sink_device: str | None = None
        self._endpoint: tuple[str, AwsSettings] | None = None  # what the connector is for
        self.endpoint_override: str | None = None  # a replies endpoint the app serves
        self._connector: Connector | None = None
        self._endpoint_problem: str | None = None  # the readable reason, when set
        self._sink_problem: str | None = None
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        self._generation = 0  # bumped by stop(): replies queued before it are dropped
        self._held: int | None = None  # generation of a reply taken but not yet under way
        self.status = ReplyStatus(SpeakerState.IDLE, "Ready.")

    @property
    def tts(self) -> TtsSettings:
        return self._settings.tts

    @property
    def endpoint(self) -> str:
        """The voice endpoint replies use now: the app's own while it serves, else the
        settings' ("" = this computer's voice)."""
        return self.endpoint_override or self.tts.endpoint

    def set_endpoint_override(self, endpoint: str | None) -> None:
        """Speak through (or, with None, no longer through) an endpoint the app started;
        from the next reply on."""
        if endpoint != self.endpoint_override:
            log.info("= replies endpoint: %s", endpoint or "from settings")
            self.endpoint_override = endpoint
            self.endpoint_changed.emit()

    # --- the API the reply box and the app use --------------------------------

    def say(self, text: str) -> bool:
        """Queue ``text`` (spoken after the replies before it); False when it is blank.

        Needs the running (qasync) loop."""
        text = text.strip()
        if not text:
            return False
        if self._worker is None or self._worker.done():
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # a programming error, never the user's: keep the text
                log.error("! reply asked for outside the event loop")
                return False
            self._worker = loop.create_task(self._run())
        self._queue.put_nowait(text)
        return True

    def stop(self) -> None:
        """Stop the reply being spoken (or still being prepared) and drop the queued ones."""
        stopping = self.busy
        self._generation += 1
        while not self._queue.empty():
            self._queue.get_nowait()
        if self.speaker is not None:
            self.speaker.stop()
        if stopping:
            self._publish(ReplyStatus(SpeakerState.IDLE, "Stopped."))

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    @property
    def busy(self) -> bool:
        """A reply is queued, being prepared or being spoken: there is something to stop.

        The worker holds a reply for a while before the speaker's status says so (the
        output can take seconds to open), so the status alone is not enough."""
        return self.status.busy or self.pending > 0 or self._held == self._generation

    async def aclose(self) -> None:
        """Stop, end the worker and release the output device (on quit)."""
        self.stop()
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        if self.speaker is not None:
            await self.speaker.aclose()
        await self._close_sink()
        voice, self._voice = self._voice, None
        close = getattr(voice, "close", None)
        if callable(close):
            close()  # Qt objects go on the GUI thread, not whenever GC runs

    # --- worker ------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            try:
                text = await asyncio.wait_for(self._queue.get(), self.idle_close_seconds)
            except TimeoutError:
                await self._close_sink()  # idle: give the sound card back
                text = await self._queue.get()
            generation = self._held = self._generation
            try:
                speaker = await self._prepare()
                if generation != self._generation:  # stopped while the output was opening
                    if self.status.busy:  # "Opening…" came after "Stopped."
                        self._publish(ReplyStatus(SpeakerState.IDLE, "Stopped."))
                    continue
                await speaker.speak(text)
                failure = self.sink.failure if self.sink is not None else None
                if failure is not None:  # the next reply opens the output again
                    self._publish(ReplyStatus(SpeakerState.ERROR, OUTPUT_GONE,
                                              f"The audio output {failure}."))
            except asyncio.CancelledError:
                raise
            except Exception:  # never let one reply end the worker
                log.exception("! reply failed")
                self._publish(ReplyStatus(SpeakerState.ERROR,
                                          "The reply could not be spoken (see the log)."))
            finally:
                self._held = None

    async def _prepare(self) -> Speaker:
        """Bring the speaker in line with the settings before a reply."""
        tts = self.tts
        config = self._config(tts)
        endpoint = self.endpoint
        if (endpoint, self._settings.aws) != self._endpoint or self.speaker is None:
            self._endpoint = endpoint, replace(self._settings.aws)
            try:
                self._connector = self._connector_factory(endpoint)
                self._endpoint_problem = None
            except ValueError as exc:
                log.warning("! voice endpoint setting: %s", exc)
                self._connector, self._endpoint_problem = None, str(exc)
        connector = self._connector
        # Every reply goes through our player when it can (this computer's voice too,
        # rendered to audio), so the captures know what it played and cancel it.
        await self._ensure_sink(tts.output_device)
        if self.sink is None:
            connector = None  # endpoint audio would have nowhere to go
        voice = self._voice_on_sink(tts.language) or self._local_voice(tts.language)
        if self.speaker is None:
            self.speaker = Speaker(connector, self.sink, config, local_voice=voice,
                                   on_status=self._on_status, on_spoken=self._on_spoken)
        else:
            self.speaker.connector, self.speaker.sink = connector, self.sink
            self.speaker.config, self.speaker.local_voice = config, voice
        return self.speaker

    def _signed_connector(self, endpoint: str) -> Connector | None:
        """The voice endpoint's connector; a SageMaker one signs with the credentials the
        settings name (keys in the OS keyring, or a profile) as captions do, its own
        ``profile=`` first (boto3's default chain alone never sees the keyring)."""
        if not endpoint.strip():
            return None
        aws, spec = self._settings.aws, tts_endpoint(endpoint)
        return connector_for(spec, default_region=aws.region, credentials_provider=provider_for(
            spec.profile or aws.profile, aws.use_keyring))

    @staticmethod
    def _config(tts: TtsSettings) -> SessionConfig:
        try:
            return SessionConfig(voice=tts.voice, language=tts.language)
        except InvalidRequest as exc:
            log.warning("! %s; using the default voice and language", exc)
            default = TtsSettings()
            return SessionConfig(voice=default.voice, language=default.language)

    async def _ensure_sink(self, device: str | None) -> None:
        device = device or None
        if (self.sink is not None and device == self._sink_device
                and self.sink.failure is None):
            return
        await self._close_sink()
        sink = self._sink_factory(device)
        # Opening can take seconds (the device warms up): say so, so the reply reads as
        # under way and Esc or Stop can drop it.
        self._publish(ReplyStatus(SpeakerState.CONNECTING, OPENING_OUTPUT))
        try:
            await sink.open()
        except PlaybackError as exc:
            log.warning("! audio output: %s", exc)
            self._sink_problem = str(exc)
            with contextlib.suppress(PlaybackError):
                await sink.close()
            return
        self.sink, self._sink_device, self._sink_problem = sink, device, None

    async def _close_sink(self) -> None:
        sink, self.sink = self.sink, None
        if sink is not None:
            if self.speaker is not None and self.speaker.sink is sink:
                self.speaker.sink = None
            await sink.close()

    def _voice_on_sink(self, language: str) -> LocalVoice | None:
        """This computer's voice played through the open output, if it can be."""
        sink = self.sink
        if sink is None:
            return None
        if self._rendered_sink is not sink:
            self._rendered, self._rendered_sink = self._rendering_factory(sink, language), sink
            log.info("= this computer's voice on the reply output: %s",
                     self._rendered.name if self._rendered else "none can render it")
        return _speaking(self._rendered, language)

    def _local_voice(self, language: str) -> LocalVoice | None:
        if self._voice is None and self._voice_factory is not None:
            try:
                self._voice = self._voice_factory(language)
            except Exception:  # a platform without any speech engine
                log.exception("! this computer's voice is unavailable")
                self._voice_factory = None
                return None
        return _speaking(self._voice, language)

    # --- speaker callbacks --------------------------------------------------------

    def _setup_problem(self) -> tuple[str, str] | None:
        """(headline, reason) when the settings keep the endpoint out of use."""
        if self._endpoint_problem is not None:
            return BAD_ENDPOINT, self._endpoint_problem
        chosen = bool(self.tts.output_device)
        if self._sink_problem is not None and (self._connector is not None or chosen):
            return NO_OUTPUT, self._sink_problem
        if (self._connector is None and chosen and self.sink is not None
                and self._rendered_sink is self.sink and self._rendered is None):
            return DEFAULT_OUTPUT_ONLY, (
                f"Nothing on this computer can play its voice on {self.tts.output_device}: "
                "set a voice endpoint, or install espeak-ng.")
        return None

    def _on_status(self, status: SpeakerStatus) -> None:
        self._held = None  # the speaker has the reply: its status now says whether it is busy
        problem = self._setup_problem()
        reply = describe(status, problem[0] if problem else None)
        if problem is not None and (reply.local_voice or status.message == "Ready."):
            # the reason stays on the status line until the setting is fixed
            reply = ReplyStatus(status.state, problem[0], problem[1], True)
        self._publish(reply)

    def _on_spoken(self, reply: SpokenReply) -> None:
        log.info("= reply spoken via %s (%d characters)", reply.via, len(reply.text))
        self.spoken.emit(reply.text)
        if reply.via == "endpoint" and self.endpoint_override:
            self.endpoint_used.emit()  # its idle countdown starts again

    def _publish(self, status: ReplyStatus) -> None:
        self.status = status
        self.status_changed.emit(status)
