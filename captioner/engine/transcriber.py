"""The seam between the local Realtime server and whatever turns audio into text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Transcriber(Protocol):
    """Decoder for ONE generation request (a fresh one per request: no context leaks).

    Calls come from one worker thread at a time, in order, so implementations
    may block on CPU work and need no locking.
    """

    def push(self, pcm: bytes) -> str:
        """Take 16 kHz mono PCM16; return newly committed text (append-only, may be "")."""
        ...

    def finish(self) -> str:
        """The audio has ended: return the rest of the text."""
        ...


def live_text(transcriber: Transcriber) -> str | None:
    """The unconfirmed text after what ``push`` returned so far, if the transcriber has any.

    Optional: a transcriber that offers it has a ``tentative`` string attribute
    (words it heard but has not committed; later pushes may change them). None
    when it has no such attribute (the server then sends no live text).
    """
    text = getattr(transcriber, "tentative", None)
    return text if isinstance(text, str) else None


TranscriberFactory = Callable[[], Transcriber]
