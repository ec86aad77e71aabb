/*
** sort_keys.cl: the key order luagpu.algo's sorts share, put before sort.cl
** (the radix sort) and sort_rows.cl (rows in local memory) by their
** recipes (lua/luagpu/algo/sort.lua, sort_rows.lua).
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
