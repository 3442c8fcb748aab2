"""The overlay in a real X11 window (Xvfb), screenshotted and checked pixel by pixel.
The PNG is kept under artifacts/ for a human to look at."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QImage

from tests.ui.xvfb import xvfb  # noqa: F401 - fixture

ROOT = Path(__file__).parents[2]
ARTIFACTS = ROOT / "artifacts"


def count_colours(image: QImage, box: dict, predicate) -> int:
    n = 0
    for y in range(box["y"], box["y"] + box["h"], 2):
        for x in range(box["x"], box["x"] + box["w"], 2):
            if predicate(QColor(image.pixel(x, y))):
                n += 1
    return n


@pytest.mark.parametrize("preset", ["yellow-on-black", "black-on-white"])
def test_overlay_renders_the_preset_on_a_real_display(xvfb, preset):  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    out = ARTIFACTS / f"overlay-xvfb-{preset}.png"
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("overlay_shot.py")),
                           str(out), preset], env=xvfb.env(), capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    box = json.loads(done.stdout.strip().splitlines()[-1])
    assert box["visible"] == "Real window captions. live words here"  # one flowing row
    image = QImage(str(out))
    assert not image.isNull() and [image.width(), image.height()] == box["screen"]
    assert box["y"] + box["h"] <= image.height() and box["w"] == image.width()
    area = (box["w"] // 2) * (box["h"] // 2)
    if preset == "yellow-on-black":
        text = count_colours(image, box, lambda c: c.red() > 200 and c.green() > 200
                             and c.blue() < 80)
        background = count_colours(image, box, lambda c: c.value() < 40)
    else:
        text = count_colours(image, box, lambda c: c.value() < 40)
        background = count_colours(image, box, lambda c: c.value() > 235)
    assert text > 0.01 * area, "caption text pixels in the preset's text colour"
    assert background > 0.5 * area, "the preset's background fills the caption box"


@pytest.mark.parametrize("size", [28, 48])
def test_roll_up_rows_are_whole_phrases_at_two_sizes(xvfb, size):  # noqa: F811
    """Real transcript on a real display: whole rows, none ending on a function word,
    each within the row length and the window; the PNG is kept for a human to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    out = ARTIFACTS / f"overlay-roll-up-{size}pt.png"
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("overlay_shot.py")),
                           str(out), "white-on-blue", str(size), "roll-up"], env=xvfb.env(),
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    box = json.loads(done.stdout.strip().splitlines()[-1])
    rows = box["visible"].split("\n")
    assert len(rows) == 2 and rows[-1].endswith("it was the season of Light")
    weak = {"a", "an", "the", "of", "to", "and", "it", "was", "in"}
    assert all(row.split()[-1].casefold() not in weak for row in rows), rows
    assert all(len(row) <= 42 for row in rows)
    assert all(width <= box["text_width"] for width in box["row_widths"])
    assert not QImage(str(out)).isNull()
