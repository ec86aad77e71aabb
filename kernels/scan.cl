/*
** scan.cl: the kernels of luagpu.algo's scans (lua/luagpu/algo_scan.lua).
**
** The input is cut into tiles of TILE = L * IPT elements; work-item lid of
** a group owns the IPT consecutive elements from lid * IPT of a tile. A
** tile is scanned in three steps: each work-item folds its elements, the
** group scans the L folds (local memory), and each work-item scans its
** elements again from its prefix and writes them.
**
** Two ways to chain the tiles:
**   scan_lookback   single pass (decoupled look-back): each group takes
**                   the next tile from a counter (so a tile only waits on
**                   tiles whose groups are already running), publishes its
**                   aggregate, then folds its predecessors' published
**                   aggregates backwards until one has its inclusive
**                   prefix. Reads n elements and writes n. Needs groups
**                   that once started make progress while others spin.
**   scan_reduce, scan_partials, scan_apply
**                   three passes (reduce-then-scan) over a fixed grid of G
**                   groups, each owning a run of consecutive tiles: the
**                   folds of the runs, their exclusive scan by one group,
**                   then each group scans its run from its prefix. Reads
**                   2n and writes n; portable (no group waits on another).
**
** A segmented scan carries (value, head) pairs: a head element starts a
** new segment, (a, fa) + (b, fb) = (fb ? b : a op b, fa | fb). Heads come
** from a flags buffer (non-zero: head) and from row starts (i % rowlen
** == 0 when rowlen is not 0).
**
** The helper prepends these definitions:
**   T, ACC      input element type, accumulator and output type
**   FT          element type of the flags buffer
**   MAP         expression in x (an element) and i (its 0-based index)
**   OP          expression in a and b: the associative operator
**   NEUTRAL     expression: the neutral element of OP
**   SEGMENTED   1: heads from flags and rows; 0: one segment
**   STAGED      1: tiles pass through local memory (coalesced global
**               reads and writes, for GPUs); 0: each work-item reads and
**               writes its own elements (CPUs)
**   L, IPT      work-items per group (a power of two), elements per item
**   LOOKBACK    1: the program holds scan_lookback; 0: the three passes
*/

#define TILE ((uint)L * IPT)
/* one pad word per 32: the strided reads of the work-items' elements
** fall in different banks */
#define PAD(c) ((c) + ((c) >> 5))

inline ACC lg_op(ACC a, ACC b) { return (ACC)(OP); }
inline ACC lg_map(T x, ulong i) { return (ACC)(MAP); }

#if SEGMENTED
typedef struct { ACC v; uint f; } carry;
inline carry lg_carry(ACC v, uint f) { carry r; r.v = v; r.f = f; return r; }
inline carry lg_comb(carry a, carry b) {
  carry r;
  r.f = a.f | b.f;
  r.v = b.f ? b.v : lg_op(a.v, b.v);
  return r;
}
#define CVAL(c) ((c).v)
#define CFLAG(c) ((c).f)
#define HEAD(g) ((uint)((hasflags && flags[foff + (g)] != 0) || (rowlen && (g) % rowlen == 0)))
#else
typedef ACC carry;
#define lg_carry(v, f) (v)
#define lg_comb(a, b) lg_op((a), (b))
#define CVAL(c) (c)
#define CFLAG(c) 0u
#define HEAD(g) 0u
#endif
#define IDENTITY lg_carry((ACC)(NEUTRAL), 0u)

/* What every scan kernel takes first: the input x from element xoff, the
** flags from foff (read when hasflags), the row length (0: none), n. */
#define SCAN_ARGS __global const T *x, ulong xoff, __global const FT *flags, ulong foff, \
                  int hasflags, ulong rowlen, ulong n
#define SCAN_PASS x, xoff, flags, foff, hasflags, rowlen, n

#if STAGED
#define LOCALS __local ACC *lv, __local uchar *lh
#define LOCALS_PASS lv, lh
#else
#define LOCALS __local ACC *lv
#define LOCALS_PASS 0
#endif

/* STAGED: the tile from base into lv (mapped; NEUTRAL past n) and its
** heads into lh. */
inline void lg_stage(SCAN_ARGS, ulong base, LOCALS) {
#if STAGED
  uint lid = get_local_id(0), k;
  for (k = 0; k < IPT; k++) {
    uint c = k * L + lid;
    ulong g = base + c;
    ACC v = (ACC)(NEUTRAL);
    uint h = 0;
    if (g < n) { v = lg_map(x[xoff + g], g); h = HEAD(g); }
    lv[PAD(c)] = v;
#if SEGMENTED
    lh[PAD(c)] = (uchar)h;
#endif
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
}

/* Element c (0-based in the tile from base) as a carry; the identity past n. */
inline carry lg_item(SCAN_ARGS, ulong base, uint c, LOCALS) {
#if STAGED
  return lg_carry(lv[PAD(c)], (uint)lh[PAD(c)]);
#else
  ulong g = base + c;
  if (g >= n) return IDENTITY;
  return lg_carry(lg_map(x[xoff + g], g), HEAD(g));
#endif
}

/* CPUs, no segments: a work-item's elements, when all are below n, are
** folded and scanned as CHAINS runs of SUB consecutive elements side by
** side (independent chains that the core overlaps, where one chain would
** wait on each operation before the next). With VECTORIZE (the built-in
** operators, which are commutative and take vectors: the helper defines
** ACCV and ACC4, the 8- and 4-wide vectors of ACC, convert_ACCV, and
** VOP8 and VOP4 where OP's text does not take vectors) they are read
** 8 at a time instead: folded lane by lane, and scanned in the vector's
** lanes (three shifted operations) from the running prefix. */
#ifndef VECTORIZE
#define VECTORIZE 0
#endif
#if !STAGED && !SEGMENTED && IPT % 8 == 0
#define CHAINS 8
#define SUB (IPT / CHAINS)
#if VECTORIZE
/* OP on vectors, where its text does not take them: the helper defines
** VOP8 and VOP4 for integer sums and products, whose OP casts to a scalar
** unsigned type (no signed overflow); signed vectors are computed in the
** unsigned vector of the same width (as_uint8 ...) and cast back */
#ifndef VOP8
#define VOP8 OP
#endif
#ifndef VOP4
#define VOP4 OP
#endif
inline ACCV lg_vop(ACCV a, ACCV b) { return (VOP8); }
inline ACC4 lg_vop4(ACC4 a, ACC4 b) { return (VOP4); }
#endif

/* The folds of the CHAINS runs of the elements from g0 into a. */
inline void lg_chain_folds(__global const T *x, ulong xoff, ulong g0, ACC *a) {
  __global const T *p = x + xoff + g0;
  uint j, k;
#pragma unroll
  for (k = 0; k < CHAINS; k++) a[k] = (ACC)(NEUTRAL);
  for (j = 0; j < SUB; j++)
#pragma unroll
    for (k = 0; k < CHAINS; k++) a[k] = lg_op(a[k], lg_map(p[k * SUB + j], g0 + k * SUB + j));
}
#endif

/* The fold of this work-item's elements of the tile from base (with
** CHAINS, when they are all below n: also the folds of the runs, in a). */
inline carry lg_thread_fold(SCAN_ARGS, ulong base, LOCALS, ACC *a) {
  uint c0 = get_local_id(0) * IPT, j;
  carry t = IDENTITY;
#if defined(CHAINS) && VECTORIZE
  if (base + c0 + IPT <= n) {
    __global const T *p = x + xoff + base + c0;
    ACCV f = convert_ACCV(vload8(0, p));
    for (j = 1; j < IPT / 8; j++) f = lg_vop(f, convert_ACCV(vload8(j, p)));
    f.s0123 = lg_vop4(f.s0123, f.s4567);
    return lg_op(lg_op(f.s0, f.s1), lg_op(f.s2, f.s3));
  }
#elif defined(CHAINS)
  if (base + c0 + IPT <= n) {
    ACC f;
    lg_chain_folds(x, xoff, base + c0, a);
    f = a[0];
    for (j = 1; j < CHAINS; j++) f = lg_op(f, a[j]);
    return f;
  }
#endif
  for (j = 0; j < IPT; j++) t = lg_comb(t, lg_item(SCAN_PASS, base, c0 + j, LOCALS_PASS));
  return t;
}

/* Inclusive scan of the L work-items' v (Hillis-Steele over ts, 2L
** carries). Sets *excl to the fold of the work-items before this one and
** returns the fold of all L; ts is free again when it returns. */
inline carry lg_group_scan(carry v, carry *excl, __local carry *ts) {
  uint lid = get_local_id(0), off, src = 0;
  carry total;
  ts[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (off = 1; off < L; off <<= 1) {
    carry c = ts[src + lid];
    if (lid >= off) c = lg_comb(ts[src + lid - off], c);
    src ^= L;
    ts[src + lid] = c;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  *excl = lid ? ts[src + lid - 1] : IDENTITY;
  total = ts[src + L - 1];
  barrier(CLK_LOCAL_MEM_FENCE);
  return total;
}

/* Scans this work-item's elements of the tile from base, starting from
** run (the fold of everything before them), and writes them to out from
** ooff (exclusive: each element gets the fold before it, NEUTRAL at a
** head). */
inline void lg_write(SCAN_ARGS, __global ACC *out, ulong ooff, int exclusive, ulong base,
                     carry run, LOCALS, const ACC *a) {
  uint c0 = get_local_id(0) * IPT, j;
#if defined(CHAINS) && VECTORIZE
  ulong g0 = base + c0;
  if (g0 + IPT <= n) {
    __global const T *p = x + xoff + g0;
    __global ACC *o = out + ooff + g0;
    const ACC z = (ACC)(NEUTRAL);
    for (j = 0; j < IPT / 8; j++) {
      ACCV w = convert_ACCV(vload8(j, p));
      w = lg_vop(w, (ACCV)(z, w.s0123, w.s456));
      w = lg_vop(w, (ACCV)(z, z, w.s0123, w.s45));
      w = lg_vop(w, (ACCV)(z, z, z, z, w.s0123));
      {
        /* the vector's total first: only this one operation waits on the
           last vector's, so the vectors' work overlaps */
        ACC total = w.s7;
        w = lg_vop((ACCV)(run), w);
        vstore8(exclusive ? (ACCV)(run, w.s0123, w.s456) : w, j, o);
        run = lg_op(run, total);
      }
    }
    return;
  }
#elif defined(CHAINS)
  ulong g0 = base + c0;
  if (g0 + IPT <= n) {
    __global const T *p = x + xoff + g0;
    __global ACC *o = out + ooff + g0;
    ACC r[CHAINS];
    uint k;
    r[0] = run;
#pragma unroll
    for (k = 1; k < CHAINS; k++) r[k] = lg_op(r[k - 1], a[k - 1]);
    if (exclusive) {
      for (j = 0; j < SUB; j++)
#pragma unroll
        for (k = 0; k < CHAINS; k++) {
          uint c = k * SUB + j;
          ACC v = lg_map(p[c], g0 + c);
          o[c] = r[k];
          r[k] = lg_op(r[k], v);
        }
    } else {
      for (j = 0; j < SUB; j++)
#pragma unroll
        for (k = 0; k < CHAINS; k++) {
          uint c = k * SUB + j;
          r[k] = lg_op(r[k], lg_map(p[c], g0 + c));
          o[c] = r[k];
        }
    }
    return;
  }
#endif
  for (j = 0; j < IPT; j++) {
    carry it = lg_item(SCAN_PASS, base, c0 + j, LOCALS_PASS);
    ACC o;
    if (exclusive) {
      o = CFLAG(it) ? (ACC)(NEUTRAL) : CVAL(run);
      run = lg_comb(run, it);
    } else {
      run = lg_comb(run, it);
      o = CVAL(run);
    }
#if STAGED
    lv[PAD(c0 + j)] = o;
#else
    if (base + c0 + j < n) out[ooff + base + c0 + j] = o;
#endif
  }
#if STAGED
  {
    uint lid = get_local_id(0), k;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (k = 0; k < IPT; k++) {
      uint c = k * L + lid;
      if (base + c < n) out[ooff + base + c] = lv[PAD(c)];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#endif
}

#ifndef CHAINS
#define CHAINS 1
#endif
/* the tile in local memory (STAGED), and a work-item's folds of its runs */
#if STAGED
#define DECLARE_LOCALS __local ACC lv[PAD(TILE)]; __local uchar lh[SEGMENTED ? PAD(TILE) : 1]; \
                       ACC a[CHAINS]
#else
#define DECLARE_LOCALS ACC a[CHAINS]
#endif

/* The first of three passes: part[g] and pflag[g], the fold of the tiles
** of group g (tiles g * per .. g * per + per - 1). */
#if !LOOKBACK
__kernel void scan_reduce(SCAN_ARGS, uint per, __global ACC *part, __global uint *pflag) {
  __local carry ts[2 * L];
  DECLARE_LOCALS;
  ulong ntiles = (n + TILE - 1) / TILE, t = (ulong)get_group_id(0) * per;
  ulong end = t + per < ntiles ? t + per : ntiles;
  carry total = IDENTITY, excl;
  for (; t < end; t++) {
    ulong base = t * TILE;
    lg_stage(SCAN_PASS, base, LOCALS_PASS);
    total = lg_comb(total, lg_group_scan(lg_thread_fold(SCAN_PASS, base, LOCALS_PASS, a), &excl, ts));
  }
  if (get_local_id(0) == 0) {
    part[get_group_id(0)] = CVAL(total);
    pflag[get_group_id(0)] = CFLAG(total);
  }
}

/* The second pass, one group: part[0..groups-1] becomes its exclusive scan. */
__kernel void scan_partials(__global ACC *part, __global uint *pflag, uint groups) {
  __local carry ts[2 * L];
  uint lid = get_local_id(0), g0;
  carry run = IDENTITY;
  for (g0 = 0; g0 < groups; g0 += L) {
    uint g = g0 + lid;
    carry v = g < groups ? lg_carry(part[g], pflag[g]) : IDENTITY, excl;
    carry total = lg_group_scan(v, &excl, ts);
    if (g < groups) part[g] = CVAL(lg_comb(run, excl));
    run = lg_comb(run, total);
  }
}

/* The third pass: group g scans its tiles from part[g] and writes them. */
__kernel void scan_apply(SCAN_ARGS, __global ACC *out, ulong ooff, int exclusive, uint per,
                         __global const ACC *part) {
  __local carry ts[2 * L];
  DECLARE_LOCALS;
  ulong ntiles = (n + TILE - 1) / TILE, t = (ulong)get_group_id(0) * per;
  ulong end = t + per < ntiles ? t + per : ntiles;
  carry run = lg_carry(part[get_group_id(0)], 0u), excl;
  for (; t < end; t++) {
    ulong base = t * TILE;
    carry total;
    lg_stage(SCAN_PASS, base, LOCALS_PASS);
    total = lg_group_scan(lg_thread_fold(SCAN_PASS, base, LOCALS_PASS, a), &excl, ts);
    lg_write(SCAN_PASS, out, ooff, exclusive, base, lg_comb(run, excl), LOCALS_PASS, a);
    run = lg_comb(run, total);
  }
}

/* The look-back publishes, per tile t, two 64-bit words: words[2t] its
** aggregate, words[2t + 1] the fold of tiles 0..t (its inclusive prefix).
** A word holds the value's bits (32 at most: 4-byte accumulators only)
** << 32 | epoch << 3 | head << 2 | inclusive << 1 | 1, written by one 64-bit
** store, so a reader that sees the epoch sees the value (no ordering
** between two stores to rely on). Each call has its own epoch, so the
** words need no clearing; a word of another epoch is not there yet.
** AS_BITS and AS_ACC (as_uint and as_float for float, ...) convert values
** to their bits and back; the helper defines them for 4-byte and smaller
** accumulators. */
#endif

#if LOOKBACK
#define WORD(v, head, incl, epoch) ((ulong)AS_BITS(v) << 32 | (ulong)(epoch) << 3 | \
                                    (ulong)(head) << 2 | (ulong)(incl) << 1 | 1ul)
#define WORD_VALUE(w) AS_ACC((BITS_T)((w) >> 32))
#define WORD_READY(w, epoch) ((uint)((w) & 0xfffffffful) >> 3 == (epoch))
/* predecessors read at once, one per work-item, in a round of the look-back */
#define LB (L < 32 ? L : 32)

/* Single pass: one group per tile, in the order of the ticket counter
** (a uint, 0 between calls: the group that takes the last ticket puts it
** back to 0). The look-back reads LB predecessors' words a round, one per
** work-item; work-item 0 folds them from the nearest back until an
** inclusive one (done), or one not yet there (the next round starts at
** it). */
__kernel void scan_lookback(SCAN_ARGS, __global ACC *out, ulong ooff, int exclusive,
                            __global volatile ulong *words, __global volatile uint *ticket,
                            uint epoch) {
  __local carry ts[2 * L];
  __local carry prefix;
  __local uint tile_no, next;
  __local int done;
  __local ulong seen[LB];
  DECLARE_LOCALS;
  uint lid = get_local_id(0), tile;
  ulong base;
  carry total, excl;
  if (lid == 0) {
    uint t = atomic_inc(ticket);
    if (t == get_num_groups(0) - 1) *ticket = 0;
    tile_no = t;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  tile = tile_no;
  base = (ulong)tile * TILE;
  lg_stage(SCAN_PASS, base, LOCALS_PASS);
  total = lg_group_scan(lg_thread_fold(SCAN_PASS, base, LOCALS_PASS, a), &excl, ts);
  if (lid == 0) {
    if (tile > 0) words[2 * (ulong)tile] = WORD(CVAL(total), CFLAG(total), 0, epoch);
    prefix = IDENTITY;
    next = tile;                       /* tiles next - 1, next - 2, ... are to fold */
    done = tile == 0;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  while (!done) {
    uint from = next;
    if (lid < LB) {
      ulong w = 0;
      if (lid < from) {
        ulong p = from - 1 - lid;
        w = words[2 * p + 1];
        if (!WORD_READY(w, epoch)) {
          w = words[2 * p];
          if (!WORD_READY(w, epoch)) w = 0;
        }
      }
      seen[lid] = w;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
      carry run = prefix;
      uint k, m = from < LB ? from : LB;
      for (k = 0; k < m; k++) {
        ulong w = seen[k];
        if (!w) break;
        run = lg_comb(lg_carry(WORD_VALUE(w), (uint)(w >> 2) & 1u), run);
        if ((w & 2ul) || CFLAG(run)) { done = 1; break; }
      }
      prefix = run;
      next = from - k;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    carry incl = lg_comb(prefix, total);
    words[2 * (ulong)tile + 1] = WORD(CVAL(incl), CFLAG(incl), 1, epoch);
  }
  lg_write(SCAN_PASS, out, ooff, exclusive, base, lg_comb(prefix, excl), LOCALS_PASS, a);
}
#endif

/* NVIDIA only: the helper defines WARP_PTX 1 after a probe build of the
** inline PTX below succeeds on the device (its OpenCL has no subgroup
** shuffles); everything else builds without it. Also defined: FIPT (a
** multiple of 4: elements per work-item), TV and AV (the 4-wide vectors of
** T and ACC). For 4-byte accumulators without segments. */
#if LOOKBACK && WARP_PTX
#define NW (L / 32)                /* warps per group */
#define FV (FIPT / 4)              /* 4-element vectors per work-item */
#define NWT (FV * NW)              /* warp totals per tile */
#define WC ((NWT + 31) / 32)       /* of them per lane of warp 0 */
#define FTILE ((uint)L * FIPT)

inline uint lg_shfl_up(uint v, uint d) {
  uint r;
  LG_ASM volatile("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;" : "=r"(r) : "r"(v), "r"(d));
  return r;
}
inline uint lg_shfl_down(uint v, uint d) {
  uint r;
  LG_ASM volatile("shfl.sync.down.b32 %0, %1, %2, 31, 0xffffffff;" : "=r"(r) : "r"(v), "r"(d));
  return r;
}
inline uint lg_shfl_idx(uint v, uint lane) {
  uint r;
  LG_ASM volatile("shfl.sync.idx.b32 %0, %1, %2, 31, 0xffffffff;" : "=r"(r) : "r"(v), "r"(lane));
  return r;
}
inline uint lg_ballot(uint p) {
  uint r;
  LG_ASM volatile("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %1, 0;\n\t"
               "vote.sync.ballot.b32 %0, q, 0xffffffff;\n\t}" : "=r"(r) : "r"(p));
  return r;
}
#define SHFL_UP(v, d) AS_ACC(lg_shfl_up(AS_BITS(v), (d)))

/* Inclusive scan of v over the 32 lanes of the warp. */
inline ACC lg_warp_scan(ACC v, uint lane) {
  uint d;
#pragma unroll
  for (d = 1; d < 32; d <<= 1) {
    ACC y = SHFL_UP(v, d);
    if (lane >= d) v = lg_op(y, v);
  }
  return v;
}

/* The look-back by warp 0 of the group of tile (> 0): lane k reads the
** word of predecessor from - 1 - k and waits until it is there (its tile's
** group is running: it took its ticket before). The lanes up to the
** nearest inclusive word are folded (nearest last) onto the prefix; with
** none, the next 32 predecessors follow. Returns the fold of tiles
** 0 .. tile - 1 on every lane. */
inline ACC lg_warp_lookback(__global volatile ulong *words, uint tile, uint epoch, uint lane) {
  ACC prefix = (ACC)(NEUTRAL);
  int from = (int)tile;
  for (;;) {
    int p = from - 1 - (int)lane;
    ulong w = 0;
    uint incl, stop, off;
    ACC v;
    if (p >= 0) {
      /* both words of the tile in one 16-byte read (one trip to memory
         where the inclusive word is not there yet): the inclusive one if
         it is there, else the aggregate; each is whole on its own */
      __global volatile ulong2 *pair = (__global volatile ulong2 *)(words + 2 * (ulong)p);
      do {
        ulong2 ww = *pair;
        w = WORD_READY(ww.s1, epoch) ? ww.s1 : WORD_READY(ww.s0, epoch) ? ww.s0 : 0;
      } while (!w);
    }
    incl = lg_ballot(p >= 0 && (w & 2ul));
    stop = incl ? 31u - clz(incl & (0u - incl)) : 31u;
    v = (p >= 0 && lane <= stop) ? WORD_VALUE(w) : (ACC)(NEUTRAL);
#pragma unroll
    for (off = 1; off < 32; off <<= 1) {
      ACC y = AS_ACC(lg_shfl_down(AS_BITS(v), off));
      if (lane + off < 32) v = lg_op(y, v);
    }
    v = AS_ACC(lg_shfl_idx(AS_BITS(v), 0));
    prefix = lg_op(v, prefix);
    if (incl || from <= 32) return prefix;
    from -= 32;
  }
}

/* Single pass, as scan_lookback, with tiles of FTILE elements held in
** registers: work-item lid holds the 4-element vectors j * L + lid of its
** tile (j < FV: 16-byte loads and stores, coalesced), scans each in its
** lanes, the warps scan the vectors' totals with shuffles, and one round
** through local memory orders the warps' totals (vector j before j + 1,
** warp w before w + 1) while warp 0 looks back. x + xoff and out + ooff
** are aligned to 4 elements (the helper's check). */
__kernel __attribute__((reqd_work_group_size(L, 1, 1)))
void scan_lookback_ptx(__global const T *x, ulong xoff, ulong n, __global ACC *out, ulong ooff,
                       int exclusive, __global volatile ulong *words,
                       __global volatile uint *ticket, uint epoch) {
#if TICKET
  __local uint tile_no;
#endif
  __local ACC wt[NWT];             /* the warps' totals, then their prefixes */
  uint lid = get_local_id(0), lane = lid & 31, warp = lid >> 5, tile, j;
  ulong base;
  ACC e[FV][4], s[FV];
#if TICKET
  if (lid == 0) {
    uint t = atomic_inc(ticket);
    if (t == get_num_groups(0) - 1) *ticket = 0;
    tile_no = t;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  tile = tile_no;
#else
  tile = get_group_id(0);  /* NVIDIA starts groups in id order */
#endif
  base = (ulong)tile * FTILE;
  if (base + FTILE <= n) {
    __global const TV *p = (__global const TV *)(x + xoff + base);
#pragma unroll
    for (j = 0; j < FV; j++) {
      TV v = p[j * L + lid];
      ulong g = base + 4 * (ulong)(j * L + lid);
      e[j][0] = lg_map(v.s0, g); e[j][1] = lg_map(v.s1, g + 1);
      e[j][2] = lg_map(v.s2, g + 2); e[j][3] = lg_map(v.s3, g + 3);
    }
  } else {
#pragma unroll
    for (j = 0; j < FV; j++) {
      uint k;
#pragma unroll
      for (k = 0; k < 4; k++) {
        ulong g = base + 4 * (ulong)(j * L + lid) + k;
        e[j][k] = g < n ? lg_map(x[xoff + g], g) : (ACC)(NEUTRAL);
      }
    }
  }
#pragma unroll
  for (j = 0; j < FV; j++) {
    e[j][1] = lg_op(e[j][0], e[j][1]);
    e[j][2] = lg_op(e[j][1], e[j][2]);
    e[j][3] = lg_op(e[j][2], e[j][3]);
    s[j] = e[j][3];
  }
  {
    uint d;
#pragma unroll
    for (d = 1; d < 32; d <<= 1)
#pragma unroll
      for (j = 0; j < FV; j++) {
        ACC y = SHFL_UP(s[j], d);
        if (lane >= d) s[j] = lg_op(y, s[j]);
      }
  }
  if (lane == 31)
#pragma unroll
    for (j = 0; j < FV; j++) wt[j * NW + warp] = s[j];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (warp == 0) {
    ACC r[WC], f = (ACC)(NEUTRAL), fi, fe, total, prefix = (ACC)(NEUTRAL), run;
    uint c;
#pragma unroll
    for (c = 0; c < WC; c++) {
      uint q = lane * WC + c;
      r[c] = q < NWT ? wt[q] : (ACC)(NEUTRAL);
      f = lg_op(f, r[c]);
    }
    fi = lg_warp_scan(f, lane);
    total = AS_ACC(lg_shfl_idx(AS_BITS(fi), 31));
    fe = SHFL_UP(fi, 1);
    if (tile > 0) {
      if (lane == 0) words[2 * (ulong)tile] = WORD(total, 0, 0, epoch);
      prefix = lg_warp_lookback(words, tile, epoch, lane);
    }
    if (lane == 0) words[2 * (ulong)tile + 1] = WORD(lg_op(prefix, total), 0, 1, epoch);
    run = lane ? lg_op(prefix, fe) : prefix;
#pragma unroll
    for (c = 0; c < WC; c++) {
      uint q = lane * WC + c;
      if (q < NWT) wt[q] = run;
      run = lg_op(run, r[c]);
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (j = 0; j < FV; j++) {
    ACC le = SHFL_UP(s[j], 1), pre = wt[j * NW + warp];
    ACC o0, o1, o2, o3;
    ulong g = base + 4 * (ulong)(j * L + lid);
    if (lane) pre = lg_op(pre, le);
    if (exclusive) {
      o0 = pre; o1 = lg_op(pre, e[j][0]); o2 = lg_op(pre, e[j][1]); o3 = lg_op(pre, e[j][2]);
    } else {
      o0 = lg_op(pre, e[j][0]); o1 = lg_op(pre, e[j][1]);
      o2 = lg_op(pre, e[j][2]); o3 = lg_op(pre, e[j][3]);
    }
    if (g + 4 <= n) {
      ((__global AV *)(out + ooff))[g / 4] = (AV)(o0, o1, o2, o3);
    } else {
      if (g < n) out[ooff + g] = o0;
      if (g + 1 < n) out[ooff + g + 1] = o1;
      if (g + 2 < n) out[ooff + g + 2] = o2;
    }
  }
}
#endif
