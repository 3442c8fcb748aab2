"""Live caption files another tool can tail: plain text and WebVTT.

Each run starts the file afresh (``tail -F`` follows that) and appends every
finalized line as it comes, flushed at once. A write that fails (a full disk, a
folder that went away) raises FeedError with the path; the caller reports it and
captioning goes on, and the next line tries again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import TextIO

from captioner.feed.errors import FeedError
from captioner.realtime.captions import CaptionLine, LineKind
from captioner.settings import PRIVATE_DIR, PRIVATE_FILE
from captioner.transcript.exports import VTT_HEADER, build_cues, to_txt, vtt_cue


class _LiveFile:
    header = ""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path).expanduser()
        self._file: TextIO | None = None
        self._write(self.header, fresh=True)

    def _write(self, text: str, fresh: bool = False) -> None:
        try:
            if self._file is None or fresh:
                # private as the journal is: the folder is often the transcript folder,
                # and a file made earlier may still be readable by others
                self.path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if fresh else
                                                                     os.O_APPEND), PRIVATE_FILE)
                os.fchmod(fd, PRIVATE_FILE)
                self._file = open(fd, "w", encoding="utf-8", errors="replace",  # noqa: SIM115
                                  newline="\n")
            self._file.write(text)
            self._file.flush()
        except OSError as exc:
            self._drop()
            raise FeedError(f"Could not write the live caption file {self.path}: "
                            f"{exc.strerror or exc}.") from exc

    def _drop(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):  # the write already failed and was reported
                self._file.close()
            self._file = None

    def close(self) -> None:
        self._drop()


class LiveTextFile(_LiveFile):
    """``[HH:MM:SS] text`` lines, as the transcript's TXT export writes them."""

    def add(self, line: CaptionLine) -> None:
        if line.kind is not LineKind.GAP:
            self._write(to_txt([line]))


class LiveVttFile(_LiveFile):
    """A WebVTT file that grows a cue per finalized line."""

    header = VTT_HEADER

    def __init__(self, path: Path | str) -> None:
        self._cues = 0
        super().__init__(path)

    def add(self, line: CaptionLine) -> None:
        if line.kind is LineKind.GAP:
            return
        text = ""
        for cue in build_cues([line]):
            self._cues += 1
            text += vtt_cue(dataclasses.replace(cue, index=self._cues)) + "\n"
        self._write(text)


__all__ = ["LiveTextFile", "LiveVttFile"]
