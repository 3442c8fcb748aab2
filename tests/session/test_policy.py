"""The session's decisions as plain code: seams, resume points, stalls, rotation, retries."""

from __future__ import annotations

import numpy as np
import pytest

from captioner.session import policy
from captioner.session.audio_log import AudioLog
from captioner.session.seam import Seam, WordTimeline
from captioner.transport.base import AuthError, ConnectError, EndpointError

RATE = 16_000


def replay(seam: Seam, text: str) -> str:
    return "".join(seam.feed(" " + w) for w in text.split()) + seam.release()


def timeline(words_at: list[tuple[str, float]], latency: float = 0.5) -> WordTimeline:
    t = WordTimeline(latency)
    for word, arrived in words_at:
        t.add(word, arrived, None)
    return t


# --- the seam ---------------------------------------------------------------------------

SHOWN = [("ask", 5.2), ("not", 5.5), ("what", 5.8), ("your", 6.1), ("country", 6.5),
         ("can", 6.8), ("do", 7.0), ("for", 7.2), ("you", 7.5), ("ask", 8.2), ("what", 8.5)]


def test_repeated_phrase_is_cut_where_the_audio_says():
    # the replay starts after "you": it says "ask what" again, then new words; text
    # alone would match "ask what" at the first "ask" too
    t = timeline(SHOWN)
    repeat = t.after(7.6)
    assert repeat.words == ["ask", "what"] and repeat.estimate == 2
    assert replay(Seam(repeat), "ask what you can do for your country") == (
        " you can do for your country")


def test_the_text_moves_a_count_the_audio_got_wrong():
    t = timeline(SHOWN, latency=0.0)  # says "for you" came after 7.1 too: 4 words
    repeat = t.after(7.1)
    assert repeat.estimate == 4
    # …but the replay says only "ask what" again (the arrivals were late)
    assert replay(Seam(repeat), "ask what you can do") == " you can do"


def test_live_text_while_the_seam_is_open_leaves_out_the_repeat():
    seam = Seam(timeline(SHOWN).after(7.6))  # "ask what" will be said again
    assert seam.preview(" ask") == ""  # no more words than the replay likely repeats
    assert seam.feed(" ask") == ""  # confirmed, but too few words to decide
    assert seam.preview(" what you can") == "you can"
    assert not seam.done and seam.dropped == 0  # a preview decides nothing


def test_nothing_repeated_passes_through():
    seam = Seam(timeline(SHOWN).after(9.5))
    assert seam.done and seam.feed(" you") == " you"


def test_text_that_cannot_confirm_drops_only_what_the_audio_is_sure_of():
    # "ax watt" does not confirm the estimate (2): a word shown twice beats a new word
    # lost, for an estimate from arrival times can be far too high (next test)
    seam = Seam(timeline(SHOWN).after(7.6))
    assert replay(seam, "ax watt you can") == " ax watt you can" and seam.dropped == 0
    # words that came back more than MAX_LAG_SECONDS after it are repeated for sure
    late = timeline([*SHOWN[:-2], ("ask", 18.2), ("what", 18.5)])
    seam = Seam(late.after(7.6))
    assert seam.repeat.low == 2
    assert replay(seam, "ax watt you can") == " you can" and seam.dropped == 2


def test_an_engine_confirming_whole_utterances_loses_no_word_when_a_repeat_is_misread():
    """The on-device engine confirms an utterance at its end: its words arrive together,
    so the audio takes all twelve as repeated by a replay that starts three words from
    the end. The replay misreads one of the three; the text still finds them."""
    first = " we met at the station early this morning"
    second = " and then we walked along the river towards the old stone bridge"
    words = [(0.3, True), (0.2, False)]  # a word, then a gap the resume point can use
    audio = speech_with_pauses(words * 8 + [(1.0, False)] + words * 12 + [(2.0, False)])
    t = WordTimeline()
    t.add(first, 4.0 + 1.6, quiet_since=4.0)  # 1.6 s after each end
    t.add(second, 11.0 + 1.6, quiet_since=11.0)
    plan = policy.resume_plan(audio, t, sent=audio.end_seconds, levels=policy.Levels())
    assert plan.position == pytest.approx(9.4, abs=0.03)  # before "old stone bridge"
    assert plan.repeated.estimate == 12
    seam = Seam(plan.repeated)
    assert replay(seam, "old tone bridge and crossed over to the market") == (
        " and crossed over to the market")
    seam = Seam(plan.repeated)
    assert replay(seam, "old to bridge and crossed over to the market") == (
        " and crossed over to the market")
    assert seam.dropped == 3


def test_a_seam_released_before_the_replay_said_a_word_stays_open():
    """Its deadline can pass before the server answered (the replay and an outage's
    audio went out in one burst): the replay's words that come later are still cut."""
    seam = Seam(timeline(SHOWN).after(7.6))
    assert seam.release() == "" and not seam.done
    assert replay(seam, "ask what you can do") == " you can do" and seam.dropped == 2


# --- resume points -----------------------------------------------------------------------


def speech_with_pauses(pattern: list[tuple[float, bool]]) -> AudioLog:
    """(seconds, loud?) pieces as PCM16 in an audio log."""
    rng = np.random.default_rng(1)
    pieces = [(0.2 if loud else 0.001) * rng.standard_normal(int(s * RATE))
              for s, loud in pattern]
    log = AudioLog(120)
    log.append((np.concatenate(pieces) * 32767).astype("<i2").tobytes())
    return log


def test_resume_point_is_a_pause_before_the_last_word_that_came_back():
    audio = speech_with_pauses([(2, True), (0.4, False), (3, True), (0.3, False), (4, True)])
    t = timeline([("a", 2.3), ("b", 5.6), ("c", 8.0)])
    plan = policy.resume_plan(audio, t, sent=9.7, levels=policy.Levels())
    # last word at 8.0 - 0.5 latency - 3 s lookback: the pause at 5.4–5.7 is too late,
    # the one at 2.0–2.4 is the latest before 4.4
    assert plan.position == pytest.approx(2.2, abs=0.03)
    assert plan.repeated.words == ["a", "b", "c"] and plan.lost is None


def test_nothing_heard_replays_from_the_start_and_a_long_outage_is_lost():
    audio = speech_with_pauses([(3, True)])
    plan = policy.resume_plan(audio, WordTimeline(), sent=3.0, levels=policy.Levels())
    assert plan.position == 0.0 and plan.lost is None
    short = AudioLog(1.0)
    short.append(bytes(2 * RATE * 3))
    plan = policy.resume_plan(short, WordTimeline(), sent=3.0, levels=policy.Levels())
    assert plan.lost is not None and plan.lost[0] == 0.0 and plan.position == plan.lost[1]


# --- stalls and rotation -----------------------------------------------------------------


def test_stall_needs_sound_and_backs_off_when_sound_has_no_words():
    levels = policy.Levels()
    watch = policy.StallWatch()
    assert not any(watch.audio(1.0, 0.0, levels) for _ in range(10))  # silence is no stall
    assert [watch.audio(1.0, 0.5, levels) for _ in range(4)] == [False] * 3 + [True]
    watch.restarted()
    assert watch.limit == 2 * policy.STALL_SPEECH_SECONDS
    watch.text()
    assert watch.limit == policy.STALL_SPEECH_SECONDS and watch.sound_since_text == 0


def test_recurring_stalls_shorten_rotation_one_stall_does_not():
    rotation = policy.RotationPolicy(configured=2700.0, grace=60.0)
    rotation.learn_stall(12.0)
    assert rotation.due_after == 2700.0
    rotation.learn_stall(40.0)  # not similar
    assert rotation.due_after == 2700.0
    rotation.learn_stall(12.5)
    assert rotation.due_after == pytest.approx(policy.STALL_ROTATE_FRACTION * 12.0)


def test_context_limit_in_tokens_sets_due_and_forced_ages():
    rotation = policy.RotationPolicy(configured=2700.0, grace=60.0)
    rotation.learn_context(45_000, request_age=3500.0)
    assert rotation.context_limit == 3600.0
    assert rotation.due_after == 2700.0  # the configured interval is already shorter
    rotation.learn_context(None, request_age=100.0)  # no number in the message
    assert rotation.due_after == 80.0 and rotation.forced_after == 95.0
    assert not rotation.decide(90.0, at_pause=False) and rotation.decide(90.0, at_pause=True)
    assert rotation.decide(95.0, at_pause=False)


# --- connecting ----------------------------------------------------------------------------


@pytest.mark.parametrize(("error", "retried"), [
    (EndpointError("503", 503), True),
    (EndpointError("424 loading", 424), True),
    (EndpointError("400", 400, retryable=False), False),
    (AuthError("expired"), False),
    (ConnectError("refused"), False),  # a wrong URL at start fails fast…
])
def test_first_connection_retries_only_a_starting_endpoint(error, retried):
    assert policy.retry_connect(error, ever_connected=False, waited=0.0,
                                fail_fast=True) is retried
    assert not policy.retry_connect(error, ever_connected=False, fail_fast=True,
                                    waited=policy.FIRST_CONNECT_BUDGET_SECONDS)
    # the app waits for a socket it cannot reach yet, not for an endpoint refusing forever
    assert policy.retry_connect(error, ever_connected=False, waited=0.0,
                                fail_fast=False) is error.retryable
    assert not policy.retry_connect(EndpointError("503", 503), ever_connected=False,
                                    waited=policy.FIRST_CONNECT_BUDGET_SECONDS, fail_fast=False)
    # …and once connected, a refused socket is an outage worth waiting out
    assert policy.retry_connect(error, ever_connected=True, waited=1e6,
                                fail_fast=True) is error.retryable
