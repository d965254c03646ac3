"""glibc's heap for large blocks (graphmem.ort.held.heap), against hand-computed pages.

Conventions of every case: the heap starts at 2**32 (0 modulo 64 and 4096), pages are 4 KiB, a
chunk's user bytes start 16 bytes after it (two size fields), a malloc of n bytes is a chunk of
(n + 8) rounded up to 16, an aligned_alloc(64, n) asks for that plus 64 + 32.
"""

from __future__ import annotations

import pytest

from graphmem.errors import PlanInvariantError
from graphmem.ort.held.heap import MMAP_THRESHOLD_MAX, Heap

BASE = 1 << 32
PAGE = 4096


def test_small_blocks_come_from_the_heap_large_ones_are_mapped_and_the_threshold_follows_a_freed_mapping() -> None:
    h = Heap(threshold=128 << 10, base=BASE)
    a = h.malloc(100_000)  # chunk 100,016 from the top; user bytes [base+16, base+100,016)
    assert not a.mapped and a.addr == BASE + 16
    assert h.resident == 25 * PAGE  # pages 0..24 (100,016 / 4096 = 24.4)
    b = h.malloc(300_000)  # chunk 300,016 >= 128 KiB: a mapping of 300,024 B rounded to 74 pages
    assert b.mapped and b.span == (0, 74 * PAGE)
    assert h.resident == 25 * PAGE + 74 * PAGE  # written from its first byte: pages 0..73
    h.free(b)  # the mapping goes; the threshold rises to its 303,104 B, the trim threshold twice that
    assert (h.threshold, h.trim_threshold, h.resident) == (74 * PAGE, 148 * PAGE, 25 * PAGE)
    c = h.malloc(300_000)  # now below the threshold: from the heap, above a
    assert not c.mapped and c.addr == BASE + 100_016 + 16


def test_a_mapping_above_32_mib_leaves_the_threshold_alone() -> None:
    h = Heap(threshold=128 << 10, base=BASE)
    h.free(h.malloc(40 << 20))
    assert h.threshold == 128 << 10
    h.free(h.malloc(MMAP_THRESHOLD_MAX - 4096))
    assert h.threshold == MMAP_THRESHOLD_MAX


def test_a_fresh_buffer_is_resident_only_where_written() -> None:
    h = Heap(threshold=128 << 10, base=BASE)
    r = h.malloc(8 << 20, align=64, touch=0)  # an arena region nobody wrote yet
    assert r.mapped and h.resident == 0
    h.write(r, 0, 10_000)  # bytes 0..9,999 behind a 16-byte header: pages 0..2
    assert h.resident == 3 * PAGE
    h.write(r, 5 * PAGE, 6 * PAGE)  # one more page, [5*4096+16, 6*4096+16): pages 5 and 6
    assert h.resident == 5 * PAGE


def test_an_aligned_request_does_not_fit_the_hole_of_its_twin_unless_the_slivers_merge() -> None:
    # S = 65,536: chunk 65,552, asked for 65,648. From the top at base: the user address must be
    # 64-aligned, base+16 is not, so 48 bytes lead (a sliver), the chunk is [base+48, base+65,600),
    # a 48-byte sliver trails it. The second from base+65,648: base+65,664 is aligned, no lead,
    # chunk [base+65,648, base+131,200), a 96-byte sliver. Freeing the first leaves a hole of
    # 65,552 B: too small for a third aligned request of S (65,648) unless both its slivers merged
    # into it (65,648 exactly).
    for keep, grows in ((True, True), (False, False)):
        h = Heap(threshold=1 << 30, base=BASE, keep_slivers=keep)
        a = h.malloc(65_536, align=64)
        b = h.malloc(65_536, align=64)
        assert (a.addr, b.addr) == (BASE + 64, BASE + 65_664)
        assert h.resident == 33 * PAGE  # pages 0..32 (b's last byte at base+131,199)
        h.free(a)
        c = h.malloc(65_536, align=64)
        if grows:  # from the top at base+131,296: 48 past 64-alignment + 16, so a lead of 80
            assert c.addr == BASE + 131_392
            assert h.resident == 49 * PAGE  # c's bytes end at base+196,928: pages 33..48 added
        else:
            assert c.addr == BASE + 64
            assert h.resident == 33 * PAGE  # a's pages, resident already


def test_freed_neighbours_merge_and_the_best_fit_hole_is_taken() -> None:
    h = Heap(threshold=1 << 30, base=BASE)
    blocks = [h.malloc(n) for n in (100_000, 50_000, 100_000, 30_000, 1_000)]  # the last keeps the top
    h.free(blocks[1])
    h.free(blocks[3])  # holes: 50,016 at a's end, 30,016 after the second 100,000
    d = h.malloc(25_000)  # fits both: the smaller, 30,016
    assert d.addr == blocks[3].addr
    h.free(blocks[2])  # merges with nothing free (d sits after it, blocks[1]'s hole before it merges)
    e = h.malloc(140_000)  # 50,016 + 100,016 merged = 150,032 fits
    assert e.addr == blocks[1].addr


def test_freeing_the_top_beyond_the_trim_threshold_gives_pages_back() -> None:
    h = Heap(threshold=128 << 10, base=BASE)
    keep = h.malloc(1_000)
    big = [h.malloc(120_000) for _ in range(4)]  # below the threshold: 480 KB on the heap
    assert h.resident > 110 * PAGE
    for b in reversed(big):
        h.free(b)  # the free top exceeds 128 KiB: the break comes down to the top + 128 KiB
    # keep's chunk is 1,008 B: the top is at base+1,008, the break at (1,008 + 131,072) rounded up
    # to a page, 33 pages: the pages above it left the process, those below stay resident
    assert keep.addr == BASE + 16 and h.heap_size == 33 * PAGE
    assert h.resident == 33 * PAGE


def test_bad_calls_raise() -> None:
    h = Heap()
    with pytest.raises(PlanInvariantError):
        h.malloc(10, align=48)
    b = h.malloc(10)
    h.free(b)
    with pytest.raises(PlanInvariantError):
        h.free(b)
