"""Typed events of the vLLM-Omni streaming speech protocol and their JSON
(docs/speech-stream-protocol.md).

Client → server: :class:`SessionConfig` (first, within 10 s), :class:`InputText`
(≤128 KiB each), :class:`InputDone`, :class:`SessionClose`.
Server → client: :class:`AudioStart`, raw PCM (binary frames, or :class:`AudioChunk`
with ``audio_b64``), :class:`AudioDone`, :class:`SessionDone`, :class:`Error`.

Events validate when constructed (:class:`InvalidRequest`); decoding raises only
:class:`ProtocolError`, whatever the input.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass
from typing import Any, ClassVar

from captioner.jsonevents import MISSING, dump_event, load_event, read_field
from captioner.tts.errors import InvalidRequest, ProtocolError

VOICES = ("aiden", "dylan", "eric", "ono_anna", "ryan", "serena", "sohee", "uncle_fu", "vivian")
LANGUAGES = (
    "Auto", "Chinese", "English", "Japanese", "Korean", "German",
    "French", "Russian", "Portuguese", "Spanish", "Italian",
)
RESPONSE_FORMATS = ("pcm", "wav", "mp3", "flac", "aac", "opus")
MAX_TEXT_BYTES = 128 * 1024  # per input.text message, UTF-8
SAMPLE_RATE = 24_000  # PCM s16le mono


# --- client → server -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionConfig:
    type: ClassVar[str] = "session.config"
    voice: str
    language: str = "Auto"
    response_format: str = "pcm"
    stream_audio: bool = True
    speed: float = 1.0
    instructions: str | None = None
    task_type: str | None = None

    def __post_init__(self) -> None:
        if self.voice not in VOICES:
            raise InvalidRequest(f"unknown voice {self.voice!r}; choose one of {', '.join(VOICES)}")
        if self.language not in LANGUAGES:
            raise InvalidRequest(
                f"unknown language {self.language!r}; choose one of {', '.join(LANGUAGES)}"
            )
        if self.response_format not in RESPONSE_FORMATS:
            raise InvalidRequest(f"unknown response format {self.response_format!r}")
        if not isinstance(self.stream_audio, bool):
            raise InvalidRequest("stream_audio must be true or false")
        speed = self.speed
        if isinstance(speed, bool) or not isinstance(speed, int | float) or not (
            math.isfinite(speed) and 0.25 <= speed <= 4.0
        ):
            raise InvalidRequest(f"speed must be between 0.25 and 4.0, not {speed!r}")
        if self.stream_audio and (self.response_format != "pcm" or speed != 1.0):
            raise InvalidRequest("streamed audio needs response_format 'pcm' and speed 1.0")
        for name in ("instructions", "task_type"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise InvalidRequest(f"{name} must be text")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "voice": self.voice,
            "language": self.language,
            "response_format": self.response_format,
            "stream_audio": self.stream_audio,
        }
        if self.speed != 1.0:
            out["speed"] = self.speed
        if self.instructions is not None:
            out["instructions"] = self.instructions
        if self.task_type is not None:
            out["task_type"] = self.task_type
        return out


@dataclass(frozen=True, slots=True)
class InputText:
    type: ClassVar[str] = "input.text"
    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise InvalidRequest("input.text needs text")
        if len(self.text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
            raise InvalidRequest("one input.text message may hold at most 128 KiB; split it")

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "text": self.text}


@dataclass(frozen=True, slots=True)
class InputDone:
    type: ClassVar[str] = "input.done"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type}


@dataclass(frozen=True, slots=True)
class SessionClose:
    type: ClassVar[str] = "session.close"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type}


ClientEvent = SessionConfig | InputText | InputDone | SessionClose


# --- server → client -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AudioStart:
    type: ClassVar[str] = "audio.start"
    sentence_index: int
    sentence_text: str = ""
    format: str = "pcm"
    sample_rate: int = SAMPLE_RATE

    def __post_init__(self) -> None:
        if not 1 <= self.sample_rate <= 768_000:
            raise ProtocolError(f"audio.start: implausible sample rate {self.sample_rate}")

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "sentence_index": self.sentence_index,
            "sentence_text": self.sentence_text,
            "format": self.format,
            "sample_rate": self.sample_rate,
        }


@dataclass(frozen=True, slots=True)
class AudioChunk:
    """PCM s16le mono; from a binary frame or a JSON ``audio.chunk`` (``audio_b64``)."""

    type: ClassVar[str] = "audio.chunk"
    audio: bytes
    sentence_index: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "audio_b64": base64.b64encode(self.audio).decode("ascii"),
        }
        if self.sentence_index is not None:
            out["sentence_index"] = self.sentence_index
        return out


@dataclass(frozen=True, slots=True)
class AudioDone:
    type: ClassVar[str] = "audio.done"
    sentence_index: int
    total_bytes: int = 0
    error: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "sentence_index": self.sentence_index,
            "total_bytes": self.total_bytes,
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class SessionDone:
    type: ClassVar[str] = "session.done"
    total_sentences: int

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "total_sentences": self.total_sentences}


@dataclass(frozen=True, slots=True)
class Error:
    """Non-fatal server error; the session goes on."""

    type: ClassVar[str] = "error"
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "message": self.message}


ServerEvent = AudioStart | AudioChunk | AudioDone | SessionDone | Error
Event = ClientEvent | ServerEvent


def encode(event: Event) -> str:
    """One text frame for ``event``."""
    return dump_event(event.to_json())


# --- decoding ---------------------------------------------------------------


def _load(frame: str | bytes) -> dict[str, Any]:
    return load_event(frame, ProtocolError)


def _field(obj: dict[str, Any], name: str, kind: type, default: Any = MISSING) -> Any:
    return read_field(obj, name, kind, ProtocolError, default)


def decode_server_event(frame: str | bytes) -> ServerEvent:
    """Parse a server text frame (client side). Raises only ProtocolError.

    Binary frames are raw PCM, not events: feed them to the connection's
    ``receive_bytes`` instead.
    """
    obj = _load(frame)
    kind = obj["type"]
    if kind == AudioStart.type:
        return AudioStart(
            sentence_index=_field(obj, "sentence_index", int, 0),
            sentence_text=_field(obj, "sentence_text", str, ""),
            format=_field(obj, "format", str, "pcm"),
            sample_rate=_field(obj, "sample_rate", int, SAMPLE_RATE),
        )
    if kind == AudioChunk.type:
        raw = _field(obj, "audio_b64", str)
        try:
            audio = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ProtocolError("audio.chunk: audio_b64 is not valid base64",
                                "invalid_audio") from exc
        index = _field(obj, "sentence_index", int, None)
        return AudioChunk(audio=audio, sentence_index=index)
    if kind == AudioDone.type:
        return AudioDone(
            sentence_index=_field(obj, "sentence_index", int, 0),
            total_bytes=_field(obj, "total_bytes", int, 0),
            error=bool(_field(obj, "error", bool, False)),
        )
    if kind == SessionDone.type:
        return SessionDone(total_sentences=_field(obj, "total_sentences", int, 0))
    if kind == Error.type:
        message = obj.get("message", obj.get("error", ""))
        if isinstance(message, dict):
            message = message.get("message", json.dumps(message))
        return Error(message=str(message) or "unspecified server error")
    raise ProtocolError(f"unknown event type {kind!r}", "unknown_event")


def decode_client_event(frame: str | bytes) -> ClientEvent:
    """Parse a client frame (server side, used by test servers). Raises only ProtocolError."""
    obj = _load(frame)
    kind = obj["type"]
    try:
        if kind == SessionConfig.type:
            return SessionConfig(
                voice=_field(obj, "voice", str),
                language=_field(obj, "language", str, "Auto"),
                response_format=_field(obj, "response_format", str, "pcm"),
                stream_audio=_field(obj, "stream_audio", bool, True),
                speed=_field(obj, "speed", float, 1.0),
                instructions=_field(obj, "instructions", str, None),
                task_type=_field(obj, "task_type", str, None),
            )
        if kind == InputText.type:
            return InputText(text=_field(obj, "text", str))
        if kind == InputDone.type:
            return InputDone()
        if kind == SessionClose.type:
            return SessionClose()
    except InvalidRequest as exc:
        raise ProtocolError(f"{kind}: {exc}") from exc
    raise ProtocolError(f"unknown event type {kind!r}", "unknown_event")
