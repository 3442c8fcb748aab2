"""Audio files as the same chunk stream a live capture gives.

WAV is read with the stdlib ``wave`` module (8/16/24/32-bit integer PCM); FLAC,
float WAV and the other libsndfile formats need the optional ``soundfile``
package. Any rate and channel count is converted to 16 kHz mono PCM16 by the
same :class:`Resampler` the live path uses. ``realtime=True`` paces the chunks
at the speed of the audio, as a live source would deliver them.
"""

from __future__ import annotations

import asyncio
import logging
import wave
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Protocol

import numpy as np

from captioner.audio.chunker import BYTES_PER_SECOND, DEFAULT_CHUNK_BYTES, Chunker
from captioner.audio.errors import AudioFileError
from captioner.audio.resample import Resampler, rms_dbfs, to_pcm16

try:
    import soundfile
except (ImportError, OSError):  # not installed, or libsndfile missing
    soundfile = None

log = logging.getLogger(__name__)

LEVEL_FLOOR_DBFS = -100.0


class _Reader(Protocol):
    samplerate: int
    channels: int
    frames: int

    def read(self, frames: int) -> np.ndarray: ...  # float32 frames × channels
    def close(self) -> None: ...


class _WaveReader:
    def __init__(self, path: Path):
        self._wav = wave.open(str(path), "rb")  # noqa: SIM115 - closed by close()
        self.samplerate = self._wav.getframerate()
        self.channels = self._wav.getnchannels()
        self.frames = self._wav.getnframes()
        self._width = self._wav.getsampwidth()
        if self._width not in (1, 2, 3, 4) or self.samplerate <= 0 or self.channels <= 0:
            self._wav.close()
            raise AudioFileError(f"{path.name}: unsupported WAV layout "
                                 f"({self._width * 8}-bit, {self.channels} ch, "
                                 f"{self.samplerate} Hz)")

    def read(self, frames: int) -> np.ndarray:
        raw = self._wav.readframes(frames)
        width = self._width
        if width == 1:  # unsigned 8-bit
            data = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128.0) / 128.0
        elif width == 2:
            data = np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0
        elif width == 3:
            b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
            ints = (b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)) << 8 >> 8  # sign-extend
            data = ints.astype(np.float32) / 8388608.0
        else:
            data = np.frombuffer(raw, "<i4").astype(np.float32) / 2147483648.0
        usable = data.size - data.size % self.channels
        return data[:usable].reshape(-1, self.channels)

    def close(self) -> None:
        self._wav.close()


class _SoundfileReader:
    def __init__(self, path: Path):
        self._file = soundfile.SoundFile(str(path))
        self.samplerate = int(self._file.samplerate)
        self.channels = int(self._file.channels)
        self.frames = int(self._file.frames)

    def read(self, frames: int) -> np.ndarray:
        return self._file.read(frames, dtype="float32", always_2d=True)

    def close(self) -> None:
        self._file.close()


def open_reader(path: str | Path) -> _Reader:
    """A reader for ``path``; raises :class:`AudioFileError` with a readable reason."""
    path = Path(path)
    if path.is_dir():
        raise AudioFileError(f"{path}: a folder, not an audio file")
    if not path.is_file():
        raise AudioFileError(f"{path}: no such file")
    is_wav = path.suffix.lower() in (".wav", ".wave")
    if is_wav:
        try:
            return _WaveReader(path)
        except (wave.Error, EOFError) as exc:
            if soundfile is None:
                raise AudioFileError(
                    f"{path.name}: not a WAV file the stdlib can read ({exc}); "
                    "install the soundfile package for float and other WAV variants"
                ) from exc
        except OSError as exc:
            raise AudioFileError(f"{path.name}: cannot read ({exc})") from exc
    if soundfile is None:
        raise AudioFileError(f"{path.name}: reading {path.suffix or 'this'} files needs "
                             "the soundfile package (only WAV is built in)")
    try:
        return _SoundfileReader(path)
    except (RuntimeError, OSError, soundfile.LibsndfileError) as exc:
        raise AudioFileError(f"{path.name}: not a readable audio file ({exc})") from exc


class FileSource:
    """Chunks of 16 kHz mono PCM16 from an audio file, like :class:`AudioCapture`.

    The file is opened (and checked) in the constructor, so a bad file fails
    early with :class:`AudioFileError`.
    """

    def __init__(self, path: str | Path, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                 realtime: bool = False, block_seconds: float = 0.1,
                 channel: int | None = None):
        """``channel``: only that channel (0 = left) instead of all of them mixed, e.g. one
        side of a call recorded in stereo. AudioFileError if the file has no such channel."""
        self.path = Path(path)
        self._reader = open_reader(self.path)
        self.samplerate = self._reader.samplerate
        self.channels = self._reader.channels
        if channel is not None and not 0 <= channel < self.channels:
            self._reader.close()
            raise AudioFileError(f"{self.path.name} has {self.channels} channel(s); "
                                 f"there is no channel {channel + 1}")
        self.channel = channel
        self.duration = self._reader.frames / self.samplerate if self.samplerate else 0.0
        self.chunk_bytes = chunk_bytes
        self.realtime = realtime
        self._block = max(1, int(self.samplerate * block_seconds))
        self._stopped = False
        self.level_dbfs = LEVEL_FLOOR_DBFS
        self.dropped_frames = 0  # a file never drops; kept for parity with AudioCapture

    def iter_chunks(self) -> Iterator[bytes]:
        """All chunks at full speed; the last one may be shorter. Closes the file."""
        channel = self.channel
        resampler = Resampler(self.samplerate, 1 if channel is not None else self.channels)
        chunker = Chunker(self.chunk_bytes)
        try:
            while not self._stopped:
                try:
                    block = self._reader.read(self._block)
                except (OSError, RuntimeError, EOFError, wave.Error) as exc:
                    raise AudioFileError(f"{self.path.name}: read failed ({exc})") from exc
                if block.shape[0] == 0:
                    break
                if channel is not None:
                    block = np.ascontiguousarray(block[:, channel : channel + 1])
                yield from self._measured(chunker.feed(resampler.process_pcm16(block)))
            if not self._stopped:
                yield from self._measured(chunker.feed(to_pcm16(resampler.flush())))
                yield from self._measured([chunker.flush()] if chunker.pending else [])
        finally:
            self._reader.close()

    async def chunks(self) -> AsyncIterator[bytes]:
        """The chunks, paced at real time if ``realtime``; ends at the end of the file
        or after :meth:`stop`."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        sent = 0
        for chunk in self.iter_chunks():
            yield chunk
            sent += len(chunk)
            if self.realtime:
                await asyncio.sleep(max(0.0, start + sent / BYTES_PER_SECOND - loop.time()))
            else:
                await asyncio.sleep(0)  # let the rest of the loop run between chunks

    async def start(self) -> None:
        """Nothing to open (the constructor did); here for parity with AudioCapture."""

    async def stop(self) -> None:
        """End :meth:`chunks` early."""
        self._stopped = True

    def _measured(self, chunks: list[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            self.level_dbfs = rms_dbfs(chunk, LEVEL_FLOOR_DBFS)
            yield chunk


class StereoCall:
    """A call recorded in stereo, one side per channel: left is you (the microphone),
    right the others. Two sources with the surface the two-stream captioner reads."""

    def __init__(self, path: str | Path, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                 realtime: bool = False) -> None:
        """AudioFileError if the file cannot be read or is not stereo."""
        self.mic = FileSource(path, chunk_bytes=chunk_bytes, realtime=realtime, channel=0)
        if self.mic.channels != 2:
            self.mic._reader.close()
            raise AudioFileError(f"{self.mic.path.name} has {self.mic.channels} channel(s); "
                                 "a call recording for --speakers needs two (left: you, "
                                 "right: the others)")
        self.system = FileSource(path, chunk_bytes=chunk_bytes, realtime=realtime, channel=1)
        self.dropped_chunks = 0  # parity with the live capture

    @property
    def level_dbfs(self) -> float:
        return max(self.mic.level_dbfs, self.system.level_dbfs)

    async def start(self) -> None:
        """Nothing to open (the constructor did)."""

    async def stop(self) -> None:
        await self.mic.stop()
        await self.system.stop()

    def mic_chunks(self) -> AsyncIterator[bytes]:
        return self.mic.chunks()

    def system_chunks(self) -> AsyncIterator[bytes]:
        return self.system.chunks()
