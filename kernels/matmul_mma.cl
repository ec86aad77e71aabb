/*
** matmul_mma.cl: C = alpha * op(A) * op(B) + beta * C in float on NVIDIA's
** tensor cores, through inline PTX (mma.sync m16n8k8 with TF32 operands and
** float accumulators): luagpu.matmul's precision "tf32" and "3xtf32".
**
** op(A) is M x K, op(B) is K x N, C is M x N, all row-major at element
** offsets offA, offB, offC. A work-group of NT = 32 * (BM/WM) * (BN/WN)
** work-items computes a BM x BN tile of C; each warp a WM x WN part of it,
** as (WM/16) x (WN/8) tensor-core tiles whose sums stay in registers.
**
** Each step of BK along K loads the next tiles of A and B from global memory
** into registers (float4 along their contiguous dimension) while the warps
** compute on this step's tiles in local memory (STAGES 2: two local buffers,
** one barrier per step; 1: one buffer, two barriers, for larger tiles).
**
** The sums of a product do not depend on the order of k, nor the columns of
** a warp tile on which tensor-core tile computes them, so both are permuted
** to make a work-item's operands neighbours in local memory: in each block
** of 16 along K, lane t's k of mma step s, fragment half h, is 4t + 2s + h
** (one float4 of A's row holds both steps), and column c of n-tile j is
** (j / 4) * 32 + 4c + j % 4 of the warp tile (one float4 of B's row holds
** four n-tiles; a work-item's sums are 8 neighbouring columns of C). Local
** tiles keep the global layout (k contiguous for A, n for B, or the other
** way round when transposed), A's rows padded, B's rows permuted and their
** 16-byte slots swizzled (B_ROW, B_AT) so that a warp's float4 reads hit
** every bank once (the transposed A is read element by element).
**
** THREE (3xTF32, Ootomo & Yokota 2022): each float x is split into
** big = tf32(x) and small = tf32(x - big), and a product takes three
** tensor-core products, small*big + big*small + big*big. The tensor cores
** round their sums toward zero, which over a long K biases the result, so
** each mma step's three products start from zero and are added to the
** float sums by an ordinary (round-to-nearest) add: about float's accuracy.
** Without THREE ("tf32") only big*big, summed in the tensor cores: the
** operands keep 10 bits of mantissa.
**
** Defines (lua/luagpu/matmul_mma.lua sets them):
**   LG_ASM      asm or __asm__, whichever the compiler takes
**   BM BN BK    work-group tile (BK a multiple of 16)
**   WM WN       warp tile (WM a multiple of 16, WN of 32)
**   STAGES      2 (default) or 1 local buffers
**   TRANS_A     A is stored K x M (op(A) = A^T); TRANS_B: B is stored N x K
**   VEC_A       A's rows (along its stored contiguous dimension) and offA are
**               multiples of 4 elements: tiles load as float4. VEC_B likewise
**   VEC_C       N and offC are multiples of 4: C's rows store as float4
**   THREE       3xTF32 (see above); without it TF32
**   TRUNC       split by cutting bits (round toward zero) instead of
**               cvt.rna.tf32.f32 (round to nearest)
**   ASYNC       tiles go to local memory by cp.async (no registers), STAGES
**               (2 to 4) buffers, STAGES - 1 tiles ahead; ASYNC_WAIT is
**               STAGES - 2. Needs VEC_A and VEC_B (16-byte aligned rows)
**   BETA        C is read: C = alpha * AB + beta * C; without it C = alpha * AB
**
** Without BM only mma_probe is built: one warp multiplies a 16 x 8 A by an
** 8 x 8 B (both row-major) into C, which luagpu checks before it trusts the
** tensor-core path on a device.
*/
#ifdef LG_NO_PTX
/* Builds without PTX (specs check the source builds for every define on any
   device); the kernels then compute nothing meaningful and are never run. */
static inline uint tf32(float x) { return as_uint(x); }
#define MMA(d, a0, a1, a2, a3, b0, b1) (d[0] += as_float(a0 ^ b0))
#else
#ifdef TRUNC
/* the tensor cores read a float's top 19 bits: cutting the rest here gives
   the same big part (rounded toward zero) without a conversion */
static inline uint tf32(float x) { return as_uint(x) & 0xffffe000u; }
#else
static inline uint tf32(float x) {
  uint r;
  LG_ASM("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
#endif

/* d += a * b for one m16n8k8 tile. Not volatile (nor the conversion
   above): the compiler may then interleave independent products and hoist
   the next step's conversions, where a volatile asm keeps its place. */
#define MMA(d, a0, a1, a2, a3, b0, b1)                                              \
  LG_ASM("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "                      \
                  "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "                  \
                  "{%10, %11, %12, %13};"                                           \
                  : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                  \
                  : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1),           \
                    "f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3]))
#endif

#ifdef PEAK
/* The tensor cores' own rate: each warp runs PEAK rounds of 8 independent
   mma chains on registers (bench/gpu/mma.lua measures it). */
__kernel void mma_peak(__global float *out, uint seed) {
  float d[8][4];
  for (int c = 0; c < 8; c++)
    for (int e = 0; e < 4; e++) d[c][e] = 0.0f;
  uint a = seed ^ get_local_id(0), b = seed + get_local_id(0);
  for (int r = 0; r < PEAK; r++) {
#pragma unroll
    for (int c = 0; c < 8; c++) MMA(d[c], a, a + c, b, a ^ c, b + c, b ^ c);
  }
  float s = 0.0f;
  for (int c = 0; c < 8; c++) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  out[get_global_id(0)] = s;
}
#endif

#ifndef BM
__kernel void mma_probe(const __global float *A, const __global float *B, __global float *C) {
  const int lane = get_local_id(0), g = lane / 4, t = lane % 4;
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  MMA(d, tf32(A[g * 8 + t]), tf32(A[(g + 8) * 8 + t]), tf32(A[g * 8 + t + 4]),
      tf32(A[(g + 8) * 8 + t + 4]), tf32(B[t * 8 + g]), tf32(B[(t + 4) * 8 + g]));
  C[g * 8 + 2 * t] = d[0];
  C[g * 8 + 2 * t + 1] = d[1];
  C[(g + 8) * 8 + 2 * t] = d[2];
  C[(g + 8) * 8 + 2 * t + 1] = d[3];
}
#else
#ifndef STAGES
#define STAGES 2
#endif
#define NT (32 * (BM / WM) * (BN / WN))
#define MI (WM / 16)
#define NI (WN / 8)

/* Local tiles, each in its global layout, rows padded (see above). */
#ifdef TRANS_A
#define A_ROWS BK                    /* rows of the stored tile */
#define A_COLS BM                    /* contiguous elements per row */
#define A_PITCH (BM + 4)
#else
#define A_ROWS BM
#define A_COLS BK
#define A_PITCH (BK + (48 - BK % 32) % 32)  /* 16 mod 32 */
#endif
#ifdef TRANS_B
#define B_ROWS BN
#define B_COLS BK
#define B_PITCH (BK + 4)
#else
#define B_ROWS BK
#define B_COLS BN
#define B_PITCH BN
#endif
/* Where element c (a multiple of 4) of B's row r goes in local memory: each
   block of 16 rows is transposed as 4 x 4 (row 4a + b at 4b + a), so that
   the rows 4t + e that lanes t of a warp read together are neighbours, and
   within a row the 16-byte slots are swizzled by the row (slot ^ 2 (row %
   4)), so that those rows' slots fall in different banks without padding. */
#ifdef TRANS_B
#define B_ROW(r) (r)
#define B_AT(p, c) ((p) * B_PITCH + (c))
#else
#define B_ROW(r) (((r) & ~15) + ((r) & 3) * 4 + (((r) >> 2) & 3))
#define B_AT(p, c) ((p) * B_PITCH + ((((c) >> 2) ^ (((p) & 3) << 1)) << 2))
#endif
#define A_LOCAL (A_ROWS * A_PITCH)
#define B_LOCAL (B_ROWS * B_PITCH)
#define A_LOADS (BM * BK / 4 / NT)  /* float4s per work-item per tile */
#define B_LOADS (BN * BK / 4 / NT)

/* Loads 4 consecutive elements of row r (of rows), columns c..c+3 (of
   cols), of a row-major matrix at p with row pitch ld; zeros outside. */
static inline float4 load4(const __global float *p, long ld, int r, int c, int rows,
                           int cols, int vec) {
  float4 v = (float4)(0.0f);
  if (r >= rows) return v;
  const __global float *q = p + (long)r * ld + c;
  if (vec) {
    if (c < cols) v = *(const __global float4 *)q;   /* cols % 4 == 0 */
  } else {
    if (c < cols) v.s0 = q[0];
    if (c + 1 < cols) v.s1 = q[1];
    if (c + 2 < cols) v.s2 = q[2];
    if (c + 3 < cols) v.s3 = q[3];
  }
  return v;
}

#define LV4(s, i) (*(__local const float4 *)&(s)[i])

#ifdef ASYNC
/* cp.async: 16 bytes from global p to local q without passing through
   registers; with ok false, 16 zero bytes (p is then not read) */
#ifdef LG_NO_PTX
static inline void copy16(__local float *q, const __global float *p, int ok) {
  *(__local float4 *)q = ok ? *(const __global float4 *)p : (float4)(0.0f);
}
#define COPY_COMMIT()
#define COPY_WAIT()
#else
#define LG_STR_(x) #x
#define LG_STR(x) LG_STR_(x)
static inline void copy16(__local float *q, const __global float *p, int ok) {
  LG_ASM volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                  :: "r"((uint)(size_t)q), "l"(p), "r"(ok ? 16 : 0) : "memory");
}
#define COPY_COMMIT() LG_ASM volatile("cp.async.commit_group;" ::: "memory")
#define COPY_WAIT() LG_ASM volatile("cp.async.wait_group " LG_STR(ASYNC_WAIT) ";" ::: "memory")
#endif
#endif
#define PICK(v, e) ((e) == 0 ? (v).s0 : (e) == 1 ? (v).s1 : (e) == 2 ? (v).s2 : (v).s3)

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void matmul_mma(int M, int N, int K, const __global float *A, long offA,
                const __global float *B, long offB, __global float *C, long offC,
                float alpha, float beta) {
  __local float As[STAGES][A_LOCAL] __attribute__((aligned(16)));
  __local float Bs[STAGES][B_LOCAL] __attribute__((aligned(16)));
  const int lid = get_local_id(0);
  const int warp = lid / 32, lane = lid % 32;
  const int g = lane / 4, t = lane % 4;
  const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
  const int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN;
  A += offA;
  B += offB;

  /* the stored matrices: rows, contiguous columns, pitch; the tile of
     step k0 starts at stored row R(k0), column C(k0) */
#ifdef TRANS_A
  const long lda = M;
  const int a_nr = K, a_nc = M;
#define A_STEP_R(k0) (k0)
#define A_STEP_C(k0) (m0)
#else
  const long lda = K;
  const int a_nr = M, a_nc = K;
#define A_STEP_R(k0) (m0)
#define A_STEP_C(k0) (k0)
#endif
#ifdef TRANS_B
  const long ldb = K;
  const int b_nr = N, b_nc = K;
#define B_STEP_R(k0) (n0)
#define B_STEP_C(k0) (k0)
#else
  const long ldb = N;
  const int b_nr = K, b_nc = N;
#define B_STEP_R(k0) (k0)
#define B_STEP_C(k0) (n0)
#endif
#ifdef VEC_A
  const int va = 1;
#else
  const int va = 0;
#endif
#ifdef VEC_B
  const int vb = 1;
#else
  const int vb = 0;
#endif

  float4 ra[A_LOADS], rb[B_LOADS];
  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; i++)
#pragma unroll
    for (int j = 0; j < NI; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

#define LOAD_TILES(k0)                                                              \
  {                                                                                 \
    _Pragma("unroll") for (int l = 0; l < A_LOADS; l++) {                           \
      int idx = lid + l * NT, r = idx / (A_COLS / 4), c = (idx % (A_COLS / 4)) * 4; \
      ra[l] = load4(A, lda, A_STEP_R(k0) + r, A_STEP_C(k0) + c, a_nr, a_nc, va);    \
    }                                                                               \
    _Pragma("unroll") for (int l = 0; l < B_LOADS; l++) {                           \
      int idx = lid + l * NT, r = idx / (B_COLS / 4), c = (idx % (B_COLS / 4)) * 4; \
      rb[l] = load4(B, ldb, B_STEP_R(k0) + r, B_STEP_C(k0) + c, b_nr, b_nc, vb);    \
    }                                                                               \
  }
#define STORE_TILES(st)                                                             \
  {                                                                                 \
    _Pragma("unroll") for (int l = 0; l < A_LOADS; l++) {                           \
      int idx = lid + l * NT, r = idx / (A_COLS / 4), c = (idx % (A_COLS / 4)) * 4; \
      *(__local float4 *)&As[st][r * A_PITCH + c] = ra[l];                          \
    }                                                                               \
    _Pragma("unroll") for (int l = 0; l < B_LOADS; l++) {                           \
      int idx = lid + l * NT, r = idx / (B_COLS / 4), c = (idx % (B_COLS / 4)) * 4; \
      *(__local float4 *)&Bs[st][B_AT(B_ROW(r), c)] = rb[l];                        \
    }                                                                               \
  }

  const int steps = (K + BK - 1) / BK;
#ifdef ASYNC
  /* STAGES local buffers filled by cp.async, STAGES - 1 tiles ahead */
#define ISSUE_TILES(k0, st)                                                         \
  {                                                                                 \
    _Pragma("unroll") for (int l = 0; l < A_LOADS; l++) {                           \
      int idx = lid + l * NT, r = idx / (A_COLS / 4), c = (idx % (A_COLS / 4)) * 4; \
      int gr = A_STEP_R(k0) + r, gc = A_STEP_C(k0) + c, ok = gr < a_nr && gc < a_nc; \
      copy16(&As[st][r * A_PITCH + c], ok ? A + (long)gr * lda + gc : A, ok);       \
    }                                                                               \
    _Pragma("unroll") for (int l = 0; l < B_LOADS; l++) {                           \
      int idx = lid + l * NT, r = idx / (B_COLS / 4), c = (idx % (B_COLS / 4)) * 4; \
      int gr = B_STEP_R(k0) + r, gc = B_STEP_C(k0) + c, ok = gr < b_nr && gc < b_nc; \
      copy16(&Bs[st][B_AT(B_ROW(r), c)], ok ? B + (long)gr * ldb + gc : B, ok);     \
    }                                                                               \
  }
  for (int p = 0; p < STAGES - 1; p++) {
    if (p < steps) ISSUE_TILES(p * BK, p);
    COPY_COMMIT();
  }
  for (int st = 0; st < steps; st++) {
    const int cur = st % STAGES;
    COPY_WAIT();                         /* this work-item's copies of tile st */
    barrier(CLK_LOCAL_MEM_FENCE);        /* everyone's; and tile st - 1 is done with */
    {
      const int nx = st + STAGES - 1;
      if (nx < steps) ISSUE_TILES(nx * BK, nx % STAGES);
      COPY_COMMIT();
    }
#else
  LOAD_TILES(0);
  STORE_TILES(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int st = 0; st < steps; st++) {
    const int cur = STAGES == 2 ? (st & 1) : 0;
    if (st + 1 < steps) LOAD_TILES((st + 1) * BK);
#endif
    __local const float *as = As[cur], *bs = Bs[cur];
#pragma unroll
    for (int kb = 0; kb < BK; kb += 16) {
      /* this block's operands that serve both mma steps */
#ifndef TRANS_A
      float4 ar[MI][2];                 /* rows g and g + 8, k = 4t .. 4t + 3 */
#pragma unroll
      for (int i = 0; i < MI; i++) {
        const int m = wm + i * 16 + g;
        ar[i][0] = LV4(as, m * A_PITCH + kb + 4 * t);
        ar[i][1] = LV4(as, (m + 8) * A_PITCH + kb + 4 * t);
      }
#endif
#ifdef TRANS_B
      float4 br[NI];                    /* column of tile j, k = 4t .. 4t + 3 */
#pragma unroll
      for (int j = 0; j < NI; j++)
        br[j] = LV4(bs, (wn + (j / 4) * 32 + 4 * g + j % 4) * B_PITCH + kb + 4 * t);
#endif
#pragma unroll
      for (int s = 0; s < 2; s++) {
        float x[MI][4], y[NI][2];
#pragma unroll
        for (int i = 0; i < MI; i++) {
#ifdef TRANS_A
          const int m = wm + i * 16 + g, k = kb + 4 * t + 2 * s;
          x[i][0] = as[k * A_PITCH + m];
          x[i][1] = as[k * A_PITCH + m + 8];
          x[i][2] = as[(k + 1) * A_PITCH + m];
          x[i][3] = as[(k + 1) * A_PITCH + m + 8];
#else
          x[i][0] = PICK(ar[i][0], 2 * s);
          x[i][1] = PICK(ar[i][1], 2 * s);
          x[i][2] = PICK(ar[i][0], 2 * s + 1);
          x[i][3] = PICK(ar[i][1], 2 * s + 1);
#endif
        }
#ifdef TRANS_B
#pragma unroll
        for (int j = 0; j < NI; j++) {
          y[j][0] = PICK(br[j], 2 * s);
          y[j][1] = PICK(br[j], 2 * s + 1);
        }
#else
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
          for (int q = 0; q < NI / 4; q++) {
            const float4 v = LV4(bs, B_AT(kb + (2 * s + h) * 4 + t, wn + q * 32 + 4 * g));
            y[4 * q][h] = v.s0;
            y[4 * q + 1][h] = v.s1;
            y[4 * q + 2][h] = v.s2;
            y[4 * q + 3][h] = v.s3;
          }
#endif
        uint ab[MI][4], bb[NI][2];
#ifdef THREE
        uint as_[MI][4], bs_[NI][2];
#endif
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
          for (int e = 0; e < 4; e++) {
            ab[i][e] = tf32(x[i][e]);
#ifdef THREE
            as_[i][e] = tf32(x[i][e] - as_float(ab[i][e]));
#endif
          }
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
          for (int e = 0; e < 2; e++) {
            bb[j][e] = tf32(y[j][e]);
#ifdef THREE
            bs_[j][e] = tf32(y[j][e] - as_float(bb[j][e]));
#endif
          }
#ifdef THREE
        /* small A * big B, big A * small B, then big * big, each a pass over
           every tile (products in a row are independent), from zero; then
           added to the sums rounding to nearest */
        float d[MI][NI][4];
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
          for (int j = 0; j < NI; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) d[i][j][e] = 0.0f;
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
          for (int j = 0; j < NI; j++)
            MMA(d[i][j], as_[i][0], as_[i][1], as_[i][2], as_[i][3], bb[j][0], bb[j][1]);
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
          for (int j = 0; j < NI; j++)
            MMA(d[i][j], ab[i][0], ab[i][1], ab[i][2], ab[i][3], bs_[j][0], bs_[j][1]);
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
          for (int j = 0; j < NI; j++) {
            MMA(d[i][j], ab[i][0], ab[i][1], ab[i][2], ab[i][3], bb[j][0], bb[j][1]);
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] += d[i][j][e];
          }
#else
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
          for (int j = 0; j < NI; j++)
            MMA(acc[i][j], ab[i][0], ab[i][1], ab[i][2], ab[i][3], bb[j][0], bb[j][1]);
#endif
      }
    }
#ifndef ASYNC
    if (st + 1 < steps) {
#if STAGES == 1
      barrier(CLK_LOCAL_MEM_FENCE);
#endif
      STORE_TILES(STAGES == 2 ? cur ^ 1 : 0);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
  }

  /* acc[i][j][e]: row g (e < 2) or g + 8, column 2t + e % 2 of n-tile j:
     columns 8t .. 8t + 7 of each 32 of the warp tile (see above) */
  C += offC;
#pragma unroll
  for (int i = 0; i < MI; i++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int row = m0 + wm + i * 16 + g + 8 * h;
      if (row >= M) continue;
#pragma unroll
      for (int q = 0; q < NI / 4; q++) {
        const int col = n0 + wn + q * 32 + 8 * t;
        __global float *c = C + (long)row * N + col;
#pragma unroll
        for (int hv = 0; hv < 2; hv++) {
          float4 v = (float4)(acc[i][4 * q][2 * h + hv], acc[i][4 * q + 1][2 * h + hv],
                              acc[i][4 * q + 2][2 * h + hv], acc[i][4 * q + 3][2 * h + hv]);
          v *= alpha;
          const int cc = col + 4 * hv;
#ifdef VEC_C
          if (cc + 3 < N) {
#ifdef BETA
            v += beta * *(__global float4 *)(c + 4 * hv);
#endif
            *(__global float4 *)(c + 4 * hv) = v;
            continue;
          }
#endif
#pragma unroll
          for (int e = 0; e < 4; e++)
            if (cc + e < N) {
#ifdef BETA
              c[4 * hv + e] = PICK(v, e) + beta * c[4 * hv + e];
#else
              c[4 * hv + e] = PICK(v, e);
#endif
            }
        }
      }
    }
}
#endif
