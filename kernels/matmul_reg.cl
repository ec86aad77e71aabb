/*
** matmul_reg.cl: C = A * B, row-major, with work-group tiles in local memory
** and a register tile per work-item (luagpu.matmul's fast kernel).
**
** A is M x K, B is K x N, C is M x N. A work-group computes a BM x BN tile of C
** with (BN/TN) x (BM/TM) work-items; each work-item keeps TM x TN sums in
** registers. Its columns are TN/VWN vectors of VWN, the vectors of the
** work-items interleaved (work-item tx owns vectors tx, tx + BN/TN/VWN*...),
** and its rows TM/VWM groups of VWM likewise, so neighbouring work-items read
** neighbouring local memory. Each step of BK along K copies the A tile
** transposed (K-major) and the B tile into local memory, each row padded by
** PADA / PADB elements against bank conflicts.
**
** Defines (luagpu.matmul sets them from its parameter table):
**   REAL       float or double
**   BM BN BK   work-group tile;  TM TN  work-item tile
**   VWM VWN    vector widths of the local reads of A and of B (and C's stores)
**   VLA VLB    vector widths of the global loads of A and B (K % VLA == 0,
**              N % VLB == 0); 1 for scalar loads
**   PADA PADB  padding of the local tiles, in elements
**   EVEN       M % BM == 0, N % BN == 0 and K % BK == 0: no bounds checks.
**              Without it, tiles that cross an edge load with checks and
**              zero-fill; the others take the same unchecked path.
**   UNROLLK    how many steps along K each inner loop unrolls (default BK)
*/
#ifndef REAL
#define REAL float
#endif
#ifndef PADA
#define PADA 0
#endif
#ifndef PADB
#define PADB 0
#endif
#ifndef UNROLLK
#define UNROLLK BK
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define PRAGMA_(x) _Pragma(#x)
#define UNROLL(n) PRAGMA_(unroll n)

#define WGN (BN / TN)               /* work-items along N */
#define WGM (BM / TM)               /* work-items along M */
#define NT (WGN * WGM)              /* work-items per work-group */
#define LDA (BM + PADA)             /* row length of the local A tile (K-major) */
#define LDB (BN + PADB)

#if VWN == 1
typedef REAL realn;
#define LOADN(p) (*(p))
#define STOREN(v, p) (*(p) = (v))
#else
typedef CAT(REAL, VWN) realn;
#define LOADN(p) (*(const __local realn *)(p))
#define STOREN(v, p) (*(__global realn *)(p) = (v))
#endif

#if VWM == 1
typedef REAL realm;
#define LOADM(p) (*(p))
#else
typedef CAT(REAL, VWM) realm;
#define LOADM(p) (*(const __local realm *)(p))
#endif

#if VLA == 1
#define LOAD_A(i) (A[(i)])
typedef REAL reala;
#else
typedef CAT(REAL, VLA) reala;
#define LOAD_A(i) (*(const __global reala *)(A + (i)))
#endif
#if VLB == 1
typedef REAL realb;
#define LOAD_B(i) (B[(i)])
#else
typedef CAT(REAL, VLB) realb;
#define LOAD_B(i) (*(const __global realb *)(B + (i)))
#endif

/* The j-th scalar of a vector of width w (w may be 1). */
#define ELEM1(v, j) (v)
#define ELEM2(v, j) ((j) == 0 ? (v).s0 : (v).s1)
#define ELEM4(v, j) ((j) < 2 ? ELEM2((v).lo, (j)) : ELEM2((v).hi, (j) - 2))
#define ELEM8(v, j) ((j) < 4 ? ELEM4((v).lo, (j)) : ELEM4((v).hi, (j) - 4))
#define ELEM16(v, j) ((j) < 8 ? ELEM8((v).lo, (j)) : ELEM8((v).hi, (j) - 8))
#define ELEM(w, v, j) CAT(ELEM, w)(v, j)

/* Copies the A tile at (row0, k0) into As (transposed) and the B tile at
** (k0, col0) into Bs. checked: bounds-checked scalar loads, zero outside. */
#define LOAD_TILES(checked)                                                     \
  do {                                                                          \
    if (checked) {                                                              \
      for (int id = tid; id < BM * BK; id += NT) {                              \
        int r = id / BK, kk = id % BK;                                          \
        int gr = row0 + r, gk = k0 + kk;                                        \
        As[kk * LDA + r] = (gr < M && gk < K) ? A[(size_t)gr * K + gk] : (REAL)0; \
      }                                                                         \
      for (int id = tid; id < BK * BN; id += NT) {                              \
        int r = id / BN, c = id % BN;                                           \
        int gk = k0 + r, gc = col0 + c;                                         \
        Bs[r * LDB + c] = (gk < K && gc < N) ? B[(size_t)gk * N + gc] : (REAL)0; \
      }                                                                         \
    } else {                                                                    \
      _Pragma("unroll")                                                         \
      for (int i = 0; i < BM * BK / VLA / NT; i++) {                            \
        int id = tid + i * NT;                                                  \
        int r = id / (BK / VLA), kk = (id % (BK / VLA)) * VLA;                  \
        reala v = LOAD_A((size_t)(row0 + r) * K + k0 + kk);                     \
        _Pragma("unroll")                                                       \
        for (int j = 0; j < VLA; j++) As[(kk + j) * LDA + r] = ELEM(VLA, v, j); \
      }                                                                         \
      _Pragma("unroll")                                                         \
      for (int i = 0; i < BK * BN / VLB / NT; i++) {                            \
        int id = tid + i * NT;                                                  \
        int r = id / (BN / VLB), c = (id % (BN / VLB)) * VLB;                   \
        realb v = LOAD_B((size_t)(k0 + r) * N + col0 + c);                      \
        _Pragma("unroll")                                                       \
        for (int j = 0; j < VLB; j++) Bs[r * LDB + c + j] = ELEM(VLB, v, j);    \
      }                                                                         \
    }                                                                           \
  } while (0)

__kernel __attribute__((reqd_work_group_size(WGN, WGM, 1)))
void matmul_reg(const int M, const int N, const int K,
                __global const REAL *restrict A, __global const REAL *restrict B,
                __global REAL *restrict C) {
  __local REAL As[BK * LDA];
  __local REAL Bs[BK * LDB];
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int tid = ty * WGN + tx;
  const int col0 = get_group_id(0) * BN, row0 = get_group_id(1) * BM;
  realn acc[TM][TN / VWN];

  _Pragma("unroll")
  for (int i = 0; i < TM; i++) {
    _Pragma("unroll")
    for (int j = 0; j < TN / VWN; j++) acc[i][j] = (realn)0;
  }

#ifdef EVEN
  const bool edge = false;
#else
  const bool edge_mn = row0 + BM > M || col0 + BN > N;
#endif
  for (int k0 = 0; k0 < K; k0 += BK) {
#ifndef EVEN
    const bool edge = edge_mn || k0 + BK > K;
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    LOAD_TILES(edge);
    barrier(CLK_LOCAL_MEM_FENCE);

    UNROLL(UNROLLK)
    for (int k = 0; k < BK; k++) {
      realn b[TN / VWN];
      _Pragma("unroll")
      for (int j = 0; j < TN / VWN; j++)
        b[j] = LOADN(&Bs[k * LDB + (j * WGN + tx) * VWN]);
      _Pragma("unroll")
      for (int i = 0; i < TM / VWM; i++) {
        realm a = LOADM(&As[k * LDA + (i * WGM + ty) * VWM]);
        _Pragma("unroll")
        for (int v = 0; v < VWM; v++) {
          REAL av = ELEM(VWM, a, v);
          _Pragma("unroll")
          for (int j = 0; j < TN / VWN; j++)
            acc[i * VWM + v][j] = mad((realn)av, b[j], acc[i * VWM + v][j]);
        }
      }
    }
  }

  _Pragma("unroll")
  for (int i = 0; i < TM / VWM; i++) {
    _Pragma("unroll")
    for (int v = 0; v < VWM; v++) {
      const int row = row0 + (i * WGM + ty) * VWM + v;
      _Pragma("unroll")
      for (int j = 0; j < TN / VWN; j++) {
        const int col = col0 + (j * WGN + tx) * VWN;
#ifdef EVEN
        STOREN(acc[i * VWM + v][j], &C[(size_t)row * N + col]);
#else
        if (row < M) {
          if (col + VWN <= N && N % VWN == 0) {
            STOREN(acc[i * VWM + v][j], &C[(size_t)row * N + col]);
          } else {
            _Pragma("unroll")
            for (int w = 0; w < VWN; w++)
              if (col + w < N) C[(size_t)row * N + col + w] = ELEM(VWN, acc[i * VWM + v][j], w);
          }
        }
#endif
      }
    }
  }
}
