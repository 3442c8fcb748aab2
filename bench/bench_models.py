"""The two on-device models side by side on the real-speech set, offline.

Run: .venv/bin/python bench/bench_models.py  (prints figures; asserts nothing)

For tiny.en (bundled) and base (the `multilingual` extra, language detected), as
the engine loads them (int8, 2 threads): the load time, then per clip of
tests/data/speech the word errors and CPU per audio second of a whole-file
``WhisperModel.transcribe`` (greedy, the engine's beam). tiny.en is the baseline
in the same process. Streaming figures are bench_engine.py's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from faster_whisper import WhisperModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from captioner.engine.multilingual import decoding_language, model_folder
from tests.support.speech_set import CLIPS, word_errors

MODELS = ("tiny.en", "base")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--clips", nargs="*", default=[c.name for c in CLIPS])
    args = parser.parse_args()
    clips = [c for c in CLIPS if c.name in args.clips]
    rows: dict[str, dict[str, tuple[float, float]]] = {}
    for name in MODELS:
        start = time.perf_counter()
        model = WhisperModel(str(model_folder(name)), device="cpu", compute_type="int8",
                             cpu_threads=args.threads, local_files_only=True)
        print(f"{name}: loaded in {time.perf_counter() - start:.1f} s", flush=True)
        rows[name] = {}
        for clip in clips:
            audio = clip.samples()
            cpu = time.process_time()
            segments, _info = model.transcribe(audio, beam_size=1,
                                               language=decoding_language(name, None))
            text = " ".join(s.text for s in segments)
            cpu_ms = (time.process_time() - cpu) * 1000 / clip.seconds
            rows[name][clip.name] = (word_errors(clip.reference, text).rate, cpu_ms)
        del model
    print(f"\n{'clip':<14}" + "".join(f"{m + ' WER':>12}{m + ' CPU ms/s':>18}" for m in MODELS)
          + f"{'CPU base/tiny':>15}")
    for clip in clips:
        cells = "".join(f"{rows[m][clip.name][0]:>12.1%}{rows[m][clip.name][1]:>18.0f}"
                        for m in MODELS)
        ratio = rows["base"][clip.name][1] / rows["tiny.en"][clip.name][1]
        print(f"{clip.name:<14}{cells}{ratio:>14.1f}×")


if __name__ == "__main__":
    main()
