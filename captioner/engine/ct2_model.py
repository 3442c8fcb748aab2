"""Read and write a CTranslate2 ``model.bin``: its variables as numpy arrays.

CTranslate2 keeps a converted model in one binary file: a header (binary
version, spec name, revision), then each variable as (name, shape, dtype, raw
bytes), then aliases (one name standing for another, e.g. Whisper's output
projection is its token embedding). All little-endian, as
``ctranslate2.specs.ModelSpec._serialize`` writes it.

The embedded engine reads Whisper's decoder from it to run that part itself
(captioner.engine.whisper_decoder); the installers rewrite it with int8
weights (installer/quantize_model.py).
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

# CTranslate2's DataType order (include/ctranslate2/types.h); bfloat16 (5) has no numpy type.
DTYPES = ("float32", "int8", "int16", "int32", "float16")
_VERSIONS = (5, 6)


class ModelFileError(ValueError):
    """The file is not a CTranslate2 model this reader understands."""


class _Reader:
    def __init__(self, data: mmap.mmap) -> None:
        self.data = data
        self.at = 0

    def unpack(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            raise ModelFileError("the file ends inside its header")
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return value

    def string(self) -> str:
        size = self.unpack("<H")  # includes the trailing NUL
        raw = bytes(self.data[self.at : self.at + size])
        if len(raw) != size or not raw.endswith(b"\0"):
            raise ModelFileError("a variable name is cut off")
        self.at += size
        return raw[:-1].decode("utf-8")


@dataclass
class ModelFile:
    """The header, variables and aliases of one ``model.bin``."""

    version: int
    name: str
    revision: int
    variables: dict[str, np.ndarray]
    aliases: dict[str, str]

    @classmethod
    def read(cls, path: str | os.PathLike[str],
             keep: Callable[[str], bool] = lambda name: True) -> ModelFile:
        """The file's variables whose name ``keep`` accepts (copies: the file is closed).

        Raises ModelFileError on a file that is not a CTranslate2 model of a known
        binary version, is cut off, or has bytes after its aliases.
        """
        with open(path, "rb") as file, mmap.mmap(file.fileno(), 0,
                                                 access=mmap.ACCESS_READ) as data:
            reader = _Reader(data)
            version = reader.unpack("<I")
            if version not in _VERSIONS:
                raise ModelFileError(f"{path}: binary version {version} (known: {_VERSIONS})")
            name = reader.string()
            revision = reader.unpack("<I")
            variables: dict[str, np.ndarray] = {}
            for _ in range(reader.unpack("<I")):
                var_name = reader.string()
                shape = [reader.unpack("<I") for _ in range(reader.unpack("<B"))]
                kind = reader.unpack("<B")
                size = reader.unpack("<I")
                if kind >= len(DTYPES) or reader.at + size > len(data):
                    raise ModelFileError(
                        f"{path}: variable {var_name!r} has an unsupported type or is cut off")
                if keep(var_name):
                    dtype = np.dtype(DTYPES[kind])
                    count = size // dtype.itemsize
                    if count != int(np.prod(shape)):
                        raise ModelFileError(f"{path}: {var_name!r} has {count} values for "
                                             f"{shape}")
                    view = np.frombuffer(data, dtype, count, reader.at).reshape(shape)
                    variables[var_name] = view.copy()
                    del view  # no view may outlive the map
                reader.at += size
            aliases = {}
            for _ in range(reader.unpack("<I")):
                alias = reader.string()
                aliases[alias] = reader.string()
            if reader.at != len(data):
                raise ModelFileError(f"{path}: unexpected bytes after the aliases")
        return cls(version, name, revision, variables, aliases)

    def write(self, path: str | os.PathLike[str]) -> None:
        with Path(path).open("wb") as f:
            f.write(struct.pack("<I", self.version))
            _write_string(f, self.name)
            f.write(struct.pack("<II", self.revision, len(self.variables)))
            for var_name, value in sorted(self.variables.items()):
                _write_string(f, var_name)
                f.write(struct.pack(f"<B{value.ndim}I", value.ndim, *value.shape))
                data = np.ascontiguousarray(value).tobytes()
                f.write(struct.pack("<BI", DTYPES.index(value.dtype.name), len(data)))
                f.write(data)
            f.write(struct.pack("<I", len(self.aliases)))
            for alias, target in sorted(self.aliases.items()):
                _write_string(f, alias)
                _write_string(f, target)


def _write_string(f: BinaryIO, text: str) -> None:
    data = text.encode("utf-8")
    f.write(struct.pack("<H", len(data) + 1) + data + b"\0")


def read_variables(
    path: str | os.PathLike[str], keep: Callable[[str], bool] = lambda name: True
) -> dict[str, np.ndarray]:
    """The variables whose name ``keep`` accepts; an alias maps to its target's array."""
    model = ModelFile.read(path, keep)
    variables = dict(model.variables)
    for alias, target in model.aliases.items():
        if keep(alias) and target in variables:
            variables[alias] = variables[target]
    return variables


def dequantized(variables: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The variables with int8 weights turned back into float32 (``w = q / scale``).

    A model quantized at conversion (the installers ship tiny.en so) stores a
    weight as int8 rows plus a ``<name>_scale`` per row; CTranslate2 computes
    with that too. Other variables pass through; the scales are dropped.
    """
    out: dict[str, np.ndarray] = {}
    for name, value in variables.items():
        if name.endswith("_scale") and name[: -len("_scale")] in variables:
            continue
        scale = variables.get(f"{name}_scale")
        if scale is not None and value.dtype == np.int8:
            rows = scale.astype(np.float32).reshape(-1, *([1] * (value.ndim - 1)))
            out[name] = value.astype(np.float32) / rows
        else:
            out[name] = value
    return out
