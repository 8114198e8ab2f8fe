"""The PyTorch side of verify / bench: the exported program run by torch itself, with every FX
node's value available by name (torch.fx.Interpreter)."""

from __future__ import annotations

import numpy as np

from .runners import SourceRunner


class TorchRunner(SourceRunner):
    framework = "pytorch"
    label = "torch"

    def __init__(self, source, example_inputs=None, dynamic_shapes=None, threads: int = 2, **_):
        self.source = source
        self.example_inputs = example_inputs
        self.dynamic_shapes = dynamic_shapes
        self.threads = threads
        self._ep = None
        self._gm = None

    def program(self):
        if self._ep is None:
            from converters.pytorch.frontend import _exported_program

            self._ep, _ = _exported_program(self.source, self.example_inputs, self.dynamic_shapes)
            self._gm = self._ep.module()
        return self._ep

    def _args(self, feed):
        import torch

        return [torch.from_numpy(np.ascontiguousarray(v)) for v in feed.values()]

    def run(self, feed):
        import torch

        from converters.pytorch.outputs import flatten_outputs

        self.program()
        torch.set_num_threads(self.threads)
        with torch.no_grad():
            out = self._gm(*self._args(feed))
        return [np.asarray(t.detach().numpy()) for t in flatten_outputs(out)]

    def output_names(self):
        from converters.pytorch.frontend import output_names

        return output_names(self.program())

    def constants(self, names):
        from .compare import stats

        ep = self.program()
        sig = ep.graph_signature
        where = {**sig.inputs_to_parameters, **sig.inputs_to_buffers}
        lifted = getattr(sig, "inputs_to_lifted_tensor_constants", {}) or {}
        out = {}
        for n in names:
            t = ep.state_dict.get(where[n]) if n in where else None
            if t is None and n in lifted:
                t = ep.constants.get(lifted[n])
            if t is not None:
                out[n] = dict(stats(t.detach().numpy()), kind="constant")
        return out

    def intermediates(self, feed, names):
        import torch

        self.program()
        want = set(names)
        values: dict[str, np.ndarray] = {}

        class Capture(torch.fx.Interpreter):
            def run_node(self, n):
                out = super().run_node(n)
                if n.name in want and isinstance(out, torch.Tensor):
                    values[n.name] = out.detach().numpy().copy()
                return out

        with torch.no_grad():
            Capture(self._gm).run(*self._args(feed))
        return values
