"""Voice-activity detection for the embedded engine: Silero VAD plus an energy floor.

Whisper invents text for silence and noise ("Thanks for watching"), so the
streaming transcriber only decodes audio that this gate calls speech, and
drops words that fall outside speech. The Silero ONNX model ships inside the
faster-whisper package (``faster_whisper/assets``); nothing is downloaded.

One ``SileroGate`` per stream (it keeps the last window as context); the ONNX
session behind it is loaded once per process and shared, which onnxruntime
allows across threads.
"""

from __future__ import annotations

import numpy as np
from faster_whisper.vad import get_vad_model

WINDOW = 512  # samples per decision at 16 kHz (32 ms), Silero's fixed window


class SileroGate:
    """Speech probability for every 32 ms window of a continuous 16 kHz float stream."""

    window = WINDOW

    def __init__(self, energy_floor_dbfs: float = -55.0) -> None:
        self._model = get_vad_model()
        self._floor = 10.0 ** (energy_floor_dbfs / 20.0)
        self._pending = np.zeros(0, dtype=np.float32)
        self._context = np.zeros(WINDOW, dtype=np.float32)  # last full window seen

    def probabilities(self, audio: np.ndarray) -> np.ndarray:
        """Consume ``audio``; return one probability per window completed by it.

        Samples that do not fill a window are held until the next call, so
        window ``i`` always covers stream samples ``[i*512, (i+1)*512)``.
        """
        data = np.concatenate([self._pending, np.asarray(audio, dtype=np.float32)])
        count = len(data) // WINDOW
        self._pending = data[count * WINDOW :]
        if count == 0:
            return np.zeros(0, dtype=np.float32)
        windows = data[: count * WINDOW]
        # The model takes each window's context from the window before it in the
        # batch, so prepend the previous window and drop its output. Its LSTM state
        # restarts at each call, which shifts probabilities slightly (< 0.25 near
        # the seam) — harmless for a gate.
        probs = np.asarray(self._model(np.concatenate([self._context, windows])), np.float32)
        probs = probs.reshape(-1)[1 : count + 1]
        self._context = windows[-WINDOW:].copy()
        rms = np.sqrt(np.mean(windows.reshape(count, WINDOW) ** 2, axis=1))
        probs[rms < self._floor] = 0.0
        return probs
