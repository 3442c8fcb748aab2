"""Captions of the app's own spoken replies: shown once, as the typed line.

A reply the user types is shown at once (``» Hello there``) and spoken through an
output device. When the captions listen to that output (system audio on the
default device, the usual set-up) or a microphone hears the speakers, the reply
comes back a few seconds later as caption text of the other side: the same words
twice. :class:`ReplyEcho` drops the caption words that repeat a reply spoken just
before, from finalized lines and from the live text meanwhile, with the rules of the
text-level echo filter (runs of words in order, with content words). A misreading of
the voice that shares no such run with the reply (the platform voice read by tiny.en:
"The low air." for "Hello there") is still shown.

Only words that repeat the reply go: someone who talks over the reply, or answers
with other words, is still captioned. The price: a person who repeats three or more
of the reply's words within its window ("Be right back?") is not captioned for those
words. Sans-I/O and pure apart from the replies it remembers.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

from captioner.realtime.captions import CaptionLine, LineKind
from captioner.transcript.echo_text import repeated_words, without_words

CHARS_PER_SECOND = 10.0  # slower than any reply voice: the window errs long
HEARD_WITHIN = 8.0  # s after a reply ends by which its caption has come back
_REMEMBERED = 8  # replies looked at (older ones are long past their window)


@dataclass(frozen=True, slots=True)
class _Reply:
    text: str
    start: float  # audio time when it was sent to be spoken
    until: float  # audio time after which a caption is no longer its echo


class ReplyEcho:
    def __init__(self) -> None:
        self._replies: deque[_Reply] = deque(maxlen=_REMEMBERED)

    def spoken(self, text: str, audio_time: float) -> None:
        """A reply went to the speaker at ``audio_time`` (the captions' clock)."""
        until = audio_time + len(text) / CHARS_PER_SECOND + HEARD_WITHIN
        self._replies.append(_Reply(text, audio_time, until))

    def filter(self, line: CaptionLine) -> CaptionLine | None:
        """``line`` without what repeats a reply heard at its time; None if nothing is left."""
        if line.kind is not LineKind.SPEECH:
            return line
        said = self._said(line.start, line.end)
        return without_words(line, repeated_words(line.text, said)) if said else line

    def filter_live(self, live: CaptionLine | None, unconfirmed: str, now: float
                    ) -> tuple[CaptionLine | None, str]:
        """The live line and unconfirmed words without what repeats a reply being heard
        back at ``now``, so the reply does not flash up as caption text before its
        finalized line is left out."""
        said = self._said(now, now)
        if not said:  # the usual case, on every update: nothing to compare
            return live, unconfirmed
        split = len(live.text.split()) if live is not None else 0
        shown = " ".join(filter(None, (live.text if live is not None else "", unconfirmed)))
        drop = repeated_words(shown, said)
        if not drop:
            return live, unconfirmed
        kept = [(i, word) for i, word in enumerate(shown.split()) if i not in drop]
        live_text = " ".join(word for i, word in kept if i < split)
        return (replace(live, text=live_text) if live is not None and live_text else None,
                " ".join(word for i, word in kept if i >= split))

    def _said(self, start: float, end: float) -> str:
        """The replies whose window [sent, heard back by] meets [start, end]."""
        return " ".join(r.text for r in self._replies if r.start <= end and start <= r.until)
