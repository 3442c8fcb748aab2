"""Streaming captions from a non-streaming recogniser: utterances, a forced prefix, agreement.

Whisper transcribes a finished clip, not a stream. The policy here, and why
(figures: ``bench/bench_engine.py`` on real speech, README's table; what a decode
costs and the alternatives measured: docs/streaming-engine.md):

- **Utterances from the speech gate.** Audio is cut only where the speech
  detector hears a pause, never at a guessed word time, so no word is heard
  by two decodes that each keep a piece of it. An utterance ends after
  ``endpoint_silence`` of non-speech (a phrase shorter than ``min_utterance``
  waits for the next one unless the pause reaches ``long_silence``: alone,
  "ask not" came out "As not"); its last decode ("final") sees the whole
  utterance up to the pause and its words are committed as they are. The
  previous design (LocalAgreement over a buffer trimmed at word timestamps,
  as in ``whisper_streaming``) dropped a repeated phrase at a seam ("we were
  all going direct" said twice), doubled a sentence when paced and lost the
  last words at the final commit.
- **Live agreement with a forced prefix.** While an utterance goes on, it is
  re-decoded every ``interval`` seconds of new audio (greedy); the words on
  which two consecutive hypotheses agree (LocalAgreement-2, Macháček et al.)
  are handed to the next decode as the start of its answer (a forced prefix,
  as in SimulStreaming), so the live text grows steadily instead of flickering.
- **Commits from the final decode.** Live words are shown, not committed: when
  the utterance ends, one decode hears all of it with beam search and its
  reading is committed. Early agreements are made on little audio, and paced
  tiny.en agreed on "And so am I fellow" for "And so, my fellow"; committing
  them made real-time pacing 3–5 points worse than as-fast-as-possible. A
  final that leaves out a run of the agreed words (a skip: Whisper drops a
  phrase that repeats the end of its prompt) or stops before the live text's
  end is decoded again after the agreed words, as the live text was, so no
  word shown is lost.
- **Finals held to their speech.** A final far under what its speech holds
  (under ``_SPARSE_RATE`` words a second: tiny.en ended a noisy line at "By
  self-" with 4 s unread, live decodes too) is decoded on after its own words,
  and so is a final that ends before the last words an earlier live decode read.
  A short utterance (under ``min_utterance``, ended by a long pause) is first
  heard after the one before it, those words forced: alone, 1.6 s of "ask not"
  is a coin toss; after "my fellow Americans," it reads right.
- **Speech a final left unread is heard again.** A final whose decoder opened a
  segment and ended its answer (Whisper's sign of speech left unread) commits its
  words, and the window starts where it stopped, as Whisper's own long-form
  transcription goes on from there. The committed text given as prompt can stop
  tiny.en early, or make it loop: a final after live decodes that read nothing of
  new speech, and one with more words than its speech holds, are heard once more
  without the prompt.
- **A bounded window.** An utterance longer than ``max_window`` without a
  pause is cut at the quietest point between the last decode's end (every
  agreed word was heard by then) and now; the part before the cut gets a
  final decode (the cut also bounds how long a word stays live). Decode cost
  never grows with the length of a talk.
- **Cost-aware interval.** Decoding a longer window costs more, so the interval
  grows with the window (``interval + interval_per_second × window``).
- **Decisions on a fixed grid of audio time.** Every decision (an utterance
  ended, a decode is due) is made every ``decide_every`` of stream time,
  with exactly the audio up to that point, so where decodes land does not
  depend on how the audio was chunked: the same audio gives the same text in
  80 ms or 128 ms pushes, paced or not (chunking used to move the noisy
  set by ten words, and real-time pacing by a few more). A push longer than
  ``decode_lag`` (a busy server catching up) decodes at most once for it, no
  more than ``decode_lag`` before its end, plus a final for every utterance it
  completes.
- **Audio held until a decision can fall in it.** Pushed audio waits, unscored,
  until the earliest point where a decode can be due or the utterance can end
  (at most ``max_hold``): the same decisions in the same pushes, with the speech
  gate and the bookkeeping woken a few times a second instead of every 80 ms.
- ``finish()`` always decodes what is left and commits all of it.

Until the utterance's final decode, its words are ``tentative``: live text that
later decodes may revise; committed text never changes.

Sans-I/O and model-agnostic: a ``Decoder`` callable turns (audio, context,
prefix, final) into words and an optional ``SpeechDetector`` scores 32 ms
windows; tests pass scripted fakes for both.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

log = logging.getLogger(__name__)

SAMPLE_RATE = 16_000
_STRIP = ".,!?;:…\"'“”‘’()[]{}-"
_RESUME_WORDS = 12  # the end of the prompt a skipped repeat is looked for in
_SAME_AUDIO = 0.5  # s: a decode this close to a final's end heard the same words
_LOST_TAIL = 3  # live words a final lacks at its end that say it stopped early
_COPIED_WORDS = 3  # a run this long of the committed text said again is a loop, not speech
_COPIED_FINAL = 2  # a final of this many words or more that only copies the prompt is checked
FAST_WORDS = 4.5  # words per second no speech holds (the set's finals: 4.4 at most)
_NEAR_COPY = 0.7  # word similarity at which an answer's tail says its words before again
_REAL_WORD = 3  # letters: a reading without a word this long read nothing
_SAME_LETTERS = 0.5  # letter similarity at which two readings are the same words
_SPARSE_RATE = 1.0  # words per s of speech under which a final stopped early (the set: 2.1+)
_SPARSE_SPEECH = 2.0  # s of speech a final must hear before it is held to that rate
# Scripts written without spaces between words (Chinese, Japanese, Thai, Lao, Khmer,
# Burmese): each of their characters counts as a word said, about a syllable.
_UNSPACED = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff"
                       "\u3400-\u9fff\uf900-\ufaff]")
_CUT_SPAN = 2.0  # s: a long window is cut in at most this much audio before now
_UNREAD_SPEECH = 0.5  # s of speech after where a final stopped reading: heard again
_LEAST_READ = 1.0  # s: a final that stopped before this is not taken as having read
_STALL_SPEECH = 1.0  # s of new speech a live decode read nothing of: the decoder stalled

Decoder = Callable[[np.ndarray, str, str, bool], Sequence[str]]
"""(16 kHz mono float32 audio, context, prefix, final) → the words heard after ``prefix``.

``context`` is committed text said before the audio; ``prefix`` is agreed
text said inside it, which the decoder must take as the start of its answer.
Words keep their leading space (" world"). ``final`` marks the last decode of
an utterance (its words are committed without a second opinion). A decoder
that knows where it stopped reading returns a ``Reading``.
"""


class Reading(list[str]):
    """A decode's words, and ``stopped_at``: the time (s into its audio) at which the
    decoder opened a segment and then ended its answer, when it did.

    Whisper ends an answer that way when it leaves speech unread (its own long-form
    transcription goes on from that time in its next window): tiny.en read a 15 s
    window "… unless to be rather cold-hearted and rather" and stopped at 12.68 s,
    2.5 s of speech ("selfish is to be ill disposed") unread.
    """

    def __init__(self, words: Sequence[str] = (), stopped_at: float | None = None) -> None:
        super().__init__(words)
        self.stopped_at = stopped_at


def word_key(word: str) -> str:
    """What two hypotheses must agree on: case and punctuation do not count."""
    return word.strip().strip(_STRIP).casefold()


class SpeechDetector(Protocol):
    """Scores consecutive windows of a continuous stream (see captioner.engine.vad)."""

    window: int

    def probabilities(self, audio: np.ndarray) -> np.ndarray:
        """Consume audio; return one speech probability per completed window."""
        ...


@dataclass(frozen=True)
class StreamingOptions:
    interval: float = 0.8  # s of new audio between decodes of a short window …
    interval_per_second: float = 0.1  # … plus this much per second of window …
    max_interval: float = 1.8  # … up to this (live text waits no longer on a long window)
    first_decode_speech: float = 0.3  # first decode once this much speech is heard
    max_window: float = 15.0  # an utterance longer than this is cut at its quietest point
    min_cut_age: float = 0.3  # … not in the last bit of audio
    endpoint_silence: float = 0.5  # non-speech that ends an utterance …
    min_utterance: float = 2.0  # … of at least this much speech; shorter ones go on …
    long_silence: float = 1.0  # … unless the pause is this long
    tail: float = 0.25  # audio after the last speech that a final decode still sees
    preroll: float = 0.3  # audio kept before speech starts
    speech_threshold: float = 0.5  # detector probability that counts as speech
    min_speech: float = 0.1  # less speech than this in an utterance: nothing to decode
    context_chars: int = 200  # committed text before the window, given as context
    holdback: int = 0  # agreed words this close to a hypothesis' end wait for more audio
    decide_every: float = 0.064  # s of audio between decisions (whole detector windows) …
    decode_lag: float = 0.3  # … and a push longer than this decodes at most this before its end
    max_hold: float = 0.5  # s of audio held unscored while no decision can fall in it


class StreamingTranscriber:
    """A ``Transcriber`` (captioner.engine.transcriber) for one request."""

    def __init__(
        self,
        decoder: Decoder,
        detector: SpeechDetector | None = None,
        options: StreamingOptions | None = None,
    ) -> None:
        self.options = options or StreamingOptions()
        self._decode = decoder
        self._detector = detector
        self._step = (detector.window if detector else 512)  # samples per detector window
        # Decisions are made every this many stream samples (whole detector windows).
        windows = round(self.options.decide_every * SAMPLE_RATE / self._step)
        self._grid = self._step * max(1, windows)
        self._audio = _Samples()  # the window: from the seam to now
        self._probs = _Samples()  # one speech probability per detector window of it
        self._seam = 0  # stream sample where the window starts (a multiple of _step)
        self._held = bytearray()  # PCM pushed, not yet looked at (a split sample stays here)
        self._look_at = 0  # stream sample before which no decision can fall
        self._carried: list[str] = []  # agreed (live) words heard inside the window
        self._tentative: list[str] = []  # last hypothesis beyond the agreed words
        self._decoded_at = -1  # window length (samples) at the last decode; -1: none yet
        self._context = ""  # committed text before the window (recent part)
        self._emitted_chars = 0
        self._started = False  # any text emitted (the first delta has no leading space)
        self._finished = False
        self._before: _Before | None = None  # the last utterance, for a short one after it
        self._readings: list[Reading] = []  # this utterance's final decodes (window time)
        self._stalled = False  # a live decode of this utterance read nothing of new speech
        self.decodes = 0  # how many times the decoder ran (tests and benchmarks)
        self.decoded_seconds = 0.0  # audio seconds those decodes covered
        self.decode_start = 0.0  # stream time (s) of the last decode's first sample

    # -- the Transcriber interface -------------------------------------------

    def push(self, pcm: bytes) -> str:
        """Take 16 kHz mono PCM16; return newly committed text (append-only)."""
        if self._finished:
            raise RuntimeError("push() after finish(): start a new transcriber")
        self._held += pcm
        if self._taken + len(self._held) // 2 < self._look_at:
            return ""
        words = self._process()
        self._look_at = self._next_decision()
        return self._render(words)

    def finish(self) -> str:
        """End of audio: decode what is left of the utterance and commit all of it."""
        if self._finished:
            return ""
        self._finished = True
        words = self._process()
        while self._speech_seconds() >= self.options.min_speech:
            seam = self._seam
            words += self._finalize(len(self._audio))  # may leave speech it did not read
            if self._seam == seam:
                break
        return self._render(words)

    # -- what callers may look at --------------------------------------------

    @property
    def tentative(self) -> str:
        """Live text after the committed text: may still change, or vanish."""
        text = "".join(self._carried + self._tentative)
        return text if self._started else text.lstrip()

    @property
    def emitted_chars(self) -> int:
        return self._emitted_chars

    @property
    def window_start(self) -> float:
        """Stream time (s) of the first sample the next decode will see."""
        return self._seam / SAMPLE_RATE

    @property
    def window_seconds(self) -> float:
        return len(self._audio) / SAMPLE_RATE

    # -- audio and speech ----------------------------------------------------

    @property
    def _taken(self) -> int:
        """Stream samples taken so far (the window ends there)."""
        return self._seam + len(self._audio)

    def _process(self) -> list[str]:
        """Look at the held audio: score it, and decide at every grid point in it."""
        cut = len(self._held) - len(self._held) % 2
        data, self._held = bytes(self._held[:cut]), self._held[cut:]
        if not cut:
            return []
        samples = np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0
        probs = self._score(samples)
        lag = round(self.options.decode_lag * SAMPLE_RATE)
        words: list[str] = []
        start = 0
        while start < len(samples):  # one grid step at a time
            stop = min(len(samples), start + self._grid - self._taken % self._grid)
            self._audio.extend(samples[start:stop])
            start = stop
            scored = len(self._audio) // self._step - len(self._probs)  # windows completed
            self._probs.extend(probs[:scored])
            probs = probs[scored:]
            if self._taken % self._grid == 0:
                words += self._advance(may_decode=len(samples) - stop <= lag)
        return words

    def _next_decision(self) -> int:
        """The earliest stream sample at which a decode can be due or the utterance end.

        Audio before it is only held, not scored: every decision is still made
        at its grid point with exactly the audio up to it, and in the same push
        as if each push were looked at at once, but the speech gate and the
        bookkeeping run a few times a second instead of at every 80 ms push.
        That matters at real-time pace: after each idle wait the CPU runs the
        first work slowly (on the machine measured, the gate's 80 ms of audio
        cost 0.8 ms after an 80 ms sleep, 0.3 ms back to back).
        """
        opts = self.options
        hits = np.flatnonzero(self._speech())
        scored = self._seam + len(self._probs) * self._step  # the gate's last whole window
        if self._decoded_at < 0:
            needed = round(opts.first_decode_speech * SAMPLE_RATE) - len(hits) * self._step
            due = scored + max(0, needed)
        else:  # the window length at which ``_due`` holds
            length = min((self._decoded_at + opts.interval * SAMPLE_RATE) / (
                1 - opts.interval_per_second), self._decoded_at + opts.max_interval * SAMPLE_RATE)
            due = self._seam + int(length)
        if len(hits):  # an utterance ends a pause after its last speech at the earliest
            spoken_to = self._seam + (int(hits[-1]) + 1) * self._step
            due = min(due, spoken_to + round(opts.endpoint_silence * SAMPLE_RATE))
        return min(due, self._taken + round(opts.max_hold * SAMPLE_RATE))

    def _score(self, samples: np.ndarray) -> np.ndarray:
        """A speech probability for each detector window ``samples`` complete.

        All the audio looked at is scored in one call, not one per grid step:
        the gate's fixed cost per call was about a tenth of its CPU (64 vs 512 ms
        pieces), and the text is the same.
        """
        if self._detector is not None:
            return self._detector.probabilities(samples)
        count = (self._taken + len(samples)) // self._step - self._taken // self._step
        return np.ones(count, dtype=np.float32)

    def _speech(self) -> np.ndarray:
        return self._probs.view() >= self.options.speech_threshold

    def _speech_seconds(self) -> float:
        return float(np.count_nonzero(self._speech())) * self._step / SAMPLE_RATE

    def _utterance_end(self) -> int | None:
        """Window sample where a finished utterance's audio ends, if one ended.

        A pause of ``endpoint_silence`` ends an utterance that has at least
        ``min_utterance`` of speech; a short phrase ("Ask not") waits for the
        next one, so its words are decoded with more sound around them,
        unless the pause reaches ``long_silence``.
        """
        opts = self.options
        speech = self._speech()
        hits = np.flatnonzero(speech)
        if not len(hits):
            return None
        per_second = SAMPLE_RATE / self._step
        # Non-speech windows after each speech window (up to the next one or the end).
        after = np.diff(np.append(hits, len(speech))) - 1
        spoken = np.arange(1, len(hits) + 1) / per_second  # speech up to each window
        ends = (after >= opts.long_silence * per_second) | (
            (after >= opts.endpoint_silence * per_second) & (spoken >= opts.min_utterance)
        )
        found = np.flatnonzero(ends)
        if not len(found):
            return None
        end = (hits[found[0]] + 1) * self._step + round(opts.tail * SAMPLE_RATE)
        return min(end, len(self._audio))

    def _advance(self, may_decode: bool) -> list[str]:
        """At a grid point: finish utterances that ended, decode if one is due."""
        words: list[str] = []
        while (end := self._utterance_end()) is not None:
            words += self._finalize(end)
        if not self._speech().any():
            self._idle()
        elif may_decode and self._due():
            words += self._update()
        return words

    def _idle(self) -> None:
        """No speech in the window: keep only a pre-roll for the next onset.

        The pause dropped is kept after the last utterance's audio while it is short
        (``long_silence``), for a short utterance that may follow (``_finalize``)."""
        keep = round(self.options.preroll * SAMPLE_RATE / self._step) * self._step
        if len(self._audio) > keep + self._step:
            dropped = (len(self._audio) - keep) // self._step * self._step
            most = round(self.options.long_silence * SAMPLE_RATE)
            if self._before is not None and not self._before.add_pause(
                    self._audio.view()[:dropped], most):
                self._before = None
            self._move_seam(len(self._audio) - keep)

    def _move_seam(self, samples: int) -> None:
        """Drop the window's first ``samples`` (rounded down to detector windows)."""
        windows = samples // self._step
        if windows <= 0:
            return
        self._audio.drop(windows * self._step)
        self._probs.drop(windows)
        self._seam += windows * self._step
        if self._decoded_at >= 0:
            self._decoded_at = max(0, self._decoded_at - windows * self._step)

    # -- decoding ------------------------------------------------------------

    def _due(self) -> bool:
        opts = self.options
        speech = self._speech_seconds()
        if speech < opts.min_speech:
            return False
        if self._decoded_at < 0:
            return speech >= opts.first_decode_speech
        window = self.window_seconds
        interval = min(opts.interval + opts.interval_per_second * window, opts.max_interval)
        return (len(self._audio) - self._decoded_at) / SAMPLE_RATE >= interval

    def _run(self, audio: np.ndarray, prefix: list[str], final: bool,
             context: str | None = None, before: int = 0) -> list[str]:
        """Decode ``audio``: the window's start on, after ``before`` samples ahead of it."""
        self.decodes += 1
        self.decoded_seconds += len(audio) / SAMPLE_RATE
        self.decode_start = (self._seam - before) / SAMPLE_RATE
        context = self._context if context is None else context
        heard = self._decode(audio, context, "".join(prefix), final)
        words = list(heard)
        if final:
            stopped = getattr(heard, "stopped_at", None)
            self._readings.append(Reading(words, None if stopped is None
                                          else stopped - before / SAMPLE_RATE))
        if log.isEnabledFor(logging.DEBUG):
            start = self.decode_start
            log.debug("= decode %.2f–%.2f s%s after %r: %r", start,
                      start + len(audio) / SAMPLE_RATE, " (final)" if final else "",
                      "".join(prefix)[-40:], "".join(words))
        return words

    def _update(self) -> list[str]:
        """Re-decode the window; carry what two hypotheses in a row agree on."""
        committed: list[str] = []
        if self.window_seconds > self.options.max_window:
            committed += self._cut()
        previous, self._decoded_at = self._decoded_at, len(self._audio)
        words = self._run(self._audio.view(), self._carried, final=False)
        if (not words and self._carried and previous > 0
                and self._speech_in(previous, self._decoded_at) >= _STALL_SPEECH):
            log.debug("= live decode read nothing of %.1f s of new speech after %r",
                      self._speech_in(previous, self._decoded_at),
                      "".join(self._carried)[-40:])
            self._stalled = True
        agree = max(0, min(_agreed(self._tentative, words), len(words) - self.options.holdback))
        self._carried += words[:agree]
        self._tentative = words[agree:]
        return committed

    def _finalize(self, end: int) -> list[str]:
        """The utterance ended at window sample ``end``: decode it once more, commit all.

        The final decode hears the whole utterance at once, with beam search,
        so it is a better reading than what the live decodes agreed on early
        with less audio ("am I fellow" for "my fellow"), and it is committed as
        it is — unless it leaves out or adds a run of the agreed words (a
        decoder that skipped its first words or looped). Then the utterance is
        decoded again from the agreed words on, as the live text was.

        A final answer shorter than the live text of a decode that heard
        nearly the same speech (at most ``_SAME_AUDIO`` less, nothing more) is
        a decoder that stopped early, not a better reading: the live text is
        kept then, so words already shown are not lost (unless the live text
        says something twice in a row, or starts by saying again the agreed
        words just before it — the signs of a loop the final avoided: "One." came
        out "1 1" when the live " 1" repeating the agreed " 1" was kept). Live
        words past the final's end that only start the utterance over ("… for
        your country. Ask") are a loop too, not words the final stopped short of,
        and so are live words past its end that only copy a phrase of the committed
        text before ("And so am I." for "ask not", right after "And so am I fellow
        America."). A final longer than that live text and than its speech can hold,
        ending in a near copy of its own words, loses the copy (``_looped_at_end``).

        A short utterance (less speech than ``min_utterance``: "Ask not", alone between
        two pauses) is first heard after the one before it, whose words it is told it
        said (``_heard_after_before``).
        """
        words: list[str] = []
        before, self._before = self._before, None
        stalled, self._stalled = self._stalled, False
        self._readings = []
        speech = self._speech_in(0, end)
        if speech >= self.options.min_speech:
            audio = self._audio.view()[:end]
            live = self._carried + self._tentative
            if before is not None and speech < self.options.min_utterance:
                words = self._heard_after_before(before, audio)
            if not words:
                words = self._run(audio, [], final=True)
            resumes = _resumes(self._context, words)
            copies = _copies(words, self._context, _COPIED_FINAL)
            holds = _holds(speech)
            overlong = bool(self._context) and len(words) > holds
            bare: list[str] | None = None  # the utterance heard without the prompt
            if resumes or copies or overlong:  # heard once more without the prompt
                bare = self._run(audio, [], final=True, context="")
                if (resumes and len(bare) > len(words)
                        and _agreed(bare[::-1], words[::-1]) >= 2):
                    log.debug("= final %r picks up the prompt's last words: %r heard "
                              "without the prompt", "".join(words), "".join(bare))
                    words = bare
                elif copies and _reads_otherwise(bare, words):
                    log.debug("= final %r only copies a phrase of its prompt: %r heard "
                              "without the prompt", "".join(words), "".join(bare))
                    words = bare
                elif overlong and bare and len(bare) <= holds:
                    log.debug("= final %r is more words than %.1f s of speech hold: %r "
                              "heard without the prompt", "".join(words), speech,
                              "".join(bare))
                    words = bare
            if self._carried and (not _keeps(self._carried, words)
                                  or self._stopped_early(words, live, end)):
                log.debug("= final %r against the agreed %r: decoded after them",
                          "".join(words), "".join(self._carried))
                words = self._carried + self._run(audio, self._carried, final=True)
            if _reads_too_few(words, speech):
                more = self._read_on(audio, words) or self._read_bare(audio, words, bare)
                log.debug("= final %r is too few words for %.1f s of speech: decoded after "
                          "them, %r", "".join(words), speech, "".join(more))
                words = words + more
            elif stalled and words:
                more = self._read_bare(audio, words, bare)
                log.debug("= final %r after live decodes that stalled: heard without the "
                          "prompt, %r after its words", "".join(words)[-40:], "".join(more))
                words = words + more
            if (self._stopped_early(words, live, end) and not _repeats(self._tentative)
                    and not _echoes(self._carried, self._tentative)):
                log.debug("= final %r shorter than live %r: kept the live text",
                          "".join(words), "".join(live))
                words = live
            elif self._stopped_early(words, live, end, near=False):
                more = self._read_on(audio, words)
                log.debug("= final %r lacks the live %r's last words: decoded after them, %r",
                          "".join(words), "".join(live), "".join(more))
                words = words + more
            elif (keep := self._looped_at_end(words, live, end)) < len(words):
                log.debug("= final %r says its last words again, which the live %r did not:"
                          " cut to %r", "".join(words), "".join(live), "".join(words[:keep]))
                words = words[:keep]
        context = self._context
        self._remember(words)
        self._carried, self._tentative = [], []
        read = self._read_to(words, end)
        seam = read // self._step * self._step  # where the window will start
        if words and read <= self.options.max_window * SAMPLE_RATE:
            self._before = _Before(self._audio.view()[:seam].copy(), list(words), context)
        self._move_seam(read)
        self._decoded_at = -1
        return words

    def _read_to(self, words: Sequence[str], end: int) -> int:
        """Window sample up to which a final's ``words`` read the utterance: ``end``, or
        where the decode that read its last words stopped, leaving speech unread.

        The window then starts there, and that speech is heard again with what follows
        (a cut's next part, the next utterance, or alone at a long pause or ``finish``),
        as Whisper's own long-form transcription goes on from that time. A read-on
        after the final's words was tried first and answers nothing there.
        """
        ends = [r for r in self._readings if r and list(words[-len(r):]) == r]
        read = ends[-1] if ends else Reading()
        if read.stopped_at is None:
            return end
        at = round(read.stopped_at * SAMPLE_RATE)
        if (read.stopped_at < _LEAST_READ or at >= end
                or self._speech_in(at, end) < _UNREAD_SPEECH):
            return end
        log.debug("= final %r stopped reading at %.2f s with %.1f s of speech after it: "
                  "heard again from there", "".join(words)[-40:],
                  (self._seam + at) / SAMPLE_RATE, self._speech_in(at, end))
        return at

    def _read_on(self, audio: np.ndarray, words: list[str]) -> list[str]:
        """What ``audio`` says after a final's ``words`` (forced), for a final that ended
        early; nothing when that answer only says words again (a loop, not speech)."""
        more = self._run(audio, words, final=True)
        return [] if _says_again(words, more, self._context) else more

    def _read_bare(self, audio: np.ndarray, words: list[str],
                   bare: list[str] | None = None) -> list[str]:
        """What ``audio`` heard without the prompt (``bare``, when already decoded) says
        after a final's ``words``.

        The committed text before an utterance can make tiny.en end its answer early,
        live decodes and final alike ("… both of today's events." with 5 s of speech
        unread); without it the same window reads on ("How can you be running with a
        cloud over your head?"). The words of that reading after the final's last ones
        (matched in a run of at least two); nothing when it does not have them or only
        says words again.
        """
        if not self._context:
            return []  # it was heard without one
        if bare is None:
            bare = self._run(audio, [], final=True, context="")
        ends = [b2 for op, a1, a2, _b1, b2 in _opcodes(words, bare)
                if op == "equal" and a2 == len(words) and a2 - a1 >= min(2, len(words))]
        more = bare[ends[0]:] if ends and words else []
        return [] if _says_again(words, more, self._context) else more

    def _heard_after_before(self, before: _Before, audio: np.ndarray) -> list[str]:
        """A short utterance's words, decoded with the utterance before it in front.

        Alone, 1.6 s of "Ask not" is a coin toss for tiny.en ("as not", "and stop"
        on the telephone copy); heard after "And so my fellow Americans," with those
        words forced, it reads "ask not". Nothing (the plain final decides) when the
        answer loops (a phrase twice in a row, more words than its speech holds: "ask
        not, ask not, ask not") or says the earlier words again.
        """
        heard = before.samples()
        words = self._run(np.concatenate([heard, audio]), before.words, final=True,
                          context=before.context, before=len(heard))
        if (len(words) > _holds(self._speech_in(0, len(audio)))
                or _says_again(before.words, words, "".join(before.words))):
            return []
        log.debug("= short utterance heard after %r: %r", "".join(before.words)[-40:],
                  "".join(words))
        return words

    def _stopped_early(self, final: Sequence[str], live: Sequence[str], end: int,
                       near: bool = True) -> bool:
        """Whether ``final`` lacks the last words of a live decode that heard the same
        speech (``near``: at most ``_SAME_AUDIO`` less), or a run of ``_LOST_TAIL`` last
        words of one that heard less: the final ended before speech a live decode read."""
        last = self._decoded_at
        if (last <= 0 or (near and last < end - _SAME_AUDIO * SAMPLE_RATE)
                or self._speech_in(end, last) > 0):
            return False
        ops = _opcodes(live, final)
        op, a1, a2, b1, b2 = ops[-1] if ops else ("equal", 0, 0, 0, 0)
        if near:
            shorter = op == "delete" or (op == "replace" and (a2 - a1) - (b2 - b1) >= 2)
        else:
            shorter = op == "delete" and a2 - a1 >= _LOST_TAIL
        return (shorter and not _starts_over(live, final, a1)
                and not _copies(live[a1:], self._context))

    def _looped_at_end(self, final: Sequence[str], live: Sequence[str], end: int) -> int:
        """How many of ``final``'s words to keep: all, unless it ends by saying its words
        before again, nearly ("some various creatures we desire and create. From various
        creatures we desire and create." on the telephone sonnet), in more words than its
        speech holds and than a live decode of nearly the same speech read. A loop with a
        word changed, which ``without_loop`` (exact copies) lets through; a phrase really
        said twice fast was in that live text too ("It was the best of times, it was the
        worst of times"), so it stays."""
        last = self._decoded_at
        if last <= 0:
            return len(final)  # no live decode: nothing to hold it to
        # what the live decode read, and what the speech it did not hear could add
        room = len(live) + round(self._speech_in(min(last, end), end) * FAST_WORDS) + 1
        spoken = self._speech_in(0, end) * FAST_WORDS
        if len(final) <= max(room, spoken):
            return len(final)
        keys, best, keep = _keys(final), _NEAR_COPY, len(final)
        for n in range(_COPIED_WORDS, len(keys) // 2 + 1):
            same = difflib.SequenceMatcher(a=keys[-2 * n : -n], b=keys[-n:],
                                           autojunk=False).ratio()
            if same >= best and len(final) - n <= room:
                best, keep = same, len(final) - n
        return keep

    def _cut(self) -> list[str]:
        """A window outgrew ``max_window`` without a pause: finalize its first part.

        The cut goes at the quietest point between the last decode's end and
        ``min_cut_age`` before now. Agreed words were all heard by the last
        decode, so they lie before the cut; the final decode of the part
        before it adds the words up to the cut, and the window restarts there
        with nothing heard twice. (Cutting at the pauses Whisper marks with
        timestamps was tried: tiny.en's timestamps on short windows are often
        whole seconds off, so cuts landed inside words.)
        """
        opts = self.options
        end = self.window_seconds
        start = max(self._decoded_at / SAMPLE_RATE, end - _CUT_SPAN)
        cut = self._quietest(start, end - opts.min_cut_age)
        log.debug("= window of %.1f s cut at %.2f s", end, (self._seam + cut) / SAMPLE_RATE)
        return self._finalize(cut)

    def _quietest(self, start: float, end: float) -> int:
        """Window sample of the detector window with the least speech in [start, end] s."""
        per_second = SAMPLE_RATE / self._step
        probs = self._probs.view()
        lo = max(0, min(len(probs) - 1, round(start * per_second)))
        hi = max(lo + 1, min(len(probs), round(end * per_second)))
        return (hi - 1 - int(np.argmin(probs[lo:hi][::-1]))) * self._step  # the latest

    def _speech_in(self, start: int, end: int) -> float:
        speech = self._speech()[start // self._step : -(-end // self._step)]
        return float(np.count_nonzero(speech)) * self._step / SAMPLE_RATE

    def _remember(self, words: Sequence[str]) -> None:
        """Words now behind the seam become context for later decodes (recent part)."""
        self._context = (self._context + "".join(words))[-self.options.context_chars :]

    def _render(self, words: Sequence[str]) -> str:
        text = "".join(words)
        if not self._started:
            text = text.lstrip()
            self._started = bool(text)
        self._emitted_chars += len(text)
        return text


@dataclass
class _Before:
    """The last utterance: its audio and the pause after it so far, its words, and the
    committed text before it."""

    audio: np.ndarray
    words: list[str]
    context: str
    pauses: list[np.ndarray] = field(default_factory=list)  # joined only when heard

    def add_pause(self, pause: np.ndarray, most: int) -> bool:
        """Add ``pause`` after it; False (forget it) once the pause passes ``most``."""
        if sum(map(len, self.pauses)) + len(pause) > most:
            return False
        self.pauses.append(pause.copy())
        return True

    def samples(self) -> np.ndarray:
        return np.concatenate([self.audio, *self.pauses])


def _holds(speech: float) -> float:
    """The most words ``speech`` seconds can hold, with one to spare."""
    return FAST_WORDS * speech + 1


def _reads_too_few(final: Sequence[str], speech: float) -> bool:
    """Whether ``final`` is far fewer words than ``speech`` seconds hold: a decoder that
    ended its answer early, and the live decodes with it (tiny.en read a telephone line's
    "Thy self thy foe, to thy sweet self too cruel" as "By self-" and stopped, 4 s of
    speech unread). An empty final is left alone: that is noise read as nothing."""
    said = sum(max(1, len(_UNSPACED.findall(word))) for word in final)
    return bool(final) and speech >= _SPARSE_SPEECH and said < speech * _SPARSE_RATE


def _keys(words: Sequence[str]) -> list[str]:
    return [word_key(w) for w in words]


def _opcodes(old: Sequence[str], new: Sequence[str]) -> list[tuple[str, int, int, int, int]]:
    """How ``new`` differs from ``old``, word by word (difflib's opcodes, on word keys)."""
    return difflib.SequenceMatcher(a=_keys(old), b=_keys(new), autojunk=False).get_opcodes()


def _resumes(context: str, words: Sequence[str]) -> bool:
    """Whether ``words`` start with a phrase the end of ``context`` has already said.

    When speech says a phrase again ("ask not what your country can do for you,
    ask what you can do for your country"), Whisper given the first saying as
    its prompt may take it for said and skip ahead to where the repeat goes on
    ("can do for your country").
    """
    head = _keys(words[:2])
    said = _keys(context.split()[-_RESUME_WORDS:])
    return len(head) == 2 and _has_run(said, head)


def _agreed(old: Sequence[str], new: Sequence[str]) -> int:
    """How many words two hypotheses share from their start."""
    count = 0
    for a, b in zip(old, new, strict=False):
        if word_key(a) != word_key(b):
            break
        count += 1
    return count


def _keeps(agreed: Sequence[str], final: Sequence[str]) -> bool:
    """Whether ``final`` says the agreed words, up to single words read differently.

    Two or more agreed words missing in a row (not read as other words) is a
    final that skipped speech; three or more words added among them that the
    final also says elsewhere is a final that looped. (Words added that it says
    nowhere else are speech the live decodes skipped.)
    """
    if not agreed:
        return True
    b = _keys(final)
    for op, a1, a2, b1, b2 in _opcodes(agreed, final):
        if op == "delete" and a2 - a1 >= 2:
            return False
        added = b[b1:b2]
        if op != "delete" and len(added) - (a2 - a1) >= 3 and a1 < len(agreed):
            rest = [*b[:b1], "|", *b[b2:]]
            if _has_run(rest, added[:2]):
                return False
    return True


def _repeats(words: Sequence[str]) -> bool:
    """Whether some phrase is said twice in a row ("Ask not. Ask not.")."""
    keys = _keys(words)
    return any(keys[i : i + n] == keys[i + n : i + 2 * n]
               for n in range(1, len(keys) // 2 + 1) for i in range(len(keys) - 2 * n + 1))


def _echoes(before: Sequence[str], after: Sequence[str]) -> bool:
    """Whether ``after`` starts by saying again the last words of ``before``."""
    head = _keys(after)
    tail = _keys(before[-len(head):]) if head else []
    return any(tail[len(tail) - n:] == head[:n] for n in range(1, min(len(tail), len(head)) + 1))


def _says_again(forced: Sequence[str], answer: Sequence[str], text: str) -> bool:
    """Whether ``answer``, decoded after the ``forced`` words, only says words again: a
    phrase twice in a row, the forced words' last ones, or a phrase of ``text``."""
    return _repeats(answer) or _echoes(forced, answer) or _copies(answer, text)


def _starts_over(live: Sequence[str], final: Sequence[str], past: int) -> bool:
    """Whether the live words from ``past`` on (those past the final's end) say the
    utterance's first words again, as either reading has them (live "As what … country.
    Ask", final "Ask what …")."""
    n = len(live) - past
    return 0 < n < len(live) and _keys(live[past:]) in (_keys(live[:n]), _keys(final[:n]))


def _copies(words: Sequence[str], context: str, least: int = _COPIED_WORDS) -> bool:
    """Whether ``words`` (``least`` or more) only say again a phrase of ``context``."""
    again = _keys(words)
    return len(again) >= least and _has_run(_keys(context.split()), again)


def _reads_otherwise(bare: Sequence[str], words: Sequence[str]) -> bool:
    """Whether ``bare`` (heard without the prompt) reads the audio as other words than
    ``words`` (heard with it), not the same words worse. Without its prompt Whisper
    reads a short phrase worse, not otherwise: Kennedy's "Ask not!" said again came out
    "AS NOT…", "S S", "... ..." or "Stop! Stop!"; taking those lost the words really
    said again."""
    keys = _keys(bare)
    if not any(sum(map(str.isalnum, key)) >= _REAL_WORD for key in keys):
        return False  # letters or dots: nothing read, the prompted reading stands
    if _repeats(bare) and not _repeats(words):
        return False  # a phrase twice in a row: a loop, not another reading
    same = difflib.SequenceMatcher(a="".join(keys), b="".join(_keys(words)),
                                   autojunk=False).ratio()
    return same < _SAME_LETTERS


def _has_run(keys: Sequence[str], run: Sequence[str]) -> bool:
    """Whether ``run`` occurs in ``keys`` as consecutive items."""
    n = len(run)
    return any(keys[i : i + n] == run for i in range(len(keys) - n + 1))


class _Samples:
    """A growable 1-D float32 array that drops from the front without copying often."""

    def __init__(self) -> None:
        self._data = np.zeros(1024, dtype=np.float32)
        self._start = 0
        self._end = 0

    def __len__(self) -> int:
        return self._end - self._start

    def view(self) -> np.ndarray:
        return self._data[self._start : self._end]

    def extend(self, values: np.ndarray) -> None:
        count = len(values)
        if self._end + count > len(self._data):
            live = self._data[self._start : self._end]
            size = max(1024, 2 * (len(live) + count))
            if size <= len(self._data):  # enough room once the dropped front is reused
                size = len(self._data)
            data = np.zeros(size, dtype=np.float32)
            data[: len(live)] = live
            self._data, self._start, self._end = data, 0, len(live)
        self._data[self._end : self._end + count] = values
        self._end += count

    def drop(self, count: int) -> None:
        self._start = min(self._end, self._start + count)
