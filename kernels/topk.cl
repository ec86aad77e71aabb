/*
** topk.cl: x:topk(k) along the last dim of contiguous rows, for k up to
** 128 (lua/luagpu/tensor/topk.lua), without sorting the rows.
**
** Defined by the caller: T (element type), K (a power of two >= k), LS
** (work-items per group; LS * K entries fit local memory), IS_FLOAT.
** Arguments: largest (1: the largest first, 0: the smallest first), pairs
** (0: the input is the rows themselves, an element's position its place in
** the row; 1: the input is a previous pass's candidates, each with its
** position in pos).
**
** A group takes a chunk of one row: each work-item keeps the best K of the
** elements it reads (a sorted list in private memory, best first), then
** the group merges its lists pairwise in local memory, and writes the best
** `kout` of its chunk: values to out, positions to opos (0-based, or
** 1-based with one_based). A chunk shorter than K leaves empty entries
** (position -1), worse than any element, which the next pass skips.
**
** The order (as the stable sort topk replaced gives): a NaN is the largest
** value (first with largest, last without); equal values (-0.0 and 0.0
** among them) in order of position.
*/

typedef struct { T v; long p; } Entry;

/* Whether entry a goes before entry b. */
inline int lg_before(Entry a, Entry b, int largest) {
  if (a.p < 0) return 0;
  if (b.p < 0) return 1;
#if IS_FLOAT
  int na = isnan(a.v), nb = isnan(b.v);
  if (na != nb) return largest ? na : nb;
  if (!na && a.v != b.v) return largest ? a.v > b.v : a.v < b.v;
#else
  if (a.v != b.v) return largest ? a.v > b.v : a.v < b.v;
#endif
  return a.p < b.p;
}

kernel void topk_pass(global const T* restrict x, ulong xoff, global const long* restrict pos,
                      ulong poff, ulong L, ulong chunk, ulong nchunks, global T* restrict out,
                      ulong ooff, global long* restrict opos, ulong opoff, ulong kout,
                      int one_based, int largest, int pairs) {
  uint lid = get_local_id(0);
  ulong g = get_group_id(0);
  ulong row = g / nchunks, c = g - row * nchunks;
  ulong start = c * chunk, end = min(L, start + chunk);
  Entry best[K];
  for (uint t = 0; t < K; t++) { best[t].v = (T)0; best[t].p = -1; }
  for (ulong i = start + lid; i < end; i += LS) {
    Entry e;
    e.v = x[xoff + row * L + i];
    e.p = pairs ? pos[poff + row * L + i] : (long)i;
    if (lg_before(e, best[K - 1], largest)) {
      uint j = K - 1;
      while (j > 0 && lg_before(e, best[j - 1], largest)) { best[j] = best[j - 1]; j--; }
      best[j] = e;
    }
  }
  /* the group's lists merged pairwise: list lid takes list lid + h */
  local Entry lists[LS * K];
  for (uint t = 0; t < K; t++) lists[lid * K + t] = best[t];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = LS / 2; h > 0; h >>= 1) {
    if (lid < h) {
      uint a = lid * K, b = (lid + h) * K, i = 0, j = 0;
      for (uint t = 0; t < K; t++) {     /* i + j == t: both below K */
        Entry ea = lists[a + i], eb = lists[b + j];
        if (!lg_before(eb, ea, largest)) { best[t] = ea; i++; }
        else { best[t] = eb; j++; }
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < h) for (uint t = 0; t < K; t++) lists[lid * K + t] = best[t];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    for (ulong t = 0; t < kout; t++) {
      Entry e = lists[t];
      out[ooff + g * kout + t] = e.v;
      opos[opoff + g * kout + t] = e.p < 0 ? -1 : e.p + one_based;
    }
  }
}
