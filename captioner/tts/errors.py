"""Why speaking a reply can fail, as one exception tree.

Hierarchy (all derive from :class:`TtsError`, rooted in ``CaptionerError``; ``str()`` is a
sentence a user can read)::

    CaptionerError
    └── TtsError
        ├── ProtocolError         the server sent a frame that is not a valid event (peer's fault)
        ├── UsageError            the caller misused the API (our fault)
        │   ├── InvalidRequest    bad voice, language, speed, text… (also a ValueError)
        │   └── InvalidState      a send that the session state does not allow
        ├── SpeechFailure         the endpoint could not speak a reply
        │   ├── EndpointUnavailable   not configured, refused, unreachable, HTTP error
        │   ├── IdleTimeout           the server went silent for too long
        │   ├── GenerationFailed      the server reported an error while generating
        │   └── StreamBroken          the stream ended or broke before ``session.done``
        ├── LocalVoiceError       the computer's own voice is missing or failed
        └── OutputGone            the audio output went away mid-reply (no fallback: the
                                  computer's voice would play on the same gone output)
"""

from __future__ import annotations

from captioner.errors import CaptionerError


class TtsError(CaptionerError):
    """Root of text-to-speech failures."""


class ProtocolError(TtsError, ValueError):
    """A frame that is not a valid event; ``code`` names the kind of fault."""

    def __init__(self, message: str, code: str = "invalid_event") -> None:
        super().__init__(message)
        self.code = code


class UsageError(TtsError):
    """The caller asked for something the protocol does not allow."""


class InvalidRequest(UsageError, ValueError):
    """An event built with a value the server would refuse."""


class InvalidState(UsageError, RuntimeError):
    """A send that is illegal in the connection's current state."""


class SpeechFailure(TtsError):
    """The voice endpoint could not speak (all or part of) a reply."""


class EndpointUnavailable(SpeechFailure):
    pass


class IdleTimeout(SpeechFailure):
    pass


class GenerationFailed(SpeechFailure):
    pass


class StreamBroken(SpeechFailure):
    pass


class LocalVoiceError(TtsError):
    """No usable platform voice, or it failed while speaking."""


class OutputGone(TtsError):
    """The reply's audio output went away (unplugged, suspended) while it played."""
