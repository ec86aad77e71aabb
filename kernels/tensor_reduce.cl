/* tensor_reduce.cl: reductions of luagpu.tensor along one dim of a
** contiguous tensor seen as [outer, L, inner] (lua/luagpu/tensor_reduce.lua).
**
** Defined by the caller: T (element type), ACC (accumulator), OUT (result),
** NEUTRAL, OP(a, b) (combines accumulators), MAP(x) (an element as ACC),
** FINAL(a, count) (the result from the accumulator of count elements),
** LS (work-items per group of rows, a power of two), CX x CY (a group of
** cols, CY a power of two); ARG when the result is the 1-based position of
** the best element, BETTER(a, b) true when a beats b, SAME(a, b) true when
** they tie (the first position wins; a work-item that saw no element holds
** NEUTRAL at position LONG_MAX, so it loses every tie).
**
** WARP_PTX (NVIDIA's compiler, LG_ASM its inline-assembly keyword): the
** rows' groups combine by warp shuffles (GROUP_COMBINE below).
**
** rows:  inner == 1. Group g reduces part g % nsplit of row g / nsplit
**        (rows_warp, WARP_PTX with LS 32: a warp a row, whole).
** cols:  inner > 1. Work-item x is a column; the CY rows of a group share
**        part gy % nsplit of the dim, of outer index gy / nsplit.
** Both write, per group (per column), the accumulator (and position) into
** part when final is 0, else FINAL into res; rows2 and cols2 do the same
** over the accumulators of a first pass (positions in pidx).
*/
/* A work-item folds FOLD_BLOCK of its loads into a fresh accumulator
** before it joins the running one: a float sum's error then grows with
** FOLD_BLOCK + loads / FOLD_BLOCK, not with its loads (a sum of 10^6
** elements of 0.1 along a dim was 99985 in one accumulator). The helper
** defines it for floating accumulators of ops without positions; others
** fold in one block (their results do not depend on the order, and the
** blocks cost argmax(1) of 4096^2 a quarter of its time on an H200). */
#ifdef FOLD_BLOCK
#define FOLD_STEP(n) ((ulong)FOLD_BLOCK * (n))
#else
#define FOLD_STEP(n) (~0ul >> 1)            /* one block: the plain loop */
#endif
#define CAT(a, b) a##b
#define XCAT(a, b) CAT(a, b)
#ifdef ARG
#define STEP(acc, ai, v, vi) if (BETTER(v, acc) || (SAME(v, acc) && vi < ai)) { acc = v; ai = vi; }
#define COMBINE(acc, ai, v, vi) STEP(acc, ai, v, vi)
#else
#define STEP(acc, ai, v, vi) acc = OP(acc, v)
#define COMBINE(acc, ai, v, vi) acc = OP(acc, v)
#endif

#define ROWS_BODY(LOAD, LOADI)                                                   \
  ulong g = get_group_id(0), row = g / nsplit, p = g % nsplit;                  \
  uint lid = get_local_id(0);                                                    \
  ulong start = p * chunk, end = min(L, start + chunk);                          \
  ulong base = off + row * L;                                                    \
  ACC acc = NEUTRAL; long ai = LONG_MAX;                                         \
  VECTOR_LOOP                                                                    \
  for (ulong j0 = start + lid; j0 < end; j0 += FOLD_STEP(LS)) {        \
    ulong stop = min(end, j0 + FOLD_STEP(LS));                          \
    ACC blk = NEUTRAL; long bi = LONG_MAX;                                       \
    for (ulong j = j0; j < stop; j += LS) { ACC v = LOAD(base + j); STEP(blk, bi, v, LOADI(base + j, j)); } \
    COMBINE(acc, ai, blk, bi);                                                   \
  }                                                                              \
  GROUP_COMBINE                                                                  \
  if (lid == 0) {                                                                \
    if (final) res[g] = FINAL(acc, ai, count);                                   \
    else { part[g] = acc; pidx[g] = ai; }                                        \
  }

/* The group's work-items combine their acc (and ai) into work-item 0's:
** by warp shuffles, then one slot a warp in local memory (WARP_PTX: LS a
** multiple of 32, ACC of ACC_BYTES 4 or 8; every combine is commutative,
** so every lane of a warp ends with its whole), else by a tree in local
** memory. */
#if WARP_PTX
inline uint lg_bfly(uint v, uint d) {
  uint r;
  LG_ASM volatile("shfl.sync.bfly.b32 %0, %1, %2, 31, 0xffffffff;" : "=r"(r) : "r"(v), "r"(d));
  return r;
}
inline long lg_bfly_long(long v, uint d) {
  uint2 w = as_uint2(v);
  w.x = lg_bfly(w.x, d); w.y = lg_bfly(w.y, d);
  return as_long(w);
}
#if ACC_BYTES == 8
inline ACC lg_bfly_acc(ACC v, uint d) {
  uint2 w = as_uint2(v);
  w.x = lg_bfly(w.x, d); w.y = lg_bfly(w.y, d);
  return XCAT(as_, ACC)(w);
}
#else
inline ACC lg_bfly_acc(ACC v, uint d) { return XCAT(as_, ACC)(lg_bfly(as_uint(v), d)); }
#endif
#ifdef ARG
#define WARP_COMBINE                                                             \
  for (uint h = 16; h > 0; h >>= 1) {                                            \
    ACC b_ = lg_bfly_acc(acc, h); long ib_ = lg_bfly_long(ai, h);                \
    COMBINE(acc, ai, b_, ib_);                                                   \
  }
#else
#define WARP_COMBINE                                                             \
  for (uint h = 16; h > 0; h >>= 1) { ACC b_ = lg_bfly_acc(acc, h); acc = OP(acc, b_); }
#endif
#define GROUP_COMBINE                                                            \
  WARP_COMBINE                                                                   \
  local ACC la[LS / 32]; local long li[LS / 32];                                 \
  if ((lid & 31) == 0) { la[lid >> 5] = acc; li[lid >> 5] = ai; }                \
  barrier(CLK_LOCAL_MEM_FENCE);                                                  \
  if (lid == 0) {                                                                \
    for (uint w_ = 1; w_ < LS / 32; w_++) { ACC b_ = la[w_]; long ib_ = li[w_]; COMBINE(acc, ai, b_, ib_); } \
  }
#else
#define GROUP_COMBINE                                                            \
  local ACC la[LS]; local long li[LS];                                           \
  la[lid] = acc; li[lid] = ai;                                                   \
  barrier(CLK_LOCAL_MEM_FENCE);                                                  \
  for (uint s = LS / 2; s > 0; s >>= 1) {                                        \
    if (lid < s) { ACC a = la[lid], b = la[lid + s]; long ia = li[lid], ib = li[lid + s]; \
      COMBINE(a, ia, b, ib); la[lid] = a; li[lid] = ia; }                        \
    barrier(CLK_LOCAL_MEM_FENCE);                                                \
  }                                                                              \
  acc = la[0]; ai = li[0];
#endif

#define LOAD_IN(i) MAP(in[i])
#define INDEX_IN(i, j) ((long)(j))
#define LOAD_PART(i) in[i]
#define INDEX_PART(i, j) iidx[i]

/* rows with vec (L, chunk and off multiples of 4): 4-wide loads, the
** elements after the last whole vector of a part left to the scalar loop */
#define T4 XCAT(T, 4)
#define VECTOR_LOOP                                                              \
  if (vec) {                                                                     \
    global const T4* p4 = (global const T4*)(in + base);                         \
    for (ulong j0 = start / 4 + lid; j0 < end / 4; j0 += FOLD_STEP(LS)) { \
      ulong stop = min(end / 4, j0 + FOLD_STEP(LS));                    \
      ACC blk = NEUTRAL; long bi = LONG_MAX;                                     \
      for (ulong j = j0; j < stop; j += LS) {                                    \
        T4 w = p4[j]; ACC v;                                                     \
        v = MAP(w.s0); STEP(blk, bi, v, (long)(4 * j));                          \
        v = MAP(w.s1); STEP(blk, bi, v, (long)(4 * j + 1));                      \
        v = MAP(w.s2); STEP(blk, bi, v, (long)(4 * j + 2));                      \
        v = MAP(w.s3); STEP(blk, bi, v, (long)(4 * j + 3));                      \
      }                                                                          \
      COMBINE(acc, ai, blk, bi);                                                 \
    }                                                                            \
    start = end;                                                                 \
  }

kernel void rows(global const T* restrict in, ulong off, ulong L, ulong chunk, ulong nsplit,
                 uint final, ulong count, global ACC* restrict part,
                 global long* restrict pidx, global OUT* restrict res, uint vec) {
  ROWS_BODY(LOAD_IN, INDEX_IN)
}

#if WARP_PTX && LS == 32
/* rows_warp: inner == 1, one row a warp (rows short enough for groups of
** 32, which would leave compute units half empty on their own), the
** warps of a group on consecutive rows: res[row] = FINAL of row's L
** elements. A warp past the last row reads that row and writes nothing. */
kernel void rows_warp(global const T* restrict in, ulong off, ulong L, ulong nrows,
                      global OUT* restrict res, uint vec) {
  uint lid = get_local_id(0) & 31;
  ulong row = get_global_id(0) >> 5;
  ulong start = 0, end = L;
  ulong base = off + (row < nrows ? row : nrows - 1) * L;
  ACC acc = NEUTRAL; long ai = LONG_MAX;
  VECTOR_LOOP
  for (ulong j0 = start + lid; j0 < end; j0 += FOLD_STEP(LS)) {
    ulong stop = min(end, j0 + FOLD_STEP(LS));
    ACC blk = NEUTRAL; long bi = LONG_MAX;
    for (ulong j = j0; j < stop; j += LS) { ACC v = LOAD_IN(base + j); STEP(blk, bi, v, INDEX_IN(base + j, j)); }
    COMBINE(acc, ai, blk, bi);
  }
  WARP_COMBINE
  if (lid == 0 && row < nrows) res[row] = FINAL(acc, ai, L);
}
#endif
#undef VECTOR_LOOP
#define VECTOR_LOOP

kernel void rows2(global const ACC* restrict in, global const long* restrict iidx, ulong off,
                  ulong L, ulong chunk, ulong nsplit, uint final, ulong count,
                  global ACC* restrict part, global long* restrict pidx,
                  global OUT* restrict res) {
  ROWS_BODY(LOAD_PART, INDEX_PART)
}

#define COLS_BODY(LOAD, LOADI)                                                   \
  ulong x = get_global_id(0);                                                    \
  uint ly = get_local_id(1), lx = get_local_id(0);                               \
  ulong gy = get_group_id(1), o = gy / nsplit, p = gy % nsplit;                  \
  ulong start = p * chunk, end = min(L, start + chunk);                          \
  ACC acc = NEUTRAL; long ai = LONG_MAX;                                         \
  if (x < inner) {                                                               \
    ulong base = off + o * L * inner + x;                                        \
    for (ulong l0 = start + ly; l0 < end; l0 += FOLD_STEP(CY)) {         \
      ulong stop = min(end, l0 + FOLD_STEP(CY));                         \
      ACC blk = NEUTRAL; long bi = LONG_MAX;                                     \
      for (ulong l = l0; l < stop; l += CY) { ACC v = LOAD(base + l * inner); STEP(blk, bi, v, LOADI(base + l * inner, l)); } \
      COMBINE(acc, ai, blk, bi);                                                 \
    }                                                                            \
  }                                                                              \
  local ACC la[CY][CX]; local long li[CY][CX];                                   \
  la[ly][lx] = acc; li[ly][lx] = ai;                                             \
  barrier(CLK_LOCAL_MEM_FENCE);                                                  \
  for (uint s = CY / 2; s > 0; s >>= 1) {                                        \
    if (ly < s) { ACC a = la[ly][lx], b = la[ly + s][lx]; long ia = li[ly][lx], ib = li[ly + s][lx]; \
      COMBINE(a, ia, b, ib); la[ly][lx] = a; li[ly][lx] = ia; }                  \
    barrier(CLK_LOCAL_MEM_FENCE);                                                \
  }                                                                              \
  if (ly == 0 && x < inner) {                                                    \
    ulong at = (o * nsplit + p) * inner + x;                                     \
    if (final) res[o * inner + x] = FINAL(la[0][lx], li[0][lx], count);          \
    else { part[at] = la[0][lx]; pidx[at] = li[0][lx]; }                         \
  }

kernel void cols(global const T* restrict in, ulong off, ulong L, ulong inner, ulong chunk,
                 ulong nsplit, uint final, ulong count, global ACC* restrict part,
                 global long* restrict pidx, global OUT* restrict res) {
  COLS_BODY(LOAD_IN, INDEX_IN)
}

kernel void cols2(global const ACC* restrict in, global const long* restrict iidx, ulong off,
                  ulong L, ulong inner, ulong chunk, ulong nsplit, uint final, ulong count,
                  global ACC* restrict part, global long* restrict pidx,
                  global OUT* restrict res) {
  COLS_BODY(LOAD_PART, INDEX_PART)
}

/* cols4: cols when inner and off are multiples of 4: work-item x owns
** columns 4x .. 4x + 3 and reads them as one 4-wide vector per row (16
** bytes, 512 per warp and row), four rows at a time; the CY rows of a group
** share part gy % nsplit of the dim. Writes the 4 accumulators (ARG: and
** their positions) into part (and pidx), or FINAL into res when final. */
/* (STEP, COMBINE: the positions' forms under ARG, else OP alone; the
** positions, li and pidx exist under ARG only) */
#define COLS4_STEP(w, l)                                                         \
  { ACC v_ = MAP(w.s0); STEP(a0, i0, v_, (long)(l));                             \
    v_ = MAP(w.s1); STEP(a1, i1, v_, (long)(l));                                 \
    v_ = MAP(w.s2); STEP(a2, i2, v_, (long)(l));                                 \
    v_ = MAP(w.s3); STEP(a3, i3, v_, (long)(l)); }
#ifdef ARG
#define PIDX_PARAM global long* restrict pidx,
#else
#define PIDX_PARAM
#endif

kernel void cols4(global const T* restrict in, ulong off, ulong L, ulong inner, ulong chunk,
                  ulong nsplit, uint final, ulong count, global ACC* restrict part,
                  PIDX_PARAM global OUT* restrict res) {
  ulong x = get_global_id(0), q = inner / 4;
  uint ly = get_local_id(1), lx = get_local_id(0);
  ulong gy = get_group_id(1), o = gy / nsplit, p = gy % nsplit;
  ulong start = p * chunk, end = min(L, start + chunk);
  ACC a0 = NEUTRAL, a1 = NEUTRAL, a2 = NEUTRAL, a3 = NEUTRAL;
  long i0 = LONG_MAX, i1 = LONG_MAX, i2 = LONG_MAX, i3 = LONG_MAX;
  if (x < q) {
    global const T4* b = (global const T4*)(in + off + o * L * inner) + x;
#ifndef FOLD_BLOCK
    ulong l = start + ly;
    for (; l + 3 * CY < end; l += 4 * CY) {
      T4 w0 = b[l * q], w1 = b[(l + CY) * q], w2 = b[(l + 2 * CY) * q], w3 = b[(l + 3 * CY) * q];
      COLS4_STEP(w0, l) COLS4_STEP(w1, l + CY) COLS4_STEP(w2, l + 2 * CY) COLS4_STEP(w3, l + 3 * CY)
    }
    for (; l < end; l += CY) { T4 w = b[l * q]; COLS4_STEP(w, l) }
#else
    /* (blocks of FOLD_BLOCK rows a work-item, as COLS_BODY's) */
    for (ulong l0 = start + ly; l0 < end; l0 += FOLD_STEP(CY)) {
      ulong stop = min(end, l0 + FOLD_STEP(CY)), l = l0;
      ACC s0 = a0, s1 = a1, s2 = a2, s3 = a3;
      long j0 = i0, j1 = i1, j2 = i2, j3 = i3;
      a0 = a1 = a2 = a3 = NEUTRAL;
      i0 = i1 = i2 = i3 = LONG_MAX;
      for (; l + 3 * CY < stop; l += 4 * CY) {
        T4 w0 = b[l * q], w1 = b[(l + CY) * q], w2 = b[(l + 2 * CY) * q], w3 = b[(l + 3 * CY) * q];
        COLS4_STEP(w0, l) COLS4_STEP(w1, l + CY) COLS4_STEP(w2, l + 2 * CY) COLS4_STEP(w3, l + 3 * CY)
      }
      for (; l < stop; l += CY) { T4 w = b[l * q]; COLS4_STEP(w, l) }
      COMBINE(s0, j0, a0, i0); COMBINE(s1, j1, a1, i1);
      COMBINE(s2, j2, a2, i2); COMBINE(s3, j3, a3, i3);
      a0 = s0; a1 = s1; a2 = s2; a3 = s3;
      i0 = j0; i1 = j1; i2 = j2; i3 = j3;
    }
#endif
  }
  local ACC la[4][CY][CX];
  la[0][ly][lx] = a0; la[1][ly][lx] = a1; la[2][ly][lx] = a2; la[3][ly][lx] = a3;
#ifdef ARG
  local long li[4][CY][CX];
  li[0][ly][lx] = i0; li[1][ly][lx] = i1; li[2][ly][lx] = i2; li[3][ly][lx] = i3;
#endif
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = CY / 2; s > 0; s >>= 1) {
    if (ly < s) {
      for (uint k = 0; k < 4; k++) {
        ACC a = la[k][ly][lx], b = la[k][ly + s][lx];
#ifdef ARG
        long ia = li[k][ly][lx], ib = li[k][ly + s][lx];
        COMBINE(a, ia, b, ib);
        li[k][ly][lx] = ia;
#else
        COMBINE(a, 0, b, 0);
#endif
        la[k][ly][lx] = a;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (ly == 0 && x < q) {
    for (uint k = 0; k < 4; k++) {
#ifdef ARG
      long ik = li[k][0][lx];
#else
      long ik = 0;
#endif
      if (final) res[o * inner + 4 * x + k] = FINAL(la[k][0][lx], ik, count);
      else {
        ulong at = (o * nsplit + p) * inner + 4 * x + k;
        part[at] = la[k][0][lx];
#ifdef ARG
        pidx[at] = ik;
#endif
      }
    }
  }
}
