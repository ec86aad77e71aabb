/*
** matmul_reg.cl: C = A * B, row-major, with work-group tiles in local memory
** and a register tile per work-item: luagpu.matmul's "reg" variant, the fast
** kernel on GPUs.
**
** A is M x K, B is K x N, C is M x N, at element offsets offA, offB, offC of
** their buffers. A work-group of (BN/TN) x (BM/TM) work-items computes a
** BM x BN tile of C; each work-item keeps TM x TN sums in registers. Its
** columns are TN/VWN vectors of VWN, interleaved with its neighbours' (work-
** item tx owns vectors tx, tx + BN/TN, ...), and its rows TM/VWM groups of VWM
** likewise, so neighbouring work-items read neighbouring local memory. Each
** step of BK along K copies the A tile transposed (K-major) and the B tile
** into local memory, rows padded by PADA / PADB elements against bank
** conflicts, then runs BK rank-1 updates out of local memory.
**
** Defines (luagpu.matmul sets them from its parameter table):
**   REAL       float or double
**   BM BN BK   work-group tile;  TM TN  work-item tile
**   VWM VWN    vector widths of the local reads of A and of B, and of C's stores
**   VLA VLB    vector widths of the global loads of A and B; the helper sets 1
**              unless K (N) and the offset are multiples of them
**   VSC        1: C's stores are whole VWN vectors (N and offC multiples of VWN)
**   PADA PADB  padding of the local tiles, in elements
**   DB         0: load a tile, then compute; 1: load the next tile into
**              registers while computing on this one; 2: as 1, with two local
**              buffers (one barrier per step instead of two)
**   EVEN       M % BM == 0, N % BN == 0 and K % BK == 0: no bounds checks.
**              Without it, a tile that crosses an edge loads element by
**              element with checks (zeros outside); the others do not check.
**   UNROLLK    how many steps of the inner loop are unrolled (default BK)
**   FMA        use fma() (CPUs, where mad() may not fuse)
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
#ifndef DB
#define DB 0
#endif
#ifndef VSC
#define VSC 1
#endif
#ifndef UNROLLK
#define UNROLLK BK
#endif

#ifdef FMA
#define MAD(a, b, c) fma(a, b, c)
#else
#define MAD(a, b, c) mad(a, b, c)
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
#define NLA (BM * BK / VLA / NT)    /* global loads of A per work-item per step */
#define NLB (BK * BN / VLB / NT)
#define NBUF (DB == 2 ? 2 : 1)

/* Vector types of each width, and their j-th scalar (j a constant). */
#define VCAT_(a, b) a##b
#define VCAT(a, b) VCAT_(a, b)
#define VTYPE1 REAL
#define VTYPE2 VCAT(REAL, 2)
#define VTYPE4 VCAT(REAL, 4)
#define VTYPE8 VCAT(REAL, 8)
#define VTYPE16 VCAT(REAL, 16)
#define VTYPE(w) CAT(VTYPE, w)
#define ELEM1(v, j) (v)
#define ELEM2(v, j) ((j) == 0 ? (v).s0 : (v).s1)
#define ELEM4(v, j) ((j) < 2 ? ELEM2((v).lo, (j)) : ELEM2((v).hi, (j) - 2))
#define ELEM8(v, j) ((j) < 4 ? ELEM4((v).lo, (j)) : ELEM4((v).hi, (j) - 4))
#define ELEM16(v, j) ((j) < 8 ? ELEM8((v).lo, (j)) : ELEM8((v).hi, (j) - 8))
#define ELEM(w, v, j) CAT(ELEM, w)(v, j)

typedef VTYPE(VWN) realn;
typedef VTYPE(VWM) realm;
typedef VTYPE(VLA) reala;
typedef VTYPE(VLB) realb;

/* Global loads of one step into registers ra[NLA], rb[NLB]: tile rows
** ar[i] / br[i], columns ak[i] / bc[i] (fixed per work-item), at k0. */
#define LOAD_GLOBAL(k0, checked)                                                \
  do {                                                                          \
    if (!(checked)) {                                                           \
      UNROLL(NLA)                                                               \
      for (int i = 0; i < NLA; i++)                                             \
        ra[i] = *(const __global reala *)(A + (size_t)(row0 + ar[i]) * K + (k0) + ak[i]); \
      UNROLL(NLB)                                                               \
      for (int i = 0; i < NLB; i++)                                             \
        rb[i] = *(const __global realb *)(B + (size_t)((k0) + br[i]) * N + col0 + bc[i]); \
    } else {                                                                    \
      UNROLL(NLA)                                                               \
      for (int i = 0; i < NLA; i++) {                                           \
        REAL t[VLA];                                                            \
        const int gr = row0 + ar[i];                                            \
        UNROLL(VLA)                                                             \
        for (int j = 0; j < VLA; j++) {                                         \
          const int gk = (k0) + ak[i] + j;                                      \
          t[j] = (gr < M && gk < K) ? A[(size_t)gr * K + gk] : (REAL)0;         \
        }                                                                       \
        ra[i] = PACK(VLA, t);                                                   \
      }                                                                         \
      UNROLL(NLB)                                                               \
      for (int i = 0; i < NLB; i++) {                                           \
        REAL t[VLB];                                                            \
        const int gk = (k0) + br[i];                                            \
        UNROLL(VLB)                                                             \
        for (int j = 0; j < VLB; j++) {                                         \
          const int gc = col0 + bc[i] + j;                                      \
          t[j] = (gk < K && gc < N) ? B[(size_t)gk * N + gc] : (REAL)0;         \
        }                                                                       \
        rb[i] = PACK(VLB, t);                                                   \
      }                                                                         \
    }                                                                           \
  } while (0)

#define PACK1(t) (t)[0]
#define PACK2(t) (VTYPE2)((t)[0], (t)[1])
#define PACK4(t) (VTYPE4)((t)[0], (t)[1], (t)[2], (t)[3])
#define PACK8(t) (VTYPE8)((t)[0], (t)[1], (t)[2], (t)[3], (t)[4], (t)[5], (t)[6], (t)[7])
#define PACK16(t) (VTYPE16)((t)[0], (t)[1], (t)[2], (t)[3], (t)[4], (t)[5], (t)[6], \
                            (t)[7], (t)[8], (t)[9], (t)[10], (t)[11], (t)[12], (t)[13], \
                            (t)[14], (t)[15])
#define PACK(w, t) CAT(PACK, w)(t)

/* Stores the registers into the local tiles As, Bs (A transposed). */
#define STORE_LOCAL(As, Bs)                                                     \
  do {                                                                          \
    UNROLL(NLA)                                                                 \
    for (int i = 0; i < NLA; i++) {                                             \
      UNROLL(VLA)                                                               \
      for (int j = 0; j < VLA; j++) (As)[(ak[i] + j) * LDA + ar[i]] = ELEM(VLA, ra[i], j); \
    }                                                                           \
    UNROLL(NLB)                                                                 \
    for (int i = 0; i < NLB; i++) {                                             \
      UNROLL(VLB)                                                               \
      for (int j = 0; j < VLB; j++) (Bs)[br[i] * LDB + bc[i] + j] = ELEM(VLB, rb[i], j); \
    }                                                                           \
  } while (0)

/* BK rank-1 updates of the sums out of the local tiles As, Bs. */
#define COMPUTE(As, Bs)                                                         \
  do {                                                                          \
    UNROLL(UNROLLK)                                                             \
    for (int k = 0; k < BK; k++) {                                              \
      realn b[TN / VWN];                                                        \
      realm a[TM / VWM];                                                        \
      UNROLL(TN / VWN)                                                          \
      for (int j = 0; j < TN / VWN; j++)                                        \
        b[j] = *(const __local realn *)&(Bs)[k * LDB + (j * WGN + tx) * VWN];   \
      UNROLL(TM / VWM)                                                          \
      for (int i = 0; i < TM / VWM; i++)                                        \
        a[i] = *(const __local realm *)&(As)[k * LDA + (i * WGM + ty) * VWM];   \
      UNROLL(TM / VWM)                                                          \
      for (int i = 0; i < TM / VWM; i++) {                                      \
        UNROLL(VWM)                                                             \
        for (int v = 0; v < VWM; v++) {                                         \
          UNROLL(TN / VWN)                                                      \
          for (int j = 0; j < TN / VWN; j++)                                    \
            acc[i * VWM + v][j] = MAD((realn)ELEM(VWM, a[i], v), b[j], acc[i * VWM + v][j]); \
        }                                                                       \
      }                                                                         \
    }                                                                           \
  } while (0)

__kernel __attribute__((reqd_work_group_size(WGN, WGM, 1)))
void matmul_reg(const int M, const int N, const int K,
                __global const REAL *restrict A, const ulong offA,
                __global const REAL *restrict B, const ulong offB,
                __global REAL *restrict C, const ulong offC) {
  /* aligned: the tiles are read as whole vectors */
  __local REAL As[NBUF][BK * LDA] __attribute__((aligned(64)));
  __local REAL Bs[NBUF][BK * LDB] __attribute__((aligned(64)));
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int tid = ty * WGN + tx;
  const int col0 = get_group_id(0) * BN, row0 = get_group_id(1) * BM;
  int ar[NLA], ak[NLA], br[NLB], bc[NLB];
  reala ra[NLA];
  realb rb[NLB];
  realn acc[TM][TN / VWN];

  A += offA;
  B += offB;
  C += offC;
  UNROLL(NLA)
  for (int i = 0; i < NLA; i++) {
    const int id = tid + i * NT;
    ar[i] = id / (BK / VLA);
    ak[i] = (id % (BK / VLA)) * VLA;
  }
  UNROLL(NLB)
  for (int i = 0; i < NLB; i++) {
    const int id = tid + i * NT;
    br[i] = id / (BN / VLB);
    bc[i] = (id % (BN / VLB)) * VLB;
  }
  UNROLL(TM)
  for (int i = 0; i < TM; i++) {
    UNROLL(TN / VWN)
    for (int j = 0; j < TN / VWN; j++) acc[i][j] = (realn)0;
  }

#ifdef EVEN
#define EDGE(k0) false
#else
  const bool edge_mn = row0 + BM > M || col0 + BN > N;
#define EDGE(k0) (edge_mn || (k0) + BK > K)
#endif

#if DB == 0
  for (int k0 = 0; k0 < K; k0 += BK) {
    LOAD_GLOBAL(k0, EDGE(k0));
    barrier(CLK_LOCAL_MEM_FENCE);
    STORE_LOCAL(As[0], Bs[0]);
    barrier(CLK_LOCAL_MEM_FENCE);
    COMPUTE(As[0], Bs[0]);
  }
#elif DB == 1
  LOAD_GLOBAL(0, EDGE(0));
  for (int k0 = 0; k0 < K; k0 += BK) {
    barrier(CLK_LOCAL_MEM_FENCE);
    STORE_LOCAL(As[0], Bs[0]);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (k0 + BK < K) LOAD_GLOBAL(k0 + BK, EDGE(k0 + BK));
    COMPUTE(As[0], Bs[0]);
  }
#else
  LOAD_GLOBAL(0, EDGE(0));
  STORE_LOCAL(As[0], Bs[0]);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int k0 = 0, cur = 0; k0 < K; k0 += BK, cur ^= 1) {
    const bool more = k0 + BK < K;
    if (more) LOAD_GLOBAL(k0 + BK, EDGE(k0 + BK));
    COMPUTE(As[cur], Bs[cur]);
    if (more) STORE_LOCAL(As[cur ^ 1], Bs[cur ^ 1]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#endif

  UNROLL(TM / VWM)
  for (int i = 0; i < TM / VWM; i++) {
    UNROLL(VWM)
    for (int v = 0; v < VWM; v++) {
      const int row = row0 + (i * WGM + ty) * VWM + v;
      UNROLL(TN / VWN)
      for (int j = 0; j < TN / VWN; j++) {
        const int col = col0 + (j * WGN + tx) * VWN;
        const realn c = acc[i * VWM + v][j];
        __global REAL *p = C + (size_t)row * N + col;
#ifdef EVEN
        if (VSC) {
          *(__global realn *)p = c;
        } else {
          UNROLL(VWN)
          for (int w = 0; w < VWN; w++) p[w] = ELEM(VWN, c, w);
        }
#else
        if (row < M) {
          if (VSC && col + VWN <= N) {
            *(__global realn *)p = c;
          } else {
            UNROLL(VWN)
            for (int w = 0; w < VWN; w++)
              if (col + w < N) p[w] = ELEM(VWN, c, w);
          }
        }
#endif
      }
    }
  }
}
