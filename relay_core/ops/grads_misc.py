"""Gradients of the dyn_params, signal, ml and tensor_misc ops (rules and decompositions, named
by the ops' declarations).

- dyn.* twins decompose into their static op once the parameter inputs are constants;
- piecewise-constant ops (lookups, trees, the mel matrix) pass no gradient;
- tensor_scatter moves data: the generic data-movement rule;
- dft and col2im are linear in their data: the adjoint of the linear map, computed from the
  op's reference on basis vectors (static shapes, constant parameters);
- det decomposes into products of entries for matrices up to 4 x 4;
- nn.deformable_conv2d decomposes into bilinear gathers and a matmul.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..errors import RelayError
from ..ir import dtype as dt
from ..ir.expr import Constant, call, const
from ..ir.types import TensorType
from .grads_tensor import gather_rule
from .registry import all_ops

_c = call


def _static(t) -> bool:
    return isinstance(t, TensorType) and t.is_static


# -- dyn twins: their static op -------------------------------------------------------------
def _via_static(call_, types):
    return call_.op.opdef.to_static(call_)


def _dyn_resize(call_, types):
    """The static resize when the parameters are constants, or statically empty (absent)."""
    from .dyn_image import static_resize_call

    if not _static(types[0]):
        return None
    vals = []
    for arg, t in zip(call_.args[1:], types[1:]):
        if isinstance(arg, Constant):
            vals.append(arg.data)
        elif isinstance(t, TensorType) and t.shape == (0,):
            vals.append(np.zeros(0, np.float32))
        else:
            return None
    return static_resize_call(call_, types[0].shape, *vals)


# -- no gradient through lookups ---------------------------------------------------------------


_g_tensor_scatter = gather_rule("tensor_scatter", data=(0, 1))


# -- linear ops: the adjoint of their matrix ---------------------------------------------------
_MAX_MATRIX = 1 << 22  # entries of the basis matrix a rule may build


def _linear_rule(name: str):
    def rule(c, g, ctx):
        xt = ctx.arg_types[0]
        if not _static(xt):
            raise RelayError(f"no gradient for {name} with a dynamic input shape")
        if not all(isinstance(a, Constant) for a in c.args[1:]):
            raise RelayError(f"no gradient for {name} with run-time parameters")
        op = all_ops()[name]
        params = [a.data for a in c.args[1:]]
        np_dtype = dt.to_numpy(xt.dtype)
        n_in = int(np.prod(xt.shape))
        n_out = op.ref([np.zeros(xt.shape, np_dtype), *params], c.attrs).size
        if n_in * n_out > _MAX_MATRIX:
            raise RelayError(f"no gradient for {name} this large ({n_in} x {n_out})")
        basis = np.eye(n_in, dtype=np.float64).reshape((n_in, *xt.shape))
        rows = [op.ref([b.astype(np_dtype), *params], c.attrs).reshape(-1) for b in basis]
        m = np.stack(rows).astype(dt.to_numpy(ctx.dtype(0)))  # (n_in, n_out): y = x @ m
        gflat = _c("reshape", g, newshape=(n_out, 1))
        gx = _c("nn.matmul", Constant(m), gflat)
        return [_c("reshape", gx, newshape=xt.shape)] + [None] * (len(c.args) - 1)

    return rule


_g_dft = _linear_rule("dft")
_g_col2im = _linear_rule("col2im")


# -- stft: frames, a window, a dft ---------------------------------------------------------------
def _stft(call_, types):
    x_t = types[0]
    if not _static(x_t) or not isinstance(call_.args[1], Constant):
        return None
    step = int(np.asarray(call_.args[1].data).reshape(-1)[0])
    window = call_.args[2] if len(call_.args) > 2 else None
    w_t = types[2] if window is not None else None
    if window is not None and not _static(w_t):
        return None
    if len(call_.args) > 3:
        if not isinstance(call_.args[3], Constant):
            return None
        length = int(np.asarray(call_.args[3].data).reshape(-1)[0])
    elif w_t is not None and w_t.shape[0] > 0:
        length = w_t.shape[0]
    else:
        length = x_t.shape[1]
    if window is not None and w_t.shape[0] == 0:
        window = None
    frames = 1 + (x_t.shape[1] - length) // step
    if step <= 0 or frames <= 0:
        return None
    x = call_.args[0]
    pieces = []
    for f in range(frames):
        p = _c(
            "strided_slice", x, begin=(f * step,), end=(f * step + length,), strides=(1,), axes=(1,)
        )
        if window is not None:
            p = _c("multiply", p, _c("reshape", window, newshape=(length, 1)))
        pieces.append(p)
    framed = _c("stack", *pieces, axis=1)  # (B, frames, length, 1|2)
    return _c("dft", framed, axis=2, onesided=call_.attrs.onesided)


# -- det: a sum of products, up to 4 x 4 -----------------------------------------------------
def _perm_sign(p) -> int:
    s, p = 1, list(p)
    for i in range(len(p)):
        while p[i] != i:
            j = p[i]
            p[i], p[j] = p[j], p[i]
            s = -s
    return s


def _det(call_, types):
    t = types[0]
    if not isinstance(t, TensorType) or not isinstance(t.shape[-1], int) or t.shape[-1] > 4:
        return None
    n = t.shape[-1]
    x = call_.args[0]

    def entry(i, j):
        row = _c("take", x, const(i, "int64"), axis=t.ndim - 2)
        return _c("take", row, const(j, "int64"), axis=t.ndim - 2)

    total = None
    for p in itertools.permutations(range(n)):
        term = None
        for i, j in enumerate(p):
            e = entry(i, j)
            term = e if term is None else _c("multiply", term, e)
        if _perm_sign(p) < 0:
            term = _c("negative", term)
        total = term if total is None else _c("add", total, term)
    return total


# -- deformable convolution: bilinear gathers and a matmul --------------------------------------
def _deform(call_, types):
    x_t, off_t, w_t = types[:3]
    if not all(_static(t) for t in types):
        return None
    a = call_.attrs
    x, off, w = call_.args[:3]
    mask = call_.args[3] if len(call_.args) > 3 else None
    n, c, h, wd = x_t.shape
    oc, icg, kh, kw = w_t.shape
    _, _, oh, ow = off_t.shape
    og, g = a.deformable_groups, a.groups
    d = x_t.dtype
    k = kh * kw
    # Sampling positions (N, og, kh, kw, oh, ow) for rows and columns.
    off = _c("reshape", off, newshape=(n, og, kh, kw, 2, oh, ow))
    base_h = (np.arange(oh) * a.strides[0] - a.padding[0])[None, None, None, None, :, None] + (
        np.arange(kh) * a.dilation[0]
    )[None, None, :, None, None, None]
    base_w = (np.arange(ow) * a.strides[1] - a.padding[1])[None, None, None, None, None, :] + (
        np.arange(kw) * a.dilation[1]
    )[None, None, None, :, None, None]
    ph = _c(
        "add", Constant(base_h.astype(dt.to_numpy(d))), _c("take", off, const(0, "int64"), axis=4)
    )
    pw = _c(
        "add", Constant(base_w.astype(dt.to_numpy(d))), _c("take", off, const(1, "int64"), axis=4)
    )
    h0, w0 = _c("floor", ph), _c("floor", pw)
    lh, lw = _c("subtract", ph, h0), _c("subtract", pw, w0)
    one = const(1.0, d)
    xflat = _c("reshape", x, newshape=(n, c, h * wd))
    per = c // og
    total = None
    for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
        hh = _c("add", h0, const(float(dy), d))
        ww = _c("add", w0, const(float(dx), d))
        wt = _c(
            "multiply", lh if dy else _c("subtract", one, lh), lw if dx else _c("subtract", one, lw)
        )
        ok = _c(
            "logical_and",
            _c(
                "logical_and",
                _c("greater_equal", hh, const(0.0, d)),
                _c("less", hh, const(float(h), d)),
            ),
            _c(
                "logical_and",
                _c("greater_equal", ww, const(0.0, d)),
                _c("less", ww, const(float(wd), d)),
            ),
        )
        wt = _c("where", ok, wt, _c("zeros_like", wt))
        hi = _c("cast", _c("clip", hh, a_min=0.0, a_max=float(h - 1)), dtype="int64")
        wi = _c("cast", _c("clip", ww, a_min=0.0, a_max=float(wd - 1)), dtype="int64")
        idx = _c("add", _c("multiply", hi, const(wd, "int64")), wi)  # (N, og, kh, kw, oh, ow)
        # One index / weight per channel: repeat each offset group over its channels.
        idx_c = _c("reshape", _c("repeat", idx, repeats=per, axis=1), newshape=(n, c, -1))
        vals = _c("gather", xflat, idx_c, axis=2)  # (N, C, kh*kw*oh*ow)
        wt_c = _c("reshape", _c("repeat", wt, repeats=per, axis=1), newshape=(n, c, -1))
        term = _c("multiply", vals, wt_c)
        total = term if total is None else _c("add", total, term)
    if mask is not None:
        m = _c("reshape", mask, newshape=(n, og, kh, kw, oh, ow))
        total = _c(
            "multiply",
            total,
            _c("reshape", _c("repeat", m, repeats=per, axis=1), newshape=(n, c, -1)),
        )
    cols = _c("reshape", total, newshape=(n, g, icg * k, oh * ow))
    wg = _c("reshape", w, newshape=(1, g, oc // g, icg * k))
    out = _c("nn.matmul", wg, cols)  # (N, g, oc/g, oh*ow)
    return _c("reshape", out, newshape=(n, oc, oh, ow))
