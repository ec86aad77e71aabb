/* rows.cl: softmax, log_softmax and logsumexp (rows_softmax), var and std
** (rows_var) of the rows of a contiguous tensor, one kernel a call
** (lua/luagpu/tensor/rows.lua).
**
** Defined by the caller: T (element type, float or double), MODE (0
** softmax, 1 log_softmax, 2 logsumexp, 3 var, 4 std), LS (work-items per group, a power
** of two), ITEMS (chunks each work-item keeps in registers), VW (elements
** per chunk: 1, or 4 where rows and the offset are multiples of 4).
**
** Arguments: x at xoff, rows of L elements, nrows rows; y at yoff (MODE
** 0, 1: rows of L; MODE 2: one element per row); tpr, the work-items of
** a row (a power of two dividing LS: a group holds LS / tpr rows).
**
** Each work-item folds its elements into a running max m and a running
** sum s of exp(x - m), rescaled by exp(m_old - m_new) when m grows; the
** row's work-items combine theirs in local memory. exp(a - m) is taken
** as 1 where a == m, so that infinities count once: m is never NaN (fmax
** skips NaNs), a NaN element makes s NaN, a row of -inf only has m = -inf
** and s = its count. Rows of at most tpr * ITEMS * VW elements stay in
** registers (one read, one write); longer rows are read twice.
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
    if (active) {
#pragma unroll
      for (uint t = 0; t < ITEMS; t++) {
        ulong c = lane + (ulong)t * tpr;
        if (c < nchunks) {
#pragma unroll
          for (uint k = 0; k < VW; k++) s += SCALE(v[t][k], m);
        }
      }
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
  /* the row's work-items combine (m, s) in local memory */
  local T lm[LS], lsum[LS];
  lm[lid] = m; lsum[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = tpr / 2; h > 0; h >>= 1) {
    if (lane < h) {
      T m1 = lm[lid], m2 = lm[lid + h], mm = fmax(m1, m2);
      lsum[lid] = lsum[lid] * SCALE(m1, mm) + lsum[lid + h] * SCALE(m2, mm);
      lm[lid] = mm;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (!active) return;
  m = lm[lid - lane]; s = lsum[lid - lane];
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
        for (uint k = 0; k < VW; k++) o[k] = OUT1(v[t][k]);
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
/* The row's work-items add their s in local memory; every one gets the sum. */
inline T row_sum(T s, local T *part, uint lid, uint lane, uint tpr) {
  barrier(CLK_LOCAL_MEM_FENCE);              /* part may hold the last sum */
  part[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = tpr / 2; h > 0; h >>= 1) {
    if (lane < h) part[lid] += part[lid + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return part[lid - lane];
}

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
