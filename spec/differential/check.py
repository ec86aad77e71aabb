#!/usr/bin/env python3
"""The NumPy half of the differential test of luagpu tensors (gen.lua writes
the programs and luagpu's results, one JSON line each).

Replays each program in NumPy under the rules docs/API.md promises (where
they differ from NumPy's, the rule is emulated here, with the doc cited) and
compares: integers, masks and positions exactly; floats within a bound
carried through the expression (each operation adds the error OpenCL
allows it, and passes on its operands' errors scaled by its derivative);
NaN where NaN. A program that must raise (a number that does not fit, shapes
that do not broadcast, the min of an empty tensor...) must raise with the
documented words. Each mismatch prints the program as a Lua snippet.

usage: check.py FILE [--max N]   (exit status 1 on any mismatch)
"""
import json
import re
import math
from fractions import Fraction
import sys

import numpy as np

NP = {"char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16,
      "int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64,
      "float": np.float32, "double": np.float64}
FLOATS = ("float", "double")
SIGNED = ("char", "short", "int", "long")
SIZE = {"char": 1, "uchar": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4, "long": 8,
        "ulong": 8, "float": 4, "double": 8}
RANGE = {t: (int(np.iinfo(NP[t]).min), int(np.iinfo(NP[t]).max))
         for t in NP if t not in FLOATS}
EPS = {"float": 2.0 ** -23, "double": 2.0 ** -52}
FMAX = {"float": float(np.finfo(np.float32).max), "double": float(np.finfo(np.float64).max)}
TINY = {"float": 2.0 ** -126, "double": 2.0 ** -1022}
M64 = (1 << 64) - 1

# The error OpenCL C allows each function, in ulps (OpenCL 1.2, 7.4; single
# precision, which bounds double's too). add/sub are exact; mul 1 for the
# compiler's contraction of a * b + c into fma.
ULPS = {"add": 0, "sub": 0, "mul": 1, "div": 3, "sqrt": 3, "exp": 4, "log": 4, "sin": 4,
        "cos": 4, "tanh": 5, "pow": 16,
        "tan": 5, "asin": 4, "acos": 4, "atan": 5, "sinh": 4, "cosh": 4, "asinh": 4,
        "acosh": 4, "atanh": 5, "log2": 3, "log10": 3, "log1p": 2, "exp2": 3, "expm1": 3,
        "rsqrt": 2, "erf": 16, "erfc": 16, "lgamma": 256, "atan2": 6, "hypot": 4}

# The floating functions of issue 32, in float64 (rounded to the compute
# type after: a reference nearer than NumPy's float32 functions).
def _lgamma(v):
    try:
        return math.lgamma(v)
    except (ValueError, OverflowError):
        return math.inf


FUNCS2 = {"tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
          "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh,
          "atanh": np.arctanh, "log2": np.log2, "log10": np.log10, "log1p": np.log1p,
          "exp2": np.exp2, "expm1": np.expm1, "rsqrt": lambda x: 1 / np.sqrt(x),
          "erf": np.vectorize(math.erf, otypes=[float]),
          "erfc": np.vectorize(math.erfc, otypes=[float]),
          "lgamma": np.vectorize(_lgamma, otypes=[float])}


class Expected(Exception):
    """luagpu must raise here, with one of these phrases in the message."""

    def __init__(self, *phrases):
        super().__init__(" / ".join(phrases))
        self.phrases = phrases


class Skip(Exception):
    """A case the checker does not judge."""


def lua_num(v):
    """A JSON value of gen.lua as the Lua number it stands for."""
    if isinstance(v, str):
        if "nan" in v:
            return math.nan
        return float.fromhex(v)
    return v


def is_float(v):
    return isinstance(v, float)


# ---------------------------------------------------------------- types

def promote(a, b):
    """docs/API.md, "Type promotion" (not NumPy's: ulong + long is long,
    uchar + char is short, float + long is float)."""
    if a == b:
        return a
    if "double" in (a, b):
        return "double"
    if "float" in (a, b):
        return "float"
    sa, sb = a in SIGNED, b in SIGNED
    if sa == sb:
        return a if SIZE[a] >= SIZE[b] else b
    s, u = (b, a) if sb else (a, b)
    if SIZE[s] > SIZE[u]:
        return s
    return {1: "short", 2: "int", 4: "long", 8: "long"}[SIZE[u]]


def floating(t):
    """API.md: / ^ sqrt ... give float for float and integers up to 32 bits,
    double for double, long and ulong."""
    if t in FLOATS:
        return t
    return "double" if SIZE[t] == 8 else "float"


def combined(vals):
    """The type operands combine to (API.md: promote over the tensors; a Lua
    float makes an integer tensor's result float)."""
    t = None
    for v in vals:
        if isinstance(v, V):
            t = v.t if t is None else promote(t, v.t)
    for v in vals:
        if not isinstance(v, V) and is_float(v) and t not in FLOATS:
            t = "float"
    return t


def fits(t, v):
    """Raises Expected when the Lua number v is not a value of t (API.md:
    "numbers must fit"; ulong takes 0 .. 2^64 - 1, also from floats)."""
    if t in FLOATS:
        return
    lo, hi = RANGE[t]
    if is_float(v):
        if not math.isfinite(v):
            raise Expected("is not an integer", "does not fit")
        if v != math.floor(v):
            raise Expected("is not an integer")
        if v < lo or v > hi:
            raise Expected("does not fit", "is not an integer")   # no Lua integer either
        v = int(v)
    if v < lo or v > hi:
        raise Expected("does not fit")


def number_as(v, t):
    """The Lua number v as a value of type t (as a kernel argument: a C
    conversion, int64 -> float directly)."""
    if t in FLOATS:
        if is_float(v):
            return np.array(v, np.float64).astype(NP[t])
        return np.array(v, np.int64).astype(NP[t])
    if is_float(v):
        v = int(v)
    return np.array(v & M64 if v < 0 and t == "ulong" else v).astype(NP[t])


# ---------------------------------------------------------------- values

class V:
    """A tensor value: array a (of type t's dtype), err (float64 array: the
    bound on |luagpu - a|; inf where unsure; None: exact)."""

    def __init__(self, a, t, err=None):
        self.a, self.t, self.err = a, t, err

    def e(self):
        if self.err is None:
            return np.zeros(self.a.shape)
        return np.broadcast_to(self.err, self.a.shape)


def cast(a, frm, to):
    """API.md astype: C casts, but float to integer saturates and truncates
    toward zero, NaN giving 0."""
    if frm == to:
        return a
    if frm in FLOATS and to not in FLOATS:
        lo, hi = RANGE[to]
        x = a.astype(np.float64)
        r = np.zeros(x.shape, dtype=object)
        for i, v in np.ndenumerate(x):
            if math.isnan(v):
                r[i] = 0
            elif v >= hi:
                r[i] = hi
            elif v <= lo:
                r[i] = lo
            else:
                r[i] = int(v)
        return np.array(r.tolist(), dtype=NP[to]).reshape(a.shape)
    return a.astype(NP[to])


def as_ct(x, ct):
    """Operand x (V or Lua number) converted to the compute type ct: V."""
    if isinstance(x, V):
        err = x.err
        if err is not None and x.t in FLOATS and ct in FLOATS and x.t != ct:
            err = err + EPS[ct] * np.abs(x.a.astype(np.float64))
        return V(cast(x.a, x.t, ct), ct, err)
    fits(ct, x)
    return V(number_as(x, ct), ct)


def wrap(values, t, shape):
    """Python ints wrapped to integer type t (C's two's complement)."""
    bits = 8 * SIZE[t]
    out = []
    for v in values:
        v &= (1 << bits) - 1
        if t in SIGNED and v >= 1 << (bits - 1):
            v -= 1 << bits
        out.append(v)
    return np.array(out, dtype=NP[t]).reshape(shape)


def ints(a):
    return [int(v) for v in a.reshape(-1)]


def f64(a):
    return a.astype(np.float64)


def unsure_int(*vs):
    """The err of an integer result: inf where any operand is unsure."""
    errs = [v.err for v in vs if v.err is not None]
    if not errs:
        return None
    e = np.zeros(np.broadcast_shapes(*[v.a.shape for v in vs]))
    for v in vs:
        if v.err is not None:
            e = np.where(np.broadcast_to(v.err, e.shape) > 0, np.inf, e)
    return e


def finish(r, ct, prop, op, inputs_finite):
    """The error bound of float result r (array of ct) from the operands'
    propagated error prop and op's allowance."""
    ulps = ULPS.get(op, 0)
    rf = np.abs(f64(r))
    e = prop + ulps * EPS[ct] * np.where(np.isfinite(rf), rf, 0)
    e = e + np.where(prop > 0, EPS[ct] * np.where(np.isfinite(rf), rf, 0), 0)
    e = e + (TINY[ct] * 4 if ulps else 0)
    # non-finite results: sure only from exact operands, and not at the edge
    # of overflow (functions with ulps may round to or from inf)
    nonfinite = ~np.isfinite(f64(r))
    e = np.where(nonfinite & (prop > 0), np.inf, e)
    if ulps:
        edge = np.isfinite(rf) & (rf > FMAX[ct] * (1 - 64 * EPS[ct]))
        edge |= nonfinite & inputs_finite
        e = np.where(edge, np.inf, e)
    if op in ("sin", "cos", "tanh", "exp", "pow"):
        e = e + 4 * EPS[ct]
    # a subnormal result may be flushed to zero (and a zero may have been
    # one): what follows from it is not judged
    sub = (rf > 0) & (rf < TINY[ct])
    e = np.where(sub, np.maximum(e, TINY[ct]), e)
    return e


# ---------------------------------------------------------------- elementwise

def binary(op, x, y):
    """x op y, x and y V or Lua numbers (one at least a V)."""
    ct = combined([x, y])
    if op in ("div", "pow"):
        ct = floating(ct)
    a, b = as_ct(x, ct), as_ct(y, ct)
    A, B = a.a, b.a
    shape = np.broadcast_shapes(A.shape, B.shape)
    A, B = np.broadcast_to(A, shape), np.broadcast_to(B, shape)
    if op in ("lt", "le", "gt", "ge", "eq", "ne"):
        # API.md: comparisons compute in the promoted type and give uchar
        f = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
             "eq": np.equal, "ne": np.not_equal}[op]
        r = f(A, B).astype(np.uint8)
        err = None
        if ct in FLOATS and (a.err is not None or b.err is not None):
            gap = np.abs(f64(A) - f64(B))
            tol = a.e() + b.e()
            err = np.where((tol > 0) & ~(gap > tol), np.inf, 0.0)
        elif ct not in FLOATS:
            err = unsure_int(a, b)
        return V(r, "uchar", err)
    if ct not in FLOATS:
        return V(int_binary(op, A, B, ct), ct, unsure_int(a, b))
    ea, eb = a.e(), b.e()
    fa, fb = f64(A), f64(B)
    finite = np.isfinite(fa) & np.isfinite(fb)
    if op == "add":
        r, prop = A + B, ea + eb
    elif op == "sub":
        r, prop = A - B, ea + eb
    elif op == "mul":
        r, prop = A * B, ea * np.abs(fb) + eb * np.abs(fa) + ea * eb
    elif op == "div":
        r = A / B
        room = np.abs(fb) - eb
        prop = np.where(room > 0, ea / np.where(room > 0, room, 1) +
                        np.abs(fa) * eb / np.where(room > 0, room, 1) ** 2, np.inf)
        prop = np.where((ea == 0) & (eb == 0), 0.0, prop)
    elif op == "pow":
        r = np.power(A, B)
        lg = np.log(np.abs(np.where(fa == 0, 1, fa)))
        prop = np.abs(f64(r)) * (np.abs(fb) * ea / np.where(fa == 0, np.inf, np.abs(fa)) +
                                 np.abs(lg) * eb)
        prop = np.where((ea == 0) & (eb == 0), 0.0, np.where(np.isfinite(prop), prop, np.inf))
    elif op == "min" or op == "max":
        # API.md: min/max of floats use fmin/fmax (a NaN loses to a number)
        r = (np.fmin if op == "min" else np.fmax)(A, B)
        prop = np.maximum(ea, eb)
        zeros = (fa == 0) & (fb == 0) & (np.signbit(fa) != np.signbit(fb))
        prop = np.where(zeros, np.maximum(prop, 5e-324), prop)   # either zero
    elif op == "idiv":
        # API.md: // is floor division as NumPy's floor_divide (not floor(a / b))
        q = A / B
        r = np.floor_divide(A, B)
        fq = f64(q)
        eq = np.where(np.isfinite(fq), np.abs(fq) * 4 * EPS[ct], 0)
        if a.err is not None or b.err is not None:
            room = np.abs(fb) - eb
            eq = eq + np.where(room > 0, (ea + np.abs(fq) * eb) / np.where(room > 0, room, 1),
                               np.inf)
        cross = np.floor(fq - eq) != np.floor(fq + eq)
        prop = np.where(cross, np.inf, 0.0)
        return V(r, ct, prop if cross.any() else None)
    elif op == "mod":
        # API.md: % is Lua's modulo, the result with the divisor's sign:
        # fmod, then + b when the signs differ (Lua 5.4's luai_nummod); a
        # zero takes the divisor's sign (NumPy's %)
        m = np.fmod(A, B)
        r = np.where((m != 0) & ((m < 0) != (B < 0)), m + B, m)
        r = np.where(m == 0, np.copysign(np.zeros_like(r), B), r).astype(NP[ct])
        prop = ea + eb * (np.abs(fa / np.where(fb == 0, 1, fb)) + 1)
        fr = f64(r)
        near = (prop > 0) & ((np.abs(fr) <= prop) | (np.abs(np.abs(fr) - np.abs(fb)) <= prop))
        prop = np.where(near, np.inf, prop)
        return V(r, ct, prop if (prop > 0).any() else None)
    else:
        raise ValueError(op)
    r = np.asarray(r).astype(NP[ct])
    e = finish(r, ct, prop, op, finite)
    return V(r, ct, e)


def int_binary(op, A, B, t):
    """Integer ops of API.md: + - * wrap (C's two's complement); x // 0 and
    x % 0 give 0; MIN // -1 wraps; % has the divisor's sign; min/max."""
    xs, ys = ints(A), ints(B)
    out = []
    for x, y in zip(xs, ys):
        if op == "add":
            out.append(x + y)
        elif op == "sub":
            out.append(x - y)
        elif op == "mul":
            out.append(x * y)
        elif op == "idiv":
            out.append(0 if y == 0 else x // y)
        elif op == "mod":
            out.append(0 if y == 0 else x % y)
        elif op == "min":
            out.append(min(x, y))
        elif op == "max":
            out.append(max(x, y))
        else:
            raise ValueError(op)
    return wrap(out, t, A.shape)


def unary(op, x):
    ct = floating(x.t) if op in ("sqrt", "exp", "log", "sin", "cos", "tanh") else x.t
    a = as_ct(x, ct)
    A = a.a
    if ct not in FLOATS:
        if op == "neg":
            return V(wrap([-v for v in ints(A)], ct, A.shape), ct, a.err)
        if op == "abs":   # (t)(a < 0 ? -a : a): abs(MIN) wraps to MIN
            return V(wrap([abs(v) for v in ints(A)], ct, A.shape), ct, a.err)
        return V(A.copy(), ct, a.err)          # floor, ceil of integers
    ea = a.e()
    fa = f64(A)
    finite = np.isfinite(fa)
    if op == "neg":
        return V(-A, ct, a.err)
    if op == "abs":
        return V(np.abs(A), ct, a.err)
    if op in ("floor", "ceil"):
        f = np.floor if op == "floor" else np.ceil
        r = f(A)
        if a.err is None:
            return V(r, ct)
        jump = f(fa - ea) != f(fa + ea)
        return V(r, ct, np.where(jump, ea + 1, ea))
    f = {"sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos,
         "tanh": np.tanh}[op]
    r = f(A).astype(NP[ct])
    fr = f64(r)
    if op == "sqrt":
        lo = fa - ea
        prop = np.where(ea == 0, 0.0, np.where(lo > 0, ea / (2 * np.sqrt(np.maximum(lo, 1e-300))),
                                               np.inf))
    elif op == "exp":
        prop = np.where(ea == 0, 0.0, np.abs(fr) * np.expm1(np.minimum(ea, 700)))
    elif op == "log":
        lo = fa - ea
        prop = np.where(ea == 0, 0.0, np.where(lo > 0, ea / np.where(lo > 0, lo, 1), np.inf))
    else:
        prop = ea
    prop = np.where(np.isnan(prop), np.inf, prop)
    if op in ("sin", "cos") and ct == "float":
        # large arguments: allow the reduction's error relative to |x|
        prop = prop + np.where(np.abs(fa) > 1e4, np.abs(fa) * EPS[ct], 0)
    return V(r, ct, finish(r, ct, prop, op, finite))


# ---------------------------------------------------------------- issue 32

def func2(op, x):
    """tan .. lgamma: in the floating type; judged where the operand is
    exact (a propagated error is not followed through them)."""
    ct = floating(x.t)
    a = as_ct(x, ct)
    A = a.a
    fa = f64(A)
    r = np.asarray(FUNCS2[op](fa)).astype(NP[ct])
    prop = np.where(a.e() == 0, 0.0, np.inf)
    e = finish(r, ct, prop, op, np.isfinite(fa))
    if op == "lgamma":
        # (OpenCL sets no bound: judged within 256 ulps of max(|r|, 1))
        e = e + 256 * EPS[ct]
    return V(r, ct, e)


def rounding(op, x):
    """API.md: round (halves away from zero, as C), trunc, sign keep the
    type; sign of floats is NumPy's (+0.0 for both zeros, NaN for NaN),
    of unsigned types 0 or 1."""
    t = x.t
    A = x.a
    if t not in FLOATS:
        if op == "sign":
            return V(wrap([(v > 0) - (v < 0) for v in ints(A)], t, A.shape), t, x.err)
        return V(A.copy(), t, x.err)
    fa = f64(A)

    def f(v):
        if op == "trunc":
            return np.trunc(v)
        if op == "sign":
            return np.sign(v)
        tr = np.trunc(v)
        return np.where(np.abs(v - tr) >= 0.5, tr + np.sign(v), tr)
    r = np.asarray(f(fa)).astype(NP[t])
    if x.err is None:
        return V(r, t)
    ea = x.e()
    jump = (f(fa - ea) != f(fa + ea)) | np.isinf(ea)
    return V(r, t, np.where(jump, np.inf, 0.0))


def mask(op, x):
    """isnan, isinf, isfinite, logical_not: uchar; integers are finite."""
    A = x.a
    if x.t not in FLOATS:
        if op == "logical_not":
            return V((A == 0).astype(np.uint8), "uchar", unsure_int(x))
        r = np.zeros(A.shape, np.uint8) + (1 if op == "isfinite" else 0)
        return V(r, "uchar")
    f = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
         "logical_not": lambda v: v == 0}[op]
    r = f(A).astype(np.uint8)
    if x.err is None:
        return V(r, "uchar")
    fa, ea = f64(A), x.e()
    if op == "logical_not":
        unsure = (ea > 0) & ~(np.abs(fa) > ea)
    else:
        unsure = np.isinf(ea) | ((ea > 0) & ~(np.abs(fa) + ea < FMAX[x.t]))
    return V(r, "uchar", np.where(unsure, np.inf, 0.0))


def truthy(x):
    """x's values != 0 (bool array) and where that is unsure."""
    A = x.a
    if x.t not in FLOATS:
        return A != 0, (x.e() > 0)
    fa, ea = f64(A), x.e()
    return fa != 0, (ea > 0) & ~(np.abs(fa) > ea)


def logical(op, x, y):
    """logical_and/or: uchar, NaN counts as true; numbers as NumPy's."""
    xs = x if isinstance(x, V) else V(np.array(x), "double" if is_float(x) else "long")
    ys = y if isinstance(y, V) else V(np.array(y), "double" if is_float(y) else "long")
    if isinstance(y, int) and not isinstance(y, bool):
        fits(combined([x, y]), y)
    a, ua = truthy(xs)
    b, ub = truthy(ys)
    shape = np.broadcast_shapes(a.shape, b.shape)
    a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    ua, ub = np.broadcast_to(ua, shape), np.broadcast_to(ub, shape)
    r = (a & b) if op == "logical_and" else (a | b)
    return V(r.astype(np.uint8), "uchar",
             np.where(ua | ub, np.inf, 0.0) if (ua | ub).any() else None)


def binary2(op, x, y):
    """atan2, hypot (the floating type); fmod (C's: the dividend's sign;
    integers: C's %, by 0 or -1 giving 0)."""
    ct = combined([x, y])
    if op != "fmod":
        ct = floating(ct)
    a, b = as_ct(x, ct), as_ct(y, ct)
    A, B = a.a, b.a
    shape = np.broadcast_shapes(A.shape, B.shape)
    A, B = np.broadcast_to(A, shape), np.broadcast_to(B, shape)
    if ct not in FLOATS:
        out = []
        for p, q in zip(ints(A), ints(B)):
            if q == 0 or q == -1:
                out.append(0)
            else:
                m = abs(p) % abs(q)
                out.append(-m if p < 0 else m)
        return V(wrap(out, ct, shape), ct, unsure_int(a, b))
    fa, fb = f64(A), f64(B)
    exact = (a.e() == 0) & (b.e() == 0)
    if op == "fmod":
        r = np.fmod(A, B).astype(NP[ct])
        return V(r, ct, np.where(exact, 0.0, np.inf) if not exact.all() else None)
    f = np.arctan2 if op == "atan2" else np.hypot
    r = np.asarray(f(fa, fb)).astype(NP[ct])
    prop = np.where(exact, 0.0, np.inf)
    return V(r, ct, finish(r, ct, prop, op, np.isfinite(fa) & np.isfinite(fb)))


def shift(left, v, n, bits, signed):
    """API.md: shifts defined for every count: past the width 0 (>> of a
    negative signed value -1), a negative count the other way."""
    if n < 0:
        return shift(not left, v, bits if n <= -bits else -n, bits, signed)
    if left:
        return 0 if n >= bits else v << n
    if n >= bits:
        return -1 if signed and v < 0 else 0
    return v >> n          # Python's >> of negative ints fills with the sign


def bitwise(op, x, y):
    """& | ~ << >> (and ~x) of integer operands; floats raise. A Lua number
    counting a shift (x << n) need not fit x's type."""
    count = op in ("lshift", "rshift") and not isinstance(y, V)
    vals = [x] if y is None else [x, y]
    for v in vals:
        if isinstance(v, V) and v.t in FLOATS or is_float(v):
            raise Expected("expected integer operands", "expected an integer tensor",
                           "has no integer representation")
    ct = combined([v for v in vals if not (count and v is y)])
    a = as_ct(x, ct)
    if y is None:
        return V(wrap([~v for v in ints(a.a)], ct, a.a.shape), ct, a.err)
    b = V(np.array(y), "long") if count else as_ct(y, ct)
    A, B = a.a, b.a
    shape = np.broadcast_shapes(A.shape, B.shape)
    A, B = np.broadcast_to(A, shape), np.broadcast_to(B, shape)
    bits, signed = 8 * SIZE[ct], ct in SIGNED
    out = []
    for p, q in zip(ints(A), ints(B)):
        if op == "bitwise_and":
            out.append(p & q)
        elif op == "bitwise_or":
            out.append(p | q)
        elif op == "bitwise_xor":
            out.append(p ^ q)
        else:
            out.append(shift(op == "lshift", p, q, bits, signed))
    return V(wrap(out, ct, shape), ct, unsure_int(a, b) if not count else a.err)


def where(m, x, y):
    """gpu.where: a where mask is not 0, else b; two numbers make a 0-d
    tensor of long (or float) first (lua/luagpu/tensor/elementwise.lua, as documented:
    tensors or numbers, broadcast)."""
    if not isinstance(x, V) and not isinstance(y, V):
        t = "float" if (is_float(x) or is_float(y)) else "long"
        x = as_ct(x, t)
    ct = combined([x, y])
    a, b = as_ct(x, ct), as_ct(y, ct)
    shape = np.broadcast_shapes(m.a.shape, a.a.shape, b.a.shape)
    mask = np.broadcast_to(m.a != 0, shape)
    r = np.where(mask, np.broadcast_to(a.a, shape), np.broadcast_to(b.a, shape)).astype(NP[ct])
    err = None
    if a.err is not None or b.err is not None or m.err is not None:
        err = np.where(mask, np.broadcast_to(a.e(), shape), np.broadcast_to(b.e(), shape))
        if m.err is not None:
            err = np.where(np.broadcast_to(m.e(), shape) > 0, np.inf, err)
    return V(r, ct, err)


def astype(x, t):
    r = cast(x.a, x.t, t)
    if x.err is None:
        return V(r, t)
    if x.t in FLOATS and t not in FLOATS:
        fa, ea = f64(x.a), x.e()
        lo, hi = np.trunc(fa - ea), np.trunc(fa + ea)
        return V(r, t, np.where((ea > 0) & (lo != hi), np.inf, 0.0))
    if t in FLOATS and x.t in FLOATS:
        return V(r, t, x.e() + EPS[t] * np.abs(f64(r)))
    return V(r, t, np.where(x.e() > 0, np.inf, 0.0))


# ---------------------------------------------------------------- programs

def view(a, views):
    """The NumPy view of a through gen.lua's views (1-based, inclusive)."""
    for v in views:
        k = v[0]
        nd = a.ndim
        if k == "slice":
            d, first, last, step = v[1], v[2], v[3], v[4]
            d = d + nd + 1 if d < 0 else d
            n = a.shape[d - 1]
            first = first + n + 1 if first < 0 else first
            last = last + n + 1 if last < 0 else last
            idx = [slice(None)] * nd
            if step > 0:
                idx[d - 1] = slice(first - 1, last, step)
            elif first < last:  # an empty walk down
                idx[d - 1] = slice(0, 0)
            else:       # from first down to last (last - 2 is -1 when last is 1)
                idx[d - 1] = slice(first - 1, last - 2 if last >= 2 else None, step)
            a = a[tuple(idx)]
        elif k == "flip":
            d = v[1]
            d = d + nd + 1 if d < 0 else d
            a = np.flip(a, d - 1)
        elif k == "transpose":
            d1, d2 = v[1], v[2]
            a = np.swapaxes(a, d1 - 1, d2 - 1)
        elif k == "permute":
            a = np.transpose(a, [p - 1 for p in v[1]])
        elif k == "expand":
            arg = list(v[1])
            shift = len(arg) - nd
            for i in range(len(arg)):
                if arg[i] == -1:
                    arg[i] = a.shape[i - shift]
            a = np.broadcast_to(a, arg)
        elif k == "reshape":
            # API.md: a view whenever the strides allow, else a copy (NumPy's
            # rule too)
            a = a.reshape(v[1])
        elif k == "select":
            d, i = v[1], v[2]
            d = d + nd + 1 if d < 0 else d
            n = a.shape[d - 1]
            i = i + n + 1 if i < 0 else i
            idx = [slice(None)] * nd
            idx[d - 1] = i - 1
            a = a[tuple(idx) + (Ellipsis,)]     # a 0-d view, not a copied scalar
        else:
            raise ValueError(k)
    return a


def arange(t, first, last, step):
    """dev:arange(type, first, last, step): first + (i - 1) * step in type
    while not past last."""
    for v in (first, step):
        fits(t, v)
    n = 0 if (last - first) / step < 0 else int(math.floor((last - first) / step)) + 1
    if t in FLOATS:
        i = np.arange(n, dtype=np.float64).astype(NP[t])
        r = number_as(first, t) + i * number_as(step, t)
        return V(r.astype(NP[t]), t)
    return V(wrap([first + i * step for i in range(n)], t, (n,)), t)


class Program:
    def __init__(self, p):
        self.p = p
        self.arrays = []
        self.errs = []      # per input: the error bound of each element (set writes it)
        for inp in p["inputs"]:
            t = inp["t"]
            if "alias" in inp:
                # dev:tensor(t, shape, x.buffer): the same memory
                self.arrays.append(self.arrays[inp["alias"] - 1].reshape(inp["shape"]))
                self.errs.append(self.errs[inp["alias"] - 1].reshape(inp["shape"]))
            else:
                self.errs.append(np.zeros(inp["shape"]))
                vals = [lua_num(v) for v in inp["vals"]]
                if t == "ulong":
                    vals = [v & M64 for v in vals]
                self.arrays.append(np.array(vals, dtype=NP[t]).reshape(inp["shape"]))
        self.operands = {}

    def operand(self, k):
        if k not in self.operands:
            o = self.p["operands"][k - 1]
            if "arange" in o:
                t, first, last, step = o["arange"]
                self.operands[k] = arange(t, lua_num(first), lua_num(last), lua_num(step))
            else:
                inp = self.p["inputs"][o["input"] - 1]
                self.operands[k] = V(view(self.arrays[o["input"] - 1], o["views"]), inp["t"])
        return self.operands[k]

    def eval(self, n):
        op = n["op"]
        if op == "leaf":
            v = self.operand(n["operand"])
            if n.get("t"):
                return V(v.a.T, v.t, v.err)
            return v
        if op == "num":
            return lua_num(n["v"])
        args = [self.eval(a) for a in n["args"]]
        if op in ("add", "sub", "mul", "div", "idiv", "mod", "pow", "lt", "le", "gt", "ge",
                  "eq", "ne", "min", "max"):
            return binary(op, args[0], args[1])
        if op in ("atan2", "hypot", "fmod"):
            return binary2(op, args[0], args[1])
        if op in ("bitwise_and", "bitwise_or", "bitwise_xor", "lshift", "rshift"):
            return bitwise(op, args[0], args[1])
        if op in ("logical_and", "logical_or"):
            return logical(op, args[0], args[1])
        if op in ("isnan", "isinf", "isfinite", "logical_not"):
            return mask(op, args[0])
        if op in ("round", "trunc", "sign"):
            return rounding(op, args[0])
        if op == "bitwise_not":
            return bitwise("bitwise_not", args[0], None)
        if op in FUNCS2:
            return func2(op, args[0])
        if op == "clamp":
            # tensor:clamp(lo, hi) is max(x, lo), then min(., hi) (a NaN
            # bound is no bound), and a NaN of x stays NaN (NumPy's clip)
            # (a number bound an integer type cannot reach bounds nothing)
            def unreachable(v, r, low):
                if not isinstance(v, (int, float)) or v != v or r.t in FLOATS:
                    return False
                t = combined([r, v])
                if t in FLOATS or (t == "ulong" and not low):
                    return False
                return v < RANGE[t][0] if low else v > RANGE[t][1]
            r = args[0]
            if not unreachable(args[1], r, True):
                r = binary("max", r, args[1])
            if not unreachable(args[2], r, False):
                r = binary("min", r, args[2])
            x = args[0]
            if np.issubdtype(x.a.dtype, np.floating):
                nan = np.broadcast_to(np.isnan(x.a), r.a.shape)
                if nan.any():
                    a = np.where(nan, np.broadcast_to(x.a, r.a.shape).astype(r.a.dtype), r.a)
                    err = None if r.err is None else np.where(nan, 0.0, r.err)
                    r = V(a, r.t, err)
            return r
        if op == "where":
            return where(args[0], args[1], args[2])
        if op == "astype":
            return astype(args[0], n["t"])
        return unary(op, args[0])


def copy_v(v):
    err = None if v.err is None else np.array(np.broadcast_to(v.err, v.a.shape))
    return V(np.array(v.a), v.t, err)


# ---------------------------------------------------------------- reductions

def reduce_type(op, t):
    """API.md, Reductions: sum/prod give long for char .. long and uint, ulong
    for ulong, the type for floats; mean float for float, double otherwise;
    argmin/argmax long."""
    if op in ("sum", "prod"):
        if t in FLOATS:
            return t
        return "ulong" if t == "ulong" else "long"
    if op == "mean":
        return "float" if t == "float" else "double"
    if op in ("argmin", "argmax"):
        return "long"
    return t


def reduce_row(op, t, vals, errs):
    """op over one row (a 1-D array of type t and its errors): (value,
    err) as Python numbers; err inf when unsure."""
    n = len(vals)
    rt = reduce_type(op, t)
    unsure = bool(np.any(errs > 0))
    if t not in FLOATS:
        xs = ints(vals)
        if op in ("min", "max", "argmin", "argmax") and n == 0:
            raise Expected("is undefined")
        if op == "sum":
            v = int(wrap([sum(xs)], rt, ())[()])
        elif op == "prod":
            p = 1
            for x in xs:
                p = (p * x) & M64
            v = int(wrap([p], rt, ())[()])
        elif op == "mean":
            # decided: mean of integer types accumulates in double
            v = math.fsum(float(x) for x in xs) / n if n else math.nan
            return v, (n + 2) * EPS["double"] * math.fsum(abs(float(x)) for x in xs) / max(n, 1) \
                + (math.inf if unsure else 0)
        elif op == "min":
            v = min(xs)
        elif op == "max":
            v = max(xs)
        elif op == "argmin":
            v = xs.index(min(xs)) + 1
        elif op == "argmax":
            v = xs.index(max(xs)) + 1
        return v, (math.inf if unsure else 0)
    fs = [float(x) for x in vals]
    es = [float(e) for e in errs]
    if op in ("min", "max", "argmin", "argmax"):
        if n == 0:
            raise Expected("is undefined")
        good = [i for i in range(n) if not math.isnan(fs[i])]
        if not good:
            # decided: min/max of all NaN give NaN; argmin/argmax give 1
            return (math.nan if op in ("min", "max") else 1), (math.inf if unsure else 0)
        best = good[0]
        for i in good:
            if (fs[i] < fs[best]) if op in ("min", "argmin") else (fs[i] > fs[best]):
                best = i
        if op in ("min", "max"):
            e = max(es) if es else 0
            zeros = [fs[i] for i in good if fs[i] == 0]
            if fs[best] == 0 and len(set(math.copysign(1, z) for z in zeros)) > 1:
                e = max(e, 5e-324)     # which zero comes out is not promised
            return fs[best], e
        # decided: skip NaN, the first position of the least / greatest
        if unsure:
            for i in good:
                if i != best and abs(fs[i] - fs[best]) <= es[i] + es[best]:
                    return best + 1, math.inf
            if any(math.isnan(f) for f in fs) and any(e > 0 for e in es):
                return best + 1, math.inf
        return best + 1, 0
    # sum, prod, mean of floats
    acc = rt
    if any(math.isnan(f) for f in fs):
        return math.nan, (math.inf if unsure else 0)
    infs = [f for f in fs if math.isinf(f)]
    if op == "prod":
        if any(f == 0 for f in fs) and infs:
            return math.nan, (math.inf if unsure else 0)
        mags = [abs(f) for f in fs if f != 0]
        sign = -1.0 if sum(1 for f in fs if math.copysign(1, f) < 0) % 2 else 1.0
        big = sum(math.log2(m) for m in mags if m > 1 and not math.isinf(m))
        if any(f == 0 for f in fs) and big > math.log2(FMAX[t]) - 1:
            raise Skip("a product with 0 that may overflow first: its order decides")
        if any(f == 0 for f in fs):
            if unsure:
                return 0.0, math.inf
            return sign * 0.0, 5e-324   # the sign of a zero product: either
        if infs:
            return sign * math.inf, (math.inf if unsure else 0)
        lg = sum(math.log2(m) for m in mags)
        big = sum(math.log2(m) for m in mags if m > 1)
        small = sum(math.log2(m) for m in mags if m < 1)
        if big > math.log2(FMAX[t]) - 1 or small < math.log2(TINY[t]) + 24:
            raise Skip("a product near overflow or underflow: its order decides")
        exact = Fraction(1)
        for m in mags:
            exact *= Fraction(m)
        v = sign * float(exact)     # (2.0 ** lg was off by more than the bound)
        v = float(np.array(v).astype(NP[t]))
        e = (n + 2) * 2 * EPS[t] * abs(v) + (math.inf if unsure else 0)
        return v, e
    pos = any(f == math.inf for f in infs)
    neg = any(f == -math.inf for f in infs)
    if pos and neg:
        return math.nan, (math.inf if unsure else 0)
    if infs and math.fsum(min(abs(f), FMAX[acc]) for f in fs if not math.isinf(f)) > \
            FMAX[acc] / 4:
        raise Skip("a sum with an infinity that may overflow to the other one: order decides")
    if infs:
        return (math.inf if pos else -math.inf), (math.inf if unsure else 0)
    try:
        mag = math.fsum(abs(f) for f in fs)
    except OverflowError:
        mag = math.inf
    if mag > FMAX[acc] / 4:
        raise Skip("a sum near overflow: its order decides")
    s = math.fsum(fs)
    e = (n + 2) * EPS[acc] * mag + math.fsum(es) + TINY[acc] * n
    if op == "mean":
        if n == 0:
            return math.nan, 0   # API.md: the mean of an empty input is NaN
        return s / n, e / n
    return (s if n else 0.0), e


def reduce_dim(op, x, d, keepdim):
    """x:op(d [, keepdim]) as API.md, Reductions: the dim gone (size 1 with
    keepdim); min/max/argmin/argmax of an empty dim raise, even when the
    result is empty too (as NumPy)."""
    a, e = x.a, x.e()
    rt = reduce_type(op, x.t)
    if a.shape[d] == 0 and op in ("min", "max", "argmin", "argmax"):
        raise Expected("of an empty dim is undefined")
    moved = np.moveaxis(a, d, -1)
    emoved = np.moveaxis(e, d, -1)
    outshape = moved.shape[:-1]
    L = a.shape[d]
    rows = int(np.prod(outshape))
    vals, errs = [], []
    if rows > 0:
        m2, e2 = moved.reshape(rows, L), emoved.reshape(rows, L)
        for i in range(rows):
            v, er = reduce_row(op, x.t, m2[i], e2[i])
            vals.append(v)
            errs.append(er)
    if rt in FLOATS:
        r = np.array(vals, dtype=np.float64).astype(NP[rt]).reshape(outshape)
    else:
        r = wrap(vals, rt, outshape)
    err = np.array(errs, dtype=np.float64).reshape(outshape)
    if keepdim:
        r = np.expand_dims(r, d)
        err = np.expand_dims(err, d)
    return V(r, rt, err)


def check_dim(x, dim):
    nd = x.a.ndim
    if isinstance(dim, float) and (not math.isfinite(dim) or dim != math.floor(dim)):
        raise Expected("integer dim")
    if nd == 0:
        raise Expected("has no dims", "out of range", "at least 1 dim")
    d = dim + nd + 1 if dim < 0 else dim
    if d < 1 or d > nd:
        raise Expected("out of range")
    return d - 1


def sort_key(t, descending):
    """decided: stable; -0.0 and +0.0 equal; NaNs last. descending: the
    order of distinct keys reversed, NaNs first (algo.sort in API.md, as
    PyTorch)."""
    if t in FLOATS:
        if descending:
            return lambda v: (0, 0.0) if math.isnan(v) else (1, -v)
        return lambda v: (1, 0.0) if math.isnan(v) else (0, v)
    if descending:
        return lambda v: -v
    return lambda v: v


def scan(kind, x, dim, descending):
    if x.a.ndim == 0:
        raise Expected("at least 1 dim")
    d = x.a.ndim - 1 if dim is None else check_dim(x, dim)
    a, e = x.a, x.e()
    moved, emoved = np.moveaxis(a, d, -1), np.moveaxis(e, d, -1)
    L = a.shape[d]
    rows = int(np.prod(moved.shape[:-1]))
    rt = "long" if kind == "argsort" else x.t
    out = np.zeros(moved.shape, dtype=NP[rt])
    err = np.zeros(moved.shape)
    if rows > 0 and L > 0:
        m2, e2 = moved.reshape(rows, L), emoved.reshape(rows, L)
        o2, oe = out.reshape(rows, L), err.reshape(rows, L)
        for i in range(rows):
            row = m2[i]
            erow = e2[i]
            if kind == "cumsum":
                if x.t in FLOATS:
                    s, mag, acc = [], 0.0, []
                    fs = [float(v) for v in row]
                    for j in range(L):
                        acc.append(fs[j])
                        s.append(float(np.array(math.fsum(acc) if all(map(math.isfinite, acc))
                                                else sum(acc)).astype(NP[x.t])))
                        mag += abs(fs[j]) if math.isfinite(fs[j]) else 0
                        if mag > FMAX[x.t] / 4:
                            raise Skip("a sum near overflow")
                        oe[i, j] = (j + 3) * EPS[x.t] * mag + float(np.sum(erow[:j + 1])) + \
                            TINY[x.t] * (j + 1)
                    o2[i] = s
                else:
                    c, s = 0, []
                    for v in ints(row):
                        c += v
                        s.append(c)
                    o2[i] = wrap(s, x.t, (L,))
                    if np.any(erow > 0):
                        oe[i] = np.inf
            else:
                vals = [float(v) for v in row] if x.t in FLOATS else ints(row)
                order = sorted(range(L), key=lambda j: sort_key(x.t, descending)(vals[j]))
                if kind == "sort":
                    o2[i] = row[order]
                    oe[i] = float(np.max(erow)) if L else 0
                else:
                    o2[i] = np.array(order, dtype=np.int64) + 1
                    if np.any(erow > 0):
                        oe[i] = np.inf
    r = np.moveaxis(out, -1, d)
    return V(r, rt, np.moveaxis(err, -1, d))


# ---------------------------------------------------------------- issue 32's ops

def pos0(i, L):
    """A 1-based position (negative from the end) as 0-based; raises when out
    of range."""
    p = i + L + 1 if i < 0 else i
    if p < 1 or p > L:
        raise Expected("out of range")
    return p - 1


def positions(idx, L):
    """The 0-based positions of index V idx along a dim of L: an int array."""
    return np.array([pos0(v, L) for v in ints(idx.a)], dtype=np.int64).reshape(idx.a.shape)


def dim0(x, dim, extra=0):
    """O.check_dim: a 0-based dim of x (of ndim + extra dims)."""
    nd = x.a.ndim + extra
    if isinstance(dim, float) and (not math.isfinite(dim) or dim != math.floor(dim)):
        raise Expected("integer dim")
    d = dim + nd + 1 if dim < 0 else dim
    if d < 1 or d > nd:
        raise Expected("out of range", "has no dims")
    return int(d) - 1


def tensor_arg(prog, a):
    return prog.operand(a["operand"]) if isinstance(a, dict) else a


def values_of(x, v):
    """index.lua's values_arg: a V of x's type from a number or a V."""
    if not isinstance(v, V):
        fits(x.t, v)
        return V(number_as(v, x.t), x.t)
    if v.t != x.t and promote(x.t, v.t) != x.t:
        raise Expected("without a loss")
    return V(cast(v.a, v.t, x.t), x.t)


def set_into(target, t, v):
    """x:set(v) into the NumPy view target of type t (v a number or V)."""
    if isinstance(v, V):
        if promote(t, v.t) != t:
            raise Expected("without a loss")
        try:
            b = np.broadcast_shapes(target.shape, v.a.shape)
        except ValueError:
            b = None
        if b != target.shape:
            raise Expected("does not broadcast to")
        src = cast(np.array(v.a), v.t, t)
    else:
        fits(t, v)
        src = number_as(v, t)
    if not target.flags.writeable:
        raise Skip("a write into a broadcast view")
    target[...] = src


def as_number(v, t):
    return float(v) if t in FLOATS else int(v)


def float_sum(fs, t, extra=0.0):
    """IEEE sum of floats fs in type t in any order: (value, err)."""
    if any(math.isnan(f) for f in fs):
        return math.nan, 0.0
    infs = set(f for f in fs if math.isinf(f))
    if len(infs) == 2:
        return math.nan, 0.0
    try:
        mag = math.fsum(abs(f) for f in fs if not math.isinf(f))
    except OverflowError:
        mag = math.inf
    if mag > FMAX[t] / 4:
        return 0.0, math.inf     # an overflow (against an infinity too): the order decides
    if infs:
        return infs.pop(), 0.0
    return math.fsum(fs), (len(fs) + 2) * EPS[t] * mag + TINY[t] * (len(fs) + 1) + extra


def scatter_like(prog, A, x, add):
    xt = x.t
    d = dim0(x, A["dim"])
    idx = prog.operand(A["idx"])
    if add and xt not in ("int", "uint", "long", "ulong", "float", "double"):
        raise Expected("adds with atomics")
    src = tensor_arg(prog, A["src"])
    v = values_of(x, src)
    xs, ish = x.a.shape, idx.a.shape
    if len(ish) != len(xs):
        raise Expected("the index tensor has")
    sv = v.a
    for k in range(len(xs)):
        if k != d and ish[k] > xs[k]:
            raise Expected("exceeds")
        if sv.ndim > 0 and (sv.ndim != len(ish) or ish[k] > sv.shape[k]):
            raise Expected("does not cover")
    out = np.array(x.a)
    if idx.a.size == 0:
        return V(out, xt)
    pos = positions(idx, xs[d])
    writes = {}
    for j in np.ndindex(*ish):
        tgt = list(j)
        tgt[d] = int(pos[j])
        val = sv[j] if sv.ndim > 0 else sv[()]
        writes.setdefault(tuple(tgt), []).append(val)
    err = np.zeros(out.shape)
    for tgt, vals in writes.items():
        if not add:
            out[tgt] = vals[-1]
            if len(set(float(u) if xt in FLOATS else int(u) for u in vals)) > 1 or \
                    (xt in FLOATS and any(math.isnan(float(u)) for u in vals) and len(vals) > 1):
                err[tgt] = math.inf
        elif xt in FLOATS:
            s, e = float_sum([float(out[tgt])] + [float(u) for u in vals], xt)
            out[tgt] = s
            err[tgt] = e
        else:
            out[tgt] = wrap([int(out[tgt]) + sum(int(u) for u in vals)], xt, ())[()]
    return V(out, xt, err if err.any() else None)


def sorted_positions(vals, t, descending=False):
    key = sort_key(t, descending)
    return sorted(range(len(vals)), key=lambda j: key(vals[j]))


def pyvals(a, t):
    return [float(v) for v in a.reshape(-1)] if t in FLOATS else ints(a)


def mreduce(op, x, dims, keepdim):
    """x:op(dims [, keepdim]) for sum .. all over a list of dims."""
    nd = x.a.ndim
    axes = []
    for dm in dims:
        d = dim0(x, dm)
        if d in axes:
            raise Expected("appears twice")
        axes.append(d)
    axes.sort()
    if op in ("min", "max") and any(x.a.shape[d] == 0 for d in axes):
        raise Expected("is undefined")
    kept = [d for d in range(nd) if d not in axes]
    moved = np.transpose(x.a, kept + axes)
    emoved = np.transpose(x.e(), kept + axes)
    outshape = moved.shape[:len(kept)]
    L = int(np.prod([x.a.shape[d] for d in axes]))
    rows = int(np.prod(outshape))
    m2, e2 = moved.reshape(rows, L), emoved.reshape(rows, L)
    vals, errs = [], []
    for i in range(rows):
        if op in ("any", "all"):
            row = m2[i]
            nz = (row != 0)
            vals.append(int(nz.any() if op == "any" else nz.all()))
            errs.append(math.inf if (e2[i] > 0).any() else 0)
        else:
            v, er = reduce_row(op, x.t, m2[i], e2[i])
            vals.append(v)
            errs.append(er)
    rt = "uchar" if op in ("any", "all") else reduce_type(op, x.t)
    if rt in FLOATS:
        r = np.array(vals, dtype=np.float64).astype(NP[rt]).reshape(outshape)
    else:
        r = wrap(vals, rt, outshape)
    err = np.array(errs, dtype=np.float64).reshape(outshape)
    if keepdim:
        for d in axes:
            r = np.expand_dims(r, d)
            err = np.expand_dims(err, d)
    return V(r, rt, err)


def group_dims(x, dims):
    """stats.lua's covered: None (all) or sorted distinct 0-based dims."""
    if dims is None:
        return None
    lst = dims if isinstance(dims, list) else [dims]
    axes = []
    for dm in lst:
        d = dim0(x, dm)
        if d in axes:
            raise Expected("appears twice")
        axes.append(d)
    return sorted(axes)


def rows_of(a, axes):
    """a's elements grouped by the kept dims: (outshape, rows x L)."""
    nd = a.ndim
    if axes is None:
        axes = list(range(nd))
    kept = [d for d in range(nd) if d not in axes]
    moved = np.transpose(a, kept + axes)
    outshape = moved.shape[:len(kept)]
    L = int(np.prod([a.shape[d] for d in axes]))
    return outshape, moved.reshape(int(np.prod(outshape)), L)


def var_row(fs, t, c):
    """(var, err) of floats fs in type t, correction c."""
    n = len(fs)
    div = n - c
    if n == 0 or div <= 0:
        return math.nan, 0.0
    if not all(math.isfinite(f) for f in fs):
        return math.nan, 0.0
    sa = math.fsum(abs(f) for f in fs)
    if sa > FMAX[t] / 8:
        return 0.0, math.inf
    m = math.fsum(fs) / n
    devs = [f - m for f in fs]
    s = math.fsum(d * d for d in devs)
    if s > FMAX[t] / 8:
        return 0.0, math.inf
    eps = EPS[t]
    dm = (n + 2) * eps * sa / n + TINY[t]
    sd = math.fsum(abs(d) for d in devs)
    e = (n + 4) * eps * s + 2 * (sd * dm + eps * math.fsum(abs(f) * abs(d) for f, d in
                                                         zip(fs, devs))) + n * dm * dm
    e = e * 2 + TINY[t] * (n + 2)
    return s / div, e / div + eps * s / div


def stats(prog, p, A):
    op = p["op"]
    x = prog.operand(A["x"])
    ft = x.t if x.t in FLOATS else "double"
    if op in ("var", "std"):
        if A.get("keepdim") and A.get("dims") is None:
            # (the whole is a Lua number, which keeps no dims: API.md, errors)
            raise Expected("keepdim needs a dim")
        c = A.get("correction", 1)
        axes = group_dims(x, A.get("dims"))
        fa = x.a.astype(np.float64) if x.t not in FLOATS else x.a
        outshape, rows = rows_of(fa, axes)
        res = [var_row([float(v) for v in r], ft, c) for r in rows]
        if op == "std":
            res = [(math.sqrt(v) if not math.isnan(v) else v,
                    math.sqrt(e) + 2 * EPS[ft] * math.sqrt(abs(v)) if not math.isnan(v) else e)
                   for v, e in res]
        if axes is None and A.get("dims") is None:
            v, e = res[0]
            return ("number", v, e, ft)
        r = np.array([v for v, _ in res], dtype=np.float64).astype(NP[ft]).reshape(outshape)
        err = np.array([e for _, e in res]).reshape(outshape)
        if A.get("keepdim"):
            for d in axes:
                r, err = np.expand_dims(r, d), np.expand_dims(err, d)
        return V(r, ft, err)
    # norm
    pp = A.get("p", 2)
    pp = lua_num(pp) if pp is not None else 2
    dims = A.get("dims")
    fa = np.abs(x.a.astype(np.float64) if x.t not in FLOATS else x.a)
    if pp in (math.inf, -math.inf):
        ax = V(fa.astype(NP[ft]), ft)
        op2 = "max" if pp > 0 else "min"
        if dims is None:
            flat = ax.a.reshape(-1)
            v, e = reduce_row(op2, ft, flat, np.zeros(flat.shape))
            return ("number", v, e, ft)
        if not isinstance(dims, list):
            return reduce_dim(op2, ax, dim0(x, dims), False)
        return mreduce(op2, ax, dims, False)
    axes = group_dims(x, dims)
    outshape, rows = rows_of(fa, axes)
    res = []
    for r in rows:
        fs = [float(v) for v in r]
        n = len(fs)
        if pp == 0:
            res.append((float(sum(1 for f in fs if f != 0)), 0.0))
            continue
        if any(math.isnan(f) for f in fs):
            res.append((math.nan, 0.0))
            continue
        if any(math.isinf(f) for f in fs):
            res.append((math.inf, 0.0))
            continue
        terms = [f ** pp if f != 0 or pp > 0 else math.inf for f in fs]
        s = math.fsum(terms)
        if s > FMAX[ft] / 8 or (max(fs) if fs else 0) > FMAX[ft] ** (1 / max(pp, 1)) / 4:
            res.append((0.0, math.inf))
            continue
        es = (n + 40) * EPS[ft] * s + TINY[ft] * (n + 4) * 64
        if pp == 1:
            res.append((s, es))
        else:
            v = s ** (1 / pp)
            rel = es / s if s > 0 else math.inf
            e = v * rel / pp * 2 + 40 * EPS[ft] * v + (TINY[ft] ** (1 / pp) * 4 if s < TINY[ft] * 1e6 else 0)
            if s == 0:
                e = es ** (1 / pp) * 2
            res.append((v, e))
    if dims is None:
        v, e = res[0]
        return ("number", v, e, ft)
    r = np.array([v for v, _ in res], dtype=np.float64).astype(NP[ft]).reshape(outshape)
    err = np.array([e for _, e in res]).reshape(outshape)
    return V(r, ft, err)


def einsum_eval(prog, A):
    spec = A["spec"]
    ops = [prog.operand(A["x"])] + ([prog.operand(A["y"])] if "y" in A else [])
    ins, _, outs = spec.partition("->")
    lists = [list(s) for s in ins.split(",")]
    if "->" in spec:
        out = list(outs)
    else:
        allc = [c for l in lists for c in l]
        out = sorted(c for c in set(allc) if allc.count(c) == 1)
    sizes = {}
    for l, o in zip(lists, ops):
        for c, n in zip(l, o.a.shape):
            sizes[c] = n
    # types: luagpu.tensor.einsum's steps. Integer operands: everything in
    # their promoted type (as NumPy's einsum, sums wrapping there); with a
    # float, an integer operand's own letters are summed first as x:sum does
    summed = []
    for i, l in enumerate(lists):
        others = set(c for j, m in enumerate(lists) if j != i for c in m)
        summed.append(any(c not in out and c not in others for c in l))
    t0 = ops[0].t if len(ops) == 1 else promote(ops[0].t, ops[1].t)
    if t0 in FLOATS:
        ts = [reduce_type("sum", o.t) if s and o.t not in FLOATS else o.t
              for o, s in zip(ops, summed)]
        t = ts[0] if len(ts) == 1 else promote(ts[0], ts[1])
    else:
        t = t0
    rt = t
    letters = sorted(sizes)
    rest = [c for c in letters if c not in out]
    shape = tuple(sizes[c] for c in out)
    vals, errs = [], []
    for oi in np.ndindex(*shape):
        env = dict(zip(out, oi))
        terms = []
        for ri in np.ndindex(*[sizes[c] for c in rest]):
            env.update(zip(rest, ri))
            term = None
            for l, o in zip(lists, ops):
                v = o.a[tuple(env[c] for c in l)]
                v = float(v) if rt in FLOATS else int(v)
                term = v if term is None else term * v
            if rt not in FLOATS and len(ops) == 2:
                term = int(wrap([term], t, ())[()])    # the product in t, then the sum
            terms.append(term)
        if rt in FLOATS:
            prods = [a for a in terms]
            v, e = float_sum(prods, rt)
            if math.isfinite(e):     # (else an overflow: fsum of the sizes would raise)
                e = e * 2 + (EPS[rt] * 4 * math.fsum(abs(a) for a in prods) if all(
                    math.isfinite(a) for a in prods) else 0)
            vals.append(v)
            errs.append(e)
        else:
            vals.append(sum(terms))
            errs.append(0)
    if rt in FLOATS:
        r = np.array(vals, dtype=np.float64).astype(NP[rt]).reshape(shape)
        return V(r, rt, np.array(errs).reshape(shape))
    return V(wrap(vals, rt, shape), rt)


def mm_eval(prog, A):
    """x:mm(y) and x:bmm(y) (API.md, Matrices): products of float (or of
    double) matrices, batched when 3-D (either 2-D, for x:mm, or of batch 1)."""
    x, y = prog.operand(A["x"]), prog.operand(A["y"])
    xa, ya = x.a, y.a
    faults = []
    if x.t != y.t or x.t not in FLOATS:
        faults.append("expected two tensors of float (or two of double)")
    if A.get("bmm"):
        if xa.ndim != 3 or ya.ndim != 3:
            faults.append("expected 3-D tensors")
    elif xa.ndim not in (2, 3) or ya.ndim not in (2, 3):
        faults.append("expected 2-D or 3-D tensors")
    if not faults or len(faults) == 1 and faults[0].startswith("expected two"):
        bx = xa.shape[0] if xa.ndim == 3 else 1
        by = ya.shape[0] if ya.ndim == 3 else 1
        if xa.shape[-1] != ya.shape[-2] or (bx != by and bx != 1 and by != 1):
            faults.append("do not multiply")
    if faults:
        raise Expected(*faults)
    t = x.t
    batch = xa.ndim == 3 or ya.ndim == 3
    xb = xa if xa.ndim == 3 else xa[None]
    yb = ya if ya.ndim == 3 else ya[None]
    nb = max(xb.shape[0], yb.shape[0])
    m, k, n = xb.shape[1], xb.shape[2], yb.shape[2]
    vals = np.zeros((nb, m, n))
    errs = np.zeros((nb, m, n))
    for bi in range(nb):
        xm = xb[bi if xb.shape[0] > 1 else 0]
        ym = yb[bi if yb.shape[0] > 1 else 0]
        for i in range(m):
            for j in range(n):
                prods = [float(xm[i, q]) * float(ym[q, j]) for q in range(k)]
                v, e = float_sum(prods, t)
                if math.isfinite(e):
                    e = e * 2 + (EPS[t] * 4 * math.fsum(abs(a) for a in prods) if all(
                        math.isfinite(a) for a in prods) else 0)
                vals[bi, i, j], errs[bi, i, j] = v, e
    if not batch:
        vals, errs = vals[0], errs[0]
    return V(vals.astype(NP[t]), t, errs)


def cumprod_eval(x, dim):
    if x.a.ndim == 0:
        raise Expected("at least 1 dim")
    d = x.a.ndim - 1 if dim is None else dim0(x, dim)
    moved = np.moveaxis(x.a, d, -1)
    L = moved.shape[-1]
    rows = int(np.prod(moved.shape[:-1]))
    out = np.zeros(moved.shape, dtype=NP[x.t])
    err = np.zeros(moved.shape)
    if rows and L:
        m2, o2, e2 = moved.reshape(rows, L), out.reshape(rows, L), err.reshape(rows, L)
        for i in range(rows):
            if x.t in FLOATS:
                acc, lg, hi, lo, res = 1.0, 0.0, 0.0, 0.0, []
                bad = False
                for j, v in enumerate(float(u) for u in m2[i]):
                    acc = acc * v
                    if v != 0 and math.isfinite(v):
                        lg += math.log2(abs(v))
                    hi, lo = max(hi, lg), min(lo, lg)
                    bits = 127 if x.t == "float" else 1023
                    bad = bad or hi > bits - 2 or lo < -bits + 26
                    o2[i, j] = acc
                    e2[i, j] = math.inf if bad else (j + 2) * 2 * EPS[x.t] * abs(acc)
            else:
                acc, res = 1, []
                for v in ints(m2[i]):
                    acc *= v
                    res.append(acc)
                o2[i] = wrap(res, x.t, (L,))
    return V(np.moveaxis(out, -1, d), x.t, np.moveaxis(err, -1, d))


# the names an op's errors start with (x[i] = v raises tensor:set's words
# for its value, as API.md says)
# ---------------------------------------------------------------- the ways of 2026-11-27

def row_special(op, r):
    """API.md, Row operations: the result of a row with a NaN, an infinite
    max or no elements (op's row as float64 list, or a number), else None."""
    L = len(r)
    if op == "logsumexp":
        if L == 0:
            return -math.inf
        if any(math.isnan(v) for v in r):
            return math.nan
        m = max(r)
        if math.isinf(m):
            return m
        return None
    if L == 0:
        return []
    if any(math.isnan(v) for v in r) or math.isinf(max(r)):
        return [math.nan] * L
    return None


def row_op(op, r, ft):
    """softmax, log_softmax or logsumexp of row r (float64 values): the
    values and their error bounds (lists), or a number and its bound."""
    sp = row_special(op, r)
    eps, tiny = EPS[ft], TINY[ft]
    L = len(r)
    if sp is not None:
        if op == "logsumexp":
            return sp, 0.0
        return sp, [0.0] * L
    m = max(r)
    es = [math.exp(v - m) for v in r]
    s = math.fsum(es)
    ls = math.log(s)
    n = 2 * L + 16
    if op == "logsumexp":
        return m + ls, eps * (2 * abs(m) + 2 * abs(ls) + n) + tiny
    out, err = [], []
    for v, e in zip(r, es):
        if v == -math.inf:
            out.append(0.0 if op == "softmax" else -math.inf)
            err.append(0.0)
        elif op == "softmax":
            out.append(e / s)
            err.append(e / s * eps * (abs(v - m) + n) + 4 * tiny)
        else:
            out.append((v - m) - ls)
            err.append(eps * (2 * abs(v - m) + 2 * abs(ls) + n) + tiny)
    return out, err


def rows_eval(prog, op, A):
    """x:softmax([dim]), x:log_softmax([dim]), x:logsumexp([dim [, keepdim]])."""
    x = prog.operand(A["x"])
    ft = floating(x.t)
    a = f64(cast(x.a, x.t, ft))
    if op == "logsumexp" and "dim" not in A:
        v, e = row_op(op, [float(u) for u in a.reshape(-1)], ft)
        return ("number", v, e, ft)
    if a.ndim == 0:
        raise Expected("at least 1 dim")
    d = a.ndim - 1 if "dim" not in A else dim0(x, A["dim"])
    moved = np.moveaxis(a, d, -1)
    L = moved.shape[-1]
    nrows = int(np.prod(moved.shape[:-1]))
    rows = moved.reshape(nrows, L)
    if op == "logsumexp":
        out, err = np.zeros(nrows), np.zeros(nrows)
        for i in range(nrows):
            out[i], err[i] = row_op(op, [float(u) for u in rows[i]], ft)
        shape = moved.shape[:-1]
        out, err = out.reshape(shape), err.reshape(shape)
        if A.get("keepdim"):
            out, err = np.expand_dims(out, d), np.expand_dims(err, d)
        return V(out.astype(NP[ft]), ft, err)
    out, err = np.zeros((nrows, L)), np.zeros((nrows, L))
    for i in range(nrows):
        o, e = row_op(op, [float(u) for u in rows[i]], ft)
        out[i], err[i] = o, e
    out = np.moveaxis(out.reshape(moved.shape), -1, d)
    err = np.moveaxis(err.reshape(moved.shape), -1, d)
    return V(out.astype(NP[ft]), ft, err)


def linspace_eval(A):
    """dev:linspace(t, first, last, count) (API.md): in double, the last
    element last exactly; integer types take the floor."""
    t = A["t"]
    first, last, count = lua_num(A["first"]), lua_num(A["last"]), lua_num(A["count"])
    phrases = []
    for v in (first, last):
        if not math.isfinite(v):
            phrases.append("expected a finite number")
        elif t not in FLOATS:
            f = math.floor(v)
            if f < RANGE[t][0] or f > RANGE[t][1]:
                phrases.append("does not fit")
    if is_float(count) or count < 0:
        if not (is_float(count) and count == math.floor(count) and count >= 0):
            phrases.append("count: expected an integer >= 0")
    if phrases:
        raise Expected(*phrases)
    count = int(count)
    if count == 1:
        vals = [float(first)]
    else:
        step = (float(last) - float(first)) / (count - 1) if count > 1 else 0.0
        vals = [float(first) + i * step for i in range(count)]
        if count > 1:
            vals[-1] = float(last)
    err = np.zeros(count)
    if t in FLOATS:
        out = np.array(vals, np.float64).astype(NP[t])
        err[:] = [2 * EPS[t] * abs(v) + TINY[t] for v in vals]
        return V(out, t, err)
    out = []
    for i, v in enumerate(vals):
        f = math.floor(v)
        if abs(v - round(v)) <= 1e-9 * max(1.0, abs(v)) and i not in (0, count - 1):
            err[i] = math.inf      # an integer in exact arithmetic: the floor may go either way
        out.append(f)
    return V(np.array(out, dtype=NP[t]), t, err)


def create_eval(prog, A):
    """The "create" programs: constructors, copies, item, NumPy spellings."""
    sub, t = A["sub"], A["t"]
    if sub in ("zeros", "ones"):
        return V(np.full(A["shape"], 0 if sub == "zeros" else 1, dtype=NP[t]), t)
    if sub == "full":
        v = lua_num(A["v"])
        fits(t, v)
        return V(np.full(A["shape"], number_as(v, t), dtype=NP[t]), t)
    if sub == "eye":
        return V(np.eye(A["n"], A.get("m", A["n"]), dtype=NP[t]), t)
    if sub == "linspace":
        return linspace_eval(A)
    if sub == "alias":
        return prog.eval(A["tree"])
    x = prog.operand(A["x"])
    if sub in ("clone", "contiguous"):
        return V(x.a.copy(), x.t)
    if sub == "item":
        if x.a.size != 1:
            raise Expected("expected a tensor of 1 element")
        v = x.a.reshape(-1)[0]
        return ("number", float(v) if x.t in FLOATS else int(v), 0.0, x.t)
    rt = A.get("type", x.t)
    if sub == "full_like":
        v = lua_num(A["v"])
        fits(rt, v)
        return V(np.full(x.a.shape, number_as(v, rt), dtype=NP[rt]), rt)
    return V(np.full(x.a.shape, 0 if sub == "zeros_like" else 1, dtype=NP[rt]), rt)


def create_names(A):
    """The names an error of a "create" program may give (API.md, Errors)."""
    sub = A["sub"]
    if sub in ("zeros", "ones", "full", "eye", "linspace"):
        return ("device:" + sub, "dev:" + sub)
    if sub == "alias":
        return ("tensor:" + A["alias"], "tensor:" + A["tree"]["op"])
    return ("tensor:" + sub,)


def paths_eval(prog, op, A):
    """The ops of D.OPSP that check.py had not: a V, a number or a list."""
    if op in ("sort", "argsort"):
        return scan(op, prog.operand(A["x"]), A.get("dim"), A.get("descending"))
    if op == "algo_sort":
        # algo.sort(keys, {values =, descending =, onesweep = true}): both
        # sorted in place (stable), and read back so afterwards
        k, v = prog.operand(A["keys"]), prog.operand(A["values"])
        order = sorted_positions(pyvals(k.a, k.t), k.t, bool(A.get("descending")))
        ka, va = k.a[order], v.a[order]
        k.a[...] = ka
        v.a[...] = va
        return ("list", [V(ka.copy(), k.t), V(va.copy(), v.t)])
    if op == "create":
        return create_eval(prog, A)
    return rows_eval(prog, op, A)


OP_NAMES = {"index": ("tensor[i]",), "setindex": ("tensor[i] =", "tensor:set"),
            "cat": ("gpu.cat",), "stack": ("gpu.stack",), "searchsorted": ("gpu.searchsorted",),
            "einsum": ("gpu.einsum",), "outer": ("gpu.outer",), "algo_sort": ("algo.sort",)}


def ops_eval(prog, p):
    """The result of an "ops" program (issue 32's ops): a V, ("number", v,
    err, t) or ("list", [...])."""
    op, A = p["op"], p["a"]
    if op in ("sort", "argsort", "algo_sort", "softmax", "log_softmax", "logsumexp", "create"):
        return paths_eval(prog, op, A)
    if op in ("var", "std", "norm"):
        return stats(prog, p, A)
    if op == "einsum":
        return einsum_eval(prog, A)
    if op == "mm":
        return mm_eval(prog, A)
    if op in ("cat", "stack"):
        xs = [prog.operand(k) for k in A["list"]]
        t = xs[0].t
        for v in xs[1:]:
            t = promote(t, v.t)
        first = xs[0]
        dim = A.get("dim", 1)
        if op == "stack":
            for v in xs:
                if v.a.shape != first.a.shape:
                    raise Expected("stack needs one shape")
            d = dim0(first, dim, 1)
            arrs = [np.expand_dims(cast(v.a, v.t, t), d) for v in xs]
        else:
            d = dim0(first, dim)
            for v in xs:
                if v.a.ndim != first.a.ndim:
                    raise Expected("dims, item 1")
                for k in range(v.a.ndim):
                    if k != d and v.a.shape[k] != first.a.shape[k]:
                        raise Expected("they may differ")
            arrs = [cast(v.a, v.t, t) for v in xs]
        return V(np.concatenate(arrs, axis=d), t)
    if op == "searchsorted":
        s = prog.operand(A["sorted"])
        t = s.t
        vals = A["values"]
        # API.md: compared in the type both promote to (a number: the
        # operators' rule, a Lua float making integers float)
        if isinstance(vals, dict):
            vv = prog.operand(vals["operand"])
        else:
            num = lua_num(vals)
            nt = "float" if is_float(num) and t not in FLOATS else t
            fits(nt, num)
            vv = V(number_as(num, nt), nt)
        ct = promote(t, vv.t)
        va = pyvals(cast(vv.a, vv.t, ct), ct)
        shape = vv.a.shape
        sv = pyvals(cast(s.a, t, ct), ct)
        key = sort_key(ct, False)
        if any(key(sv[j]) > key(sv[j + 1]) for j in range(len(sv) - 1)):
            raise Skip("sorted is not sorted in the promoted type (ulong from 2^63 as long)")
        right = A.get("right")

        def below(e, v):     # e sorts before v (NaN last, NaN equal to NaN, as NumPy)
            if isinstance(e, float) and math.isnan(e):
                return bool(right) and isinstance(v, float) and math.isnan(v)
            if isinstance(v, float) and math.isnan(v):
                return True
            return e < v if not right else e <= v
        out = [sum(1 for e in sv if below(e, v)) + 1 for v in va]
        return V(np.array(out, dtype=np.int64).reshape(shape), "long")
    x = prog.operand(A["x"])
    t, a, nd = x.t, x.a, x.a.ndim
    if op in ("index", "setindex"):
        if nd == 0:
            raise Expected("no dim to index")
        i = lua_num(A["i"])
        if isinstance(i, float):
            if i != math.floor(i):
                raise Expected("expected an integer position")
            i = int(i)
        k = pos0(i, a.shape[0])
        if op == "index":
            if nd == 1:
                return ("number", as_number(a[k], t), 0.0, t)
            return V(a[k], t)
        v = A["v"]
        v = prog.operand(v["operand"]) if isinstance(v, dict) else lua_num(v)
        set_into(a[k, ...], t, v)
        return V(a, t)
    if op in ("gather", "index_select"):
        d = dim0(x, A["dim"])
        idx = prog.operand(A["idx"])
        if op == "index_select":
            if idx.a.ndim != 1:
                raise Expected("expected a 1-D index tensor")
            shape = list(a.shape)
            shape[d] = idx.a.shape[0]
            if int(np.prod(shape)) == 0:
                return V(np.zeros(shape, NP[t]), t)
            return V(np.take(a, positions(idx, a.shape[d]), axis=d), t)
        ish = idx.a.shape
        if len(ish) != nd:
            raise Expected("the index tensor has")
        for k in range(nd):
            if k != d and ish[k] > a.shape[k]:
                raise Expected("exceeds")
        if idx.a.size == 0:
            return V(np.zeros(ish, NP[t]), t)
        sub = a[tuple(slice(0, ish[k]) if k != d else slice(None) for k in range(nd))]
        return V(np.take_along_axis(sub, positions(idx, a.shape[d]), axis=d), t)
    if op == "take":
        idx = prog.operand(A["idx"])
        if idx.a.size == 0:
            return V(np.zeros(idx.a.shape, NP[t]), t)
        if a.size == 0:
            raise Expected("has no elements to take")
        return V(a.reshape(-1)[positions(idx, a.size)], t)
    if op in ("scatter", "scatter_add"):
        src = A["src"]
        A = dict(A)
        A["src"] = src if isinstance(src, dict) else lua_num(src)
        return scatter_like(prog, A, x, op == "scatter_add")
    if op == "put":
        idx = prog.operand(A["idx"])
        v = A["v"]
        v = values_of(x, prog.operand(v["operand"]) if isinstance(v, dict) else lua_num(v))
        if v.a.ndim > 0 and v.a.size != idx.a.size:
            raise Expected("values (one per position)")
        if idx.a.size == 0:
            return V(a, t)
        if a.size == 0:
            raise Expected("no elements to put into")
        pos = positions(idx, a.size).reshape(-1)
        vals = np.array(v.a).reshape(-1) if v.a.ndim > 0 else np.repeat(v.a, pos.size)
        flat = np.array(a).reshape(-1)
        ferr = np.zeros(flat.shape)
        seen = {}
        for q, u in zip(pos, vals):
            seen.setdefault(int(q), []).append(u)
        for q, us in seen.items():
            flat[q] = us[-1]
            if len(us) > 1 and len(set(repr(float(u)) if t in FLOATS else int(u) for u in us)) > 1:
                ferr[q] = math.inf
        if not a.flags.writeable:
            raise Skip("a write into a broadcast view")
        a[...] = flat.reshape(a.shape)
        if ferr.any():
            o = p["operands"][A["x"] - 1]
            view(prog.errs[o["input"] - 1], o["views"])[...] = ferr.reshape(a.shape)
            return V(a, t, ferr.reshape(a.shape))
        return V(a, t)
    if op in ("masked_fill", "masked_select"):
        m = prog.operand(A["mask"])
        if op == "masked_fill":
            fits(t, lua_num(A["v"]))
        try:
            mb = np.broadcast_to(m.a != 0, a.shape)
            if len(m.a.shape) > nd:
                raise ValueError
        except ValueError:
            raise Expected("tensor:%s: argument #1: the mask's shape" % op)
        if op == "masked_select":
            return V(a[mb], t)
        return V(np.where(mb, number_as(lua_num(A["v"]), t), a).astype(NP[t]), t)
    if op == "nonzero":
        cnt = int(np.count_nonzero(a != 0))
        return V((np.argwhere(a != 0) + 1).astype(np.int64).reshape(cnt, nd), "long")
    if op == "squeeze":
        if "dim" in A:
            d = dim0(x, A["dim"])
            return V(np.squeeze(a, d) if a.shape[d] == 1 else a, t)
        return V(np.squeeze(a), t)
    if op == "unsqueeze":
        if nd >= 8:
            raise Expected("dims already")
        return V(np.expand_dims(a, dim0(x, A["dim"], 1)), t)
    if op == "flatten":
        return V(a.reshape(-1), t)
    if op == "flip":
        dims = A["dims"] if isinstance(A["dims"], list) else [A["dims"]]
        ds = []
        for dm in dims:
            d = dim0(x, dm)
            if d in ds:
                raise Expected("appears twice")
            ds.append(d)
        return V(np.flip(a, ds), t)
    if op == "roll":
        d = dim0(x, A["dim"])
        return V(np.roll(a, A["shift"], axis=d), t)
    if op in ("tril", "triu"):
        if nd < 2:
            raise Expected("at least 2 dims")
        f = np.tril if op == "tril" else np.triu
        return V(f(a, A.get("k", 0)), t)
    if op == "repeat_tiles":
        reps = A["reps"] if isinstance(A["reps"], list) else [A["reps"]]
        if max(len(reps), nd) > 8:
            raise Expected("too many")
        return V(np.tile(a, reps) if reps else np.array(a), t)
    if op == "pad":
        w = A["widths"]
        if isinstance(w, list):
            if len(w) != nd:
                raise Expected("pairs {before, after}")
            pairs = w
        else:
            pairs = [[w, w]] * nd
        v = lua_num(A.get("v", 0))
        fits(t, v)
        shape = tuple(n + b + e for n, (b, e) in zip(a.shape, pairs))
        out = np.empty(shape, NP[t])
        out[...] = number_as(v, t)
        if a.size:
            out[tuple(slice(b, b + n) for n, (b, e) in zip(a.shape, pairs))] = a
        return V(out, t)
    if op in ("split", "chunk"):
        size = A["size"]
        if op == "chunk":
            d = dim0(x, A.get("dim", 1))
            size = max(1, -(-a.shape[d] // size))
        d = dim0(x, A.get("dim", 1))
        L = a.shape[d]
        if isinstance(size, list):
            if sum(size) != L:
                raise Expected("add up to")
            sizes = size
        else:
            sizes = [min(size, L - f) for f in range(0, L, size)] or [0]
        parts, f = [], 0
        for n in sizes:
            idx = [slice(None)] * nd
            idx[d] = slice(f, f + n)
            parts.append(V(a[tuple(idx)], t))
            f += n
        return ("list", parts)
    if op == "cumprod":
        return cumprod_eval(x, A.get("dim"))
    if op == "mreduce" and "type" in A:
        # API.md, Reductions: type= converts the input first, accumulates in
        # that type and gives it
        T = A["type"]
        B = dict(A)
        del B["type"]
        r = ops_eval(prog, dict(p, a=dict(B, x=A["x"]), op="mreduce", _x=astype(x, T)))
        return astype(r, T) if r.t != T else r
    if op == "mreduce":
        if "_x" in p:
            x = p["_x"]
        rop, dims = A["rop"], A["dims"]
        if isinstance(dims, list):
            if len(dims) == 1:
                dims = dims[0]
            else:
                return mreduce(rop, x, dims, A.get("keepdim"))
        if rop in ("any", "all"):
            return mreduce(rop, x, [dims], A.get("keepdim"))
        return reduce_dim(rop, x, dim0(x, dims), A.get("keepdim"))
    if op == "median":
        if "dim" not in A:
            if a.size == 0:
                if t in FLOATS:
                    return ("number", math.nan, 0.0, t)
                raise Expected("is undefined (it holds no NaN)")
            vals = pyvals(a, t)
            order = sorted_positions(vals, t)
            # API.md: a NaN makes the median NaN (NumPy, PyTorch); NaN sorts last
            last = vals[order[-1]]
            if last != last:
                return ("number", last, 0.0, t)
            return ("number", vals[order[(len(vals) + 1) // 2 - 1]], 0.0, t)
        if nd == 0:   # O.check_one_dim_at: a 0-d tensor, a dim given or not
            raise Expected("at least 1 dim")
        d = dim0(x, A["dim"])
        L = a.shape[d]
        if L == 0:
            raise Expected("the median of an empty dim is undefined")
        moved = np.moveaxis(a, d, -1)
        pos = np.zeros(moved.shape[:-1], np.int64)
        for j in np.ndindex(*moved.shape[:-1]):
            row = pyvals(moved[j], t)
            order = sorted_positions(row, t)
            numbers = sum(1 for v in row if v == v)
            # a row with NaNs: its first NaN in sorted order
            pos[j] = order[numbers] if numbers < L else order[(L + 1) // 2 - 1]
        vals = np.take_along_axis(moved, pos[..., None], axis=-1)[..., 0]
        return ("list", [V(np.array(vals), t), V(pos + 1, "long")])
    if op == "topk":
        if nd == 0:
            raise Expected("at least 1 dim")
        d = nd - 1 if "dim" not in A else dim0(x, A["dim"])
        L, k = a.shape[d], A["k"]
        if k < 0 or k > L:
            raise Expected("expected k from")
        moved = np.moveaxis(a, d, -1)
        pos = np.zeros(moved.shape[:-1] + (k,), np.int64)
        for j in np.ndindex(*moved.shape[:-1]):
            order = sorted_positions(pyvals(moved[j], t), t, A.get("largest", True))
            pos[j] = order[:k]
        vals = np.take_along_axis(moved, pos, axis=-1)
        return ("list", [V(np.moveaxis(vals, -1, d), t), V(np.moveaxis(pos + 1, -1, d), "long")])
    if op == "unique":
        vals = pyvals(a, t)
        order = sorted_positions(vals, t)
        flat = a.reshape(-1)
        uv, uc = [], []
        for j in order:
            v = vals[j]
            if uv and (vals[uv[-1]] == v or (t in FLOATS and math.isnan(v) and
                                              math.isnan(vals[uv[-1]]))):
                uc[-1] += 1
            else:
                uv.append(j)
                uc.append(1)
        return ("list", [V(np.array([flat[j] for j in uv], NP[t]), t),
                         V(np.array(uc, np.int64), "long")])
    if op == "bincount":
        if nd != 1 or t in FLOATS:
            raise Expected("expected a 1-D tensor of integers")
        bins = A.get("bins", 0)
        vals = ints(a)
        if vals and min(vals) < 0:
            raise Expected("expected values >= 0")
        nb = max([bins] + [v + 1 for v in vals])
        out = [0] * nb
        for v in vals:
            out[v] += 1
        return V(np.array(out, np.int64), "long")
    if op in ("dot", "outer"):
        y = prog.operand(A["y"])
        if op == "dot":
            if nd != 1 or y.a.ndim != 1 or a.shape != y.a.shape:
                raise Expected("expected two 1-D tensors of one length")
            # API.md: integers below 64 bits multiply in long (sum's accumulator)
            pt = promote(x.t, y.t)
            if pt not in FLOATS and pt not in ("long", "ulong"):
                x = V(x.a.astype(np.int64), "long", x.err)
                y = V(y.a.astype(np.int64), "long", y.err)
            pr = binary("mul", x, y)
            flat = pr.a.reshape(-1)
            v, e = reduce_row("sum", pr.t, flat, pr.e().reshape(-1))
            return ("number", v, e, reduce_type("sum", pr.t))
        return binary("mul", V(a.reshape(-1, 1), t), V(y.a.reshape(1, -1), y.t))
    raise ValueError(op)


# ---------------------------------------------------------------- comparing

def got_values(res):
    t = res["t"]
    vals = [lua_num(v) for v in res["vals"]]
    if t not in FLOATS:
        vals = [v & M64 if v < 0 and t == "ulong" else v for v in vals]
    return np.array(vals, dtype=NP[t]).reshape(res["shape"])


def differ(want, got, t, err):
    """The positions where got is not want within err: a bool array."""
    if t not in FLOATS:
        bad = want.astype(object) != got.astype(object) if t in ("ulong", "long") else \
            want != got
        if err is not None:
            bad = bad & ~(np.broadcast_to(err, want.shape) > 0)
        return np.asarray(bad)
    w, g = f64(want), f64(got)
    e = np.zeros(w.shape) if err is None else np.broadcast_to(err, w.shape)
    both_nan = np.isnan(w) & np.isnan(g)
    same = (w == g) & ((w != 0) | (np.signbit(w) == np.signbit(g)) | (e > 0))
    close = np.abs(w - g) <= 2 * e
    return ~(both_nan | same | close | np.isinf(e) | np.isnan(e))


def fmt(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return repr(v)
    return str(v)


class Mismatch(Exception):
    pass


def compare_tensor(what, want, res):
    if res is None or "t" not in res:
        raise Mismatch("%s: expected a %s tensor of shape %s, got %s" %
                       (what, want.t, list(want.a.shape), json.dumps(res)))
    if res["t"] != want.t:
        raise Mismatch("%s: type %s, expected %s" % (what, res["t"], want.t))
    if list(res["shape"]) != list(want.a.shape):
        raise Mismatch("%s: shape %s, expected %s" % (what, res["shape"], list(want.a.shape)))
    got = got_values(res)
    bad = differ(want.a, got, want.t, want.err)
    if bad.any():
        idx = [()] if bad.ndim == 0 else list(zip(*np.nonzero(bad)))
        shown = []
        for i in idx[:4]:
            e = 0.0 if want.err is None else float(np.broadcast_to(want.err, want.a.shape)[i])
            e = " (+-%g)" % e if e > 0 else ""
            shown.append("at %s: %s, NumPy %s%s" % ([int(j) + 1 for j in i],
                                                   fmt(got[i].item()), fmt(want.a[i].item()), e))
        raise Mismatch("%s: %d of %d elements differ: %s" % (what, len(idx), bad.size,
                                                             "; ".join(shown)))


def compare_number(what, want, err, t, res):
    if res is None or "number" not in res:
        raise Mismatch("%s: expected a number, got %s" % (what, json.dumps(res)))
    g = lua_num(res["number"])
    if t not in FLOATS:
        if isinstance(g, float):
            raise Mismatch("%s: %r is a float, expected an integer" % (what, g))
        if err and err > 0:
            return
        if (g - want) % (1 << 64) != 0:
            raise Mismatch("%s: %s, NumPy %s" % (what, g, want))
        return
    if isinstance(want, float) and math.isnan(want):
        if not (isinstance(g, float) and math.isnan(g)) and not math.isinf(err):
            raise Mismatch("%s: %s, NumPy nan" % (what, fmt(g)))
        return
    if math.isinf(err) or math.isnan(err):
        return
    if isinstance(g, float) and math.isnan(g):
        raise Mismatch("%s: nan, NumPy %s" % (what, fmt(want)))
    if g == want or abs(g - want) <= 2 * err:
        return
    raise Mismatch("%s: %s, NumPy %s (+-%g)" % (what, fmt(g), fmt(want), err))


def run(p):
    """Replays program p; returns None when luagpu agrees, else the reason."""
    prog = Program(p)
    kind = p["kind"]
    with np.errstate(all="ignore"):
        try:
            if kind == "set":
                tgt = prog.operand(p["target"])
                value = prog.eval(p["value"])
                target = tgt.a
                if isinstance(value, V):
                    # API.md, set: v's type must promote to x's, its shape
                    # broadcast to x's
                    if promote(tgt.t, value.t) != tgt.t:
                        raise Expected("without a loss")
                    try:
                        b = np.broadcast_shapes(target.shape, value.a.shape)
                    except ValueError:
                        b = None
                    if b != target.shape:
                        raise Expected("does not broadcast to")
                    v = copy_v(value)        # v is read before x is written
                    src = cast(v.a, v.t, tgt.t)
                    err = v.err
                else:
                    fits(tgt.t, value)
                    src = number_as(value, tgt.t)
                    err = None
                if not target.flags.writeable:
                    raise Skip("a write into a broadcast view")
                target[...] = src
                want = V(target, tgt.t, None if err is None else
                         np.broadcast_to(err, target.shape))
                if err is not None:
                    o = p["operands"][p["target"] - 1]
                    view(prog.errs[o["input"] - 1], o["views"])[...] = err
            elif kind == "ops":
                want = ops_eval(prog, p)
            else:
                x = prog.eval(p["tree"])
                if not isinstance(x, V):
                    raise Skip("a tree without a tensor")
                if "write" in p:
                    # an input written after the expression was made: the
                    # expression keeps the values before (API.md, Fusion:
                    # results always equal eager evaluation); a view sees
                    # the write
                    if p["tree"]["op"] != "leaf":
                        x = copy_v(x)
                    w = p["write"]
                    arr = prog.arrays[w["input"] - 1]
                    arr[...] = number_as(w["v"], p["inputs"][w["input"] - 1]["t"])
                if kind == "elem":
                    want = x
                elif kind == "reduce":
                    op = p["op"]
                    if p.get("dim") is None:
                        flat = V(x.a.reshape(-1), x.t, x.e().reshape(-1))
                        v, e = reduce_row(op, x.t, flat.a, flat.err)
                        want = ("number", v, e, reduce_type(op, x.t))
                    else:
                        d = check_dim(x, p["dim"])
                        want = reduce_dim(op, x, d, p.get("keepdim"))
                else:
                    want = scan(kind, x, p.get("dim"), p.get("descending"))
        except Expected as ex:
            if "error" not in p:
                return "luagpu gave a result where it must raise (%s)" % ex
            msg = re.sub(r"^program:\d+: ", "", p["error"])   # raised at the caller's line
            if not msg.startswith("luagpu:") or "traceback" in msg or \
                    not any(ph in msg for ph in ex.phrases):
                return "luagpu raised %r; expected a 'luagpu: ...' error saying %s" % (msg, ex)
            if kind == "ops":
                # API.md, Errors: the message names the operation called
                names = OP_NAMES.get(p["op"], ("tensor:" + p["op"],))
                if p["op"] == "mreduce":
                    names = ("tensor:" + p["a"]["rop"],)
                if p["op"] == "mm" and p["a"].get("bmm"):
                    names = ("tensor:bmm",)
                if p["op"] == "create":
                    names = create_names(p["a"])
                if not any(msg.startswith("luagpu: %s: " % n) for n in names):
                    return "luagpu raised %r; expected it to name %s" % (msg, " or ".join(names))
            return None
        if "error" in p:
            msg = p["error"]
            return "luagpu raised %r" % (msg if len(msg) < 400 else msg[:400] + "...")
        res = p.get("result")
        try:
            if isinstance(want, tuple) and want[0] == "list":
                if res is None or "list" not in res or len(res["list"]) != len(want[1]):
                    raise Mismatch("result: expected %d results, got %s" %
                                   (len(want[1]), json.dumps(res)[:300]))
                for i, (w, r) in enumerate(zip(want[1], res["list"])):
                    if isinstance(w, tuple):
                        compare_number("result %d" % (i + 1), w[1], w[2], w[3], r)
                    else:
                        compare_tensor("result %d" % (i + 1), w, r)
            elif isinstance(want, tuple):
                compare_number("result", want[1], want[2], want[3], res)
            else:
                compare_tensor("result", want, res)
            # every input after the program: as made, or as set wrote it
            for k, inp in enumerate(prog.p["inputs"]):
                got = p.get("post", [])
                if k >= len(got) or got[k] is None:
                    continue
                arr = prog.arrays[k]
                e = prog.errs[k]
                compare_tensor("input a%d afterwards" % (k + 1),
                               V(arr, inp["t"], e if e.any() else None),
                               {"t": inp["t"], "shape": list(arr.shape), "vals": got[k]})
        except Mismatch as m:
            return str(m)
    return None


def reproducer(p, why):
    return ("-- program %d (family %d, %s): %s\nlocal gpu = require \"luagpu\"\n"
            "local dev = gpu.devices()[1]\n%s\nprint(out)" %
            (p["id"], p["family"], p["kind"], why, p["lua"]))


def main(argv):
    path = argv[1]
    most = 20
    if "--max" in argv:
        most = int(argv[argv.index("--max") + 1])
    total = bad = raised = skipped = 0
    shown = set()
    with open(path) as f:
        for line in f:
            p = json.loads(line)
            total += 1
            try:
                why = run(p)
            except Skip:
                skipped += 1
                continue
            except Exception as ex:     # the checker's own failure: a mismatch too
                why = "check.py failed: %r" % ex
            if "error" in p and why is None:
                raised += 1
            if why:
                bad += 1
                key = (p["family"], why.split(":")[0])
                if "--all" in argv or (len(shown) < most and key not in shown):
                    shown.add(key)
                    print(reproducer(p, why))
                    print()
    print("differential: %d programs, %d mismatches, %d raised as expected, %d skipped" %
          (total, bad, raised, skipped))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
