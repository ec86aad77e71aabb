/*
** matmul_mma.cl: C = alpha * op(A) * op(B) + beta * C in float on NVIDIA's
** tensor cores (inline PTX: mma.sync m16n8k8 with TF32 operands and float
** sums): luagpu.matmul's precisions "tf32" and "3xtf32"
** (lua/luagpu/matmul_mma.lua). op(A) is M x K, op(B) K x N, C M x N, all
** row-major at element offsets offA, offB, offC.
**
** Packed operands. An mma.sync takes each operand fragment in consecutive
** registers, lane by lane in the order the PTX ISA fixes: lane 4g + t holds
** A's (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4) of a 16 x 8 tile and
** B's (t, g), (t + 4, g) of an 8 x 8 one. Read from tiles in their matrix
** layout, those come from two rows (A) or two k (B), and NVIDIA's compiler
** spent about 300 register moves per 64 mma putting them in place (which
** kept the tensor cores at a third of their rate). So pack_a and pack_b
** first write each fragment as one float4 per lane, rounded to TF32 once,
** in the order the work-groups read them and padded with zeros to whole
** tiles; a step of the product is then one contiguous block per operand,
** copied by cp.async into local memory, and each fragment is one 16-byte
** local read straight into the mma's registers (a warp reads 512
** consecutive bytes: no bank conflicts).
**
** Packed layouts, in float4s, the lane fastest:
**   A: [M/BM][K/BK][BM/16][BK/8][32]: work-group row of tiles, step along
**      K, m-tile of 16 rows, k-chunk of 8, lane: (g, t), (g + 8, t),
**      (g, t + 4), (g + 8, t + 4) of that 16 x 8 part.
**   B: [N/BN][K/BK][BN/16][BK/8][32]: work-group column of tiles, step,
**      pair of 8-column n-tiles, k-chunk, lane: (t, g), (t + 4, g) of the
**      first n-tile, then of the second.
**
** THREE (3xTF32, Ootomo & Yokota 2022): each float x is split into
** big = tf32(x) and small = tf32(x - big) (pack_a and pack_b write the
** small parts to a second buffer), and a product takes three tensor-core
** products, small*big + big*small + big*big. The tensor cores round their
** sums toward zero, which over a long K biases the result, so each k-chunk's
** three products start from zero and are added to the float sums by an
** ordinary (round-to-nearest) add: about float's accuracy (summed in the
** tensor cores across K the error was 8.4x the fp32 kernel's). Without
** THREE ("tf32") only big*big, summed in the tensor cores.
**
** Defines (lua/luagpu/matmul_mma.lua sets them):
**   LG_ASM     asm or __asm__, whichever the compiler takes; without it
**              (LG_NO_PTX) every mma is emulated from local memory: slow, for
**              the specs on devices without tensor cores
**   BM BN BK   work-group tile (multiples of 16, 16 and 8)
**   WM WN      warp tile (multiples of 16); the work-group's NT work-items
**              copy whole float4s: NT divides BM * BK / 4 and BN * BK / 4
**   STAGES     local buffers (2 to 4), filled STAGES - 1 steps ahead
**   TRANS_A    A is stored K x M; TRANS_B: B is stored N x K (pack kernels)
**   THREE      3xTF32, as above
**   TRUNC      TF32 parts by cutting bits (toward zero), not cvt.rna
**   BETA       C is read: C = alpha * AB + beta * C
**   MAIN       builds matmul_mma too (the pack kernels need only BM BN BK)
*/
#ifdef LG_NO_PTX
/* Without PTX (PoCL: the specs), each mma is emulated from the fragments in
   local memory: a and b point at the 32 lanes' float4s of the A and B
   fragments, second says which n-tile of b's pair; float sums, the TF32
   operands as rounded by tf32r. Not inlined: PoCL then builds in seconds. */
static inline float tf32r(float x) { return as_float((as_uint(x) + 0x1000u) & 0xffffe000u); }
__attribute__((noinline)) static void mma_emulated(float *d, __local const float4 *a,
                                                   __local const float4 *b, int second,
                                                   int lane) {
  const int g = lane / 4, t = lane % 4;
  for (int e = 0; e < 4; e++) {
    const int row = g + 8 * (e / 2), col = 2 * t + e % 2;
    float sum = d[e];
    for (int k = 0; k < 8; k++) {
      const __local float *x = (const __local float *)&a[(row % 8) * 4 + k % 4];
      const __local float *y = (const __local float *)&b[col * 4 + k % 4];
      sum += x[row / 8 + 2 * (k / 4)] * y[2 * second + k / 4];
    }
    d[e] = sum;
  }
}
#define COPY16(q, p) (*(__local float4 *)(q) = *(const __global float4 *)(p))
#define COPY_COMMIT()
#define COPY_WAIT()
#else
#ifdef TRUNC
static inline float tf32r(float x) { return as_float(as_uint(x) & 0xffffe000u); }
#else
static inline float tf32r(float x) {
  uint r;
  LG_ASM("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return as_float(r);
}
#endif
/* d += a * (b0, b1) for one m16n8k8 tile; a a float4 fragment */
#define MMA(d, a, b0, b1)                                                           \
  LG_ASM("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "                      \
         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"      \
         : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                           \
         : "r"(as_uint(a.x)), "r"(as_uint(a.y)), "r"(as_uint(a.z)), "r"(as_uint(a.w)), \
           "r"(as_uint(b0)), "r"(as_uint(b1)),                                      \
           "f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3]))
#define LG_STR_(x) #x
#define LG_STR(x) LG_STR_(x)
#define COPY16(q, p)                                                                \
  LG_ASM volatile("cp.async.cg.shared.global [%0], [%1], 16;"                       \
                  :: "r"((uint)(size_t)(q)), "l"(p) : "memory")
#define COPY_COMMIT() LG_ASM volatile("cp.async.commit_group;" ::: "memory")
#define COPY_WAIT() LG_ASM volatile("cp.async.wait_group " LG_STR(WAIT_GROUPS) ";" ::: "memory")
#endif

/* Element (r, c) of op(X), X stored row-major with pitch ld (transposed:
   X is c-major), 0 outside rows x cols. */
static inline float at(const __global float *X, long ld, int r, int c, int rows, int cols,
                       int trans) {
  if (r >= rows || c >= cols) return 0.0f;
  return trans ? X[(long)c * ld + r] : X[(long)r * ld + c];
}

/* Writes the big part of x to *big and, for THREE, the small one to *small. */
static inline void split4(float4 x, __global float4 *big, __global float4 *small) {
  float4 b = (float4)(tf32r(x.x), tf32r(x.y), tf32r(x.z), tf32r(x.w));
  *big = b;
#ifdef THREE
  *small = (float4)(tf32r(x.x - b.x), tf32r(x.y - b.y), tf32r(x.z - b.z), tf32r(x.w - b.w));
#endif
}

/* Where float4 i of a packed operand goes (the layouts above): its lane
   (g, t), k-chunk kc, 16-wide tile of the block (tiles per block: per),
   step ks along K and block. */
typedef struct {
  int g, t, kc, tile, ks, block;
} place;

static inline place place_of(long i, int per, int ksteps) {
  place p;
  const int lane = i % 32;
  p.g = lane / 4;
  p.t = lane % 4;
  long f = i / 32;
  p.kc = f % (BK / 8);
  f /= BK / 8;
  p.tile = f % per;
  f /= per;
  p.ks = f % ksteps;
  p.block = f / ksteps;
  return p;
}

#ifdef TRANS_A
#define A_TRANS 1
#else
#define A_TRANS 0
#endif
#ifdef TRANS_B
#define B_TRANS 1
#else
#define B_TRANS 0
#endif

/* The float4 (r, c), (r + dr, c), (r, c + dc), (r + dr, c + dc) of op(X):
   a lane's A fragment with dr 8, dc 4; its two B fragments with dr 4, dc 8. */
static inline float4 fragment(const __global float *X, long ld, int r, int c, int dr, int dc,
                              int rows, int cols, int trans) {
  return (float4)(at(X, ld, r, c, rows, cols, trans), at(X, ld, r + dr, c, rows, cols, trans),
                  at(X, ld, r, c + dc, rows, cols, trans),
                  at(X, ld, r + dr, c + dc, rows, cols, trans));
}

/* One work-item per lane float4 of op(A) (M x K) into Ap (and Asm for
   THREE); ksteps = padded K / BK. */
__kernel void pack_a(int M, int K, const __global float *A, long offA, long lda, int ksteps,
                     __global float4 *Ap, __global float4 *Asm) {
  const long i = get_global_id(0);
  const place p = place_of(i, BM / 16, ksteps);
  const int r = p.block * BM + p.tile * 16 + p.g, c = p.ks * BK + p.kc * 8 + p.t;
  split4(fragment(A + offA, lda, r, c, 8, 4, M, K, A_TRANS), Ap + i, Asm + i);
}

/* The same for op(B) (K x N) into Bp (and Bsm). */
__kernel void pack_b(int K, int N, const __global float *B, long offB, long ldb, int ksteps,
                     __global float4 *Bp, __global float4 *Bsm) {
  const long i = get_global_id(0);
  const place p = place_of(i, BN / 16, ksteps);
  const int r = p.ks * BK + p.kc * 8 + p.t, c = p.block * BN + p.tile * 16 + p.g;
  split4(fragment(B + offB, ldb, r, c, 4, 8, K, N, B_TRANS), Bp + i, Bsm + i);
}

#ifdef MAIN
#define NT (32 * (BM / WM) * (BN / WN))
#define MI (WM / 16)
#define NI (WN / 8)
#define A_STEP (BM * BK / 4)          /* float4s of a step's A block */
#define B_STEP (BN * BK / 4)
#define WAIT_GROUPS (STAGES - 2)      /* cp.async groups left in flight */
#ifdef THREE
#define PARTS 2
#else
#define PARTS 1
#endif

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void matmul_mma(int M, int N, int ksteps, const __global float4 *Ap,
                const __global float4 *Asm, const __global float4 *Bp,
                const __global float4 *Bsm, __global float *C, long offC, float alpha,
                float beta) {
  __local float4 As[STAGES][PARTS][A_STEP];
  __local float4 Bs[STAGES][PARTS][B_STEP];
  const int lid = get_local_id(0);
  const int warp = lid / 32, lane = lid % 32;
  const int g = lane / 4, t = lane % 4;
  const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
  const int mb = get_group_id(1), nb = get_group_id(0);
  const __global float4 *ap = Ap + (long)mb * ksteps * A_STEP;
  const __global float4 *bp = Bp + (long)nb * ksteps * B_STEP;
#ifdef THREE
  const __global float4 *asp = Asm + (long)mb * ksteps * A_STEP;
  const __global float4 *bsp = Bsm + (long)nb * ksteps * B_STEP;
#endif

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; i++)
#pragma unroll
    for (int j = 0; j < NI; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

#ifdef THREE
#define ISSUE_SMALL(s, st)                                                          \
  _Pragma("unroll") for (int u = 0; u < A_STEP / NT; u++)                          \
    COPY16(&As[st][1][lid + u * NT], asp + (long)(s) * A_STEP + lid + u * NT);      \
  _Pragma("unroll") for (int u = 0; u < B_STEP / NT; u++)                          \
    COPY16(&Bs[st][1][lid + u * NT], bsp + (long)(s) * B_STEP + lid + u * NT);
#else
#define ISSUE_SMALL(s, st)
#endif
#define ISSUE(s, st)                                                                \
  {                                                                                 \
    _Pragma("unroll") for (int u = 0; u < A_STEP / NT; u++)                        \
      COPY16(&As[st][0][lid + u * NT], ap + (long)(s) * A_STEP + lid + u * NT);     \
    _Pragma("unroll") for (int u = 0; u < B_STEP / NT; u++)                        \
      COPY16(&Bs[st][0][lid + u * NT], bp + (long)(s) * B_STEP + lid + u * NT);     \
    ISSUE_SMALL(s, st)                                                              \
  }

  for (int p = 0; p < STAGES - 1; p++) {
    if (p < ksteps) ISSUE(p, p);
    COPY_COMMIT();
  }
  for (int s = 0; s < ksteps; s++) {
    const int cur = s % STAGES;
    COPY_WAIT();
    barrier(CLK_LOCAL_MEM_FENCE);
    {
      const int nx = s + STAGES - 1;
      if (nx < ksteps) ISSUE(nx, nx % STAGES);
      COPY_COMMIT();
    }
/* this lane's fragment of 16-row (16-column) tile i of the warp's rows
   (columns), k-chunk kc, part p (0 big, 1 small) of the step's local block */
#define A_FRAG(p, i) As[cur][p][((wm / 16 + (i)) * (BK / 8) + kc) * 32 + lane]
#define B_FRAG(p, j) Bs[cur][p][((wn / 16 + (j)) * (BK / 8) + kc) * 32 + lane]
/* d += the product of A's fragment (part pa, tile i) and B's (part pb,
   n-tile j), in registers av and bv (the float4 of j's pair) */
#ifdef LG_NO_PTX
#define PRODUCT(d, pa, i, av, pb, j, bv)                                            \
  mma_emulated(d, &A_FRAG(pa, i) - lane, &B_FRAG(pb, (j) / 2) - lane, (j) % 2, lane)
#else
#define PRODUCT(d, pa, i, av, pb, j, bv)                                            \
  MMA(d, av, (j) % 2 ? (bv).z : (bv).x, (j) % 2 ? (bv).w : (bv).y)
#endif
#pragma unroll
    for (int kc = 0; kc < BK / 8; kc++) {
      float4 a[MI], b[NI / 2];
#pragma unroll
      for (int i = 0; i < MI; i++) a[i] = A_FRAG(0, i);
#pragma unroll
      for (int j = 0; j < NI / 2; j++) b[j] = B_FRAG(0, j);
#ifdef THREE
      float4 as_[MI], bs_[NI / 2];
#pragma unroll
      for (int i = 0; i < MI; i++) as_[i] = A_FRAG(1, i);
#pragma unroll
      for (int j = 0; j < NI / 2; j++) bs_[j] = B_FRAG(1, j);
#pragma unroll
      for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++) {
          float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
          PRODUCT(d, 1, i, as_[i], 0, j, b[j / 2]);
          PRODUCT(d, 0, i, a[i], 1, j, bs_[j / 2]);
          PRODUCT(d, 0, i, a[i], 0, j, b[j / 2]);
#pragma unroll
          for (int e = 0; e < 4; e++) acc[i][j][e] += d[e];
        }
#else
#pragma unroll
      for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++) {
          PRODUCT(acc[i][j], 0, i, a[i], 0, j, b[j / 2]);
        }
#endif
    }
  }

  /* acc[i][j]: rows g, g + 8 of m-tile i; columns 2t, 2t + 1 of n-tile j,
     whose 8 columns are the first or second half of n-pair j / 2 */
  C += offC;
#pragma unroll
  for (int i = 0; i < MI; i++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int row = mb * BM + wm + i * 16 + g + 8 * h;
      if (row >= M) continue;
#pragma unroll
      for (int j = 0; j < NI; j++) {
        const int col = nb * BN + wn + (j / 2) * 16 + (j % 2) * 8 + 2 * t;
        __global float *c = C + (long)row * N + col;
#pragma unroll
        for (int e = 0; e < 2; e++)
          if (col + e < N) {
            float v = alpha * acc[i][j][2 * h + e];
#ifdef BETA
            v += beta * c[e];
#endif
            c[e] = v;
          }
      }
    }
}
#endif
