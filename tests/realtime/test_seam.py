from captioner.session.seam import SeamMerger


def run(tail: str, pieces: list[str]) -> str:
    merger = SeamMerger(tail.split())
    out = "".join(merger.feed(p) for p in pieces)
    return out + merger.release()


def test_repeated_tail_is_dropped():
    assert run("the quick brown fox", [" brown", " fox", " jumps", " over", " the", " dog"]) == (
        " jumps over the dog"
    )


def test_no_overlap_passes_everything():
    assert run("the quick brown fox", [" jumps", " over"]) == " jumps over"


def test_leading_fragment_is_dropped_with_a_real_match():
    assert run("say hello world", [" lo", " world", " again", " and", " more"]) == (
        " again and more"
    )


def test_single_fragment_without_match_is_kept():
    assert run("alpha bravo", [" charlie", " delta"]) == " charlie delta"


def test_whole_replay_already_shown():
    assert run("one two three", [" two", " three"]) == ""


def test_punctuation_and_case_do_not_matter():
    assert run("Is it here?", [" it", " here.", " Yes", " indeed", " it", " is"]) == (
        " Yes indeed it is"
    )


def test_empty_tail_is_transparent():
    merger = SeamMerger([])
    assert merger.feed(" hi") == " hi"
