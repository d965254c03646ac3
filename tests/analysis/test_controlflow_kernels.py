"""Control flow planned (graphmem/analysis/controlflow.py), on its own: the Kernel each If/Loop
node becomes (what it allocates before its bodies, its frames, what it keeps) and what it says
when it assumes. Tiny graphs; the figures these kernels replay to are measured end to end in
test_controlflow.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from builders import if_model, init, model, save, tensor
from onnx import TensorProto, helper

from graphmem.analysis.controlflow import ControlFlowPlan, control_flow_approximations, plan_control_flow, released_initializers
from graphmem.analysis.plans import Programmed, plan_memory, program
from graphmem.analysis.request import AnalysisRequest, Bindings
from graphmem.analysis.stages import cpu_kernels, expand_functions, load, session_graph, types_and_shapes
from graphmem.model.loading import load_model, model_from_proto
from graphmem.ort.controlflow import Temp, Upfront

X = [4, 100]  # 1,600 B of float
I64, BOOL = TensorProto.INT64, TensorProto.BOOL


def _planned(path: Path, **values: tuple[int, ...]) -> tuple[Programmed, ControlFlowPlan]:
    request = AnalysisRequest(bindings=Bindings.of(values=values))
    loaded = load(load_model(path), request)
    typed = types_and_shapes(expand_functions(loaded.model, request).model, loaded.inputs, request)
    s = session_graph(typed, cpu_kernels(typed, request), request)
    programmed = program(s)
    plans = plan_memory(s, programmed, request)
    flow = plan_control_flow(
        programmed.program, plans.plan, programmed.names, s.provider.order, s.provider.graph.protos, s.runtime.bodies,
        s.static.bodies, s.provider.static, s.provider.runtime, s.model.opset, s.model, host=request.host,
    )
    return programmed, flow


def _if(tmp_path: Path) -> Path:
    return if_model(tmp_path / "if.onnx", X)


def test_an_if_allocates_its_static_output_before_its_branch(tmp_path: Path) -> None:
    # y has a static shape in the branch: allocated (Upfront) before it runs; one frame, the
    # then branch's two steps
    programmed, flow = _planned(_if(tmp_path), c=(1,))
    ((step, kernel),) = flow.kernels.items()
    assert step == 1 and [programmed.names[v] for v in kernel.upfront] == ["y"]
    assert kernel.before == (Upfront(programmed.names.index("y")),)
    assert [(f.label, [s.label for s in f.program.steps]) for f in kernel.frames] == [("if/then/", ["t_neg", "t_neg2"])]
    assert (flow.choices, control_flow_approximations(flow), flow.bodies_planned) == ([], [], 1)


def test_an_if_of_unknown_condition_assumes_the_larger_branch(tmp_path: Path) -> None:
    # then: y upfront 1,600 + a 1,600 = 3,200 over what the graph holds; else: y upfront, Abs
    # writes into it: 1,600. The then branch is assumed, and said so.
    _, flow = _planned(_if(tmp_path))
    (choice,) = flow.choices
    assert (choice.node, choice.assumed, dict(choice.peaks)) == ("if", "then", {"then": 3_200, "else": 1_600})
    (note,) = control_flow_approximations(flow)
    assert (note.kind, note.node) == ("branch_assumed", "if")
    assert note.detail.endswith("assumed the then branch, the larger (then 3,200 B, else 1,600 B over what the graph holds before it)")
    assert flow.bodies_planned == 2  # both branches planned to compare them


def test_a_loop_holds_its_scalars_and_keeps_carried_and_scanned_outputs(tmp_path: Path) -> None:
    # Loop(M=3): the iteration number (8 B) and the condition (1 B) first; the body hands the
    # condition back (Identity of its feed), so it is never released early. Each of the 3 frames
    # keeps h_out (carried: released two iterations later) and y (scanned: held to the end).
    body = helper.make_graph(
        [helper.make_node("Add", ["h_in", "one"], ["a"], name="b_add"), helper.make_node("Mul", ["a", "two"], ["h_out"], name="b_mul"),
         helper.make_node("Mul", ["h_in", "W"], ["y"], name="b_scan"), helper.make_node("Identity", ["cond_in"], ["cond_out"], name="b_cond")],
        "body", [tensor("i", [], I64), tensor("cond_in", [], BOOL), tensor("h_in", X)],
        [tensor("cond_out", [], BOOL), tensor("h_out", X), tensor("y", X)],
        [init("one", np.ones(1, np.float32)), init("two", np.full(1, 2.0, np.float32))],
    )
    nodes = [helper.make_node("Relu", ["x"], ["x0"], name="pre"),
             helper.make_node("Loop", ["M", "c", "x0"], ["hf", "ys"], name="loop", body=body),
             helper.make_node("Relu", ["hf"], ["out"], name="post")]
    m = model(nodes, [tensor("x", X), tensor("M", [], I64), tensor("c", [], BOOL)], [tensor("out", X), tensor("ys", [None, 4, 100])],
              [init("W", np.full(1, 3.0, np.float32))])
    _, flow = _planned(save(m, tmp_path / "loop.onnx"), M=(3,), c=(1,))
    ((step, kernel),) = flow.kernels.items()
    assert (step, kernel.before, dict(kernel.released_before), kernel.held) == (1, (Temp(8), Temp(1)), {}, 9)
    assert len(kernel.frames) == 3 and {f.label for f in kernel.frames} == {"loop/body/"}
    for frame in kernel.frames:
        assert sorted(frame.program.values[v].size for v in frame.kept) == [1_600, 1_600]
        assert sorted(frame.dropped_at.values(), key=str) == [2, None]


def test_initializers_every_reader_prepacks_are_released() -> None:
    # MatMul packs its constant B at session creation: W is released unless another node reads it
    alone = model([helper.make_node("MatMul", ["x", "W"], ["y"])], [tensor("x", [2, 4])], [tensor("y", [2, 4])],
                  [init("W", np.ones((4, 4), np.float32))])
    shared = model([helper.make_node("MatMul", ["x", "W"], ["a"]), helper.make_node("Add", ["a", "W"], ["y"])],
                   [tensor("x", [4, 4])], [tensor("y", [4, 4])], [init("W", np.ones((4, 4), np.float32))])
    assert released_initializers(model_from_proto(alone)) == frozenset({"W"})
    assert released_initializers(model_from_proto(shared)) == frozenset()
