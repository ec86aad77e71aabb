/* tensor_random.cl: Philox-4x32-10 (Salmon et al., "Parallel random
** numbers: as easy as 1, 2, 3", SC 2011), counter-based: element i of a
** tensor depends only on the seed (the key) and i (the counter is i's
** block), so any device and any launch geometry give the same numbers.
** Work-item b computes block b: 4 floats or 2 doubles.
**   float:  u = (x >> 8) * 2^-24, in [0, 1)
**   double: u = ((x >> 5) * 2^26 + (y >> 6)) * 2^-53, in [0, 1)
**   randn:  Box-Muller on pairs, u1 in (0, 1]
** uniform_T and normal_T are rand_T and randn_T scaled: lo + span * u,
** mean + std * z. randint_T: lo + the high word of w * range for a 64-bit
** word w of each element (Lemire's multiply, no rejection: the bias is at
** most range / 2^64), lo and range passed as 64-bit words (range 0: all
** 2^64 values); signed types read the sum back with as_long, so every
** conversion is of a value in the type's range. */
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

inline uint4 philox(ulong block, uint k0, uint k1) {
  uint4 c = (uint4)((uint)block, (uint)(block >> 32), 0u, 0u);
  for (int r = 0; r < 10; r++) {
    uint hi0 = mul_hi(PHILOX_M0, c.x), lo0 = PHILOX_M0 * c.x;
    uint hi1 = mul_hi(PHILOX_M1, c.z), lo1 = PHILOX_M1 * c.z;
    c = (uint4)(hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0);
    k0 += PHILOX_W0;
    k1 += PHILOX_W1;
  }
  return c;
}

inline float unit_float(uint x) { return (float)(x >> 8) * 0x1.0p-24f; }
inline float unit_float_open(uint x) { return (float)((x >> 8) + 1u) * 0x1.0p-24f; }

kernel void rand_float(global float* restrict out, ulong n, uint k0, uint k1) {
  ulong b = get_global_id(0), i = b * 4;
  if (i >= n) return;
  uint4 r = philox(b, k0, k1);
  float4 v = (float4)(unit_float(r.x), unit_float(r.y), unit_float(r.z), unit_float(r.w));
  if (i + 4 <= n) { ((global float4*)out)[b] = v; return; }
  out[i] = v.x;
  if (i + 1 < n) out[i + 1] = v.y;
  if (i + 2 < n) out[i + 2] = v.z;
}

kernel void randn_float(global float* restrict out, ulong n, uint k0, uint k1) {
  ulong b = get_global_id(0), i = b * 4;
  if (i >= n) return;
  uint4 r = philox(b, k0, k1);
  float r1 = sqrt(-2.0f * log(unit_float_open(r.x))), a1 = 6.2831853071795864f * unit_float(r.y);
  float r2 = sqrt(-2.0f * log(unit_float_open(r.z))), a2 = 6.2831853071795864f * unit_float(r.w);
  float4 v = (float4)(r1 * cos(a1), r1 * sin(a1), r2 * cos(a2), r2 * sin(a2));
  if (i + 4 <= n) { ((global float4*)out)[b] = v; return; }
  out[i] = v.x;
  if (i + 1 < n) out[i + 1] = v.y;
  if (i + 2 < n) out[i + 2] = v.z;
}

kernel void uniform_float(global float* restrict out, ulong n, uint k0, uint k1, float lo,
                          float span) {
  ulong b = get_global_id(0), i = b * 4;
  if (i >= n) return;
  uint4 r = philox(b, k0, k1);
  float4 v = lo + span * (float4)(unit_float(r.x), unit_float(r.y), unit_float(r.z),
                                  unit_float(r.w));
  if (i + 4 <= n) { ((global float4*)out)[b] = v; return; }
  out[i] = v.x;
  if (i + 1 < n) out[i + 1] = v.y;
  if (i + 2 < n) out[i + 2] = v.z;
}

kernel void normal_float(global float* restrict out, ulong n, uint k0, uint k1, float mean,
                         float std) {
  ulong b = get_global_id(0), i = b * 4;
  if (i >= n) return;
  uint4 r = philox(b, k0, k1);
  float r1 = sqrt(-2.0f * log(unit_float_open(r.x))), a1 = 6.2831853071795864f * unit_float(r.y);
  float r2 = sqrt(-2.0f * log(unit_float_open(r.z))), a2 = 6.2831853071795864f * unit_float(r.w);
  float4 v = mean + std * (float4)(r1 * cos(a1), r1 * sin(a1), r2 * cos(a2), r2 * sin(a2));
  if (i + 4 <= n) { ((global float4*)out)[b] = v; return; }
  out[i] = v.x;
  if (i + 1 < n) out[i + 1] = v.y;
  if (i + 2 < n) out[i + 2] = v.z;
}

#define RANDINT(T, READ) \
kernel void randint_##T(global T* restrict out, ulong n, uint k0, uint k1, long lo, \
                        long range) { \
  ulong b = get_global_id(0), i = b * 2, base = (ulong)lo, m = (ulong)range; \
  if (i >= n) return; \
  uint4 r = philox(b, k0, k1); \
  ulong w0 = ((ulong)r.x << 32) | r.y, w1 = ((ulong)r.z << 32) | r.w; \
  out[i] = (T)READ(base + (m ? mul_hi(w0, m) : w0)); \
  if (i + 1 < n) out[i + 1] = (T)READ(base + (m ? mul_hi(w1, m) : w1)); \
}
RANDINT(char, as_long)
RANDINT(uchar, )
RANDINT(short, as_long)
RANDINT(ushort, )
RANDINT(int, as_long)
RANDINT(uint, )
RANDINT(long, as_long)
RANDINT(ulong, )

#ifdef cl_khr_fp64
inline double unit_double(uint x, uint y) {
  return (double)((ulong)(x >> 5) * 67108864ul + (y >> 6)) * 0x1.0p-53;
}

kernel void rand_double(global double* restrict out, ulong n, uint k0, uint k1) {
  ulong b = get_global_id(0), i = b * 2;
  if (i >= n) return;
  uint4 r = philox(b, k0, k1);
  out[i] = unit_double(r.x, r.y);
  if (i + 1 < n) out[i + 1] = unit_double(r.z, r.w);
}

kernel void randn_double(global double* restrict out, ulong n, uint k0, uint k1) {
  ulong b = get_global_id(0), i = b * 2;
  if (i >= n) return;
  uint4 r = philox(b, k0, k1);
  double u1 = 1.0 - unit_double(r.x, r.y), a = 6.283185307179586477 * unit_double(r.z, r.w);
  double rad = sqrt(-2.0 * log(u1));
  out[i] = rad * cos(a);
  if (i + 1 < n) out[i + 1] = rad * sin(a);
}
kernel void uniform_double(global double* restrict out, ulong n, uint k0, uint k1, double lo,
                           double span) {
  ulong b = get_global_id(0), i = b * 2;
  if (i >= n) return;
  uint4 r = philox(b, k0, k1);
  out[i] = lo + span * unit_double(r.x, r.y);
  if (i + 1 < n) out[i + 1] = lo + span * unit_double(r.z, r.w);
}

kernel void normal_double(global double* restrict out, ulong n, uint k0, uint k1, double mean,
                          double std) {
  ulong b = get_global_id(0), i = b * 2;
  if (i >= n) return;
  uint4 r = philox(b, k0, k1);
  double u1 = 1.0 - unit_double(r.x, r.y), a = 6.283185307179586477 * unit_double(r.z, r.w);
  double rad = sqrt(-2.0 * log(u1));
  out[i] = mean + std * (rad * cos(a));
  if (i + 1 < n) out[i + 1] = mean + std * (rad * sin(a));
}
#endif
