/*
** mma_probe.cl: whether a device runs NVIDIA's tensor-core instructions from
** OpenCL (inline PTX: cvt.rna.tf32.f32 and mma.sync m16n8k8 with TF32
** operands), and how fast they go.
**
**   mma_probe  one warp multiplies a 16 x 8 A by an 8 x 8 B (both
**              row-major) into C; lua/luagpu/matmul_mma.lua checks the
**              product before it trusts the tensor-core path on a device
**   mma_peak   (with PEAK defined) each warp runs PEAK rounds of 8
**              independent mma chains on registers: the tensor cores' own
**              rate (bench/gpu/mma.lua)
**
** Defines: LG_ASM (asm or __asm__, whichever the compiler takes); LG_NO_PTX
** builds without the PTX (the specs build the source on any device).
*/
#ifdef LG_NO_PTX
/* Builds without PTX; the kernels then compute nothing meaningful and are
   never run. */
static inline uint tf32(float x) { return as_uint(x); }
#define MMA(d, a0, a1, a2, a3, b0, b1) (d[0] += as_float(a0 ^ b0))
#else
static inline uint tf32(float x) {
  uint r;
  LG_ASM("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

/* d += a * b for one m16n8k8 tile (not volatile: independent products may
   interleave) */
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
