/*
** histogram.cl: luagpu.algo's histograms (lua/luagpu/algo_histogram.lua).
** A fixed grid of groups strides over the input; each group counts into
** its own bins in local memory (atomics), then adds them to out (global
** atomics). With too many bins for local memory, hist_global counts into
** out directly.
**
** The helper prepends: T (input element type), FT (float or double: the
** type of the range arithmetic), RANGE (1: fixed-width bins over [lo, hi],
** bin floor((x - lo) * scale), hi itself in the last bin; 0: integer keys,
** key k in bin k), SIGNED (1 when T is a signed type).
*/

/* The 0-based bin of x, or -1 when it is outside the bins (or NaN). */
inline long lg_bin(T x, FT lo, FT hi, FT scale, uint bins) {
#if RANGE
  FT v = (FT)x;
  long b;
  if (!(v >= lo && v <= hi)) return -1;
  b = (long)((v - lo) * scale);
  return b < (long)bins ? b : (long)bins - 1;
#else
#if SIGNED
  if (x < 0) return -1;
#endif
  return (ulong)x < (ulong)bins ? (long)x : -1;
#endif
}

__kernel void hist_local(__global const T *x, ulong xoff, ulong n, FT lo, FT hi, FT scale,
                         uint bins, __global uint *out, __local uint *h) {
  size_t lid = get_local_id(0), lsz = get_local_size(0);
  ulong i;
  uint k;
  for (k = lid; k < bins; k += lsz) h[k] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (i = get_global_id(0); i < n; i += get_global_size(0)) {
    long b = lg_bin(x[xoff + i], lo, hi, scale, bins);
    if (b >= 0) atomic_inc(&h[b]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (k = lid; k < bins; k += lsz)
    if (h[k]) atomic_add(&out[k], h[k]);
}

__kernel void hist_global(__global const T *x, ulong xoff, ulong n, FT lo, FT hi, FT scale,
                          uint bins, __global uint *out) {
  ulong i;
  for (i = get_global_id(0); i < n; i += get_global_size(0)) {
    long b = lg_bin(x[xoff + i], lo, hi, scale, bins);
    if (b >= 0) atomic_inc(&out[b]);
  }
}
