/*
** matmul_gemv.cl: matrix-vector products for luagpu.matmul (N == 1, or
** M == 1 with the roles swapped), at memory bandwidth: each element of the
** matrix is read once, with wide coalesced loads.
**
**   gemv_n  y = alpha * A x + beta * y, A M x K row-major: RY rows per work-
**           group, LX work-items along each row reading VW-vectors, summed
**           in local memory.
**   gemv_t  y = alpha * A^T x + beta * y, A stored K x M row-major: each
**           work-item owns VW neighbouring columns, so a row of the work-
**           group's TX * VW columns is one coalesced read; its TY rows of
**           work-items take interleaved rows of a slice of K, summed in
**           local memory. With several slices (a grid of them along y) each
**           writes its partial sums into P, and gemv_sum adds them.
**   gemv_t_rows  the same for CPUs: one work-item per group, each taking a
**           slice of K and streaming along its rows (P[z * M ..] += x[k] *
**           row k), where gemv_t's work-items each walk down a column (a
**           stride of a row per element, which a CPU's prefetchers do not
**           follow); gemv_sum then adds the slices.
**
** Vectors are contiguous. A beta of 0 never reads y (NaNs in it do not
** propagate). Defines: REAL (float or double), VW (1, 2 or 4: the matrix's
** rows and offset and the vector's offset are multiples of it), LX and RY
** (gemv_n; LX a power of 2), TX and TY (gemv_t; TY a power of 2).
** Needs matmul_common.cl in front of it (luagpu.matmul puts it there).
*/
typedef VTYPE(VW) realv;

#if VW == 1
#define HSUM(v) (v)
#else
#define HSUM(v) dot(v, (realv)1)
#endif

/* y[offY + row] = alpha * s + beta * y[offY + row], y unread when beta is 0 */
#define STORE(y, i, s) ((y)[i] = beta != 0 ? alpha * (s) + beta * (y)[i] : alpha * (s))

#ifdef LX
__kernel __attribute__((reqd_work_group_size(LX, RY, 1)))
void gemv_n(const int M, const int K, __global const REAL *restrict A, const ulong offA,
            __global const REAL *restrict x, const ulong offX,
            __global REAL *restrict y, const ulong offY, const REAL alpha, const REAL beta) {
  __local REAL part[RY][LX];
  const int lx = get_local_id(0), ly = get_local_id(1);
  const int row = get_group_id(1) * RY + ly;
  realv s0 = 0, s1 = 0;
  if (row < M) {
    const __global realv *a = (const __global realv *)(A + offA + (size_t)row * K);
    const __global realv *v = (const __global realv *)(x + offX);
    const int kv = K / VW;
    int i = lx;
    for (; i + LX < kv; i += 2 * LX) {
      s0 = MAD(a[i], v[i], s0);
      s1 = MAD(a[i + LX], v[i + LX], s1);
    }
    if (i < kv) s0 = MAD(a[i], v[i], s0);
  }
  part[ly][lx] = HSUM(s0 + s1);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = LX / 2; h > 0; h >>= 1) {
    if (lx < h) part[ly][lx] += part[ly][lx + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lx == 0 && row < M) STORE(y + offY, row, part[ly][0]);
}
#endif

#ifdef TX
/* Work-group (gx, z): columns (gx * TX + tx) * VW .. + VW - 1, rows z * KC ..
** z * KC + KC - 1 of A (K x M). One slice (direct): the result into y;
** else the partial sums into P[z * M ..]. */
__kernel __attribute__((reqd_work_group_size(TX, TY, 1)))
void gemv_t(const int M, const int K, const int KC, __global const REAL *restrict A,
            const ulong offA, __global const REAL *restrict x, const ulong offX,
            __global REAL *restrict y, const ulong offY, const REAL alpha, const REAL beta,
            const int direct, __global REAL *restrict P) {
  __local realv part[TY][TX];
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int col = (get_group_id(0) * TX + tx) * VW;
  const int z = get_group_id(1);
  const int kbeg = z * KC, kend = min(K, kbeg + KC);
  realv s0 = 0, s1 = 0;
  if (col < M) {
    const __global REAL *a = A + offA + col;
    const __global REAL *v = x + offX;
    int k = kbeg + ty;
    for (; k + TY < kend; k += 2 * TY) {
      s0 = MAD(*(const __global realv *)(a + (size_t)k * M), (realv)v[k], s0);
      s1 = MAD(*(const __global realv *)(a + (size_t)(k + TY) * M), (realv)v[k + TY], s1);
    }
    if (k < kend) s0 = MAD(*(const __global realv *)(a + (size_t)k * M), (realv)v[k], s0);
  }
  part[ty][tx] = s0 + s1;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = TY / 2; h > 0; h >>= 1) {
    if (ty < h) part[ty][tx] += part[ty + h][tx];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (ty == 0 && col < M) {
    const realv s = part[0][tx];
    if (direct) {
      UNROLL(VW)
      for (int j = 0; j < VW; j++) STORE(y + offY, col + j, ELEM(VW, s, j));
    } else {
      *(__global realv *)(P + (size_t)z * M + col) = s;
    }
  }
}

/* Group z: P[z * M + j] = the sum over rows k = z * KC .. z * KC + KC - 1
** of A[k][j] * x[k] (rows of A read whole, one after the other). */
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void gemv_t_rows(const int M, const int K, const int KC, __global const REAL *restrict A,
                 const ulong offA, __global const REAL *restrict x, const ulong offX,
                 __global REAL *restrict P) {
  const int z = get_group_id(0);
  const int kbeg = z * KC, kend = min(K, kbeg + KC);
  __global REAL *p = P + (size_t)z * M;
  for (int j = 0; j < M; j++) p[j] = 0;
  for (int k = kbeg; k < kend; k++) {
    const __global REAL *a = A + offA + (size_t)k * M;
    const REAL v = x[offX + k];
    for (int j = 0; j < M; j++) p[j] = MAD(a[j], v, p[j]);
  }
}

/* y[i] = alpha * (P[i] + P[M + i] + ... S slices) + beta * y[i]. */
__kernel void gemv_sum(const int M, const int S, __global const REAL *restrict P,
                       __global REAL *restrict y, const ulong offY, const REAL alpha,
                       const REAL beta) {
  const int i = get_global_id(0);
  if (i >= M) return;
  REAL s = 0;
  for (int z = 0; z < S; z++) s += P[(size_t)z * M + i];
  STORE(y + offY, i, s);
}
#endif
