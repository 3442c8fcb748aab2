"""Echo cancellers compared on real speech: WebRTC AEC3 via LiveKit and via
pywebrtc-audio, and Speex's canceller (libspeexdsp) as the non-WebRTC baseline.

Run: .venv/bin/python bench/bench_echo.py  (prints figures; asserts nothing)
     --only livekit,speex  to run some; pywebrtc-audio must be installed for its rows
     (pip install pywebrtc-audio; the app does not depend on it), Speex needs the
     system's libspeexdsp (Debian: libspeexdsp1).

The scene (tests/support/echo_scene.py): Sonnet 1 plays as system audio and comes
back into the mic at -6 dB after ``delay`` (negative: the echo leads its reference
by stream position, as when the system capture lags the mic one); Kennedy speaks
into the mic from 6 s on. Chunks of 100 ms, as the capture delivers them.

Figures per canceller and delay:
- ERLE (dB): echo power in over residual power out, echo alone, after 4 s.
- WER near: the embedded engine (tiny.en, beam 1) on the cleaned mic where Kennedy
  speaks (double talk), against his words; beside it the same on his clean speech
  and on the mic without cancellation (the baselines, same process).
- CPU ms per audio second (process_time; LiveKit's native threads included).
Each canceller runs twice: through captioner's EchoCanceller (our delay estimate
shifts the reference) and alone, reference and mic fed as they come ("raw").

Then the packaging facts: wheels per platform (found with ``pip download
--only-binary=:all: --platform … --python-version 3.12``), licence and upkeep.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import time
from collections.abc import Callable

import numpy as np

from captioner.audio.echo import FRAME_SAMPLES, EchoBackend, EchoCanceller, LiveKitAec
from captioner.engine.whisper import WhisperEngine
from tests.support.echo_scene import EchoScene, echo_scene, erle_db, run_filter
from tests.support.speech_set import SAMPLE_RATE, word_errors

DELAYS = (-0.03, 0.04, 0.1, 0.2, 0.8)
SCENE_SECONDS = 20.0
SPEEX_TAIL = 4096  # samples (256 ms): Speex's filter must span the echo path it models
SPEEX_ECHO_SET_SAMPLING_RATE = 24
SPEEX_PREPROCESS_SET_ECHO_STATE = 24

PACKAGING = (
    # name, wheels (cp312), licence, upkeep
    ("livekit 1.2.1", "linux x86_64+arm64, win amd64+arm64, macOS x86_64+arm64 (all six)",
     "Apache-2.0", "LiveKit Inc., release 2026-11, monthly; 12 MB wheel (28 MB native library) + "
     "protobuf"),
    ("pywebrtc-audio 0.2.0", "linux x86_64+arm64, win amd64, macOS x86_64+arm64; "
     "no win arm64 (0.0.1 stub only)", "Apache-2.0",
     "one small project, first real release 2026-09; 0.4 MB wheel (0.9 MB library), "
     "numpy only"),
    ("aec-audio-processing 1.0.1", "win amd64 only; elsewhere an sdist that compiles "
     "WebRTC (meson/ninja): not done after 500 s on this 2-core machine, so not measured",
     "BSD-3-Clause", "one release, 2025-09"),
    ("Speex (libspeexdsp)", "no maintained wheel (speexdsp 0.1.1 is 2018, sdist); "
     "a system library through ctypes", "BSD-3-Clause", "C library stable since 2008"),
)


class PyWebrtcAec:
    """WebRTC AEC3 through pywebrtc-audio's EchoCanceller."""

    def __init__(self) -> None:
        from pywebrtc_audio import EchoCanceller as Aec  # optional: bench only

        self._aec = Aec(SAMPLE_RATE, 1)

    def process(self, mic: np.ndarray, reference: np.ndarray) -> np.ndarray:
        return self._aec.process(mic, reference)


class SpeexAec:
    """Speex's MDF canceller plus its residual-echo suppressor, through ctypes."""

    def __init__(self) -> None:
        path = ctypes.util.find_library("speexdsp") or "libspeexdsp.so.1"
        lib = ctypes.CDLL(path)
        lib.speex_echo_state_init.restype = ctypes.c_void_p
        lib.speex_preprocess_state_init.restype = ctypes.c_void_p
        for name in ("speex_echo_ctl", "speex_preprocess_ctl"):
            getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        lib.speex_echo_cancellation.argtypes = [ctypes.c_void_p] + [ctypes.c_void_p] * 3
        lib.speex_preprocess_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self._lib = lib
        self._echo = lib.speex_echo_state_init(FRAME_SAMPLES, SPEEX_TAIL)
        rate = ctypes.c_int(SAMPLE_RATE)
        lib.speex_echo_ctl(self._echo, SPEEX_ECHO_SET_SAMPLING_RATE, ctypes.byref(rate))
        self._pre = lib.speex_preprocess_state_init(FRAME_SAMPLES, SAMPLE_RATE)
        lib.speex_preprocess_ctl(self._pre, SPEEX_PREPROCESS_SET_ECHO_STATE,
                                 ctypes.c_void_p(self._echo))

    def process(self, mic: np.ndarray, reference: np.ndarray) -> np.ndarray:
        mic = np.ascontiguousarray(mic, np.int16)
        ref = np.ascontiguousarray(reference, np.int16)
        out = np.empty(FRAME_SAMPLES, np.int16)
        self._lib.speex_echo_cancellation(self._echo, mic.ctypes.data, ref.ctypes.data,
                                          out.ctypes.data)
        self._lib.speex_preprocess_run(self._pre, out.ctypes.data)
        return out


class Raw:
    """A backend alone: mic and reference frames fed as they come, no delay estimate."""

    def __init__(self, backend: EchoBackend) -> None:
        self._backend = backend
        self._carry = b""
        self._ref_carry = b""

    def process(self, mic: bytes, reference: bytes) -> bytes:
        mic_all, ref_all = self._carry + mic, self._ref_carry + reference
        whole = len(mic_all) - len(mic_all) % (FRAME_SAMPLES * 2)
        self._carry, self._ref_carry = mic_all[whole:], ref_all[whole:]
        m = np.frombuffer(mic_all[:whole], np.int16).reshape(-1, FRAME_SAMPLES)
        r = np.frombuffer(ref_all[:whole], np.int16).reshape(-1, FRAME_SAMPLES)
        return b"".join(self._backend.process(a, b).astype("<i2").tobytes()
                        for a, b in zip(m, r, strict=True))


BACKENDS: dict[str, Callable[[], EchoBackend]] = {
    "livekit": LiveKitAec, "pywebrtc": PyWebrtcAec, "speex": SpeexAec,
}


def run(make: Callable[[], EchoBackend], scene: EchoScene, mic: np.ndarray,
        aligned: bool) -> tuple[np.ndarray, float]:
    backend = make()
    process = EchoCanceller(backend).process if aligned else Raw(backend).process
    start = time.process_time()
    out = run_filter(process, mic, scene.system)
    cpu = time.process_time() - start
    return out, cpu / (mic.size / SAMPLE_RATE) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=",".join(BACKENDS), help="backends, comma-separated")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    engine = WhisperEngine(threads=args.threads)
    scenes = {d: echo_scene(d, seconds=SCENE_SECONDS) for d in DELAYS}
    first = scenes[DELAYS[0]]
    reference = first.near.reference

    def wer_near(scene: EchoScene, samples: np.ndarray) -> float:
        return word_errors(reference, engine.transcribe(scene.near_span(samples), 1)).rate

    print(f"scene: {first.far.name} at -6 dB as echo, {first.near.name} near-end from "
          f"{first.near_at / SAMPLE_RATE:.0f} s, {SCENE_SECONDS:.0f} s, 100 ms chunks")
    print(f"baselines: WER near clean {wer_near(first, first.near_only):.0%}; without "
          "cancellation " + ", ".join(f"{d * 1000:+.0f} ms {wer_near(s, s.mic):.0%}"
                                      for d, s in scenes.items()))
    print()
    print(f"{'canceller':<10} {'mode':<8} {'delay':>7} {'ERLE dB':>8} {'WER near':>9} "
          f"{'CPU ms/s':>9}")
    for name in args.only.split(","):
        make = BACKENDS[name]
        try:
            make()
        except (ImportError, OSError) as exc:
            print(f"{name:<10} not available here: {exc}")
            continue
        for aligned in (True, False):
            for delay, scene in scenes.items():
                echo_out, cpu = run(make, scene, scene.echo, aligned)
                mixed_out, _ = run(make, scene, scene.mic, aligned)
                print(f"{name:<10} {'aligned' if aligned else 'raw':<8} {delay * 1000:>+5.0f} ms "
                      f"{erle_db(scene.echo, echo_out):>8.1f} "
                      f"{wer_near(scene, mixed_out):>9.0%} {cpu:>9.1f}", flush=True)
    print()
    for name, wheels, licence, upkeep in PACKAGING:
        print(f"{name}\n  wheels: {wheels}\n  licence: {licence}\n  upkeep: {upkeep}")


if __name__ == "__main__":
    main()
