/*
** topk.cl: x:topk by a radix select (lua/luagpu/tensor/topk.lua), put after
** sort_keys.cl (lg_bits: each value as the unsigned key whose order is the
** wanted one; largest = the complement, so the goal is always the k
** smallest keys; NaN last, or first when largest; and the slots and
** lg_bitonic, the sort in local memory).
**
** The k-th smallest key T of a row is found digit by digit, 8 bits at a
** time from the top: a histogram of the digit over the keys whose higher
** digits are T's so far, then the bin holding the rank still wanted. The
** row's result is every key below T plus the first `need` keys equal to T
** by position (need = k - the count below T: ties stable), sorted by (key,
** position) in local memory (a bitonic sort; k <= K2, a power of two).
**
** Two ways:
**   topk_rows   rows that fit a group's local memory: RPG rows per group,
**               TPR work-items per row (LS = RPG * TPR), a row's keys held
**               in local memory (LCAP slots a row) through the whole select;
**               with WHOLE (short rows: K2 >= the row), no select: the
**               whole row sorted
**   topk_init, topk_hist, topk_find (once per digit), topk_gather,
**   topk_sort: rows too long for that, G groups per row
**               (a 2-D grid: group (row, g), rows first: a device may allow
**               fewer groups in dim 2); the state of each row (T so
**               far, the rank wanted, the count of keys below T placed) in
**               st[4 * row ..], no host round trip between passes
**
** The helper prepends K, U, KIND, BITS (sort_keys.cl), LS, and K2; for
** topk_rows also TPR, RPG, LCAP (and WHOLE); for the long-row kernels SEGE (elements a
** work-item walks in order in topk_gather). Rows have fewer than 2^32
** elements (positions are uint here, written as long + 1).
*/

#define RBITS 8
#define BINS 256
#define CH 16                           /* bins per chunk of the bin search */

/* whether key u agrees with prefix p above digit s, and digit s of u */
#define MATCH(u, p, s) ((s) + RBITS >= BITS || (((u) ^ (p)) >> ((s) + RBITS)) == 0)
#define DIGIT(u, s) ((uint)(((u) >> (s)) & (U)(BINS - 1)))

/* counts bin b in local histogram h: a work-item's run of one bin is one
** atomic (the top digit of floats falls in a few bins: fewer collisions) */
#define COUNT(b, h) {                                                          \
    uint b_ = (b);                                                             \
    if (b_ != cur) { if (cnt) atomic_add(&(h)[cur], cnt); cur = b_; cnt = 0; } \
    cnt++; }

/* The bin of histogram h holding rank *want (1-based) among its counts:
** sets digit s of *thr to it and *want to the rank within the bin. The
** row's tpr work-items (lane 0..tpr-1) and all others of the group call
** it (barriers); csum holds CH sums. Only lane 0 of an active row writes. */
void lg_find(local uint* h, local uint* csum, uint lane, uint tpr, int active,
                    local U* thr, local uint* want, int s) {
  for (uint c = lane; c < BINS / CH; c += tpr) {
    uint sum = 0;
    for (uint b = 0; b < CH; b++) sum += h[c * CH + b];
    csum[c] = sum;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lane == 0 && active) {
    uint w = *want, before = 0, c = 0;
    while (c < BINS / CH - 1 && before + csum[c] < w) { before += csum[c]; c++; }
    uint b = c * CH;
    while (b < c * CH + CH - 1 && before + h[b] < w) { before += h[b]; b++; }
    *thr |= (U)b << s;
    *want = w - before;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

/* Inclusive sums of part[0..n-1] in place (n <= LS work-items of the
** group take part by lane; all call it). */
void lg_scan(local uint* part, uint lane, uint n) {
  for (uint off = 1; off < n; off <<= 1) {
    uint v = 0;
    if (lane < n) v = part[lane] + (lane >= off ? part[lane - off] : 0);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane < n) part[lane] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

#ifdef TPR
/* ------------------------------------------------------------ short rows */

kernel void topk_rows(global const K* restrict x, ulong xoff, ulong L, ulong nrows, uint k,
                      int largest, global K* restrict vout, ulong voff,
                      global long* restrict pout, ulong poff) {
  SLOT_DECL(RPG * K2)
  uint lid = get_local_id(0), r = lid / TPR, lane = lid % TPR;
  ulong row = (ulong)get_group_id(0) * RPG + r;
  int active = row < nrows;
  uint n = active ? (uint)L : 0;
  global const K* xr = x + xoff + (active ? row : 0) * L;
#ifdef WHOLE
  /* short rows (K2 slots hold a row): the whole row sorted */
  for (uint i = lane; i < K2; i += TPR) {
    if (i < n) SET(r * K2 + i, lg_bits(xr[i], largest), i);
    else PAD(r * K2 + i);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#else
  local U keys[RPG * LCAP];
  local uint hist[RPG * BINS];
  local uint csum[RPG * (BINS / CH)];
  local uint part[RPG * TPR];
  local U thr[RPG];
  local uint want[RPG], below[RPG];
  local U* kr = keys + r * LCAP;
  local uint* hr = hist + r * BINS;
  for (uint i = lane; i < n; i += TPR) kr[i] = lg_bits(xr[i], largest);
  if (lane == 0) { thr[r] = 0; want[r] = k; below[r] = 0; }
  for (int s = BITS - RBITS; s >= 0; s -= RBITS) {
    for (uint b = lane; b < BINS; b += TPR) hr[b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    U p = thr[r];
    uint cur = 0, cnt = 0;
    for (uint i = lane; i < n; i += TPR) {
      U u = kr[i];
      if (MATCH(u, p, s)) COUNT(DIGIT(u, s), hr)
    }
    if (cnt) atomic_add(&hr[cur], cnt);
    barrier(CLK_LOCAL_MEM_FENCE);
    lg_find(hr, csum + r * (BINS / CH), lane, TPR, active, thr + r, want + r, s);
  }
  /* the keys below T, and the first `need` equal to T by position: each
  ** work-item walks one run of the row in order */
  U t = thr[r];
  uint need = want[r], nlt = k - need;
  uint seg = (n + TPR - 1) / TPR, lo = min(n, lane * seg), hi = min(n, lo + seg);
  uint eq = 0;
  for (uint i = lo; i < hi; i++) eq += kr[i] == t;
  part[r * TPR + lane] = eq;
  for (uint i = lane; i < K2; i += TPR) PAD(r * K2 + i);
  barrier(CLK_LOCAL_MEM_FENCE);
  {
    /* each row's TPR sums: scan them as rows of one group, lane by lane */
    local uint* pr = part + r * TPR;
    for (uint off = 1; off < TPR; off <<= 1) {
      uint v = pr[lane] + (lane >= off ? pr[lane - off] : 0);
      barrier(CLK_LOCAL_MEM_FENCE);
      pr[lane] = v;
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }
  uint rank = part[r * TPR + lane] - eq;
  for (uint i = lo; i < hi; i++) {
    U u = kr[i];
    if (u < t) {
      uint slot = atomic_inc(&below[r]);
      SET(r * K2 + slot, u, i);
    } else if (u == t) {
      if (rank < need) SET(r * K2 + nlt + rank, u, i);
      rank++;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
  lg_bitonic(SLOT_PASS, RPG * K2, K2, lid);
  for (uint i = lane; i < k && active; i += TPR) {
    uint p = POS(r * K2 + i);
    vout[voff + row * k + i] = xr[p];
    pout[poff + row * k + i] = (long)p + 1;
  }
}

#else
/* ------------------------------------------------------------ long rows */

#if BITS > 32
#define PREFIX(st) (((ulong)(st)[1] << 32) | (ulong)(st)[0])
#else
#define PREFIX(st) ((U)(st)[0])
#endif

/* st (4 per row): T so far (low, high 32 bits), the rank wanted, the
** count of keys below T placed; hist (BINS per row) zero. */
kernel void topk_init(global uint* st, global uint* hist, ulong nrows, uint k) {
  ulong i = get_global_id(0);
  if (i < nrows * BINS) hist[i] = 0;
  if (i < nrows) { st[4 * i] = 0; st[4 * i + 1] = 0; st[4 * i + 2] = k; st[4 * i + 3] = 0; }
}

/* Group (row, g): the histogram of digit s over its chunk of the row;
** of the last digit (s = 0) also the chunk's own (eqc[(row * G + g) * BINS
** ..]: its count of T, whatever T's last digit, for topk_gather). */
kernel void topk_hist(global const K* restrict x, ulong xoff, ulong L, int largest,
                      global const uint* restrict st, global uint* restrict hist, int s,
                      ulong chunk, global uint* restrict eqc) {
  local uint h[BINS];
  uint lid = get_local_id(0);
  ulong g = get_group_id(1), row = get_group_id(0);
  for (uint b = lid; b < BINS; b += LS) h[b] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  U p = PREFIX(st + 4 * row);
  global const K* xr = x + xoff + row * L;
  ulong end = min(L, (g + 1) * chunk);
  uint cur = 0, cnt = 0;
  for (ulong i = g * chunk + lid; i < end; i += LS) {
    U u = lg_bits(xr[i], largest);
    if (MATCH(u, p, s)) COUNT(DIGIT(u, s), h)
  }
  if (cnt) atomic_add(&h[cur], cnt);
  barrier(CLK_LOCAL_MEM_FENCE);
  global uint* own = eqc + (row * get_num_groups(1) + g) * BINS;
  for (uint b = lid; b < BINS; b += LS) {
    uint c = h[b];
    if (c) atomic_add(&hist[row * BINS + b], c);
    if (s == 0) own[b] = c;
  }
}

/* Group row: the bin of digit s holding the rank wanted; the row's
** histogram set back to zero for the next digit. */
kernel void topk_find(global uint* restrict st, global uint* restrict hist, int s) {
  local uint h[BINS], csum[BINS / CH];
  local U thr;
  local uint want;
  uint lid = get_local_id(0);
  ulong row = get_group_id(0);
  global uint* hr = hist + row * BINS;
  for (uint b = lid; b < BINS; b += LS) { h[b] = hr[b]; hr[b] = 0; }
  if (lid == 0) { thr = PREFIX(st + 4 * row); want = st[4 * row + 2]; }
  barrier(CLK_LOCAL_MEM_FENCE);
  lg_find(h, csum, lid, LS, 1, &thr, &want, s);
  if (lid == 0) {
    st[4 * row] = (uint)thr;
#if BITS > 32
    st[4 * row + 1] = (uint)(thr >> 32);
#endif
    st[4 * row + 2] = want;
  }
}

/* Group (row, g): the positions of its chunk's keys below T (anywhere in
** the row's first k - need slots of cand) and of the keys equal to T
** ranked below need by position (after them), in tiles of LS * SEGE
** elements, each work-item walking SEGE of them in order. */
kernel void topk_gather(global const K* restrict x, ulong xoff, ulong L, int largest,
                        global uint* restrict st, global const uint* restrict eqc,
                        global uint* restrict cand, uint k, ulong chunk) {
  local uint part[LS];
  local uint base;
  uint lid = get_local_id(0);
  ulong g = get_group_id(1), row = get_group_id(0), G = get_num_groups(1);
  if (lid == 0) base = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint m = 0, digit = DIGIT(PREFIX(st + 4 * row), 0);
  for (ulong j = lid; j < g; j += LS) m += eqc[(row * G + j) * BINS + digit];
  if (m) atomic_add(&base, m);
  barrier(CLK_LOCAL_MEM_FENCE);
  U t = PREFIX(st + 4 * row);
  uint need = st[4 * row + 2], nlt = k - need, run = base;
  global const K* xr = x + xoff + row * L;
  global uint* cr = cand + row * k;
  ulong end = min(L, (g + 1) * chunk);
  for (ulong t0 = g * chunk; t0 < end; t0 += (ulong)LS * SEGE) {
    ulong lo = min(end, t0 + (ulong)lid * SEGE), hi = min(end, lo + SEGE);
    uint eq = 0, lt = 0;
    for (ulong i = lo; i < hi; i++) {
      U u = lg_bits(xr[i], largest);
      eq += u == t;
      lt += u < t;
    }
    part[lid] = eq;
    barrier(CLK_LOCAL_MEM_FENCE);
    lg_scan(part, lid, LS);
    uint rank = run + part[lid] - eq, total = part[LS - 1];
    if (lt || (eq && rank < need)) {
      for (ulong i = lo; i < hi; i++) {
        U u = lg_bits(xr[i], largest);
        if (u < t) cr[atomic_inc(&st[4 * row + 3])] = (uint)i;
        else if (u == t) {
          if (rank < need) cr[nlt + rank] = (uint)i;
          rank++;
        }
      }
    }
    run += total;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

/* Group row: the row's k positions in cand sorted by (key, position);
** writes the values and the positions + 1. */
kernel void topk_sort(global const K* restrict x, ulong xoff, ulong L, int largest,
                      global const uint* restrict cand, uint k, global K* restrict vout,
                      ulong voff, global long* restrict pout, ulong poff) {
  SLOT_DECL(K2)
  uint lid = get_local_id(0);
  ulong row = get_group_id(0);
  global const K* xr = x + xoff + row * L;
  for (uint i = lid; i < K2; i += LS) {
    if (i < k) {
      uint p = cand[row * k + i];
      SET(i, lg_bits(xr[p], largest), p);
    } else PAD(i);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  lg_bitonic(SLOT_PASS, K2, K2, lid);
  for (uint i = lid; i < k; i += LS) {
    uint p = POS(i);
    vout[voff + row * k + i] = xr[p];
    pout[poff + row * k + i] = (long)p + 1;
  }
}
#endif
