"""Errors of the audio layer, all user-readable.

    CaptionerError
    └── AudioError
        ├── DeviceNotFound   no device matches what the user asked for (lists the real ones)
        ├── CaptureError     a stream could not open, or failed/stalled while running
        ├── AudioFileError   a file that cannot be read as audio
        └── PlaybackError    an output device cannot be found or opened (audio.playback)
"""

from __future__ import annotations

from captioner.errors import CaptionerError


class AudioError(CaptionerError):
    """Root of the audio errors; ``str(exc)`` is meant for the user."""


class DeviceNotFound(AudioError):
    """The requested device does not exist; ``available`` holds the names that do."""

    def __init__(self, message: str, available: list[str] | None = None):
        super().__init__(message)
        self.available = list(available or [])


class CaptureError(AudioError):
    """A capture stream failed to open, errored, or stopped delivering audio."""


class AudioFileError(AudioError):
    """A file is missing, unreadable, or not in a supported audio format."""
