"""Sessions glue the Realtime protocol to a transport and an audio source."""

from captioner.session.caption_session import (
    CaptionSession,
    SessionOptions,
    SessionState,
    SessionStats,
    SessionStatus,
)
from captioner.session.errors import SessionError, SessionFailed

__all__ = [
    "CaptionSession",
    "SessionError",
    "SessionFailed",
    "SessionOptions",
    "SessionState",
    "SessionStats",
    "SessionStatus",
]
