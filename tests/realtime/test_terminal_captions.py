"""The terminal's caption printer: finalized lines stay, the live line and the unconfirmed
words after it are rewritten in place, and unconfirmed words never stay printed."""

from __future__ import annotations

import io

from captioner.commands._common import TerminalCaptions
from captioner.realtime.captions import CaptionModel


def screen(raw: str) -> list[str]:
    """The terminal's lines (the last one is the cursor's): \\r\\x1b[2K erases a line."""
    return [part.split("\r\x1b[2K")[-1] for part in raw.split("\n")]


def test_unconfirmed_words_follow_the_live_line_and_go_when_revised():
    out = io.StringIO()
    terminal = TerminalCaptions(out, live=True)
    model = CaptionModel()
    terminal.update(model.add_text("Ask not", 1.0))
    terminal.update(model.set_unconfirmed(" what your"))
    assert screen(out.getvalue()) == ["Ask not what your"]
    terminal.update(model.set_unconfirmed(" what you're"))  # revised, replaced
    assert screen(out.getvalue()) == ["Ask not what you're"]
    terminal.update(model.set_unconfirmed(""))  # dropped: only the confirmed text stays
    assert screen(out.getvalue()) == ["Ask not"]
    terminal.update(model.flush())
    assert screen(out.getvalue()) == ["Ask not", ""]  # a finalized line, nothing live


def test_a_file_gets_only_finalized_lines():
    out = io.StringIO()
    terminal = TerminalCaptions(out, live=False)
    model = CaptionModel()
    model.add_text("Ask not", 1.0)
    terminal.update(model.set_unconfirmed(" what your"))
    terminal.update(model.flush())
    assert out.getvalue() == "Ask not\n"
