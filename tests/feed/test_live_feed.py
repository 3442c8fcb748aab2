"""The feed page's live line carries the engine's unconfirmed words, and loses them when
they are revised or confirmed; finalized lines never include them."""

from __future__ import annotations

import json

from captioner.feed.state import FeedState
from captioner.realtime.captions import CaptionModel


def test_unconfirmed_words_follow_the_live_line_on_the_page():
    state, model = FeedState(), CaptionModel()
    state.apply(model.add_text("Ask not", 1.0))
    message = json.loads(state.apply(model.set_unconfirmed(" what your")))
    assert message["live"] == "Ask not what your"
    assert json.loads(state.snapshot())["live"] == "Ask not what your"  # a page joining now
    message = json.loads(state.apply(model.add_text(" what", 1.5)))  # one word confirmed
    assert message["live"] == "Ask not what your"
    message = json.loads(state.apply(model.set_unconfirmed("")))
    assert message["live"] == "Ask not what"
    model.set_unconfirmed(" you")
    message = json.loads(state.apply(model.flush()))
    assert message["live"] == "" and [x["text"] for x in message["final"]] == ["Ask not what"]
