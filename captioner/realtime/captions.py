"""Turn the append-only delta text of a Realtime session into caption lines.

The protocol has no server-side segmentation, so lines are cut here: after
sentence punctuation, at a maximum length (at a comma when that keeps half the line,
else not after a word like "the" or "of") and at pauses.
Times are audio time in seconds since the session started, which is what
SRT/VTT export needs. Finalized lines never change; only the live line grows.

Confirmed text (deltas) and unconfirmed text (a server's live hypothesis, which
may be revised) are kept apart: the unconfirmed text is shown after the live
line but never becomes part of a line by itself — only a delta that confirms it
does. When a delta arrives, the unconfirmed words it confirms are taken off the
front of the unconfirmed text; if it says something else, the unconfirmed text
is dropped until the server sends the next one.

A word's time is when it was first shown: a confirmed word that was shown as
unconfirmed text before is placed when it was shown there, not when it was
confirmed. An engine that confirms a whole utterance at its end (the on-device
one) would otherwise give each line the time its utterance ended, up to ten
seconds late, with no duration: subtitles at the wrong time, and two speakers'
lines out of order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import Enum

from captioner.realtime.rows import cluster_cut, phrase_break

LINE_PUNCTUATION_FILL = 0.5  # a long line ends at a comma when that keeps half of it

# A sentence ends at ". " (a space after it: "3.5", "e.g." go on); Chinese and Japanese
# have no spaces, so "。" ends one before the next character too, not before a closing
# quote or more punctuation that may still arrive ("。」").
_LINE_BREAKS = re.compile(r"[ \t]*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]+[ \t]*")  # splitlines()'s
_SENTENCE_END = re.compile(r"[.!?…]+[\"')\]]*\s"
                           r"|[。！？]++[」』）”’\"')\]]*+(?:\s|(?=[^\s。！？]))")
_WORD = re.compile(r"\S+")
_PUNCTUATION = ".,!?;:…\"'“”‘’()[]{}-"


def _key(word: str) -> str:
    return word.strip(_PUNCTUATION).casefold()


def _confirm(unconfirmed: str, delta: str) -> str:
    """What stays unconfirmed after ``delta`` was confirmed: the words after the ones it
    confirmed (case and punctuation aside), or "" when it confirmed something else."""
    said, pending = delta.split(), unconfirmed.split()
    if len(said) > len(pending) or any(
            _key(a) != _key(b) for a, b in zip(said, pending, strict=False)):
        return ""
    return " ".join(pending[len(said):])


class LineKind(Enum):
    SPEECH = "speech"
    GAP = "gap"  # audio that could not be transcribed (outage longer than the buffer)
    TYPED = "typed"  # a reply the user typed and had spoken


@dataclass(frozen=True, slots=True)
class CaptionLine:
    text: str
    start: float
    end: float
    final: bool = True
    kind: LineKind = LineKind.SPEECH
    speaker: str | None = None  # "You"/"Others" in two-stream mode; None: one stream


def labelled(line: CaptionLine) -> str:
    """The line's text with its speaker's name in front ("You: …"), when it has one."""
    return f"{line.speaker}: {line.text}" if line.speaker else line.text


@dataclass(frozen=True, slots=True)
class CaptionUpdate:
    """What changed: newly finalized lines (in order), the current live line (confirmed
    text not yet cut into a line) and the unconfirmed text after it (may be revised)."""

    finalized: tuple[CaptionLine, ...] = ()
    live: CaptionLine | None = None
    unconfirmed: str = ""
    speaker: str | None = None  # two streams: whose live line and unconfirmed words


def moved(line: CaptionLine, seconds: float) -> CaptionLine:
    """``line`` ``seconds`` later (earlier when negative)."""
    return replace(line, start=line.start + seconds, end=line.end + seconds) if seconds else line


def shifted(update: CaptionUpdate, seconds: float) -> CaptionUpdate:
    """``update`` with its lines' times moved by ``seconds``: a session that goes on
    from another's clock (after a restart, or Start after Stop) keeps the transcript's
    times rising."""
    if not seconds:
        return update
    return replace(update, finalized=tuple(moved(line, seconds) for line in update.finalized),
                   live=None if update.live is None else moved(update.live, seconds))


@dataclass
class CaptionModel:
    max_chars: int = 84
    min_sentence_chars: int = 16  # shorter sentences stay on the line ("Yes. I agree.")
    pause_seconds: float = 1.2
    pending_seconds: float = 1.0  # how much longer a pause waits for words said before it
    speaker: str | None = None  # stamped on every line (two-stream mode)
    lines: list[CaptionLine] = field(default_factory=list)
    _live: str = ""
    _live_start: float = 0.0
    _live_end: float = 0.0
    _need_space: bool = False
    _marks: list[tuple[int, float]] = field(default_factory=list)  # (word end offset, time)
    unconfirmed: str = ""  # the server's live hypothesis after the confirmed text
    _shown_at: list[float] = field(default_factory=list)  # when each unconfirmed word was
    _placed: float = 0.0  # the latest word time given (times never go back)
    _notes: list[CaptionLine] = field(default_factory=list)  # gap notes to follow open words

    @property
    def live(self) -> CaptionLine | None:
        text = self._live.strip()
        if not text:
            return None
        return CaptionLine(text, self._live_start, self._live_end, final=False,
                           speaker=self.speaker)

    def add_text(self, delta: str, audio_time: float) -> CaptionUpdate:
        """Append a delta that arrived when ``audio_time`` seconds of audio had been sent.
        Line breaks in it become spaces: a caption line is one line, and a server's
        "\n[00:00:02] You: …" would otherwise forge a line of its own in the text
        transcript and the live text file."""
        if not delta:
            return self._update()
        delta = _LINE_BREAKS.sub(" ", delta)
        times = self._word_times(delta, audio_time)
        rest = _confirm(self.unconfirmed, delta)
        self._set_pending(rest, self._shown_at[len(self._shown_at) - len(rest.split()):])
        if self._need_space and not delta[0].isspace() and self._live.strip():
            delta = " " + delta
        self._need_space = False
        if not self._live.strip():
            self._live_start = times[0] if times else audio_time
            delta = delta.lstrip()
        offset = len(self._live)
        self._live += delta
        self._live_end = audio_time
        self._marks += [(offset + word.end(), when)
                        for word, when in zip(_WORD.finditer(delta), times, strict=False)]
        finalized = []
        while (cut := self._cut_point()) is not None:
            finalized.append(self._finalize(cut))
        return self._update(tuple(finalized))

    def set_unconfirmed(self, text: str, audio_time: float | None = None) -> CaptionUpdate:
        """The server's current unconfirmed text (replaces the previous; "" clears it),
        shown when ``audio_time`` seconds of audio had been sent. A word in the place of
        one shown before keeps that one's time (a revision of the same sound)."""
        words = text.split()
        now = self._live_end if audio_time is None else audio_time
        self._set_pending(" ".join(words), [self._shown_time(i, now) for i in range(len(words))])
        return self._update()

    def _shown_time(self, i: int, now: float) -> float:
        """When the unconfirmed word in place ``i`` was first shown (``now`` if none was)."""
        return min(self._shown_at[i], now) if i < len(self._shown_at) else now

    def _word_times(self, delta: str, audio_time: float) -> list[float]:
        """A time for each word of ``delta``: when the word in its place was first shown
        as unconfirmed text, else now; never before a word placed earlier."""
        times = []
        for i in range(len(delta.split())):
            self._placed = max(self._placed, self._shown_time(i, audio_time))
            times.append(self._placed)
        return times

    def _set_pending(self, text: str, shown_at: list[float]) -> None:
        self.unconfirmed, self._shown_at = text, shown_at if text else []

    def _update(self, finalized: tuple[CaptionLine, ...] = ()) -> CaptionUpdate:
        if self._notes:
            finalized += self._notes_due(finalized)
        return CaptionUpdate(finalized, self.live, self.unconfirmed, self.speaker)

    def _notes_due(self, finalized: tuple[CaptionLine, ...]) -> tuple[CaptionLine, ...]:
        """The gap notes whose words before them are all finalized now."""
        open_words = bool(self._live.strip() or self.unconfirmed)
        reached = max((line.end for line in finalized), default=None)
        due = [note for note in self._notes if not open_words
               or (reached is not None and reached >= note.start)]
        self._notes = [note for note in self._notes if note not in due]
        return self._placed_notes(due, finalized)

    def _placed_notes(self, notes: list[CaptionLine], before: tuple[CaptionLine, ...]
                      ) -> tuple[CaptionLine, ...]:
        """``notes`` into the transcript after the lines ``before``, never timed before
        them (a line's time is when its first word was shown, which can be after the
        loss), so the transcript's times keep rising."""
        latest = max((line.start for line in (*self.lines[-1:], *before)), default=0.0)
        placed = tuple(replace(note, start=max(note.start, latest), end=max(note.end, latest))
                       for note in notes)
        self.lines.extend(placed)
        return placed

    def tick(self, audio_time: float, quiet_seconds: float | None = None) -> CaptionUpdate:
        """Audio advanced with no new text: a long enough pause ends the live line.

        ``quiet_seconds`` (how long the audio itself has been quiet) keeps a bursty
        engine's gap between text updates from being taken for a pause in speech, and
        unconfirmed words keep the line open: they were said before the pause. So does
        sound after the last text (for ``pending_seconds`` more): an engine that confirms
        an utterance at its end brings its last words only after the pause began.
        """
        if quiet_seconds is not None and quiet_seconds < self.pause_seconds:
            return self._update()
        if self.unconfirmed:  # words said before the pause are still to be confirmed: the
            return self._update()  # line ends after them ("…might never | die." otherwise)
        if (quiet_seconds is not None and audio_time - quiet_seconds > self._live_end
                and quiet_seconds < self.pause_seconds + self.pending_seconds):
            return self._update()  # sound after the last text: its words may be on the way
        if self._live.strip() and audio_time - self._live_end >= self.pause_seconds:
            return self._update((self._finalize(len(self._live)),))
        return self._update()

    def flush(self) -> CaptionUpdate:
        """End of a request or session: the live line becomes final; unconfirmed text,
        which nothing confirmed, goes."""
        self._set_pending("", [])
        finalized = (self._finalize(len(self._live)),) if self._live.strip() else ()
        notes, self._notes = self._notes, []
        return CaptionUpdate((*finalized, *self._placed_notes(notes, finalized)), None)

    def new_request(self) -> None:
        """Text of the next request continues the line; make sure words don't glue.
        The old request's unconfirmed text is void (the new one says it again or not)."""
        self._need_space = True
        self._set_pending("", [])

    def gap(self, start: float, end: float) -> CaptionUpdate:
        """Mark audio that was lost, so the transcript shows the hole instead of hiding it."""
        update = self.flush()
        line = CaptionLine(f"[{end - start:.0f} s of audio not transcribed]", start, end,
                           kind=LineKind.GAP, speaker=self.speaker)
        self.lines.append(line)
        return CaptionUpdate((*update.finalized, line), None)

    def add_typed(self, text: str, audio_time: float) -> CaptionUpdate:
        line = CaptionLine(text, audio_time, audio_time, kind=LineKind.TYPED)
        self.lines.append(line)
        return self._update((line,))

    def mark_gap(self, text: str, audio_time: float) -> CaptionUpdate:
        """A note that audio was missing at ``audio_time`` while the session went on. It
        follows the words said before it: words still live or unconfirmed then are
        finalized first (the line they end in may go on past the gap). No speaker's:
        in a call the capture of both sides went on after it."""
        self._notes.append(CaptionLine(text, audio_time, audio_time, kind=LineKind.GAP))
        return self._update()

    @property
    def text(self) -> str:
        return " ".join(line.text for line in self.lines if line.kind is LineKind.SPEECH)

    def _cut_point(self) -> int | None:
        for match in _SENTENCE_END.finditer(self._live):
            length = len(self._live[: match.end()].strip())
            if length > self.max_chars:
                break  # the sentence is too long for one line: cut it by length first
            if length >= self.min_sentence_chars:
                return match.end()
        if len(self._live.strip()) <= self.max_chars:
            return None
        head = self._live[: self.max_chars + 1]
        space = head.rstrip().rfind(" ")
        if space <= 0:  # no space (Chinese, Japanese, a URL): cut between characters
            return cluster_cut(self._live, self.max_chars)
        words = [w for w in _WORD.finditer(self._live) if w.end() <= space]
        keep = phrase_break([w.group() for w in words], 0, len(words),
                            punctuation_fill=LINE_PUNCTUATION_FILL)
        return words[keep].start() if keep < len(words) else space + 1

    def _finalize(self, cut: int) -> CaptionLine:
        head, rest = self._live[:cut], self._live[cut:]
        text_end = len(head.rstrip())
        end = next((t for offset, t in self._marks if offset >= text_end), self._live_end)
        line = CaptionLine(head.strip(), self._live_start, end, speaker=self.speaker)
        self.lines.append(line)
        stripped = rest.lstrip()
        shift = len(self._live) - len(stripped)
        self._marks = [(o - shift, t) for o, t in self._marks if o - shift > 0]
        self._live = stripped
        self._live_start = self._marks[0][1] if self._marks else self._live_end
        return line
