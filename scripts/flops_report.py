"""graphmem's FLOP/MAC counts on the corpus, checked against run-time shapes and onnx-tool.

For every model of the corpus (``scripts/corpus.py``: the onnx wheel's light models, ``models/``,
and the exported ResNet-50, MobileNetV2, BERT-base, GPT-2 small; batch=1, every other symbolic
dim = 128, halved while onnxruntime rejects it, e.g. a model with 64 positions) this prints:

(a) graphmem's params, FLOPs, MACs, top 5 op types by FLOPs, and unsupported op types;
(b) an independent MAC count of Conv/ConvTranspose/Gemm/MatMul (and LSTM/GRU/RNN): the model is
    run with onnxruntime CPU (optimizations off) with every node output added as a graph output,
    so each node's *real* input/output shapes are read from the run — graphmem's shapes are not
    used — and MACs are computed per node here from those shapes and the node's attributes.
    graphmem's MACs for the same nodes must be within 0.1 %, per model and per node;
(c) onnx-tool 1.0.1's MACs and params for the same model and binding (``onnx_tool.Model(path)``,
    ``graph.shape_infer(feeds)``, ``graph.profile()``; ``graph.macs[0]`` = forward MACs,
    ``graph.params``) and the ratios onnx-tool / graphmem;
(d) where onnx-tool differs: both tools' MACs per op type side by side, and for every op type
    that differs, its nodes grouped by a cause that is checked against the numbers (the tags are
    printed once, at the top); a params reconciliation.

    python scripts/flops_report.py [--only NAME ...] [--batch 1] [--seq 128]

Exit status 1 when the 0.1 % bar fails for any model or node, or any op is unsupported.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata as md
import io
import itertools
import math
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

import graphmem  # noqa: E402
from graphmem.model.loading import load_model  # noqa: E402
from graphmem.optable import is_default_domain  # noqa: E402
from graphmem.verify.feeds import make_feeds  # noqa: E402
from graphmem.verify.shapes import runtime_shapes  # noqa: E402

CONTRACTIONS = ("Conv", "ConvTranspose", "Gemm", "MatMul")
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
POOLS = ("MaxPool", "AveragePool")
BAR = 1e-3  # 0.1 %
TOP = 5

TAGS = """\
why onnx-tool's MACs differ — the tags used in (d); each is checked against its line's numbers:
  [bias]   onnx-tool adds a Conv/ConvTranspose/Gemm bias as 1 MAC per output element; graphmem
           counts the bias add as a FLOP (its MACs are the multiply-accumulates of contractions only)
  [elem]   onnx-tool books an elementwise op's per-element count as MACs; graphmem counts the same
           work as FLOPs and 0 MACs
  [cycles] like [elem], but onnx-tool's per-element cost is a cycle estimate summed from its table
           (exp 32, div 4, sqrt 24, tanh 38, ...) where graphmem counts 1 per basic operation
  [int]    op on integer/bool tensors (shape arithmetic, masks): graphmem counts int_ops, not FLOPs/MACs
  [pool]   windowed pooling: onnx-tool books prod(kernel) per output; graphmem counts n-1 compares
           (max) or n-1 adds + 1 divide (average) per window as FLOPs
  [gpool]  global average pool: onnx-tool 1 add per input element + div 4 per output; graphmem
           n-1 adds + 1 divide per output, as FLOPs
  [norm]   LayerNormalization, per row of n elements: both written as a/elem + b/row
  [rnn]    LSTM: onnx-tool's matmul term equals graphmem's MACs; its gate terms are booked as MACs
  [convT]  ConvTranspose: onnx-tool multiplies the OUTPUT elements by prod(W[1:]) = Cout/g·k; the
           scatter does numel(X)·prod(W[1:]) multiply-adds (graphmem, and the run-time check)
  [shape]  onnx-tool's own shape inference disagrees with onnxruntime's run-time shape
  [zero]   graphmem counts the op as explicitly zero (data movement)
  [?]      not explained (counted in 'unexplained')"""


# --------------------------------------------------------------------------------------------
# bindings and feeds (the same feeds go to onnxruntime and onnx-tool)


def binding(path: Path, batch: int, seq: int) -> dict[str, int]:
    return {n: (batch if n == "batch" else seq) for n in load_model(path).symbolic_dims}


# --------------------------------------------------------------------------------------------
# (b) run-time shapes and the independent MAC count


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _has(node: onnx.NodeProto, i: int) -> bool:
    return len(node.input) > i and node.input[i] != ""


def independent_macs(node: onnx.NodeProto, shapes: dict[str, tuple[int, ...]]) -> int:
    """MACs of one node from its real shapes and attributes (own arithmetic).

    Conv          N·Cout·prod(Y spatial)·(Cin/group)·prod(kernel)   (every tap, padding included)
    ConvTranspose N·Cin·prod(X spatial)·(Cout/group)·prod(kernel)   (each input scatters a kernel)
    Gemm          M·N·K from A, B and transA/transB (bias, alpha, beta are not MACs)
    MatMul        prod(Y)·K, K = last dim of A
    LSTM/GRU/RNN  seq·batch·dirs·G·H·(I + H), G = 4 / 3 / 1 gates
    """
    at = _attrs(node)
    x = shapes[node.input[0]]
    w = shapes[node.input[1]]
    y = shapes[node.output[0]] if node.output and node.output[0] in shapes else ()
    group = int(at.get("group", 1))
    if node.op_type == "Conv":
        kernel = at.get("kernel_shape") or w[2:]
        assert w[1] * group == x[1], (node.name, x, w, group)
        return y[0] * y[1] * math.prod(y[2:]) * (x[1] // group) * math.prod(kernel)
    if node.op_type == "ConvTranspose":
        kernel = at.get("kernel_shape") or w[2:]
        assert w[1] * group == y[1] and w[0] == x[1], (node.name, x, w, y, group)
        return x[0] * x[1] * math.prod(x[2:]) * (y[1] // group) * math.prod(kernel)
    if node.op_type == "Gemm":
        m, k = (x[1], x[0]) if at.get("transA", 0) else (x[0], x[1])
        n, k2 = (w[0], w[1]) if at.get("transB", 0) else (w[1], w[0])
        assert k == k2 and tuple(y) == (m, n), (node.name, x, w, y)
        return m * n * k
    if node.op_type == "MatMul":
        k = x[-1]
        assert k == (w[0] if len(w) == 1 else w[-2]), (node.name, x, w)
        return math.prod(y) * k
    if node.op_type in GATES:
        seq, batch = (x[1], x[0]) if at.get("layout", 0) else (x[0], x[1])
        hidden = int(at.get("hidden_size", shapes[node.input[2]][-1]))
        dirs = 2 if at.get("direction", b"forward") in (b"bidirectional", "bidirectional") else 1
        assert w[0] == dirs and w[1] == GATES[node.op_type] * hidden, (node.name, w, dirs, hidden)
        return seq * batch * dirs * GATES[node.op_type] * hidden * (x[2] + hidden)
    raise ValueError(node.op_type)


# --------------------------------------------------------------------------------------------
# (c) onnx-tool


@dataclass
class OnnxTool:
    macs: int = 0
    params: int = 0
    by_op: dict[str, int] = field(default_factory=dict)
    node_macs: dict[str, int] = field(default_factory=dict)  # first output -> forward MACs
    out_shape: dict[str, tuple[int, ...]] = field(default_factory=dict)  # its inferred shapes
    op_mac: dict[str, tuple[int, int]] = field(default_factory=dict)  # op -> (op_mac, ratio)
    consts: dict[str, int] = field(default_factory=dict)  # onnx_tool.node's *_MACS table
    error: str = ""


def run_onnx_tool(path: Path, feeds: dict[str, np.ndarray]) -> OnnxTool:
    import onnx_tool
    import onnx_tool.node as otn

    res = OnnxTool(consts={k: v for k, v in vars(otn).items() if k.endswith("_MACS")})
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            g = onnx_tool.Model(str(path), {"verbose": False}).graph
            g.shape_infer({k: v for k, v in feeds.items() if k in g.input})
            g.profile()
    except Exception as e:  # noqa: BLE001 - report whatever onnx-tool raises
        res.error = f"{type(e).__name__}: {e}"[:300]
        return res
    res.macs = int(round(g.macs[0]))
    res.params = int(g.params)
    for node in g.nodemap.values():
        m = int(round(node.macs[0]))
        res.by_op[node.op_type] = res.by_op.get(node.op_type, 0) + m
        if node.output:
            res.node_macs[node.output[0]] = m
            t = g.tensormap.get(node.output[0])
            if t is not None:
                res.out_shape[node.output[0]] = tuple(int(d) for d in t.get_shape())
        if hasattr(node, "op_mac") and hasattr(node, "ratio"):
            res.op_mac.setdefault(node.op_type, (int(node.op_mac), int(node.ratio)))
    return res


# --------------------------------------------------------------------------------------------
# report


def fmt(n: float) -> str:
    for unit, s in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= unit:
            return f"{n / unit:.3f} {s}"
    return f"{n:.0f}"


def rel(a: float, b: float) -> float:
    return 0.0 if a == b else abs(a - b) / max(abs(b), 1)


def label(path: Path) -> str:
    for base, name in ((corpus.LIGHT, "onnx wheel light/"), (corpus.MODELS, "models/"), (corpus.EXPORTED, "corpus/")):
        if path.parent == base:
            return name + path.name
    return str(path)


@dataclass
class Row:
    name: str
    params: int
    flops: int
    macs: int
    indep: int  # independent MACs of the checked nodes
    checked: int  # graphmem's MACs of the same nodes
    check_ok: bool
    unsupported: dict[str, int]
    ot_macs: int | None
    ot_params: int | None
    unexplained: int


@dataclass
class Ctx:
    """What one model's explanation needs."""

    model: onnx.ModelProto
    shapes: dict[str, tuple[int, ...]]
    gm: dict[str, object]  # first output -> graphmem Cost
    indep: dict[str, int]  # first output -> independent MACs
    ot: OnnxTool


def report_model(path: Path, batch: int, seq: int) -> Row:
    t0 = time.time()
    dims = binding(path, batch, seq)
    model = onnx.load(str(path))
    print(f"\n=== {path.stem}  [{label(path)}]")
    # the run comes first: it fixes the binding (a model may not accept seq=128)
    while True:
        feeds = make_feeds(model, dims)
        try:
            shapes = runtime_shapes(model, feeds)
            break
        except Exception as e:  # noqa: BLE001 - onnxruntime's Fail / InvalidArgument
            smaller = {k: (v if k == "batch" else v // 2) for k, v in dims.items()}
            if smaller == dims or min(smaller.values(), default=0) < 1:
                raise
            msg = str(e).splitlines()[0]
            print(f"    onnxruntime rejects {dims} ({msg[msg.find('running') :][:90]}); all three tools get {smaller}")
            dims = smaller
    a = graphmem.analyze(path, dims=dims)
    fr = a.flops
    gm: dict[str, object] = {}
    gm_macs_by_op: dict[str, int] = {}
    for nid in a.order:
        nd = a.graph.node(nid)
        if nd.output:
            gm[nd.output[0]] = fr.costs[nid]
        gm_macs_by_op[nd.op_type] = gm_macs_by_op.get(nd.op_type, 0) + fr.costs[nid].macs

    # (a)
    print(
        f"(a) graphmem   dims {' '.join(f'{k}={v}' for k, v in dims.items()) or 'fixed'}   params {a.weights.params:,}   "
        f"FLOPs {fr.flops:,} ({fmt(fr.flops)})   MACs {fr.macs:,} ({fmt(fr.macs)})   "
        f"unsupported {fr.unsupported or 'none'}"
    )
    top = sorted(fr.by_op_type.items(), key=lambda kv: -kv[1])[:TOP]
    print("    top op types by FLOPs: " + ", ".join(f"{op} {fmt(f)} ({100 * f / max(fr.flops, 1):.1f}%)" for op, f in top))

    # (b)
    indep: dict[str, int] = {}
    totals = {"c": [0, 0, 0], "r": [0, 0, 0]}  # kind -> [nodes, independent, graphmem]
    off: list[str] = []
    for node in model.graph.node:
        kind = "c" if node.op_type in CONTRACTIONS else "r" if node.op_type in GATES else None
        if kind is None or not is_default_domain(node.domain):
            continue
        mine = independent_macs(node, shapes)
        indep[node.output[0]] = mine
        c = gm.get(node.output[0])
        theirs = c.macs if c is not None else 0
        if c is None or rel(theirs, mine) > BAR:
            off.append(f"{node.op_type} {node.name}: graphmem {theirs:,} vs run-time {mine:,}")
        t = totals[kind]
        t[0], t[1], t[2] = t[0] + 1, t[1] + mine, t[2] + theirs
    n_c, i_c, g_c = totals["c"]
    n_r, i_r, g_r = totals["r"]
    check_ok = not off and rel(g_c, i_c) <= BAR and rel(g_r, i_r) <= BAR
    print(
        f"(b) run-time shapes (onnxruntime CPU), {n_c} Conv/ConvTranspose/Gemm/MatMul nodes: independent {i_c:,}   "
        f"graphmem {g_c:,}   rel diff {100 * rel(g_c, i_c):.4f}%   {'OK' if check_ok else 'FAIL'} (bar 0.1%)"
    )
    if n_r:
        print(
            f"    and {n_r} LSTM/GRU/RNN node(s), seq·batch·dirs·G·H·(I+H): independent {i_r:,}   graphmem {g_r:,}   "
            f"rel diff {100 * rel(g_r, i_r):.4f}%"
        )
    for line in off[:10]:
        print(f"    FAIL node: {line}")
    if fr.macs != g_c + g_r:
        print(f"    NB graphmem MACs outside the checked op types: {fr.macs - g_c - g_r:,}")

    # (c), (d)
    ot = run_onnx_tool(path, feeds)
    unexplained = 0
    if ot.error:
        print(f"(c) onnx-tool failed: {ot.error}")
    else:
        print(
            f"(c) onnx-tool  MACs {ot.macs:,} ({fmt(ot.macs)})   ratio onnx-tool/graphmem {ot.macs / max(fr.macs, 1):.4f}"
            f"   params {ot.params:,}   ratio {ot.params / max(a.weights.params, 1):.4f}"
        )
        unexplained = explain(a, Ctx(model=model, shapes=shapes, gm=gm, indep=indep, ot=ot), gm_macs_by_op)
    print(f"    ({time.time() - t0:.1f} s)")
    return Row(
        name=path.stem,
        params=a.weights.params,
        flops=fr.flops,
        macs=fr.macs,
        indep=i_c + i_r,
        checked=g_c + g_r,
        check_ok=check_ok,
        unsupported=dict(fr.unsupported),
        ot_macs=None if ot.error else ot.macs,
        ot_params=None if ot.error else ot.params,
        unexplained=unexplained,
    )


# --------------------------------------------------------------------------------------------
# (d) explanation


def explain(a, cx: Ctx, gm_macs_by_op: dict[str, int]) -> int:
    """Print both tools' MACs per op type where they differ, each op's nodes grouped by cause;
    reconcile params. Returns the MACs no cause accounts for."""
    fr, ot = a.flops, cx.ot
    elems: dict[str, int] = {}
    flop_elems: dict[str, int] = {}  # output elements of the nodes graphmem counts FLOPs for
    nodes: dict[str, int] = {}
    for node in cx.model.graph.node:
        nodes[node.op_type] = nodes.get(node.op_type, 0) + 1
        if node.output and node.output[0] in cx.shapes:
            e = math.prod(cx.shapes[node.output[0]])
            elems[node.op_type] = elems.get(node.op_type, 0) + e
            c = cx.gm.get(node.output[0])
            if c is not None and c.flops:
                flop_elems[node.op_type] = flop_elems.get(node.op_type, 0) + e
    unexplained = 0
    diff = ot.macs - fr.macs
    if diff:
        print(f"(d) onnx-tool - graphmem MACs = {diff:+,} ({100 * diff / max(fr.macs, 1):+.2f}%); per op type:")
        ops = sorted(
            (op for op in set(ot.by_op) | set(gm_macs_by_op) if ot.by_op.get(op, 0) != gm_macs_by_op.get(op, 0)),
            key=lambda op: -abs(ot.by_op.get(op, 0) - gm_macs_by_op.get(op, 0)),
        )
        print(
            f"    {'op type':<19}{'nodes':>6}{'out elems':>13}{'graphmem MACs':>16}{'graphmem FLOPs':>16}"
            f"{'onnx-tool MACs':>16}{'diff':>15}{'share':>7}"
        )
        for op in ops:
            g_m, o_m = gm_macs_by_op.get(op, 0), ot.by_op.get(op, 0)
            print(
                f"    {op:<19}{nodes.get(op, 0):>6}{elems.get(op, 0):>13,}{g_m:>16,}{fr.by_op_type.get(op, 0):>16,}"
                f"{o_m:>16,}{o_m - g_m:>+15,}{100 * (o_m - g_m) / diff:>6.1f}%"
            )
            groups: dict[str, list[int]] = {}
            for node in cx.model.graph.node:
                if node.op_type != op or not node.output:
                    continue
                o = ot.node_macs.get(node.output[0], 0)
                c = cx.gm.get(node.output[0])
                g = c.macs if c is not None else 0
                if o == g:
                    continue
                why, explained = classify(node, o, c, cx)
                if not explained:
                    unexplained += abs(o - g)
                groups.setdefault(why, []).append(o - g)
            for why, ds in groups.items():
                print(f"        {len(ds):>3} node(s) {sum(ds):>+14,}  {why}")
        total = sum(ot.by_op.get(o, 0) - gm_macs_by_op.get(o, 0) for o in ops)
        print(f"    the per-op differences sum to {total:+,} = the total {diff:+,}; unexplained {unexplained:,}")
    else:
        print("(d) MACs: onnx-tool and graphmem agree exactly")
    zero = [(op, f) for op, f in sorted(fr.by_op_type.items()) if f and not ot.by_op.get(op, 0) and not gm_macs_by_op.get(op, 0)]
    if zero:
        print(
            "    (no MAC difference) onnx-tool counts 0 — no cost rule — where graphmem counts FLOPs: "
            + ", ".join(f"{op} {f:,} ({f / max(flop_elems.get(op, 1), 1):g}/elem)" for op, f in zero)
        )
    explain_params(a, cx)
    return unexplained


def classify(node: onnx.NodeProto, o: int, c, cx: Ctx) -> tuple[str, bool]:
    """(cause, explained?) of one node's onnx-tool MACs ``o`` vs graphmem's Cost ``c``."""
    op, out, shapes, ot = node.op_type, node.output[0], cx.shapes, cx.ot
    e = math.prod(shapes.get(out, ())) or 1
    k = o / e
    if c is None:
        return "graphmem has no such node (a Constant: graphmem holds it as a weight)", True
    g = c.macs
    if op in CONTRACTIONS:
        mine = cx.indep[out]
        d = o - mine
        bias = e if (_has(node, 2) and op != "MatMul") else 0
        w = shapes[node.input[1]]
        x = shapes[node.input[0]]
        gm_note = "" if g == mine else f" [graphmem itself is {g - mine:+,} off the run-time count]"
        if d == bias:
            return f"[bias] 1 MAC per output element{gm_note}", g == mine
        if op == "ConvTranspose" and o == e * math.prod(w[1:]) + bias:
            return (
                f"[convT] numel(Y)·prod(W[1:]) - numel(X)·prod(W[1:]) = ({e:,} - {math.prod(x):,})·{math.prod(w[1:])}"
                + (" + [bias]" if bias else "")
                + gm_note
            ), g == mine
        if ot.out_shape.get(out) not in (None, shapes[out]):
            return f"[shape] onnx-tool {ot.out_shape.get(out)} vs onnxruntime {shapes[out]}{gm_note}", g == mine
        return f"[?] onnx-tool {o:,} vs run-time {mine:,}{gm_note}", False
    if op in GATES and g:
        x, w, r = (shapes[node.input[i]] for i in range(3))
        gemm = (math.prod(w) + math.prod(r)) * x[0] * x[1]
        rest = _lstm_rest(node, shapes, ot.consts) if op == "LSTM" else None
        if gemm == g and rest is not None and gemm + rest[0] == o:
            per = (c.flops - 2 * g) / rest[2]
            return (
                f"[rnn] (numel(W)+numel(R))·seq·batch = {gemm:,} = graphmem's MACs; + {rest[0]:,} = {rest[1]}; "
                f"graphmem: {c.flops - 2 * g:,} FLOPs = {per:g} per hidden unit·step·direction"
            ), True
        return f"[?] onnx-tool matmul term {gemm:,} vs graphmem MACs {g:,}", False
    if g:
        return f"[?] graphmem {g:,} MACs", False
    if c.outcome == "zero":
        return f"[zero] onnx-tool {k:g}/elem", True
    if c.flops == 0 and c.int_ops:
        return f"[int] onnx-tool {k:g}/elem; graphmem {c.int_ops / e:g} int_op/elem", True
    f = c.flops / e
    if op in POOLS:
        kern = math.prod(_attrs(node).get("kernel_shape", ()))
        gmw = "n-1 compares" if f == kern - 1 else "n-1 adds + 1 divide" if f == kern else "?"
        ok = o == e * kern and gmw != "?"
        return f"[pool] window n = {kern}: onnx-tool {k:g}/output; graphmem {f:g} = {gmw}", ok
    if op == "GlobalAveragePool":
        n_in = math.prod(shapes[node.input[0]])
        ok = o == n_in + e * ot.consts["DIV_MACS"] and f * e == n_in
        return f"[gpool] window n = {n_in // e}: onnx-tool {k:g} = n + div {ot.consts['DIV_MACS']}; graphmem {f:g}", ok
    if op == "LayerNormalization":
        axis = _attrs(node).get("axis", -1)
        row = math.prod(shapes[node.input[0]][axis:])
        rows = e // row
        return f"[norm] row n = {row}: onnx-tool {_per_row(o, rows, row)}; graphmem {_per_row(c.flops, rows, row)}", True
    if op == "LRN":
        size = _attrs(node)["size"]
        t = ot.consts
        ok = o == e * (t["DIV_MACS"] + t["EXP_MACS"] + t["ADD_MACS"] + size * t["MUL_MACS"]) and c.flops == e * (2 * size + 3)
        return (
            f"[cycles] onnx-tool {k:g}/elem = div {t['DIV_MACS']} + exp (pow) {t['EXP_MACS']} + add 1 + size {size}·mul 1; "
            f"graphmem {f:g} = 2·size + 3"
        ), ok
    table = ""
    if op in ot.op_mac and o == e * ot.op_mac[op][0] * ot.op_mac[op][1]:
        op_mac, ratio = ot.op_mac[op]
        table = f" (its op_mac {op_mac} × ratio {ratio}"
        if ratio > 1 and len(node.input) == 1:
            table += f": ratio {ratio} on a one-input op counts the function {ratio} times"
        table += ")"
    parts = decompose(k, ot.consts) if k == int(k) and k > f else None
    if parts and any(name != "1" for name, _ in parts):
        sum_ = " + ".join(f"{n}×{name}" if n > 1 else name for name, n in parts)
        extra = " per element: the sqrt and divide are not folded per channel" if op == "BatchNormalization" else ""
        return f"[cycles] onnx-tool {k:g}/elem = {sum_}{table}{extra}; graphmem {f:g} FLOPs/elem", True
    return f"[elem] onnx-tool {k:g}/elem{table}; graphmem {f:g} FLOPs/elem", k == f


EXPENSIVE = ("EXP_MACS", "DIV_MACS", "SQRT_MACS", "TANH_MACS", "LOG_MACS", "SIN_MACS")


def decompose(k: float, consts: dict[str, int]) -> list[tuple[str, int]] | None:
    """Write an integer per-element cost as onnx-tool's table constants: the smallest remainder
    of 1-cost ops (add/mul/cmp), then the fewest expensive terms (each used at most twice)."""
    names = [n for n in EXPENSIVE if n in consts]
    best = None
    for counts in itertools.product(range(3), repeat=len(names)):
        rest = int(k) - sum(c * consts[n] for c, n in zip(counts, names))
        if rest >= 0 and (best is None or (rest, sum(counts)) < best[0]):
            best = ((rest, sum(counts)), counts)
    if best is None:
        return None
    (rest, _), counts = best
    parts = [(f"{n[:-5].lower()} {consts[n]}", c) for c, n in zip(counts, names) if c]
    if rest:
        parts.append(("1", rest))
    return parts


def _lstm_rest(node, shapes, k: dict[str, int]) -> tuple[int, str, int]:
    """onnx-tool's LSTM terms beyond the matmuls, recomputed from run-time shapes and its table:
    (total, description, hidden units·steps·directions)."""
    x = shapes[node.input[0]]
    b = shapes[node.input[3]] if _has(node, 3) else (0,)
    r = shapes[node.input[2]]
    seq, batch, dirs, hidden = x[0], x[1], r[0], r[-1]
    h = batch * seq * hidden
    terms = [
        ("bias numel(B)·seq·batch", math.prod(b) * seq * batch * k["ADD_MACS"]),
        ("4 gate adds·h", 4 * h * k["ADD_MACS"]),
        (f"3 sigmoid × exp {k['EXP_MACS']}·h", 3 * h * k["EXP_MACS"]),
        (f"2 tanh × {k['TANH_MACS']}·h", 2 * h * k["TANH_MACS"]),
        ("4 blend ops·h", h * (k["ADD_MACS"] + 3 * k["MUL_MACS"])),
    ]
    desc = " + ".join(f"{t} {v:,}" for t, v in terms) + f", h = batch·seq·H = {h:,}"
    if dirs > 1:
        desc += f" (not × {dirs} directions)"
    return sum(v for _, v in terms), desc, h * dirs


def _per_row(total: int, rows: int, row: int) -> str:
    """total = a·row·rows + b·rows with 0 <= b < row, as 'a/elem + b/row'."""
    per = total / rows
    if per != int(per):
        return f"{per:g}/row"
    a, b = divmod(int(per), row)
    return f"{int(per)}/row = {a}/elem + {b}/row"


def explain_params(a, cx: Ctx) -> None:
    """graphmem counts every initializer and every Constant node output once; onnx-tool counts the
    initializers some node reads. Reconcile the two from the file."""
    weights = a.graph.model.weights
    consumed = {x for n in cx.model.graph.node for x in n.input}
    init = [w for w in weights.values() if not w.from_constant_node]
    const = [w for w in weights.values() if w.from_constant_node]
    used = sum(w.numel for w in init if w.name in consumed)
    unused = [w for w in init if w.name not in consumed]
    gen = [n for n in cx.model.graph.node if n.op_type == "ConstantOfShape" and n.output[0] in cx.shapes]
    gen_elems = sum(math.prod(cx.shapes[n.output[0]]) for n in gen)
    note = ""
    if gen_elems > 10 * max(a.weights.params, 1):
        note = f"; NB the weights are made at run time by {len(gen)} ConstantOfShape nodes ({gen_elems:,} elements), params of neither tool"
    if cx.ot.params == a.weights.params:
        print(f"    params agree{note}")
        return
    ok = "= onnx-tool's figure" if used == cx.ot.params else f"!= onnx-tool's {cx.ot.params:,} (UNEXPLAINED)"
    print(
        f"    params {a.weights.params - cx.ot.params:+,}: graphmem also counts {len(const)} Constant node output(s) "
        f"({sum(w.numel for w in const):,}) and {len(unused)} initializer(s) no node reads ({sum(w.numel for w in unused):,}); "
        f"initializers read by a node: {used:,} {ok}{note}"
    )


# --------------------------------------------------------------------------------------------


def corpus_paths(only: list[str] | None) -> list[Path]:
    exported, missing = corpus.exported_models()
    if missing:
        print(f"note: exported models missing (run scripts/export_corpus.py): {missing}")
    paths = corpus.light_models() + corpus.committed_models() + exported
    if only:
        paths = [p for p in paths if any(s in p.stem for s in only)]
    return paths


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="substrings of model names to keep")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=128, help="value of every symbolic dim but batch")
    args = ap.parse_args()
    ort.set_default_logger_severity(4)  # a rejected binding is reported in the output instead
    import onnx_tool.node as otn

    print(
        f"graphmem FLOP report — onnx {onnx.__version__}, onnxruntime {ort.__version__}, onnx-tool "
        f"{md.version('onnx-tool')}; batch={args.batch}, other symbolic dims={args.seq}"
    )
    print(
        "onnx-tool's per-element cost table: "
        + ", ".join(f"{k[:-5].lower()} {v}" for k, v in vars(otn).items() if k.endswith("_MACS"))
    )
    print(TAGS)
    rows = [report_model(p, args.batch, args.seq) for p in corpus_paths(args.only)]

    print("\n=== summary — 'checked': MACs of Conv/ConvTranspose/Gemm/MatMul/LSTM nodes, independent (run-time shapes) vs graphmem")
    print(
        f"{'model':<20}{'params':>11}{'FLOPs':>11}{'MACs':>11}{'checked':>11}{'graphmem':>11}{'rel diff':>10}"
        f"{'onnx-tool':>11}{'ratio':>8}{'ot params':>11}{'ratio':>8}  status"
    )
    failed = False
    for r in rows:
        bad = (not r.check_ok) or bool(r.unsupported)
        failed |= bad
        ratio = f"{r.ot_macs / max(r.macs, 1):.4f}" if r.ot_macs is not None else "n/a"
        p_ratio = f"{r.ot_params / max(r.params, 1):.4f}" if r.ot_params is not None else "n/a"
        status = "FAIL" if bad else "ok"
        if r.unsupported:
            status += f" unsupported={r.unsupported}"
        if r.unexplained:
            status += f" unexplained={r.unexplained:,}"
        print(
            f"{r.name:<20}{fmt(r.params):>11}{fmt(r.flops):>11}{fmt(r.macs):>11}{fmt(r.indep):>11}{fmt(r.checked):>11}"
            f"{100 * rel(r.checked, r.indep):>9.4f}%{(fmt(r.ot_macs) if r.ot_macs is not None else 'failed'):>11}"
            f"{ratio:>8}{(fmt(r.ot_params) if r.ot_params is not None else '-'):>11}{p_ratio:>8}  {status}"
        )
    n_unexp = sum(1 for r in rows if r.unexplained)
    print(
        f"\n{len(rows)} models; "
        + ("FAIL" if failed else "every model and node within 0.1% of the run-time count, nothing unsupported")
        + f"; onnx-tool differences unexplained in {n_unexp} model(s)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
