"""A local vLLM-Omni-compatible ``/v1/audio/speech/stream`` server, for tests
(docs/speech-stream-protocol.md).

Protocol-exact: ``session.config`` first (within ``config_timeout``), then
``input.text``…/``input.done``; per sentence ``audio.start``, PCM s16le mono
24 kHz (binary frames, or ``audio.chunk`` JSON), ``audio.done``; then
``session.done``. Two styles: close after ``session.done`` (older servers) or
keep the session open until ``session.close`` (newer). Idle timeout while not
generating. Audio is deterministic — a chirp per sentence — and can be paced so
chunks arrive over time. Errors can be injected mid-reply, and the server can
stall. Every send is time-stamped (``time.monotonic``) in :class:`OmniSession`.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pytest
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from captioner.tts.errors import ProtocolError
from captioner.tts.events import (
    AudioChunk,
    AudioDone,
    AudioStart,
    Error,
    InputDone,
    InputText,
    SessionClose,
    SessionConfig,
    SessionDone,
    decode_client_event,
    encode,
)

PATH = "/v1/audio/speech/stream"
RATE = 24_000
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")


@dataclass
class OmniBehavior:
    keep_open: bool = False  # newer servers wait for session.close after session.done
    config_timeout: float = 10.0
    idle_timeout: float = 30.0
    chunk_ms: float = 40.0
    realtime_factor: float = 0.0  # wall seconds per second of audio; 0 = as fast as possible
    seconds_per_char: float = 0.03
    min_sentence_seconds: float = 0.3
    b64_chunks: bool = False  # audio.chunk JSON instead of binary frames
    fail_sentence: int | None = None  # error + audio.done error=true halfway through it
    stall_after_sentences: int | None = None  # go silent after this many sentences
    close_after_sentences: int | None = None  # close the stream (no session.done) after these


def sentence_pcm(text: str, index: int, behavior: OmniBehavior) -> bytes:
    """Deterministic audio for one sentence: a chirp whose range depends on ``index``."""
    seconds = max(behavior.min_sentence_seconds, len(text) * behavior.seconds_per_char)
    n = int(RATE * seconds)
    t = np.arange(n) / RATE
    f0, f1 = 300.0 + 40.0 * (index % 8), 1200.0 + 60.0 * (index % 8)
    phase = 2 * np.pi * (f0 * t + (f1 - f0) * t**2 / (2 * seconds))
    fade = np.minimum(1.0, np.minimum(t, seconds - t) / 0.01)
    return (0.4 * np.sin(phase) * fade * 32767).astype("<i2").tobytes()


@dataclass
class OmniSession:
    """What happened on one connection, for assertions."""

    config: SessionConfig | None = None
    texts: list[str] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    pcm: bytearray = field(default_factory=bytearray)
    received: list[str] = field(default_factory=list)  # event types, in order
    sent: list[tuple[float, str]] = field(default_factory=list)  # (monotonic, type)
    first_chunk_sent_at: float | None = None
    last_chunk_sent_at: float | None = None
    closed_by: str | None = None  # "client" | "server"
    errors_sent: list[str] = field(default_factory=list)
    ended: threading.Event = field(default_factory=threading.Event)


class OmniServer:
    def __init__(self, behavior: OmniBehavior | None = None, host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self.behavior = behavior or OmniBehavior()
        self.host, self.port = host, port
        self.sessions: list[OmniSession] = []
        self._server: Server | None = None

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}{PATH}"

    async def start(self) -> OmniServer:
        self._server = await serve(self._handle, self.host, self.port,
                                   process_request=self._route, max_size=2**20)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> OmniServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @staticmethod
    def _route(conn: ServerConnection, request: Request) -> Response | None:
        if request.path.split("?")[0] != PATH:
            return conn.respond(404, "not found\n")
        return None

    async def _handle(self, ws: ServerConnection) -> None:
        session = OmniSession()
        self.sessions.append(session)
        try:
            await _Session(ws, self.behavior, session).run()
        except ConnectionClosed:
            session.closed_by = session.closed_by or "client"
        finally:
            session.ended.set()


class _Session:
    def __init__(self, ws: ServerConnection, behavior: OmniBehavior, record: OmniSession):
        self.ws, self.b, self.rec = ws, behavior, record
        self.buffer = ""
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.generating = False
        self.index = 0
        self.done_sentences = 0
        self.audio_clock: float | None = None  # wall time when audio position 0 is due
        self.audio_pos = 0.0  # seconds of audio sent so far

    async def send(self, event: AudioStart | AudioChunk | AudioDone | SessionDone | Error) -> None:
        await self.ws.send(encode(event))
        self.rec.sent.append((time.monotonic(), event.type))

    async def error(self, message: str) -> None:
        self.rec.errors_sent.append(message)
        await self.send(Error(message))

    async def close(self) -> None:
        self.rec.closed_by = self.rec.closed_by or "server"
        await self.ws.close()

    async def run(self) -> None:
        try:
            first = await asyncio.wait_for(self.ws.recv(), self.b.config_timeout)
        except TimeoutError:
            await self.error("session.config not received within the timeout")
            await self.close()
            return
        try:
            config = decode_client_event(first)
        except ProtocolError as exc:
            config = None
            reason = str(exc)
        else:
            reason = "the first message must be session.config"
        if not isinstance(config, SessionConfig):
            await self.error(reason)
            await self.close()
            return
        self.rec.config = config
        self.rec.received.append(config.type)
        generator = asyncio.create_task(self.generate())
        try:
            await self.receive_loop()
        finally:
            generator.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await generator

    async def receive_loop(self) -> None:
        while True:
            try:
                frame = await asyncio.wait_for(self.ws.recv(), self.b.idle_timeout)
            except TimeoutError:
                if self.generating or not self.queue.empty():
                    continue
                await self.error(f"idle timeout: no input for {self.b.idle_timeout:g} s")
                await self.close()
                return
            try:
                event = decode_client_event(frame)
            except ProtocolError as exc:
                await self.error(str(exc))
                continue
            self.rec.received.append(event.type)
            if isinstance(event, InputText):
                self.rec.texts.append(event.text)
                self.buffer += event.text
                parts = _SENTENCE.split(self.buffer)
                self.buffer = parts.pop()
                for part in parts:
                    if part.strip():
                        self.queue.put_nowait(part.strip())
            elif isinstance(event, InputDone):
                if self.buffer.strip():
                    self.queue.put_nowait(self.buffer.strip())
                self.buffer = ""
                self.queue.put_nowait(None)  # end of this input: session.done after it
            elif isinstance(event, SessionClose):
                self.rec.closed_by = self.rec.closed_by or "client"
                await self.ws.close()
                return
            elif isinstance(event, SessionConfig):
                await self.error("session.config may only be sent once")

    async def generate(self) -> None:
        while True:
            sentence = await self.queue.get()
            self.generating = True
            try:
                if sentence is None:
                    if not self.b.keep_open:  # this style closes right after session.done
                        self.rec.closed_by = self.rec.closed_by or "server"
                    await self.send(SessionDone(total_sentences=self.index))
                    if not self.b.keep_open:
                        await self.close()
                        return
                    continue
                if (self.b.stall_after_sentences is not None
                        and self.done_sentences >= self.b.stall_after_sentences):
                    await asyncio.Event().wait()  # hang until the client gives up
                if (self.b.close_after_sentences is not None
                        and self.done_sentences >= self.b.close_after_sentences):
                    await self.close()
                    return
                await self.sentence(sentence)
            finally:
                self.generating = False

    async def sentence(self, text: str) -> None:
        i = self.index
        self.index += 1
        self.rec.sentences.append(text)
        pcm = sentence_pcm(text, i, self.b)
        await self.send(AudioStart(i, text, "pcm", RATE))
        step = max(2, int(RATE * self.b.chunk_ms / 1000) * 2)
        fail_at = len(pcm) // 2 if self.b.fail_sentence == i else None
        chunks = [pcm[k:k + step] for k in range(0, fail_at or len(pcm), step)]
        if not self.b.realtime_factor or self.audio_clock is None:
            self.audio_clock = time.monotonic()
            self.audio_pos = 0.0
        sent = 0
        for chunk in chunks:
            if self.b.realtime_factor:
                due = self.audio_clock + self.audio_pos * self.b.realtime_factor
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)  # pacing: the server "generates" in real time
            if self.b.b64_chunks:
                await self.ws.send(encode(AudioChunk(chunk, i)))
            else:
                await self.ws.send(chunk)
            now = time.monotonic()
            self.rec.sent.append((now, "pcm"))
            if self.rec.first_chunk_sent_at is None:
                self.rec.first_chunk_sent_at = now
            self.rec.last_chunk_sent_at = now
            self.rec.pcm += chunk
            sent += len(chunk)
            self.audio_pos += len(chunk) / 2 / RATE
        if fail_at is not None:
            await self.error(f"generation failed for sentence {i}")
            await self.send(AudioDone(i, sent, error=True))
        else:
            await self.send(AudioDone(i, sent, error=False))
        self.done_sentences += 1


class ThreadedOmniServer:
    """An :class:`OmniServer` on its own loop in a thread, usable from any test style."""

    def __init__(self, behavior: OmniBehavior | None = None) -> None:
        self.server = OmniServer(behavior)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                        name="omni-server")

    def __enter__(self) -> ThreadedOmniServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def behavior(self) -> OmniBehavior:
        return self.server.behavior

    @property
    def sessions(self) -> list[OmniSession]:
        return self.server.sessions


@pytest.fixture
def omni_server() -> Iterator[ThreadedOmniServer]:
    """A local vLLM-Omni speech-stream server; set ``.behavior`` fields before connecting."""
    with ThreadedOmniServer() as server:
        yield server
