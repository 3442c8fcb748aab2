"""Transcripts: the crash-safe journal and the TXT/SRT/VTT exports."""

from captioner.transcript.exports import (
    FORMATS,
    Cue,
    ExportError,
    build_cues,
    export,
    to_srt,
    to_txt,
    to_vtt,
)
from captioner.transcript.journal import (
    Journal,
    JournalContents,
    JournalError,
    journal_files,
    mark_recovered,
    read_journal,
    unfinished_journals,
)

__all__ = ["FORMATS", "Cue", "ExportError", "Journal", "JournalContents", "JournalError",
           "build_cues", "export", "journal_files", "mark_recovered", "read_journal",
           "to_srt", "to_txt", "to_vtt", "unfinished_journals"]
