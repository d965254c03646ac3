"""onnxruntime's memory pattern planner (``core/framework/mem_pattern_planner.h``).

Run 1 of a session with ``enable_mem_pattern`` traces every buffer its frame allocates and frees
(``ExecutionFrame::TraceAllocate``/``TraceFree``, ``core/framework/execution_frame.cc``) into a
``MemPatternPlanner`` per device (``ort_value_pattern_planner.cc``). Each traced allocation gets
an offset in one block: of the gaps between live blocks (in offset order) and the free end of
the block so far, the one that fits and wastes the least (the first of equals), else the end of
the live blocks, growing the block; the block's size is the highest end ever reached. From run 2 on, for the same input
shapes, the frame allocates that block once and
places the traced tensors in it. Like every planner here it knows nothing of ONNX.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MemoryPattern", "MemPatternPlanner"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryPattern:
    """The block (``peak``) and each traced value's (offset, size) in it."""

    peak: int
    blocks: dict[int, tuple[int, int]]


class MemPatternPlanner:
    """``MemPatternPlanner::TraceAllocation``/``TraceFree``/``GenerateMemPattern``, without
    program counters (the inference path)."""

    def __init__(self) -> None:
        self._allocs: list[tuple[int, int, int]] = []  # (value, offset, size) in trace order
        self._live: list[int] = []  # indices into _allocs, sorted by offset
        self._peak = 0

    def trace_allocation(self, value: int, size: int) -> None:
        if size == 0:
            self._allocs.append((value, 0, 0))  # a zero-size block, never in the live list
            return
        best_offset: int | None = None
        waste = 0
        current = 0
        for i in self._live:
            _, off, sz = self._allocs[i]
            if off >= current:
                gap = off - current
                if gap >= size and (best_offset is None or gap - size < waste):
                    best_offset, waste = current, gap - size
            current = max(current, off + sz)
        tail = self._peak - current  # the free end of the block, below its size so far
        if tail >= size and (best_offset is None or tail - size < waste):
            best_offset = current
        if best_offset is None:
            best_offset = current
        self._peak = max(self._peak, best_offset + size)
        self._allocs.append((value, best_offset, size))
        at = len(self._live)
        for pos, i in enumerate(self._live):
            _, off, sz = self._allocs[i]
            if off > best_offset or (off == best_offset and sz >= size):
                at = pos
                break
        self._live.insert(at, len(self._allocs) - 1)

    def trace_free(self, value: int) -> None:
        for pos, i in enumerate(self._live):
            if self._allocs[i][0] == value:
                del self._live[pos]
                return

    def pattern(self) -> MemoryPattern:
        """``GenerateMemPattern``: a later trace of the same value overwrites an earlier one."""
        return MemoryPattern(peak=self._peak, blocks={v: (off, size) for v, off, size in self._allocs})
