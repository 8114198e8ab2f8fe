"""torch.fft: discrete Fourier transforms as products with constant cosine / sine matrices,
and the few complex-tensor ops around them (view_as_real, abs, real / imag, products)."""

from __future__ import annotations

import math

import numpy as np

from relay_core.ir import dtype as dt

from .table import aten

_REAL = {"complex64": "float32", "complex128": "float64"}


def is_complex(ctx, x) -> bool:
    return ctx.is_tensor(x) and ctx.dtype(x) in _REAL


def split(ctx, z):
    """(real, imag) of a complex tensor, or (x, None) for a real one."""
    if is_complex(ctx, z):
        return ctx.call("complex.real", z), ctx.call("complex.imag", z)
    return ctx.expr(z), None


def _along(ctx, x, axis, mat):
    """x with `axis` transformed by the (n, k) matrix: sum_n x[..., n, ...] * mat[n, k]."""
    nd = ctx.ndim(x)
    axis = axis + nd if axis < 0 else axis
    perm = [i for i in range(nd) if i != axis] + [axis]
    moved = x if axis == nd - 1 else ctx.call("transpose", x, axes=tuple(perm))
    out = ctx.call("nn.matmul", moved, ctx.const(mat.astype(dt.to_numpy(ctx.dtype(x)))))
    if axis == nd - 1:
        return out
    inv = [0] * nd
    for i, p in enumerate(perm):
        inv[p] = i
    return ctx.call("transpose", out, axes=tuple(inv))


def _dft(n, k, inverse=False):
    """cos / sin matrices (n, k) of exp(-+2 pi i j m / n)."""
    jm = np.outer(np.arange(n), np.arange(k)) % n
    ang = 2.0 * math.pi * jm / n
    return np.cos(ang), np.sin(ang)


def _c2c(ctx, re, im, axis, inverse):
    n = ctx.dim_size(re, axis)
    if not isinstance(n, int):
        raise ctx.error("Fourier transforms need static sizes")
    c, s = _dft(n, n)
    sign = 1.0 if inverse else -1.0
    rc, rs = _along(ctx, re, axis, c), _along(ctx, re, axis, s)
    if im is None:
        return rc, ctx.call("multiply", rs, ctx.expr(sign, ctx.dtype(rs)))
    ic, is_ = _along(ctx, im, axis, c), _along(ctx, im, axis, s)
    # (re + i im)(cos + i sign sin)
    out_re = ctx.call("subtract", rc, ctx.call("multiply", is_, ctx.expr(sign, ctx.dtype(is_))))
    out_im = ctx.call("add", ic, ctx.call("multiply", rs, ctx.expr(sign, ctx.dtype(rs))))
    return out_re, out_im


def _scale(ctx, xs, normalization, sizes):
    if normalization == 0:
        return xs
    n = math.prod(sizes)
    f = 1.0 / math.sqrt(n) if normalization == 1 else 1.0 / n
    return [None if x is None else ctx.call("multiply", x, ctx.expr(f, ctx.dtype(x))) for x in xs]


def _norm_dims(ctx, x, dim):
    nd = ctx.ndim(x)
    return [d + nd if d < 0 else d for d in dim]


@aten("_fft_r2c.default")
def fft_r2c(ctx, self, dim, normalization, onesided):
    x = ctx.expr(self)
    dims = _norm_dims(ctx, x, dim)
    sizes = [ctx.dim_size(x, d) for d in dims]
    last = dims[-1]
    n = sizes[-1]
    if not all(isinstance(s, int) for s in sizes):
        raise ctx.error("Fourier transforms need static sizes")
    k = n // 2 + 1 if onesided else n
    c, s = _dft(n, k)
    re = _along(ctx, x, last, c)
    im = ctx.call("negative", _along(ctx, x, last, s))
    for d in dims[:-1]:
        re, im = _c2c(ctx, re, im, d, inverse=False)
    re, im = _scale(ctx, [re, im], normalization, sizes)
    return ctx.call("complex.make", re, im)


@aten("_fft_c2c.default")
def fft_c2c(ctx, self, dim, normalization, forward):
    re, im = split(ctx, self)
    dims = _norm_dims(ctx, re, dim)
    sizes = [ctx.dim_size(re, d) for d in dims]
    for d in dims:
        re, im = _c2c(ctx, re, im, d, inverse=not forward)
    re, im = _scale(ctx, [re, im], normalization, sizes)
    if im is None:
        im = ctx.call("zeros_like", re)
    return ctx.call("complex.make", re, im)


@aten("_fft_c2r.default")
def fft_c2r(ctx, self, dim, normalization, last_dim_size):
    re, im = split(ctx, self)
    dims = _norm_dims(ctx, re, dim)
    for d in dims[:-1]:
        re, im = _c2c(ctx, re, im, d, inverse=True)
    last = dims[-1]
    n = int(last_dim_size)
    k = ctx.dim_size(re, last)
    if not isinstance(k, int):
        raise ctx.error("Fourier transforms need static sizes")
    # x[m] = sum_j w_j (re_j cos(2 pi j m / n) - im_j sin(2 pi j m / n)), Hermitian weights w
    w = np.full(k, 2.0)
    w[0] = 1.0
    if n % 2 == 0 and n // 2 < k:
        w[n // 2] = 1.0
    w[min(k, n // 2 + 1) :] = 0.0
    ang = 2.0 * math.pi * (np.outer(np.arange(k), np.arange(n)) % n) / n
    out = _along(ctx, re, last, w[:, None] * np.cos(ang))
    if im is not None:
        out = ctx.call("subtract", out, _along(ctx, im, last, w[:, None] * np.sin(ang)))
    sizes = [ctx.dim_size(re, d) for d in dims[:-1]] + [n]
    return _scale(ctx, [out], normalization, sizes)[0]


@aten("view_as_real.default")
def view_as_real(ctx, self):
    re, im = split(ctx, self)
    return ctx.call("stack", re, im, axis=ctx.ndim(re))


@aten("view_as_complex.default")
def view_as_complex(ctx, self):
    parts = ctx.call("split", self, indices_or_sections=2, axis=ctx.ndim(self) - 1)
    re = ctx.call("squeeze", ctx.item(parts, 0), axis=(ctx.ndim(self) - 1,))
    im = ctx.call("squeeze", ctx.item(parts, 1), axis=(ctx.ndim(self) - 1,))
    return ctx.call("complex.make", re, im)


@aten("imag.default")
def imag(ctx, self):
    im = split(ctx, self)[1]
    if im is None:
        raise ctx.error("imag of a real tensor")
    return im


@aten("angle.default")
def angle(ctx, self):
    re, im = split(ctx, self)
    if im is None:
        d = ctx.dtype(re)
        neg = ctx.call("less", re, ctx.expr(0.0, d))
        return ctx.call(
            "where", neg, ctx.expr(math.pi, d), ctx.call("multiply", re, ctx.expr(0.0, d))
        )
    return ctx.call("atan2", im, re)


def complex_abs(ctx, z):
    return ctx.call("complex.abs", z)


def complex_binary(ctx, op, a, b):
    """add / subtract / multiply where an operand is complex."""
    ar, ai = split(ctx, a) if ctx.is_tensor(a) else (ctx.expr(a), None)
    br, bi = split(ctx, b) if ctx.is_tensor(b) else (ctx.expr(b), None)
    d = _REAL.get(ctx.dtype(a) if is_complex(ctx, a) else ctx.dtype(b), "float32")
    ar, br = ctx.cast(ar, d), ctx.cast(br, d)
    ai = None if ai is None else ctx.cast(ai, d)
    bi = None if bi is None else ctx.cast(bi, d)
    zero = ctx.expr(0.0, d)
    ai = ai if ai is not None else zero
    bi = bi if bi is not None else zero
    if op in ("add", "subtract"):
        re, im = ctx.call(op, ar, br), ctx.call(op, ai, bi)
    else:
        re = ctx.call("subtract", ctx.call("multiply", ar, br), ctx.call("multiply", ai, bi))
        im = ctx.call("add", ctx.call("multiply", ar, bi), ctx.call("multiply", ai, br))
    return ctx.call("complex.make", re, im)
