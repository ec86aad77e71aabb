/*
** sha256.c: SHA-256 (FIPS 180-4), the hash of the program cache's keys
** and of its entries' checksums.
*/
#include <string.h>

#include "internal.h"

static const uint32_t K[64] = {
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void transform(lg_Hash *s, const unsigned char *p) {
  uint32_t w[64], v[8], t1, t2;
  int i;
  for (i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
           (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
  for (; i < 64; i++)
    w[i] = w[i - 16] + (ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3)) +
           w[i - 7] + (ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10));
  memcpy(v, s->h, sizeof v);
  for (i = 0; i < 64; i++) {
    t1 = v[7] + (ROR(v[4], 6) ^ ROR(v[4], 11) ^ ROR(v[4], 25)) +
         ((v[4] & v[5]) ^ (~v[4] & v[6])) + K[i] + w[i];
    t2 = (ROR(v[0], 2) ^ ROR(v[0], 13) ^ ROR(v[0], 22)) +
         ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
    memmove(v + 1, v, 7 * sizeof v[0]);
    v[4] += t1;
    v[0] = t1 + t2;
  }
  for (i = 0; i < 8; i++) s->h[i] += v[i];
}

void lg_hash_init(lg_Hash *s) {
  static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, h0, sizeof h0);
  s->len = 0;
}

void lg_hash_update(lg_Hash *s, const void *data, size_t n) {
  const unsigned char *p = data;
  while (n > 0) {
    size_t used = (size_t)(s->len % 64), take = 64 - used < n ? 64 - used : n;
    memcpy(s->buf + used, p, take);
    s->len += take;
    p += take;
    n -= take;
    if (s->len % 64 == 0) transform(s, s->buf);
  }
}

void lg_hash_final(lg_Hash *s, unsigned char out[32]) {
  uint64_t bits = s->len * 8;
  unsigned char pad[72];
  size_t npad = 64 - (size_t)((s->len + 8) % 64), i;
  memset(pad, 0, sizeof pad);
  pad[0] = 0x80;
  for (i = 0; i < 8; i++) pad[npad + i] = (unsigned char)(bits >> (56 - 8 * i));
  lg_hash_update(s, pad, npad + 8);
  for (i = 0; i < 32; i++) out[i] = (unsigned char)(s->h[i / 4] >> (24 - 8 * (i % 4)));
}

