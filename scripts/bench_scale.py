"""How graphmem's time and memory grow with the graph: chains and transformer-like decoders of
1k to 100k nodes, beside onnxsim 0.8.1's planner on the same files.

    python scripts/bench_scale.py [--sizes 1000,10000,30000,100000] [--repeat 3] [--out DIR]
                                  [--family chain,decoder]

Graphs (written to ``--out``, default a temporary folder; an existing file of the same name is
reused):

* ``chain_N``: N single-input elementwise nodes (Relu, Sigmoid, Tanh, Neg in turn) on a float
  [1, 256] tensor, opset 17: the most nodes per byte, every intermediate dies at the next node;
* ``decoder_N``: the Llama-shaped decoder of ``scripts/make_llama7b.py`` (RMSNorm, rotary
  embedding, causal attention, SiLU MLP; about 50 nodes a layer) with hidden 64, 4 heads,
  intermediate 128, vocab 100, as many layers as make about N nodes, external-data weights not
  present; bound to batch 1, seq 128.

Each size runs ``graphmem peak FILE --json`` and onnxsim's ``plan_activation_memory`` (the
snippet of ``bench_peak.py``, with the same binding) as fresh processes in turn
(``scripts/_bench.py``), with ``graphmem peak`` on the family's smallest graph (a 1-node chain,
a 1-layer decoder) in the same turn as the start-up baseline. Printed per tool and size: median
wall and CPU seconds, microseconds per node of the CPU time above that baseline (``(cpu - cpu of
the smallest graph) / (N - its nodes)``: a flat column is linear growth; the baseline holds what
a family costs once, such as the imports its ops need), the largest peak RSS, and onnxsim's wall
and CPU time over graphmem's (median of the pairs; on a busy machine the CPU ratio is the steadier
one: waiting for a core does not count). Without onnxsim (``pip install onnxsim==0.8.1``) graphmem alone is timed.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench import PYTHON, alternate, median, pair_ratios  # noqa: E402
from bench_peak import ONNXSIM  # noqa: E402

NODES_PER_LAYER = 50  # make_llama7b: 51 a layer, plus a few around them


def make_chain(n: int, path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    ops = ("Relu", "Sigmoid", "Tanh", "Neg")
    nodes, prev = [], "x"
    for i in range(n):
        nodes.append(helper.make_node(ops[i % 4], [prev], [f"t{i}"], name=f"n{i}"))
        prev = f"t{i}"
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 256])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def make_decoder(n: int, path: Path) -> None:
    import onnx
    from make_llama7b import build

    model, _, _ = build(layers=max(1, round(n / NODES_PER_LAYER)), hidden=64, heads=4, intermediate=128, vocab=100)
    onnx.save(model, path)


FAMILIES = {"chain": (make_chain, []), "decoder": (make_decoder, ["batch=1", "seq=128"])}


def graph_file(folder: Path, family: str, n: int) -> Path:
    path = folder / f"{family}_{n}.onnx"
    if not path.exists():
        FAMILIES[family][0](n, path)
    return path


def node_count(path: Path) -> int:
    import onnx

    return len(onnx.load(str(path), load_external_data=False).graph.node)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,30000,100000")
    ap.add_argument("--family", default="chain,decoder")
    ap.add_argument("--repeat", type=int, default=3, help="counted runs of each tool per size (default 3)")
    ap.add_argument("--out", type=Path, default=None, help="folder for the graphs (default: a temporary one)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="graphmem-scale-") as tmp:
        folder = args.out or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        have_onnxsim = importlib.util.find_spec("onnxsim") is not None
        if not have_onnxsim:
            print("onnxsim not installed (pip install onnxsim==0.8.1): graphmem alone\n")
        for family in args.family.split(","):
            dims = FAMILIES[family][1]
            dim_args = [a for d in dims for a in ("--dim", d)]
            baseline = graph_file(folder, family, 1)
            base_nodes = node_count(baseline)
            print(f"{family} ({', '.join(dims) or 'static'}): fresh processes in turn, median of {args.repeat}")
            print(f"  {'nodes':>7} {'tool':<10}{'wall s':>8}{'cpu s':>8}{'us/node':>9}{'max RSS':>10}   onnxsim / graphmem (wall, cpu)")
            for n in sizes:
                path = graph_file(folder, family, n)
                nodes = node_count(path)
                commands = {
                    "start-up": [PYTHON, "-m", "graphmem", "peak", str(baseline), "--json", *dim_args],
                    "graphmem": [PYTHON, "-m", "graphmem", "peak", str(path), "--json", *dim_args],
                }
                if have_onnxsim:
                    commands["onnxsim"] = [PYTHON, "-c", ONNXSIM, str(path), *dims]
                failed = {}
                for tool in list(commands):  # one run each first (the warm-up): a tool that fails is left out
                    try:
                        alternate({tool: commands[tool]}, 1, warmup=0, timeout=1800)
                    except RuntimeError as exc:
                        failed[tool] = str(exc)[:100]
                        del commands[tool]
                runs = alternate(commands, args.repeat, warmup=0, timeout=1800)
                start = median(runs["start-up"], "cpu")
                for tool, why in failed.items():
                    print(f"  {nodes:>7} {tool:<10}failed: {why}")
                for tool in ("graphmem", "onnxsim"):
                    if tool not in runs:
                        continue
                    rs = runs[tool]
                    if tool == "graphmem":
                        per_node = (median(rs, "cpu") - start) / (nodes - base_nodes) * 1e6
                    else:
                        per_node = median(rs, "cpu") / nodes * 1e6
                    ratio = ""
                    if tool == "onnxsim" and "graphmem" in runs:
                        ratio = "   ".join(f"{statistics.median(pair_ratios(rs, runs['graphmem'], f)):.2f}x"
                                             for f in ("wall", "cpu"))
                    rss = max(r.rss for r in rs) / 2**20
                    print(f"  {nodes:>7} {tool:<10}{median(rs, 'wall'):8.2f}{median(rs, 'cpu'):8.2f}{per_node:9.1f}"
                          f"{rss:7.0f} MiB   {ratio}")
            print(f"  (graphmem's baseline, peak on {base_nodes} nodes of the family: {start:.2f} s CPU; onnxsim's "
                  "us/node include its start-up)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
