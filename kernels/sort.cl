/*
** sort.cl: the kernels of luagpu.algo's radix sort (lua/luagpu/algo_sort.lua).
**
** An LSD radix sort, 8 bits a pass, least significant byte first; each pass
** is stable, so the whole sort is. A pass over n keys in tiles of TILE =
** L * IPT (work-item lid owns the IPT keys from lid * IPT of a tile):
**   sort_count    each tile counts its keys per digit into
**                 counts[tile * RADIX + digit] (a tile's 1 KB together);
**   sort_chunk_sums, (algo.scan), sort_chunk_places
**                 turn the counts in place into where each tile's keys of
**                 each digit start in the output (the exclusive scan of
**                 the counts in digit-major order): group c sums its chunk
**                 of tiles per digit, those sums are scanned (digit-major,
**                 RADIX * C of them), and each group scans its chunk per
**                 digit from its sum's place;
**   sort_scatter  each tile ranks its keys stably (per work-item counts,
**                 scanned over the work-items in local memory) and writes
**                 them, and their indices when carried, to their places.
** Keys are compared as unsigned bit patterns (lg_bits): signed integers
** with the sign bit flipped, floats with the sign bit flipped when
** positive and all bits when negative, both zeros as +0.0 (-0.0 and +0.0
** compare equal, so they keep their order), NaNs as all ones (last, in
** their order); descending sorts use the complement. Row passes
** (mode 1) sort by the row of the carried original index instead, after
** the key passes, so that each row ends up sorted on its own.
**
** What moves with the keys (carry): nothing, indices (uint: the original
** positions, made by the first pass; for argsort, rows and values moved
** afterwards by a gather), or the values themselves (V).
**
** The helper prepends: K (key type), U (uint, or ulong for 8-byte keys),
** KIND (0 unsigned, 1 signed, 2 floating), BITS (bits in K), V (what is
** carried: uint for indices, else the values' type), L, IPT; and on NVIDIA
** devices WARP_PTX and LG_ASM, whose program holds sort_scatter_ptx in
** place of sort_scatter (then the IPT keys of a work-item are 32 apart, in
** its warp's part of the tile, instead of consecutive).
*/

#define TILE ((uint)L * IPT)
#define RADIX 256

/* lg_bits(k, descending): kernels/sort_keys.cl, put before this file */

/* carry: 0 no indices, 1 the indices are in idx, 2 the index is the
** position itself (the first pass). */
inline ulong lg_index(__global const uint *idx, int carry, ulong i) {
  return carry == 1 ? (ulong)idx[i] : i;
}

inline uint lg_digit(K k, ulong index, int mode, uint shift, int descending, ulong rowlen) {
  if (mode == 1) return (uint)((index / rowlen) >> shift) & (RADIX - 1);
  return (uint)(lg_bits(k, descending) >> shift) & (RADIX - 1);
}

#define PASS_ARGS ulong n, int mode, uint shift, int descending, ulong rowlen, uint ntiles

__kernel void sort_count(__global const K *src, ulong soff, __global const uint *isrc, int carry,
                         PASS_ARGS, __global uint *counts) {
  __local uint hist[RADIX];
  uint lid = get_local_id(0), tile = get_group_id(0), k;
  ulong base = (ulong)tile * TILE;
  K kk[IPT];                          /* the keys read first, all in flight at once */
  for (k = lid; k < RADIX; k += L) hist[k] = 0;
#if IPT <= 32
#pragma unroll
#endif
  for (k = 0; k < IPT; k++) {
    ulong i = base + k * L + lid;
    if (i < n) kk[k] = src[soff + i];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#if IPT <= 32
#pragma unroll
#endif
  for (k = 0; k < IPT; k++) {
    ulong i = base + k * L + lid;
    if (i < n)
      atomic_inc(&hist[lg_digit(kk[k], lg_index(isrc, carry, i), mode, shift, descending,
                                rowlen)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (k = lid; k < RADIX; k += L) counts[(ulong)tile * RADIX + k] = hist[k];
}

/* Group c of C (the number of groups) takes the tiles from c * rpc to
** (c + 1) * rpc - 1 (its chunk); its work-items take the digits in turn. */
#define CHUNK_LOOP(d, t0, t1)                                               \
  uint c_ = (uint)get_group_id(0), nc_ = (uint)get_num_groups(0), d;        \
  ulong t0 = (ulong)c_ * rpc, t1 = min(t0 + rpc, (ulong)ntiles);            \
  for (d = (uint)get_local_id(0); d < RADIX; d += L)

/* sums[d * C + c]: the keys of digit d in chunk c */
__kernel void sort_chunk_sums(__global const uint *counts, uint ntiles, uint rpc,
                              __global uint *sums) {
  CHUNK_LOOP(d, t0, t1) {
    uint s = 0;
    ulong t;
#pragma unroll 8
    for (t = t0; t < t1; t++) s += counts[t * RADIX + d];
    sums[(ulong)d * nc_ + c_] = s;
  }
}

/* counts[t * RADIX + d] becomes the place of tile t's first key of digit d,
** from the scanned sums (places[d * C + c]: that of chunk c's first) */
__kernel void sort_chunk_places(__global uint *counts, uint ntiles, uint rpc,
                                __global const uint *places) {
  CHUNK_LOOP(d, t0, t1) {
    uint run = places[(ulong)d * nc_ + c_], v[8], u;
    ulong t = t0;
    for (; t + 8 <= t1; t += 8) {       /* 8 loads in flight, then their stores */
#pragma unroll
      for (u = 0; u < 8; u++) v[u] = counts[(t + u) * RADIX + d];
#pragma unroll
      for (u = 0; u < 8; u++) { counts[(t + u) * RADIX + d] = run; run += v[u]; }
    }
    for (; t < t1; t++) {
      uint c = counts[t * RADIX + d];
      counts[t * RADIX + d] = run;
      run += c;
    }
  }
}

#ifndef WARP_PTX
#define WARP_PTX 0
#endif

#if !WARP_PTX
/* Ranks the tile's keys stably by digit and writes them: each work-item
** counts the digits of its keys (its own column of cnt), the columns are
** scanned into tile-local ranks (digit by digit over the work-items, then
** over the digits), the keys and indices go to their ranks in local
** memory, and from there, in rank order, to the output: neighbouring
** work-items write neighbouring places of a digit's run. */
__kernel void sort_scatter(__global const K *src, ulong soff, __global K *dst, ulong doff,
                           __global const V *vsrc, ulong vsoff, __global V *vdst, ulong vdoff,
                           int carry, PASS_ARGS, __global const uint *offsets) {
  __local ushort cnt[L * RADIX];      /* cnt[t * RADIX + d]: work-item t's keys of digit d */
  __local uint start[RADIX];          /* output place of the tile's rank 0 for digit d */
  __local uint sums[L];               /* keys of each work-item's digits, then their scan */
  __local K sk[TILE];                 /* the tile's keys in rank order */
  __local V sv[TILE];                 /* and what they carry */
  uint lid = get_local_id(0), tile = get_group_id(0), j, d, t;
  ulong base = (ulong)tile * TILE, c0 = base + (ulong)lid * IPT;
  uint count = n - base < TILE ? (uint)(n - base) : TILE;
  __local ushort *mine = cnt + lid * RADIX;
  uint d0 = lid * (RADIX / L), sum = 0;
  for (j = lid; j < L * RADIX; j += L) cnt[j] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (j = 0; j < IPT; j++) {
    ulong i = c0 + j;
    if (i < n) mine[lg_digit(src[soff + i], carry == 1 ? (ulong)vsrc[vsoff + i] : i, mode,
                             shift, descending, rowlen)]++;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  /* work-item lid scans the columns of its RADIX / L digits from d0 */
  for (d = d0; d < d0 + RADIX / L; d++) {
    uint run = 0;
    for (t = 0; t < L; t++) {
      uint c = cnt[t * RADIX + d];
      cnt[t * RADIX + d] = (ushort)run;
      run += c;
    }
    start[d] = run;                   /* the digit's total, for now */
    sum += run;
  }
  sums[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0) {
    uint run = 0;
    for (t = 0; t < L; t++) { uint c = sums[t]; sums[t] = run; run += c; }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  sum = sums[lid];
  for (d = d0; d < d0 + RADIX / L; d++) {
    uint total = start[d];
    for (t = 0; t < L; t++) cnt[t * RADIX + d] += (ushort)sum;
    start[d] = offsets[(ulong)tile * RADIX + d] - sum;
    sum += total;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (j = 0; j < IPT; j++) {
    ulong i = c0 + j;
    if (i < n) {
      K k = src[soff + i];
      V v = carry == 1 ? vsrc[vsoff + i] : (V)i;
      uint r = mine[lg_digit(k, carry == 1 ? (ulong)v : i, mode, shift, descending, rowlen)]++;
      sk[r] = k;
      sv[r] = v;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (j = lid; j < count; j += L) {
    K k = sk[j];
    V v = sv[j];
    ulong index = carry == 1 ? (ulong)v : 0;    /* only row passes read it; they carry indices */
    ulong pos = (ulong)(uint)(start[lg_digit(k, index, mode, shift, descending, rowlen)] + j);
    dst[doff + pos] = k;
    if (carry) vdst[vdoff + pos] = v;
  }
}
#endif

/* NVIDIA only (the helper defines WARP_PTX and LG_ASM after a probe build
** of inline PTX; L is a multiple of 32): sort_scatter with the tile ranked
** by its warps. Warp w ranks the 32 * IPT keys from w * 32 * IPT of the
** tile, 32 keys a round in index order: the lanes holding one digit find
** each other (LG_MATCH: ballots), and a key's rank in its digit within the
** warp is the warp's count of that digit before the round plus the lanes
** of the same digit below it. The keys, what they carry and their ranks
** stay in registers. Then the warps' counts are scanned per digit (warp
** by warp) and over the digits, which turns each warp's counts into the
** tile's places; no per-work-item counts, so a tile takes only its keys,
** what they carry and 1 KB of counts per warp of local memory. */
#if WARP_PTX
#define NWARP (L / 32)
#ifdef LG_EMULATE_WARP
/* The warp instructions emulated through local memory (wx, L uints, and
** barriers: every work-item of the group reaches each call), so that specs
** run this kernel's logic on any device; the digits' scan (warp 0's
** shuffles) is then done by work-item 0 alone. Slow; never chosen alone. */
#define LG_WARP_SCRATCH __local uint wx[L];
#define LG_WARP_PARAMS , __local uint *wx, uint lid   /* what LG_MATCH reads */
#define LG_WARP_ARGS , wx, lid
#define LG_SYNCWARP() barrier(CLK_LOCAL_MEM_FENCE)
#define LG_MATCH(m, d)                                                      \
  do {                                                                      \
    uint q_;                                                                \
    wx[lid] = (d);                                                          \
    barrier(CLK_LOCAL_MEM_FENCE);                                           \
    (m) = 0;                                                                \
    for (q_ = 0; q_ < 32; q_++) (m) |= (uint)(wx[(lid & ~31u) + q_] == (d)) << q_; \
    barrier(CLK_LOCAL_MEM_FENCE);                                           \
  } while (0)
#else
#define LG_WARP_SCRATCH
#define LG_WARP_PARAMS
#define LG_WARP_ARGS
#define LG_SYNCWARP() LG_ASM volatile("bar.warp.sync 0xffffffff;" ::: "memory")
#ifdef LG_MATCH_ANY
#define LG_MATCH(m, d) LG_ASM volatile("match.any.sync.b32 %0, %1, 0xffffffff;" : "=r"(m) : "r"(d))
#else
/* The lanes holding digit d (0 .. RADIX, RADIX: no key): one ballot per
** bit of d, each lane keeping the lanes that agree with it on that bit,
** as CUB's MatchAny does. Nine ballots whatever the digits; match.any.sync
** (LG_MATCH_ANY, for bench/gpu/onesweep_probe.lua) takes longer the more
** distinct digits a warp holds: a one-sweep pass of 2^24 floats over evenly
** spread digits ran 231 us with it, 168 with the ballots (145 and 160 over
** the exponent's few digits; docs/PERFORMANCE.md). */
inline uint lg_match(uint d) {
  uint m = 0xffffffffu, q, b;
#pragma unroll
  for (b = 0; b < 9; b++) {
    LG_ASM volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %1, 0;\n\t"
                    "vote.sync.ballot.b32 %0, p, 0xffffffff;\n\t@!p not.b32 %0, %0;\n\t}"
                    : "=r"(q) : "r"(d & (1u << b)));
    m &= q;
  }
  return m;
}
#define LG_MATCH(m, d) ((m) = lg_match(d))
#endif
inline uint lg_ushfl_up(uint v, uint d) {
  uint r;
  LG_ASM volatile("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;" : "=r"(r) : "r"(v), "r"(d));
  return r;
}
#endif

/* The tile ranking sort_scatter_ptx and sort_onesweep share. Loads the
** work-item's IPT keys (from wbase, 32 apart: its lane of its warp's
** part of the tile) into kk and what they carry into vv (vsrc's values
** when carry is 1, else their indices), every load first (the ranking's
** warp instructions clobber memory, so loads among them would wait one
** after the other); then ranks them warp by warp: pk[r] is key r's rank
** among its warp's keys of its digit | the digit << 16 (the digit RADIX:
** no key), and mine, the warp's count of each digit (zero before), counts
** them. The digit is lg_digit's (mode 0: of the key). kk, vv and pk are
** in registers where the loops over them unroll: up to 32 keys a
** work-item (longer unrolled loops took minutes to build on PoCL). */
inline void lg_rank_tile(__global const K *src, ulong soff, __global const V *vsrc, ulong vsoff,
                         int carry, ulong n, int mode, uint shift, int descending, ulong rowlen,
                         ulong wbase, uint lane, __local uint *mine, K *kk, V *vv, uint *pk
                         LG_WARP_PARAMS) {
  uint below = (1u << lane) - 1u, r;
#if IPT <= 32
#pragma unroll
#endif
  for (r = 0; r < IPT; r++) {
    ulong i = wbase + r * 32 + lane;
    if (i < n) {
      kk[r] = src[soff + i];
      vv[r] = carry == 1 ? vsrc[vsoff + i] : (V)i;
    }
  }
#if IPT <= 32
#pragma unroll
#endif
  for (r = 0; r < IPT; r++) {
    ulong i = wbase + r * 32 + lane;
    uint dg = RADIX, peers, c = 0, rank = 0;
    if (i < n)
      dg = lg_digit(kk[r], carry == 1 ? (ulong)vv[r] : i, mode, shift, descending, rowlen);
    LG_MATCH(peers, dg);
    if (dg < RADIX) c = mine[dg];
    LG_SYNCWARP();
    if (dg < RADIX) {
      rank = c + popcount(peers & below);
      if ((peers >> lane) == 1u) mine[dg] = c + popcount(peers);   /* the last of them */
    }
    pk[r] = rank | dg << 16;
    LG_SYNCWARP();
  }
}

/* Digit d's count in each warp's row of wh (NWARP rows of RADIX) made the
** warp's first rank among the tile's keys of d; returns the tile's count. */
inline uint lg_warp_firsts(__local uint *wh, uint d) {
  uint run = 0;
  for (uint w = 0; w < NWARP; w++) {
    uint c = wh[w * RADIX + d];
    wh[w * RADIX + d] = run;
    run += c;
  }
  return run;
}

/* Then, with tot[d] the tile's first place of digit d and hist (NWARP *
** RADIX, the warps' counts: mine is the work-item's warp's) holding each
** warp's first rank of d among the tile's, puts the work-item's keys (kk,
** vv, pk of lg_rank_tile) in rank order into sk and sv. */
inline void lg_place_tile(__local uint *hist, __local const uint *tot, __local const uint *mine,
                          __local K *sk, __local V *sv, const K *kk, const V *vv,
                          const uint *pk, uint lid) {
  uint d, w, r;
  for (d = lid; d < RADIX; d += L) {
    uint s = tot[d];
    for (w = 0; w < NWARP; w++) hist[w * RADIX + d] += s;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#if IPT <= 32
#pragma unroll
#endif
  for (r = 0; r < IPT; r++) {
    uint dg = pk[r] >> 16;
    if (dg < RADIX) {
      uint p = mine[dg] + (pk[r] & 0xffffu);
      sk[p] = kk[r];
      sv[p] = vv[r];
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

__kernel __attribute__((reqd_work_group_size(L, 1, 1)))
void sort_scatter_ptx(__global const K *src, ulong soff, __global K *dst, ulong doff,
                      __global const V *vsrc, ulong vsoff, __global V *vdst, ulong vdoff,
                      int carry, PASS_ARGS, __global const uint *offsets) {
  __local uint hist[NWARP * RADIX];   /* warp w's keys of digit d so far, then their place */
  __local uint tot[RADIX];            /* the tile's keys of digit d, then their first place */
  __local uint start[RADIX];          /* output place of the tile's rank 0 for digit d */
  __local K sk[TILE];                 /* the tile's keys in rank order */
  __local V sv[TILE];                 /* and what they carry */
  LG_WARP_SCRATCH
  uint lid = get_local_id(0), lane = lid & 31, warp = lid >> 5;
  uint tile = get_group_id(0), j, d;
  __local uint *mine = hist + warp * RADIX;
  ulong base = (ulong)tile * TILE, wbase = base + (ulong)warp * 32 * IPT;
  uint count = n - base < TILE ? (uint)(n - base) : TILE;
  K kk[IPT];
  V vv[IPT];
  uint pk[IPT];                       /* rank in the warp's digit | digit << 16 */
  for (j = lid; j < NWARP * RADIX; j += L) hist[j] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  lg_rank_tile(src, soff, vsrc, vsoff, carry, n, mode, shift, descending, rowlen, wbase, lane,
               mine, kk, vv, pk LG_WARP_ARGS);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (d = lid; d < RADIX; d += L) tot[d] = lg_warp_firsts(hist, d);
  barrier(CLK_LOCAL_MEM_FENCE);
#ifdef LG_EMULATE_WARP
  if (lid == 0) {
    uint s = 0;
    for (d = 0; d < RADIX; d++) {
      uint c = tot[d];
      tot[d] = s;
      start[d] = offsets[(ulong)tile * RADIX + d] - s;
      s += c;
    }
  }
#else
  if (warp == 0) {
    /* lane owns digits lane * 8 .. lane * 8 + 7: their first places in the tile */
    uint h[RADIX / 32], s = 0, incl, off;
#pragma unroll
    for (j = 0; j < RADIX / 32; j++) { h[j] = tot[lane * (RADIX / 32) + j]; s += h[j]; }
    incl = s;
#pragma unroll
    for (off = 1; off < 32; off <<= 1) {
      uint y = lg_ushfl_up(incl, off);
      if (lane >= off) incl += y;
    }
    s = incl - s;
#pragma unroll
    for (j = 0; j < RADIX / 32; j++) {
      d = lane * (RADIX / 32) + j;
      tot[d] = s;
      start[d] = offsets[(ulong)tile * RADIX + d] - s;
      s += h[j];
    }
  }
#endif
  barrier(CLK_LOCAL_MEM_FENCE);
  lg_place_tile(hist, tot, mine, sk, sv, kk, vv, pk, lid);
  for (j = lid; j < count; j += L) {
    K k = sk[j];
    V v = sv[j];
    ulong index = carry == 1 ? (ulong)v : 0;
    ulong pos = (ulong)(uint)(start[lg_digit(k, index, mode, shift, descending, rowlen)] + j);
    dst[doff + pos] = k;
    if (carry) vdst[vdoff + pos] = v;
  }
}
#endif

/* One sweep per pass (ONESWEEP, defined by the helper with NPASS, the key
** passes; on the warp-ranked tiles only), after CUB's onesweep (Adinets and
** Merrill 2022):
**   sort_histograms  the global digit counts of every key pass at once:
**                    each group counts its keys (strided over the whole
**                    input) in local memory, then adds its counts to
**                    hist[pass * RADIX + digit] (zero before the call);
**   sort_onesweep    one kernel per pass: a group takes the next tile by
**                    a ticket, ranks its keys as sort_scatter_ptx does,
**                    publishes its count of each digit, looks back over
**                    the earlier tiles' published counts of that digit
**                    (decoupled look-back, one digit per work-item) for
**                    the keys of that digit before the tile, publishes
**                    that sum with its own (inclusive), and writes its
**                    keys from the digit's global place (the exclusive
**                    scan of hist, done by each group) plus that sum;
**                    a row pass (mode 1, after the key passes) ranks by
**                    the row of the carried index and counts its digits
**                    without hist (lg_pass_count).
** The look-back words, one per tile and digit, hold count << 32 | epoch
** << 1 | inclusive, written by one 64-bit store (a reader that sees the
** epoch sees the count); each pass has its own epoch, so the words need
** no clearing between passes. A group waits only for tiles of smaller
** tickets, whose groups are running; tile 0 publishes inclusive counts at
** once, so every wait ends. Counts and places are uint, wrapping as the
** output places do (they are below 2^32). */
#if WARP_PTX && defined(ONESWEEP)
#define LB_WORD(v, incl, epoch) ((ulong)(v) << 32 | (ulong)(epoch) << 1 | (ulong)(incl))
#define LB_READY(w, epoch) (((uint)(w) >> 1) == (epoch))
/* LG_LB_SLEEP: nanoseconds a work-item sleeps between two reads of a word
** not yet published (PTX nanosleep; 0 or emulated warps: none). */
#if defined(LG_LB_SLEEP) && LG_LB_SLEEP > 0 && !defined(LG_EMULATE_WARP)
#define LG_LB_BACKOFF() LG_ASM volatile("nanosleep.u32 %0;" :: "r"((uint)(LG_LB_SLEEP)))
#else
#define LG_LB_BACKOFF() do { } while (0)
#endif

__kernel __attribute__((reqd_work_group_size(L, 1, 1)))
void sort_histograms(__global const K *src, ulong soff, ulong n, int descending,
                     __global uint *hist) {
  __local uint h[NPASS * RADIX];
  uint lid = get_local_id(0), j, p;
  uint last[NPASS], run[NPASS];       /* per pass: the digit counted in a run, its count */
  ulong i, step = (ulong)get_num_groups(0) * L;
  for (j = lid; j < NPASS * RADIX; j += L) h[j] = 0;
#pragma unroll
  for (p = 0; p < NPASS; p++) { last[p] = 0; run[p] = 0; }
  barrier(CLK_LOCAL_MEM_FENCE);
  /* a work-item adds a run of keys of one digit at once: the digits of the
     high bytes, often all one digit, would else make every work-item add
     to one count */
#define LG_COUNT_KEY(b)                                                  \
  _Pragma("unroll")                                                      \
  for (p = 0; p < NPASS; p++) {                                          \
    uint d = (uint)((b) >> (8 * p)) & (RADIX - 1);                       \
    if (d != last[p]) {                                                  \
      if (run[p]) atomic_add(&h[p * RADIX + last[p]], run[p]);           \
      last[p] = d;                                                       \
      run[p] = 0;                                                        \
    }                                                                    \
    run[p]++;                                                            \
  }
  /* four keys a work-item in flight: their loads first, then their counts
     (2^24 floats on an H100: 69-73 us, against 80-83 one load at a time) */
  i = (ulong)get_group_id(0) * L + lid;
  for (; i < n && n - i > 3 * step; i += 4 * step) {
    U b0 = lg_bits(src[soff + i], descending);
    U b1 = lg_bits(src[soff + i + step], descending);
    U b2 = lg_bits(src[soff + i + 2 * step], descending);
    U b3 = lg_bits(src[soff + i + 3 * step], descending);
    LG_COUNT_KEY(b0)
    LG_COUNT_KEY(b1)
    LG_COUNT_KEY(b2)
    LG_COUNT_KEY(b3)
  }
  for (; i < n; i += step) {
    U b = lg_bits(src[soff + i], descending);
    LG_COUNT_KEY(b)
  }
#undef LG_COUNT_KEY
#pragma unroll
  for (p = 0; p < NPASS; p++)
    if (run[p]) atomic_add(&h[p * RADIX + last[p]], run[p]);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (j = lid; j < NPASS * RADIX; j += L) {
    uint c = h[j];
    if (c) atomic_add(&hist[j], c);
  }
}

/* The keys of digit d in the whole pass: hist[d] for a key pass (mode 0);
** for a row pass (mode 1: the digit of the row, shift bits up, of the
** carried index) rowlen times the rows r < nrows whose digit is d, counted
** without a histogram: of every 256 << shift rows in a row, 1 << shift
** have it. */
inline uint lg_pass_count(__global const uint *hist, uint d, int mode, uint shift, ulong rowlen,
                          ulong nrows) {
  if (mode == 0) return hist[d];
  ulong b = 1ul << shift, period = b << 8, rem = nrows % period, lo = (ulong)d * b;
  ulong part = rem > lo ? (rem - lo < b ? rem - lo : b) : 0;
  return (uint)((nrows / period * b + part) * rowlen);
}

/* mode 0: a key pass, hist + hoff its RADIX global counts; mode 1: a row
** pass of nrows rows of rowlen keys (hist not read; carry 1: the indices
** come from vsrc). zero: nzero uints the group of
** ticket 0 sets to 0 (the histograms of the next call; nzero 0: none).
** keys_out 0: only what the keys carry is written (argsort's last pass).
** pdst not 0 (argsort's last pass of a whole sort): the carried indices go
** to pdst + pdoff as long positions from pbase, not to vdst. */
__kernel __attribute__((reqd_work_group_size(L, 1, 1)))
void sort_onesweep(__global const K *src, ulong soff, __global K *dst, ulong doff,
                   __global const V *vsrc, ulong vsoff, __global V *vdst, ulong vdoff,
                   int carry, ulong n, int mode, uint shift, int descending, ulong rowlen,
                   ulong nrows, __global const uint *hist,
                   uint hoff, __global volatile ulong *words, __global volatile uint *ticket,
                   uint epoch, __global uint *zero, uint nzero, int keys_out,
                   __global long *pdst, ulong pdoff, long pbase, int positions) {
  __local uint wh[NWARP * RADIX];     /* warp w's keys of digit d so far, then their place */
  __local uint tot[RADIX];            /* the tile's keys of digit d, then their first place */
  __local uint before[RADIX];         /* keys of digit d in the tiles before this one */
  __local uint start[RADIX];          /* output place of the tile's rank 0 for digit d */
  __local K sk[TILE];                 /* the tile's keys in rank order */
  __local V sv[TILE];                 /* and what they carry */
  __local uint tile_no;
  LG_WARP_SCRATCH
  uint lid = get_local_id(0), lane = lid & 31, warp = lid >> 5;
  uint tile, j, d;
  __local uint *mine = wh + warp * RADIX;
  ulong base, wbase;
  uint count;
  K kk[IPT];
  V vv[IPT];
  uint pk[IPT];                       /* rank in the warp's digit | digit << 16 */
  if (lid == 0) {
    uint t = atomic_inc(ticket);
    if (t == get_num_groups(0) - 1) *ticket = 0;
    tile_no = t;
  }
  for (j = lid; j < NWARP * RADIX; j += L) wh[j] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  tile = tile_no;
  hist += hoff;
  if (tile == 0) for (j = lid; j < nzero; j += L) zero[j] = 0;
  base = (ulong)tile * TILE;
  wbase = base + (ulong)warp * 32 * IPT;
  count = n - base < TILE ? (uint)(n - base) : TILE;
  lg_rank_tile(src, soff, vsrc, vsoff, carry, n, mode, shift, descending, rowlen, wbase, lane,
               mine, kk, vv, pk LG_WARP_ARGS);
  barrier(CLK_LOCAL_MEM_FENCE);
  /* per digit (the same work-item in each loop): the warps' first ranks,
     the tile's count published, then the look-back */
  for (d = lid; d < RADIX; d += L) {
    uint run = lg_warp_firsts(wh, d);
    tot[d] = run;
    words[(ulong)tile * RADIX + d] = LB_WORD(run, tile == 0, epoch);
  }
  for (d = lid; d < RADIX; d += L) {
    uint sum = 0, t = tile;
#if defined(LG_PROBE_NO_LOOKBACK) || defined(LG_PROBE_SPREAD)
    t = 0;                  /* bench/gpu/onesweep_probe.lua: timing only, wrong places */
#endif
#ifdef LG_PROBE_SPREAD
    sum = tile * tot[d];    /* places as if every tile held the same counts */
#endif
    while (t > 0) {
      ulong wd;
      t--;
      for (;;) {
        wd = words[(ulong)t * RADIX + d];
        if (LB_READY(wd, epoch)) break;
        LG_LB_BACKOFF();
      }
      sum += (uint)(wd >> 32);
      if (wd & 1ul) break;
    }
    if (tile > 0) words[(ulong)tile * RADIX + d] = LB_WORD(sum + tot[d], 1, epoch);
    before[d] = sum;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#ifdef LG_EMULATE_WARP
  if (lid == 0) {
    uint s = 0, g = 0;
    for (d = 0; d < RADIX; d++) {
      uint c = tot[d];
      tot[d] = s;
      start[d] = g + before[d] - s;
      s += c;
      g += lg_pass_count(hist, d, mode, shift, rowlen, nrows);
    }
  }
#else
  if (warp == 0) {
    /* lane owns digits lane * 8 .. lane * 8 + 7: their first places in the
       tile and their global places */
    uint h[RADIX / 32], gh[RADIX / 32], s = 0, g = 0, incl, gincl, off;
#pragma unroll
    for (j = 0; j < RADIX / 32; j++) {
      h[j] = tot[lane * (RADIX / 32) + j];
      gh[j] = lg_pass_count(hist, lane * (RADIX / 32) + j, mode, shift, rowlen, nrows);
      s += h[j];
      g += gh[j];
    }
    incl = s;
    gincl = g;
#pragma unroll
    for (off = 1; off < 32; off <<= 1) {
      uint y = lg_ushfl_up(incl, off), gy = lg_ushfl_up(gincl, off);
      if (lane >= off) { incl += y; gincl += gy; }
    }
    s = incl - s;
    g = gincl - g;
#pragma unroll
    for (j = 0; j < RADIX / 32; j++) {
      d = lane * (RADIX / 32) + j;
      tot[d] = s;
      start[d] = g + before[d] - s;
      s += h[j];
      g += gh[j];
    }
  }
#endif
  barrier(CLK_LOCAL_MEM_FENCE);
  lg_place_tile(wh, tot, mine, sk, sv, kk, vv, pk, lid);
  for (j = lid; j < count; j += L) {
    K k = sk[j];
    /* (sv holds the index in a row pass: carry 1 or 2) */
    ulong index = mode == 1 ? (ulong)sv[j] : 0;
    ulong pos = (ulong)(start[lg_digit(k, index, mode, shift, descending, rowlen)] + j);
#ifdef LG_PROBE_SPREAD
    while (pos >= n) pos -= n;
#endif
    if (keys_out) dst[doff + pos] = k;
    if (positions) pdst[pdoff + pos] = (long)sv[j] + pbase;
    else if (carry) vdst[vdoff + pos] = sv[j];
  }
}
#endif
