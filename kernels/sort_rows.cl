/*
** sort_rows.cl: luagpu.algo's sort of rows that fit a work-group's local
** memory (lua/luagpu/algo/sort_rows.lua): a bitonic sort in local memory,
** one group per row, or several rows per group for short rows.
**
** Each key becomes the unsigned bit pattern the radix sort compares
** (lg_bits of sort_keys.cl: -0.0 as +0.0, NaNs all ones and last; the
** complement when descending), paired with its position in its row, and
** the pairs are sorted: positions differ, so the order is total and equal
** keys keep their order (a stable sort, as the radix sort). Keys of up to
** 4 bytes pair into one ulong (key << 32 | position); 8-byte keys keep the
** two apart. Slots past a row's end hold all ones in both: after every
** key, NaN included.
**
** The helper prepends: K (key type), U (uint or ulong), KIND (0 unsigned,
** 1 signed, 2 floating), BITS, P (a row's slots: a power of two), N (a
** group's slots: N / P rows), LS (work-items per group, dividing N / 2),
** and what the kernel writes: KEYS (the keys, gathered by position: bit
** for bit, into kout, which is the keys themselves or a buffer apart from
** them), VALS with V (values moved along, in place), POS_OUT
** with OT (the positions, plus base, into pos, which may be the keys:
** argsort's out may be its keys).
*/

/* lg_bits(k, descending), the slots (SLOT_DECL, SET, PAD, POS) and
** lg_bitonic: kernels/sort_keys.cl, put before this file */

#define EPT (N / LS)           /* slots per work-item when loading and writing */

#if BITS <= 32
/* The bitonic network of lg_bitonic over the group's N slots (segments of
** P), with the stages whose pairs lie in one chunk of CH consecutive slots
** run in registers: for each merge size k the stages of distance CH and
** more run in local memory (a barrier each), then each work-item takes its
** NCH chunks into registers one at a time for the stages below CH, with no
** barrier. CH is at most 16 (more would unroll into too much code): for
** rows of 1024 slots, 34 of the 55 stages leave local memory alone. (Keys
** of up to 4 bytes: one ulong a slot, a spare slot after every 16 so that
** neighbouring chunks fall in different banks: SLOT_PAD.) */
#define CH (EPT < 16 ? EPT : 16)
#define NCH (EPT / CH)

#define REG_STAGE(k, j)                                                         \
  _Pragma("unroll")                                                             \
  for (uint c = 0; c < CH; c++)                                                 \
    if ((c & (j)) == 0) {                                                       \
      ulong a = r[c], b = r[c + (j)];                                           \
      int up = (k) == P || ((base + c) & (k)) == 0;                             \
      if ((a > b) == up) { r[c] = b; r[c + (j)] = a; }                          \
    }

static void bitonic_chunks(local ulong* sk, uint lid) {
  ulong r[CH];
  /* merges within a chunk */
  for (uint m = 0; m < NCH; m++) {
    const uint base = (lid + m * LS) * CH;
    _Pragma("unroll")
    for (uint c = 0; c < CH; c++) r[c] = sk[SI(base + c)];
    for (uint k = 2; k <= P && k <= CH; k <<= 1)
      _Pragma("unroll")
      for (uint j = CH >> 1; j > 0; j >>= 1)
        if (j < k) REG_STAGE(k, j)
    _Pragma("unroll")
    for (uint c = 0; c < CH; c++) sk[SI(base + c)] = r[c];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint k = 2 * CH; k <= P; k <<= 1) {
    for (uint j = k >> 1; j >= CH; j >>= 1) {
      for (uint t = lid; t < N / 2; t += LS) {
        uint i = 2 * t - (t & (j - 1)), l = i + j;
        int up = k == P || (i & k) == 0;
        CSWAP(i, l, up)
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (uint m = 0; m < NCH; m++) {
      const uint base = (lid + m * LS) * CH;
      _Pragma("unroll")
      for (uint c = 0; c < CH; c++) r[c] = sk[SI(base + c)];
      _Pragma("unroll")
      for (uint j = CH >> 1; j > 0; j >>= 1) REG_STAGE(k, j)
      _Pragma("unroll")
      for (uint c = 0; c < CH; c++) sk[SI(base + c)] = r[c];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
#endif

#ifndef V
#define V uchar
#endif
#ifndef OT
#define OT uint
#endif

kernel void sort_rows(global K* keys, ulong koff, global K* kout, ulong kooff,
                      global V* restrict vals, ulong voff,
                      global OT* pos, ulong poff, ulong rowlen, ulong nrows,
                      int descending, uint base) {
  SLOT_DECL(N)
  uint lid = get_local_id(0);
  ulong first = (ulong)get_group_id(0) * (N / P);
  /* load: slot i is element i % P of row first + i / P */
  for (uint e = 0; e < EPT; e++) {
    uint i = lid + e * LS, j = i % P;
    ulong row = first + i / P;
    if (row < nrows && j < rowlen) SET(i, lg_bits(keys[koff + row * rowlen + j], descending), j);
    else PAD(i);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#if BITS <= 32
  bitonic_chunks(sk, lid);                /* each row of P slots sorted */
#else
  lg_bitonic(SLOT_PASS, N, P, lid);
#endif
#if defined(KEYS) || defined(VALS)
  /* gather by position: every element read before any is written (the
  ** group owns its rows) */
#ifdef KEYS
  K kv[EPT];
#endif
#ifdef VALS
  V vv[EPT];
#endif
  for (uint e = 0; e < EPT; e++) {
    uint i = lid + e * LS, j = i % P;
    ulong row = first + i / P;
    if (row < nrows && j < rowlen) {
      /* the sort puts a row's pads after its keys, so slot j < rowlen holds
      ** a key's position; min() keeps the read in the row regardless */
      ulong src = row * rowlen + min((ulong)POS(i), rowlen - 1);
#ifdef KEYS
      kv[e] = keys[koff + src];
#endif
#ifdef VALS
      vv[e] = vals[voff + src];
#endif
    }
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
#endif
  for (uint e = 0; e < EPT; e++) {
    uint i = lid + e * LS, j = i % P;
    ulong row = first + i / P;
    if (row < nrows && j < rowlen) {
      ulong o = row * rowlen + j;
#ifdef KEYS
      kout[kooff + o] = kv[e];
#endif
#ifdef VALS
      vals[voff + o] = vv[e];
#endif
#ifdef POS_OUT
      pos[poff + o] = (OT)(POS(i) + base);
#endif
    }
  }
}
