/*
** matmul_tiled.cl: C = A * B, row-major, with TS x TS tiles of A and B in
** local memory: luagpu.matmul's "tiled" variant (the textbook kernel).
**
** A TS x TS work-group computes a TS x TS tile of C, one element per
** work-item: each step along K, every work-item copies one element of A and
** one of B into local memory (zeros past the edges), then all of them read
** the tiles TS times. Global reads drop by a factor of TS against "naive".
** The grid is rounded up to multiples of TS.
** Defines: REAL (float or double), TS.
*/
#ifndef REAL
#define REAL float
#endif

__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void matmul_tiled(const int M, const int N, const int K,
                  __global const REAL *restrict A, const ulong offA,
                  __global const REAL *restrict B, const ulong offB,
                  __global REAL *restrict C, const ulong offC) {
  __local REAL As[TS][TS];
  __local REAL Bs[TS][TS + 1];        /* +1: columns fall in different banks */
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int col = get_group_id(0) * TS + tx, row = get_group_id(1) * TS + ty;
  REAL acc = 0;
  A += offA;
  B += offB;
  for (int k0 = 0; k0 < K; k0 += TS) {
    As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : (REAL)0;
    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : (REAL)0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TS; k++) acc = mad(As[ty][k], Bs[k][tx], acc);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < M && col < N) C[offC + (size_t)row * N + col] = acc;
}
