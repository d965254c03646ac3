"""Run by path in a fresh Python process (``graphmem.verify.advice``): one profiled session's arena.

argv[1] is the JSON object ``_rss_child.py`` reads (``path``, ``feeds``, ``level``, ``threads``,
``mem_pattern``, ``cpu_arena``, ``config``, ``arena_cfg``, ``runs``) and ``profile_dir``, a
private folder for the profile. Prints one JSON line: ``events``, the profiler's node events of
every run, as :func:`graphmem.verify.measure.load_events` reads them.

The session is created and run before anything of graphmem is imported: loading a model with
onnx in the same process first frees large buffers, which moves glibc's mmap threshold and with
it where the arena's regions land and which of two equal free chunks a request takes
(``scripts/held_arena_check.py``); a fresh process that only creates and runs the session is
what the prediction is for.
"""

import json
import sys


def main() -> None:
    spec = json.loads(sys.argv[1])
    import numpy as np
    import onnxruntime as ort

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
    so.enable_profiling = True
    so.profile_file_prefix = spec["profile_dir"] + "/profile"
    so.log_severity_level = 3
    for key, value in spec["config"].items():
        so.add_session_config_entry(key, value)
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


if __name__ == "__main__":
    main()
