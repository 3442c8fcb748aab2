"""Write an int8 copy of a CTranslate2 Whisper model for the bundle (half the size).

    python installer/quantize_model.py SOURCE_DIR TARGET_DIR

The engine loads the model with ``compute_type="int8"`` on the CPU, so CTranslate2
quantizes a float16 model's weights to int8 every time it loads it. Doing that once at
build time with CTranslate2's own converter code (``ModelSpec.optimize``) ships the
same weights in half the bytes: 75 MB → 40 MB for ``tiny.en``, and the same
transcripts. The other variables (convolutions, layer norms, biases) stay float16, as
in the source. config.json, tokenizer.json and
vocabulary.txt are copied unchanged.

``model.bin`` is read and written by captioner.engine.ct2_model (the engine reads
Whisper's decoder with it too).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np
from ctranslate2.specs import model_spec, whisper_spec

from captioner.engine.ct2_model import ModelFile

QUANTIZATION = "int8_float16"


def quantize(model: ModelFile) -> ModelFile:
    """The model with CTranslate2's int8_float16 quantization applied to its weights."""
    if model.name != "WhisperSpec":
        raise ValueError(f"not a Whisper model: {model.name}")
    v = model.variables
    layers = {side: sum(1 for n in v if n.startswith(f"{side}/layer_") and n.endswith(
        "/ffn/linear_0/weight")) for side in ("encoder", "decoder")}
    spec = whisper_spec.WhisperSpec(layers["encoder"], int(v["encoder/num_heads"]),
                                    layers["decoder"], int(v["decoder/num_heads"]))
    for name, value in [*v.items(), *model.aliases.items()]:
        scope, attr = model_spec._parent_scope(name)
        layer = model_spec.index_spec(spec, scope)
        if not hasattr(layer, attr):
            raise ValueError(f"variable {name} is not part of {model.name}")
        if not isinstance(value, str):  # an alias stays the name of its variable
            value = model_spec.NumpyVariable(value if value.ndim else value[()])
        setattr(layer, attr, value)
    # The converter's own quantizer, on what CTranslate2 quantizes when it loads a float
    # model for int8 compute: linear layers and embeddings, not the encoder's two
    # convolutions (quantizing those too changes the encoder's output; this way it is
    # bit-identical to the float16 model's, tests/installer/test_quantize_model.py).
    spec._quantize(QUANTIZATION, variable_filter=lambda name: "/conv" not in name)
    # Only what the source file holds (plus the new scales): attributes that newer
    # specs added keep the loader's defaults, as they did for the source.
    quantized = spec.variables()
    variables = {}
    for name in v:
        for key in (name, f"{name}_scale"):
            if isinstance(quantized.get(key), model_spec.Variable):
                variables[key] = np.asarray(quantized[key].numpy())
    return ModelFile(model.version, model.name, model.revision, variables, model.aliases)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    args = parser.parse_args(argv)
    if args.target.exists():
        shutil.rmtree(args.target)
    shutil.copytree(args.source, args.target, ignore=shutil.ignore_patterns("model.bin"))
    quantize(ModelFile.read(args.source / "model.bin")).write(args.target / "model.bin")
    before, after = ((p / "model.bin").stat().st_size >> 20 for p in (args.source, args.target))
    print(f"quantize_model: {args.target}/model.bin {after} MB ({QUANTIZATION}; was {before} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
