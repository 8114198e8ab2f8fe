"""What a TensorFlow graph may not contain: ops that read or write files, run Python, or talk to
the outside world. Conversion refuses them up front (even with a custom converter), before any of
the graph runs; the only exception is the save / restore machinery a SavedModel's own loader uses.
"""

from __future__ import annotations

import os

from relay_core.errors import ModelLoadError

# Exact op types that are refused.
DENIED = frozenset(
    {
        "PyFunc",
        "PyFuncStateless",
        "EagerPyFunc",
        "ReadFile",
        "WriteFile",
        "MatchingFiles",
        "ImmutableConst",
        "Save",
        "SaveV2",
        "SaveSlices",
        "Restore",
        "RestoreV2",
        "RestoreSlice",
        "MergeV2Checkpoints",
        "ShardedFilename",
        "ShardedFilespec",
        "Print",
        "PrintV2",
        "DeleteSessionTensor",
        "GetSessionHandle",
        "GetSessionHandleV2",
        "GetSessionTensor",
        "LoadAndRemapMatrix",
        "InitializeTableFromTextFile",
        "InitializeTableFromTextFileV2",
        "DecodeProtoV2",
        "EncodeProto",
        "RecvTPUEmbeddingActivations",
        "_Send",
        "_Recv",
        "_HostSend",
        "_HostRecv",
        "Send",
        "Recv",
        "CollectiveReduce",
        "CollectiveGather",
        "CollectiveBcastSend",
        "CollectiveBcastRecv",
        "DebugIdentity",
        "DebugIdentityV2",
        "DebugIdentityV3",
        "DebugNanCount",
        "DebugNumericSummary",
        "DebugNumericSummaryV2",
        "ExperimentalDatasetToTFRecord",
        "DatasetToTFRecord",
        "SnapshotDataset",
        "SaveDataset",
        "SaveDatasetV2",
        "LoadDataset",
        "CreateSummaryFileWriter",
        "CreateSummaryDbWriter",
        "WriteAudioSummary",
        "WriteGraphSummary",
        "WriteHistogramSummary",
        "WriteImageSummary",
        "WriteRawProtoSummary",
        "WriteScalarSummary",
        "WriteSummary",
        "FlushSummaryWriter",
        "CloseSummaryWriter",
        "ImportEvent",
    }
)
# Substrings of op types that are refused (file readers, datasets, summaries, Python).
DENIED_PARTS = ("Reader", "Dataset", "Iterator", "Summary", "PyFunc", "File", "Checkpoint")
# Ops a SavedModel's own save / restore functions use; allowed there and nowhere else.
LOADER_OPS = frozenset(
    {
        "SaveV2",
        "RestoreV2",
        "MergeV2Checkpoints",
        "ShardedFilename",
        "StringJoin",
        "StaticRegexFullMatch",
        "Select",
        "Identity",
        "NoOp",
        "Const",
        "Placeholder",
        "Pack",
        "AssignVariableOp",
        "ReadVariableOp",
        "VarHandleOp",
        "StatefulPartitionedCall",
        "PartitionedCall",
        "DisableCopyOnRead",
    }
)


def is_denied(op: str) -> bool:
    """True for op types that conversion refuses whatever the converter table says."""
    return op in DENIED or any(p in op for p in DENIED_PARTS)


def refuse(ops, where: str = "the graph") -> None:
    """Raise one ModelLoadError naming every denied op in `ops` (an iterable of op types)."""
    bad = sorted({o for o in ops if is_denied(o)})
    if bad:
        raise ModelLoadError(
            f"{where} uses operations that read or write files, run Python code or otherwise "
            f"reach outside the model: {', '.join(bad)}. Such graphs are refused."
        )


def prescan_saved_model(path: str) -> None:
    """Refuse a SavedModel whose graph holds denied ops outside its save / restore functions,
    before TensorFlow loads (and runs any part of) it."""
    from tensorflow.core.protobuf import saved_model_pb2

    sm = saved_model_pb2.SavedModel()
    try:
        with open(os.path.join(path, "saved_model.pb"), "rb") as f:
            sm.ParseFromString(f.read())
    except Exception as e:
        raise ModelLoadError(f"{path}/saved_model.pb is not a valid SavedModel: {e}") from None
    if not sm.meta_graphs:
        raise ModelLoadError(f"{path}/saved_model.pb holds no graph")
    for mg in sm.meta_graphs:
        _check_meta_graph(mg, path)


def _check_meta_graph(mg, path: str) -> None:
    gd = mg.graph_def
    funcs = {f.signature.name: f for f in gd.library.function}
    nodes = {n.name: n for n in gd.node}
    sd = mg.saver_def
    saver_roots = [
        t.split(":")[0].lstrip("^")
        for t in (sd.save_tensor_name, sd.restore_op_name, sd.filename_tensor_name)
        if t
    ]
    saver_nodes, saver_funcs = _reachable(saver_roots, nodes, funcs)
    model_roots = [n for n in nodes if n not in saver_nodes]
    model_nodes, model_funcs = _reachable(model_roots, nodes, funcs)
    # Functions no node calls (the object graph's concrete functions) belong to the model.
    model_funcs |= set(funcs) - saver_funcs - model_funcs
    model_funcs, _ = _close_functions(model_funcs, funcs)
    ops = {nodes[n].op for n in model_nodes}
    for fname in model_funcs:
        ops |= {n.op for n in funcs[fname].node_def}
    refuse(ops, f"SavedModel {path}")
    loader_ops = {nodes[n].op for n in saver_nodes}
    for fname in saver_funcs - model_funcs:
        loader_ops |= {n.op for n in funcs[fname].node_def}
    refuse(loader_ops - LOADER_OPS, f"SavedModel {path} (its save / restore functions)")


def _func_refs(node) -> list[str]:
    out = []
    for v in node.attr.values():
        if v.HasField("func"):
            out.append(v.func.name)
        elif v.HasField("list"):
            out.extend(f.name for f in v.list.func)
    return out


def _reachable(roots, nodes, funcs):
    """Graph nodes reachable backwards from `roots`, and the functions they (transitively) call."""
    seen: set[str] = set()
    called: set[str] = set()
    stack = [r for r in roots if r in nodes]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        node = nodes[name]
        called.update(f for f in _func_refs(node) if f in funcs)
        for i in node.input:
            src = i.lstrip("^").split(":")[0]
            if src in nodes and src not in seen:
                stack.append(src)
    called, _ = _close_functions(called, funcs)
    return seen, called


def _close_functions(names, funcs):
    out = set()
    stack = list(names)
    while stack:
        f = stack.pop()
        if f in out or f not in funcs:
            continue
        out.add(f)
        for n in funcs[f].node_def:
            stack.extend(_func_refs(n))
    return out, None
