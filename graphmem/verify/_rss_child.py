"""Run by path in a fresh Python process (``graphmem.verify.resident``): one session's resident growth.

argv[1] is a JSON object: ``path`` (the model), ``feeds`` (an .npz file of the inputs), ``level``
(none|basic|extended|all), ``threads``, ``mem_pattern``, ``cpu_arena``, ``config`` (session config
entries), ``arena_cfg`` (OrtArenaCfg entries for an environment arena; empty: none), ``runs``.
Prints one JSON line: ``VmRSS`` before the session (inputs loaded), after creating it, after each run.
With ``profile_dir`` (a private folder) in the object it measures the arena instead
(:func:`profiled_arena`, for ``graphmem.verify.advice``).

It imports only numpy and onnxruntime, as a deployed program would before creating its session:
nothing of graphmem, whose imports would shape the C heap the session then grows into.
"""

import gc
import json
import sys
from typing import Any


def vm_rss() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def session_options(ort: Any, spec: dict[str, Any]) -> Any:
    """Register the environment arena ``spec`` asks for and build the session's options."""
    ort.set_default_logger_severity(3)
    if spec["arena_cfg"]:
        info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
        ort.create_and_register_allocator(info, ort.OrtArenaCfg(spec["arena_cfg"]))
    so = ort.SessionOptions()
    so.graph_optimization_level = {
        "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL, "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED, "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[spec["level"]]
    so.intra_op_num_threads = spec["threads"]
    so.inter_op_num_threads = 1
    so.enable_mem_pattern = spec["mem_pattern"]
    so.enable_cpu_mem_arena = spec["cpu_arena"]
    so.log_severity_level = 3
    for key, value in spec["config"].items():
        so.add_session_config_entry(key, value)
    return so


def profiled_arena(spec: dict[str, Any]) -> None:
    """``spec`` with ``profile_dir`` (``graphmem.verify.advice``): one profiled session's arena.
    Prints one JSON line: ``events``, the profiler's node events of every run, as
    :func:`graphmem.verify.measure.load_events` reads them. No VmRSS is read here."""
    import numpy as np
    import onnxruntime as ort

    so = session_options(ort, spec)
    so.enable_profiling = True
    so.profile_file_prefix = spec["profile_dir"] + "/profile"
    with np.load(spec["feeds"]) as data:
        feeds = {name: data[name] for name in data.files}
    session = ort.InferenceSession(spec["path"], so, providers=["CPUExecutionProvider"])
    for _ in range(spec["runs"]):
        outputs = session.run(None, feeds)
        del outputs
    profile = session.end_profiling()
    with open(profile, encoding="utf-8") as f:
        events = json.load(f)
    print(json.dumps({"events": events}))


def main() -> None:
    spec = json.loads(sys.argv[1])
    if "profile_dir" in spec:
        profiled_arena(spec)
        return
    import numpy as np
    import onnxruntime as ort

    so = session_options(ort, spec)
    with np.load(spec["feeds"]) as data:
        feeds = {name: data[name] for name in data.files}
    gc.collect()
    rows = [vm_rss()]
    session = ort.InferenceSession(spec["path"], so, providers=["CPUExecutionProvider"])
    rows.append(vm_rss())
    for _ in range(spec["runs"]):
        outputs = session.run(None, feeds)
        del outputs
        rows.append(vm_rss())
    print(json.dumps({"vm_rss": rows}))


if __name__ == "__main__":
    main()
