"""Audio in and out: devices, capture (mic, system, both), resampling, chunking, files.

Modules (import the one you need; only ``devices``, ``streams`` and ``capture``
load PortAudio):

- :mod:`.devices`  — :class:`AudioDevice`, :func:`list_devices`, :func:`find_device`
- :mod:`.capture`  — :class:`AudioCapture`: live 16 kHz PCM16 chunks
- :mod:`.files`    — :class:`FileSource`: the same chunks from a WAV/FLAC file
- :mod:`.resample` — :class:`Resampler` (soxr, any rate/channels → 16 kHz mono)
- :mod:`.chunker`  — :class:`Chunker` (fixed-size PCM16 chunks)
- :mod:`.errors`   — :class:`AudioError` and its subclasses
"""

from captioner.audio.errors import AudioError, AudioFileError, CaptureError, DeviceNotFound

__all__ = ["AudioError", "AudioFileError", "CaptureError", "DeviceNotFound"]
