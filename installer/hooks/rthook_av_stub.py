"""Runtime hook: stand in for PyAV, which the bundle leaves out (~130 MB of FFmpeg).

faster-whisper imports ``av`` at module level but only uses it to decode audio
files; Captioner always hands it 16 kHz float arrays (files are read by
captioner.audio.files). The stand-in makes the import succeed and any real use
fail with a clear message instead of a crash at start-up.
"""

import sys
import types


class _MissingAV(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise ImportError(
            "PyAV is not included in the Captioner bundle; audio files are decoded by "
            "captioner.audio.files instead"
        )


if "av" not in sys.modules:
    sys.modules["av"] = _MissingAV("av")
