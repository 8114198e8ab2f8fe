"""Loading .pt2 archives safely: good archives convert; pickles, opaque objects, code-bearing
expressions and targets, and malformed files are refused before anything can run."""

from __future__ import annotations

import io
import json
import pickle
import zipfile

import numpy as np
import pytest

from tests.require import require

torch = require("torch")

import relay_core  # noqa: E402
from converters.pytorch import from_pytorch  # noqa: E402
from relay_core.errors import ModelLoadError  # noqa: E402

from .harness import assert_close  # noqa: E402


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.linspace(-1, 1, 12).reshape(3, 4))
        self.register_buffer("b", torch.arange(4.0))

    def forward(self, x):
        return torch.tanh(x * self.w + self.b) - 1.0


def _save(tmp_path, module=None, args=None, dynamic_shapes=None, name="m.pt2"):
    module = module or Small()
    args = args or (torch.randn(3, 4),)
    ep = torch.export.export(module.eval(), args, dynamic_shapes=dynamic_shapes)
    path = tmp_path / name
    torch.export.save(ep, str(path))
    return path, module, args


def _rewrite(path, edit):
    """Rewrite a zip: `edit(files: dict[name, bytes])` mutates the members in place."""
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist()}
    edit(files)
    with zipfile.ZipFile(path, "w") as z:
        for n, data in files.items():
            z.writestr(n, data)


def _member(files, suffix):
    return next(n for n in files if n.endswith(suffix))


class _Sentinel:
    """Unpickling this creates a file: proof that a pickle ran."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_pt2_roundtrip(tmp_path):
    path, module, (x,) = _save(tmp_path)
    mod = from_pytorch(str(path))
    got = relay_core.evaluate(mod, x.numpy())
    assert_close(got, module(x), 1e-6, 1e-6)


def test_pt2_with_dynamic_batch(tmp_path):
    batch = torch.export.Dim("batch", min=1, max=32)
    path, module, _ = _save(tmp_path, args=(torch.randn(2, 3, 4),), dynamic_shapes=({0: batch},))
    mod = from_pytorch(path)
    (param,) = mod["main"].params
    sv = param.type_annotation.shape[0]
    assert (sv.min, sv.max) == (1, 32)
    for n in (1, 5):
        x = torch.randn(n, 3, 4)
        assert_close(relay_core.evaluate(mod, x.numpy()), module(x), 1e-6, 1e-6)


def test_torch_save_module_refused(tmp_path):
    path = tmp_path / "model.pt"
    torch.save(Small(), str(path))
    with pytest.raises(ModelLoadError, match="torch.export"):
        from_pytorch(str(path))


def test_torch_save_state_dict_refused(tmp_path):
    path = tmp_path / "weights.pth"
    torch.save(Small().state_dict(), str(path))
    with pytest.raises(ModelLoadError, match="pickle"):
        from_pytorch(path)


def test_raw_pickle_named_pt2_never_runs(tmp_path):
    sentinel = tmp_path / "pwned"
    path = tmp_path / "evil.pt2"
    path.write_bytes(pickle.dumps(_Sentinel(sentinel)))
    with pytest.raises(ModelLoadError, match="pickle"):
        from_pytorch(path)
    assert not sentinel.exists()


def test_pickled_weight_refused(tmp_path):
    path, _, _ = _save(tmp_path)
    sentinel = tmp_path / "pwned"

    def edit(files):
        cfg_name = _member(files, "model_weights_config.json")
        cfg = json.loads(files[cfg_name])
        entry = next(iter(cfg["config"].values()))
        entry["use_pickle"] = True
        files[cfg_name] = json.dumps(cfg).encode()
        weight = cfg_name.rsplit("/", 1)[0] + "/" + entry["path_name"]
        files[weight] = pickle.dumps(_Sentinel(sentinel))

    _rewrite(path, edit)
    with pytest.raises(ModelLoadError, match="pickle"):
        from_pytorch(path)
    assert not sentinel.exists()


def test_opaque_constant_refused(tmp_path):
    class WithConst(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c = torch.ones(4)

        def forward(self, x):
            return x + self.c

    path, _, _ = _save(tmp_path, WithConst(), (torch.randn(4),))
    sentinel = tmp_path / "pwned"

    def edit(files):
        cfg_name = _member(files, "model_constants_config.json")
        cfg = json.loads(files[cfg_name])
        entry = next(iter(cfg["config"].values()))
        folder = cfg_name.rsplit("/", 1)[0]
        entry["path_name"] = "opaque_obj_0"
        files[cfg_name] = json.dumps(cfg).encode()
        files[folder + "/opaque_obj_0"] = pickle.dumps(_Sentinel(sentinel))

    _rewrite(path, edit)
    with pytest.raises(ModelLoadError, match="raw tensors"):
        from_pytorch(path)
    assert not sentinel.exists()


def _edit_program(path, fn):
    def edit(files):
        name = _member(files, "models/model.json")
        prog = json.loads(files[name])
        fn(prog)
        files[name] = json.dumps(prog).encode()

    _rewrite(path, edit)


def test_code_in_symbolic_expression_refused(tmp_path):
    batch = torch.export.Dim("batch", min=1, max=8)
    path, _, _ = _save(tmp_path, args=(torch.randn(2, 3, 4),), dynamic_shapes=({0: batch},))
    sentinel = tmp_path / "pwned"
    evil = f"__import__('builtins').open('{sentinel}', 'w')"

    def fn(prog):
        stack = [prog]
        while stack:
            o = stack.pop()
            if isinstance(o, dict):
                if "expr_str" in o:
                    o["expr_str"] = evil
                stack.extend(o.values())
            elif isinstance(o, list):
                stack.extend(o)

    _edit_program(path, fn)
    with pytest.raises(ModelLoadError, match="symbolic expression"):
        from_pytorch(path)
    assert not sentinel.exists()


def test_code_in_range_constraint_key_refused(tmp_path):
    batch = torch.export.Dim("batch", min=1, max=8)
    path, _, _ = _save(tmp_path, args=(torch.randn(2, 3, 4),), dynamic_shapes=({0: batch},))

    def fn(prog):
        rc = prog["range_constraints"]
        k = next(iter(rc))
        rc["exec('1')"] = rc.pop(k)

    _edit_program(path, fn)
    with pytest.raises(ModelLoadError, match="symbolic expression"):
        from_pytorch(path)


def test_unknown_call_target_refused(tmp_path):
    path, _, _ = _save(tmp_path)

    def fn(prog):
        prog["graph_module"]["graph"]["nodes"][0]["target"] = "torch.os.system"

    _edit_program(path, fn)
    with pytest.raises(ModelLoadError, match="torch.os.system"):
        from_pytorch(path)


def test_importing_treespec_refused(tmp_path):
    path, _, _ = _save(tmp_path)

    def fn(prog):
        sig = prog["graph_module"]["module_call_graph"][0]["signature"]
        sig["out_spec"] = sig["out_spec"].replace(
            '"context": null', '"context": "{\\"__enum__\\": 1, \\"fqn\\": \\"antigravity:x\\"}"'
        )

    _edit_program(path, fn)
    with pytest.raises(ModelLoadError, match="import"):
        from_pytorch(path)


def test_weight_larger_than_its_file_refused(tmp_path):
    path, _, _ = _save(tmp_path)

    def edit(files):
        cfg_name = _member(files, "model_weights_config.json")
        cfg = json.loads(files[cfg_name])
        entry = next(iter(cfg["config"].values()))
        entry["tensor_meta"]["sizes"] = [{"as_int": 1 << 20}, {"as_int": 1 << 10}]
        entry["tensor_meta"]["strides"] = [{"as_int": 1 << 10}, {"as_int": 1}]
        files[cfg_name] = json.dumps(cfg).encode()

    _rewrite(path, edit)
    with pytest.raises(ModelLoadError, match="bytes"):
        from_pytorch(path)


@pytest.mark.parametrize("content", [b"", b"\x00" * 10, bytes(range(256)) * 4])
def test_garbage_files_refused(tmp_path, content):
    path = tmp_path / "junk.pt2"
    path.write_bytes(content)
    with pytest.raises(ModelLoadError):
        from_pytorch(path)


def test_truncated_archive_refused(tmp_path):
    path, _, _ = _save(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelLoadError):
        from_pytorch(path)


def test_missing_file_is_clear(tmp_path):
    with pytest.raises(ModelLoadError, match="cannot read"):
        from_pytorch(tmp_path / "nope.pt2")


def test_torchscript_archive_refused(tmp_path):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scripted = torch.jit.trace(Small().eval(), (torch.randn(3, 4),))
    path = tmp_path / "scripted.pt"
    buf = io.BytesIO()
    torch.jit.save(scripted, buf)
    path.write_bytes(buf.getvalue())
    with pytest.raises(ModelLoadError, match="pickle|TorchScript"):
        from_pytorch(path)
    with pytest.raises(ModelLoadError, match="TorchScript"):
        from_pytorch(scripted)


def test_weights_decoded_exactly(tmp_path):
    """Weights come from the raw bytes with their strides (a transposed view is saved)."""

    class View(torch.nn.Module):
        def __init__(self):
            super().__init__()
            base = torch.arange(12.0).reshape(3, 4)
            self.register_buffer("t", base.t())  # non-contiguous

        def forward(self, x):
            return x + self.t

    path, module, (x,) = _save(tmp_path, View(), (torch.randn(4, 3),))
    mod = from_pytorch(path)
    np.testing.assert_array_equal(relay_core.evaluate(mod, x.numpy()), module(x).numpy())
