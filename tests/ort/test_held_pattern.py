"""The memory pattern planner (graphmem.ort.held.pattern) against hand-placed blocks.

Each test traces allocations and frees in order (sizes already rounded to 256, as the frame
traces them) and checks every offset and the block's size."""

from __future__ import annotations

from graphmem.ort.held.pattern import MemPatternPlanner


def plan(*events: tuple[str, int, int]) -> MemPatternPlanner:
    p = MemPatternPlanner()
    for kind, value, size in events:
        if kind == "alloc":
            p.trace_allocation(value, size)
        else:
            p.trace_free(value)
    return p


def test_a_freed_gap_is_reused() -> None:
    # A [0,256) B [256,768); free A; C 256 fits the gap [0,256) exactly
    p = plan(("alloc", 1, 256), ("alloc", 2, 512), ("free", 1, 0), ("alloc", 3, 256)).pattern()
    assert p.blocks == {1: (0, 256), 2: (256, 512), 3: (0, 256)} and p.peak == 768


def test_no_gap_fits_the_block_grows_past_the_live_blocks() -> None:
    # A [0,1024) B [1024,1280); free B: the free end is 256 bytes; C 512 does not fit it and
    # goes at the end of the live blocks, 1024, growing the block to 1536
    p = plan(("alloc", 1, 1024), ("alloc", 2, 256), ("free", 2, 0), ("alloc", 3, 512)).pattern()
    assert p.blocks[3] == (1024, 512) and p.peak == 1536


def test_the_free_end_wins_over_a_worse_interior_gap() -> None:
    # A [0,256) B [256,1280) C [1280,1536) D [1536,2048); free B and D: interior gap of 1024 at
    # 256 (waste 512 for E 512) against the free end [1536,2048) (waste 0): E goes to 1536
    p = plan(
        ("alloc", 1, 256), ("alloc", 2, 1024), ("alloc", 3, 256), ("alloc", 4, 512),
        ("free", 2, 0), ("free", 4, 0), ("alloc", 5, 512),
    ).pattern()
    assert p.blocks[5] == (1536, 512) and p.peak == 2048


def test_the_least_waste_among_interior_gaps() -> None:
    # A [0,512) B [512,768) C [768,1024) D [1024,1280); free A (gap 512) and C (gap 256):
    # E 256 takes C's gap, which wastes nothing
    p = plan(
        ("alloc", 1, 512), ("alloc", 2, 256), ("alloc", 3, 256), ("alloc", 4, 256),
        ("free", 1, 0), ("free", 3, 0), ("alloc", 5, 256),
    ).pattern()
    assert p.blocks[5] == (768, 256) and p.peak == 1280


def test_zero_size_and_a_value_traced_twice() -> None:
    # a zero-size value takes (0, 0) and no room; a value traced again keeps its last block
    p = plan(("alloc", 1, 0), ("alloc", 2, 256), ("free", 2, 0), ("alloc", 3, 512), ("alloc", 2, 256)).pattern()
    assert p.blocks[1] == (0, 0)
    assert p.blocks[3] == (0, 512) and p.blocks[2] == (512, 256) and p.peak == 768
