"""The later stages (graphmem/analysis/plans.py) and the assembly (graphmem/analysis/assemble.py),
each on its own: tiny inline graphs, the alloc/free order and the figures hand-computed in the
comments, the control-flow figures also measured with a real onnxruntime session."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from builders import if_model, init, model, tensor
from onnx import helper

from graphmem.analysis.assemble import assemble
from graphmem.analysis.plans import (
    count_flops, plan_headline, plan_memory, program, replay_control_flow, replay_headline,
)
from graphmem.analysis.request import AnalysisRequest, Bindings
from graphmem.analysis.stages import Session, cpu_kernels, expand_functions, load, session_graph, types_and_shapes
from graphmem.errors import UsageError
from graphmem.model.loading import Model, load_model, model_from_proto
from graphmem.verify import measure

X = [4, 100]  # 1,600 B of float


def _session(m: Model, request: AnalysisRequest) -> Session:
    loaded = load(m, request)
    typed = types_and_shapes(expand_functions(loaded.model, request).model, loaded.inputs, request)
    return session_graph(typed, cpu_kernels(typed, request), request)


def _chain() -> Model:
    """Exp_0, Relu_1, Exp_2, Sigmoid_3 over x [1, 1024] (4,096 B each)."""
    nodes, prev = [], "x"
    for k, op in enumerate(["Exp", "Relu", "Exp", "Sigmoid"]):
        out = "y" if k == 3 else f"t{k}"
        nodes.append(helper.make_node(op, [prev], [out], name=f"{op}_{k}"))
        prev = out
    return model_from_proto(model(nodes, [tensor("x", [1, 1024])], [tensor("y", [1, 1024])]))


def _if(tmp_path: Path) -> Path:
    return if_model(tmp_path / "if.onnx", X)


def test_program_has_a_step_per_node_and_a_value_per_tensor() -> None:
    programmed = program(_session(_chain(), AnalysisRequest()))
    assert [s.label for s in programmed.program.steps] == ["Exp_0", "Relu_1", "Exp_2", "Sigmoid_3"]
    assert sorted(programmed.names) == ["t0", "t1", "t2", "x", "y"]
    assert {programmed.program.values[programmed.names.index(n)].size for n in ("t0", "y")} == {4_096}


def test_plan_memory_and_its_headline() -> None:
    # Exp_0: t0 4,096. Relu_1: t1 in place of t0 (its last reader). Exp_2: t2 4,096 -> 8,192, the
    # peak; t0/t1 released after it. Sigmoid_3: y (graph output) 4,096 + t2 = 8,192, t2 released.
    # No reuse (every tensor its own buffer): t0, t1, t2, y = 16,384; lower bound 8,192; the best arena 8,192;
    # in the arena (4,096 B chunks, no scratch) the in-use high-water mark is 8,192 too.
    request = AnalysisRequest()
    session = _session(_chain(), request)
    programmed = program(session)
    plans = plan_memory(session, programmed, request)
    assert (plans.plan.peak_bytes, plans.liveness.lower_bound, plans.liveness.no_reuse) == (8_192, 8_192, 16_384)
    assert plans.arena.arena_bytes == 8_192
    assert plans.run is not None and plans.run.peak_bytes == 8_192
    headline = plan_headline(session, programmed, plans)
    assert headline.source == "ort.allocation.plan_ort"
    assert (headline.peak_bytes, headline.peak_step, headline.peak_node) == (8_192, 2, "Exp_2")
    assert headline.timeline == (("Exp_0", 4_096), ("Relu_1", 4_096), ("Exp_2", 8_192), ("Sigmoid_3", 8_192))
    assert headline.live_at_peak == frozenset({"t0", "t1", "t2"})
    assert replay_control_flow(session, programmed, plans, request) is None  # no bodies: the plan is the headline


def test_plan_memory_on_cuda_does_not_model_the_run() -> None:
    request = AnalysisRequest(provider="cuda")
    session = _session(_chain(), request)
    programmed = program(session)
    plans = plan_memory(session, programmed, request)
    assert plans.run is None
    headline = plan_headline(session, programmed, plans)
    assert (headline.in_use_peak_bytes, headline.scratch_unmodelled) == (None, ("every CUDA kernel",))


def test_control_flow_replay_owns_the_headline(tmp_path: Path) -> None:
    # pre: x0 1,600. if: y allocated upfront (static shape) 1,600 -> 3,200. then: t_neg a 1,600
    # -> 4,800 (the peak); t_neg2 writes into y, a released after it -> 4,800 sampled. The If's
    # own sample (first in the timeline) is after its body: x0 + y = 3,200. post: out + y 3,200.
    # Arena: three 1,792 B chunks (1,600 rounded up to 256 B) at the peak: 5,376.
    path = _if(tmp_path)
    request = AnalysisRequest(bindings=Bindings.of(values={"c": (1,)}))
    session = _session(load_model(path), request)
    programmed = program(session)
    plans = plan_memory(session, programmed, request)
    assert plans.plan.peak_bytes == 3_200  # the top plan alone does not see the body
    cf = replay_control_flow(session, programmed, plans, request)
    assert cf is not None
    headline = replay_headline(plans, cf)
    assert headline.source == "ort.controlflow.replay"
    assert headline.timeline == (("pre", 1_600), ("if", 3_200), ("if/then/t_neg", 4_800),
                                 ("if/then/t_neg2", 4_800), ("post", 3_200))
    assert (headline.peak_bytes, headline.peak_step, headline.peak_node) == (4_800, 2, "if/then/t_neg")
    assert headline.in_use_peak_bytes == 5_376
    run = measure(str(path), {"x": np.ones(X, np.float32), "c": np.array(True)}, runs=1).runs[0]
    assert (run.requested_peak, run.in_use_peak_bytes) == (4_800, 5_376)
    # FLOPs through the branch that ran: Relu, Neg, Neg, Relu, 400 each (Abs is not run)
    assert count_flops(session, cf).report.flops == 1_600


def test_control_flow_on_cuda_is_refused(tmp_path: Path) -> None:
    request = AnalysisRequest(bindings=Bindings.of(values={"c": (1,)}), provider="cuda")
    session = _session(load_model(_if(tmp_path)), request)
    programmed = program(session)
    with pytest.raises(UsageError, match="emulated on CPU only"):
        replay_control_flow(session, programmed, plan_memory(session, programmed, request), request)


def test_count_flops_of_a_matmul() -> None:
    # [2,3] x [3,4]: 2*3*4 = 24 multiply-adds, 48 FLOPs
    nodes = [helper.make_node("MatMul", ["a", "W"], ["y"])]
    m = model_from_proto(model(nodes, [tensor("a", [2, 3])], [tensor("y", [2, 4])], [init("W", np.ones((3, 4), np.float32))]))
    flops = count_flops(_session(m, AnalysisRequest()), None)
    assert (flops.report.macs, flops.report.flops) == (24, 48)


def test_assemble_sums_the_stages() -> None:
    # W [1024] float 4,096 B; x [1,1024] 4,096 B; the chain's peak 8,192 B: total 16,384 B
    nodes = [helper.make_node("Mul", ["x", "W"], ["m"], name="mul"), helper.make_node("Exp", ["m"], ["y"], name="exp")]
    m = model_from_proto(model(nodes, [tensor("x", [1, 1024])], [tensor("y", [1, 1024])], [init("W", np.ones(1024, np.float32))]))
    request = AnalysisRequest()
    loaded = load(m, request)
    expanded = expand_functions(loaded.model, request)
    typed = types_and_shapes(expanded.model, loaded.inputs, request)
    kernels = cpu_kernels(typed, request)
    session = session_graph(typed, kernels, request)
    programmed = program(session)
    plans = plan_memory(session, programmed, request)
    a = assemble(request=request, loaded=loaded, expanded=expanded, kernels=kernels, session=session,
                 programmed=programmed, plans=plans, cf=None, headline=plan_headline(session, programmed, plans),
                 flops=count_flops(session, None))
    assert (a.weights.bytes, a.io.inputs_bytes, a.io.outputs_bytes, a.activations.peak_bytes) == (4_096, 4_096, 4_096, 8_192)
    assert a.total_bytes == 16_384 and a.activations.exact
    assert a.shapes.tensors == 4  # x, W, m, y
    assert a.steps is not None and a.steps.plan is plans.plan and a.replay is None
