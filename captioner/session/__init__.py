"""Sessions glue the Realtime protocol to a transport and an audio source."""

from captioner.session.caption_session import (
    CaptionSession,
    SessionFailed,
    SessionOptions,
    SessionState,
    SessionStats,
    SessionStatus,
)

__all__ = [
    "CaptionSession",
    "SessionFailed",
    "SessionOptions",
    "SessionState",
    "SessionStats",
    "SessionStatus",
]
