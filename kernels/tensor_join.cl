/*
** tensor_join.cl: gpu.cat's copy of up to four contiguous inputs in one
** launch (lua/luagpu/tensor/join.lua), where each input's part of the
** output is one run of its elements.
**
** Output element i (from ooff) comes from input k where start[k] <= i <
** start[k + 1] (start[0] = 0; inputs past the last given start at total),
** from its element i - start[k] (from off[k]). With VEC 4, a work-item
** moves four elements: every start, offset and total is then a multiple of
** 4, so the four come from one input and every vector is aligned.
**
** The helper prepends T (element type) and VEC (1 or 4).
*/
#define LG_CAT_(a, b) a##b
#define LG_CAT(a, b) LG_CAT_(a, b)
#if VEC == 4
#define V LG_CAT(T, 4)
#else
#define V T
#endif

__kernel void lg_cat4(__global T *out, ulong ooff, ulong total, __global const T *x0,
                      __global const T *x1, __global const T *x2, __global const T *x3,
                      ulong4 off, ulong4 start) {
  ulong i = get_global_id(0) * VEC;
  if (i >= total) return;
  __global const T *src;
  if (i < start.s1) src = x0 + off.s0 + i;
  else if (i < start.s2) src = x1 + off.s1 + (i - start.s1);
  else if (i < start.s3) src = x2 + off.s2 + (i - start.s2);
  else src = x3 + off.s3 + (i - start.s3);
  *(__global V *)(out + ooff + i) = *(__global const V *)src;
}
