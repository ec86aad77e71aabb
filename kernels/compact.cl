/*
** compact.cl: luagpu.algo's stream compaction (lua/luagpu/algo/compact.lua):
** copy_if, nonzero and partition, and the tensors' masked_select, unique and
** nonzero (below: tiled). pos holds the inclusive scan of the
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

/*
** Tiled selection (tensor:masked_select, tensor:unique, tensor:nonzero):
** the input cut into tiles of L * IPT elements, one group a tile.
** compact_tile_counts counts each tile's kept elements; their inclusive
** scan (an algo scan, in incl) places each tile; compact_tile_select then
** writes the kept elements of its tile there, in order. The input is read
** twice and nothing of n elements is written but the output (the per-element
** scan above writes and reads n positions).
** The helper prepends also: MT (the mask's element type), RUNS, L, IPT
** (at most 32). KEEP(i), element i kept: with RUNS, where a run of equal
** values of the sorted m (x itself) starts, as compact_run_starts; else
** where m is not 0.
*/
#ifdef IPT
#define TILE_ITEMS ((ulong)L * IPT)
#if RUNS
#define KEEP(i) ((i) == 0 || (m[moff + (i)] != m[moff + (i) - 1] && \
                              m[moff + (i) - 1] == m[moff + (i) - 1]))
#else
#define KEEP(i) (m[moff + (i)] != 0)
#endif

__kernel void compact_tile_counts(__global const MT *m, ulong moff, ulong n,
                                  __global uint *counts) {
  __local uint ls[L];
  uint lid = get_local_id(0), k, c = 0;
  ulong base = (ulong)get_group_id(0) * TILE_ITEMS;
  for (k = 0; k < IPT; k++) {
    ulong i = base + (ulong)k * L + lid;       /* (coalesced) */
    if (i < n && KEEP(i)) c++;
  }
  ls[lid] = c;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (k = L / 2; k > 0; k >>= 1) {
    if (lid < k) ls[lid] += ls[lid + k];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) counts[get_group_id(0)] = ls[0];
}

/* The kept elements of this group's tile: x's to out, and with at their
** 1-based positions to at (at alone when x is NULL), from the tile's place
** (incl: the inclusive scan of the tiles' counts). A work-item takes IPT
** consecutive elements: its kept ones go to consecutive places. */
inline void lg_tile_select(__global const T *x, ulong xoff, __global const MT *m, ulong moff,
                           ulong n, __global const uint *incl, __global T *out, ulong ooff,
                           __global IT *at, ulong aoff, __local uint *ts) {
  uint lid = get_local_id(0), g = get_group_id(0), j, off, src = 0, bits = 0, c = 0, p;
  ulong c0 = (ulong)g * TILE_ITEMS + (ulong)lid * IPT;
  for (j = 0; j < IPT; j++) {
    ulong i = c0 + j;
    if (i < n && KEEP(i)) { bits |= 1u << j; c++; }
  }
  /* the exclusive scan of the work-items' counts (Hillis-Steele) */
  ts[lid] = c;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (off = 1; off < L; off <<= 1) {
    uint v = ts[src + lid];
    if (lid >= off) v += ts[src + lid - off];
    src ^= L;
    ts[src + lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  p = (g ? incl[g - 1] : 0u) + ts[src + lid] - c;
  for (j = 0; j < IPT; j++) {
    if ((bits >> j) & 1u) {
      ulong i = c0 + j;
      if (x) out[ooff + p] = x[xoff + i];
      if (at) at[aoff + p] = (IT)(i + 1);
      p++;
    }
  }
}

__kernel void compact_tile_select(__global const T *x, ulong xoff, __global const MT *m,
                                  ulong moff, ulong n, __global const uint *incl,
                                  __global T *out, ulong ooff) {
  __local uint ts[2 * L];
  lg_tile_select(x, xoff, m, moff, n, incl, out, ooff, 0, 0, ts);
}

__kernel void compact_tile_select_at(__global const T *x, ulong xoff, __global const MT *m,
                                     ulong moff, ulong n, __global const uint *incl,
                                     __global T *out, ulong ooff, __global IT *at, ulong aoff) {
  __local uint ts[2 * L];
  lg_tile_select(x, xoff, m, moff, n, incl, out, ooff, at, aoff, ts);
}

__kernel void compact_tile_positions(__global const MT *m, ulong moff, ulong n,
                                     __global const uint *incl, __global IT *at, ulong aoff) {
  __local uint ts[2 * L];
  lg_tile_select(0, 0, m, moff, n, incl, 0, 0, at, aoff, ts);
}
#endif
