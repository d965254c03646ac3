"""The C-allocator calls of loading and running a session (graphmem.ort.held.loading), by hand."""

from __future__ import annotations

from graphmem.ort.held.heap import Heap
from graphmem.ort.held.loading import (
    SystemCall,
    Weight,
    graph_calls,
    parse_calls,
    region_calls,
    replay,
    rewrite_calls,
    session_calls,
)

W1 = Weight(name="w1", nbytes=1_000)
BIG = Weight(name="emb", nbytes=93_763_584)  # BERT-base's word embeddings
SMALL = Weight(name="b", nbytes=100)  # at most 127 bytes: no buffer of its own
EXT = Weight(name="x", nbytes=4096, external=True)


def _sizes(calls: list[SystemCall]) -> list[tuple[str, str, int, int]]:
    return [(c.kind, c.key, c.size, c.align) for c in calls]


def test_reading_the_file_reads_each_string_once_and_a_large_one_in_doubling_steps() -> None:
    # read buffer min(file, 4 MiB); 1,000 B -> a string of 1,001; 93,763,584 B -> 50,000,001 then
    # 100,000,001 (the first freed); external data is not read
    calls = parse_calls([W1, BIG, EXT], file_size=10 << 20)
    assert _sizes(calls) == [
        ("malloc", "read-buffer", 4 << 20, 16),
        ("malloc", "string:w1:0", 1_001, 16),
        ("malloc", "string:emb:0", 50_000_001, 16),
        ("malloc", "string:emb:1", 100_000_001, 16),
        ("free", "string:emb:0", 0, 16),
        ("free", "read-buffer", 0, 16),
    ]
    assert parse_calls([W1], file_size=3_000)[0].size == 3_000


def test_the_graph_copies_each_initializer_above_127_bytes_and_frees_its_string() -> None:
    calls = graph_calls([W1, SMALL, BIG, EXT])
    assert _sizes(calls) == [
        ("malloc", "init:w1", 1_000, 64), ("free", "string:w1:0", 0, 16),
        ("free", "string:b:0", 0, 16),
        ("malloc", "init:emb", 93_763_584, 64), ("free", "string:emb:1", 0, 16),
    ]


def test_a_new_initializer_costs_four_buffers_one_kept_and_dropped_ones_are_freed_after() -> None:
    # a folded output is its kernel's aligned buffer, kept as the initializer (here dropped after a
    # pass rewrote it); a new initializer: unpacked, new data, its string (bytes + 1), its buffer
    folded = Weight(name="f", nbytes=2_048)
    calls = rewrite_calls([Weight(name="r", nbytes=4_096)], [W1, SMALL, folded], folded=[folded])
    assert _sizes(calls) == [
        ("malloc", "init:f", 2_048, 64),
        ("malloc", "unpack:r", 4_096, 64), ("malloc", "data:r", 4_096, 16), ("malloc", "proto:r", 4_097, 16),
        ("malloc", "init:r", 4_096, 64), ("free", "proto:r", 0, 16), ("free", "data:r", 0, 16),
        ("free", "unpack:r", 0, 16), ("free", "init:w1", 0, 16), ("free", "init:f", 0, 16),
    ]


def test_packed_buffers_in_order_each_original_freed_after_its_last_packing() -> None:
    # w1 is packed by two kernels (two buffers), w2 by one; both released; w3 packed but kept
    packed = [("p0", 12_288, "w1"), ("p1", 12_288, "w2"), ("p2", 12_288, "w1"), ("p3", 8_192, "w3")]
    calls = session_calls(packed, ["w2", "w1"], initializer_block=0, sizes={"w1": 1_000, "w2": 1_000, "w3": 1_000})
    assert [(c.kind, c.key) for c in calls] == [
        ("malloc", "p0"), ("malloc", "p1"), ("free", "init:w2"), ("malloc", "p2"), ("free", "init:w1"), ("malloc", "p3"),
    ]
    block = session_calls([], [], initializer_block=65_536)
    assert _sizes(block) == [("malloc", "initializer-block", 65_536, 64)] and block[0].touch == 0


def test_a_region_comes_with_its_chunk_handles() -> None:
    calls = region_calls([(4 << 20, 1 << 20)])
    assert [(c.key, c.size, c.align, c.touch) for c in calls] == [
        ("region:0", 4 << 20, 64, 1 << 20), ("handles:0", (4 << 20) // 32, 16, None)]


def test_replaying_phases_keeps_what_earlier_phases_took() -> None:
    # the strings are mapped (above 128 KiB) and go when the graph's copies come; the copies stay
    h = Heap(threshold=128 << 10, base=1 << 32)
    w = Weight(name="w", nbytes=1 << 20)
    blocks = replay(h, parse_calls([w], file_size=2 << 20))
    assert set(blocks) == {"string:w:0"}
    blocks = replay(h, graph_calls([w]), blocks)
    assert set(blocks) == {"init:w"}
    # the read buffer's 2 MiB mapping, freed first, raised the threshold to 2 MiB + a page: the
    # 1 MiB copy comes from the heap: 1 MiB + 16 B header and alignment lead = 257 pages resident
    assert not blocks["init:w"].mapped and h.resident == 257 * 4096
