"""Typed events of the vLLM Realtime protocol (docs/realtime-protocol.md) and their JSON.

Decoding never raises anything but :class:`ProtocolError`, whatever the input,
so a session can log and count a bad frame and carry on.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from captioner.jsonevents import MISSING, dump_event, load_event, read_field
from captioner.realtime.errors import ProtocolError

ERROR_CODES = (
    "invalid_json",
    "invalid_event",
    "model_not_found",
    "invalid_audio",
    "model_not_validated",
    "unknown_event",
    "processing_error",
)


# --- client → server -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionUpdate:
    type: ClassVar[str] = "session.update"
    model: str

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise ProtocolError("session.update needs a non-empty 'model'", "invalid_event")

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "model": self.model}


@dataclass(frozen=True, slots=True)
class AudioAppend:
    type: ClassVar[str] = "input_audio_buffer.append"
    audio: bytes  # little-endian PCM16, 16 kHz mono

    def __post_init__(self) -> None:
        if not isinstance(self.audio, bytes | bytearray):
            raise ProtocolError("audio must be bytes", "invalid_audio")
        if len(self.audio) % 2:
            raise ProtocolError("PCM16 audio must have an even byte count", "invalid_audio")

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "audio": base64.b64encode(self.audio).decode("ascii")}


@dataclass(frozen=True, slots=True)
class AudioCommit:
    type: ClassVar[str] = "input_audio_buffer.commit"
    final: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.final, bool):
            raise ProtocolError("'final' must be a boolean", "invalid_event")

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "final": True} if self.final else {"type": self.type}


ClientEvent = SessionUpdate | AudioAppend | AudioCommit


# --- server → client -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionCreated:
    type: ClassVar[str] = "session.created"
    id: str
    created: int

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "id": self.id, "created": self.created}


@dataclass(frozen=True, slots=True)
class TranscriptionDelta:
    type: ClassVar[str] = "transcription.delta"
    delta: str

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "delta": self.delta}


@dataclass(frozen=True, slots=True)
class TranscriptionLive:
    """Our extension (never sent by vLLM): the running request's unconfirmed text.

    It follows the request's deltas so far and replaces the previous one (it is
    not appended); later deltas may confirm it, change it or drop it. "" clears it.
    """

    type: ClassVar[str] = "captioner.transcription.live"
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "text": self.text}


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True, slots=True)
class TranscriptionDone:
    type: ClassVar[str] = "transcription.done"
    text: str
    usage: Usage = field(default_factory=Usage)

    def to_json(self) -> dict[str, Any]:
        u = self.usage
        return {
            "type": self.type,
            "text": self.text,
            "usage": {
                "prompt_tokens": u.prompt_tokens,
                "completion_tokens": u.completion_tokens,
                "total_tokens": u.total_tokens,
            },
        }


@dataclass(frozen=True, slots=True)
class ServerError:
    type: ClassVar[str] = "error"
    error: str
    code: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "error": self.error}
        if self.code is not None:
            out["code"] = self.code
        return out


ServerEvent = (SessionCreated | TranscriptionDelta | TranscriptionLive | TranscriptionDone
               | ServerError)
Event = ClientEvent | ServerEvent


_APPEND_HEAD = '{"type":"input_audio_buffer.append","audio":"'


def encode(event: Event) -> str:
    """One text frame for ``event``."""
    if type(event) is AudioAppend:  # the hot path: ~8 per second, base64 needs no escaping
        return f'{_APPEND_HEAD}{base64.b64encode(event.audio).decode("ascii")}"}}'
    return dump_event(event.to_json())


# --- decoding ---------------------------------------------------------------


def _load(frame: str | bytes) -> dict[str, Any]:
    return load_event(frame, ProtocolError)


def _field(obj: dict[str, Any], name: str, kind: type | tuple[type, ...],
           default: Any = MISSING) -> Any:
    return read_field(obj, name, kind, ProtocolError, default)


def decode_client_event(frame: str | bytes) -> ClientEvent:
    """Parse a client frame (server side). Raises only ProtocolError."""
    obj = _load(frame)
    kind = obj["type"]
    if kind == SessionUpdate.type:
        return SessionUpdate(model=_field(obj, "model", str))
    if kind == AudioAppend.type:
        raw = _field(obj, "audio", str)
        try:
            audio = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ProtocolError("audio is not valid base64", "invalid_audio") from exc
        return AudioAppend(audio=audio)
    if kind == AudioCommit.type:
        return AudioCommit(final=_field(obj, "final", bool, False))
    raise ProtocolError(f"unknown event type {kind!r}", "unknown_event")


def decode_server_event(frame: str | bytes) -> ServerEvent:
    """Parse a server frame (client side). Raises only ProtocolError."""
    obj = _load(frame)
    kind = obj["type"]
    if kind == TranscriptionDelta.type:
        return TranscriptionDelta(delta=_field(obj, "delta", str))
    if kind == TranscriptionLive.type:
        return TranscriptionLive(text=_field(obj, "text", str))
    if kind == TranscriptionDone.type:
        raw_usage = _field(obj, "usage", dict, {})
        usage = Usage(**{
            k: v for k, v in raw_usage.items()
            if k in Usage.__slots__ and isinstance(v, int) and not isinstance(v, bool)
        })
        return TranscriptionDone(text=_field(obj, "text", str, ""), usage=usage)
    if kind == SessionCreated.type:
        created = _field(obj, "created", (int, float), 0)
        try:
            created = int(created)
        except (OverflowError, ValueError) as exc:  # inf / nan
            raise ProtocolError("session.created: bad 'created'", "invalid_event") from exc
        return SessionCreated(id=_field(obj, "id", str, ""), created=created)
    if kind == ServerError.type:
        message = obj.get("error", obj.get("message", ""))
        if isinstance(message, dict):  # OpenAI-style nested error object
            message = message.get("message", json.dumps(message))
        code = obj.get("code")
        return ServerError(error=str(message), code=code if isinstance(code, str) else None)
    raise ProtocolError(f"unknown event type {kind!r}", "unknown_event")
