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
**   VLA VLB    vector widths of the global loads of A and B
**   ALIGNA     A's loads are aligned vectors (K and offA multiples of VLA);
**              without it they are vloadn; ALIGNB likewise for B (N, offB)
**   VSC        1: C's stores are whole VWN vectors (N and offC multiples of VWN)
**   PADA PADB  padding of the local tiles, in elements
**   DB         0: load a tile, then compute; 1: load the next tile into
**              registers while computing on this one; 2: as 1, with two local
**              buffers (one barrier per step instead of two)
**   EVEN       M % BM == 0, N % BN == 0 and K % BK == 0: no checks at all.
**              Without it, rows of A past M are read from row M-1 (they only
**              feed rows of C that are never stored), vectors of B that cross
**              N are read element by element, and stores to C are checked.
**   KTAIL      K % BK != 0: the last step reads zeros past K.
**   SPLITK     split K: work-group z of a grid with a third dimension sums
**              k = z*KS .. z*KS+KS-1 only (KS a multiple of BK), into the z-th
**              M x N slice of C (a scratch buffer); matmul_sum then adds the
**              slices into the real C. Without it KS is not used.
**   BATCH      a batch of products, one per work-group z (not with SPLITK):
**              A, B and C of product z at z * sA, z * sB, z * sC past offA,
**              offB, offC (extra arguments; a stride of 0 shares one matrix)
**   UNROLLK    how many steps of the inner loop are unrolled (default BK)
**   FMA        use fma() (CPUs, where mad() may not fuse)
**   ROWS_* COLS_*  the launch geometry of matmul_rows and matmul_cols (see
**              there), from one table in lua/luagpu/matmul_plan.lua
**
** matmul_rows and matmul_cols, at the end, compute the thin edges of a
** product whose tile-aligned core runs apart (see there). Needs
** matmul_common.cl in front of it (luagpu.matmul puts it there).
*/
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

#define WGN (BN / TN)               /* work-items along N */
#define WGM (BM / TM)               /* work-items along M */
#define NT (WGN * WGM)              /* work-items per work-group */
#define LDA (BM + PADA)             /* row length of the local A tile (K-major) */
#define LDB (BN + PADB)
#define NLA (BM * BK / VLA / NT)    /* global loads of A per work-item per step */
#define NLB (BK * BN / VLB / NT)
#define NBUF (DB == 2 ? 2 : 1)

typedef VTYPE(VWN) realn;
typedef VTYPE(VWM) realm;
typedef VTYPE(VLA) reala;
typedef VTYPE(VLB) realb;

/* Loads of VLA (VLB) elements: whole aligned vectors where ALIGNA (ALIGNB)
** says the row length and offset allow, else vloadn, which needs only
** element alignment (and on GPUs still uses one address per vector). */
#if VLA == 1
#define LOADA(p) (*(p))
#elif defined(ALIGNA)
#define LOADA(p) (*(const __global reala *)(p))
#else
#define LOADA(p) CAT(vload, VLA)(0, p)
#endif
#if VLB == 1
#define LOADB(p) (*(p))
#elif defined(ALIGNB)
#define LOADB(p) (*(const __global realb *)(p))
#else
#define LOADB(p) CAT(vload, VLB)(0, p)
#endif

/* Global loads of the step at k0 into registers ra[NLA], rb[NLB]: load i of
** A reads VLA elements of tile row ar[i] from column k0 + ak[i], load i of B
** VLB elements of row k0 + br[i] from tile column bc[i].
** Without EVEN, rows of A past M are read from row M-1 instead (they only
** feed rows of C that are never stored), and a vector of B that does not lie
** wholly before N, or (KTAIL) a vector past the end of K, is read element by
** element, zeros outside: only the edge work-groups and the last step do. */
#ifdef EVEN
#define AROW(i) (row0 + ar[i])
#else
#define AROW(i) min(row0 + ar[i], M - 1)
#endif

#ifdef KTAIL
#define LOAD_A(i, k0)                                                           \
  do {                                                                          \
    const int k = (k0) + ak[i];                                                 \
    const __global REAL *p = A + (size_t)AROW(i) * K + k;                       \
    if (k + VLA <= kend) {                                                      \
      ra[i] = LOADA(p);                                                         \
    } else {                                                                    \
      REAL t[VLA];                                                              \
      UNROLL(VLA)                                                               \
      for (int j = 0; j < VLA; j++) t[j] = k + j < kend ? p[j] : (REAL)0;       \
      ra[i] = PACK(VLA, t);                                                     \
    }                                                                           \
  } while (0)
#else
#define LOAD_A(i, k0)                                                           \
  (ra[i] = LOADA(A + (size_t)AROW(i) * K + (k0) + ak[i]))
#endif

#if defined(KTAIL) || !defined(EVEN)
#define LOAD_B(i, k0)                                                           \
  do {                                                                          \
    const int k = (k0) + br[i], c = col0 + bc[i];                               \
    const __global REAL *p = B + (size_t)k * N + c;                             \
    if (k < kend && c + VLB <= N) {                                             \
      rb[i] = LOADB(p);                                                         \
    } else {                                                                    \
      REAL t[VLB];                                                              \
      UNROLL(VLB)                                                               \
      for (int j = 0; j < VLB; j++) t[j] = k < kend && c + j < N ? p[j] : (REAL)0; \
      rb[i] = PACK(VLB, t);                                                     \
    }                                                                           \
  } while (0)
#else
#define LOAD_B(i, k0)                                                           \
  (rb[i] = LOADB(B + (size_t)((k0) + br[i]) * N + col0 + bc[i]))
#endif

#define LOAD_GLOBAL(k0)                                                         \
  do {                                                                          \
    UNROLL(NLA)                                                                 \
    for (int i = 0; i < NLA; i++) LOAD_A(i, k0);                                \
    UNROLL(NLB)                                                                 \
    for (int i = 0; i < NLB; i++) LOAD_B(i, k0);                                \
  } while (0)

#define PACK1(t) (t)[0]
#define PACK2(t) (VTYPE2)((t)[0], (t)[1])
#define PACK4(t) (VTYPE4)((t)[0], (t)[1], (t)[2], (t)[3])
#define PACK8(t) (VTYPE8)((t)[0], (t)[1], (t)[2], (t)[3], (t)[4], (t)[5], (t)[6], (t)[7])
#define PACK16(t) (VTYPE16)((t)[0], (t)[1], (t)[2], (t)[3], (t)[4], (t)[5], (t)[6], \
                            (t)[7], (t)[8], (t)[9], (t)[10], (t)[11], (t)[12], (t)[13], \
                            (t)[14], (t)[15])
#define PACK_(w, t) PACK##w(t)      /* not CAT: PACKn expand to VTYPEn (see there) */
#define PACK(w, t) PACK_(w, t)

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
void matmul_reg(const int M, const int N, const int K, const int KS,
                __global const REAL *restrict A, const ulong offA,
                __global const REAL *restrict B, const ulong offB,
                __global REAL *restrict C, const ulong offC
#ifdef BATCH
                , const ulong sA, const ulong sB, const ulong sC
#endif
                ) {
  /* aligned: the tiles are read as whole vectors */
  __local REAL As[NBUF][BK * LDA] __attribute__((aligned(64)));
  __local REAL Bs[NBUF][BK * LDB] __attribute__((aligned(64)));
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int tid = ty * WGN + tx;
  const int col0 = get_group_id(0) * BN, row0 = get_group_id(1) * BM;
#ifdef SPLITK
  /* group z sums k = kbeg .. kend-1 into the z-th M x N slice of C */
  const int kbeg = get_group_id(2) * KS, kend = min(K, kbeg + KS);
#else
#define kbeg 0
#define kend K
#endif
  int ar[NLA], ak[NLA], br[NLB], bc[NLB];
  reala ra[NLA];
  realb rb[NLB];
  realn acc[TM][TN / VWN];

  A += offA;
  B += offB;
#ifdef SPLITK
  C += offC + get_group_id(2) * (size_t)M * N;
#elif defined(BATCH)
  A += get_group_id(2) * sA;
  B += get_group_id(2) * sB;
  C += offC + get_group_id(2) * sC;
#else
  C += offC;
#endif
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

#if DB == 0
  for (int k0 = kbeg; k0 < kend; k0 += BK) {
    LOAD_GLOBAL(k0);
    barrier(CLK_LOCAL_MEM_FENCE);
    STORE_LOCAL(As[0], Bs[0]);
    barrier(CLK_LOCAL_MEM_FENCE);
    COMPUTE(As[0], Bs[0]);
  }
#elif DB == 1
  LOAD_GLOBAL(kbeg);
  for (int k0 = kbeg; k0 < kend; k0 += BK) {
    barrier(CLK_LOCAL_MEM_FENCE);
    STORE_LOCAL(As[0], Bs[0]);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (k0 + BK < kend) LOAD_GLOBAL(k0 + BK);
    COMPUTE(As[0], Bs[0]);
  }
#else
  LOAD_GLOBAL(kbeg);
  STORE_LOCAL(As[0], Bs[0]);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int k0 = kbeg, cur = 0; k0 < kend; k0 += BK, cur ^= 1) {
    const bool more = k0 + BK < kend;
    if (more) LOAD_GLOBAL(k0 + BK);
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

/* The sum of the S slices of a split-K product (each M*N = MN elements, one
** after another in P) into C at offset offC. One work-item per element. */
__kernel void matmul_sum(const int S, const ulong MN, __global const REAL *restrict P,
                         __global REAL *restrict C, const ulong offC) {
  const size_t i = get_global_id(0);
  if (i >= MN) return;
  REAL s = P[i];
  for (int z = 1; z < S; z++) s += P[z * MN + i];
  C[offC + i] = s;
}

/* The thin edges of a product split into a tile-aligned core (matmul_reg on
** the first M0 rows and N0 columns) and what is left: at 4097 one more row
** and column of work-group tiles would cost a whole wave of work-groups,
** where the edges alone are a pass over A and one over B. (The core is
** matmul_reg itself, on M0 rows with N as the row length and a grid of N0
** columns only.) Both kernels take A, B, C at element offsets with rows
** lda, ldb, ldc elements apart. Their launch geometry comes from the
** helper as defines (ROWS_LX, ROWS_LY, ROWS_R; COLS_LX, COLS_LY, COLS_R).
** Each work-item keeps ROWS_R (COLS_R) sums, and loads EDGE_STEPS steps of
** K at a time, so that their loads are in flight together. */
#define EDGE_STEPS 4

/* The operands of both, after their three sizes. */
#define EDGE_OPERANDS                                                           \
  __global const REAL *restrict A, const ulong offA, const int lda,             \
  __global const REAL *restrict B, const ulong offB, const int ldb,             \
  __global REAL *restrict C, const ulong offC, const int ldc

/* matmul_rows: the R rows of C (all N columns) from R rows of A and all of
** B. A work-group of ROWS_LX x ROWS_LY work-items computes ROWS_R rows by
** ROWS_LX columns: each column's K is cut into ROWS_LY interleaved slices
** (neighbouring work-items read neighbouring columns of one row of B),
** summed in local memory (ROWS_R <= ROWS_LY).
** Grid: (N rounded up to ROWS_LX, ROWS_LY * ceil(R / ROWS_R)). */
__kernel __attribute__((reqd_work_group_size(ROWS_LX, ROWS_LY, 1)))
void matmul_rows(const int R, const int N, const int K, EDGE_OPERANDS) {
  __local REAL part[ROWS_LY][ROWS_R][ROWS_LX];
  const int x = get_local_id(0), y = get_local_id(1);
  const int col = get_group_id(0) * ROWS_LX + x, r0 = get_group_id(1) * ROWS_R;
  const __global REAL *b = B + offB + min(col, N - 1);
  const __global REAL *a[ROWS_R];
  REAL s[ROWS_R];
  UNROLL(ROWS_R)
  for (int r = 0; r < ROWS_R; r++) {
    a[r] = A + offA + (size_t)min(r0 + r, R - 1) * lda;
    s[r] = 0;
  }
  int k = y;
  for (; k + (EDGE_STEPS - 1) * ROWS_LY < K; k += EDGE_STEPS * ROWS_LY) {
    REAL v[EDGE_STEPS];
    UNROLL(EDGE_STEPS)
    for (int u = 0; u < EDGE_STEPS; u++) v[u] = b[(size_t)(k + u * ROWS_LY) * ldb];
    UNROLL(EDGE_STEPS)
    for (int u = 0; u < EDGE_STEPS; u++) {
      UNROLL(ROWS_R)
      for (int r = 0; r < ROWS_R; r++) s[r] = MAD(a[r][k + u * ROWS_LY], v[u], s[r]);
    }
  }
  for (; k < K; k += ROWS_LY) {
    const REAL v = b[(size_t)k * ldb];
    UNROLL(ROWS_R)
    for (int r = 0; r < ROWS_R; r++) s[r] = MAD(a[r][k], v, s[r]);
  }
  UNROLL(ROWS_R)
  for (int r = 0; r < ROWS_R; r++) part[y][r][x] = s[r];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (y < ROWS_R) {
    REAL sum = 0;
    for (int i = 0; i < ROWS_LY; i++) sum += part[i][y][x];
    const int row = r0 + y;
    if (row < R && col < N) C[offC + (size_t)row * ldc + col] = sum;
  }
}

/* matmul_cols: the R columns of C for its M rows, from all of A and R
** columns of B. A work-group of COLS_LX x COLS_LY work-items computes
** COLS_LY rows by COLS_R columns; the COLS_LX work-items of a row take
** interleaved slices of K (neighbouring work-items read neighbouring
** elements of its row of A), and their sums are added in local memory
** (COLS_R <= COLS_LX). Grid: (COLS_LX * ceil(R / COLS_R), M rounded up to
** COLS_LY). */
__kernel __attribute__((reqd_work_group_size(COLS_LX, COLS_LY, 1)))
void matmul_cols(const int M, const int R, const int K, EDGE_OPERANDS) {
  __local REAL part[COLS_LY][COLS_R][COLS_LX];
  const int x = get_local_id(0), y = get_local_id(1);
  const int c0 = get_group_id(0) * COLS_R, row = get_group_id(1) * COLS_LY + y;
  const __global REAL *a = A + offA + (size_t)min(row, M - 1) * lda;
  const __global REAL *b = B + offB;
  int j[COLS_R];
  REAL s[COLS_R];
  UNROLL(COLS_R)
  for (int c = 0; c < COLS_R; c++) {
    j[c] = min(c0 + c, R - 1);
    s[c] = 0;
  }
  int k = x;
  for (; k + (EDGE_STEPS - 1) * COLS_LX < K; k += EDGE_STEPS * COLS_LX) {
    REAL v[EDGE_STEPS];
    UNROLL(EDGE_STEPS)
    for (int u = 0; u < EDGE_STEPS; u++) v[u] = a[k + u * COLS_LX];
    UNROLL(EDGE_STEPS)
    for (int u = 0; u < EDGE_STEPS; u++) {
      const __global REAL *bk = b + (size_t)(k + u * COLS_LX) * ldb;
      UNROLL(COLS_R)
      for (int c = 0; c < COLS_R; c++) s[c] = MAD(v[u], bk[j[c]], s[c]);
    }
  }
  for (; k < K; k += COLS_LX) {
    const REAL v = a[k];
    const __global REAL *bk = b + (size_t)k * ldb;
    UNROLL(COLS_R)
    for (int c = 0; c < COLS_R; c++) s[c] = MAD(v, bk[j[c]], s[c]);
  }
  UNROLL(COLS_R)
  for (int c = 0; c < COLS_R; c++) part[y][c][x] = s[c];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (x < COLS_R) {
    REAL sum = 0;
    for (int i = 0; i < COLS_LX; i++) sum += part[y][x][i];
    if (row < M && c0 + x < R) C[offC + (size_t)row * ldc + c0 + x] = sum;
  }
}
