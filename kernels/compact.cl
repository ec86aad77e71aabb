/*
** compact.cl: luagpu.algo's stream compaction (lua/luagpu/algo/compact.lua):
** copy_if, nonzero, partition, and the tensors' masked_select. pos holds the inclusive scan of the
** predicate over the input (an algo scan with the predicate as its map),
** so a kept element i goes to pos[i] - 1, and there are pos[n - 1] of them.
**
** The helper prepends: T (input element type), IT (type of written
** positions), PRED (an expression in x, the element, and i, its 0-based
** index: non-zero keeps it).
*/

inline int lg_keep(T x, ulong i) { return (PRED) ? 1 : 0; }

/* The kept elements, in order, to out from ooff. */
__kernel void compact_values(__global const T *x, ulong xoff, __global const uint *pos,
                             ulong n, __global T *out, ulong ooff) {
  ulong i = get_global_id(0);
  if (i < n) {
    T v = x[xoff + i];
    if (lg_keep(v, i)) out[ooff + pos[i] - 1] = v;
  }
}

/* The positions of the kept elements (0-based, plus base), in order. */
__kernel void compact_positions(__global const T *x, ulong xoff, __global const uint *pos,
                                ulong n, __global IT *out, ulong ooff, uint base) {
  ulong i = get_global_id(0);
  if (i < n && lg_keep(x[xoff + i], i)) out[ooff + pos[i] - 1] = (IT)(i + base);
}

/* The elements of x kept by another input's scan in pos (element i kept
** where pos steps up at i): tensor:masked_select, by its mask. */
__kernel void compact_stepped(__global const T *x, ulong xoff, __global const uint *pos,
                              ulong n, __global T *out, ulong ooff) {
  ulong i = get_global_id(0);
  if (i < n) {
    uint p = pos[i];
    if (p != (i > 0 ? pos[i - 1] : 0u)) out[ooff + p - 1] = x[xoff + i];
  }
}

/* compact_stepped, also writing each kept element's 1-based position in x
** to at (tensor:unique: where each run of equal values starts). */
__kernel void compact_stepped_at(__global const T *x, ulong xoff, __global const uint *pos,
                                 ulong n, __global T *out, ulong ooff, __global long *at,
                                 ulong aoff) {
  ulong i = get_global_id(0);
  if (i < n) {
    uint p = pos[i];
    if (p != (i > 0 ? pos[i - 1] : 0u)) {
      out[ooff + p - 1] = x[xoff + i];
      at[aoff + p - 1] = (long)(i + 1);
    }
  }
}

/* tensor:unique, on sorted x: 1 in starts where a run of equal values
** begins (the first element; an element that differs from the one before,
** unless that one is NaN: the NaNs sorted last are one run). */
__kernel void compact_run_starts(__global const T *x, ulong xoff, ulong n,
                                 __global uchar *starts, ulong soff) {
  ulong i = get_global_id(0);
  if (i < n) {
    uchar s = 1;
    if (i > 0) {
      T a = x[xoff + i], b = x[xoff + i - 1];
      s = (a != b && b == b) ? 1 : 0;
    }
    starts[soff + i] = s;
  }
}

/* tensor:unique: the length of each of the c runs, from where each starts
** (at: 1-based positions in the n sorted elements, ascending). */
__kernel void compact_run_lengths(__global const long *at, ulong aoff, ulong c, ulong n,
                                  __global long *out, ulong ooff) {
  ulong k = get_global_id(0);
  if (k < c) {
    ulong next = k + 1 < c ? (ulong)at[aoff + k + 1] : n + 1;
    out[ooff + k] = (long)(next - (ulong)at[aoff + k]);
  }
}

/* The kept elements, in order, then the others, in order. */
__kernel void compact_partition(__global const T *x, ulong xoff, __global const uint *pos,
                                ulong n, __global T *out, ulong ooff) {
  ulong i = get_global_id(0);
  if (i < n) {
    T v = x[xoff + i];
    ulong kept = pos[n - 1];
    if (lg_keep(v, i)) out[ooff + pos[i] - 1] = v;
    else out[ooff + kept + i - pos[i]] = v;
  }
}
