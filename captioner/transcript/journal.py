"""Crash-safe transcript journal: one JSON line per finalized caption line.

Layout: one file per session, ``captions-YYYYmmdd-HHMMSS-<pid>.jsonl`` in the
transcript folder::

    {"type": "start", "version": 1, "started": "...", "source": "...", "endpoint": "..."}
    {"type": "line", "text": "...", "start": 1.2, "end": 3.4, "kind": "speech"}
    {"type": "line", "text": "...", "start": 2.0, "end": 3.1, "kind": "speech", "speaker": "You"}
    ...

Lines are written as they are finalized; in two-stream mode (lines with a
``speaker``) that is not quite the order they were spoken, so the reader puts
them back in time order.
    {"type": "end", "ended": "..."}

A restart with new settings goes on in the same file, after a record of what the
captions use now, with times that go on from the run before's::

    {"type": "restart", "at": 312.4, "restarted": "...", "source": "...", "endpoint": "..."}

Every append is written and fsync'd before it returns, so a power loss loses at
most the line being written. A journal without the end marker is an unfinished
session (the app crashed); :func:`unfinished_journals` finds them and
:func:`read_journal` reads them, skipping a torn last line instead of failing.

Faults never stop captions and never lose or double a line:
- any write failure (full disk, file too large, I/O error) raises
  :class:`JournalError`; the file is cut back to its last whole line and the lines
  not yet on disk are kept, to be written once with the next successful append;
- after a failure the file is reopened on the next append; a reopen that fails is
  again a JournalError, and no closed file is ever written to;
- a journal that cannot be created (the disk full as the session starts) leaves no
  empty file behind; the caller keeps the lines and creates it later, with
  ``started`` saying when the session began;
- text that cannot be UTF-8 (a lone surrogate from a server) is written with
  U+FFFD in its place.
Journals are created ``0600`` in a folder created ``0700``: transcripts are private.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import math
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from captioner.realtime.captions import CaptionLine, LineKind
from captioner.realtime.speakers import in_time_order
from captioner.settings import PRIVATE_DIR, PRIVATE_FILE
from captioner.surrogates import replace_lone_surrogates
from captioner.transcript.errors import JournalError

log = logging.getLogger(__name__)

VERSION = 1
SUFFIX = ".jsonl"
PREFIX = "captions-"


def _describe(exc: OSError, path: Path) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return f"The disk holding {path.parent} is full: the transcript is not being saved."
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"No permission to write the transcript in {path.parent}."
    return f"The transcript cannot be saved to {path}: {exc.strerror or exc}."


def line_record(line: CaptionLine) -> dict[str, Any]:
    record = {"type": "line", "text": line.text, "start": round(line.start, 3),
              "end": round(line.end, 3), "kind": line.kind.value}
    if line.speaker:  # two-stream mode; one-stream records stay as they were
        record["speaker"] = line.speaker
    return record


class Journal:
    """Append-only writer; use :meth:`create` for a new session file."""

    def __init__(self, path: Path, header: dict[str, Any] | None = None) -> None:
        self.path = path
        self.closed = False
        self._pending: list[bytes] = []  # whole lines not yet durably on disk
        self._size: int | None = None  # bytes of whole lines on disk (known once open)
        self._fd: int | None = None
        self._open()
        record = {"type": "start", "version": VERSION,
                  "started": datetime.now(UTC).isoformat(timespec="seconds"), **(header or {})}
        self._write(record)

    @classmethod
    def create(cls, folder: Path | str, *, started: datetime | None = None,
               **header: Any) -> Journal:
        """A new journal file in ``folder`` (created ``0700`` if missing), named after
        ``started`` (default now: a journal made late still says when its session began).

        JournalError if it cannot be made now; then no file is left behind (an empty
        one would be "recovered" as a transcript of nothing at the next start)."""
        folder = Path(folder)
        started = started or datetime.now(UTC)
        try:
            folder.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        except OSError as exc:
            raise JournalError(_describe(exc, folder / "x")) from exc
        stamp = started.astimezone().strftime("%Y%m%d-%H%M%S")
        path = folder / f"{PREFIX}{stamp}-{os.getpid()}{SUFFIX}"
        n = 1
        while path.exists():
            n += 1
            path = folder / f"{PREFIX}{stamp}-{os.getpid()}-{n}{SUFFIX}"
        header = {"started": started.astimezone(UTC).isoformat(timespec="seconds"), **header}
        try:
            return cls(path, header)
        except JournalError:
            _remove_if_empty(path)
            raise

    @property
    def pending(self) -> int:
        """Lines kept in memory because the disk refused them (0 when all is saved)."""
        return len(self._pending)

    def append(self, *lines: CaptionLine) -> None:
        """Write finalized lines durably, in one write (many lines kept while no journal
        could be made cost one fsync, not one each); JournalError if the disk refuses
        (the lines are kept and written with the next append that succeeds)."""
        self._write(*map(line_record, lines))

    def restarted(self, at: float, **header: Any) -> None:
        """The captions restarted with new settings (``header``: what they are now) and
        go on in this file; their lines' times go on from ``at``."""
        self._write({"type": "restart", "at": round(at, 3),
                     "restarted": datetime.now(UTC).isoformat(timespec="seconds"), **header})

    def close(self) -> None:
        """Write the end marker (the session finished normally) and close.

        JournalError if lines could not be written; the file is closed either way."""
        if self.closed:
            return
        try:
            self._write({"type": "end", "ended": datetime.now(UTC).isoformat(timespec="seconds")})
        finally:
            self.closed = True
            self._close_fd()

    def _write(self, *records: dict[str, Any]) -> None:
        if self.closed:
            raise JournalError("The transcript journal is already closed.")
        self._pending.extend(map(encode_record, records))
        data = b"".join(self._pending)
        try:
            if self._fd is None:
                self._open()
            assert self._fd is not None
            _write_all(self._fd, data)
            os.fsync(self._fd)
        except OSError as exc:
            log.warning("! journal write failed: %s", exc)
            self._cut_back()
            raise JournalError(_describe(exc, self.path)) from exc
        self._size = (self._size or 0) + len(data)
        self._pending.clear()

    def _open(self) -> None:
        """Open (or reopen) the file for appending, cut back to its last whole line."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                         PRIVATE_FILE)
        except OSError as exc:
            raise JournalError(_describe(exc, self.path)) from exc
        try:
            size = os.fstat(fd).st_size
            if self._size is not None and size > self._size:
                os.ftruncate(fd, self._size)  # drop what a failed write left behind
                size = self._size
            elif size and _torn(self.path):
                os.write(fd, b"\n")  # a torn line we did not write: end it, keep ours whole
                size += 1
        except OSError as exc:
            os.close(fd)
            raise JournalError(_describe(exc, self.path)) from exc
        self._size = size
        self._fd = fd

    def _cut_back(self) -> None:
        """After a failed write: remove its partial bytes now if possible, and reopen
        on the next append in any case (a fresh descriptor after an I/O error)."""
        if self._fd is not None and self._size is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
        self._close_fd()

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError as exc:
                log.warning("! closing journal %s: %s", self.path, exc)


def encode_record(record: dict[str, Any]) -> bytes:
    """One journal line as UTF-8; lone surrogates become U+FFFD; never raises."""
    try:
        text = json.dumps(record, ensure_ascii=False)
    except (TypeError, ValueError) as exc:  # a value JSON cannot hold: keep the rest
        log.warning("! journal record not serialisable: %s", exc)
        text = json.dumps(record, ensure_ascii=False, default=str)
    return (replace_lone_surrogates(text) + "\n").encode("utf-8")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _remove_if_empty(path: Path) -> None:
    """Remove a journal file nothing could be written to (never one with content)."""
    try:
        if path.stat().st_size == 0:
            path.unlink()
    except FileNotFoundError:
        pass  # never made (the folder refused it)
    except OSError as exc:
        log.warning("! cannot remove the empty journal %s: %s", path, exc)


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
    skipped: int = 0  # unreadable lines (a torn last line after a crash, a time not finite)

    @property
    def started(self) -> str:
        return str(self.header.get("started", ""))


def _speaker(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"speaker must be text, not {value!r}")
    return value or None


def _seconds(value: Any) -> float:
    """A line's time; ValueError unless finite: JSON's NaN/Infinity (or "nan" text)
    would make every label and export of the session fail."""
    seconds = float(value)
    if not math.isfinite(seconds):
        raise ValueError(f"time is not a finite number: {value!r}")
    return seconds


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
                    str(record["text"]), _seconds(record["start"]), _seconds(record["end"]),
                    kind=LineKind(record.get("kind", "speech")),
                    speaker=_speaker(record.get("speaker"))))
            elif kind == "start":
                contents.header = record
            elif kind == "end":
                contents.finished = True
            elif kind == "restart":
                pass  # the settings changed here; the lines go on
            else:
                contents.skipped += 1
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
            contents.skipped += 1
    contents.lines = in_time_order(contents.lines)
    return contents


def journal_started(path: Path) -> datetime | None:
    """When a journal's session started, from its file name (None if it has no stamp)."""
    try:
        return datetime.strptime(path.stem.removeprefix(PREFIX)[:15], "%Y%m%d-%H%M%S")
    except ValueError:
        return None


def journal_title(path: Path) -> str:
    """A session's name for people and screen readers: when it started
    ("Sat 5 Dec 2026, 19:25:11"), not the file's stamp read digit by digit."""
    started = journal_started(path)
    if started is None:
        return path.stem.removeprefix(PREFIX)
    return f"{started:%a} {started.day} {started:%b %Y, %H:%M:%S}"


def journal_files(folder: Path | str) -> list[Path]:
    """Journal files in ``folder``, oldest first (empty when the folder is missing)."""
    try:
        return sorted(Path(folder).glob(f"{PREFIX}*{SUFFIX}"))
    except OSError:
        return []


def unfinished_journals(folder: Path | str, exclude: Path | None = None) -> list[JournalContents]:
    """Journals without an end marker (sessions a crash interrupted); an empty file
    (one the disk had no room for even the start of) is no transcript to recover."""
    out = []
    for path in journal_files(folder):
        if exclude is not None and path == exclude:
            continue
        contents = read_journal(path)
        if not contents.finished and (contents.header or contents.lines or contents.skipped):
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
