/*
** reduce.cl: the kernels of luagpu.reduce (lua/luagpu/reduce.lua).
**
** A reduction runs in at most two passes:
**   reduce_groups    a fixed grid of G groups of L work-items reads the
**                    input once (vector loads, several accumulators per
**                    work-item) and writes one partial per group;
**   reduce_partials  one group folds the G partials into out[0].
** When G is 1 the first pass writes the result itself. With SINGLE_PASS
** 1 there is no second kernel: reduce_groups also takes the result and a
** counter (a uint, 0 between calls); each group counts itself in once its
** partial is written, and the last one folds the partials into result[0],
** as reduce_partials would, and sets the counter back to 0.
**
** The helper prepends these definitions:
**   T        element type (a scalar type)
**   TV       the vector of VW elements of T (float4 for float)
**   VW       elements per vector load (the device class's vector_bytes'
**            worth, within the base address alignment; at least 2)
**   ACC      accumulator and result type
**   INPUTS   1: map(x, i); 2: map(x, y, i), reading two buffers
**   MAP      expression in x (and y), i (0-based index): what is folded
**   OP       expression in a and b: the associative operator
**   NEUTRAL  expression: the neutral element of OP
**   STRIDED  1: grid-stride loop (GPUs: neighbours read neighbouring
**            vectors); 0: each work-item reads one contiguous chunk (CPUs)
**   BLOCK    0, or the number of iterations folded into a fresh
**            accumulator before it joins the running one (keeps float
**            sums accurate: error grows with BLOCK + count/BLOCK, not count)
**   UNROLL   1 or 2: vectors loaded per iteration before they are folded
**   SINGLE_PASS  1: the last group folds the partials (see above); 0 or
**            undefined: reduce_partials does
*/
#ifndef SINGLE_PASS
#define SINGLE_PASS 0
#endif

inline ACC lg_op(ACC a, ACC b) { return (ACC)(OP); }

#if INPUTS == 2
inline ACC lg_map(T x, T y, ulong i) { return (ACC)(MAP); }
#define MAP_AT(e) lg_map(x[e], y[e], (e))
#define MAP_V(v, w, k, e) lg_map(((const T *)&(v))[k], ((const T *)&(w))[k], (e))
#else
inline ACC lg_map(T x, ulong i) { return (ACC)(MAP); }
#define MAP_AT(e) lg_map(x[e], (e))
#define MAP_V(v, w, k, e) lg_map(((const T *)&(v))[k], (e))
#endif

/* Local-memory tree over the L values of a group (L a power of two);
** returns the group's value to every work-item (valid in work-item 0). */
inline ACC lg_group_fold(ACC v, __local ACC *scratch) {
  size_t lid = get_local_id(0);
  size_t s;
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] = lg_op(scratch[lid], scratch[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return scratch[0];
}

/* x, y: the inputs, whose elements start at xoff, yoff; n elements. The
** vectors start at element head (so that x + xoff + head is aligned to a
** whole vector, and y + yoff + head too) and there are nvec of them; the
** elements before head and after them are folded one by one. out: one
** partial per group. */
__kernel void reduce_groups(__global const T *x, ulong xoff,
#if INPUTS == 2
                            __global const T *y, ulong yoff,
#endif
                            ulong n, ulong head, ulong nvec,
                            __global ACC *out, __local ACC *scratch
#if SINGLE_PASS
                            , __global ACC *result, __global volatile uint *count
#endif
                            ) {
#if SINGLE_PASS
  __local int last;                         /* kernel scope, as OpenCL wants */
#endif
  size_t gid = get_global_id(0), gsz = get_global_size(0);
  ulong start, step, end, j, e, tail;
  ACC acc[VW];
  ACC r;
  int k;
  __global const TV *xv;
#if INPUTS == 2
  __global const TV *yv;
  y += yoff;
  yv = (__global const TV *)(y + head);
#endif
  x += xoff;
  xv = (__global const TV *)(x + head);

#if STRIDED
  start = gid; step = gsz; end = nvec;
#else
  {
    ulong per = (nvec + gsz - 1) / gsz;
    start = gid * per; step = 1;
    end = start + per < nvec ? start + per : nvec;
  }
#endif

  for (k = 0; k < VW; k++) acc[k] = (ACC)(NEUTRAL);
  j = start;
  while (j < end) {
#if BLOCK
    ulong stop = end - j > (ulong)BLOCK * step ? j + (ulong)BLOCK * step : end;
#else
    ulong stop = end;
#endif
    ACC blk[VW];
    for (k = 0; k < VW; k++) blk[k] = (ACC)(NEUTRAL);
#if UNROLL == 2
    for (; j + step < stop; j += 2 * step) {
      TV v0 = xv[j], v1 = xv[j + step];
#if INPUTS == 2
      TV w0 = yv[j], w1 = yv[j + step];
#endif
      ulong e0 = head + j * VW, e1 = head + (j + step) * VW;
#pragma unroll
      for (k = 0; k < VW; k++) {
        blk[k] = lg_op(blk[k], MAP_V(v0, w0, k, e0 + (ulong)k));
        blk[k] = lg_op(blk[k], MAP_V(v1, w1, k, e1 + (ulong)k));
      }
    }
#endif
    for (; j < stop; j += step) {
      TV v0 = xv[j];
#if INPUTS == 2
      TV w0 = yv[j];
#endif
      ulong e0 = head + j * VW;
#pragma unroll
      for (k = 0; k < VW; k++)
        blk[k] = lg_op(blk[k], MAP_V(v0, w0, k, e0 + (ulong)k));
    }
    for (k = 0; k < VW; k++) acc[k] = lg_op(acc[k], blk[k]);
  }

  /* pairwise over the accumulators */
  for (k = 1; k < VW; k <<= 1) {
    int m;
    for (m = 0; m + k < VW; m += 2 * k) acc[m] = lg_op(acc[m], acc[m + k]);
  }
  r = acc[0];

  /* the few elements outside the vectors */
  for (e = gid; e < head; e += gsz) r = lg_op(r, MAP_AT(e));
  tail = head + nvec * VW;
  for (e = tail + gid; e < n; e += gsz) r = lg_op(r, MAP_AT(e));

  r = lg_group_fold(r, scratch);
  if (get_local_id(0) == 0) out[get_group_id(0)] = r;
#if SINGLE_PASS
  if (get_num_groups(0) > 1) {
    size_t lid = get_local_id(0), lsz = get_local_size(0);
    uint groups = (uint)get_num_groups(0);
    if (lid == 0) {
      mem_fence(CLK_GLOBAL_MEM_FENCE);      /* the partial, before the count */
      last = atomic_inc(count) == groups - 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (last) {
      __global volatile ACC *partials = (__global volatile ACC *)out;
      mem_fence(CLK_GLOBAL_MEM_FENCE);
      r = (ACC)(NEUTRAL);
      for (e = lid; e < groups; e += lsz) r = lg_op(r, partials[e]);
      r = lg_group_fold(r, scratch);
      if (lid == 0) {
        result[0] = r;
        *count = 0;
      }
    }
  }
#endif
}

/* One group folds the n partials of in into out[0] (NEUTRAL when n is 0). */
__kernel void reduce_partials(__global const ACC *in, uint n,
                              __global ACC *out, __local ACC *scratch) {
  size_t lid = get_local_id(0), lsz = get_local_size(0);
  size_t e;
  ACC r = (ACC)(NEUTRAL);
  for (e = lid; e < n; e += lsz) r = lg_op(r, in[e]);
  r = lg_group_fold(r, scratch);
  if (lid == 0) out[0] = r;
}
