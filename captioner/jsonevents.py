"""Reading JSON event frames, shared by the Realtime and speech-stream protocols (sans-I/O).

Both protocols send one JSON object with a string ``type`` per text frame. These
helpers parse a frame and read typed fields, raising the caller's protocol error
class (with a ``code``) and nothing else, whatever the input.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

MISSING: Any = object()


class FrameErrorClass(Protocol):
    def __call__(self, message: str, code: str = ...) -> Exception: ...


def load_event(frame: str | bytes | bytearray | memoryview, error: FrameErrorClass
               ) -> dict[str, Any]:
    """The frame as a dict with a string ``type``; otherwise raises ``error``."""
    if isinstance(frame, bytes | bytearray | memoryview):
        try:
            frame = bytes(frame).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise error("frame is not UTF-8 text", "invalid_json") from exc
    if not isinstance(frame, str):
        raise error("frame must be text", "invalid_json")
    try:
        obj = json.loads(frame)
    except (ValueError, RecursionError) as exc:
        raise error(f"frame is not JSON: {exc}", "invalid_json") from exc
    if not isinstance(obj, dict):
        raise error("event must be a JSON object", "invalid_event")
    if not isinstance(obj.get("type"), str):
        raise error("event has no string 'type'", "invalid_event")
    return obj


def read_field(obj: dict[str, Any], name: str, kind: type | tuple[type, ...],
               error: FrameErrorClass, default: Any = MISSING) -> Any:
    """``obj[name]`` checked against ``kind``; ``default`` when absent or null.

    ``bool`` is not accepted as an integer, and integers are accepted as floats.
    """
    value = obj.get(name)
    if value is None:
        if default is MISSING:
            raise error(f"{obj['type']}: missing '{name}'", "invalid_event")
        return default
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise error(f"{obj['type']}: '{name}' has the wrong type", "invalid_event")
    if float in kinds and isinstance(value, int):
        return float(value) if kinds == (float,) else value
    if not isinstance(value, kinds):
        raise error(f"{obj['type']}: '{name}' has the wrong type", "invalid_event")
    return value


def dump_event(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
