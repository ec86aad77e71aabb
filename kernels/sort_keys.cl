/*
** sort_keys.cl: the key order luagpu.algo's sorts share, put before sort.cl
** (the radix sort), sort_rows.cl (rows in local memory) and topk.cl
** (x:topk) by their recipes (lua/luagpu/algo/sort.lua, sort_rows.lua,
** lua/luagpu/tensor/topk.lua).
**
** lg_bits(k, descending): key k of type K (KIND 0 unsigned, 1 signed, 2
** floating; BITS wide) as an unsigned U (uint, or ulong for 8-byte keys)
** whose order as an integer is the sort's order: signed integers with the
** sign bit flipped; floats with the sign bit flipped when positive and all
** bits when negative, both zeros as +0.0 (-0.0 and +0.0 compare equal, so
** they keep their order), NaNs as all ones (last, in their order); the
** complement when descending; keys narrower than U in their own bits only.
*/

inline U lg_bits(K k, int descending) {
  U u;
#if KIND == 2
#if BITS == 64
  u = as_ulong(k);
#else
  u = as_uint(k);
#endif
  if (isnan(k)) u = ~(U)0;
  else if (k == (K)0) u = (U)1 << (BITS - 1);     /* -0.0 as +0.0: equal keys */
  else u ^= (u >> (BITS - 1)) ? ~(U)0 : (U)1 << (BITS - 1);
#elif KIND == 1
  u = (U)k ^ ((U)1 << (BITS - 1));
#else
  u = (U)k;
#endif
  u = descending ? ~u : u;
#if BITS < 32
  u &= ((U)1 << BITS) - 1;       /* narrow keys: their own bits only */
#endif
  return u;
}

#ifdef LS
/*
** The sorts in local memory (sort_rows.cl, topk.cl: their recipes define
** LS, the work-items of a group) sort slots, each a key's bits u (lg_bits)
** paired with its position p, by (u, p): SLOT_DECL(n) declares n slots in
** the kernel, SLOT_ARGS and SLOT_PASS hand them to a function, SET(i, u,
** p) fills slot i, PAD(i) makes it a pad (all ones in both: after every
** key, NaN included), POS(i) is its position, CSWAP(i, l, up) orders slots
** i and l (ascending when up). Keys of up to 4 bytes pair into one ulong
** (u << 32 | p); 8-byte keys keep the two apart.
*/
#if BITS <= 32
/* SLOT_PAD 1 (sort_rows.cl): a spare slot after every 16, so that a
** work-item's run of consecutive slots and its neighbours' fall in
** different banks of local memory; SI(i) is slot i's place. */
#if defined(SLOT_PAD) && SLOT_PAD
#define SI(i) ((i) + ((i) >> 4))
#define SLOT_ROOM(n) ((n) + ((n) >> 4))
#else
#define SI(i) (i)
#define SLOT_ROOM(n) (n)
#endif
#define SLOT_DECL(n) local ulong sk[SLOT_ROOM(n)];
#define SLOT_ARGS local ulong* sk
#define SLOT_PASS sk
#define SET(i, u, p) sk[SI(i)] = ((ulong)(u) << 32) | (ulong)(p)
#define PAD(i) sk[SI(i)] = ~(ulong)0
#define POS(i) ((uint)sk[SI(i)])
#define CSWAP(i, l, up) {                                                      \
    ulong a = sk[SI(i)], b = sk[SI(l)];                                        \
    if ((a > b) == (up)) { sk[SI(i)] = b; sk[SI(l)] = a; } }
#else
#define SLOT_DECL(n) local ulong sk[n]; local uint sp[n];
#define SLOT_ARGS local ulong* sk, local uint* sp
#define SLOT_PASS sk, sp
#define SET(i, u, p) do { sk[i] = (u); sp[i] = (p); } while (0)
#define PAD(i) do { sk[i] = ~(ulong)0; sp[i] = ~(uint)0; } while (0)
#define POS(i) sp[i]
#define CSWAP(i, l, up) {                                                      \
    ulong a = sk[i], b = sk[l]; uint pa = sp[i], pb = sp[l];                   \
    if ((a > b || (a == b && pa > pb)) == (up)) {                              \
      sk[i] = b; sk[l] = a; sp[i] = pb; sp[l] = pa; } }
#endif

/* Sorts the n slots ascending in segments of p (powers of two, p divides
** n), a bitonic sort whose last merge of each segment (k == p) is
** ascending: every work-item of the group calls it. Pads sort last. */
void lg_bitonic(SLOT_ARGS, uint n, uint p, uint lid) {
  for (uint k = 2; k <= p; k <<= 1) {
    for (uint j = k >> 1; j > 0; j >>= 1) {
      for (uint t = lid; t < n / 2; t += LS) {
        uint i = 2 * t - (t & (j - 1)), l = i + j;
        int up = k == p || (i & k) == 0;
        CSWAP(i, l, up)
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }
}
#endif
