"""The BFC arena emulation (graphmem.ort.arena) against hand-computed regions, chunks and stats.

Sizes in MiB are written M below; every request is rounded up to 256 bytes; a free chunk is split
only when it is at least twice the rounded request (or would waste max_dead_bytes)."""

from __future__ import annotations

import pytest

from graphmem.errors import ArenaLimitError
from graphmem.ort.arena import SAME_AS_REQUESTED, BfcArena

M = 1 << 20


def sizes(arena: BfcArena) -> list[int]:
    return [r.size for r in arena.regions]


def test_next_power_of_two_regions_double_after_a_region_of_unchanged_size() -> None:
    a = BfcArena()
    x = a.alloc(1000)  # 1024 B; no region: extend by curr = 1M (not grown: curr -> 2M); 1M >= 2*1024: split
    assert sizes(a) == [M] and x is not None and x.size == 1024
    y = a.alloc(3 * M // 2)  # free: 1M-1024 < 1.5M -> extend by curr = 2M (curr -> 4M); 2M < 3M: whole chunk
    assert sizes(a) == [M, 2 * M] and y is not None and y.size == 2 * M
    z = a.alloc(5 * M)  # 5M > curr 4M: doubled to 8M (grown: stays 8M); 8M < 10M: whole chunk
    assert sizes(a) == [M, 2 * M, 8 * M] and z is not None and z.size == 8 * M
    w = a.alloc(M)  # free: 1M-1024 < 1M -> extend by 8M (curr -> 16M); split
    assert sizes(a) == [M, 2 * M, 8 * M, 8 * M] and w is not None and w.size == M
    assert a.held == 19 * M
    assert a.in_use == 1024 + 2 * M + 8 * M + M
    assert a.requested == 1000 + 3 * M // 2 + 5 * M + M
    assert [r.request for r in a.regions] == [1024, 3 * M // 2, 5 * M, M]
    a.free(x)  # region 1 coalesces back into one free 1M chunk
    v = a.alloc(M)  # best fit: the 1M chunk of region 1 (bin of 1M), not 8M-1M of region 4
    assert v is not None and v.region.ident == 0 and a.held == 19 * M


def test_max_power_of_two_extend_bytes_caps_the_growth() -> None:
    # each request is 1M: regions 1M (curr -> 2M), 2M (curr 2M is not below 4M/2: curr = 4M),
    # then 4M, 4M: capped at 4M where the uncapped arena takes 8M
    capped, free = BfcArena(max_power_of_two_extend=4 * M), BfcArena()
    for arena in (capped, free):
        for _ in range(8):  # 1 + (1 + 1) + (1 + 1 + 1 + 1) + 1
            arena.alloc(M)
    assert sizes(capped) == [M, 2 * M, 4 * M, 4 * M]
    assert sizes(free) == [M, 2 * M, 4 * M, 8 * M]


def test_same_as_requested_regions_are_the_rounded_requests() -> None:
    a = BfcArena(strategy=SAME_AS_REQUESTED)
    x = a.alloc(1000)  # region of 1024
    a.alloc(300)  # region of 512
    assert sizes(a) == [1024, 512]
    a.free(x)
    a.alloc(900)  # 1024 fits the free first region: no new region
    assert sizes(a) == [1024, 512] and a.held == 1536


def test_max_mem_limits_the_regions() -> None:
    a = BfcArena(memory_limit=3 * M)
    a.alloc(1000)  # region 1M
    a.alloc(3 * M // 2)  # available 2M: region min(curr 2M, 2M)
    assert sizes(a) == [M, 2 * M]
    a.alloc(600 << 10)  # fits the rest of region 1
    with pytest.raises(ArenaLimitError):
        a.alloc(M)  # nothing free fits and 0 bytes are available


def test_split_rules_twice_the_request_or_max_dead_bytes() -> None:
    a = BfcArena()
    x = a.alloc(M // 2 + 256)  # 1M chunk < 2 * (512K + 256): not split, the whole 1M is used
    assert x is not None and x.size == M and a.in_use == M
    b = BfcArena(max_dead_bytes=1024)
    y = b.alloc(600 << 10)  # not twice, but 1M - 600K >= 1024 bytes of waste: split
    assert y is not None and y.size == 600 << 10


def test_ties_between_equal_chunks_go_to_the_lower_address() -> None:
    # two 1M regions (1M, then a 1M request in a fresh arena with curr 2M would take 2M: use
    # kSameAsRequested); a process's regions come from mmap, each below the previous
    a = BfcArena(strategy=SAME_AS_REQUESTED)
    first, second = a.alloc(M), a.alloc(M)
    assert first is not None and second is not None
    a.free(first)
    a.free(second)
    again = a.alloc(M)
    assert again is not None and again.region.ident == 1  # the second region lies lower
    rising = BfcArena(strategy=SAME_AS_REQUESTED, descending=False)
    p, q = rising.alloc(M), rising.alloc(M)
    rising.free(p)
    rising.free(q)
    r = rising.alloc(M)
    assert r is not None and r.region.ident == 0


def test_reserve_is_held_exactly_outside_the_regions() -> None:
    a = BfcArena()
    r = a.reserve(1000)  # straight from the system allocator: 1000 bytes, no region
    assert a.held == 1000 and a.in_use == 1000 and a.requested == 1000 and a.regions == []
    assert a.reserved_bytes == 1000
    a.free(r)
    assert a.held == 0 and a.in_use == 0 and a.reserved_bytes == 0


def test_shrink_returns_unused_regions_but_the_first() -> None:
    a = BfcArena()
    x = a.alloc(1000)  # region 1M (curr 2M)
    y = a.alloc(3 * M // 2)  # region 2M (curr 4M)
    a.free(x)
    a.free(y)
    assert a.shrink() == 2 * M  # the first region is kept under kNextPowerOfTwo
    assert sizes(a) == [M] and a.held == M
    a.alloc(M)  # the free 1M region fits it exactly: no new region
    assert sizes(a) == [M]
    a.alloc(M)  # growth restarts at initial_growth_chunk_size_bytes (2M)
    assert sizes(a) == [M, 2 * M]


def test_a_zero_byte_request_takes_nothing() -> None:
    a = BfcArena()
    assert a.alloc(0) is None and a.reserve(0) is None and a.held == 0
