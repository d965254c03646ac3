"""Everything that emulates onnxruntime 1.31: execution order, kernel sharing rules, graph
rewrites, the allocation planner and arena, kernel scratch, contrib-op shapes, sessions and the
optimized graphs onnxruntime writes. The one place to change when onnxruntime changes."""
