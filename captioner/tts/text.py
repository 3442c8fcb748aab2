"""Split long replies into ``input.text`` messages the server accepts (≤128 KiB each).

Cuts fall after a sentence end when there is one, else after whitespace, else
between characters, so the server's own sentence splitting sees whole
sentences. Joining the pieces gives back the original text exactly.
"""

from __future__ import annotations

import re

from captioner.tts.events import MAX_TEXT_BYTES

_SENTENCE_END = re.compile(r"[.!?;:。！？；…\n]+[\"'”’)\]]*\s*")
_SPACE = re.compile(r"\s+")


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def split_text(text: str, limit: int = MAX_TEXT_BYTES) -> list[str]:
    """Pieces of ``text``, each at most ``limit`` UTF-8 bytes, that join back to ``text``."""
    if limit < 4:
        raise ValueError("limit must leave room for one character")
    pieces: list[str] = []
    rest = text
    while utf8_len(rest) > limit:
        head = _prefix_within(rest, limit)
        cut = _last_end(_SENTENCE_END, head) or _last_end(_SPACE, head) or len(head)
        pieces.append(rest[:cut])
        rest = rest[cut:]
    if rest or not pieces:
        pieces.append(rest)
    return pieces


def _prefix_within(text: str, limit: int) -> str:
    """Longest prefix of ``text`` whose UTF-8 form fits in ``limit`` bytes."""
    raw = text.encode("utf-8", "surrogatepass")[:limit]
    for trim in range(4):  # drop a trailing partial character (at most 3 bytes)
        try:
            return raw[: len(raw) - trim].decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            continue
    raise AssertionError("unreachable: a UTF-8 character is at most 4 bytes")


def _last_end(pattern: re.Pattern[str], text: str) -> int:
    end = 0
    for match in pattern.finditer(text):
        end = match.end()
    return end
