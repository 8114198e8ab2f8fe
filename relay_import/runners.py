"""Source-framework runners for `verify` and `bench`: run the original model, and expose its
intermediate tensors by name (the names converters record in `mod.attrs["source_nodes"]`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from relay_core.errors import InputError, RelayError


class SourceRunner:
    framework = ""
    label = ""  # the runtime's name in reports: "onnxruntime", "torch", "tensorflow"
    origin = ""  # where its values come from, when not from running it now

    def run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError

    def output_names(self) -> list[str]:
        return []

    def intermediates(self, feed: dict[str, np.ndarray], names: list[str]) -> dict:
        return {}

    def constants(self, names: list[str]) -> dict[str, dict]:
        """Statistics (compare.stats, with kind="constant") of the weights among `names`."""
        return {}


class StoredRunner(SourceRunner):
    """Reference results saved earlier (verify --save-results), standing in for the source."""

    def __init__(self, results, path: str):
        self.results = results
        self.framework = results.framework
        self.label = results.reference or "the reference"
        self.origin = f"stored in {Path(path).name}"

    def run(self, feed):
        stored = self.results.inputs
        same = set(feed) == set(stored) and all(
            np.asarray(feed[k]).shape == stored[k].shape and np.array_equal(feed[k], stored[k])
            for k in stored
        )
        if not same:
            raise InputError(
                "the stored results belong to the inputs stored with them; verify with those "
                "(do not pass other inputs together with stored results)"
            )
        return [v for _, v in self.results.outputs]

    def output_names(self):
        return [n for n, _ in self.results.outputs]

    def intermediates(self, feed, names):
        return {n: self.results.layers[n] for n in names if n in self.results.layers}


class OnnxRunner(SourceRunner):
    """onnxruntime on CPU with a fixed thread count."""

    framework = "onnx"
    label = "onnxruntime"

    def __init__(self, source, threads: int = 2):
        self.source = source
        self.threads = threads
        self.spin = True  # onnxruntime's default; bench turns it off unless asked
        self._sess = None
        self._model = None

    def model(self):
        if self._model is None:
            import onnx

            if isinstance(self.source, (str, Path)):
                self._model = onnx.load(str(self.source), load_external_data=False)
                self._base = str(Path(self.source).resolve().parent)
            else:
                self._model = self.source
                self._base = None
        return self._model

    def _session(self, model, optimize: bool = True):
        import onnxruntime as ort

        ort.set_default_logger_severity(4)  # kernel errors are logged there too
        so = ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        if not self.spin:
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if not optimize:
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        if isinstance(self.source, (str, Path)) and model is self._model:
            return ort.InferenceSession(str(self.source), so, providers=["CPUExecutionProvider"])
        return ort.InferenceSession(
            model.SerializeToString(), so, providers=["CPUExecutionProvider"]
        )

    def _feed(self, feed):
        m = self.model()
        inits = {i.name for i in m.graph.initializer}
        names = [i.name for i in m.graph.input if i.name not in inits]
        missing = [n for n in names if n not in feed]
        if missing:
            raise InputError(f"onnxruntime needs inputs {missing}")
        return {n: feed[n] for n in names}

    def run(self, feed):
        if self._sess is None:
            self._sess = self._session(self.model())
        import onnxruntime as ort

        ro = ort.RunOptions()
        ro.log_severity_level = 4  # its errors reach the user as ours, without log lines
        return [np.asarray(o) for o in self._sess.run(None, self._feed(feed), ro)]

    def output_names(self):
        return [o.name for o in self.model().graph.output]

    def intermediates(self, feed, names):
        import onnx

        m = onnx.ModelProto()
        m.CopyFrom(self.model())
        if self._base is not None and any(
            t.data_location == onnx.TensorProto.EXTERNAL for t in m.graph.initializer
        ):
            onnx.external_data_helper.load_external_data_for_model(m, self._base)
        try:
            inferred = onnx.shape_inference.infer_shapes(m)
            known = {v.name: v for v in inferred.graph.value_info}
        except Exception:
            known = {}
        have = {o.name for o in m.graph.output}
        produced = {o for n in m.graph.node for o in n.output}
        for n in names:
            if n in have or n not in produced:
                continue
            vi = known.get(n)
            if vi is None:
                vi = onnx.ValueInfoProto()
                vi.name = n
            m.graph.output.append(vi)
            have.add(n)
        sess = self._session(m, optimize=False)
        outs = sess.run(None, self._feed(feed))
        return {o.name: np.asarray(v) for o, v in zip(sess.get_outputs(), outs)}

    def constants(self, names):
        from onnx import TensorProto, numpy_helper

        from .compare import stats

        want = set(names)
        out = {}
        for t in self.model().graph.initializer:
            if t.name not in want:
                continue
            if t.data_location == TensorProto.EXTERNAL:  # not loaded: its type only
                dtype = str(numpy_helper.helper.tensor_dtype_to_np_dtype(t.data_type))
                s = {"shape": tuple(t.dims), "dtype": dtype}
            else:
                s = stats(numpy_helper.to_array(t))
            out[t.name] = dict(s, kind="constant")
        return out


def make_runner(source, framework: str, convert_kw: dict | None = None) -> SourceRunner:
    if framework == "onnx":
        return OnnxRunner(source)
    if framework == "pytorch":
        from .runners_torch import TorchRunner

        return TorchRunner(source, **(convert_kw or {}))
    if framework == "tensorflow":
        from .runners_tf import TfRunner

        return TfRunner(source, **(convert_kw or {}))
    raise InputError(f"no runner for framework {framework!r}")


class SourceRunError(RelayError, RuntimeError):
    """The source framework's own runtime refused the inputs or failed on them."""


def _source_run(fn, what: str):
    try:
        return fn()
    except RelayError:
        raise
    except Exception as e:  # the framework's own error types: one line of ours
        msg = (str(e).strip().splitlines() or [type(e).__name__])[-1].strip()
        raise SourceRunError(f"{what} failed on these inputs: {msg[:400]}") from e


def run_bounded(fn, timeout: float | None, what: str):
    """`fn()`, or a ResourceLimitError when it runs past `timeout` seconds; the framework's
    own errors become a SourceRunError. A framework's runtime cannot be interrupted, so it
    runs on a daemon thread left behind (a CLI process exits right after the error)."""
    if not timeout:
        return _source_run(fn, what)
    import threading

    from relay_core.errors import ResourceLimitError

    box: dict = {}

    def target():
        try:
            box["value"] = _source_run(fn, what)
        except BaseException as e:  # re-raised on the caller's thread
            box["error"] = e

    t = threading.Thread(target=target, name="relay-source-run", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise ResourceLimitError(
            f"{what} ran past the timeout of {timeout:g} s; raise --timeout if meant"
        )
    if "error" in box:
        raise box["error"]
    return box["value"]
