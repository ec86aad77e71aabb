/*
** matmul_blas.cl: the BLAS extras of luagpu.matmul around its product
** kernels: transposing copies (trans_a, trans_b) and the alpha/beta
** epilogues. Batched products run one launch for the whole batch: the grid's
** third dimension is the matrix.
**
** Defines: REAL (float or double).
*/
#ifndef REAL
#define REAL float
#endif

#define TT 32   /* the transpose's tile: TT x TT elements, */
#define TR 8    /* by TT x TR work-items (TT / TR rows each) */

/* dst = src^T for matrix z = get_global_id(2) of a batch: src is rows x cols
** row-major at offS + z * strideS (strideS 0: the same matrix for every z),
** dst cols x rows at z * rows * cols. Through a tile in local memory (padded
** against bank conflicts), so that both the reads and the writes are
** coalesced. */
__kernel __attribute__((reqd_work_group_size(TT, TR, 1)))
void blas_transpose(const int rows, const int cols, __global const REAL *restrict src,
                    const ulong offS, const ulong strideS, __global REAL *restrict dst) {
  __local REAL tile[TT][TT + 1];
  const int tx = get_local_id(0), ty = get_local_id(1);
  const size_t z = get_global_id(2);
  const int c0 = get_group_id(0) * TT, r0 = get_group_id(1) * TT;
  src += offS + z * strideS;
  dst += z * (size_t)rows * cols;
  for (int j = ty; j < TT; j += TR)
    if (r0 + j < rows && c0 + tx < cols) tile[j][tx] = src[(size_t)(r0 + j) * cols + c0 + tx];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int j = ty; j < TT; j += TR)
    if (c0 + j < cols && r0 + tx < rows) dst[(size_t)(c0 + j) * rows + r0 + tx] = tile[tx][j];
}

/* C[offC + i] *= s for i < n (alpha after a product written into C; beta
** when alpha or K is 0). */
__kernel void blas_scale(const ulong n, const REAL s, __global REAL *restrict C,
                         const ulong offC) {
  const size_t i = get_global_id(0);
  if (i < n) C[offC + i] *= s;
}

/* C[offC + i] = alpha * T[i] + beta * C[offC + i] for i < n: T holds the
** product, computed apart because C is read. */
__kernel void blas_axpby(const ulong n, const REAL alpha, __global const REAL *restrict T,
                         const REAL beta, __global REAL *restrict C, const ulong offC) {
  const size_t i = get_global_id(0);
  if (i < n) C[offC + i] = alpha * T[i] + beta * C[offC + i];
}
