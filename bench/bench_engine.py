"""Embedded engine on real human speech: offline and streaming side by side, in one run.

Run: .venv/bin/python bench/bench_engine.py  (prints figures; asserts nothing)
     --memory-hours 2   also feeds a simulated session of that length (faster than real time)
     --model base       the multilingual model (the 'multilingual' extra), language detected

The clips and references are the real-speech set (tests/support/speech_set.py).
Each figure is measured in this process, beside the offline baseline:

- offline: faster-whisper ``transcribe`` on each whole clip (beam 1, 30 s windows);
  word errors against the reference; CPU (time.process_time, the whole process)
  per second of audio.
- fast: the streaming transcriber fed the app's chunks (80 ms) as fast as possible; word
  errors, CPU, decodes. Run twice: the texts must match (determinism).
- paced: the same chunks at real-time pace (a benchmark may sleep; tests never
  do); word errors, whole-process CPU during the run (less the bench's own
  snapshots of the text, taken after each push for the latency figures: about
  0.6 ms per audio s), and word latency: for each
  final word matched to the offline word timings, wall time from the word's end
  in the audio to its first appearance as live (tentative or committed) text, in
  its place among the words around it, and to its commit. "first words": from
  where speech starts in the sound (speech_onset: Whisper's timings put the first
  word at 0.00 s even after 0.3–0.4 s of room tone) to the first text.
- grids: fast mode again with each decision grid (``decide_every``), errors per grid:
  on noisy speech tiny.en reads the same span differently from a start 30–90 ms
  apart, so one grid is one draw; the spread says how far an idea's effect must
  exceed it. And once pushed in 128 ms chunks: the text must not change.
  Offline is one draw too: it runs again on each clip with as much of its start (room
  tone before the first word) left out as each grid's size, and the mean of those
  draws is the baseline the grid mean is set against. Fast mode (default grid) runs
  on the same trimmed audio too: the paired estimate of streaming against offline
  (a trim also moves the decision grid against the speech). Offline's CPU over all
  its draws is the steadier baseline; the ratios against it are printed beside.
- fast mode once more with the decodes in the other runtime (CTranslate2 if the
  engine runs them on its own decoder, int8 graphs by default; that decoder, int8 when
  ONNX Runtime is installed, with ``--live ctranslate2``), and once with only the
  finals' beam search in CTranslate2 (``--finals ctranslate2`` swaps the two): errors
  and CPU, the baselines for those choices.
- stages: where the fast runs' CPU went (feature extraction, encoder, greedy live
  decodes, beam final decodes, speech gate), per audio second, with call counts; and
  how many live answer tokens were accepted from the previous answer (the draft).
- the sonnet as the app hears it (tests/data/speech/sonnet_captured.flac, recorded
  from a PulseAudio sink's monitor; with the whole set and tiny.en only): offline and
  fast errors. The app lost ten words there that the shipped recording never lost.
- memory (optional): RSS before and after a long session of speech and pauses.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import difflib
import resource
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from captioner.engine import onnx_graph, vad
from captioner.engine.log_mel import LogMel
from captioner.engine.multilingual import EXTRA_HINT, WHISPER_MODELS, multilingual_installed
from captioner.engine.streaming import (
    SAMPLE_RATE,
    StreamingOptions,
    StreamingTranscriber,
    word_key,
)
from captioner.engine.whisper import WhisperEngine
from captioner.engine.whisper_decoder import WhisperDecoder
from captioner.settings import AudioSettings
from tests.support.speech_set import AUSTEN, CAPTURED, CLIPS, SpeechClip, speech_onset, word_errors

CHUNK = AudioSettings().chunk_bytes  # as the app sends them (80 ms of PCM16)
OTHER_CHUNK = 4096  # 128 ms: the text must not change with it
BYTES_PER_SECOND = 2 * SAMPLE_RATE


@dataclass
class Run:
    text: str = ""
    cpu: float = 0.0
    decodes: int = 0
    shown: list[float] = field(default_factory=list)  # latency to first display, per word
    committed: list[float] = field(default_factory=list)  # latency to commit, per word
    first_words: float | None = None


def trimmed(trim: float) -> int:
    """Samples of a clip's start (room tone) that a ``trim`` of seconds leaves out."""
    return round(trim * SAMPLE_RATE)


def offline(engine: WhisperEngine, clip: SpeechClip, trim: float = 0.0) -> tuple[str, float]:
    """The whole clip at once; ``trim`` seconds of its start left out."""
    start = time.process_time()
    text = engine.transcribe(clip.samples()[trimmed(trim) :], beam_size=1)
    return text, time.process_time() - start


class _Timed:
    """Stands in for an object, adding the CPU time of chosen methods to ``stages``."""

    def __init__(self, inner: Any, stages: collections.Counter, calls: collections.Counter,
                 label: Callable[[str, dict[str, Any]], str | None]) -> None:
        self._inner, self._stages, self._calls, self._label = inner, stages, calls, label

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value):
            return value

        def timed(*args: Any, **kwargs: Any) -> Any:
            label = self._label(name, kwargs)
            if label is None:
                return value(*args, **kwargs)
            start = time.process_time()
            try:
                return value(*args, **kwargs)
            finally:
                self._stages[label] += time.process_time() - start
                self._calls[label] += 1
        return timed

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__getattr__("__call__")(*args, **kwargs)


def runtime(decoder: WhisperDecoder | None) -> str:
    """Where decodes run: CTranslate2 (no decoder of ours), or our decoder's network."""
    return "CTranslate2" if decoder is None else "int8 graphs" if decoder.int8 else "numpy"


@contextlib.contextmanager
def _other_live(engine: WhisperEngine, numpy_decoder: WhisperDecoder) -> Iterator[None]:
    """Decodes in the other runtime: our decoder if the engine uses CTranslate2, and back."""
    decoder = engine._decoder
    engine._decoder = numpy_decoder if decoder is None else None
    try:
        yield
    finally:
        engine._decoder = decoder


@contextlib.contextmanager
def _other_finals(engine: WhisperEngine) -> Iterator[None]:
    """Finals' beam search in the other runtime (live decodes where they were)."""
    engine.own_finals = not engine.own_finals
    try:
        yield
    finally:
        engine.own_finals = not engine.own_finals


@contextlib.contextmanager
def stage_clock(engine: WhisperEngine, stages: collections.Counter,
                calls: collections.Counter) -> Iterator[None]:
    """Count the CPU of the engine's stages while the block runs (whole process)."""
    model = engine._model  # the bench looks inside on purpose

    def ct2_stage(name: str, kwargs: dict[str, Any]) -> str | None:
        if name in ("encode", "encode_final"):
            return "encoder (finals)"
        if name == "encode_live":
            return "encoder (live)"
        if name == "generate":
            return "decoder, final (beam)" if kwargs.get("beam_size", 1) > 1 else \
                "decoder, live (greedy)"
        return None

    saved = model.model, vad.SileroGate.probabilities, LogMel.__call__
    gate, features = vad.SileroGate.probabilities, LogMel.__call__
    decoder = engine._decoder

    def timed_gate(self: vad.SileroGate, audio: np.ndarray) -> np.ndarray:
        start = time.process_time()
        try:
            return gate(self, audio)
        finally:
            stages["speech gate"] += time.process_time() - start
            calls["speech gate"] += 1

    def timed_features(self: LogMel, audio: np.ndarray, frames: int) -> np.ndarray:
        start = time.process_time()
        try:
            return features(self, audio, frames)
        finally:
            stages["features"] += time.process_time() - start
            calls["features"] += 1

    model.model = _Timed(model.model, stages, calls, ct2_stage)
    vad.SileroGate.probabilities = timed_gate  # type: ignore[method-assign]
    LogMel.__call__ = timed_features  # type: ignore[method-assign]
    if decoder is not None:  # live decodes on our decoder; their drafts' share of the answers
        greedy = decoder.greedy
        live_stage = f"decoder, live ({runtime(decoder)})"

        def timed_greedy(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            out = greedy(*args, **kwargs)
            stages[live_stage] += time.process_time() - start
            calls[live_stage] += 1
            calls["live tokens drafted"] += out.drafted
            calls["live tokens chosen"] += len(out.tokens) - (len(args[1]) - args[2] - 1)
            return out

        decoder.greedy = timed_greedy  # type: ignore[method-assign]
        beam = decoder.beam
        final_stage = f"decoder, final (beam, {runtime(decoder)})"

        def timed_beam(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return beam(*args, **kwargs)
            finally:
                stages[final_stage] += time.process_time() - start
                calls[final_stage] += 1

        decoder.beam = timed_beam  # type: ignore[method-assign]
    try:
        yield
    finally:
        model.model, vad.SileroGate.probabilities, LogMel.__call__ = saved
        if decoder is not None:
            del decoder.greedy, decoder.beam  # the class's methods again


def fast(engine: WhisperEngine, pcm: bytes, chunk: int = CHUNK) -> Run:
    transcriber = engine.new_transcriber()
    start = time.process_time()
    parts = [transcriber.push(pcm[i : i + chunk]) for i in range(0, len(pcm), chunk)]
    parts.append(transcriber.finish())
    return Run("".join(parts), time.process_time() - start, transcriber.decodes)


def paced(engine: WhisperEngine, pcm: bytes,
          timings: list[tuple[str, float, float]], onset: float) -> Run:
    """Real-time pace, like the server: audio that arrives during a decode is pushed at once."""
    transcriber = engine.new_transcriber()
    snapshots: list[tuple[float, list[str], int]] = []  # (time, shown words, committed count)
    committed = ""
    t0 = time.monotonic()
    cpu0 = time.process_time()
    watching = 0.0  # the bench's own CPU taking those snapshots: not the engine's

    def snapshot() -> None:
        nonlocal watching
        start = time.thread_time()
        snapshots.append(_snapshot(t0, committed, transcriber))
        watching += time.thread_time() - start

    sent = 0
    while sent < len(pcm):
        arrived = min(len(pcm), int((time.monotonic() - t0) * BYTES_PER_SECOND) // 2 * 2)
        if arrived - sent < CHUNK and arrived < len(pcm):
            time.sleep((sent + CHUNK - arrived) / BYTES_PER_SECOND)
            continue
        committed += transcriber.push(pcm[sent:arrived])
        sent = arrived
        snapshot()
    committed += transcriber.finish()
    snapshot()
    run = Run(committed, time.process_time() - cpu0 - watching, transcriber.decodes)
    _latencies(run, snapshots, timings)
    first = next((t for t, words, _ in snapshots if words), None)
    if first is not None:
        run.first_words = first - onset
    return run


def _snapshot(t0: float, committed: str, transcriber: StreamingTranscriber
              ) -> tuple[float, list[str], int]:
    done = committed.split()
    return time.monotonic() - t0, done + transcriber.tentative.split(), len(done)


def _latencies(run: Run, snapshots: list[tuple[float, list[str], int]],
               timings: list[tuple[str, float, float]]) -> None:
    final = [word_key(w) for w in run.text.split()]
    reference = [word_key(w) for w, _, _ in timings]
    first_shown: dict[int, float] = {}  # final word index → when a snapshot first showed it
    for t, words, _ in snapshots:
        for i in _shown_words(final, [word_key(w) for w in words]):
            first_shown.setdefault(i, t)
    matcher = difflib.SequenceMatcher(a=final, b=reference, autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            i, (_, _, end) = block.a + k, timings[block.b + k]
            shown = first_shown.get(i)
            done = next(t for t, _, count in snapshots if count > i)
            run.committed.append(done - end)
            run.shown.append((shown if shown is not None else done) - end)


def _shown_words(final: list[str], shown: list[str]) -> list[int]:
    """Indices of the final words a snapshot shows where they end up.

    Aligned, not compared by position: live text is re-read at the utterance's
    end, and one word read as two ("thy self") would otherwise count every
    later word as unseen. Runs of two or more, or a word at the same index.
    """
    matcher = difflib.SequenceMatcher(a=final, b=shown, autojunk=False)
    return [block.a + k for block in matcher.get_matching_blocks()
            if block.size >= 2 or block.a == block.b for k in range(block.size)]


def idle_cost(engine: WhisperEngine, clip: SpeechClip, rounds: int = 8) -> tuple[float, float]:
    """Median CPU (s) of one live-sized decode back to back, and after a 0.3 s idle wait.

    At real-time pace every decode follows such a wait. On the VM these figures
    come from, the wait alone made the same work cost up to 1.5× as much (its
    memory is no longer in cache: a 64 MB read took 2-3× as long), and how much
    moved from day to day; this line says how the machine stood during the run.
    """
    audio = clip.samples()[: 5 * SAMPLE_RATE]
    hot: list[float] = []
    cold: list[float] = []
    for _ in range(rounds):
        for idle, into in ((0.0, hot), (0.3, cold)):
            time.sleep(idle)
            start = time.process_time()
            engine.decode(audio)
            into.append(time.process_time() - start)
    return float(np.median(hot)), float(np.median(cold))


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory(engine: WhisperEngine, hours: float) -> None:
    """A long request: an 11 s speech clip every 2 minutes, silence between, fast."""
    speech = next(c for c in CLIPS if c.name == "jfk").pcm16()
    gap = bytes(BYTES_PER_SECOND * 120 - len(speech))
    transcriber = engine.new_transcriber()
    period = (len(speech) + len(gap)) / BYTES_PER_SECOND
    rounds = max(2, int(hours * 3600 / period))
    samples: list[float] = []
    start = time.monotonic()
    for n in range(rounds):
        for part in (speech, gap):
            for i in range(0, len(part), CHUNK * 8):
                transcriber.push(part[i : i + CHUNK * 8])
        if n == 0:
            samples.append(rss_mb())  # after the first round: warm caches, buffers grown
    transcriber.finish()
    samples.append(rss_mb())
    growth = (samples[-1] - samples[0]) / samples[0]
    print(f"memory: {rounds * period / 3600:.1f} h of audio in {time.monotonic() - start:.0f} s; "
          f"RSS {samples[0]:.0f} → {samples[-1]:.0f} MB ({growth:+.1%}); "
          f"{transcriber.emitted_chars} chars emitted")


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def streaming_options(changes: list[str]) -> StreamingOptions:
    """StreamingOptions with ``name=value`` changes, each value of its field's type."""
    defaults = StreamingOptions()
    values: dict[str, Any] = {}
    for change in changes:
        name, _, text = change.partition("=")
        if not hasattr(defaults, name):
            raise SystemExit(f"--set {change}: StreamingOptions has no field {name!r}")
        values[name] = type(getattr(defaults, name))(text)
    return dataclasses.replace(defaults, **values)


@contextlib.contextmanager
def _options(engine: WhisperEngine, **changes: Any) -> Iterator[None]:
    saved = engine.options
    engine.options = dataclasses.replace(saved, **changes)
    try:
        yield
    finally:
        engine.options = saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", choices=WHISPER_MODELS, default="tiny.en",
                        help="base needs the 'multilingual' extra")
    parser.add_argument("--live", choices=("auto", "ctranslate2", "numpy", "int8"),
                        default="auto", help="where the engine runs its live decodes "
                        "(auto: the engine's choice for this CPU)")
    parser.add_argument("--finals", choices=("own", "ctranslate2"), default="own",
                        help="finals' beam search on the live decoder (own) or in CTranslate2")
    parser.add_argument("--no-paced", action="store_true", help="skip the real-time runs")
    parser.add_argument("--memory-hours", type=float, default=0.0)
    parser.add_argument("--clips", default="", help="comma-separated clip names (default all)")
    parser.add_argument("--grids", default="0.032,0.064,0.096,0.128,0.16",
                        help="decision grids (s) to run fast mode with too ('' for none)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a StreamingOptions field to change (an idea to measure); "
                             "repeatable, e.g. --set first_decode_speech=0.2")
    args = parser.parse_args()
    options = streaming_options(args.set)
    if args.model == "base" and not multilingual_installed():
        print("the multilingual model (base) is not installed: " + EXTRA_HINT)
        return 1
    engine = WhisperEngine(threads=args.threads, model=args.model, options=options,
                           live_decoder=args.live, own_finals=args.finals == "own")
    finals = "on that decoder" if engine.own_finals and engine._decoder else "in CTranslate2"
    print(f"model {args.model}, {args.threads} encoder threads, "
          f"live decodes in {runtime(engine._decoder)} "
          f"(--live {args.live}), "
          f"finals {finals}, {options}")
    clips = [c for c in CLIPS if not args.clips or c.name in args.clips.split(",")]
    engine.transcribe(clips[0].samples())  # warm up
    idle_before = idle_cost(engine, clips[0])
    totals = {"offline": [0, 0, 0.0], "fast": [0, 0, 0.0], "paced": [0, 0, 0.0]}
    seconds = 0.0
    shown: list[float] = []
    committed: list[float] = []
    firsts: list[float] = []
    varied = []
    grids = [float(g) for g in args.grids.split(",") if g]
    by_grid: collections.Counter = collections.Counter()
    by_trim: collections.Counter = collections.Counter()  # offline, the clip's start trimmed
    by_trim_fast: collections.Counter = collections.Counter()  # fast mode, the same audio
    trim_cpu = [0.0, 0.0]  # offline CPU over all its draws, and their audio seconds
    rechunked = []
    other_live = [0, 0.0]  # errors, CPU: fast mode with decodes in the other runtime
    other_finals = [0, 0.0]  # errors, CPU: fast mode with finals in the other runtime
    other_decoder = engine._decoder or WhisperDecoder.from_model_dir(
        engine.model_dir, int8=onnx_graph.available())
    stages: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()
    print(f"{'clip':<14}{'s':>5} | {'offline':>14} | {'fast':>14} | {'paced':>14} | "
          "errors in words, CPU ms per audio s")
    for clip in clips:
        pcm = clip.pcm16()
        duration = len(pcm) / BYTES_PER_SECOND
        seconds += duration
        text, cpu = offline(engine, clip)
        runs = {"offline": (text, cpu)}
        with stage_clock(engine, stages, calls):
            one = fast(engine, pcm)
        two = fast(engine, pcm)
        runs["fast"] = (one.text, one.cpu)
        if one.text != two.text:
            varied.append((clip.name, one.text, two.text))
        if fast(engine, pcm, chunk=OTHER_CHUNK).text != one.text:
            rechunked.append(clip.name)
        with _other_live(engine, other_decoder):
            run = fast(engine, pcm)
        other_live[0] += word_errors(clip.reference, run.text).errors
        other_live[1] += run.cpu
        if engine._decoder is not None:
            with _other_finals(engine):
                run = fast(engine, pcm)
            other_finals[0] += word_errors(clip.reference, run.text).errors
            other_finals[1] += run.cpu
        for grid in grids:
            with _options(engine, decide_every=grid):
                by_grid[grid] += word_errors(clip.reference, fast(engine, pcm).text).errors
            text, used = offline(engine, clip, grid)
            by_trim[grid] += word_errors(clip.reference, text).errors
            trim_cpu[0] += used
            trim_cpu[1] += duration - grid
            same = pcm[trimmed(grid) * 2 :]  # PCM16: the audio offline() heard
            by_trim_fast[grid] += word_errors(clip.reference, fast(engine, same).text).errors
        if not args.no_paced:
            samples = clip.samples()
            run = paced(engine, pcm, engine.timed_words(samples), speech_onset(samples))
            runs["paced"] = (run.text, run.cpu)
            shown += run.shown
            committed += run.committed
            if run.first_words is not None:
                firsts.append(run.first_words)
        cells = []
        for name, (out, used) in runs.items():
            errors = word_errors(clip.reference, out)
            total = totals[name]
            total[0] += errors.errors
            total[1] += errors.words
            total[2] += used
            if name == "offline":
                trim_cpu[0] += used
                trim_cpu[1] += duration
            cells.append(f"{errors.errors:>3}/{errors.words:<3} {used / duration * 1000:5.0f}")
        print(f"{clip.name:<14}{duration:5.1f} | " + " | ".join(f"{c:>14}" for c in cells))
    print("-" * 72)
    base_cpu = totals["offline"][2]
    for name, (errs, words, used) in totals.items():
        if not words:
            continue
        print(f"{name:<8} WER {errs / words:6.1%} ({errs}/{words})   "
              f"CPU {used / seconds * 1000:5.0f} ms per audio s = {used / base_cpu:4.2f}× offline")
    fast_cpu = totals["fast"][2]
    print("this machine after idle, before and after the runs: a 5 s decode costs " + "; ".join(
        f"{hot * 1000:.0f} ms CPU back to back, {cold * 1000:.0f} after a 0.3 s wait "
        f"({cold / hot:.2f}×)" for hot, cold in (idle_before, idle_cost(engine, clips[0])))
        + " (at real-time pace a wait comes before every decode)")
    print("fast-mode CPU by stage (ms per audio s): " + ", ".join(
        f"{name} {used / seconds * 1000:.0f} ({calls[name]}×)"
        for name, used in stages.most_common())
        + f", rest {(fast_cpu - sum(stages.values())) / seconds * 1000:.0f}")
    numpy = runtime(other_decoder)
    other = (f"CTranslate2 instead of {numpy}" if engine._decoder
             else f"{numpy} instead of CTranslate2")
    which = "live decodes and finals" if engine.own_finals else "live decodes"
    print(f"fast mode with {which} in {other}: "
          f"{other_live[0]} errors, CPU {other_live[1] / seconds * 1000:.0f} ms per audio s "
          f"= {other_live[1] / base_cpu:4.2f}× offline")
    if engine._decoder is not None:
        where = "CTranslate2" if engine.own_finals else f"{numpy}, beside the live decodes"
        print(f"fast mode with the finals in {where}: "
              f"{other_finals[0]} errors, CPU {other_finals[1] / seconds * 1000:.0f} ms per "
              f"audio s = {other_finals[1] / base_cpu:4.2f}× offline")
    if calls["live tokens chosen"]:
        print(f"live answers: {calls['live tokens drafted']} of {calls['live tokens chosen']} "
              "tokens accepted from the previous answer in the batched pass")
    if shown:
        print(f"paced word latency, first shown: median {pct(shown, 50):.2f} s, "
              f"p90 {pct(shown, 90):.2f} s; committed: median {pct(committed, 50):.2f} s, "
              f"p90 {pct(committed, 90):.2f} s ({len(shown)} words)")
        print(f"first words after speech starts: {', '.join(f'{f:.2f}' for f in firsts)} s")
    if varied:
        for name, a, b in varied:
            print(f"fast mode varied on {name}:\n  {a}\n  {b}")
    else:
        print("fast mode: identical text in two runs of every clip")
    print("fast mode pushed in 128 ms chunks instead of 80: "
          + (f"other text on {', '.join(rechunked)}" if rechunked else "the same text"))
    if not args.clips and args.model == "tiny.en":
        heard = {"offline": engine.transcribe(CAPTURED.samples(), beam_size=1),
                 "fast": fast(engine, CAPTURED.pcm16()).text}
        print("the sonnet as the app hears it (played into a PulseAudio sink, recorded from "
              "its monitor): " + ", ".join(
                  f"{name} {word_errors(CAPTURED.reference, text)}"
                  for name, text in heard.items()))
        pcm = AUSTEN.pcm16()
        trims = [trimmed(g) for g in (0.0, *grids)]
        print("a second reader (Austen, 24.7 s; fast mode with the first 0, "
              + ", ".join(f"{g * 1000:.0f}" for g in grids) + " ms left out): offline "
              f"{word_errors(AUSTEN.reference, engine.transcribe(AUSTEN.samples(), beam_size=1))}"
              "; fast " + ", ".join(
                  str(word_errors(AUSTEN.reference, fast(engine, pcm[2 * t :]).text).errors)
                  for t in trims))
    if grids:
        errors = [by_grid[g] for g in grids]
        print("fast mode errors by decision grid: "
              + ", ".join(f"{g * 1000:.0f} ms {by_grid[g]}" for g in grids)
              + f" (default {options.decide_every * 1000:.0f} ms; mean {np.mean(errors):.1f} = "
              f"{np.mean(errors) / totals['fast'][1]:.1%}, offline {totals['offline'][0]})")
        draws = [totals["offline"][0]] + [by_trim[g] for g in grids]
        gap = (np.mean(errors) - np.mean(draws)) / totals["fast"][1]
        print("offline errors with each clip's first 0, "
              + ", ".join(f"{g * 1000:.0f}" for g in grids)
              + " ms of room tone left out: " + ", ".join(map(str, draws))
              + f" (mean {np.mean(draws):.1f} = {np.mean(draws) / totals['offline'][1]:.1%}; "
              f"streaming's grid mean is {gap:+.1%} against it)")
        paired = [totals["fast"][0]] + [by_trim_fast[g] for g in grids]
        paired_gap = (np.mean(paired) - np.mean(draws)) / totals["fast"][1]
        print("fast mode (default grid) on the same trimmed clips: " + ", ".join(map(str, paired))
              + f" (mean {np.mean(paired):.1f} = {np.mean(paired) / totals['fast'][1]:.1%}; "
              f"{paired_gap:+.1%} against offline on the same audio)")
        mean_cpu = trim_cpu[0] / trim_cpu[1]
        print(f"offline CPU over all {len(draws)} draws: {mean_cpu * 1000:.0f} ms per audio s; "
              "against it fast "
              f"{totals['fast'][2] / seconds / mean_cpu:.2f}×"
              + (f", paced {totals['paced'][2] / seconds / mean_cpu:.2f}×"
                 if totals["paced"][1] else ""))
    if args.memory_hours:
        memory(engine, args.memory_hours)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
