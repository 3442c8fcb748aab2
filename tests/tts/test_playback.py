"""Replies played into a real PulseAudio null sink, checked at the sink's monitor."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time

import numpy as np
import pytest
from scipy import signal

from captioner.audio.playback import (
    PlaybackError,
    Player,
    list_output_devices,
    resolve_output_device,
)
from captioner.audio.streams import CLOSE_TIMEOUT
from captioner.transport.websocket import websocket_connector
from captioner.tts.errors import OutputGone
from captioner.tts.events import SessionConfig
from captioner.tts.speaker import ReplyResult, Speaker, SpeakerState, SpeakerStatus
from tests.support.omni_server import ThreadedOmniServer
from tests.support.pulse import Headset

RATE = 24_000
TEXT = "This reply is played on the null sink. It arrives in chunks over time."


class MonitorRecorder:
    """parec of a monitor source at 24 kHz mono, read continuously in a thread."""

    def __init__(self, pulse, source: str) -> None:
        self.data = bytearray()
        self._changed = threading.Condition()
        self._proc = subprocess.Popen(
            ["parec", "-d", source, "--format=s16le", f"--rate={RATE}", "--channels=1",
             "--raw", "--latency-msec=20"],
            env=pulse.daemon.env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        while chunk := self._proc.stdout.read1(4096):
            with self._changed:
                self.data += chunk
                self._changed.notify_all()

    def samples(self) -> np.ndarray:
        with self._changed:
            raw = bytes(self.data[: len(self.data) // 2 * 2])
        return np.frombuffer(raw, "<i2").astype(np.float64) / 32768.0

    def wait_for(self, predicate, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self), timeout)

    def stop(self) -> None:
        self._proc.terminate()
        self._proc.wait(10)
        self._thread.join(10)


def _loud(x: np.ndarray, threshold: float = 0.02) -> np.ndarray:
    return np.flatnonzero(np.abs(x) > threshold)


def _finished(rec: MonitorRecorder) -> bool:
    """Sound was heard and has been followed by 300 ms of silence."""
    x = rec.samples()
    loud = _loud(x)
    return len(loud) > 0 and len(x) - loud[-1] > 0.3 * RATE


def _best_ncc(recorded: np.ndarray, sent: np.ndarray) -> float:
    """Normalised cross-correlation of ``sent`` against every window of ``recorded``."""
    corr = signal.correlate(recorded, sent, mode="valid", method="fft")
    energy = np.concatenate([[0.0], np.cumsum(recorded**2)])
    window = energy[len(sent):] - energy[: len(energy) - len(sent)]
    ncc = corr / (np.sqrt(np.maximum(window, 1e-12)) * np.linalg.norm(sent))
    return float(np.max(ncc))


def speak(omni_server: ThreadedOmniServer, player: Player, text: str):
    """Open ``player``, speak ``text`` through the local server, close; (result, stats)."""

    async def main():
        await player.open()
        try:
            speaker = Speaker(websocket_connector(omni_server.url), player,
                              SessionConfig(voice="vivian", language="English"))
            result = await speaker.speak(text)
            return result, player.stats()
        finally:
            await player.close()

    return asyncio.run(asyncio.wait_for(main(), 30))


def test_reply_reaches_the_sink_intact_and_starts_before_the_last_chunk(
        pulse, omni_server: ThreadedOmniServer) -> None:
    omni_server.behavior.realtime_factor = 0.5  # chunks arrive over ~1.1 s for ~2.2 s of audio
    omni_server.behavior.chunk_ms = 40
    recorder = MonitorRecorder(pulse, pulse.monitor)
    player = Player("pulse", prebuffer_ms=150)  # headroom for a busy test machine

    try:
        result, stats = speak(omni_server, player, TEXT)
        assert recorder.wait_for(_finished, 10), "no complete reply reached the sink's monitor"
        recorded = recorder.samples()
    finally:
        recorder.stop()

    session = omni_server.sessions[0]
    assert result.completed and result.via == "endpoint"
    sent = np.frombuffer(bytes(session.pcm), "<i2").astype(np.float64) / 32768.0
    # Playback began while the server was still sending.
    assert stats.first_sample_at is not None and session.last_chunk_sent_at is not None
    assert stats.first_sample_at < session.last_chunk_sent_at
    assert stats.first_write_at is not None and stats.first_write_at <= stats.first_sample_at
    # The server ran ahead, so the playout controller never stretched: what the sink
    # played is what the server sent, sample for sample after resampling.
    assert stats.max_stretch_used == 0.0 and stats.stretched_frames == 0
    heard, said = _loud(recorded), _loud(sent)
    heard_s = (heard[-1] - heard[0]) / RATE
    said_s = (said[-1] - said[0]) / RATE
    assert heard_s == pytest.approx(said_s, rel=0.03)
    start = max(0, heard[0] - RATE // 10)
    segment = recorded[start: heard[-1] + RATE // 10]
    ncc = _best_ncc(segment, sent[said[0]: said[-1]])
    assert ncc >= 0.9, f"played audio differs from what was sent ({stats})"


def test_cancel_silences_the_sink_at_once(pulse, omni_server: ThreadedOmniServer) -> None:
    omni_server.behavior.min_sentence_seconds = 4.0  # one long sentence, sent at once
    recorder = MonitorRecorder(pulse, pulse.monitor)
    player = Player("pulse", prebuffer_ms=80)
    marks: dict[str, float] = {}

    async def main():
        await player.open()
        try:
            speaker = Speaker(websocket_connector(omni_server.url), player,
                              SessionConfig(voice="vivian", language="English"))
            speaker.say("Long.")
            loop = asyncio.get_running_loop()
            heard = await loop.run_in_executor(
                None, recorder.wait_for, lambda r: len(_loud(r.samples())) > RATE // 2, 10)
            assert heard, "the reply never started playing"
            marks["stop"] = len(recorder.samples())
            speaker.stop()
            await speaker.wait_idle()
            await speaker.aclose()
        finally:
            await player.close()

    try:
        asyncio.run(asyncio.wait_for(main(), 30))
        assert recorder.wait_for(lambda r: len(r.data) // 2 > marks["stop"] + RATE, 10)
        recorded = recorder.samples()
    finally:
        recorder.stop()
    after = recorded[int(marks["stop"]):]
    loud_after = _loud(after)
    # Only what was already in the device's own buffers may still sound (≪ 4 s).
    assert len(loud_after) == 0 or loud_after[-1] < 0.5 * RATE
    assert len(recorded) > marks["stop"] + RATE


def test_unknown_output_device_is_a_readable_error(pulse) -> None:
    with pytest.raises(PlaybackError, match="no audio output named 'Nowhere'; outputs: #"):
        resolve_output_device("Nowhere")


def test_output_device_by_index_and_by_name(pulse) -> None:
    by_name = resolve_output_device("pulse")
    assert resolve_output_device(by_name.index) == by_name
    assert resolve_output_device(str(by_name.index)) == by_name
    with pytest.raises(PlaybackError, match="#999"):
        resolve_output_device(999)


def test_each_pulse_sink_is_an_output_and_a_reply_plays_into_the_one_picked(pulse) -> None:
    """A call's virtual microphone on Linux is a Pulse sink: ALSA's "pulse" and "default"
    only reach the default sink, so each sink is listed and opened by its own name."""
    monitor = pulse.null_sink("captioner_reply_out")
    outputs = list_output_devices()
    (picked,) = [d for d in outputs if d.pulse_name == "captioner_reply_out"]
    assert picked.name == "captioner_reply_out"  # its description, as the desktop shows it
    assert any(d.pulse_name == pulse.sink for d in outputs)
    assert not {"pulse", "default"} & {d.name for d in outputs}
    assert resolve_output_device("pulse").pulse_name is None  # a name saved before still opens
    assert resolve_output_device(picked.index) == picked  # the number `say --list-devices` shows
    assert len({d.index for d in outputs}) == len(outputs)
    there, default = MonitorRecorder(pulse, monitor), MonitorRecorder(pulse, pulse.monitor)
    tone = (0.3 * np.sin(2 * np.pi * 440 * np.arange(RATE // 2) / RATE) * 32767).astype("<i2")

    async def main():
        player = Player(picked.name, prebuffer_ms=80)
        await player.open()
        try:
            player.start_reply(RATE)
            await player.write(tone.tobytes())
            player.finish_reply()
            await asyncio.wait_for(player.drained(), 5)
        finally:
            await player.close()

    try:
        asyncio.run(asyncio.wait_for(main(), 20))
        assert there.wait_for(lambda rec: len(_loud(rec.samples())) > RATE // 4, 10), (
            "the tone did not reach the picked sink")
    finally:
        there.stop()
        default.stop()
    assert len(_loud(default.samples())) == 0  # nothing on the default sink


def test_player_counts_an_underrun_when_the_network_falls_behind(pulse) -> None:
    tone = (0.3 * np.sin(2 * np.pi * 440 * np.arange(RATE // 5) / RATE) * 32767).astype("<i2")

    async def main():
        ran_dry = asyncio.Event()
        player = Player("pulse", prebuffer_ms=40, on_underrun=lambda _total: ran_dry.set())
        await player.open()
        try:
            player.start_reply(RATE)
            await player.write(tone.tobytes())  # 200 ms, then nothing: the ring runs dry
            await asyncio.wait_for(ran_dry.wait(), 5)
            underruns = player.stats().underruns
            await player.write(tone.tobytes())
            player.finish_reply()
            await asyncio.wait_for(player.drained(), 5)
            return underruns, player.stats()
        finally:
            await player.close()

    underruns, stats = asyncio.run(asyncio.wait_for(main(), 20))
    assert underruns == 1
    assert stats.underruns == 1  # the end of a reply is not an underrun
    assert stats.samples_played >= 2 * (RATE // 5) * stats.device_rate // RATE - 64


def test_reply_paced_at_exactly_real_time_plays_without_underruns(
        pulse, omni_server: ThreadedOmniServer) -> None:
    """The server sends each 80 ms chunk exactly when its audio is due (1.0×).

    The device reads a whole period (~30 ms) ahead of its clock, so a start on the
    first chunk's arrival runs dry at one of the next chunk boundaries; the start must
    be placed on the device's clock after its read-ahead and the resampler's look-ahead.
    """
    omni_server.behavior.realtime_factor = 1.0
    omni_server.behavior.chunk_ms = 80
    omni_server.behavior.seconds_per_char = 0.03
    text = "This reply arrives exactly as fast as it plays. " * 2  # ~3 s of audio
    player = Player("pulse", prebuffer_ms=20)  # headroom for a busy test machine

    result, stats = speak(omni_server, player, text)
    assert result.completed and result.first_audio_at is not None
    session = omni_server.sessions[0]
    sent_frames = len(session.pcm) // 2 * stats.device_rate // RATE
    assert stats.samples_played >= sent_frames - 64
    assert stats.underruns == 0, f"the ring ran dry ({stats})"
    # Any stretch the playout controller used to grow the margin stayed within its bound.
    assert stats.samples_played == pytest.approx(sent_frames + stats.stretched_frames, abs=64)
    assert 0 <= stats.stretched_frames <= 0.03 * sent_frames
    # The start waited for the device's read-ahead, not for more chunks.
    assert stats.first_sample_due is not None and stats.first_sample_at is not None
    budget = (stats.read_ahead / stats.device_rate + 0.020 + 0.010)
    assert stats.first_sample_due - result.first_audio_at <= budget + 0.010


def _stretched_match(recorded: np.ndarray, segment: np.ndarray, near: int,
                     stretches: np.ndarray) -> tuple[float, float, int]:
    """Best (NCC, stretch, position) of ``segment`` played slower by one of ``stretches``,
    searched within 100 ms of ``near`` in ``recorded``."""
    lo = max(0, near - RATE // 10)
    window = recorded[lo: near + len(segment) * 11 // 10 + RATE // 10]
    best = (-1.0, 0.0, 0)
    for stretch in stretches:
        n = int(len(segment) * (1 + stretch))
        slow = np.interp(np.arange(n) / (1 + stretch), np.arange(len(segment)), segment)
        corr = signal.correlate(window, slow, mode="valid", method="fft")
        energy = np.concatenate([[0.0], np.cumsum(window**2)])
        ncc = corr / (np.sqrt(np.maximum(energy[n:] - energy[:-n], 1e-12))
                      * np.linalg.norm(slow))
        k = int(np.argmax(ncc))
        if ncc[k] > best[0]:
            best = (float(ncc[k]), float(stretch), lo + k)
    return best


@pytest.mark.parametrize("max_stretch", [0.03, 0.0], ids=["controller", "no-controller"])
def test_server_slower_than_the_device_plays_without_underruns_stretched_within_bound(
        pulse, omni_server: ThreadedOmniServer, max_stretch: float) -> None:
    """The server delivers 0.98 s of audio per second of the device's clock.

    A Player started with the default 10 ms jitter allowance loses 20 ms of margin a
    second; without the playout controller the ring runs dry within a few seconds
    (the test's premise, checked with ``max_stretch=0``). With it, the reply is
    played up to 3 % slower while the margin is low: no underrun, and what the sink
    plays is what the server sent, each piece found at a stretch within that bound.
    """
    omni_server.behavior.realtime_factor = 1 / 0.98
    omni_server.behavior.chunk_ms = 80
    omni_server.behavior.seconds_per_char = 0.03
    text = "This sentence arrives slower than the device plays. " * 3  # ~4.7 s of audio
    recorder = MonitorRecorder(pulse, pulse.monitor)
    player = Player("pulse", max_stretch=max_stretch)  # the default 10 ms allowance

    try:
        result, stats = speak(omni_server, player, text)
        assert recorder.wait_for(_finished, 10), "no complete reply reached the sink's monitor"
        recorded = recorder.samples()
    finally:
        recorder.stop()
    assert result.completed
    if max_stretch == 0.0:
        assert stats.underruns > 0, f"a 2 % slower server did not run the ring dry ({stats})"
        return
    assert stats.underruns == 0, f"the ring ran dry ({stats})"
    assert 0 < stats.max_stretch_used <= max_stretch

    sent = np.frombuffer(bytes(omni_server.sessions[0].pcm), "<i2").astype(np.float64) / 32768
    heard, said = _loud(recorded), _loud(sent)
    heard_s = (heard[-1] - heard[0]) / RATE
    said_s = (said[-1] - said[0]) / RATE
    # Longer by what the controller added, within its bound. Give or take ~20 ms: a
    # stretch in the quiet before the first or after the last loud sample does not
    # lengthen the loud span, and the monitor's recorder can lose a fragment under load.
    assert heard_s - said_s == pytest.approx(stats.stretched_frames / stats.device_rate,
                                             abs=0.03)
    assert said_s <= heard_s <= said_s * (1 + max_stretch) + 0.015
    # Piece by piece (40 ms every 120 ms), the sent audio is found where the mapping
    # predicts, played slower by at most the bound (too short a piece to tell how much).
    stretches = np.linspace(0.0, max_stretch, 13)
    seg = RATE * 40 // 1000
    scale = heard_s / said_s
    matches = []
    for k in range(said[0], said[-1] - seg, RATE * 120 // 1000):
        piece = sent[k:k + seg]
        if np.sqrt(np.mean(piece**2)) < 0.1:
            continue  # a sentence boundary: too little to correlate
        near = heard[0] + int((k - said[0]) * scale)
        matches.append(_stretched_match(recorded, piece, near, stretches))
    ncc = np.array([m[0] for m in matches])
    where = np.array([m[2] for m in matches])
    assert len(matches) > 30
    assert np.median(ncc) >= 0.95 and ncc.min() >= 0.8, f"pieces differ: {np.sort(ncc)[:5]}"
    assert np.all(np.diff(where) > 0)  # in order


@pytest.mark.parametrize("how", ["ended", "suspended"])
def test_a_reply_whose_output_goes_away_ends_and_the_next_start_says_so(pulse, how) -> None:
    """Headphones unplugged mid-reply: the stream ends (or, suspended, asks for nothing).
    The reply ends instead of waiting for ever, closing does not block the app, and the
    next reply is told, so the output is opened again."""
    tone = (0.2 * np.sin(2 * np.pi * 440 * np.arange(8 * RATE) / RATE) * 32767)
    pcm = tone.astype("<i2").tobytes()

    async def scenario(phones: Headset) -> tuple[str | None, float]:
        player = Player(phones.name)
        await player.open()
        try:
            player.start_reply(RATE)
            await player.write(pcm)
            player.finish_reply()
            await asyncio.sleep(1.0)
            if how == "ended":
                pulse.end_streams(os.getpid(), "sink-input")
            else:
                pulse.pactl("suspend-sink", phones.name, "1")
            await asyncio.wait_for(player.drained(), 6.0)  # the reply had 7 s left
            with pytest.raises(PlaybackError, match="went away"):
                player.start_reply(RATE)
        finally:
            began = time.monotonic()
            await player.close()
        return player.failure, time.monotonic() - began

    with Headset(pulse, "captioner_phones", "Phones") as phones:
        failure, closing = asyncio.run(scenario(phones))
    assert failure is not None and "Phones" in failure
    assert closing < CLOSE_TIMEOUT + 2.0  # bounded, whatever the driver does


class _NoVoice:
    """The computer's voice, which must not be asked to play on an output that went away."""

    name = "test voice"

    def __init__(self) -> None:
        self.said: list[str] = []

    async def say(self, text: str, on_start=None) -> None:
        self.said.append(text)
        if on_start is not None:
            on_start()

    def stop(self) -> None:
        pass


def test_a_reply_whose_output_goes_away_stops_streaming_at_once(
        pulse, omni_server: ThreadedOmniServer) -> None:
    """Headphones unplugged while a server paced at real time still generates the reply:
    the reply ends then (not when the last of ~7 s has been generated and thrown away),
    the stream is closed, and nothing falls back onto the gone output."""
    omni_server.behavior.realtime_factor = 1.0
    voice = _NoVoice()
    statuses: list[SpeakerStatus] = []

    async def scenario(phones: Headset) -> tuple[ReplyResult, float]:
        player = Player(phones.name)
        await player.open()
        try:
            speaker = Speaker(websocket_connector(omni_server.url), player,
                              SessionConfig(voice="vivian", language="English"),
                              local_voice=voice, on_status=statuses.append)
            reply = asyncio.ensure_future(speaker.speak("This is a long reply. " * 11))
            while player.stats().samples_played < player.rate // 2 and not reply.done():
                await asyncio.sleep(0.02)
            pulse.end_streams(os.getpid(), "sink-input")
            unplugged = time.monotonic()
            result = await asyncio.wait_for(reply, 15)
            return result, time.monotonic() - unplugged
        finally:
            await player.close()

    with Headset(pulse, "captioner_phones", "Phones") as phones:
        result, ended_after = asyncio.run(scenario(phones))
    assert isinstance(result.error, OutputGone) and not result.completed
    assert ended_after < 1.5, f"the reply went on for {ended_after:.1f} s"
    assert "went away" in statuses[-1].message and statuses[-1].state is SpeakerState.ERROR
    assert voice.said == []
    session = omni_server.sessions[0]
    assert session.ended.wait(5) and session.closed_by == "client"
    assert len(session.pcm) / 2 / RATE < 3.0  # of ~7 s: generation was cut short
