/*
** tensor_index.cl: gathers and scatters by an index tensor
** (lua/luagpu/tensor/index.lua): x:gather, x:index_select (whole rows
** by lg_index_rows where the rows are long), x:take,
** x:scatter, x:scatter_add, x:put, and masked_select's take.
**
** Work-item i takes element i of the index tensor's shape (ND dims, given
** last-first in the vectors' lanes s0.. like luagpu.tensor.codegen's): its
** position in the index tensor, in the source (src) and in the data
** tensor (dat, read by a gather, written by a scatter) follow from its
** coordinates and each one's strides; the data position adds (p - 1) *
** dstep, p the index value (1-based, negatives from the end: p + len + 1).
** A value out of 1..len is not used: the first such value is recorded in
** bad (bad[0] a flag set once, bad[1] the value) for the caller to read.
** Positions are computed in IDX (uint when every buffer involved has
** fewer than 2^31 elements, else ulong: a 64-bit division costs several
** 32-bit ones) from signed strides (negative for reversed views): the
** sums wrap to the right place.
**
** The helper prepends T (element type), I (index type), IDX, ND, and for
** scatter_add ADD_KIND: 1 integer atomics of 32 bits, 2 of 64 bits (the
** device's cl_khr_int64_base_atomics), 3 float through a 32-bit compare
** and swap, 4 double through a 64-bit one, 5 float through NVIDIA's
** atom.global.add.f32 (inline PTX, LG_ASM the keyword that builds it).
*/

#if ADD_KIND == 2 || ADD_KIND == 4
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif

#define LANE(v, k) ((k) == 0 ? (v).s0 : (k) == 1 ? (v).s1 : (k) == 2 ? (v).s2 :       \
                    (k) == 3 ? (v).s3 : (k) == 4 ? (v).s4 : (k) == 5 ? (v).s5 :       \
                    (k) == 6 ? (v).s6 : (v).s7)

/* The positions of element i: in the index tensor (*ip), the source
** (*sp) and the data tensor without the indexed dim (*dp). */
inline void lg_places(IDX i, ulong8 shape, long8 ist, long8 sst, long8 dst, IDX *ip,
                      IDX *sp, IDX *dp) {
  IDX r = i, a = *ip, b = *sp, c = *dp;
#pragma unroll
  for (int k = 0; k < ND; k++) {
    IDX n = (IDX)LANE(shape, k);
    IDX q = k + 1 < ND ? r % n : r;
    r = k + 1 < ND ? r / n : 0;
    a += q * (IDX)LANE(ist, k);
    b += q * (IDX)LANE(sst, k);
    c += q * (IDX)LANE(dst, k);
  }
  *ip = a; *sp = b; *dp = c;
}

/* The 0-based place of index value v in a dim of len, or -1 (recorded). */
inline long lg_place(long v, long len, volatile global long *bad) {
  long p = v < 0 ? v + len + 1 : v;
  if (p < 1 || p > len) {
    if (atomic_cmpxchg((volatile global int *)bad, 0, 1) == 0) bad[1] = v;
    return -1;
  }
  return p - 1;
}

/* out[i] = dat[position of element i, at index value idx(i)] */
__kernel void lg_gather(__global T *out, ulong ooff, ulong8 shape,
                        __global const I *idx, ulong ioff, long8 ist,
                        __global const T *dat, ulong doff, long8 dst, long dstep, long len,
                        ulong n, volatile __global long *bad) {
  IDX i = (IDX)get_global_id(0);
  if (i >= n) return;
  IDX ip = (IDX)ioff, sp = 0, dp = (IDX)doff;
  lg_places(i, shape, ist, (long8)(0), dst, &ip, &sp, &dp);
  long p = lg_place((long)idx[ip], len, bad);
  out[ooff + i] = p < 0 ? (T)0 : dat[(IDX)(dp + (IDX)p * (IDX)dstep)];
}

#define LG_T4 LG_CAT(T, 4)
#define LG_CAT(a, b) LG_CAT2(a, b)
#define LG_CAT2(a, b) a##b

/* The same along the last dim of rows that fit local memory: a group per
** row of out (m elements), whose data row (len elements, dstep apart) is
** read once, coalesced, into row; the positions then read it there, not
** a sector of global memory each. Built with ND the number of leading
** dims (those before the indexed one): lead, ist and dst give theirs. */
__kernel void lg_gather_rows(__global T *out, ulong ooff, ulong8 lead,
                             __global const I *idx, ulong ioff, long8 ist, long istep,
                             __global const T *dat, ulong doff, long8 dst, long dstep,
                             long len, ulong m, volatile __global long *bad,
                             __local T *row) {
  IDX r = (IDX)get_group_id(0), lid = (IDX)get_local_id(0), ls = (IDX)get_local_size(0);
  IDX ip = (IDX)ioff, sp = 0, dp = (IDX)doff;
  lg_places(r, lead, ist, (long8)(0), dst, &ip, &sp, &dp);
  for (IDX c = lid; c < (IDX)len; c += ls) row[c] = dat[dp + c * (IDX)dstep];
  barrier(CLK_LOCAL_MEM_FENCE);
  IDX to = (IDX)ooff + r * (IDX)m;
  for (IDX j = lid; j < (IDX)m; j += ls) {
    long p = lg_place((long)idx[ip + j * (IDX)istep], len, bad);
    out[to + j] = p < 0 ? (T)0 : row[p];
  }
}

/* lg_gather_rows four elements of out per work-item: idx's rows
** contiguous (istep 1), m, ooff, ioff and idx's leading strides multiples
** of 4, so that every row of idx and of out starts on a vector of 4;
** rowvec: the data rows too (dstep 1, len, doff and dat's leading strides
** multiples of 4) are read 4 at a time. row4 is the row's local memory
** as vectors (a __local T* need not be aligned for them on NVIDIA's
** OpenCL: a vector store there faults). */
#define LG_I4 LG_CAT(I, 4)
__kernel void lg_gather_rows4(__global T *out, ulong ooff, ulong8 lead,
                              __global const I *idx, ulong ioff, long8 ist, long istep,
                              __global const T *dat, ulong doff, long8 dst, long dstep,
                              long len, ulong m, volatile __global long *bad,
                              __local LG_T4 *row4, int rowvec) {
  IDX r = (IDX)get_group_id(0), lid = (IDX)get_local_id(0), ls = (IDX)get_local_size(0);
  IDX ip = (IDX)ioff, sp = 0, dp = (IDX)doff;
  __local T *row = (__local T *)row4;
  lg_places(r, lead, ist, (long8)(0), dst, &ip, &sp, &dp);
  if (rowvec) {
    __global const LG_T4 *src = (__global const LG_T4 *)(dat + dp);
    for (IDX c = lid; c < (IDX)len / 4; c += ls) row4[c] = src[c];
  } else {
    for (IDX c = lid; c < (IDX)len; c += ls) row[c] = dat[dp + c * (IDX)dstep];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  __global const LG_I4 *from = (__global const LG_I4 *)(idx + ip);
  __global LG_T4 *to = (__global LG_T4 *)(out + (IDX)ooff + r * (IDX)m);
  for (IDX j = lid; j < (IDX)m / 4; j += ls) {
    LG_I4 v = from[j];
    long p0 = lg_place((long)v.s0, len, bad), p1 = lg_place((long)v.s1, len, bad);
    long p2 = lg_place((long)v.s2, len, bad), p3 = lg_place((long)v.s3, len, bad);
    to[j] = (LG_T4)(p0 < 0 ? (T)0 : row[p0], p1 < 0 ? (T)0 : row[p1],
                    p2 < 0 ? (T)0 : row[p2], p3 < 0 ? (T)0 : row[p3]);
  }
}

/* index_select of whole rows: out (contiguous, rows of b elements, a * m
** of them) row r = the row at idx(r % m) of block r / m of dat (rows of b,
** blocks of len rows, contiguous). The output is taken flat, W elements
** (a vector of W where W is 4) at a time: work-item l of group g copies
** units 2 g s + l and 2 g s + s + l (s the group's size), both loads in
** flight before the stores; at the copy's speed whatever the rows' length
** (bench/gpu/index_rows_probe.lua). lg_index_rows copies one element a
** unit, lg_index_rows4 four (b, doff and ooff multiples of 4). */
#define LG_ROW_UNIT(u, W, from, to)                                              \
  {                                                                             \
    IDX r = (u) / bw, c = (u) - r * bw;                                          \
    IDX blk = r / (IDX)m, j = r - blk * (IDX)m;                                  \
    long p = lg_place((long)idx[(IDX)ioff + j * (IDX)istep], len, bad);          \
    from = p < 0 ? ~(IDX)0 : (IDX)doff + ((blk * (IDX)len + (IDX)p) * bw + c) * W; \
    to = (IDX)ooff + (r * bw + c) * W;                                           \
  }
#define LG_INDEX_ROWS(V, W)                                                      \
  IDX s = (IDX)get_local_size(0), bw = (IDX)b / W, n = (IDX)rows * bw;            \
  IDX u0 = (IDX)get_group_id(0) * 2 * s + (IDX)get_local_id(0), u1 = u0 + s;      \
  if (u0 >= n) return;                                                           \
  IDX f0, t0, f1 = 0, t1 = 0;                                                    \
  LG_ROW_UNIT(u0, W, f0, t0)                                                     \
  if (u1 < n) LG_ROW_UNIT(u1, W, f1, t1)                                         \
  V v0 = f0 == ~(IDX)0 ? (V)0 : *(__global const V *)(dat + f0);                 \
  if (u1 < n) {                                                                  \
    V v1 = f1 == ~(IDX)0 ? (V)0 : *(__global const V *)(dat + f1);               \
    *(__global V *)(out + t0) = v0;                                              \
    *(__global V *)(out + t1) = v1;                                              \
  } else {                                                                       \
    *(__global V *)(out + t0) = v0;                                              \
  }

__kernel void lg_index_rows(__global T *restrict out, ulong ooff,
                            __global const I *restrict idx, ulong ioff, long istep, ulong m,
                            __global const T *restrict dat, ulong doff, long len, ulong b,
                            ulong rows, volatile __global long *bad) {
  LG_INDEX_ROWS(T, 1)
}

__kernel void lg_index_rows4(__global T *restrict out, ulong ooff,
                             __global const I *restrict idx, ulong ioff, long istep, ulong m,
                             __global const T *restrict dat, ulong doff, long len, ulong b,
                             ulong rows, volatile __global long *bad) {
  LG_INDEX_ROWS(LG_T4, 4)
}

/* dat[position of element i, at index value idx(i)] = src(i) (or +=) */
__kernel void lg_scatter(__global T *dat, ulong doff, long8 dst, long dstep, long len,
                         ulong8 shape, __global const I *idx, ulong ioff, long8 ist,
                         __global const T *src, ulong soff, long8 sst,
                         ulong n, volatile __global long *bad) {
  IDX i = (IDX)get_global_id(0);
  if (i >= n) return;
  IDX ip = (IDX)ioff, sp = (IDX)soff, dp = (IDX)doff;
  lg_places(i, shape, ist, sst, dst, &ip, &sp, &dp);
  long p = lg_place((long)idx[ip], len, bad);
  if (p < 0) return;
  IDX at = (IDX)(dp + (IDX)p * (IDX)dstep);
  T v = src[sp];
#if ADD_KIND == 0
  dat[at] = v;
#elif ADD_KIND == 1
  atomic_add((volatile global T *)(dat + at), v);
#elif ADD_KIND == 2
  atom_add((volatile global T *)(dat + at), v);
#elif ADD_KIND == 5
  float was;
  LG_ASM volatile("atom.global.add.f32 %0, [%1], %2;" : "=f"(was) : "l"(dat + at), "f"(v)
                  : "memory");
#elif ADD_KIND == 3
  volatile global uint *w = (volatile global uint *)(dat + at);
  uint old = *w, seen;
  while ((seen = atomic_cmpxchg(w, old, as_uint(as_float(old) + v))) != old) old = seen;
#else
  volatile global ulong *w = (volatile global ulong *)(dat + at);
  ulong old = *w, seen;
  while ((seen = atom_cmpxchg(w, old, as_ulong(as_double(old) + v))) != old) old = seen;
#endif
}

/* searchsorted: out[i] = the 1-based place of vals[i] in the n sorted
** elements (stride sstep): the first place whose element is not below it
** (right: above it), n + 1 past them all. NaN sorts last (as algo.sort and
** NumPy order it). */
#if IS_FLOAT
#define LG_LT(a, b) ((a) < (b) || (isnan(b) && !isnan(a)))
#else
#define LG_LT(a, b) ((a) < (b))
#endif
__kernel void lg_searchsorted(__global const T *sorted, ulong soff, long sstep, long n,
                              __global const T *vals, ulong voff, __global long *out,
                              ulong m, int right) {
  ulong i = get_global_id(0);
  if (i >= m) return;
  T v = vals[voff + i];
  long lo = 0, hi = n;
  while (lo < hi) {
    long mid = lo + (hi - lo) / 2;
    T a = sorted[soff + (ulong)mid * (ulong)sstep];
    if (right ? !LG_LT(v, a) : LG_LT(a, v)) lo = mid + 1; else hi = mid;
  }
  out[i] = lo + 1;
}
