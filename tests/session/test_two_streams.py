"""Two labelled sessions over one local Realtime server: mic = "You", system = "Others".

Real parts: the loopback server (one transcriber per connection, as the embedded
engine gives), both capture pipelines (resampling, chunking) and both caption
sessions; only the devices are stand-ins (the test plays the audio thread).
"""

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from captioner.audio.capture import AudioCapture
from captioner.audio.devices import AudioDevice
from captioner.audio.dual import DualCapture, ReferenceBuffer
from captioner.audio.errors import CaptureError
from captioner.aws import KeyringCredentials
from captioner.realtime.captions import CaptionLine, CaptionUpdate
from captioner.settings import Settings
from captioner.transcript.echo_text import suppress_echo
from captioner.transport.endpoint_url import EndpointSpec, format_endpoint
from captioner.two_streams import HOLD_SECONDS, TwoStreamCaptioner, keep_line
from tests.audio.test_capture import Opener
from tests.support.transcribers import RecordingFactory, ThreadedServer, tone_words_pcm

REPO = Path(__file__).resolve().parents[2]
MIC = AudioDevice(1, "Fake Mic", "mic", 1, 16_000.0, is_default=True)
SYSTEM = AudioDevice(2, "Fake Monitor", "system", 1, 16_000.0, is_default=True)
BLOCK = 320  # 20 ms at 16 kHz
SILENCE = b"\0" * 2 * 16_000  # one second


def blocks(pcm: bytes) -> list[np.ndarray]:
    audio = np.frombuffer(pcm, "<i2").astype(np.float32) / 32767
    return [audio[i:i + BLOCK, None] for i in range(0, audio.size, BLOCK)]


def play(stream, pcm: bytes) -> None:
    """The device's clock: one block every 20 ms, as a sound card delivers them."""
    start = time.monotonic()
    for n, block in enumerate(blocks(pcm)):
        delay = start + n * BLOCK / 16_000 - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        stream.on_block(block, False)


class Recorder:
    """Filters at both seams that keep what they saw."""

    def __init__(self):
        self.references: list[bytes] = []
        self.recent_seen: list[list[str]] = []

    def process(self, mic: bytes, reference: bytes) -> bytes:
        assert len(reference) == len(mic)
        self.references.append(reference)
        return mic

    def lines(self, line, recent_others):
        self.recent_seen.append([other.text for other in recent_others])
        return None if "echo" in line.text else line


# Others speak first, then You; then Others again while You are quiet.
SYSTEM_PCM = (tone_words_pcm(["charlie", "delta"]) + SILENCE * 3
              + tone_words_pcm(["hotel", "india"]) + SILENCE * 2)
MIC_PCM = SILENCE + tone_words_pcm(["alpha", "bravo"]) + SILENCE * 2 + tone_words_pcm(["echo"])
MIC_PCM += b"\0" * (len(SYSTEM_PCM) - len(MIC_PCM))
SPOKEN = [("Team", "charlie delta"), ("You", "alpha bravo"), ("Team", "hotel india")]


def call_settings() -> Settings:
    settings = Settings()
    settings.audio.source, settings.audio.speakers = "both", True
    settings.audio.system_label = "Team"
    return settings


def speak_both(settings, endpoint, recorder, open_streams):
    """Play the two sides of the call through a TwoStreamCaptioner on ``endpoint``; returns
    (lines, updates, most streams the server had open at once as ``open_streams()`` saw)."""
    updates, peak = [], 0

    async def main():
        nonlocal peak
        opener = Opener()
        mic = AudioCapture("mic", mic=MIC, opener=opener, chunk_bytes=2560,
                           buffer_seconds=30, stall_timeout=120)
        system = AudioCapture("system", system=SYSTEM, opener=opener, chunk_bytes=2560,
                           buffer_seconds=30, stall_timeout=120)
        dual = DualCapture(mic, system, mic_filter=recorder)
        captioner = TwoStreamCaptioner(settings, dual, endpoint=endpoint,
                                       on_update=updates.append,
                                       mic_line_filter=recorder.lines)
        task = asyncio.create_task(captioner.run())
        while len(opener.streams) < 2 or not all(s.started for s in opener.streams.values()):
            await asyncio.sleep(0.01)
        feeders = [threading.Thread(target=play, args=(opener.streams[s], p))
                   for s, p in (("mic", MIC_PCM), ("system", SYSTEM_PCM))]
        for feeder in feeders:
            feeder.start()
        done = asyncio.ensure_future(asyncio.to_thread(lambda: [f.join() for f in feeders]))
        while not done.done():  # watch the server while both sides talk
            peak = max(peak, open_streams())
            await asyncio.sleep(0.05)
        seconds = len(SYSTEM_PCM) / 32_000 - 0.1  # the last chunk may wait for stop()
        while min(s.stats.audio_seconds for s in captioner.sessions.values()) < seconds:
            await asyncio.sleep(0.02)
        captioner.stop()
        return await asyncio.wait_for(task, 60)

    lines = asyncio.run(asyncio.wait_for(main(), 120))
    return lines, updates, peak


def assert_call_captioned(lines, updates, recorder):
    said = [(line.speaker, line.text) for line in lines]
    assert said == SPOKEN, said
    shown = [line for update in updates for line in update.finalized]
    assert {(line.speaker, line.text) for line in shown} == set(said)  # "echo" was dropped
    assert ["charlie delta"] in recorder.recent_seen  # the text seam saw what Others said
    reference = b"".join(recorder.references)
    assert reference[:len(SYSTEM_PCM) // 2] != b"\0" * (len(SYSTEM_PCM) // 2)


def test_mic_and_system_come_out_labelled_and_in_spoken_order():
    """Over a ws:// endpoint (the WebSocket connector): two sessions open at once."""
    recorder = Recorder()
    with ThreadedServer(RecordingFactory()) as server:
        assert server.url.startswith("ws://")
        lines, updates, peak = speak_both(call_settings(), server.url, recorder,
                                          lambda: server.server._active)
    assert peak == 2  # both streams open on the server at the same time
    assert_call_captioned(lines, updates, recorder)


def test_two_concurrent_sagemaker_streams_on_one_endpoint(fake_sagemaker, memory_keyring):
    """The cloud path: the real SageMaker HTTP/2 SDK, keys from the (stand-in) OS keyring,
    the local TLS SageMaker Runtime bridging each call to the local Realtime server. Two
    bidirectional streams are open at once and both speakers come out labelled, in order."""
    KeyringCredentials().store(fake_sagemaker.credentials.access_key_id,
                               fake_sagemaker.credentials.secret_access_key)
    settings = call_settings()
    settings.aws.use_keyring = True
    endpoint = format_endpoint(EndpointSpec(
        "sagemaker", endpoint_name=fake_sagemaker.endpoint_name, region=fake_sagemaker.region,
        endpoint_uri=fake_sagemaker.endpoint_uri))
    recorder = Recorder()
    with ThreadedServer(RecordingFactory()) as server:
        fake_sagemaker.backend_url = server.url
        lines, updates, backend_peak = speak_both(settings, endpoint, recorder,
                                                  lambda: server.server._active)
    assert fake_sagemaker.counters.peak_calls == 2  # two bidi streams at once
    assert fake_sagemaker.counters.accepted == 2 and backend_peak == 2
    assert_call_captioned(lines, updates, recorder)


def test_reference_buffer_reads_silence_where_the_system_audio_is_missing():
    buffer = ReferenceBuffer(keep_seconds=0.001)  # keeps 16 samples
    buffer.push(b"\1\0" * 40)
    assert buffer.end == 80
    assert buffer.read(0, 8) == b"\0" * 8  # dropped already
    assert buffer.read(76, 8) == b"\1\0\1\0" + b"\0" * 4  # not there yet
    assert buffer.read(60, 4) == b"\1\0\1\0"


def test_transcribe_speakers_names_each_channel_of_a_stereo_call(tmp_path):
    """`captioner transcribe --speakers call.wav`: left channel "You", right "Others"."""
    left = SILENCE + tone_words_pcm(["alpha", "bravo"]) + SILENCE
    right = tone_words_pcm(["charlie", "delta"]) + SILENCE * 2
    right += b"\0" * (len(left) - len(right))
    stereo = np.stack([np.frombuffer(p, "<i2") for p in (left, right)], axis=1)
    call = tmp_path / "call.wav"
    sf.write(call, stereo, 16_000, subtype="PCM_16")
    mono = tmp_path / "mono.wav"
    sf.write(mono, stereo[:, 0], 16_000, subtype="PCM_16")
    env = dict(os.environ, PYTHONPATH=str(REPO), CAPTIONER_CONFIG_DIR=str(tmp_path / "cfg"),
               CAPTIONER_LOG_DIR=str(tmp_path / "log"))
    with ThreadedServer(RecordingFactory()) as server:
        done = subprocess.run([sys.executable, "-m", "captioner", "transcribe", "--speakers",
                               str(call), "--endpoint", server.url], env=env,
                              capture_output=True, text=True, timeout=120)
        refused = subprocess.run([sys.executable, "-m", "captioner", "transcribe",
                                  "--speakers", str(mono), "--endpoint", server.url], env=env,
                                 capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Others: charlie delta", "You: alpha bravo"]
    assert refused.returncode == 2 and "needs two" in refused.stderr


def test_the_echo_setting_turns_the_text_fallback_on_and_off():
    """With echo suppression on (the default) finalized "You" lines pass the text
    fallback; off (headphones), they are kept as they are."""
    for on, expected in ((True, suppress_echo), (False, keep_line)):
        settings = Settings()
        settings.audio.source, settings.audio.speakers = "both", True
        settings.audio.echo_cancel = on
        opener = Opener()
        dual = DualCapture(AudioCapture("mic", mic=MIC, opener=opener),
                           AudioCapture("system", system=SYSTEM, opener=opener))
        captioner = TwoStreamCaptioner(settings, dual, endpoint="ws://127.0.0.1:9/v1/realtime")
        assert captioner.mic_line_filter is expected


def held_captioner():
    settings = Settings()
    settings.audio.source, settings.audio.speakers = "both", True
    shown = []
    captioner = TwoStreamCaptioner(settings, DualCapture(None, None),
                                   endpoint="ws://127.0.0.1:9", on_update=shown.append)
    you, others = (captioner.sessions[name] for name in ("You", "Others"))
    return captioner, you, others, shown


def line(text, speaker, start, end, final=True):
    return CaptionLine(text, start, end, final=final, speaker=speaker)


def finals(shown):
    return [(x.speaker, x.text) for update in shown for x in update.finalized]


def test_an_echoed_mic_line_waits_for_the_others_line_and_is_dropped():
    """The echo finalized on the mic first: held while the others are mid-sentence, then
    checked against their line (the default text-level echo filter) and dropped."""
    captioner, you, others, shown = held_captioner()
    others.on_update(CaptionUpdate(live=line("ask not what your country", "Others", 0.5, 2.0,
                                             final=False)))
    you.on_update(CaptionUpdate((line("Ask not what your country can do", "You", 0.6, 2.6),)))
    assert finals(shown) == []  # held, not shown
    others.on_update(CaptionUpdate((line("Ask not what your country can do for you.",
                                          "Others", 0.5, 3.0),)))
    assert finals(shown) == [("Others", "Ask not what your country can do for you.")]
    assert [x.speaker for x in captioner.lines] == ["Others"]


def test_a_mic_line_is_not_held_while_the_others_are_quiet_and_at_most_hold_seconds():
    _, you, others, shown = held_captioner()
    you.on_update(CaptionUpdate((line("Good morning everyone.", "You", 0.0, 1.5),)))
    assert finals(shown) == [("You", "Good morning everyone.")]
    others.on_update(CaptionUpdate(live=line("so today we will", "Others", 2.0, 4.0,
                                             final=False)))
    you.on_update(CaptionUpdate((line("Sorry, one question first.", "You", 2.5, 3.5),)))
    assert len(finals(shown)) == 1  # held: the others talk over it
    others.stats.audio_seconds = 3.5 + HOLD_SECONDS
    others.on_update(CaptionUpdate(live=line("so today we will look at", "Others", 2.0, 7.5,
                                             final=False)))
    assert finals(shown)[-1] == ("You", "Sorry, one question first.")  # waited long enough


def test_a_device_that_dies_ends_both_streams_with_its_error():
    """The system-audio device goes away mid-call: the run ends with the typed capture
    error (the app shows it), and the microphone's session is stopped, not left running."""
    settings = Settings()
    settings.audio.source, settings.audio.speakers = "both", True

    async def main(url):
        opener = Opener()
        mic = AudioCapture("mic", mic=MIC, opener=opener, stall_timeout=120)
        system = AudioCapture("system", system=SYSTEM, opener=opener, stall_timeout=120)
        captioner = TwoStreamCaptioner(settings, DualCapture(mic, system), endpoint=url)
        task = asyncio.create_task(captioner.run())
        while len(opener.streams) < 2 or not all(s.started for s in opener.streams.values()):
            await asyncio.sleep(0.01)
        for block in blocks(SILENCE):
            opener.streams["mic"].on_block(block, False)
            opener.streams["system"].on_block(block, False)
        opener.streams["system"].on_end("the device was unplugged")
        with pytest.raises(CaptureError, match="unplugged"):
            await asyncio.wait_for(task, 30)
        # nothing of the run is left running: neither session nor its pumps
        return {t for t in asyncio.all_tasks() if not t.done()} - {asyncio.current_task()}

    with ThreadedServer(RecordingFactory()) as server:
        left = asyncio.run(asyncio.wait_for(main(server.url), 60))
    assert left == set()


def test_a_device_that_dies_still_shows_what_both_sides_said_before_it():
    """Both sides speak, then the system-audio device goes: every line said before is
    shown, on both sides (the failing side's session flushes too), and the error still
    ends the run."""
    updates: list[CaptionUpdate] = []
    system_pcm = tone_words_pcm(["charlie", "delta"]) + SILENCE
    mic_pcm = SILENCE + tone_words_pcm(["alpha", "bravo"])  # the last words, just said

    async def main(url):
        opener = Opener()
        mic = AudioCapture("mic", mic=MIC, opener=opener, stall_timeout=120)
        system = AudioCapture("system", system=SYSTEM, opener=opener, stall_timeout=120)
        captioner = TwoStreamCaptioner(call_settings(), DualCapture(mic, system),
                                       endpoint=url, on_update=updates.append)
        task = asyncio.create_task(captioner.run())
        while len(opener.streams) < 2 or not all(s.started for s in opener.streams.values()):
            await asyncio.sleep(0.01)
        await asyncio.gather(*(asyncio.to_thread(play, opener.streams[side], pcm)
                               for side, pcm in (("mic", mic_pcm), ("system", system_pcm))))
        seconds = len(system_pcm) / 32_000 - 0.2
        while min(s.stats.audio_seconds for s in captioner.sessions.values()) < seconds:
            await asyncio.sleep(0.02)
        opener.streams["system"].on_end("the device was unplugged")
        with pytest.raises(CaptureError, match="unplugged"):
            await asyncio.wait_for(task, 30)

    with ThreadedServer(RecordingFactory()) as server:
        asyncio.run(asyncio.wait_for(main(server.url), 60))
    shown = [(line.speaker, line.text) for update in updates for line in update.finalized]
    assert sorted(shown) == [("Team", "charlie delta"), ("You", "alpha bravo")], shown
