"""The one exception root of Captioner: every package's error tree derives from it.

A caller that must not crash on any of our own failures (the UI's top level, the
CLI's ``main``) catches :class:`CaptionerError` and shows ``str(exc)``, which is
always a sentence a user can read. Anything else that escapes is a bug.

Each package draws its own tree in its module docstring and roots it here::

    CaptionerError
    ├── AudioError             captioner.audio.errors (PlaybackError too)
    ├── CredentialsError       captioner.aws.errors
    ├── EngineError            captioner.engine.model_paths (BindError: engine.access)
    ├── RealtimeError          captioner.realtime.errors
    ├── SessionError           captioner.session.errors
    ├── TranscriptError        captioner.transcript.errors
    ├── EndpointControlError   captioner.cloud.errors
    ├── FeedError              captioner.feed.errors
    ├── TransportError         captioner.transport.base
    ├── RealtimeError          captioner.realtime.errors
    ├── SessionError           captioner.session.errors
    ├── TtsError               captioner.tts.errors
    ├── ShortcutError          captioner.ui.global_shortcut
    └── …                      each further package roots its own tree here

Settings never raise: a bad file or value becomes a problem message (captioner.settings).

Rules: misuse by the caller is a different class from a fault of the peer; chain
with ``raise … from exc``; keep errors typed up to the UI.
"""

from __future__ import annotations


class CaptionerError(Exception):
    """Root of every error Captioner raises on purpose; ``str()`` is for the user."""


__all__ = ["CaptionerError"]
