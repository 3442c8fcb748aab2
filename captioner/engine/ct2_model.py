"""Read the variables of a CTranslate2 ``model.bin`` into numpy arrays.

CTranslate2 keeps a converted model in one binary file: a header, then each
variable as (name, shape, dtype, raw bytes), then aliases (one name standing
for another, e.g. Whisper's output projection is its token embedding). The
layout is the one ``ctranslate2.specs.ModelSpec`` writes (binary version 6).
The embedded engine reads Whisper's decoder from it so it can run that part
itself (captioner.engine.whisper_decoder); the file is the same one
CTranslate2 loads, already checked against its pinned digest.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable

import numpy as np

_DTYPES = (np.float32, np.int8, np.int16, np.int32, np.float16)  # CTranslate2's DataType order
_VERSIONS = (5, 6)


class ModelFileError(ValueError):
    """The file is not a CTranslate2 model this reader understands."""


class _Reader:
    def __init__(self, data: mmap.mmap | bytes) -> None:
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
        size = self.unpack("<H")
        raw = bytes(self.data[self.at : self.at + size])
        if len(raw) != size or not raw.endswith(b"\0"):
            raise ModelFileError("a variable name is cut off")
        self.at += size
        return raw[:-1].decode("utf-8")


def read_variables(
    path: str | os.PathLike[str], keep: Callable[[str], bool] = lambda name: True
) -> dict[str, np.ndarray]:
    """The variables whose name ``keep`` accepts, as arrays of the stored dtype.

    Aliases resolve to their target's array. Arrays are copies, so the file
    is closed when this returns. Raises ModelFileError on a file that is not
    a CTranslate2 model of a known binary version.
    """
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        reader = _Reader(data)
        version = reader.unpack("<I")
        if version not in _VERSIONS:
            raise ModelFileError(f"binary version {version} (known: {_VERSIONS})")
        reader.string()  # the spec's name
        reader.unpack("<I")  # its revision
        variables: dict[str, np.ndarray] = {}
        for _ in range(reader.unpack("<I")):
            name = reader.string()
            shape = [reader.unpack("<I") for _ in range(reader.unpack("<B"))]
            kind = reader.unpack("<B")
            size = reader.unpack("<I")
            if kind >= len(_DTYPES) or reader.at + size > len(data):
                raise ModelFileError(f"variable {name!r} has an unknown type or is cut off")
            if keep(name):
                dtype = np.dtype(_DTYPES[kind])
                count = size // dtype.itemsize
                if count != int(np.prod(shape)):
                    raise ModelFileError(f"variable {name!r} has {count} values for {shape}")
                array = np.frombuffer(data, dtype, count, reader.at).reshape(shape)
                variables[name] = array.copy()
                del array  # no view may outlive the map
            reader.at += size
        for _ in range(reader.unpack("<I")):
            alias, target = reader.string(), reader.string()
            if keep(alias) and target in variables:
                variables[alias] = variables[target]
    return variables
