"""bench/bench_latency.py's word matcher: when did each word of the reading reach the screen.

The latency figures are only as honest as this alignment of what was on screen with the
reference: a chance match credits a word too early (or at a time it was never shown), a
missed match credits it late.
"""

from __future__ import annotations

import math

from bench.bench_latency import first_seen


def words(text: str) -> list[str]:
    return text.split()


REFERENCE = words("making a famine where abundance lies, thyself thy foe, to thy sweet self, "
                  "too cruel. Thou that art now the world's fresh ornament, and only herald to the "
                  "gaudy spring")


def at(seen: list[float], word: str) -> float:
    return seen[REFERENCE.index(word)]


def test_a_chance_match_seen_first_does_not_veto_the_text_after_it() -> None:
    # The first row scrolled away; "to" of "foe, to thy" must not be taken for
    # "self to cruel", or "world's fresh" would wait for a later snapshot.
    snapshots = [(1.0, words("making a famine where abundance lies, thyself thy foe, to thy "
                             "sweet self to cruel. Thou that art now the")),
                 (2.0, words("self to cruel. Thou that art now the world's fresh")),
                 (3.0, words("the world's fresh ornament, and only herald to the"))]
    seen = first_seen(REFERENCE, snapshots)
    assert at(seen, "world's") == 2.0 and at(seen, "fresh") == 2.0
    assert at(seen, "ornament,") == 3.0 and at(seen, "herald") == 3.0


def test_a_chance_match_further_on_is_not_credited() -> None:
    # "to the" on screen belongs after "foe," here, not to "herald to the" 15 words on.
    snapshots = [(1.0, words("making a famine where abundance lies, thyself thy foe, to the"))]
    seen = first_seen(REFERENCE, snapshots)
    assert at(seen, "foe,") == 1.0
    assert math.isnan(seen[REFERENCE.index("herald") + 1])  # that "to" was never shown
    assert math.isnan(at(seen, "gaudy"))
