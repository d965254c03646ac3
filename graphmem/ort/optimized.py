"""The graph onnxruntime would run at an optimization level, obtained from onnxruntime itself.

``SessionOptions.optimized_model_filepath`` makes onnxruntime write the graph it built after its
optimizers ran. graphmem analyses that file for ``--graph-opt basic|extended|all``; at ``none``
the file's own graph is what runs. onnxruntime writes the nodes in its session's execution order
(``Graph::ToGraphProto`` walks ``GraphViewer::GetNodesInTopologicalOrder``), renumbered, so the
file is analysed in file order (``analyze(..., execution_order="file")``). Levels above ``basic``
introduce contrib ops (``com.microsoft``, ``com.microsoft.nchwc``): their shapes come from
``graphmem.ort.contrib_shapes``, their buffer sharing from ``graphmem.ort.rules``. Level ``all``
lays CNNs out in NCHWc blocks of this machine's MLAS block size (8 on AVX2, 16 on AVX-512), so
its file, and its memory, are specific to the machine that made it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from graphmem.errors import UnsupportedOpError
from graphmem.optable import is_default_domain
from graphmem.tempdirs import private_dir

__all__ = ["optimized_model"]


def optimized_model(path: Path, graph_opt: str, workdir: Path, *, always: bool = False) -> Path:
    """Write onnxruntime's optimized graph of ``path`` at ``graph_opt`` into ``workdir``.

    At ``none`` the file itself is what runs, unless ``always``: then onnxruntime still writes the
    graph it built (function ops inlined, duplicate Casts removed).
    """
    if graph_opt == "none" and not always:
        return path
    from graphmem.ort.options import session_options
    from graphmem.ort.runtime import create_session

    out = workdir / f"optimized_{graph_opt}.onnx"
    options = session_options(graph_opt, 1, False, str(out))
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name", "weights.bin")
    # every tensor whose value graphmem keeps (KEEP_VALUE_MAX_ELEMENTS of up to 4 bytes) stays in
    # the file: the kernels' rules read them (QLinearConv's per-channel weight zero points)
    options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "16385")
    options.log_severity_level = 3
    try:
        create_session(str(path), options, ["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
        raise UnsupportedOpError(f"onnxruntime could not optimize the model: {str(exc).splitlines()[0]}") from None
    _drop_written_twice(out)
    return out


def _drop_written_twice(path: Path) -> None:
    """Remove the Constant nodes onnxruntime writes beside the initializer they became.

    onnxruntime's Graph turns every Constant node into an initializer (``core/graph/graph.cc``,
    the Graph constructor, subgraphs included); writing a Loop body that holds an If, it keeps a
    Constant of the inner branch both ways (measured on onnx's test_loop16_seq_none at
    ``all``), a file neither onnx's checker nor onnxruntime itself loads ("SSA form"). The
    initializer is what the session ran, so the node goes.
    """
    import onnx

    proto = onnx.load(str(path), load_external_data=False)
    if not any(
        a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for n in proto.graph.node for a in n.attribute
    ):
        return
    if _drop_in(proto.graph):
        onnx.save(proto, str(path))


def _drop_in(graph) -> bool:
    """Drop them from ``graph`` and its bodies; whether any was dropped."""
    inits = {t.name for t in graph.initializer}
    kept = [n for n in graph.node
            if not (n.op_type == "Constant" and is_default_domain(n.domain) and n.output and n.output[0] in inits)]
    changed = len(kept) != len(graph.node)
    if changed:
        del graph.node[:]
        graph.node.extend(kept)
    for node in graph.node:
        for attr in node.attribute:
            for body in (*([attr.g] if attr.HasField("g") else []), *attr.graphs):
                changed = _drop_in(body) or changed
    return changed


def temporary_dir() -> contextlib.AbstractContextManager[Path]:
    """A private work directory, never next to the user's model (:func:`graphmem.tempdirs.private_dir`)."""
    return private_dir("graphmem-opt-")
