"""Words lost when an audio device goes away mid-speech: a new session against going on.

Run: PYTHONPATH=$PWD .venv/bin/python bench/bench_device_loss.py [--gap 0.3]
(prints figures; asserts nothing; about 5 minutes here)

The on-device engine reads real speech (the sonnet and Kennedy's clip of the
speech set) with ``--gap`` seconds left out at places every few seconds, as a
device that goes away and a stand-in that opens that much later. Three ways:

- **new session**: the audio before the loss in one session (finished, as the app
  does when a session's audio ends), the rest in a fresh one, the texts joined;
- **spliced**: one session, the audio after the loss following straight on;
- **silence**: one session with silence for the missing time (what the app does
  when a device opens within ``RECOVER_SECONDS``).

Word errors against each clip's reference, summed over the places, beside the same
count with nothing lost (the baseline, streaming) and the same model offline on the
whole clip (``WhisperEngine.transcribe``, greedy, as ``bench_engine.py``), all in one
process.
The difference from the baseline is what a loss costs; some of it is the words
really said in the missing time, which no way can get back.
"""

from __future__ import annotations

import argparse

import numpy as np

from captioner.engine.whisper import WhisperEngine
from tests.support.speech_set import clip, word_errors

BYTES_PER_SECOND = 32_000
CHUNK = 2560  # 80 ms, as the capture sends


def transcribe(engine: WhisperEngine, pcm: bytes) -> str:
    transcriber = engine.new_transcriber()
    parts = [transcriber.push(pcm[i : i + CHUNK]) for i in range(0, len(pcm), CHUNK)]
    return "".join(parts) + transcriber.finish()


def at(seconds: float) -> int:
    return int(seconds * BYTES_PER_SECOND) // 2 * 2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gap", type=float, default=0.3, help="seconds lost at each place")
    parser.add_argument("--clips", default="sonnet,jfk")
    args = parser.parse_args()
    engine = WhisperEngine(threads=2, model="tiny.en")
    totals = dict.fromkeys(("offline", "baseline", "new session", "spliced", "silence"), 0)
    places = 0
    print(f"{'clip':<8}{'at s':>6} | {'baseline':>8} {'new session':>12} {'spliced':>8} "
          f"{'silence':>8}   (word errors)")
    for name in args.clips.split(","):
        speech = clip(name)
        pcm = speech.pcm16()
        seconds = len(pcm) / BYTES_PER_SECOND
        baseline = word_errors(speech.reference, transcribe(engine, pcm)).errors
        offline = word_errors(speech.reference,
                              engine.transcribe(speech.samples(), beam_size=1)).errors
        print(f"{name}: offline {offline}, streaming with nothing lost {baseline}")
        step = 2.7 if seconds > 20 else 0.9  # about 18 places on the sonnet, 10 on Kennedy
        for cut in np.arange(1.3, seconds - 1.5, step):
            before, after = pcm[: at(cut)], pcm[at(cut) + at(args.gap) :]
            texts = {
                "new session": transcribe(engine, before) + " " + transcribe(engine, after),
                "spliced": transcribe(engine, before + after),
                "silence": transcribe(engine, before + bytes(at(args.gap)) + after),
            }
            errors = {way: word_errors(speech.reference, text).errors
                      for way, text in texts.items()}
            totals["offline"] += offline
            totals["baseline"] += baseline
            for way, count in errors.items():
                totals[way] += count
            places += 1
            print(f"{name:<8}{cut:>6.1f} | {baseline:>8} {errors['new session']:>12} "
                  f"{errors['spliced']:>8} {errors['silence']:>8}", flush=True)
    print(f"\n{places} places, {args.gap:.2f} s lost at each; word errors summed:")
    for way, count in totals.items():
        extra = "" if way in ("offline", "baseline") else (
            f"  ({(count - totals['baseline']) / places:+.2f} per loss)")
        print(f"  {way:<12}{count:>6}{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
