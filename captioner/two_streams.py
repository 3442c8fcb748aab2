"""Two-stream captioning: the microphone ("You") and the system audio ("Others"),
each on its own session, merged into one caption stream with speaker names.

Same surface as :class:`~captioner.captioning.Captioner` (``run``/``stop``), so
the GUI controller and ``captioner listen`` drive either. Both sessions use the
same endpoint: with the embedded engine the one loaded model serves both (its
server gives every connection a transcriber of its own); a cloud endpoint gets
two concurrent sessions.

Echo: without headphones the microphone also hears the others. Besides the
audio filter in :class:`~captioner.audio.dual.DualCapture`, every finalized
"You" line passes :attr:`TwoStreamCaptioner.mic_line_filter`, which sees the
"Others" lines of the last ``RECENT_OTHERS_SECONDS`` and may drop or trim it. A mic
line that ends while the others are still mid-sentence is held until their line of
that moment is final (at most ``HOLD_SECONDS`` of their audio), so the filter sees it
whichever stream finished first
(:func:`~captioner.transcript.echo_text.suppress_echo` unless echo cancellation is
turned off).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Protocol

from captioner.aiotasks import cancel_and_wait
from captioner.audio.capture import AudioCapture
from captioner.audio.devices import list_devices
from captioner.audio.dual import DualCapture
from captioner.audio.handover import unwrapped
from captioner.audio.reply_cancel import PlayedAudio, hears_replies, reply_filter
from captioner.captioning import (
    AudioSource,
    Captioner,
    EmbeddedEngine,
    make_connector,
    session_options,
)
from captioner.realtime.captions import CaptionLine, CaptionModel, CaptionUpdate, LineKind
from captioner.realtime.speakers import SpeakerMerge, in_time_order
from captioner.session import CaptionSession, SessionState, SessionStatus
from captioner.settings import AudioSettings, Settings
from captioner.transcript.echo_text import suppress_echo
from captioner.transport.endpoint_url import parse_endpoint

RECENT_OTHERS_SECONDS = 10.0  # audio time of "Others" lines a mic line is checked against
# A mic line said while the others were still speaking waits for their line of that moment
# (the echo it may repeat), at most this long in their audio.
HOLD_SECONDS = 4.0
CONCURRENT_SECONDS = 1.0  # others' live text starting this soon after a mic line overlaps it

class TwoSources(Protocol):
    """Microphone and system audio as two chunk streams (live: DualCapture; a stereo
    call recording: StereoCall)."""

    level_dbfs: float
    dropped_chunks: int

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    def mic_chunks(self) -> AsyncIterator[bytes]: ...
    def system_chunks(self) -> AsyncIterator[bytes]: ...


# A finalized mic line and the recent "Others" lines → the line to show, or None to drop.
MicLineFilter = Callable[[CaptionLine, Sequence[CaptionLine]], CaptionLine | None]


def keep_line(line: CaptionLine, recent_others: Sequence[CaptionLine]) -> CaptionLine | None:
    """No text-level echo suppression."""
    return line


# worst first: the combined status shows the stream in the most trouble
_TROUBLE = (SessionState.FAILED, SessionState.RECONNECTING, SessionState.CONNECTING,
            SessionState.STOPPING, SessionState.LIVE, SessionState.STOPPED)


class TwoStreamCaptioner:
    """One run of two labelled sessions over two sources (a :class:`DualCapture`)."""

    def __init__(
        self,
        settings: Settings,
        source: TwoSources,
        *,
        embedded: EmbeddedEngine | None = None,
        endpoint: str | None = None,
        on_update: Callable[[CaptionUpdate], None] | None = None,
        on_status: Callable[[SessionStatus], None] | None = None,
        fail_fast: bool = False,
        mic_line_filter: MicLineFilter | None = None,
    ) -> None:
        """``mic_line_filter``: by default :func:`suppress_echo` when ``audio.echo_cancel``
        is on, else every mic line is kept."""
        self.settings = settings
        self.spec = parse_endpoint(endpoint or settings.recognition.endpoint)
        self.source = source
        self.embedded = embedded or EmbeddedEngine(settings)
        self._own_engine = embedded is None
        self.you, self.others = settings.audio.labels()
        if mic_line_filter is None:
            mic_line_filter = suppress_echo if settings.audio.echo_cancel else keep_line
        self.mic_line_filter = mic_line_filter
        self.on_update = on_update
        self.on_status = on_status
        self._merge = SpeakerMerge()
        self._unconfirmed = ""  # the unconfirmed words of the last update passed on
        self._held: collections.deque[CaptionLine] = collections.deque()  # mic lines waiting
        self._others_pending: tuple[CaptionLine | None, str] = (None, "")  # their live text
        self.lines: list[CaptionLine] = []  # finalized lines shown, as they came
        self._recent: collections.deque[CaptionLine] = collections.deque()
        self._statuses: dict[str, SessionStatus] = {}
        options = session_options(settings, self.spec, fail_fast=fail_fast)
        self.sessions = {
            name: CaptionSession(
                make_connector(self.spec, settings, self.embedded), options,
                captions=CaptionModel(speaker=name),
                on_update=lambda update, name=name: self._update(name, update),
                on_status=lambda status, name=name: self._status(name, status),
            )
            for name in (self.you, self.others)
        }

    @property
    def session(self) -> CaptionSession:
        """The "You" session (its stats; :attr:`sessions` has both)."""
        return self.sessions[self.you]

    def stats_summary(self) -> str:
        return "; ".join(f"{name}: {s.stats.summary()}" for name, s in self.sessions.items())

    async def run(self) -> list[CaptionLine]:
        """Caption both streams until :meth:`stop`; returns the lines shown, in time order.
        Raises SessionFailed (or CaptureError) when either stream cannot go on; the
        other is then stopped too."""
        await self.source.start()
        tasks = {
            asyncio.create_task(self.sessions[self.you].run(self.source.mic_chunks())),
            asyncio.create_task(self.sessions[self.others].run(self.source.system_chunks())),
        }
        try:
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            failed = [t for t in done if t.exception() is not None]
            if failed:
                await cancel_and_wait(pending)
                raise failed[0].exception()  # type: ignore[misc]
        finally:
            for task in tasks:
                task.cancel()
            await self.source.stop()
            self.session.stats.dropped_frames = self.source.dropped_chunks
            if self._own_engine:
                await self.embedded.close()
        self._pass_on(CaptionUpdate(tuple(self._release(force=True))))
        return in_time_order(self.lines)

    def switch(self, settings: Settings, endpoint: str) -> None:
        """Both sessions go on on ``endpoint`` (see :meth:`Captioner.switch`)."""
        self.settings, self.spec = settings, parse_endpoint(endpoint)
        options = session_options(settings, self.spec)
        for session in self.sessions.values():
            session.switch(make_connector(self.spec, settings, self.embedded), options)

    def stop(self) -> None:
        """Graceful: both sessions finish with what was captured."""
        for session in self.sessions.values():
            session.stop()

    # --- merging ------------------------------------------------------------

    def _update(self, speaker: str, update: CaptionUpdate) -> None:
        finalized: tuple[CaptionLine, ...] = ()
        if speaker == self.others:
            finalized = update.finalized
            self._remember(finalized)
            self._others_pending = (update.live, update.unconfirmed)
        else:
            self._held.extend(update.finalized)
        released = self._release()
        if released:
            finalized = tuple(sorted((*finalized, *released), key=lambda line: line.start))
        self._pass_on(self._merge.apply(speaker, CaptionUpdate(finalized, update.live,
                                                                update.unconfirmed)))

    def _pass_on(self, merged: CaptionUpdate) -> None:
        self.lines.extend(merged.finalized)
        cleared, self._unconfirmed = merged.unconfirmed != self._unconfirmed, merged.unconfirmed
        if self.on_update is not None and (merged.finalized or merged.live is not None
                                           or cleared):
            self.on_update(merged)

    def _release(self, force: bool = False) -> list[CaptionLine]:
        """Held mic lines whose moment the others have finished, through the filter."""
        out = []
        while self._held and (force or self._settled(self._held[0])):
            kept = self._filter_mic(self._held.popleft())
            if kept is not None:
                out.append(kept)
        return out

    def _settled(self, line: CaptionLine) -> bool:
        live, unconfirmed = self._others_pending
        overlapping = bool(unconfirmed) or (
            live is not None and live.start <= line.end + CONCURRENT_SECONDS)
        waited = self.sessions[self.others].stats.audio_seconds - line.end
        return not overlapping or waited >= HOLD_SECONDS

    def _filter_mic(self, line: CaptionLine) -> CaptionLine | None:
        if line.kind is not LineKind.SPEECH:
            return line
        return self.mic_line_filter(line, tuple(self._recent))

    def _remember(self, lines: Sequence[CaptionLine]) -> None:
        self._recent.extend(line for line in lines if line.kind is LineKind.SPEECH)
        if self._recent:
            horizon = self._recent[-1].end - RECENT_OTHERS_SECONDS
            while self._recent and self._recent[0].end < horizon:
                self._recent.popleft()

    def _status(self, speaker: str, status: SessionStatus) -> None:
        self._statuses[speaker] = status
        worst = min(self._statuses.items(), key=lambda item: _TROUBLE.index(item[1].state))
        name, combined = worst
        if combined.detail and len(self._statuses) > 1:
            combined = SessionStatus(combined.state, f"{name}: {combined.detail}",
                                     combined.retry_in)
        if self.on_status is not None:
            self.on_status(combined)


def open_source(audio: AudioSettings, played: PlayedAudio | None = None
                ) -> AudioSource | DualCapture:
    """The capture the settings ask for (one stream, or two). Raises AudioError.

    ``played``: the app's spoken replies, cancelled from what is captured when it hears
    them (see ``hears_replies``)."""
    if audio.two_streams:
        return DualCapture.from_settings(audio, played=played)
    devices = list_devices()
    return AudioCapture.from_settings(
        audio, devices,
        chunk_filter=reply_filter(played, hears_replies(audio, audio.source, devices)))


def captioner_for(settings: Settings, source: AudioSource | DualCapture, **options: Any
                  ) -> Captioner | TwoStreamCaptioner:
    """One labelled pair of sessions for a :class:`DualCapture`, else one session."""
    if isinstance(unwrapped(source), DualCapture):
        return TwoStreamCaptioner(settings, source, **options)
    return Captioner(settings, source, **options)


__all__ = ["MicLineFilter", "TwoSources", "TwoStreamCaptioner", "captioner_for", "keep_line",
           "open_source"]
