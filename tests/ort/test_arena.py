"""onnxruntime's BFC arena replayed (graphmem/ort/arena.py): requests rounded to 256 B, chunks split
only when at least twice the request, regions of 1 MiB doubling, best fit by (size, address),
freed neighbours merged. Hand-computed sequences; the arena's figures are what the profiler's
mem_bytes_in_use / mem_in_use_peak report (checked end to end by the scratch tests)."""

from __future__ import annotations

from graphmem.ort.arena import BfcArena

MIB = 1 << 20


def test_a_request_is_rounded_to_256_bytes_and_split_from_the_first_region() -> None:
    # 1,000 B -> 1,024 B; the first region is 1 MiB, at least twice 1,024: split
    arena = BfcArena()
    chunk = arena.alloc(1_000)
    assert chunk is not None and chunk.size == 1_024
    assert (arena.in_use, arena.high, arena.held) == (1_024, 1_024, MIB)
    assert BfcArena.rounded(1) == 256 and BfcArena.rounded(257) == 512
    assert arena.alloc(0) is None  # a zero-byte request takes nothing
    arena.free(None)


def test_a_chunk_under_twice_the_request_is_taken_whole() -> None:
    # 600,000 B -> 600,064 B; the 1 MiB region is under twice that: the whole 1,048,576 B chunk is
    # in use (the profiler's in-use counts chunk bytes)
    arena = BfcArena()
    arena.alloc(600_000)
    assert arena.in_use == MIB and arena.held == MIB


def test_freed_neighbours_merge_back_into_one_chunk() -> None:
    # a, b, c split off the region in address order; freeing b then a then c leaves one free
    # chunk of the whole region: a 1 MiB request then fits without extending the arena
    arena = BfcArena()
    a, b, c = arena.alloc(256), arena.alloc(512), arena.alloc(1_024)
    assert arena.in_use == 1_792
    for chunk in (b, a, c):
        arena.free(chunk)
    assert arena.in_use == 0
    whole = arena.alloc(MIB)
    assert whole is not None and whole.size == MIB and arena.held == MIB


def test_best_fit_takes_the_smallest_free_chunk_that_fits() -> None:
    # x 512 at the region's start, y 256, z 1,024, w 256 (keeps z apart from the rest); x and z
    # freed. A 512 B request takes x's chunk (512 fits exactly); a 300 B one (512 rounded) then
    # splits z's 1,024 (twice 512) and takes its first half.
    arena = BfcArena()
    x, y, z, w = arena.alloc(512), arena.alloc(256), arena.alloc(1_024), arena.alloc(256)
    assert None not in (x, y, z, w)
    arena.free(x)
    arena.free(z)
    first = arena.alloc(512)
    second = arena.alloc(300)
    assert first is x and second is z and second.size == 512
    assert arena.in_use == 512 + 256 + 512 + 256


def test_regions_grow_by_doubling() -> None:
    # 2 MiB: over the first region's 1 MiB, so the region doubles to 2 MiB and is taken whole;
    # then 1 MiB: no free chunk, a region of the current 2 MiB (the size after it doubles to
    # 4 MiB), split in two: held 4 MiB, in use 3 MiB
    arena = BfcArena()
    arena.alloc(2 * MIB)
    assert (arena.in_use, arena.held) == (2 * MIB, 2 * MIB)
    arena.alloc(MIB)
    assert (arena.in_use, arena.high, arena.held) == (3 * MIB, 3 * MIB, 4 * MIB)
    # the next region is 4 MiB: a 3 MiB request is taken from it whole (under twice 3 MiB)
    arena.alloc(3 * MIB)
    assert (arena.in_use, arena.held) == (7 * MIB, 8 * MIB)


def test_the_high_water_mark_stays_when_chunks_are_freed() -> None:
    arena = BfcArena()
    a = arena.alloc(4_096)
    b = arena.alloc(4_096)
    arena.free(a)
    arena.free(b)
    arena.alloc(256)
    assert (arena.in_use, arena.high) == (256, 8_192)
