from captioner.alerts import AlertMatcher, parse_word_list
from captioner.realtime.captions import CaptionLine, CaptionUpdate
from captioner.ui.overlay import Overlay


def test_matching_is_case_insensitive_on_word_boundaries():
    m = AlertMatcher(["Ann", "question", "action item"])
    text = "ANN, a Question: planning annual action   item questions"
    found = m.find(text)
    assert [(f.word, f.start) for f in found] == [("Ann", 0), ("question", 7),
                                                  ("action item", text.index("action"))]


def test_empty_list_matches_nothing_and_parsing_dedupes():
    assert AlertMatcher([]).find("anything") == []
    assert parse_word_list("Ann\n question ,ann,, Bob  Smith\n") == ["Ann", "question",
                                                                      "Bob Smith"]


def test_overlay_highlights_flashes_and_signals_once(qtbot, settings):
    overlay = Overlay(settings.appearance, matcher=AlertMatcher(["question"]))
    qtbot.addWidget(overlay)
    overlay.show()
    with qtbot.waitSignal(overlay.alert, timeout=1000) as signal:
        overlay.show_update(CaptionUpdate((), CaptionLine("I have a question", 1.0, 2.0,
                                                          final=False)))
    assert signal.args[0] == "question"
    assert overlay.flashing
    rows = overlay.view._rows_on_screen()
    assert rows[-1][0].highlights, "the alert word is highlighted"
    seen = []
    overlay.alert.connect(lambda *a: seen.append(a))
    # the same words finalized do not alert twice
    overlay.show_update(CaptionUpdate((CaptionLine("I have a question", 1.0, 2.0),), None))
    assert seen == []
    overlay.show_update(CaptionUpdate((CaptionLine("Questionable.", 3.0, 4.0),), None))
    assert seen == []
    qtbot.waitUntil(lambda: not overlay.flashing, timeout=5000)
