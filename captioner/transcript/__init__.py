"""Transcripts: the crash-safe journal and the TXT/SRT/VTT exports."""

from captioner.transcript.errors import ExportError, JournalError, TranscriptError
from captioner.transcript.exports import (
    FORMATS,
    Cue,
    build_cues,
    export,
    to_srt,
    to_txt,
    to_vtt,
)
from captioner.transcript.journal import (
    Journal,
    JournalContents,
    journal_files,
    mark_recovered,
    read_journal,
    unfinished_journals,
)

__all__ = ["FORMATS", "Cue", "ExportError", "Journal", "JournalContents", "JournalError",
           "TranscriptError", "build_cues", "export", "journal_files", "mark_recovered",
           "read_journal", "to_srt", "to_txt", "to_vtt", "unfinished_journals"]
