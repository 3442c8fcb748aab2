"""Live feeds in two-stream mode name the speaker; one-stream feeds stay as they were."""

import json

from captioner.feed import LiveTextFile, LiveVttFile
from captioner.feed.state import FeedState
from captioner.realtime.captions import CaptionLine, CaptionUpdate

YOU = CaptionLine("Yes, loud and clear.", 1.2, 2.6, speaker="You")
LIVE = CaptionLine("so the budget", 3.0, 3.5, final=False, speaker="Others")


def test_page_messages_carry_the_name_in_the_text_and_apart():
    state = FeedState()
    message = json.loads(state.apply(CaptionUpdate((YOU,), LIVE)))
    assert message["final"][0]["text"] == "You: Yes, loud and clear."
    assert message["final"][0]["speaker"] == "You"
    assert message["live"] == "Others: so the budget"
    assert json.loads(state.snapshot())["final"][0]["text"] == "You: Yes, loud and clear."
    plain = json.loads(FeedState().apply(CaptionUpdate((CaptionLine("Hi.", 0, 1),))))
    assert plain["final"] == [{"text": "Hi.", "start": 0, "end": 1, "kind": "speech"}]


def test_live_files_name_the_speaker(tmp_path):
    text, vtt = LiveTextFile(tmp_path / "live.txt"), LiveVttFile(tmp_path / "live.vtt")
    text.add(YOU)
    vtt.add(YOU)
    text.close()
    vtt.close()
    assert (tmp_path / "live.txt").read_text() == "[00:00:01] You: Yes, loud and clear.\n"
    assert "<v You>Yes, loud and clear." in (tmp_path / "live.vtt").read_text()
