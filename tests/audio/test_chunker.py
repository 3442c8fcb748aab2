"""Chunker: exact sizes from arbitrary input, remainder on flush."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from captioner.audio.chunker import CHUNK_SIZES, Chunker, chunk_ms


@pytest.mark.parametrize("size", CHUNK_SIZES)
def test_chunks_have_the_exact_size_and_keep_every_byte(size):
    data = bytes(range(256)) * 100  # 25600 bytes
    ch = Chunker(size)
    chunks = []
    for start in range(0, len(data), 1000):
        chunks += ch.feed(data[start:start + 1000])
    assert all(len(c) == size for c in chunks)
    assert len(chunks) == len(data) // size
    rest = ch.flush()
    assert len(rest) == len(data) % size
    assert b"".join(chunks) + rest == data
    assert ch.flush() == b"" and ch.pending == 0


def test_flush_pads_only_when_asked():
    ch = Chunker(8)
    assert ch.feed(b"abc") == []
    assert ch.pending == 3
    assert ch.flush(pad=True) == b"abc" + bytes(5)
    ch.feed(b"xyz")
    assert ch.flush() == b"xyz"
    assert ch.flush(pad=True) == b""


def test_one_big_feed_gives_many_chunks_and_memoryview_input_works():
    ch = Chunker(4)
    assert ch.feed(memoryview(b"0123456789")) == [b"0123", b"4567"]
    assert ch.feed(bytearray(b"ab")) == [b"89ab"]


def test_chunk_duration():
    assert [chunk_ms(s) for s in CHUNK_SIZES] == [80.0, 128.0, 256.0]


@pytest.mark.parametrize("size", [0, -2, 3])
def test_bad_sizes_are_rejected(size):
    with pytest.raises(ValueError):
        Chunker(size)


@given(st.lists(st.binary(max_size=300), max_size=40), st.sampled_from([2, 4, 64, 100]))
def test_any_split_gives_the_same_stream(pieces, size):
    ch = Chunker(size)
    out = [c for p in pieces for c in ch.feed(p)]
    assert all(len(c) == size for c in out)
    assert b"".join(out) + ch.flush() == b"".join(pieces)
