/*
** matmul_wgmma.cl: C = alpha * op(A) * op(B) + beta * C in float on Hopper's
** warpgroup tensor-core instructions (wgmma.mma_async, PTX target sm_90a):
** luagpu.matmul's precisions "tf32" and "3xtf32" on devices where
** lua/luagpu/matmul_wgmma.lua's probe runs them. op(A) is M x K, op(B)
** K x N, C M x N, all row-major at element offsets.
**
** How wgmma gets here. NVIDIA's OpenCL compiler emits PTX for target sm_90,
** where wgmma does not exist. So this source writes each wgmma instruction
** as a PTX comment carrying its operands ("//LGWG_MMA1 {%f1, ...}, %rd2,
** %rd3;"): the registers the compiler chose appear in the PTX, and the first
** build succeeds. matmul_wgmma.lua then takes the program's PTX, rewrites
** the comments into the instructions and the target into sm_90a, and loads
** that PTX as a program binary. The comments' operand lists (WG_ACC_LIST,
** WG_acc_OUT, WG_d_OUT, WG_TAIL) are defined by a prefix matmul_wgmma.lua
** writes, one "+f" per accumulator register.
**
** Packed operands. wgmma reads A (64 rows of a warpgroup) and B (all BN
** columns) from local memory through matrix descriptors, both K-major, in
** "core matrices" of 8 rows x 4 floats (128 bytes). pack writes each
** operand as [row blocks][K steps][BK/8][R/8][2][8 rows] float4s (a float4
** is 4 consecutive k of one row, rounded to TF32), so a step's block is one
** contiguous copy and, in local memory, the core matrix of 8-row group rg
** and k half kh of k-chunk kc sits at ((kc * R/8 + rg) * 2 + kh) * 128
** bytes: the descriptors' leading offset (k halves) is 128 bytes, the
** stride offset (row groups) 256. Rows and k past the matrix are zeros.
**
** The product. A work-group of WGS warpgroups (128 work-items each) makes a
** BM x BN tile of C, BM = 64 * WGS. STAGES local buffers are filled by
** cp.async PREFETCH steps ahead; each step every warpgroup issues one
** m64nBNk8 wgmma per k-chunk of 8 and waits for all but WGWAIT of its
** groups of them (WGWAIT 1 keeps a step in flight, so the buffer refilled is
** two steps old). THREE (3xTF32): the small parts are packed to a second
** buffer, and each step's small*big + big*small + big*big start from zero in
** the tensor cores (D) and are added to the float sums by an ordinary add
** (summed in the tensor cores across K, which round toward zero, the error
** was 8.6x the fp32 kernel's).
**
** THREE with WGWAIT 1 keeps two sets of D (d0, d1) and runs a step's
** products into one while the other step's are added to the sums.
**
** BULK (Hopper's bulk copies): work-item 0 copies each step's blocks with
** one cp.async.bulk per block (they are contiguous), completing on the
** stage's "full" mbarrier; every warp waits on it, and tells work-item 0 a
** stage is free through its "empty" mbarrier (one arrive per warp once the
** wgmma that read it has completed). No barrier of the whole group per
** step, and one work-item issues the copies, PREFETCH steps ahead. (A
** producer warp of its own made 288 work-items, more than NVIDIA's driver
** lets these kernels have.)
**
** Defines: BN (8 to 256, multiple of 8), BK (multiple of 8), WGS, STAGES,
** WGWAIT (0 or 1), THREE, BULK, GROUP_M (row blocks of a band of tiles,
** see tile_of), BETA, MAIN (the product; without it
** only pack), LG_NO_PTX (no PTX: each wgmma emulated
** from local memory, for the specs on PoCL; BULK then copies as without
** it, since PoCL's work-items cannot wait on one another).
*/
#define BM (64 * WGS)
#define NT (128 * WGS)
#define A_STEP (BM * BK / 4)             /* float4s of a step's A block */
#define B_STEP (BN * BK / 4)
#define NACC (BN / 2)                    /* accumulators per work-item */
#define PREFETCH (STAGES - 1 - WGWAIT)
#define WAIT_GROUPS (PREFETCH - 1)       /* cp.async groups left in flight */
#ifdef THREE
#define PARTS 2
#else
#define PARTS 1
#endif
#if defined(LG_NO_PTX) && defined(BULK)
#undef BULK
#endif
#if defined(THREE) && WGWAIT == 1
#define DOUBLE_D 1
#endif
#define LG_STR_(x) #x
#define LG_STR(x) LG_STR_(x)

#ifdef LG_NO_PTX
static inline float tf32r(float x) { return as_float((as_uint(x) + 0x1000u) & 0xffffe000u); }
/* x = (scale ? x : 0) + the product of the warpgroup's 64 x 8 A at a and
   BN x 8 B at b (the layout above), for work-item tid of the warpgroup:
   its accumulators are rows 16 w + g (+ 8), columns 8 j + 2 t (+ 1). */
__attribute__((noinline)) static void wgmma_emulated(float *x, __local const float *a,
                                                     __local const float *b, int scale,
                                                     int tid) {
  const int w = tid / 32, g = (tid % 32) / 4, t = tid % 4;
  for (int j = 0; j < BN / 8; j++)
    for (int e = 0; e < 4; e++) {
      const int r = 16 * w + g + 8 * (e / 2), c = 8 * j + 2 * t + e % 2;
      float s = 0.0f;
      for (int k = 0; k < 8; k++)
        s += a[((r / 8) * 2 + k / 4) * 32 + (r % 8) * 4 + k % 4] *
             b[((c / 8) * 2 + k / 4) * 32 + (c % 8) * 4 + k % 4];
      x[j * 4 + e] = (scale ? x[j * 4 + e] : 0.0f) + s;
    }
}
#define COPY16(q, p) (*(q) = *(p))
#define COPY_COMMIT()
#define COPY_WAIT()
#define PROXY_FENCE()
#define WG_FENCE(x)
#define WG_COMMIT()
#define WG_WAIT(n, x)
#define WG_MMA(scale, x, pa, pb)                                                    \
  wgmma_emulated(x, (__local const float *)(pa), (__local const float *)(pb), scale, lid % 128)
#else
static inline float tf32r(float x) {
  uint r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return as_float(r);
}
/* The descriptor of a core-matrix block at p: address, leading offset 128
   bytes, stride offset 256, no swizzle. */
static inline ulong desc_of(__local const float4 *p) {
  const ulong a = (uint)(size_t)p;
  return ((a >> 4) & 0x3fff) | ((ulong)(128 >> 4) << 16) | ((ulong)(256 >> 4) << 32);
}
#define COPY16(q, p)                                                                \
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"                          \
               :: "r"((uint)(size_t)(q)), "l"(p) : "memory")
#define COPY_COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#define COPY_WAIT() asm volatile("cp.async.wait_group " LG_STR(WAIT_GROUPS) ";" ::: "memory")
/* cp.async writes through the generic proxy, wgmma reads through the async one */
#define PROXY_FENCE() asm volatile("fence.proxy.async.shared::cta;" ::: "memory")
#ifdef BULK
static inline uint lds(__local const void *p) { return (uint)(size_t)p; }
static inline void mbar_init(__local ulong *b, uint count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(lds(b)), "r"(count) : "memory");
}
/* arms b for bytes to land, and arrives (the producer's one arrive) */
static inline void mbar_expect(__local ulong *b, uint bytes) {
  ulong state;
  asm volatile("mbarrier.arrive.expect_tx.shared.b64 %0, [%1], %2;"
               : "=l"(state) : "r"(lds(b)), "r"(bytes) : "memory");
}
static inline void mbar_arrive(__local ulong *b) {
  ulong state;
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(lds(b)) : "memory");
}
/* returns once the phase of b with this parity has completed */
static inline void mbar_wait(__local ulong *b, uint parity) {
  uint done;
  do {
    asm volatile("{\n.reg .pred lgq;\n"
                 "mbarrier.try_wait.parity.shared.b64 lgq, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, lgq;\n}"
                 : "=r"(done) : "r"(lds(b)), "r"(parity) : "memory");
  } while (!done);
}
/* bytes (a multiple of 16) from src to dst, completing on b */
static inline void bulk_copy(__local void *dst, const __global void *src, uint bytes,
                             __local ulong *b) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1], %2, [%3];"
               :: "r"(lds(dst)), "l"(src), "r"(bytes), "r"(lds(b)) : "memory");
}
#endif
/* x: acc or d, the register set the instruction touches (its "+f" list,
   WG_acc_OUT or WG_d_OUT, keeps the compiler from moving their reads and
   writes across) */
#define WG_FENCE(x) asm volatile("//LGWG_FENCE " WG_ACC_LIST : WG_##x##_OUT :: "memory")
#define WG_COMMIT() asm volatile("//LGWG_COMMIT" ::: "memory")
#define WG_WAIT(n, x) asm volatile("//LGWG_WAIT" #n " " WG_ACC_LIST : WG_##x##_OUT :: "memory")
#define WG_MMA(scale, x, pa, pb)                                                    \
  asm volatile("//LGWG_MMA" #scale " " WG_ACC_LIST WG_TAIL : WG_##x##_OUT          \
               : "l"(desc_of(pa)), "l"(desc_of(pb)))
#endif

/* op(X)'s element (r, k), X stored with rows along K (kmajor) or along r */
static inline float el(const __global float *X, long ld, int r, int k, int rows, int K,
                       int kmajor) {
  if (r >= rows || k >= K) return 0.0f;
  return kmajor ? X[(long)r * ld + k] : X[(long)k * ld + r];
}

/* One work-item per float4 of the packed op(X) (rows x K; R rows a block):
   op(A) with R = BM, op(B)^T with R = BN. Small parts to Ps for THREE. The
   launch is (2 R, K padded / 8, blocks): dim 0 the float4's place in its
   8-row group, k half and row group, dim 1 its k-chunk of 8, dim 2 its row
   block, so that no index is divided at run time. Rows along K (kmajor)
   read their 4 k at once where the rows and offset keep 16 bytes aligned. */
__kernel void pack(int rows, int K, const __global float *X, long off, long ld, int kmajor,
                   int R, int ksteps, __global float4 *P, __global float4 *Ps) {
  const int x0 = get_global_id(0);
  const int r8 = x0 % 8, kh = (x0 / 8) % 2, rg = x0 / 16;
  const long k8 = get_global_id(1), blk = get_global_id(2);
  const long i = (blk * get_global_size(1) + k8) * (2 * R) + x0;
  const int r = blk * R + rg * 8 + r8, k = k8 * 8 + kh * 4;
  X += off;
  float4 x;
  if (kmajor && ((off | ld) & 3) == 0 && r < rows && k + 3 < K)
    x = *(const __global float4 *)(X + (long)r * ld + k);
  else
    x = (float4)(el(X, ld, r, k, rows, K, kmajor), el(X, ld, r, k + 1, rows, K, kmajor),
                 el(X, ld, r, k + 2, rows, K, kmajor), el(X, ld, r, k + 3, rows, K, kmajor));
  const float4 b = (float4)(tf32r(x.x), tf32r(x.y), tf32r(x.z), tf32r(x.w));
  P[i] = b;
#ifdef THREE
  Ps[i] = (float4)(tf32r(x.x - b.x), tf32r(x.y - b.y), tf32r(x.z - b.z), tf32r(x.w - b.w));
#endif
}

#ifdef MAIN
/* Copies n float4s from src to dst, NT work-items each taking every NT-th
   (a loop of constant length: unrolled, the test folded away when NT
   divides n; a loop on lid ran the product 30% slower) */
#define COPY_BLOCK(dst, src, n)                                                     \
  _Pragma("unroll") for (int u = 0; u < ((n) + NT - 1) / NT; u++) {                \
    const int i_ = lid + u * NT;                                                    \
    if ((n) % NT == 0 || i_ < (n)) COPY16(&(dst)[i_], (src) + i_);                  \
  }
/* Copies step s's blocks (part p: 0 big, 1 small) into stage st. */
#define ISSUE_PART(s, st, p, ap, bp)                                                \
  COPY_BLOCK(As[st][p], ap + (long)(s) * A_STEP, A_STEP)                            \
  COPY_BLOCK(Bs[st][p], bp + (long)(s) * B_STEP, B_STEP)
#ifdef THREE
#define ISSUE(s, st) { ISSUE_PART(s, st, 0, ap, bp) ISSUE_PART(s, st, 1, asp, bsp) }
#else
#define ISSUE(s, st) { ISSUE_PART(s, st, 0, ap, bp) }
#endif
/* this warpgroup's 64 rows of A, and B, at k-chunk kc of stage st, part p */
#define A_AT(st, p, kc) (&As[st][p][((kc) * (BM / 8) + wg * 8) * 16])
#define B_AT(st, p, kc) (&Bs[st][p][(kc) * (BN / 8) * 16])

/* The start of step s on stage cur: its blocks are in local memory. Without
   BULK every work-item waits for its copies, the group meets, and step
   s + PREFETCH's copies are issued; with BULK the stage's full mbarrier. */
#ifdef BULK
/* step s's blocks into stage st once its last reader has let go */
#define BULK_ISSUE(s, st)                                                           \
  {                                                                                 \
    mbar_wait(&empty[st], (((s) / STAGES) + 1) & 1);   /* at once in round 0 */     \
    mbar_expect(&full[st], PARTS * (A_STEP + B_STEP) * 16);                         \
    bulk_copy(As[st][0], ap + (long)(s) * A_STEP, A_STEP * 16, &full[st]);          \
    bulk_copy(Bs[st][0], bp + (long)(s) * B_STEP, B_STEP * 16, &full[st]);          \
    BULK_SMALL(s, st)                                                               \
  }
#ifdef THREE
#define BULK_SMALL(s, st)                                                           \
  bulk_copy(As[st][1], asp + (long)(s) * A_STEP, A_STEP * 16, &full[st]);           \
  bulk_copy(Bs[st][1], bsp + (long)(s) * B_STEP, B_STEP * 16, &full[st]);
#else
#define BULK_SMALL(s, st)
#endif
#define STEP_BEGIN(s, cur)                                                          \
  mbar_wait(&full[cur], ((s) / STAGES) & 1);                                        \
  if (lid == 0) {                                                                   \
    const int nx = (s) + PREFETCH;                                                  \
    if (nx < ksteps) BULK_ISSUE(nx, nx % STAGES)                                    \
  }
/* the wgmma of step s (on stage st) have completed: one arrive per warp */
#define STAGE_DONE(s, st)                                                           \
  if (lid % 32 == 0) mbar_arrive(&empty[st]);
#else
#define STEP_BEGIN(s, cur)                                                          \
  COPY_WAIT();                                                                      \
  PROXY_FENCE();                                                                    \
  barrier(CLK_LOCAL_MEM_FENCE);                                                     \
  {                                                                                 \
    const int nx = (s) + PREFETCH;                                                  \
    if (nx < ksteps) ISSUE(nx, nx % STAGES);                                        \
    COPY_COMMIT();                                                                  \
  }
#define STAGE_DONE(s, st)
#endif

/* 3xTF32: step cur's small*big + big*small + big*big into D set x, from zero */
#define THREE_MMAS(x, cur)                                                          \
  WG_FENCE(x);                                                                      \
  _Pragma("unroll") for (int kc = 0; kc < BK / 8; kc++) {                          \
    if (kc == 0)                                                                    \
      WG_MMA(0, x, A_AT(cur, 1, kc), B_AT(cur, 0, kc));                             \
    else                                                                            \
      WG_MMA(1, x, A_AT(cur, 1, kc), B_AT(cur, 0, kc));                             \
    WG_MMA(1, x, A_AT(cur, 0, kc), B_AT(cur, 1, kc));                               \
    WG_MMA(1, x, A_AT(cur, 0, kc), B_AT(cur, 0, kc));                               \
  }                                                                                 \
  WG_COMMIT();
#define ADD_D(x)                                                                    \
  _Pragma("unroll") for (int e = 0; e < NACC; e++) acc[e] += x[e];
/* one step of the double-D 3xTF32 loop: s into x while y (step s - 1) is
   waited for and added */
#define THREE_STEP2(s, x, y)                                                        \
  {                                                                                 \
    const int cur = (s) % STAGES;                                                   \
    STEP_BEGIN(s, cur)                                                              \
    THREE_MMAS(x, cur)                                                              \
    WG_WAIT(1, dd);                                                                 \
    if ((s) > 0) {                                                                  \
      ADD_D(y)                                                                      \
      STAGE_DONE((s) - 1, ((s) - 1) % STAGES)                                       \
    }                                                                               \
  }

/* The tile (row block mb, column block nb) of this work-group. Groups start
   in the order of their linear id; taken row block by row block, the
   groups running at once would read all of B, each once or twice, every
   wave. In bands of GROUP_M row blocks, a wave reads GROUP_M blocks of A
   and few of B, and the rest from the cache (the grouped order of CUTLASS's
   and Triton's GEMMs). GROUP_M 1: row block by row block. */
static inline void tile_of(int *mb, int *nb) {
  const int nbn = get_num_groups(0), nbm = get_num_groups(1);
  const int id = get_group_id(1) * nbn + get_group_id(0);
  const int band = id / (GROUP_M * nbn), first = band * GROUP_M;
  const int rows = min(nbm - first, GROUP_M), at = id - band * GROUP_M * nbn;
  *mb = first + at % rows;
  *nb = at / rows;
}

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void matmul_wgmma(int M, int N, int ksteps, const __global float4 *Ap,
                  const __global float4 *Asm, const __global float4 *Bp,
                  const __global float4 *Bsm, __global float *C, long offC, float alpha,
                  float beta) {
  __local float4 As[STAGES][PARTS][A_STEP] __attribute__((aligned(128)));
  __local float4 Bs[STAGES][PARTS][B_STEP] __attribute__((aligned(128)));
  const int lid = get_local_id(0);
  const int wg = lid / 128, w = (lid / 32) % 4, g = (lid % 32) / 4, t = lid % 4;
  int mb, nb;
  tile_of(&mb, &nb);
  const __global float4 *ap = Ap + (long)mb * ksteps * A_STEP;
  const __global float4 *bp = Bp + (long)nb * ksteps * B_STEP;
#ifdef THREE
  const __global float4 *asp = Asm + (long)mb * ksteps * A_STEP;
  const __global float4 *bsp = Bsm + (long)nb * ksteps * B_STEP;
#endif

#ifdef BULK
  __local ulong full[STAGES], empty[STAGES];
  if (lid == 0) {
    for (int i = 0; i < STAGES; i++) {
      mbar_init(&full[i], 1);
      mbar_init(&empty[i], 4 * WGS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0)
    for (int p = 0; p < PREFETCH && p < ksteps; p++) BULK_ISSUE(p, p)
#else
  for (int p = 0; p < PREFETCH; p++) {
    if (p < ksteps) ISSUE(p, p);
    COPY_COMMIT();
  }
#endif

  float acc[NACC];
#pragma unroll
  for (int e = 0; e < NACC; e++) acc[e] = 0.0f;
#if defined(DOUBLE_D)
  float d0[NACC], d1[NACC];
#pragma unroll
  for (int e = 0; e < NACC; e++) d0[e] = d1[e] = 0.0f;
  for (int s = 0; s < ksteps; s += 2) {
    THREE_STEP2(s, d0, d1)
    if (s + 1 < ksteps) THREE_STEP2(s + 1, d1, d0)
  }
  WG_WAIT(0, dd);
  if (ksteps % 2) {
    ADD_D(d0)
  } else {
    ADD_D(d1)
  }
#elif defined(THREE)
  float d[NACC];
#pragma unroll
  for (int e = 0; e < NACC; e++) d[e] = 0.0f;
  for (int s = 0; s < ksteps; s++) {
    const int cur = s % STAGES;
    STEP_BEGIN(s, cur)
    THREE_MMAS(d, cur)
    WG_WAIT(0, d);
    ADD_D(d)
    STAGE_DONE(s, cur)
  }
#else
  for (int s = 0; s < ksteps; s++) {
    const int cur = s % STAGES;
    STEP_BEGIN(s, cur)
    WG_FENCE(acc);
#pragma unroll
    for (int kc = 0; kc < BK / 8; kc++) WG_MMA(1, acc, A_AT(cur, 0, kc), B_AT(cur, 0, kc));
    WG_COMMIT();
#if WGWAIT == 1
    WG_WAIT(1, acc);
    if (s > 0) {
      STAGE_DONE(s - 1, (s - 1) % STAGES)
    }
#else
    WG_WAIT(0, acc);
    STAGE_DONE(s, cur)
#endif
  }
  WG_WAIT(0, acc);
#endif

  /* acc[4 j + e]: row 16 w + g + 8 (e / 2) of the warpgroup's 64, column
     8 j + 2 t + e % 2 */
  C += offC;
#pragma unroll
  for (int j = 0; j < BN / 8; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int row = mb * BM + wg * 64 + w * 16 + g + 8 * (e / 2);
      const int col = nb * BN + 8 * j + 2 * t + e % 2;
      if (row < M && col < N) {
        float v = alpha * acc[4 * j + e];
#ifdef BETA
        v += beta * C[(long)row * N + col];
#endif
        C[(long)row * N + col] = v;
      }
    }
}
#endif
