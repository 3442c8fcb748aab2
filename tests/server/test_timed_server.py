"""The Voxtral-like timed transcriber used by bench/bench_latency.py releases each word
when the audio covers the 80 ms frame holding "word end + 480 ms", not a frame earlier."""

import numpy as np

from tests.support.timed_server import RATE, ScriptWord, TimedTranscriber, onset_seconds

SILENCE = 0.3  # seconds before the clip starts in the stream
CLIP_ONSET = 0.1  # the clip's own leading silence


def pcm(samples: np.ndarray) -> bytes:
    return (samples * 32767).astype("<i2").tobytes()


def test_words_arrive_one_model_frame_after_the_delay():
    clip = np.zeros(RATE * 2, np.float32)
    clip[int(CLIP_ONSET * RATE):] = 0.5
    assert abs(onset_seconds(clip, RATE) - CLIP_ONSET) < 1 / RATE
    stream = np.concatenate([np.zeros(int(SILENCE * RATE), np.float32), clip])
    words = [ScriptWord("one", 0.40), ScriptWord("two", 0.90)]
    t = TimedTranscriber(words, CLIP_ONSET)
    released: dict[str, int] = {}
    step = 160  # 10 ms pushes
    for start in range(0, stream.size, step):
        text = t.push(pcm(stream[start:start + step]))
        for word in text.split():
            released[word] = t.received
    for word in words:
        due = (SILENCE + word.end + 0.48) * RATE  # word ends count from the clip's start
        frame_end = np.ceil(due / 1280) * 1280
        assert released[word.text] == frame_end  # exactly when the frame is complete
    assert t.finish() == ""
    assert [i for _, i in t.sent] == [0, 1]
