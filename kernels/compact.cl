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

/* tensor:unique: the length of each run, from where each starts (at:
** 1-based positions in the n sorted elements, ascending). The count of
** runs is read here, from the selection's scanned tile counts (total[tix]):
** the host may launch before it has read it, with a work-item per element. */
__kernel void compact_run_lengths(__global const long *at, ulong aoff,
                                  __global const uint *total, ulong tix, ulong n,
                                  __global long *out, ulong ooff) {
  ulong k = get_global_id(0);
  ulong c = total[tix];
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
** scan (an algo scan, in incl) places each tile; the select kernels then
** write the kept elements of their tile there, in order. Nothing of n
** elements is written but the output (a scan per element writes and reads
** back a position per element).
** A select kernel stages its tile through local memory: the flags and the
** kept values come in coalesced, each work-item then takes IPT consecutive
** flags (their count's exclusive scan over the group places them), packs
** its kept values into lo, and the group writes lo out coalesced.
** Not STAGED (CPUs), a work-item walks a tile of L * IPT elements alone.
** The helper prepends also: MT (the mask's element type), RUNS, STAGED, L,
** IPT (16 when STAGED), KIND (below), LOOKBACK (STAGED, KIND 2: below). KEEP(i), element i kept: with RUNS, where a run of equal values of
** the sorted m (x itself) starts, as tensor:unique counts runs (NaNs,
** sorted last, one run); else where m is not 0.
*/
#ifdef IPT
#define TILE_ITEMS ((uint)L * IPT)
#if RUNS
#define KEEP(i) ((i) == 0 || (m[moff + (i)] != m[moff + (i) - 1] && \
                              m[moff + (i) - 1] == m[moff + (i) - 1]))
#else
#define KEEP(i) (m[moff + (i)] != 0)
#endif
/* one pad element per 16: work-items reading IPT consecutive values of lx
** fall in different banks */
#define LPAD(c) ((c) + ((c) >> 4))
#define LX_ITEMS (TILE_ITEMS + TILE_ITEMS / 16)
/* where tile g's kept elements go */
#define TILE_PLACE(incl, g) ((g) ? (ulong)(incl)[(g) - 1] : 0ul)

#if STAGED
/* KEEP(i) of this work-item's IPT elements of the tile from base (element
** k * L + lid: coalesced) into f. A whole tile is read without a test per
** element (unrolled: the loads go out together), the last one tested. */
inline void lg_tile_keep(__global const MT *m, ulong moff, ulong n, ulong base, uchar *f) {
  uint lid = get_local_id(0), k;
  if (base + TILE_ITEMS <= n) {
#pragma unroll
    for (k = 0; k < IPT; k++) f[k] = KEEP(base + k * L + lid) ? 1 : 0;
  } else {
#pragma unroll
    for (k = 0; k < IPT; k++) {
      ulong i = base + k * L + lid;
      f[k] = i < n && KEEP(i) ? 1 : 0;
    }
  }
}

__kernel void compact_tile_counts(__global const MT *m, ulong moff, ulong n,
                                  __global uint *counts) {
  __local uint ls[L];
  uint lid = get_local_id(0), k, c = 0;
  uchar f[IPT];
  lg_tile_keep(m, moff, n, (ulong)get_group_id(0) * TILE_ITEMS, f);
#pragma unroll
  for (k = 0; k < IPT; k++) c += f[k];
  ls[lid] = c;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (k = L / 2; k > 0; k >>= 1) {
    if (lid < k) ls[lid] += ls[lid + k];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) counts[get_group_id(0)] = ls[0];
}

/* The tile's flags into lf and, with lx, its kept values of x into lx
** (coalesced). Returns this work-item's IPT consecutive flags as bits and
** sets *before (the kept ones of the work-items before it) and *total (the
** tile's). */
inline uint lg_tile_flags(__global const T *x, ulong xoff, __global const MT *m, ulong moff,
                          ulong n, ulong base, __local uchar *lf, __local T *lx,
                          __local uint *ts, uint *before, uint *total) {
  uint lid = get_local_id(0), k, j, off, src = 0, bits = 0, c = 0;
  uchar f[IPT];
  lg_tile_keep(m, moff, n, base, f);
#pragma unroll
  for (k = 0; k < IPT; k++) {
    uint t = k * L + lid;
    lf[t] = f[k];
    if (lx && f[k]) lx[LPAD(t)] = x[xoff + base + t];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (j = 0; j < IPT; j++) {
    uint b = lf[lid * IPT + j];
    bits |= b << j;
    c += b;
  }
  /* the inclusive scan of the work-items' counts (Hillis-Steele) */
  ts[lid] = c;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (off = 1; off < L; off <<= 1) {
    uint v = ts[src + lid];
    if (lid >= off) v += ts[src + lid - off];
    src ^= L;
    ts[src + lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  *before = ts[src + lid] - c;
  *total = ts[src + L - 1];
  return bits;
}

/* This work-item's kept values (from lx) packed into lo from before, then
** the tile's total of them written from lo to out + place (coalesced). */
inline void lg_tile_write_values(uint bits, uint before, uint total, __local const T *lx,
                                 __local T *lo, __global T *out, ulong place) {
  uint lid = get_local_id(0), j, c0 = lid * IPT, p = before;
  for (j = 0; j < IPT; j++)
    if ((bits >> j) & 1u) lo[p++] = lx[LPAD(c0 + j)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (j = lid; j < total; j += L) out[place + j] = lo[j];
}

/* The same for the kept elements' 1-based positions, to at + place. */
inline void lg_tile_write_positions(uint bits, uint before, uint total, ulong base,
                                    __local IT *lo, __global IT *at, ulong place) {
  uint lid = get_local_id(0), j, c0 = lid * IPT, p = before;
  for (j = 0; j < IPT; j++)
    if ((bits >> j) & 1u) lo[p++] = (IT)(base + c0 + j + 1);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (j = lid; j < total; j += L) at[place + j] = lo[j];
}

#if LOOKBACK
/* With LOOKBACK (GPUs, tensor:unique's select_at) the select kernel places
** its tile itself, in one pass, as algo.scan's scan_lookback does: groups
** take tiles in the order of a ticket counter (a uint, 0 between calls:
** the group that takes the last ticket puts it back), each publishes its
** count in words[2t] and, once it has the count of the tiles before it
** (from their words, LB a round), the count of tiles 0..t in words[2t + 1];
** a word is count << 32 | epoch << 3 | inclusive << 1 | 1, one 64-bit
** store, tagged with the call's epoch (no clearing between calls). The
** last tile writes the total to *count. No counts kernel, no scan, and
** the host reads the total after the launches. */
#define CWORD(v, incl, epoch) ((ulong)(v) << 32 | (ulong)(epoch) << 3 | (ulong)(incl) << 1 | 1ul)
#define CWORD_READY(w, epoch) (((uint)((w) & 0xfffffffful) >> 3) == (epoch))
#define LB (L < 32 ? L : 32)

inline uint lg_take_ticket(__global volatile uint *ticket, __local uint *tile_no) {
  if (get_local_id(0) == 0) {
    uint t = atomic_inc(ticket);
    if (t == get_num_groups(0) - 1) *ticket = 0;
    *tile_no = t;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  return *tile_no;
}

/* The kept elements of the tiles before tile, which keeps total; publishes
** tile's words (and the total, from the last tile). */
inline ulong lg_tile_prefix(__global volatile ulong *words, uint tile, uint total, uint epoch,
                            __global uint *count, __local ulong *seen, __local uint *lv) {
  /* lv: [0] the prefix so far, [1] the next tile to fold, [2] done */
  uint lid = get_local_id(0);
  if (lid == 0) {
    if (tile > 0) words[2 * (ulong)tile] = CWORD(total, 0, epoch);
    lv[0] = 0;
    lv[1] = tile;
    lv[2] = tile == 0;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  while (!lv[2]) {
    uint from = lv[1];
    if (lid < LB) {
      ulong w = 0;
      if (lid < from) {
        ulong p = from - 1 - lid;
        w = words[2 * p + 1];
        if (!CWORD_READY(w, epoch)) {
          w = words[2 * p];
          if (!CWORD_READY(w, epoch)) w = 0;
        }
      }
      seen[lid] = w;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
      uint run = lv[0], k, m = from < LB ? from : LB;
      for (k = 0; k < m; k++) {
        ulong w = seen[k];
        if (!w) break;
        run += (uint)(w >> 32);
        if (w & 2ul) { lv[2] = 1; break; }
      }
      lv[0] = run;
      lv[1] = from - k;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    words[2 * (ulong)tile + 1] = CWORD(lv[0] + total, 1, epoch);
    if (tile == get_num_groups(0) - 1) *count = lv[0] + total;
  }
  return lv[0];
}
#endif

/* KIND picks the one select kernel a program holds (their local memory
** differs): 1 compact_tile_select, 2 compact_tile_select_at, 3
** compact_tile_positions. */
#if KIND == 1
__kernel void compact_tile_select(__global const T *x, ulong xoff, __global const MT *m,
                                  ulong moff, ulong n, __global const uint *incl,
                                  __global T *out, ulong ooff) {
  __local uchar lf[TILE_ITEMS];
  __local T lx[LX_ITEMS];
  __local T lo[TILE_ITEMS];
  __local uint ts[2 * L];
  uint g = get_group_id(0), before, total;
  ulong base = (ulong)g * TILE_ITEMS;
  uint bits = lg_tile_flags(x, xoff, m, moff, n, base, lf, lx, ts, &before, &total);
  lg_tile_write_values(bits, before, total, lx, lo, out, ooff + TILE_PLACE(incl, g));
}
#elif KIND == 2 && LOOKBACK
/* compact_tile_select_at placing its tile by the look-back (above). */
__kernel void compact_tile_select_at(__global const T *x, ulong xoff, __global const MT *m,
                                     ulong moff, ulong n, __global volatile ulong *words,
                                     __global volatile uint *ticket, uint epoch,
                                     __global uint *count, __global T *out, ulong ooff,
                                     __global IT *at, ulong aoff) {
  __local uchar lf[TILE_ITEMS];
  __local T lx[LX_ITEMS];
  __local ulong lo[TILE_ITEMS];             /* (values, then positions) */
  __local uint ts[2 * L];
  __local ulong seen[LB];
  __local uint lv[3];
  uint g = lg_take_ticket(ticket, lv), before, total;
  ulong base = (ulong)g * TILE_ITEMS, place;
  uint bits = lg_tile_flags(x, xoff, m, moff, n, base, lf, lx, ts, &before, &total);
  place = lg_tile_prefix(words, g, total, epoch, count, seen, lv);
  barrier(CLK_LOCAL_MEM_FENCE);
  lg_tile_write_values(bits, before, total, lx, (__local T *)lo, out, ooff + place);
  barrier(CLK_LOCAL_MEM_FENCE);
  lg_tile_write_positions(bits, before, total, base, (__local IT *)lo, at, aoff + place);
}
#elif KIND == 2
/* compact_tile_select, also writing the kept elements' positions to at
** (tensor:unique: where each run starts). */
__kernel void compact_tile_select_at(__global const T *x, ulong xoff, __global const MT *m,
                                     ulong moff, ulong n, __global const uint *incl,
                                     __global T *out, ulong ooff, __global IT *at, ulong aoff) {
  __local uchar lf[TILE_ITEMS];
  __local T lx[LX_ITEMS];
  __local ulong lo[TILE_ITEMS];             /* (values, then positions) */
  __local uint ts[2 * L];
  uint g = get_group_id(0), before, total;
  ulong base = (ulong)g * TILE_ITEMS, place = TILE_PLACE(incl, g);
  uint bits = lg_tile_flags(x, xoff, m, moff, n, base, lf, lx, ts, &before, &total);
  lg_tile_write_values(bits, before, total, lx, (__local T *)lo, out, ooff + place);
  barrier(CLK_LOCAL_MEM_FENCE);
  lg_tile_write_positions(bits, before, total, base, (__local IT *)lo, at, aoff + place);
}
#else
/* The kept elements' positions alone (tensor:nonzero). */
__kernel void compact_tile_positions(__global const MT *m, ulong moff, ulong n,
                                     __global const uint *incl, __global IT *at, ulong aoff) {
  __local uchar lf[TILE_ITEMS];
  __local IT lo[TILE_ITEMS];
  __local uint ts[2 * L];
  uint g = get_group_id(0), before, total;
  ulong base = (ulong)g * TILE_ITEMS;
  uint bits = lg_tile_flags(0, 0, m, moff, n, base, lf, 0, ts, &before, &total);
  lg_tile_write_positions(bits, before, total, base, lo, at, aoff + TILE_PLACE(incl, g));
}
#endif

#else
/* Not STAGED (CPUs): a group of one work-item a tile of TILE_ITEMS
** consecutive elements, walked in order without a branch on the data
** (each element written to the next free place in local memory, which a
** kept one then keeps), then copied out. */
__kernel void compact_tile_counts(__global const MT *m, ulong moff, ulong n,
                                  __global uint *counts) {
  ulong g = get_global_id(0), i, base = g * TILE_ITEMS, end = min(base + TILE_ITEMS, n);
  uint c = 0;
  for (i = base; i < end; i++) c += KEEP(i) ? 1u : 0u;
  counts[g] = c;
}

inline void lg_tile_walk(__global const T *x, ulong xoff, __global const MT *m, ulong moff,
                         ulong n, __global const uint *incl, __global T *out, ulong ooff,
                         __global IT *at, ulong aoff, __local T *lv, __local IT *la) {
  ulong g = get_global_id(0), i, base = g * TILE_ITEMS, end = min(base + TILE_ITEMS, n);
  ulong p = TILE_PLACE(incl, g);
  uint c = 0, j;
  for (i = base; i < end; i++) {
    uint k = KEEP(i) ? 1u : 0u;
    if (lv) lv[c] = x[xoff + i];
    if (la) la[c] = (IT)(i + 1);
    c += k;
  }
  for (j = 0; j < c; j++) {
    if (lv) out[ooff + p + j] = lv[j];
    if (la) at[aoff + p + j] = la[j];
  }
}

#if KIND == 1
__kernel void compact_tile_select(__global const T *x, ulong xoff, __global const MT *m,
                                  ulong moff, ulong n, __global const uint *incl,
                                  __global T *out, ulong ooff) {
  __local T lv[TILE_ITEMS];
  lg_tile_walk(x, xoff, m, moff, n, incl, out, ooff, 0, 0, lv, 0);
}

#elif KIND == 2
__kernel void compact_tile_select_at(__global const T *x, ulong xoff, __global const MT *m,
                                     ulong moff, ulong n, __global const uint *incl,
                                     __global T *out, ulong ooff, __global IT *at, ulong aoff) {
  __local T lv[TILE_ITEMS];
  __local IT la[TILE_ITEMS];
  lg_tile_walk(x, xoff, m, moff, n, incl, out, ooff, at, aoff, lv, la);
}

#else
__kernel void compact_tile_positions(__global const MT *m, ulong moff, ulong n,
                                     __global const uint *incl, __global IT *at, ulong aoff) {
  __local IT la[TILE_ITEMS];
  lg_tile_walk(0, 0, m, moff, n, incl, 0, 0, at, aoff, 0, la);
}
#endif
#endif
#endif
