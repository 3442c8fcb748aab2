"""Crash-safe transcript journal: one JSON line per finalized caption line.

Layout: one file per session, ``captions-YYYYmmdd-HHMMSS-<pid>.jsonl`` in the
transcript folder::

    {"type": "start", "version": 1, "started": "...", "source": "...", "endpoint": "..."}
    {"type": "line", "text": "...", "start": 1.2, "end": 3.4, "kind": "speech"}
    ...
    {"type": "end", "ended": "..."}

Every append is written, flushed and fsync'd before it returns, so a power loss
loses at most the line being written. A journal without the end marker is an
unfinished session (the app crashed); :func:`unfinished_journals` finds them and
:func:`read_journal` reads them, skipping a torn last line instead of failing.
A full disk raises :class:`JournalError` (readable); the lines not yet on disk
are kept and written with the next successful append, so nothing is lost while
the process lives.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from captioner.realtime.captions import CaptionLine, LineKind
from captioner.transcript.errors import JournalError

log = logging.getLogger(__name__)

VERSION = 1
SUFFIX = ".jsonl"
PREFIX = "captions-"


def _describe(exc: OSError, path: Path) -> str:
    if exc.errno == errno.ENOSPC:
        return f"The disk holding {path.parent} is full: the transcript is not being saved."
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"No permission to write the transcript in {path.parent}."
    return f"The transcript cannot be saved to {path}: {exc.strerror or exc}."


def line_record(line: CaptionLine) -> dict[str, Any]:
    return {"type": "line", "text": line.text, "start": round(line.start, 3),
            "end": round(line.end, 3), "kind": line.kind.value}


class Journal:
    """Append-only writer; use :meth:`create` for a new session file."""

    def __init__(self, path: Path, header: dict[str, Any] | None = None) -> None:
        self.path = path
        self.closed = False
        self._pending: list[str] = []
        try:
            self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
        except OSError as exc:
            raise JournalError(_describe(exc, path)) from exc
        record = {"type": "start", "version": VERSION,
                  "started": datetime.now(UTC).isoformat(timespec="seconds"), **(header or {})}
        self._write(record)

    @classmethod
    def create(cls, folder: Path | str, **header: Any) -> Journal:
        """A new journal file in ``folder`` (created if missing)."""
        folder = Path(folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise JournalError(_describe(exc, folder / "x")) from exc
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        path = folder / f"{PREFIX}{stamp}-{os.getpid()}{SUFFIX}"
        n = 1
        while path.exists():
            n += 1
            path = folder / f"{PREFIX}{stamp}-{os.getpid()}-{n}{SUFFIX}"
        return cls(path, header)

    def append(self, line: CaptionLine) -> None:
        """Write one finalized line durably; JournalError if the disk refuses."""
        self._write(line_record(line))

    def close(self) -> None:
        """Write the end marker (the session finished normally) and close."""
        if self.closed:
            return
        try:
            self._write({"type": "end", "ended": datetime.now(UTC).isoformat(timespec="seconds")})
        finally:
            self.closed = True
            try:
                self._file.close()
            except OSError as exc:
                log.warning("! closing journal %s: %s", self.path, exc)

    def _write(self, record: dict[str, Any]) -> None:
        if self.closed:
            raise JournalError("The transcript journal is already closed.")
        self._pending.append(json.dumps(record, ensure_ascii=False) + "\n")
        try:
            self._file.write("".join(self._pending))
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            # Python's buffer may hold part of the text; drop it so a retry writes whole lines.
            self._reset_buffer()
            log.warning("! journal write failed: %s", exc)
            raise JournalError(_describe(exc, self.path)) from exc
        self._pending.clear()

    def _reset_buffer(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()
        try:
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
            if _torn(self.path):
                self._file.write("\n")  # end a torn line so the next record is whole
        except OSError:
            pass


def _torn(path: Path) -> bool:
    """True if the file is non-empty and does not end with a newline."""
    try:
        if os.stat(path).st_size == 0:
            return False
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except OSError:
        return False


@dataclass
class JournalContents:
    path: Path
    header: dict[str, Any] = field(default_factory=dict)
    lines: list[CaptionLine] = field(default_factory=list)
    finished: bool = False
    skipped: int = 0  # unreadable lines (a torn last line after a crash)

    @property
    def started(self) -> str:
        return str(self.header.get("started", ""))


def read_journal(path: Path | str) -> JournalContents:
    """Everything readable in a journal; never raises for damaged content."""
    path = Path(path)
    contents = JournalContents(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        log.warning("! cannot read journal %s: %s", path, exc)
        contents.skipped += 1
        return contents
    for chunk in raw.split(b"\n"):
        if not chunk.strip():
            continue
        try:
            record = json.loads(chunk.decode("utf-8"))
            kind = record.get("type")
            if kind == "line":
                contents.lines.append(CaptionLine(
                    str(record["text"]), float(record["start"]), float(record["end"]),
                    kind=LineKind(record.get("kind", "speech"))))
            elif kind == "start":
                contents.header = record
            elif kind == "end":
                contents.finished = True
            else:
                contents.skipped += 1
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
            contents.skipped += 1
    return contents


def journal_files(folder: Path | str) -> list[Path]:
    """Journal files in ``folder``, oldest first (empty when the folder is missing)."""
    try:
        return sorted(Path(folder).glob(f"{PREFIX}*{SUFFIX}"))
    except OSError:
        return []


def unfinished_journals(folder: Path | str, exclude: Path | None = None) -> list[JournalContents]:
    """Journals without an end marker (sessions a crash interrupted)."""
    out = []
    for path in journal_files(folder):
        if exclude is not None and path == exclude:
            continue
        contents = read_journal(path)
        if not contents.finished:
            out.append(contents)
    return out


def mark_recovered(path: Path | str) -> None:
    """Close an unfinished journal with an end marker so it is offered only once."""
    path = Path(path)
    try:
        torn = _torn(path)
        with open(path, "ab") as f:
            if torn:
                f.write(b"\n")
            stamp = datetime.now(UTC).isoformat(timespec="seconds")
            f.write(json.dumps({"type": "end", "ended": stamp, "recovered": True}).encode()
                    + b"\n")
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        log.warning("! cannot mark journal %s recovered: %s", path, exc)


__all__ = ["Journal", "JournalContents", "JournalError", "journal_files", "line_record",
           "mark_recovered", "read_journal", "unfinished_journals"]
