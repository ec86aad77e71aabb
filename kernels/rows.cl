/* rows.cl: softmax, log_softmax and logsumexp (rows_softmax), var and std
** (rows_var) of the rows of a contiguous tensor, one kernel a call
** (lua/luagpu/tensor/rows.lua).
**
** Defined by the caller: T (element type, float or double), MODE (0
** softmax, 1 log_softmax, 2 logsumexp, 3 var, 4 std), LS (work-items per group, a power
** of two), ITEMS (chunks each work-item keeps in registers), VW (elements
** per chunk: 1, or 4 where rows and the offset are multiples of 4).
**
** WARP_PTX (float only, LS a multiple of 32, NVIDIA's compiler with
** LG_ASM its inline-assembly keyword): a row's work-items combine their
** values by warp shuffles, and a row of several warps through one slot a
** warp in local memory; else by a tree in local memory.
**
** Arguments: x at xoff, rows of L elements, nrows rows; y at yoff (MODE
** 0, 1: rows of L; MODE 2: one element per row); tpr, the work-items of
** a row (a power of two dividing LS: a group holds LS / tpr rows).
**
** A row that fits the registers (at most tpr * ITEMS * VW elements) is
** read once: its max m first (fmax skips NaNs: m is never NaN), then the
** sum s of exp(a - m), each exp taken once and kept for softmax's output,
** then written once. A longer row is read twice: each work-item folds its
** elements into a running max and a running sum of exp(a - max), rescaled
** by exp(m_old - m_new) when the max grows, and the row's work-items
** combine theirs (each sum rescaled to the row's max). exp(a - m) is taken
** as 1 where a == m, so that infinities count once: a NaN element makes s
** NaN, a row of -inf only has m = -inf and s = its count.
**
** Results, as PyTorch's: softmax exp(x - m) / s and log_softmax
** (x - m) - log(s), both NaN throughout a row whose max is +inf or -inf
** (an +inf element, or nothing but -inf); logsumexp m + log(s) (+inf with
** an +inf element, -inf for a row of -inf or an empty row, NaN with a NaN).
*/
#define CAT(a, b) a##b
#define XCAT(a, b) CAT(a, b)
#define TV XCAT(T, 4)
#define NEG_INF ((T)(-INFINITY))

/* exp(a - m), 1 where a == m */
#define SCALE(a, m) ((a) == (m) ? (T)1 : exp((a) - (m)))

#if VW == 4
#define LOADV(v, c) { TV w_ = ((global const TV*)(x + base))[c]; \
    v[0] = w_.s0; v[1] = w_.s1; v[2] = w_.s2; v[3] = w_.s3; }
#define STOREV(c, v) ((global TV*)(y + obase))[c] = (TV)(v[0], v[1], v[2], v[3])
#else
#define LOADV(v, c) { v[0] = x[base + (c)]; }
#define STOREV(c, v) y[obase + (c)] = v[0]
#endif

#if MODE == 0
#define OUT1(a) (bad ? (T)NAN : exp((a) - m) / s)
#elif MODE == 1
#define OUT1(a) (bad ? (T)NAN : ((a) - m) - ls)
#endif


#if WARP_PTX
/* v of the work-item d lanes away in the butterfly (lane ^ d) of its warp */
inline float lg_bfly(float v, uint d) {
  uint r;
  LG_ASM volatile("shfl.sync.bfly.b32 %0, %1, %2, 31, 0xffffffff;" : "=r"(r)
                  : "r"(as_uint(v)), "r"(d));
  return as_float(r);
}
#endif

/* The max (MAX 1) or sum (MAX 0) of v over the tpr work-items of this
** work-item's row, for every one of them; every work-item of the group
** calls it (tpr is the group's). part: LS slots of local memory, free
** when called (the first barrier waits for the readers of its last use). */
#define ROW_OP(MAX, a, b) ((MAX) ? fmax((a), (b)) : (a) + (b))
inline T row_combine(T v, int max, local T *part, uint lid, uint lane, uint tpr) {
#if WARP_PTX
  uint w = tpr < 32 ? tpr : 32;
  for (uint h = w / 2; h > 0; h >>= 1) v = ROW_OP(max, v, lg_bfly(v, h));
  if (tpr <= 32) return v;
  barrier(CLK_LOCAL_MEM_FENCE);
  if ((lid & 31) == 0) part[lid >> 5] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint first = (lid - lane) >> 5, nw = tpr >> 5;
  T r = part[first];
  for (uint i = 1; i < nw; i++) r = ROW_OP(max, r, part[first + i]);
  return r;
#else
  barrier(CLK_LOCAL_MEM_FENCE);
  part[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = tpr / 2; h > 0; h >>= 1) {
    if (lane < h) part[lid] = ROW_OP(max, part[lid], part[lid + h]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return part[lid - lane];
#endif
}
#define row_max(v, part, lid, lane, tpr) row_combine((v), 1, (part), (lid), (lane), (tpr))
#define row_sum(v, part, lid, lane, tpr) row_combine((v), 0, (part), (lid), (lane), (tpr))

#if MODE <= 2
kernel void rows_softmax(global const T* restrict x, ulong xoff, global T* restrict y,
                         ulong yoff, ulong L, ulong nrows, uint tpr) {
  uint lid = get_local_id(0);
  uint lane = lid & (tpr - 1);
  ulong row = (ulong)get_group_id(0) * (LS / tpr) + lid / tpr;
  int active = row < nrows;
  ulong base = xoff + (active ? row : 0) * L;
  ulong nchunks = L / VW;                  /* VW divides L */
  int cached = nchunks <= (ulong)tpr * ITEMS;
  local T part[LS];
  T m = NEG_INF, s = 0;
  T v[ITEMS][VW];
  if (cached) {
#pragma unroll
    for (uint t = 0; t < ITEMS; t++) {
      ulong c = lane + (ulong)t * tpr;
      if (active && c < nchunks) { LOADV(v[t], c) }
      else { for (uint k = 0; k < VW; k++) v[t][k] = NEG_INF; }
#pragma unroll
      for (uint k = 0; k < VW; k++) m = fmax(m, v[t][k]);
    }
  } else if (active) {
    for (ulong c = lane; c < nchunks; c += tpr) {
      T w[VW];
      LOADV(w, c)
      for (uint k = 0; k < VW; k++) {
        T a = w[k], m2 = fmax(m, a);
        s = s * SCALE(m, m2) + SCALE(a, m2);
        m = m2;
      }
    }
  }
  T rm = row_max(m, part, lid, lane, tpr);
  if (cached) {
    if (active) {
#pragma unroll
      for (uint t = 0; t < ITEMS; t++) {
        ulong c = lane + (ulong)t * tpr;
        if (c < nchunks) {
#pragma unroll
          for (uint k = 0; k < VW; k++) {
            T e = SCALE(v[t][k], rm);
            s += e;
#if MODE == 0
            v[t][k] = e;                   /* softmax's output: e / s */
#endif
          }
        }
      }
    }
  } else {
    s = s * SCALE(m, rm);                  /* (m is -inf only where s counts -infs or is 0) */
  }
  s = row_sum(s, part, lid, lane, tpr);
  m = rm;
  if (!active) return;
#if MODE == 2
  if (lane == 0) y[yoff + row] = m + log(s);
#else
  int bad = isinf(m);
#if MODE == 1
  T ls = log(s);
#endif
  ulong obase = yoff + row * L;
  if (cached) {
#pragma unroll
    for (uint t = 0; t < ITEMS; t++) {
      ulong c = lane + (ulong)t * tpr;
      if (c < nchunks) {
        T o[VW];
#pragma unroll
        for (uint k = 0; k < VW; k++) {
#if MODE == 0
          o[k] = bad ? (T)NAN : v[t][k] / s;
#else
          o[k] = OUT1(v[t][k]);
#endif
        }
        STOREV(c, o);
      }
    }
  } else {
    for (ulong c = lane; c < nchunks; c += tpr) {
      T w[VW], o[VW];
      LOADV(w, c)
      for (uint k = 0; k < VW; k++) o[k] = OUT1(w[k]);
      STOREV(c, o);
    }
  }
#endif
}
#endif

#if MODE == 3 || MODE == 4
/* var (MODE 3) or std (MODE 4) of each row of L elements: two passes, the
** mean then sum((a - mean)^2), over the registers where the row fits
** (else the row read twice); y[row] = that sum / div (its square root for
** std), NaN where div <= 0. */
kernel void rows_var(global const T* restrict x, ulong xoff, global T* restrict y,
                     ulong yoff, ulong L, ulong nrows, uint tpr, T div) {
  uint lid = get_local_id(0);
  uint lane = lid & (tpr - 1);
  ulong row = (ulong)get_group_id(0) * (LS / tpr) + lid / tpr;
  int active = row < nrows;
  ulong base = xoff + (active ? row : 0) * L;
  ulong nchunks = L / VW;
  int cached = nchunks <= (ulong)tpr * ITEMS;
  local T part[LS];
  T v[ITEMS][VW];
  T s = 0;
  if (cached) {
#pragma unroll
    for (uint t = 0; t < ITEMS; t++) {
      ulong c = lane + (ulong)t * tpr;
      if (active && c < nchunks) { LOADV(v[t], c) }
      else { for (uint k = 0; k < VW; k++) v[t][k] = 0; }
#pragma unroll
      for (uint k = 0; k < VW; k++) s += v[t][k];
    }
  } else if (active) {
    for (ulong c = lane; c < nchunks; c += tpr) {
      T w[VW];
      LOADV(w, c)
      for (uint k = 0; k < VW; k++) s += w[k];
    }
  }
  T mean = row_sum(s, part, lid, lane, tpr) / (T)L;
  s = 0;
  if (cached) {
#pragma unroll
    for (uint t = 0; t < ITEMS; t++) {
      ulong c = lane + (ulong)t * tpr;
      if (active && c < nchunks) {
#pragma unroll
        for (uint k = 0; k < VW; k++) { T d = v[t][k] - mean; s += d * d; }
      }
    }
  } else if (active) {
    for (ulong c = lane; c < nchunks; c += tpr) {
      T w[VW];
      LOADV(w, c)
      for (uint k = 0; k < VW; k++) { T d = w[k] - mean; s += d * d; }
    }
  }
  s = row_sum(s, part, lid, lane, tpr);
  if (active && lane == 0) {
    T r = div > 0 ? s / div : (T)NAN;
#if MODE == 4
    r = sqrt(r);
#endif
    y[yoff + row] = r;
  }
}
#endif
