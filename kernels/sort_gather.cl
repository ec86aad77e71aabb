/*
** sort_gather.cl: what luagpu.algo's sorts do with the indices a radix
** sort carried (lua/luagpu/algo_sort.lua). The helper prepends V, an
** element type: of the values moved, or of the positions written.
*/

/* dst[doff + i] = src[soff + idx[i]]: the values in the keys' new order. */
__kernel void sort_gather(__global const V *src, ulong soff, __global V *dst, ulong doff,
                          __global const uint *idx, ulong n) {
  ulong i = get_global_id(0);
  if (i < n) dst[doff + i] = src[soff + idx[i]];
}

/* out[ooff + i] = the position of idx[i] in its row of rowlen, plus base
** (0 or 1). (Indices are below 2^32: 32-bit arithmetic, and no division
** where the whole is one row.) */
__kernel void sort_positions(__global const uint *idx, __global V *out, ulong ooff, ulong n,
                             ulong rowlen, uint base) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  uint k = idx[i];
  if (rowlen < n) k = (uint)(k % (uint)rowlen);
  out[ooff + i] = (V)((ulong)k + base);
}
