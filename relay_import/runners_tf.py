"""The TensorFlow side of verify / bench: the frozen graph run by TF itself, with any tensor of
it ("node:index") fetchable by name."""

from __future__ import annotations

import numpy as np

from .runners import SourceRunner


class TfRunner(SourceRunner):
    framework = "tensorflow"
    label = "tensorflow"

    def __init__(self, source, input_signature=None, signature="serving_default", threads=2, **_):
        self.source = source
        self.input_signature = input_signature
        self.signature = signature
        self.threads = threads
        self._frozen = None
        self._fns: dict[tuple, object] = {}

    def frozen(self):
        if self._frozen is None:
            from converters.tensorflow.loader import load

            self._frozen = load(self.source, self.input_signature, self.signature)
        return self._frozen

    def _fn(self, fetches: tuple):
        fn = self._fns.get(fetches)
        if fn is None:
            import tensorflow as tf

            try:  # only possible before TF's runtime has started
                tf.config.threading.set_intra_op_parallelism_threads(self.threads)
            except RuntimeError:
                pass
            fz = self.frozen()
            gd = fz.graph_def

            def imported():
                tf.compat.v1.import_graph_def(gd, name="")

            wrapped = tf.compat.v1.wrap_function(imported, [])
            g = wrapped.graph
            ins = [g.get_tensor_by_name(f"{i.node}:0") for i in fz.inputs]
            outs = [g.get_tensor_by_name(t) for t in fetches]
            fn = self._fns[fetches] = (wrapped.prune(ins, outs), fz.inputs)
        return fn

    def _args(self, feed, inputs):
        import tensorflow as tf

        by_name = {i.name: i for i in inputs}
        if all(k in by_name for k in feed):
            vals = [feed[i.name] for i in inputs if i.name in feed]
        else:
            vals = list(feed.values())
        return [tf.constant(np.asarray(v)) for v in vals]

    def run(self, feed):
        fz = self.frozen()
        fn, inputs = self._fn(tuple(fz.outputs))
        return [np.asarray(o) for o in fn(*self._args(feed, inputs))]

    def output_names(self):
        fz = self.frozen()
        return list(fz.output_names or fz.outputs)

    def intermediates(self, feed, names):
        import tensorflow as tf

        fz = self.frozen()
        gd = fz.graph_def
        known = {n.name for n in gd.node}
        wanted = tuple(n for n in names if n.rsplit(":", 1)[0] in known)
        fn, inputs = self._fn(wanted)
        vals = fn(*self._args(feed, inputs))
        out = {}
        for n, v in zip(wanted, vals):
            if isinstance(v, tf.Tensor) and v.dtype != tf.string and v.dtype != tf.variant:
                out[n] = np.asarray(v)
        return out
