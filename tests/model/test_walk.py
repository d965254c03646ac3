"""The one walk over nested bodies: every node of every depth, each body right after its node."""

from onnx import TensorProto, helper

from graphmem.model.walk import all_nodes, node_bodies


def _body(name: str, *nodes):
    out = helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, [1])
    return helper.make_graph(list(nodes), name, [], [out])


def test_all_nodes_walks_if_branches_and_nested_bodies_depth_first():
    inner = helper.make_node("Identity", ["x"], ["y"], name="inner")
    loop_body = _body("loop_body", inner)
    loop = helper.make_node("Loop", ["", ""], ["l"], name="loop", body=loop_body)
    then_g = _body("then", loop)
    else_g = _body("else", helper.make_node("Identity", ["x"], ["e"], name="else_id"))
    iff = helper.make_node("If", ["c"], ["o"], name="if", then_branch=then_g, else_branch=else_g)
    last = helper.make_node("Identity", ["o"], ["z"], name="last")
    # attribute order (make_node sorts its keyword attributes: else_branch, then_branch)
    assert [g.name for g in node_bodies(iff)] == ["else", "then"]
    assert [n.name for n in all_nodes([iff, last])] == ["if", "else_id", "loop", "inner", "last"]
    assert list(node_bodies(last)) == []


def test_node_bodies_reads_graphs_valued_attributes():
    a, b = _body("a", helper.make_node("Relu", ["x"], ["r"], name="ra")), _body(
        "b", helper.make_node("Relu", ["x"], ["s"], name="rb"))
    node = helper.make_node("Custom", [], ["o"], name="custom", domain="x.y")
    node.attribute.append(helper.make_attribute("bodies", [a, b]))
    assert [g.name for g in node_bodies(node)] == ["a", "b"]
    assert [n.name for n in all_nodes([node])] == ["custom", "ra", "rb"]
