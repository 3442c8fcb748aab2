"""WCAG 2 contrast arithmetic for caption colours (plain Python, no Qt).

Captions are read by people who rely on them, so every colour drawn on them must
reach WCAG's enhanced level, 7:1, against the colour behind it. Colours are
``#RRGGBB`` strings; a colour drawn with partial opacity is first blended over
its background (``blend``), since that is what the eye gets.
"""

from __future__ import annotations

from collections.abc import Sequence

ENHANCED_CONTRAST = 7.0  # WCAG 2 AAA for normal text
TEXT_CONTRAST = 4.5  # WCAG 2 AA: the least for any text (settings, endpoint states)


def _rgb(color: str) -> tuple[int, int, int]:
    value = color.lstrip("#")
    if len(value) != 6:
        raise ValueError(f"not a #RRGGBB colour: {color!r}")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def _channel(value: int) -> float:
    c = value / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def luminance(color: str) -> float:
    """Relative luminance, 0 (black) to 1 (white)."""
    r, g, b = (_channel(v) for v in _rgb(color))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """Contrast ratio of two colours, 1 to 21, whichever is lighter."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def blend(color: str, background: str, alpha: float) -> str:
    """``color`` drawn at opacity ``alpha`` over ``background``, as the eye sees it."""
    fg, bg = _rgb(color), _rgb(background)
    mixed = (round(f * alpha + b * (1 - alpha)) for f, b in zip(fg, bg, strict=True))
    return "#" + "".join(f"{v:02X}" for v in mixed)


def most_legible(candidates: Sequence[str], background: str | Sequence[str],
                 least: float = ENHANCED_CONTRAST) -> str:
    """The first candidate reaching ``least`` (7:1) on ``background`` (or on each of
    several: a label shown on a window and on a tab page), else the most legible one."""
    backgrounds = [background] if isinstance(background, str) else list(background)

    def worst(color: str) -> float:
        return min(contrast(color, b) for b in backgrounds)

    return next((c for c in candidates if worst(c) >= least), max(candidates, key=worst))


def distance(a: str, b: str) -> float:
    """How far apart two colours are (Euclidean in RGB, 0 to 441): two speakers' colours
    must differ at a glance, not only in contrast against the background."""
    return sum((x - y) ** 2 for x, y in zip(_rgb(a), _rgb(b), strict=True)) ** 0.5


def most_distinct(candidates: list[str], background: str, other: str) -> str:
    """Of the candidates reaching 7:1 on ``background``, the one furthest from ``other``."""
    legible = [c for c in candidates if contrast(c, background) >= ENHANCED_CONTRAST]
    if not legible:
        return most_legible(candidates, background)
    return max(legible, key=lambda c: distance(c, other))
