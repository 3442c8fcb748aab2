"""Transcript exports: plain text, SubRip (SRT) and WebVTT.

Subtitle rules (what players and broadcasters expect):
- text in normal case as recognised, at most ``max_lines`` rows of ``max_chars``
  characters per cue; a longer caption line is split into as few cues as hold it,
  of about equal length and at phrase boundaries where it can (never a cue of one
  stray word: "…beauty's rose might" + "never"), its time shared out by length;
  rows break at phrase boundaries too (captioner.realtime.rows);
- cues numbered from 1, times ``HH:MM:SS,mmm`` (SRT) / ``HH:MM:SS.mmm`` (VTT);
- every cue lasts at least ``min_ms`` and no two cues overlap: a cue ends at the
  next one's start when there is room for the minimum, otherwise the next cue
  starts when this one ends.
Times are computed in whole milliseconds, so rounding never creates an overlap.

Two-stream transcripts ("You" and "Others") are put in the order they were spoken
and name the speaker: SRT starts a line's first cue with "Name: ", WebVTT wraps
each cue in a voice span ``<v Name>``, TXT writes "Name: " after the time. Lines
without a speaker (one stream) are written exactly as before.
"""

from __future__ import annotations

import functools
import itertools
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from captioner.realtime.captions import CaptionLine, LineKind, labelled
from captioner.realtime.rows import break_cost, break_rows, columns, graphemes
from captioner.realtime.speakers import in_time_order
from captioner.surrogates import replace_lone_surrogates
from captioner.transcript.errors import ExportError

MAX_CHARS = 42
MAX_LINES = 2
MIN_MS = 1000


@dataclass(frozen=True, slots=True)
class Cue:
    index: int
    start_ms: int
    end_ms: int
    text: str  # rows joined with "\n"
    speaker: str | None = None


def cue_rows(text: str, width: int = MAX_CHARS, max_lines: int = MAX_LINES) -> list[list[str]]:
    """The rows of each cue ``text`` is shown in: as few cues as hold it, each of at most
    ``max_lines`` rows of ``width``, with its words shared out so the cues are about
    the same length and end at phrase boundaries where they can."""
    words = [piece for word in text.split() for piece in _pieces(word, width)]
    if not words:
        return []

    @functools.cache
    def rows(i: int, j: int) -> list[str]:
        return [" ".join(row) for row in break_rows(words[i:j], lambda _row: True, width)]

    # columns of words[:i], each followed by a space. Laying words out is the slow part:
    # a run within one row's width is one row, and one wider than max_lines rows and a
    # space at each break cannot fit, so only the runs between are laid out
    ends = [0, *itertools.accumulate(columns(word) + 1 for word in words)]

    def fits(i: int, j: int) -> bool:
        span = ends[j] - ends[i] - 1
        if span <= width:
            return True
        return span < max_lines * (width + 1) and len(rows(i, j)) <= max_lines

    count = -(-len(rows(0, len(words))) // max_lines)  # fewest; one word per cue always fits
    while (cuts := _balanced_cuts(words, count, fits)) is None:
        count += 1
    return [rows(i, j) for i, j in itertools.pairwise(cuts)]


def _pieces(word: str, width: int) -> list[str]:
    """``word`` in pieces of at most ``width`` columns (a wide CJK character counts two),
    never inside a grapheme cluster (an accent, an emoji sequence): each piece then fits
    a row of its own, so any cue of one row or more can hold it."""
    pieces: list[str] = []
    piece, used = "", 0
    for cluster in graphemes(word):
        wide = columns(cluster)
        if piece and used + wide > width:
            pieces.append(piece)
            piece, used = "", 0
        piece, used = piece + cluster, used + wide
    return [*pieces, piece] if piece else pieces


def _balanced_cuts(words: Sequence[str], count: int,
                   fits: Callable[[int, int], bool]) -> list[int] | None:
    """Word indices [0, …, len(words)] that cut ``words`` into ``count`` parts that fit,
    of about equal length, preferring breaks after punctuation; None if none fit."""
    n = len(words)
    ends = [0, *itertools.accumulate(len(word) + 1 for word in words)]  # of " ".join
    target = (ends[n] - 1) / count
    # best[k][j]: the least cost of words[:j] in k parts, and where its last part starts
    best: list[dict[int, tuple[float, int]]] = [{0: (0.0, 0)}]
    for k in range(1, count + 1):
        row: dict[int, tuple[float, int]] = {}
        # the last part ends at the end; other ends are not worth laying out
        for j in range(k, n - (count - k) + 1) if k < count else (n,):
            for i, (cost, _) in best[k - 1].items():
                if i >= j or not fits(i, j):
                    continue
                size = ends[j] - ends[i] - 1
                step = ((size - target) / target) ** 2
                if j < n:
                    step += break_cost(words[j - 1])
                if j not in row or cost + step < row[j][0]:
                    row[j] = (cost + step, i)
        best.append(row)
    if n not in best[count]:
        return None
    cuts = [n]
    for k in range(count, 0, -1):
        cuts.append(best[k][cuts[-1]][1])
    return cuts[::-1]


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))


def build_cues(lines: Iterable[CaptionLine], *, max_chars: int = MAX_CHARS,
               max_lines: int = MAX_LINES, min_ms: int = MIN_MS,
               name_in_text: bool = False) -> list[Cue]:
    """Cues in spoken order; ``name_in_text`` starts every cue of a line with its speaker's
    name (SRT has no other place for it; a cue is read on its own)."""
    raw: list[tuple[int, int, str, str | None]] = []
    for line in in_time_order(lines):
        prefix = f"{line.speaker}: " if name_in_text and line.speaker else ""
        groups = cue_rows(line.text, max(max_chars - len(prefix), max_chars // 2), max_lines)
        if not groups:
            continue
        if prefix:
            groups = [[prefix + group[0], *group[1:]] for group in groups]
        start, end = _ms(line.start), _ms(line.end)
        duration = max(0, end - start)
        total = sum(len(" ".join(g)) for g in groups)
        done = 0
        for group in groups:
            s = start + duration * done // total
            done += len(" ".join(group))
            raw.append((s, start + duration * done // total, "\n".join(group), line.speaker))
    cues: list[Cue] = []
    prev_end = 0
    for i, (s, e, text, speaker) in enumerate(raw):
        s = max(s, prev_end)
        e = max(e, s + min_ms)
        if i + 1 < len(raw) and raw[i + 1][0] >= s + min_ms:
            e = min(e, raw[i + 1][0])
        cues.append(Cue(i + 1, s, e, text, speaker))
        prev_end = e
    return cues


def timestamp(ms: int, sep: str = ",") -> str:
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{sep}{millis:03d}"


def clock(seconds: float) -> str:
    """``HH:MM:SS`` for transcript lines."""
    return timestamp(_ms(seconds))[:8]


def _srt_text(text: str) -> str:
    """Cue text that cannot be read as a timing line: caption text comes from a server,
    and "… 00:00:09,000 --> 01:00:00,000 …" in it made players show a forged cue."""
    return text.replace("-->", "->")


def to_srt(lines: Iterable[CaptionLine]) -> str:
    return "\n".join(
        f"{c.index}\n{timestamp(c.start_ms)} --> {timestamp(c.end_ms)}\n{_srt_text(c.text)}\n"
        for c in build_cues(lines, name_in_text=True)
    )


def _vtt_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


VTT_HEADER = "WEBVTT\n\n"


def vtt_cue(cue: Cue) -> str:
    voice = f"<v {_vtt_escape(cue.speaker)}>" if cue.speaker else ""
    return (f"{cue.index}\n{timestamp(cue.start_ms, '.')} --> {timestamp(cue.end_ms, '.')}\n"
            f"{voice}{_vtt_escape(cue.text)}\n")


def to_vtt(lines: Iterable[CaptionLine]) -> str:
    return VTT_HEADER + "\n".join(vtt_cue(c) for c in build_cues(lines))


def to_txt(lines: Iterable[CaptionLine]) -> str:
    out = []
    for line in in_time_order(lines):
        mark = "(reply) " if line.kind is LineKind.TYPED else ""
        text = " ".join(labelled(line).splitlines())  # one line each, even from old files
        out.append(f"[{clock(line.start)}] {mark}{text}\n")
    return "".join(out)


FORMATS: dict[str, Callable[[Iterable[CaptionLine]], str]] = {
    "txt": to_txt, "srt": to_srt, "vtt": to_vtt,
}


def export(lines: Sequence[CaptionLine], fmt: str, path: Path | str) -> Path:
    """Write ``lines`` as ``fmt`` (txt, srt, vtt) to ``path`` atomically (a private
    ``0600`` file; text that cannot be UTF-8 gets U+FFFD). ExportError on any failure."""
    fmt = fmt.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ExportError(f"Unknown export format {fmt!r}: choose txt, srt or vtt.")
    path = Path(path)
    text = replace_lone_surrogates(FORMATS[fmt](lines))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".export-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise ExportError(f"Could not write {path}: {exc.strerror or exc}.") from exc
    return path


__all__ = [
    "FORMATS",
    "Cue",
    "ExportError",
    "build_cues",
    "clock",
    "cue_rows",
    "export",
    "timestamp",
    "to_srt",
    "to_txt",
    "to_vtt",
]
