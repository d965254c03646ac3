"""The subgraphs nested in an ONNX graph: the one walk over If/Loop/Scan bodies (and any other
graph-valued attribute) that checks of a whole model use."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import onnx

__all__ = ["all_nodes", "node_bodies"]


def node_bodies(node: onnx.NodeProto) -> Iterator[onnx.GraphProto]:
    """The subgraphs of ``node``'s graph and graphs attributes."""
    for attr in node.attribute:
        yield from (attr.g,) if attr.type == onnx.AttributeProto.GRAPH else attr.graphs


def all_nodes(nodes: Iterable[onnx.NodeProto]) -> Iterator[onnx.NodeProto]:
    """``nodes`` and, depth first after each, the nodes of its subgraphs (onnxruntime makes
    kernels for bodies too)."""
    for node in nodes:
        yield node
        if node.attribute:  # most nodes have none: no generator to make
            for body in node_bodies(node):
                yield from all_nodes(body.node)
