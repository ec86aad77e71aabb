/*
** cache.c: the on-disk program cache. Built binaries are kept under
** $XDG_CACHE_HOME/luagpu (else ~/.cache/luagpu), one file per SHA-256 key
** of everything that decides the binary: platform, device, driver, options,
** source and the content of every included file (program.c computes it
** with the hashing functions here). An entry is written to a temporary
** file and renamed into place, so concurrent processes never read half of
** one; a checksum at its end catches truncated or damaged entries, which
** then read as absent. LUAGPU_NO_CACHE=1 turns the cache off.
*/
#define _XOPEN_SOURCE 700   /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* ------------------------------------------------------------ SHA-256 */

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

/* ----------------------------------------------------- included files */

#define MAX_INCLUDES 256
#define MAX_DEPTH 32

typedef struct Seen {
  char *paths[MAX_INCLUDES];
  int n;
} Seen;

/* Reads a whole file (malloc'd, NUL-terminated); NULL when it cannot. */
static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *p = NULL;
  long n;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (p = malloc((size_t)n + 1)) != NULL) {
    *len = fread(p, 1, (size_t)n, f);
    p[*len] = '\0';
  }
  fclose(f);
  return p;
}

static int is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void scan(lg_Hash *s, const char *src, size_t len, const char *curdir,
                 const char *const *dirs, int ndirs, Seen *seen, int depth);

/* Finds name as the preprocessor would (quoted: curdir first), hashes its
** content once, and scans it in turn. */
static void include_file(lg_Hash *s, const char *name, int quoted, const char *curdir,
                         const char *const *dirs, int ndirs, Seen *seen, int depth) {
  char path[PATH_MAX], real[PATH_MAX];
  int i, found = 0;
  if (name[0] == '/') {
    found = is_file(name) && snprintf(path, sizeof path, "%s", name) < (int)sizeof path;
  } else {
    if (quoted && curdir != NULL)
      found = snprintf(path, sizeof path, "%s/%s", curdir, name) < (int)sizeof path &&
              is_file(path);
    for (i = 1; !found && i < ndirs; i++)
      found = dirs[i] != NULL &&
              snprintf(path, sizeof path, "%s/%s", dirs[i], name) < (int)sizeof path &&
              is_file(path);
  }
  if (!found || realpath(path, real) == NULL) {
    lg_hash_update(s, "missing ", 8);
    lg_hash_update(s, name, strlen(name) + 1);
    return;
  }
  for (i = 0; i < seen->n; i++)
    if (strcmp(seen->paths[i], real) == 0) return;
  if (seen->n < MAX_INCLUDES && (seen->paths[seen->n] = malloc(strlen(real) + 1)) != NULL) {
    size_t n = 0;
    char *text;
    strcpy(seen->paths[seen->n++], real);
    text = read_file(path, &n);
    lg_hash_update(s, "include ", 8);
    lg_hash_update(s, real, strlen(real) + 1);
    if (text == NULL) return;
    lg_hash_update(s, &n, sizeof n);
    lg_hash_update(s, text, n);
    if (depth < MAX_DEPTH) {
      char *slash = strrchr(path, '/');
      if (slash != NULL) *slash = '\0';
      scan(s, text, n, slash != NULL ? path : ".", dirs, ndirs, seen, depth + 1);
    }
    free(text);
  }
}

/* Looks for #include lines: each one's file is hashed, wherever it is
** (conditional includes too: a superset keeps the key correct). */
static void scan(lg_Hash *s, const char *src, size_t len, const char *curdir,
                 const char *const *dirs, int ndirs, Seen *seen, int depth) {
  const char *p = src, *end = src + len;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p)), *q = p;
    if (eol == NULL) eol = end;
    while (q < eol && (*q == ' ' || *q == '\t')) q++;
    if (q < eol && *q == '#') {
      q++;
      while (q < eol && (*q == ' ' || *q == '\t')) q++;
      if (eol - q > 7 && memcmp(q, "include", 7) == 0) {
        char close, name[PATH_MAX];
        const char *e;
        q += 7;
        while (q < eol && (*q == ' ' || *q == '\t')) q++;
        close = q < eol && *q == '"' ? '"' : q < eol && *q == '<' ? '>' : 0;
        if (close && (e = memchr(q + 1, close, (size_t)(eol - q - 1))) != NULL &&
            (size_t)(e - q - 1) < sizeof name) {
          memcpy(name, q + 1, (size_t)(e - q - 1));
          name[e - q - 1] = '\0';
          include_file(s, name, close == '"', curdir, dirs, ndirs, seen, depth);
        }
      }
    }
    p = eol + 1;
  }
}

void lg_hash_includes(lg_Hash *s, const char *source, size_t len,
                      const char *const *dirs, int ndirs) {
  Seen seen;
  int i;
  seen.n = 0;
  scan(s, source, len, ndirs > 0 ? dirs[0] : NULL, dirs, ndirs, &seen, 0);
  for (i = 0; i < seen.n; i++) free(seen.paths[i]);
}

/* -------------------------------------------------------------- entries */

#define MAGIC "LUAGPU-CACHE-1\n"   /* 16 bytes with its NUL */
#define HEADER (16 + 64 + 24)
#define MAX_ENTRY ((size_t)1 << 30)

int lg_cache_enabled(void) {
  const char *v = getenv("LUAGPU_NO_CACHE");
  return v == NULL || v[0] == '\0' || strcmp(v, "0") == 0;
}

/* The cache folder, created (with its parents) when create is set; returns
** 0 when there is none to use. */
static int cache_dir(char *dir, size_t size, int create) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  size_t i;
  int n;
  if (xdg != NULL && xdg[0] == '/')
    n = snprintf(dir, size, "%s/luagpu", xdg);
  else if (home != NULL && home[0] != '\0')
    n = snprintf(dir, size, "%s/.cache/luagpu", home);
  else
    return 0;
  if (n < 0 || (size_t)n >= size) return 0;
  if (!create) return 1;
  for (i = 1; dir[i] != '\0'; i++) {
    if (dir[i] != '/') continue;
    dir[i] = '\0';
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) { dir[i] = '/'; return 0; }
    dir[i] = '/';
  }
  return mkdir(dir, 0700) == 0 || errno == EEXIST;
}

static void put_u64(unsigned char *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  int i;
  for (i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

int lg_cache_load(lua_State *L, const char *key, lg_CacheEntry *e) {
  char dir[PATH_MAX], path[PATH_MAX + 80];
  unsigned char *p, sum[32];
  uint64_t nb, nl, nm;
  struct stat st;
  size_t size;
  lg_Hash h;
  FILE *f;
  if (!lg_cache_enabled() || !cache_dir(dir, sizeof dir, 0) ||
      snprintf(path, sizeof path, "%s/%s.bin", dir, key) >= (int)sizeof path ||
      stat(path, &st) != 0 || st.st_size < HEADER + 32 || (size_t)st.st_size > MAX_ENTRY) {
    lua_pushnil(L);
    return 0;
  }
  size = (size_t)st.st_size;
  p = lua_newuserdatauv(L, size + 1, 0);   /* may raise: nothing is held yet */
  f = fopen(path, "rb");    /* a newer entry renamed in meanwhile must be as long */
  if (f == NULL || fread(p, 1, size + 1, f) != size) size = 0;
  if (f != NULL) fclose(f);
  if (size == 0 || memcmp(p, MAGIC, 16) != 0 || memcmp(p + 16, key, 64) != 0) goto bad;
  nb = get_u64(p + 80);
  nl = get_u64(p + 88);
  nm = get_u64(p + 96);
  if (nb > size || nl > size || nm > size || HEADER + nb + nl + nm + 32 != size) goto bad;
  lg_hash_init(&h);
  lg_hash_update(&h, p, size - 32);
  lg_hash_final(&h, sum);
  if (memcmp(sum, p + size - 32, 32) != 0) goto bad;
  e->binary = p + HEADER;
  e->binary_size = (size_t)nb;
  e->log = (const char *)p + HEADER + nb;
  e->log_size = (size_t)nl;
  e->meta = e->log + nl;
  e->meta_size = (size_t)nm;
  return 1;
bad:
  lua_pop(L, 1);
  lua_pushnil(L);
  return 0;
}

/* Writes n bytes and hashes them; returns 0 on failure. */
static int put(FILE *f, lg_Hash *h, const void *p, size_t n) {
  lg_hash_update(h, p, n);
  return n == 0 || fwrite(p, 1, n, f) == n;
}

void lg_cache_store(const char *key, const lg_CacheEntry *e) {
  static unsigned counter;
  char dir[PATH_MAX], path[PATH_MAX + 80], tmp[PATH_MAX + 120];
  unsigned char head[HEADER], sum[32];
  lg_Hash h;
  FILE *f;
  int fd, ok;
  if (!lg_cache_enabled() || !cache_dir(dir, sizeof dir, 1) ||
      snprintf(path, sizeof path, "%s/%s.bin", dir, key) >= (int)sizeof path ||
      snprintf(tmp, sizeof tmp, "%s/%s.tmp.%ld.%u", dir, key, (long)getpid(),
               counter++) >= (int)sizeof tmp)
    return;
  fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return;
  f = fdopen(fd, "wb");
  if (f == NULL) { close(fd); unlink(tmp); return; }
  memset(head, 0, sizeof head);
  memcpy(head, MAGIC, 16);
  memcpy(head + 16, key, 64);
  put_u64(head + 80, e->binary_size);
  put_u64(head + 88, e->log_size);
  put_u64(head + 96, e->meta_size);
  lg_hash_init(&h);
  ok = put(f, &h, head, sizeof head) && put(f, &h, e->binary, e->binary_size) &&
       put(f, &h, e->log, e->log_size) && put(f, &h, e->meta, e->meta_size);
  lg_hash_final(&h, sum);
  ok = ok && fwrite(sum, 1, 32, f) == 32;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) unlink(tmp);
}
