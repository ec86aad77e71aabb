/*
** histogram.cl: luagpu.algo's histograms (lua/luagpu/algo_histogram.lua).
** A fixed grid of groups strides over the input; each group counts into
** its own bins in local memory (atomics), then adds them to out (global
** atomics). With too many bins for local memory, hist_global counts into
** out directly.
**
** The helper prepends: T (input element type), FT (float or double: the
** type of the range arithmetic), RANGE (1: fixed-width bins over [lo, hi];
** 0: integer keys, key k in bin k), SIGNED (1 when T is a signed type).
**
** Ranges (all FT, checked and computed by the helper): an element x counts
** when lo <= x <= hi, lo and hi the range rounded to FT. Bin k holds the x
** from edge k = (plo + k * ((phi - plo) / bins)) * ip up to the next edge
** (hi itself in the last bin), where p = 1 / ip is a power of two (1, or
** less when hi - lo would overflow FT) and plo, phi are lo * p and hi * p
** rounded: with p = 1 NumPy's edges. The bin is guessed from x * p's place
** in [plo, phi], then moved to the edges so computed (NumPy moves it by
** one; here until it fits). Nothing overflows: x * p and the scaled edges
** lie in [plo, phi], whose width is finite (an edge times ip past FT's
** numbers is an infinity, which compares as it should).
*/
#pragma OPENCL FP_CONTRACT OFF

#define EDGE(k) ((plo + (FT)(k) * step) * ip)

/* The 0-based bin of x, or -1 when it is outside the bins (or NaN). */
inline long lg_bin(T x, FT lo, FT hi, FT p, FT ip, FT plo, FT phi, uint bins) {
#if RANGE
  FT v = (FT)x, w, step;
  long b, last = (long)bins - 1;
  if (!(v >= lo && v <= hi)) return -1;
  w = phi - plo;
  step = w / (FT)bins;
  b = (long)((v * p - plo) / w * (FT)bins);    /* (v * p - plo) / w is about [0, 1] */
  if (b > last) b = last;
  if (b < 0) b = 0;
  while (b > 0 && v < EDGE(b)) b--;
  while (b < last && v >= EDGE(b + 1)) b++;
  return b;
#else
#if SIGNED
  if (x < 0) return -1;
#endif
  return (ulong)x < (ulong)bins ? (long)x : -1;
#endif
}

#define RANGE_ARGS FT lo, FT hi, FT p, FT ip, FT plo, FT phi

__kernel void hist_local(__global const T *x, ulong xoff, ulong n, RANGE_ARGS, uint bins,
                         __global uint *out, __local uint *h) {
  size_t lid = get_local_id(0), lsz = get_local_size(0);
  ulong i;
  uint k;
  ulong step = get_global_size(0);
  for (k = lid; k < bins; k += lsz) h[k] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  /* four elements a work-item in flight: their loads first, then their
     bins (one load at a time waited on each) */
  i = get_global_id(0);
  for (; i < n && n - i > 3 * step; i += 4 * step) {
    T a0 = x[xoff + i], a1 = x[xoff + i + step];
    T a2 = x[xoff + i + 2 * step], a3 = x[xoff + i + 3 * step];
    long b0 = lg_bin(a0, lo, hi, p, ip, plo, phi, bins);
    long b1 = lg_bin(a1, lo, hi, p, ip, plo, phi, bins);
    long b2 = lg_bin(a2, lo, hi, p, ip, plo, phi, bins);
    long b3 = lg_bin(a3, lo, hi, p, ip, plo, phi, bins);
    if (b0 >= 0) atomic_inc(&h[b0]);
    if (b1 >= 0) atomic_inc(&h[b1]);
    if (b2 >= 0) atomic_inc(&h[b2]);
    if (b3 >= 0) atomic_inc(&h[b3]);
  }
  for (; i < n; i += step) {
    long b = lg_bin(x[xoff + i], lo, hi, p, ip, plo, phi, bins);
    if (b >= 0) atomic_inc(&h[b]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (k = lid; k < bins; k += lsz)
    if (h[k]) atomic_add(&out[k], h[k]);
}

__kernel void hist_global(__global const T *x, ulong xoff, ulong n, RANGE_ARGS, uint bins,
                          __global uint *out) {
  ulong i;
  for (i = get_global_id(0); i < n; i += get_global_size(0)) {
    long b = lg_bin(x[xoff + i], lo, hi, p, ip, plo, phi, bins);
    if (b >= 0) atomic_inc(&out[b]);
  }
}
