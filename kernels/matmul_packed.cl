/*
** matmul_packed.cl: C = A * B, row-major, over packed copies of A and B:
** luagpu.matmul's "packed" variant, the fast kernel on CPUs.
**
** A CPU has no local memory to speak of and its caches do the tiling, so
** this kernel has no barriers (PoCL runs the work-items of a group one after
** another; a barrier makes it spill every work-item's registers). What a CPU
** needs instead is streams: pack_a copies A into panels of TM rows, stored
** K-major (panel p holds A[p*TM .. p*TM+TM-1][0..K-1] as K runs of TM), and
** pack_b copies B into panels of TN columns (K runs of TN). Each work-item of
** matmul_packed then reads one A panel and one B panel front to back, keeping
** a TM x TN block of C in registers: TN/VW vectors of VW per row. Rows and
** columns past the edges are packed as zeros; C's edges are stored with checks.
**
** Defines: REAL (float or double), TM, TN, VW (TN % VW == 0), VSC (1: C's
** rows can be stored as aligned vectors: N and offC multiples of VW),
** UNROLLK (steps of the K loop unrolled), FMA (use fma(), not mad()).
** Needs matmul_common.cl in front of it (luagpu.matmul puts it there).
*/
#ifndef VSC
#define VSC 0
#endif
#ifndef UNROLLK
#define UNROLLK 1
#endif

typedef VTYPE(VW) realv;

/* Work-item (k, p): A[p*TM .. p*TM+TM-1][k] to Ap[(p*K + k)*TM ..]. */
__kernel void pack_a(const int M, const int K, __global const REAL *restrict A,
                     const ulong offA, __global REAL *restrict Ap) {
  const int k = get_global_id(0), p = get_global_id(1);
  if (k >= K) return;
  A += offA;
  __global REAL *dst = Ap + ((size_t)p * K + k) * TM;
  UNROLL(TM)
  for (int i = 0; i < TM; i++) {
    const int row = p * TM + i;
    dst[i] = row < M ? A[(size_t)row * K + k] : (REAL)0;
  }
}

/* Work-item (q, k): B[k][q*TN .. q*TN+TN-1] to Bp[(q*K + k)*TN ..]. */
__kernel void pack_b(const int K, const int N, __global const REAL *restrict B,
                     const ulong offB, __global REAL *restrict Bp) {
  const int q = get_global_id(0), k = get_global_id(1);
  if (k >= K) return;
  const __global REAL *src = B + offB + (size_t)k * N + (size_t)q * TN;
  __global REAL *dst = Bp + ((size_t)q * K + k) * TN;
  if ((q + 1) * TN <= N) {
    UNROLL(TN)
    for (int j = 0; j < TN; j++) dst[j] = src[j];
  } else {
    UNROLL(TN)
    for (int j = 0; j < TN; j++) dst[j] = q * TN + j < N ? src[j] : (REAL)0;
  }
}

/* Work-item (q, p): the block of C at rows p*TM.., columns q*TN..; items
** past the last panel (the grid is rounded up to the group size) return. */
__kernel void matmul_packed(const int M, const int N, const int K,
                            __global const REAL *restrict Ap,
                            __global const REAL *restrict Bp,
                            __global REAL *restrict C, const ulong offC) {
  const int q = get_global_id(0), p = get_global_id(1);
  if (q * TN >= N || p * TM >= M) return;
  const __global REAL *a = Ap + (size_t)p * K * TM;
  const __global realv *b = (const __global realv *)(Bp + (size_t)q * K * TN);
  realv acc[TM][TN / VW];

  UNROLL(TM)
  for (int i = 0; i < TM; i++) {
    UNROLL(TN / VW)
    for (int j = 0; j < TN / VW; j++) acc[i][j] = (realv)0;
  }
#if UNROLLK > 1
  UNROLL(UNROLLK)
#endif
  for (int k = 0; k < K; k++) {
    realv bv[TN / VW];
    UNROLL(TN / VW)
    for (int j = 0; j < TN / VW; j++) bv[j] = b[k * (TN / VW) + j];
    UNROLL(TM)
    for (int i = 0; i < TM; i++) {
      const realv av = (realv)a[k * TM + i];
      UNROLL(TN / VW)
      for (int j = 0; j < TN / VW; j++) acc[i][j] = MAD(av, bv[j], acc[i][j]);
    }
  }

  C += offC;
  const int col = q * TN;
  UNROLL(TM)
  for (int i = 0; i < TM; i++) {
    const int row = p * TM + i;
    if (row >= M) break;
    __global REAL *c = C + (size_t)row * N + col;
    if (VSC && col + TN <= N) {
      UNROLL(TN / VW)
      for (int j = 0; j < TN / VW; j++) ((__global realv *)c)[j] = acc[i][j];
    } else {
      UNROLL(TN / VW)
      for (int j = 0; j < TN / VW; j++) {
        UNROLL(VW)
        for (int w = 0; w < VW; w++)
          if (col + j * VW + w < N) c[j * VW + w] = ELEM(VW, acc[i][j], w);
      }
    }
  }
}
