/*
** matmul_naive.cl: C = A * B, row-major, one work-item per element of C:
** luagpu.matmul's "naive" variant (the baseline; also the choice for tiny
** products, where one launch beats three).
**
** A is M x K, B is K x N, C is M x N, at element offsets offA, offB, offC of
** their buffers. Work-item (col, row); the grid may be rounded up past N, M.
** Defines: REAL (float or double), BATCH (a batch of products, one per
** z = get_global_id(2): A, B and C of product z at z * sA, z * sB, z * sC
** past offA, offB, offC; a stride of 0 shares one matrix).
*/
#ifndef REAL
#define REAL float
#endif

__kernel void matmul_naive(const int M, const int N, const int K,
                           __global const REAL *restrict A, const ulong offA,
                           __global const REAL *restrict B, const ulong offB,
                           __global REAL *restrict C, const ulong offC
#ifdef BATCH
                           , const ulong sA, const ulong sB, const ulong sC
#endif
                           ) {
  const int col = get_global_id(0), row = get_global_id(1);
  if (row >= M || col >= N) return;
#ifdef BATCH
  const size_t z = get_global_id(2);
  A += z * sA;
  B += z * sB;
  C += z * sC;
#endif
  const __global REAL *a = A + offA + (size_t)row * K;
  const __global REAL *b = B + offB + col;
  REAL acc = 0;
  for (int k = 0; k < K; k++) acc = mad(a[k], b[(size_t)k * N], acc);
  C[offC + (size_t)row * N + col] = acc;
}
