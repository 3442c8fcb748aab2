"""The session's decisions as plain code: when to retry, rotate, call a stall, resume where.

No I/O and no clocks: every input is audio time in seconds (how much audio has been
sent, how old the request is, how long the audio has been quiet) or an error, and
every output is a decision the driver (:mod:`captioner.session.caption_session`)
carries out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from captioner.realtime.client_protocol import TOKENS_PER_SECOND
from captioner.session.audio_log import AudioLog
from captioner.session.seam import Repeat, WordTimeline
from captioner.transport.base import EndpointError, TransportError

# --- levels -------------------------------------------------------------------------
SPEECH_RMS = 0.01  # ≈ -40 dBFS: above it (and the noise), audio counts as sound
PAUSE_RMS = 0.006  # below it (or near the noise floor), audio counts as a pause
NOISE_WINDOW_SECONDS = 10.0  # the noise floor is measured over this much recent audio
PAUSE_OVER_FLOOR = 1.6  # a pause: within this factor of the noise floor
SOUND_OVER_FLOOR = 3.0  # sound: this far above it

# --- stalls ---------------------------------------------------------------------------
STALL_SPEECH_SECONDS = 4.0  # sound without text this long = the server stopped talking
STALL_MAX_SECONDS = 60.0
STALL_RECURRENCE_TOLERANCE = 0.25  # stalls at request ages within ±25 % "recur"
STALL_ROTATE_FRACTION = 0.7  # then rotate at 70 % of the age text stopped at

# --- rotation -------------------------------------------------------------------------
CONTEXT_ROTATE_FRACTION = 0.8  # of the learned context limit: start looking for a pause
CONTEXT_FORCE_FRACTION = 0.95  # of the limit: rotate even without a pause
MIN_ROTATE_SECONDS = 5.0  # what the server teaches never makes requests shorter

# --- resuming -------------------------------------------------------------------------
RESUME_LOOKBACK_SECONDS = 3.0  # a word may arrive this long after its audio when the
# sender runs ahead of the server (bursts, fast files, a loaded machine): replay at least it
RESUME_SEARCH_SECONDS = 3.0  # then look this far further back for a pause
RESUME_MIN_PAUSE_SECONDS = 0.16  # a pause this long separates two words for certain
RESUME_MARGIN_SECONDS = 0.1  # the resume point stays this far before the last word's end

# --- connecting -----------------------------------------------------------------------
FIRST_CONNECT_BUDGET_SECONDS = 120.0  # how long a refusing endpoint is retried at start
BACKOFF_INITIAL_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class Levels:
    """What counts as a pause and as sound, given the recent noise floor."""

    pause: float = PAUSE_RMS
    sound: float = SPEECH_RMS

    @classmethod
    def over(cls, noise_floor: float) -> Levels:
        return cls(max(PAUSE_RMS, PAUSE_OVER_FLOOR * noise_floor),
                   max(SPEECH_RMS, SOUND_OVER_FLOOR * noise_floor))


def backoff_delay(attempt: int, *, initial: float, cap: float, jitter: float) -> float:
    """Capped exponential backoff; ``jitter`` in [0, 1] spreads it over [½, 1]×."""
    growth = 2 ** min(max(attempt, 1) - 1, 20)
    return min(cap, initial * growth) * (0.5 + 0.5 * jitter)


def retry_connect(exc: TransportError, *, ever_connected: bool, waited: float,
                  fail_fast: bool) -> bool:
    """Retry a failed connection attempt?

    Never what retrying cannot fix (bad credentials, a model or route that does not
    exist). Once connected, every retryable failure is an outage: wait it out. At the
    first connection, an endpoint that answers with a refusal it gives while starting
    (503, 424 "model container is loading"…) is retried for at most
    FIRST_CONNECT_BUDGET_SECONDS; a socket that cannot be reached is retried in the app
    but fails at once with ``fail_fast`` (the CLI: most likely a wrong URL).
    """
    if not exc.retryable:
        return False
    if ever_connected:
        return True
    if isinstance(exc, EndpointError):
        return waited < FIRST_CONNECT_BUDGET_SECONDS
    return not fail_fast


@dataclass
class StallWatch:
    """Sound keeps flowing but text has stopped: count the sound since the last text.

    A request started again after a stall that says nothing about new sound either
    probably hears no words (music, noise): each further stall waits twice as long,
    up to STALL_MAX_SECONDS, until text comes back.
    """

    base: float = STALL_SPEECH_SECONDS
    limit: float = STALL_SPEECH_SECONDS
    sound_since_text: float = 0.0

    def text(self) -> None:
        self.sound_since_text = 0.0
        self.limit = self.base

    def audio(self, duration: float, level: float, levels: Levels) -> bool:
        """``duration`` s of new audio at ``level`` sent; True = the request has stalled."""
        if level >= levels.sound:
            self.sound_since_text += duration
        return self.sound_since_text >= self.limit

    def restarted(self) -> None:
        self.sound_since_text = 0.0
        self.limit = min(STALL_MAX_SECONDS, 2 * self.limit)


@dataclass
class RotationPolicy:
    """When to end a request and start a fresh one: before the server's context limit
    and before the request age at which text has been stopping."""

    configured: float  # seconds of audio per request from the settings
    grace: float  # how long to wait for a pause once due
    context_limit: float | None = None  # seconds of audio a request can hold
    stall_ages: list[float] = field(default_factory=list)
    learned_from_stalls: float | None = None

    def learn_context(self, max_model_len: int | None, request_age: float) -> None:
        """A context-limit error: the limit in tokens if the server named it, else the
        request age at which it happened."""
        limit = max_model_len / TOKENS_PER_SECOND if max_model_len else request_age
        if limit > 0 and (self.context_limit is None or limit < self.context_limit):
            self.context_limit = limit

    def learn_stall(self, age: float) -> None:
        """Text stopped at request age ``age``; a second stall at a similar age makes
        requests rotate before it."""
        for earlier in self.stall_ages:
            if abs(age - earlier) <= STALL_RECURRENCE_TOLERANCE * max(age, earlier):
                shorter = max(MIN_ROTATE_SECONDS, STALL_ROTATE_FRACTION * min(age, earlier))
                if self.learned_from_stalls is None or shorter < self.learned_from_stalls:
                    self.learned_from_stalls = shorter
        self.stall_ages.append(age)

    @property
    def due_after(self) -> float:
        """Request age from which a pause is used to rotate."""
        due = self.configured
        if self.context_limit is not None:
            due = min(due, max(MIN_ROTATE_SECONDS, CONTEXT_ROTATE_FRACTION * self.context_limit))
        if self.learned_from_stalls is not None:
            due = min(due, self.learned_from_stalls)
        return due

    @property
    def forced_after(self) -> float:
        """Request age at which rotation happens even without a pause."""
        forced = self.due_after + self.grace
        if self.context_limit is not None:
            forced = min(forced, CONTEXT_FORCE_FRACTION * self.context_limit)
        return max(self.due_after, forced)

    def decide(self, age: float, at_pause: bool) -> bool:
        return age >= self.forced_after or (age >= self.due_after and at_pause)


@dataclass(frozen=True, slots=True)
class ResumePlan:
    """Start the next request at ``position`` (seconds); ``repeated`` are the shown
    words whose audio it covers again, which the seam removes. ``lost`` is audio that
    was not transcribed and is no longer kept (an outage longer than the buffer)."""

    position: float
    repeated: Repeat
    lost: tuple[float, float] | None = None


def resume_plan(audio: AudioLog, timeline: WordTimeline, *, sent: float, levels: Levels,
                floor: float = 0.0, sound_since: float | None = 0.0) -> ResumePlan:
    """Where a replacement request starts: at a pause safely before the audio of the
    last word that came back, so the words after it — lost in flight or in a stall — are
    said again, and we know in seconds which shown words it may repeat. ``floor``: start
    no earlier (a forced rotation must move forward). ``sound_since``: where the first
    sound captured after the last word came back began (None: only silence since), so
    silence older than the buffer is not reported lost."""
    last = timeline.last_arrival
    lookback = max(timeline.latency, RESUME_LOOKBACK_SECONDS) + RESUME_MARGIN_SECONDS
    target = floor if last is None else max(floor, min(sent, last - lookback))
    lost = None
    if target < audio.start_seconds:
        if sound_since is not None and sound_since < audio.start_seconds:
            # the sound's words would have come back a latency after it
            lost = (max(target, sound_since - timeline.latency), audio.start_seconds)
        target = audio.start_seconds
    search_from = max(audio.start_seconds, floor, target - RESUME_SEARCH_SECONDS)
    runs = audio.quiet_runs(search_from, target, levels.pause, RESUME_MIN_PAUSE_SECONDS)
    if lost is not None or last is None:
        position = target  # nothing before it can be replayed or was heard
    elif runs:
        start, end = runs[-1]
        position = (start + end) / 2
    else:
        position = audio.quietest(search_from, target) if target > search_from else target
    return ResumePlan(position, timeline.after(position), lost)
