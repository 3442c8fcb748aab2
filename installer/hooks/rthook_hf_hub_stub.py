"""Runtime hook: stand in for huggingface_hub, which the bundle leaves out.

faster-whisper imports ``huggingface_hub`` at module level but only calls it to
download a model by name; Captioner always loads a local model folder
(captioner.engine.model_paths checks it exists first) with its tokenizer.json.
Leaving the hub client out also leaves out its HTTP stack (httpx2, httpcore2,
anyio, filelock, requests, ~3 MB). Any real use fails with a clear message.
"""

import sys
import types


class _MissingHub(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise ImportError(
            "huggingface_hub is not included in the Captioner bundle: models are never "
            "downloaded; point the app at a local model folder instead"
        )


if "huggingface_hub" not in sys.modules:
    sys.modules["huggingface_hub"] = _MissingHub("huggingface_hub")
