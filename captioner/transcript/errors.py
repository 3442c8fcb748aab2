"""Why a transcript cannot be saved, as one exception tree.

Hierarchy (``str()`` is a sentence a user can read)::

    CaptionerError
    └── TranscriptError     root of the transcript package
        ├── JournalError    the live journal cannot be written (full disk, permission,
        │                   reopen failed); the lines are kept and retried, captions go on
        └── ExportError     an export (TXT/SRT/VTT) could not be written
"""

from __future__ import annotations

from captioner.errors import CaptionerError


class TranscriptError(CaptionerError):
    """Root of transcript failures."""


class JournalError(TranscriptError):
    """The journal cannot be written (full disk, no permission); captions go on."""


class ExportError(TranscriptError):
    """The export could not be written (readable message)."""


__all__ = ["ExportError", "JournalError", "TranscriptError"]
