"""Live caption files: text and WebVTT grow line by line; failures are typed, not fatal."""

from __future__ import annotations

import asyncio
import os
import stat

import pytest

from captioner.feed import FeedError, LiveTextFile, LiveVttFile
from captioner.feed.outputs import FeedOutputs
from captioner.realtime.captions import CaptionLine, CaptionUpdate, LineKind
from captioner.settings import FeedSettings
from captioner.transcript.exports import to_vtt

LINES = [CaptionLine("And so, my fellow Americans:", 0.3, 2.1),
         CaptionLine("ask not what your country can do for you,", 2.4, 5.0),
         CaptionLine("[3 s of audio not transcribed]", 5.0, 8.0, kind=LineKind.GAP),
         CaptionLine("ask what you can <do> for your country.", 8.2, 11.0)]


def test_text_file_appends_each_line_as_it_comes_and_is_private(tmp_path):
    path = tmp_path / "sub" / "live.txt"
    out = LiveTextFile(path)
    out.add(LINES[0])
    assert path.read_text() == "[00:00:00] And so, my fellow Americans:\n"
    for line in LINES[1:]:
        out.add(line)
    text = path.read_text()
    assert "not transcribed" not in text and text.count("\n") == 3
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    out.close()
    LiveTextFile(path)  # a new run starts the file afresh
    assert path.read_text() == ""


def test_a_live_file_and_its_new_folder_are_private_whatever_was_there(tmp_path):
    """The default folder is the transcript folder: made here first, it must be 0700 as
    the journal's; and a file left readable by others must not receive captions."""
    made = tmp_path / "Captioner"
    LiveTextFile(made / "live.txt").add(LINES[0])
    assert stat.S_IMODE(os.stat(made).st_mode) == 0o700
    old = tmp_path / "old.vtt"
    old.write_text("")
    old.chmod(0o644)
    LiveVttFile(old).add(LINES[0])
    assert stat.S_IMODE(os.stat(old).st_mode) == 0o600


def test_vtt_file_is_valid_webvtt_at_every_step(tmp_path):
    path = tmp_path / "live.vtt"
    out = LiveVttFile(path)
    assert path.read_text() == "WEBVTT\n\n"
    for line in LINES:
        out.add(line)
    speech = [x for x in LINES if x.kind is LineKind.SPEECH]
    assert path.read_text().rstrip("\n") == to_vtt(speech).rstrip("\n")
    assert "&lt;do&gt;" in path.read_text()


def test_a_full_disk_is_said_once_and_the_other_outputs_go_on(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    with pytest.raises(FeedError, match="/dev/full"):
        LiveTextFile("/dev/full").add(LINES[0])
    problems: list[str] = []
    outputs = FeedOutputs(problems.append)
    feed = FeedSettings(text_file=True, text_path="/dev/full", vtt_file=True)
    asyncio.run(outputs.configure(feed, tmp_path, page=""))
    outputs.publish(CaptionUpdate(tuple(LINES[:2])))
    outputs.publish(CaptionUpdate((LINES[3],)))
    assert len(problems) == 1 and "/dev/full" in problems[0], "said once, not per line"
    assert "for your country." in (tmp_path / "live-captions.vtt").read_text()
    feed.text_path = str(tmp_path / "elsewhere.txt")  # the user picks another place
    asyncio.run(outputs.configure(feed, tmp_path, page=""))
    outputs.publish(CaptionUpdate((LINES[3],)))
    assert (tmp_path / "elsewhere.txt").read_text().endswith("for your country.\n")
    asyncio.run(outputs.close())


def test_outputs_follow_the_settings(tmp_path):
    problems: list[str] = []
    outputs = FeedOutputs(problems.append)
    feed = FeedSettings(text_file=True, vtt_file=True)
    asyncio.run(outputs.configure(feed, tmp_path, page="<p>"))
    outputs.publish(CaptionUpdate((LINES[0],)))
    assert (tmp_path / "live-captions.txt").read_text().endswith("Americans:\n")
    assert "Americans:" in (tmp_path / "live-captions.vtt").read_text()
    feed.text_file = False
    asyncio.run(outputs.configure(feed, tmp_path, page="<p>"))
    outputs.publish(CaptionUpdate((LINES[1],)))
    assert "ask not" not in (tmp_path / "live-captions.txt").read_text()
    assert "ask not" in (tmp_path / "live-captions.vtt").read_text()
    asyncio.run(outputs.close())
    assert problems == []
