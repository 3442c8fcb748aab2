"""Composition root below the UI: settings in, a running caption session out.

The CLI (`captioner listen`) and the GUI both use :class:`Captioner`, so the
endpoint choice, the embedded engine and the audio source are wired in one place.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from captioner.engine.access import new_token
from captioner.engine.model_paths import EngineError
from captioner.engine.server import RealtimeServer
from captioner.engine.transcriber import TranscriberFactory
from captioner.logs import REDACTOR
from captioner.realtime.captions import CaptionModel, CaptionUpdate
from captioner.session import CaptionSession, SessionFailed, SessionOptions, SessionStatus
from captioner.settings import RecognitionSettings, Settings
from captioner.transport.base import Connector, EndpointError
from captioner.transport.endpoint_url import EndpointSpec, connector_for, parse_endpoint
from captioner.transport.websocket import websocket_connector

log = logging.getLogger(__name__)

EMBEDDED_MODEL = "whisper-local"


class AudioSource(Protocol):
    level_dbfs: float

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    def chunks(self) -> AsyncIterator[bytes]: ...


EngineLoader = Callable[[RecognitionSettings], TranscriberFactory]


class EngineUnavailable(EngineError):
    """The on-device model could not load; ``str()`` says why, for the user."""


def load_whisper(recognition: RecognitionSettings) -> TranscriberFactory:
    """The production loader: faster-whisper with the configured model (blocking)."""
    from captioner.engine.whisper import WhisperEngine  # heavy import, on demand

    return WhisperEngine.from_settings(recognition).new_transcriber


class EmbeddedEngine:
    """The on-device engine behind a loopback Realtime server, in this process.

    The model loads in a worker thread on first use, and again when Settings →
    Recognition names another model or language (the settings object is updated in
    place, so the next ``url()`` sees the choice); the same session code then talks
    to it over a real WebSocket like to any other endpoint. ``load`` (blocking, run
    in a thread) returns the transcriber factory. Its URL carries a fresh random
    token (kept out of the logs), so neither a web page nor another program scanning
    local ports can use it.
    """

    def __init__(self, settings: Settings, load: EngineLoader = load_whisper) -> None:
        self._recognition = settings.recognition
        self._load = load
        self._server: RealtimeServer | None = None
        self._loaded: tuple[object, ...] | None = None  # the choice the server runs
        self._lock = asyncio.Lock()

    @property
    def ready(self) -> bool:
        """The chosen model is loaded and its server listens (``url()`` returns at once)."""
        return self._server is not None and self._loaded == _model_choice(self._recognition)

    async def url(self) -> str:
        """Load the chosen model if it is not the one running. Raises :class:`EngineUnavailable`."""
        async with self._lock:
            if self._server is not None and not self.ready:
                log.info("= the speech model setting changed: loading it")
                await self.close()
            if self._server is None:
                loop = asyncio.get_running_loop()
                recognition = dataclasses.replace(self._recognition)  # as it is now
                try:
                    factory = await loop.run_in_executor(None, self._load, recognition)
                except EngineError as exc:  # missing, incomplete or altered model: a sentence
                    log.error("! embedded engine: %s", exc)
                    raise EngineUnavailable(str(exc)) from exc
                except Exception as exc:  # a broken wheel, no memory …
                    log.exception("! loading the embedded engine")
                    raise EngineUnavailable(
                        f"The on-device speech model could not load: {exc}") from exc
                token = new_token()
                REDACTOR.add(token)
                self._server = await RealtimeServer(
                    factory, models={EMBEDDED_MODEL}, workers=1, token=token
                ).start()
                self._loaded = _model_choice(recognition)
            return self._server.url

    async def close(self) -> None:
        if self._server is not None:
            await self._server.stop()
            self._server = None
            self._loaded = None


def _model_choice(rec: RecognitionSettings) -> tuple[object, ...]:
    """What the loaded engine depends on: a change to any of these needs a new load."""
    return (rec.whisper_model_dir, rec.whisper_model, rec.whisper_language,
            rec.whisper_threads)


# The on-device engine has no server-side stall (the watchdog's reason to exist): when it
# says nothing, not even live words, for seconds of sound it is behind on a busy CPU, and
# a restart would only add the replayed audio to its work. Its watchdog waits longer.
EMBEDDED_STALL_SECONDS = 15.0


def session_options(settings: Settings, spec: EndpointSpec, *, fail_fast: bool = False
                    ) -> SessionOptions:
    rec = settings.recognition
    embedded = spec.kind == "embedded"
    return SessionOptions(
        model=EMBEDDED_MODEL if embedded else rec.model,
        chunk_bytes=settings.audio.chunk_bytes,
        rotate_after_seconds=rec.rotate_after_seconds,
        stall_seconds=max(rec.stall_seconds, EMBEDDED_STALL_SECONDS) if embedded
        else rec.stall_seconds,
        outage_buffer_seconds=rec.outage_buffer_seconds,
        fail_fast=fail_fast,
    )


def make_connector(spec: EndpointSpec, settings: Settings, embedded: EmbeddedEngine
                   ) -> Connector:
    if spec.kind != "embedded":
        from captioner.aws import provider_for

        provider = None
        if spec.kind == "sagemaker":
            aws = settings.aws
            provider = provider_for(spec.profile or aws.profile, aws.use_keyring)
        return connector_for(spec, credentials_provider=provider,
                             default_region=settings.aws.region)

    async def open_embedded():
        # The first call loads the model; audio captured meanwhile waits in the session.
        try:
            url = await embedded.url()
        except EngineUnavailable as exc:
            raise EndpointError(str(exc), retryable=False) from exc
        return await websocket_connector(url)()

    return open_embedded


class Captioner:
    """One captioning run: an audio source feeding a session on the chosen endpoint."""

    def __init__(
        self,
        settings: Settings,
        source: AudioSource,
        *,
        embedded: EmbeddedEngine | None = None,
        endpoint: str | None = None,
        captions: CaptionModel | None = None,
        on_update: Callable[[CaptionUpdate], None] | None = None,
        on_status: Callable[[SessionStatus], None] | None = None,
        fail_fast: bool = False,
    ) -> None:
        self.settings = settings
        self.spec = parse_endpoint(endpoint or settings.recognition.endpoint)
        self.source = source
        self.embedded = embedded or EmbeddedEngine(settings)
        self._own_engine = embedded is None
        self.session = CaptionSession(
            make_connector(self.spec, settings, self.embedded),
            session_options(settings, self.spec, fail_fast=fail_fast),
            captions=captions,
            on_update=on_update,
            on_status=on_status,
        )

    async def run(self) -> CaptionModel:
        """Capture and caption until the source ends or :meth:`stop`. Raises SessionFailed."""
        await self.source.start()
        try:
            return await self.session.run(self.source.chunks())
        finally:
            await self.source.stop()
            self.session.stats.dropped_frames = getattr(self.source, "dropped_chunks", 0)
            if self._own_engine:
                await self.embedded.close()

    def switch(self, settings: Settings, endpoint: str) -> None:
        """Caption on ``endpoint``, with ``settings``' recognition options, from now on:
        the session goes on (see :meth:`CaptionSession.switch`). Raises ValueError for
        an endpoint that cannot be parsed."""
        self.settings, self.spec = settings, parse_endpoint(endpoint)
        self.session.switch(make_connector(self.spec, settings, self.embedded),
                            session_options(settings, self.spec))

    def stats_summary(self) -> str:
        return self.session.stats.summary()

    def stop(self) -> None:
        """Graceful: the session finishes with what was captured; run() closes the source."""
        self.session.stop()


__all__ = ["Captioner", "EmbeddedEngine", "EngineUnavailable", "SessionFailed",
           "make_connector", "session_options"]
