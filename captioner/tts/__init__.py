"""Type-to-speak through a vLLM-Omni (Qwen3-TTS) endpoint.

This package root re-exports the sans-I/O core only (events, connection, errors,
text splitting), which imports no asyncio, sockets or Qt. The I/O side lives in
its own modules: :mod:`captioner.tts.speaker` (``Speaker``),
:mod:`captioner.tts.fallback` (``LocalVoice``, espeak-ng), :mod:`captioner.tts.connect`
(``tts_connector``) and :mod:`captioner.tts.sink` (``AudioSink``).
"""

from captioner.tts.errors import (
    EndpointUnavailable,
    GenerationFailed,
    IdleTimeout,
    InvalidRequest,
    InvalidState,
    LocalVoiceError,
    ProtocolError,
    SpeechFailure,
    StreamBroken,
    TtsError,
    UsageError,
)
from captioner.tts.events import (
    LANGUAGES,
    MAX_TEXT_BYTES,
    SAMPLE_RATE,
    VOICES,
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
    decode_server_event,
    encode,
)
from captioner.tts.protocol import BadFrame, ClientConnection, State, StreamEnded
from captioner.tts.text import split_text

__all__ = [
    "LANGUAGES",
    "MAX_TEXT_BYTES",
    "SAMPLE_RATE",
    "VOICES",
    "AudioChunk",
    "AudioDone",
    "AudioStart",
    "BadFrame",
    "ClientConnection",
    "EndpointUnavailable",
    "Error",
    "GenerationFailed",
    "IdleTimeout",
    "InputDone",
    "InputText",
    "InvalidRequest",
    "InvalidState",
    "LocalVoiceError",
    "ProtocolError",
    "SessionClose",
    "SessionConfig",
    "SessionDone",
    "SpeechFailure",
    "State",
    "StreamBroken",
    "StreamEnded",
    "TtsError",
    "UsageError",
    "decode_client_event",
    "decode_server_event",
    "encode",
    "split_text",
]
