"""`captioner --self-test`: does this installation work, end to end, on this computer?

Meant for a fresh install (or a freshly built bundle): it transcribes the speech
sample shipped in ``resources/sample`` through the same path the app uses
(:class:`captioner.captioning.Captioner`: file source → loopback Realtime server
→ embedded Whisper engine → caption session), checks the words against the
known sentence, then checks that the audio stack and Qt's platform and
text-to-speech plugins load. One line per check, ``PASS``/``FAIL`` with the
detail, and the time to "caption-ready" (model loaded + first caption).

Each heavy dependency is imported inside its own check, on purpose: a missing
library is a FAIL line in the report, not a traceback before it. Qt is touched
only here and under ``captioner/ui``; the Qt check runs last because Qt aborts
the process when a platform plugin cannot start at all.

``CAPTIONER_SELFTEST_SAMPLE`` (a WAV whose sentence is in a ``.txt`` beside it)
and ``CAPTIONER_SELFTEST_MODEL_DIR`` override the sample and the model, so a
broken installation can be simulated.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

SAMPLE_ENV = "CAPTIONER_SELFTEST_SAMPLE"
MODEL_ENV = "CAPTIONER_SELFTEST_MODEL_DIR"
MAX_WER = 0.3
CAPTION_TIMEOUT = 120.0  # seconds; a 3.5 s clip takes a few on 2 cores
ECHO_CHECK_FRAMES = 100  # 1 s of a tone, fed as reference and as its own echo
ECHO_CHECK_MAX_LEFT = 0.1  # of its level, in the second half (AEC3 has converged)


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'}  {self.name:<10} {self.detail}"


@dataclass
class Timings:
    """Seconds from the start of the caption check."""

    model_ready: float | None = None
    first_caption: float | None = None
    done: float | None = None


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)
    timings: Timings = field(default_factory=Timings)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)


# --- where things are -----------------------------------------------------------------


def resources_dir() -> Path:
    """``resources/`` inside a PyInstaller bundle, or at the top of a checkout."""
    base = getattr(sys, "_MEIPASS", None)
    if base:
        return Path(base) / "resources"
    return Path(__file__).resolve().parents[1] / "resources"


def default_sample() -> Path:
    return resources_dir() / "sample" / "speech.wav"


# --- word error rate (no jiwer at run time) -------------------------------------------


def words_of(text: str) -> list[str]:
    """Lower-case words; punctuation and hyphens count as spaces, apostrophes stay."""
    return re.sub(r"[^\w']+", " ", text.casefold()).split()


def word_distance(reference: list[str], hypothesis: list[str]) -> int:
    """Levenshtein distance over words (substitutions + deletions + insertions)."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, 1):
        current = [i]
        for j, hyp in enumerate(hypothesis, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (ref != hyp)))
        previous = current
    return previous[-1]


def word_error_rate(reference: str, hypothesis: str) -> float:
    ref, hyp = words_of(reference), words_of(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    return word_distance(ref, hyp) / len(ref)


# --- the checks ----------------------------------------------------------------------


def check_sample(sample: Path) -> tuple[Check, str | None]:
    """The sample WAV and its sentence (``speech.txt`` beside it)."""
    transcript = sample.with_suffix(".txt")
    if not sample.is_file():
        return Check("sample", False, f"speech sample not found: {sample}"), None
    if not transcript.is_file():
        return Check("sample", False, f"sentence file not found: {transcript}"), None
    try:
        expected = transcript.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        return Check("sample", False, f"cannot read {transcript}: {exc}"), None
    if not expected:
        return Check("sample", False, f"{transcript} is empty"), None
    return Check("sample", True, f"{sample} ({sample.stat().st_size // 1024} KB)"), expected


def check_model(model_dir: str | None) -> Check:
    try:
        from captioner.engine.model_integrity import checked_model_dir
        from captioner.engine.model_paths import EngineError
    except Exception as exc:  # any import failure is the finding
        return Check("model", False, f"engine cannot be imported: {exc}")
    try:
        path = checked_model_dir(model_dir)
    except EngineError as exc:
        return Check("model", False, str(exc))
    size = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
    return Check("model", True, f"{path} ({size / 1e6:.0f} MB)")


async def _caption(sample: Path, model_dir: str | None, timings: Timings,
                   clock: Callable[[], float]) -> str:
    from captioner.audio.files import FileSource
    from captioner.captioning import Captioner, EmbeddedEngine
    from captioner.realtime.captions import CaptionUpdate
    from captioner.settings import Settings

    settings = Settings()
    settings.recognition.endpoint = "embedded"
    settings.recognition.whisper_model_dir = model_dir
    start = clock()
    embedded = EmbeddedEngine(settings)
    try:
        await embedded.url()  # loads the model and starts the loopback server
        timings.model_ready = clock() - start

        def on_update(update: CaptionUpdate) -> None:
            shown = any(line.text.strip() for line in update.finalized) or (
                update.live is not None and update.live.text.strip())
            if shown and timings.first_caption is None:
                timings.first_caption = clock() - start

        source = FileSource(sample, chunk_bytes=settings.audio.chunk_bytes)
        captioner = Captioner(settings, source, embedded=embedded, endpoint="embedded",
                              on_update=on_update, fail_fast=True)
        captions = await captioner.run()
        timings.done = clock() - start
        return captions.text
    finally:
        await embedded.close()


def check_captions(sample: Path, expected: str, model_dir: str | None, timings: Timings,
                   clock: Callable[[], float] = time.perf_counter) -> Check:
    """Transcribe the sample with the embedded engine, as the app would."""
    try:
        from captioner.audio.errors import AudioError
        from captioner.engine.model_paths import EngineError
        from captioner.session import SessionFailed
    except Exception as exc:  # any import failure is the finding
        return Check("captions", False, f"captioning cannot be imported: {exc}")

    async def bounded() -> str:
        async with asyncio.timeout(CAPTION_TIMEOUT):
            return await _caption(sample, model_dir, timings, clock)

    try:
        heard = asyncio.run(bounded())
    except TimeoutError:
        return Check("captions", False, f"no result within {CAPTION_TIMEOUT:.0f} s")
    except (EngineError, SessionFailed, AudioError, OSError) as exc:
        return Check("captions", False, f"{type(exc).__name__}: {exc}")
    wer = word_error_rate(expected, heard)
    detail = f"heard {heard!r} (WER {wer:.2f}, limit {MAX_WER})"
    return Check("captions", wer <= MAX_WER, detail)


def check_audio() -> Check:
    """PortAudio loads and devices can be listed; a machine with no device is fine."""
    try:
        import sounddevice as sd

        from captioner.audio.devices import list_devices
    except (ImportError, OSError) as exc:
        return Check("audio", False, f"PortAudio/sounddevice cannot be loaded: {exc}")
    version = sd.get_portaudio_version()[1]
    try:
        devices = list_devices()
    except Exception as exc:  # a listing crash of any kind is the finding
        return Check("audio", False, f"{version}; listing devices failed: "
                                     f"{type(exc).__name__}: {exc}")
    if not devices:
        return Check("audio", True, f"{version}; no audio devices on this computer "
                                    "(captions need a microphone or system audio)")
    kinds: dict[str, int] = {}
    for device in devices:
        kinds[str(device.kind)] = kinds.get(str(device.kind), 0) + 1
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    return Check("audio", True, f"{version}; devices: {counts}")


def check_echo() -> Check:
    """WebRTC's echo canceller (LiveKit's native library) loads and removes a tone fed
    to it as both reference and echo."""
    try:
        import numpy as np

        from captioner.audio.echo import FRAME_SAMPLES, LiveKitAec
        aec = LiveKitAec()
    except (ImportError, OSError, RuntimeError) as exc:
        return Check("echo", False, f"the echo canceller cannot be loaded: {exc}")
    t = np.arange(FRAME_SAMPLES * ECHO_CHECK_FRAMES) / 16_000
    tone = (8000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16).reshape(-1, FRAME_SAMPLES)
    out = np.concatenate([aec.process(frame, frame) for frame in tone])
    tail = out[out.size // 2:].astype(np.float64)
    left = float(np.sqrt(np.mean(tail ** 2)) / (8000 / np.sqrt(2)))
    ok = left < ECHO_CHECK_MAX_LEFT
    return Check("echo", ok, f"WebRTC AEC3 left {left:.1%} of a 1 s echo in its second half")


def _headless() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def check_qt() -> list[Check]:
    """Qt's platform plugin starts and the text-to-speech plugins are found."""
    if _headless() and not os.environ.get("QT_QPA_PLATFORM"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    try:
        from PySide6 import __version__ as pyside_version
        from PySide6.QtGui import QGuiApplication
    except ImportError as exc:
        return [Check("qt", False, f"PySide6 cannot be loaded: {exc}")]
    app = QGuiApplication.instance() or QGuiApplication([sys.argv[0] or "captioner"])
    platform = app.platformName()
    checks = [Check("qt", bool(platform), f"Qt {pyside_version}, platform plugin "
                                           f"{platform or '(none)'}")]
    try:
        from PySide6.QtTextToSpeech import QTextToSpeech
    except ImportError as exc:
        checks.append(Check("voice", False, f"QtTextToSpeech cannot be loaded: {exc}"))
        return checks
    engines = [e for e in QTextToSpeech.availableEngines() if e != "mock"]
    if engines:
        checks.append(Check("voice", True, f"text-to-speech engines: {', '.join(engines)}"))
    else:
        hint = " (install speech-dispatcher / libspeechd2)" if sys.platform.startswith(
            "linux") else ""
        checks.append(Check("voice", False, f"no text-to-speech engine found{hint}"))
    return checks


# --- the whole run -------------------------------------------------------------------


def collect(sample: Path, model_dir: str | None, emit: Callable[[Check], None]) -> Report:
    """Run every check in order, emitting each result as soon as it is known."""
    report = Report()

    def add(check: Check) -> None:
        report.checks.append(check)
        emit(check)

    sample_check, expected = check_sample(sample)
    add(sample_check)
    model_check = check_model(model_dir)
    add(model_check)
    if expected is None or not model_check.ok:
        add(Check("captions", False, "not run: the sample or the model is missing"))
    else:
        add(check_captions(sample, expected, model_dir, report.timings))
    add(check_audio())
    add(check_echo())
    for check in check_qt():
        add(check)
    return report


def run_self_test(sample: str | os.PathLike[str] | None = None, model_dir: str | None = None,
                  out: TextIO | None = None) -> int:
    """Print the report; 0 when every check passed, 1 otherwise."""
    out = out or sys.stdout
    from captioner import __version__

    frozen = "bundle" if getattr(sys, "frozen", False) else "source"
    sample_path = Path(sample or os.environ.get(SAMPLE_ENV) or default_sample())
    model_dir = model_dir or os.environ.get(MODEL_ENV) or None
    print(f"Captioner {__version__} self-test ({frozen}, Python "
          f"{sys.version.split()[0]}, {sys.platform})", file=out, flush=True)

    def emit(check: Check) -> None:
        print(check.line(), file=out, flush=True)

    report = collect(sample_path, model_dir, emit)
    t = report.timings
    if t.model_ready is not None and t.first_caption is not None:
        print(f"caption-ready: {t.first_caption:.1f} s (model loaded in {t.model_ready:.1f} s, "
              f"sample done in {t.done or 0:.1f} s)", file=out)
    print("self-test passed" if report.ok else "self-test FAILED", file=out, flush=True)
    return 0 if report.ok else 1
