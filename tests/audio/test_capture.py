"""AudioCapture driven through its stream callback (the hardware edge), no sound server."""

import asyncio
import logging
import threading

import numpy as np
import pytest
import soxr

from captioner.audio.capture import AudioCapture, FrameRing, State
from captioner.audio.devices import AudioDevice
from captioner.audio.errors import CaptureError
from captioner.settings import AudioSettings

MIC = AudioDevice(1, "Fake Mic", "mic", 1, 16_000.0, is_default=True)
SYSTEM = AudioDevice(2, "Fake Monitor", "system", 2, 48_000.0, is_default=True)


class FakeStream:
    """Stands in for PortAudio: the test calls ``on_block`` as the audio thread would."""

    def __init__(self, device, on_block, on_end):
        self.device, self.on_block, self.on_end = device, on_block, on_end
        self.samplerate = device.default_samplerate
        self.channels = device.channels
        self.started = self.closed = False

    def start(self):
        self.started = True

    def close(self):
        self.closed = True


class Opener:
    def __init__(self):
        self.streams: dict[str, FakeStream] = {}

    def __call__(self, device, on_block, on_end):
        stream = FakeStream(device, on_block, on_end)
        self.streams[device.kind] = stream
        return stream


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


async def collect(capture, count):
    out = []
    async for chunk in capture.chunks():
        out.append(chunk)
        if len(out) == count:
            break
    return out


def pcm(chunks):
    return np.frombuffer(b"".join(chunks), "<i2").astype(np.float32) / 32767


def test_mic_chunks_fixed_size_and_level_meter():
    async def main():
        opener = Opener()
        cap = AudioCapture("mic", mic=MIC, chunk_bytes=2048, opener=opener)
        await cap.start()
        stream = opener.streams["mic"]
        assert stream.started
        block = np.full((1000, 1), 0.25, np.float32)  # 16 kHz mono: no resampling
        for _ in range(5):
            stream.on_block(block, False)
        chunks = await collect(cap, 4)
        assert [len(c) for c in chunks] == [2048] * 4
        assert cap.level_dbfs == pytest.approx(20 * np.log10(0.25), abs=0.05)
        await cap.stop()
        rest = [c async for c in cap.chunks()]
        assert stream.closed and cap.state is State.STOPPED
        assert sum(map(len, chunks + rest)) == 5000 * 2
        np.testing.assert_allclose(pcm(chunks + rest), 0.25, atol=1e-4)
    run(main())


def test_discard_held_drops_the_chunks_no_one_read():
    """A capture opened beside a running one drops what the old one already heard."""
    async def main():
        opener = Opener()
        cap = AudioCapture("mic", mic=MIC, chunk_bytes=2048, opener=opener)
        await cap.start()
        stream = opener.streams["mic"]
        for _ in range(5):
            stream.on_block(np.full((1000, 1), 0.25, np.float32), False)
        await asyncio.sleep(0.05)  # the loop side turns the blocks into chunks
        assert cap.discard_held() == pytest.approx(4 * 1024 / 16_000)
        stream.on_block(np.full((2048, 1), -0.5, np.float32), False)
        await cap.stop()
        after = pcm([c async for c in cap.chunks()])
        assert len(after) == 5000 - 4 * 1024 + 2048  # the unfinished chunk stays
        assert np.count_nonzero(after < 0) == 2048
    run(main())


def test_blocks_from_another_thread_arrive_in_order():
    async def main():
        opener = Opener()
        cap = AudioCapture("mic", mic=MIC, chunk_bytes=4096, opener=opener)
        await cap.start()
        ramp = np.arange(24_000, dtype=np.float32) / 24_000 - 0.5  # 1.5 s: fits the 2 s ring
        blocks = [ramp[i:i + 441, None] for i in range(0, ramp.size, 441)]
        feeder = threading.Thread(
            target=lambda: [opener.streams["mic"].on_block(b, False) for b in blocks])
        feeder.start()
        got = await collect(cap, 24_000 * 2 // 4096)
        feeder.join()
        np.testing.assert_allclose(pcm(got), ramp[:len(pcm(got))], atol=1e-4)
        assert cap.dropped_frames == 0
        await cap.stop()
    run(main())


def test_overflow_is_counted_and_logged(caplog):
    async def main():
        opener = Opener()
        # a ring of 160 samples (10 ms at 16 kHz; the mic needs no resampling)
        cap = AudioCapture("mic", mic=MIC, buffer_seconds=0.01, opener=opener)
        await cap.start()
        stream = opener.streams["mic"]
        block = np.zeros((60, 1), np.float32)
        for _ in range(5):  # the loop does not run in between: the ring fills up
            stream.on_block(block, False)
        assert cap.dropped_frames == 3 * 60
        stream.on_block(block, True)
        assert cap.device_overflows == 1
        await asyncio.sleep(0)  # let the scheduled wake-up run
        await cap.stop()
    with caplog.at_level(logging.WARNING, logger="captioner.audio.capture"):
        run(main())
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("overflow" in m and "240 total" in m and m.startswith("!") for m in warnings)


def test_ring_never_overwrites_unread_frames():
    ring = FrameRing(10, 1)
    assert ring.write(np.arange(6, dtype=np.float32)[:, None])
    assert not ring.write(np.zeros((5, 1), np.float32))
    parts, n = ring.segments()
    ring.release(n)
    assert n == 6 and np.concatenate(parts)[:, 0].tolist() == list(range(6))
    assert ring.write(np.arange(8, dtype=np.float32)[:, None])  # wraps around
    parts, n = ring.segments()
    assert len(parts) == 2 and np.concatenate(parts)[:, 0].tolist() == list(range(8))


def test_both_mixes_sources_with_gains_aligned_by_sample_count():
    async def main():
        opener = Opener()
        mic = AudioDevice(1, "Fake Mic", "mic", 1, 16_000.0)
        system = AudioDevice(2, "Fake Monitor", "system", 1, 16_000.0)
        cap = AudioCapture("both", mic=mic, system=system, mic_gain=0.5, system_gain=2.0,
                           chunk_bytes=2048, opener=opener)
        await cap.start()
        opener.streams["system"].on_block(np.full((1024, 1), 0.1, np.float32), False)
        opener.streams["mic"].on_block(np.full((512, 1), 0.4, np.float32), False)
        opener.streams["mic"].on_block(np.full((512, 1), -0.4, np.float32), False)
        (chunk,) = await collect(cap, 1)
        mixed = pcm([chunk])
        np.testing.assert_allclose(mixed[:512], 0.2 + 0.2, atol=1e-4)
        np.testing.assert_allclose(mixed[512:], 0.2 - 0.2, atol=1e-4)
        await cap.stop()
    run(main())


def _both_16k(opener, **kwargs):
    mic = AudioDevice(1, "Fake Mic", "mic", 1, 16_000.0)
    system = AudioDevice(2, "Fake Monitor", "system", 1, 16_000.0)
    return AudioCapture("both", mic=mic, system=system, chunk_bytes=2048,
                        max_lag_seconds=0.1, opener=opener, **kwargs)  # 1600 samples


def block(value, frames=1024):
    return np.full((frames, 1), value, np.float32)


def test_both_goes_on_alone_when_a_running_source_stalls_and_realigns_later():
    async def main():
        opener = Opener()
        cap = _both_16k(opener)
        await cap.start()
        system, mic = opener.streams["system"], opener.streams["mic"]
        system.on_block(block(0.3), False)
        mic.on_block(block(0.3), False)
        (chunk,) = await collect(cap, 1)
        np.testing.assert_allclose(pcm([chunk]), 0.6, atol=1e-4)
        system.on_block(block(0.3, 2624), False)  # the mic stalls meanwhile
        (chunk,) = await collect(cap, 1)  # 1024 samples went out without the mic
        np.testing.assert_allclose(pcm([chunk]), 0.3, atol=1e-4)
        # The mic's backlog: its first 1024 samples cover time already sent, so they
        # are skipped to keep the two aligned.
        mic.on_block(np.concatenate([block(0.5), block(-0.1, 1600)]), False)
        (chunk,) = await collect(cap, 1)
        np.testing.assert_allclose(pcm([chunk]), 0.3 - 0.1, atol=1e-4)
        await cap.stop()
    run(main())


def test_both_keeps_all_of_a_source_that_starts_late():
    """Pulse may take half a second to start a source (an idle null sink's monitor):
    the other runs alone meanwhile, but the late starter's audio is all mixed in,
    lined up with what the other captured at the same time, and the other's
    backlog leaves at once."""
    async def main():
        opener = Opener()
        cap = _both_16k(opener)
        await cap.start()
        system, mic = opener.streams["system"], opener.streams["mic"]
        system.on_block(block(0.3, 2624), False)  # the mic has not started yet
        (alone,) = await collect(cap, 1)  # held back only max_lag, then alone
        np.testing.assert_allclose(pcm([alone]), 0.3, atol=1e-4)
        mic.on_block(block(0.5), False)  # its first block: captured just now
        system.on_block(block(0.3), False)
        (joined,) = await collect(cap, 1)
        # the system's 1600 held samples: the mic's 1024 line up with their last ones
        np.testing.assert_allclose(pcm([joined])[:576], 0.3, atol=1e-4)
        np.testing.assert_allclose(pcm([joined])[576:], 0.3 + 0.5, atol=1e-4)
        mic.on_block(block(-0.1), False)
        await cap.stop()
        rest = [c async for c in cap.chunks()]
        return pcm([alone, joined, *rest])

    got = run(main())
    expected = np.concatenate([np.full(1600, 0.3), np.full(1024, 0.8), np.full(1024, 0.2)])
    np.testing.assert_allclose(got, expected, atol=1e-4)


def test_both_keeps_a_late_starters_first_lump_longer_than_the_other_holds():
    """A late stream's first delivery may be a backlog reaching back before anything the
    other still holds: it is mixed in (with silence), not cut to fit."""
    async def main():
        opener = Opener()
        cap = _both_16k(opener)
        await cap.start()
        opener.streams["system"].on_block(block(0.3, 512), False)
        opener.streams["mic"].on_block(block(0.5, 2048), False)
        await cap.stop()
        return pcm([c async for c in cap.chunks()])

    got = run(main())
    np.testing.assert_allclose(got, np.concatenate([np.full(1536, 0.5), np.full(512, 0.8)]),
                               atol=1e-4)


def test_stream_that_ends_by_itself_ends_the_iterator_with_capture_error():
    async def main():
        opener = Opener()
        cap = AudioCapture("mic", mic=MIC, chunk_bytes=2048, opener=opener)
        await cap.start()
        stream = opener.streams["mic"]
        stream.on_block(np.full((1500, 1), 0.1, np.float32), False)
        threading.Thread(target=stream.on_end, args=("device unplugged",)).start()
        got = []
        with pytest.raises(CaptureError, match="mic capture: device unplugged"):
            async for chunk in cap.chunks():
                got.append(chunk)
        assert sum(map(len, got)) == 3000  # what was captured before the failure is kept
        assert cap.state is State.FAILED and isinstance(cap.error, CaptureError)
        await cap.stop()  # after a failure: releases the device
        assert stream.closed
    run(main())


def test_silent_device_fails_after_the_stall_timeout():
    async def main():
        opener = Opener()
        cap = AudioCapture("mic", mic=MIC, stall_timeout=0.3, start_timeout=0.3, opener=opener)
        await cap.start()
        opener.streams["mic"].on_block(np.zeros((160, 1), np.float32), False)
        with pytest.raises(CaptureError, match="no audio from 'Fake Mic'"):
            async for _ in cap.chunks():
                pass
    run(main())


def test_opening_failure_is_a_capture_error_and_closes_what_opened():
    opener = Opener()

    def failing(device, on_block, on_end):
        if device.kind == "mic":
            raise CaptureError("cannot open 'Fake Mic' for capture: busy")
        return opener(device, on_block, on_end)

    async def main():
        cap = AudioCapture("both", mic=MIC, system=SYSTEM, opener=failing)
        with pytest.raises(CaptureError, match="busy"):
            await cap.start()
        assert opener.streams["system"].closed and cap.state is State.FAILED
    run(main())


def test_from_settings_picks_devices_by_name_and_gains():
    settings = AudioSettings(source="both", mic_device="fake mic", system_device="2",
                             mic_gain=0.7, system_gain=1.3, chunk_bytes=8192)
    cap = AudioCapture.from_settings(settings, devices=[MIC, SYSTEM], opener=Opener())
    assert cap.devices == [SYSTEM, MIC] and cap.chunk_bytes == 8192
    assert [s.gain for s in cap._sources] == [1.3, 0.7]


def test_each_chunk_leaves_with_the_block_that_completes_it():
    """The loop is woken exactly when soxr has put out a chunk's last sample: not later
    (that would hold every word back), and not before (a wasted wake-up)."""
    async def settle():
        for _ in range(5):  # the wake-up callback, then the consumer, run on this loop
            await asyncio.sleep(0)

    async def main():
        opener = Opener()
        cap = AudioCapture("system", system=SYSTEM, chunk_bytes=2560, opener=opener)
        await cap.start()
        source = cap._sources[0]
        wakes = []
        pump = source.pump
        source.pump = lambda src: (wakes.append(1), pump(src))
        got: list[bytes] = []

        async def consume():
            async for chunk in cap.chunks():
                got.append(chunk)

        consumer = asyncio.create_task(consume())
        reference = soxr.ResampleStream(48_000, 16_000, 1, dtype="float32", quality="HQ")
        rng = np.random.default_rng(3)
        out = 0
        for _ in range(100):  # 1 s of 10 ms blocks
            block = (rng.standard_normal((480, 2)) * 0.1).astype(np.float32)
            out += reference.resample_chunk(block.mean(axis=1)).size
            opener.streams["system"].on_block(block, False)
            await settle()
            assert len(got) == out // 1280
        assert len(got) >= 10
        assert len(wakes) == len(got)
        await cap.stop()
        await consumer
    run(main())


def test_a_stand_in_replaces_only_the_picked_devices_that_went_away():
    from captioner.audio.capture import stand_in
    from captioner.settings import AudioSettings

    call = AudioSettings(source="both", speakers=True, mic_device="Headset mic",
                         system_device="Monitor of USB")
    assert stand_in(call, ["Monitor of USB"]) == AudioSettings(
        source="both", speakers=True, mic_device="Headset mic", system_device=None)
    assert stand_in(call, ["Headset mic", "Monitor of USB"]).capture_key() == (
        AudioSettings(source="both", speakers=True).capture_key())
    assert stand_in(AudioSettings(source="system"), []) is None  # the default failed
    assert stand_in(AudioSettings(source="system", mic_device="Headset mic"),
                    ["Headset mic"]) is None  # a mic not captured is not stood in for


def test_a_device_that_went_away_is_tried_soon_then_every_few_seconds():
    from itertools import islice

    from captioner.audio.capture import reopen_delays

    assert list(islice(reopen_delays(), 7)) == [0.1, 0.5, 1.0, 2.0, 3.0, 3.0, 3.0]


def test_missing_devices_are_the_picked_ones_not_listed_now(pulse):
    from captioner.audio.capture import missing_devices
    from captioner.settings import AudioSettings

    assert missing_devices(AudioSettings(source="system", system_device=pulse.monitor)) == []
    assert missing_devices(AudioSettings(
        source="both", system_device=pulse.monitor, mic_device="Unplugged headset")) == [
        "Unplugged headset"]
