/*
** cache.c: the on-disk program cache. Built binaries are kept under
** $XDG_CACHE_HOME/luagpu (else ~/.cache/luagpu), one file per SHA-256 key
** of everything that decides the binary: platform, device, driver, options,
** source and the content of every included file (program.c computes it
** with the hashing functions here). An entry is written to a temporary
** file and renamed into place, so concurrent processes never read half of
** one; a checksum at its end catches truncated or damaged entries, which
** then read as absent. LUAGPU_NO_CACHE=1 turns the cache off. At the end,
** the lock that keeps processes sharing PoCL's own cache out of each other's
** way.
*/
#define _XOPEN_SOURCE 700   /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

/* The key must change whenever a file the compiler reads changes. The scan
** reads each file as the compiler's first phases do (trigraphs aside:
** backslash-newlines spliced, comments blanked, literals kept whole), then
** follows every #include "..." / <...> and __has_include operand through
** the compiler's search order. What it cannot follow for sure (an #include
** of a macro, #include_next, trigraphs, digraph directives, a directive
** after a comment that spans lines, too many or too deep files) makes it
** unsure, and program.c then does not cache the build. */

#define MAX_INCLUDES 256
#define MAX_DEPTH 32

typedef struct Scan {
  lg_Hash *h;
  const char *const *dirs;     /* the compiler's -I folders, in its order */
  int ndirs;
  char *seen[MAX_INCLUDES];    /* real paths of the files hashed so far */
  int nseen;
  int unsure;                  /* met something it cannot follow */
} Scan;

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

static int is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r';
}

static int is_ident(char c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Removes each backslash-newline in place (clang also takes blanks between
** the backslash and the newline); returns the new length. */
static size_t splice(char *t, size_t n) {
  size_t r = 0, w = 0;
  while (r < n) {
    if (t[r] == '\\') {
      size_t e = r + 1;
      while (e < n && is_blank(t[e])) e++;
      if (e < n && t[e] == '\n') { r = e + 1; continue; }
    }
    t[w++] = t[r++];
  }
  return w;
}

/* Copies the string or character literal at t[*r] to t[*w] (in place),
** up to its closing quote or the end of the line. */
static void copy_literal(char *t, size_t n, size_t *r, size_t *w) {
  char q = t[*r];
  t[(*w)++] = t[(*r)++];
  while (*r < n && t[*r] != q && t[*r] != '\n') {
    if (t[*r] == '\\' && *r + 1 < n && t[*r + 1] != '\n') t[(*w)++] = t[(*r)++];
    t[(*w)++] = t[(*r)++];
  }
  if (*r < n && t[*r] == q) t[(*w)++] = t[(*r)++];
}

/* Blanks the comments of t in place, keeping literals whole: a comment
** becomes one space, or a newline when it holds one and is not inside a
** directive (a directive goes on after it, as in clang). A '#' that follows
** such a comment, or a "%:" directive, makes the scan unsure. Returns the
** new length. */
static size_t uncomment(Scan *s, char *t, size_t n) {
  size_t r = 0, w = 0;
  int bol = 1, directive = 0, after_lines = 0;
  while (r < n) {
    char c = t[r];
    if (c == '/' && r + 1 < n && (t[r + 1] == '*' || t[r + 1] == '/')) {
      size_t e = r + 2;
      if (t[r + 1] == '/') {
        while (e < n && t[e] != '\n') e++;
      } else {
        while (e + 1 < n && !(t[e] == '*' && t[e + 1] == '/')) e++;
        e = e + 1 < n ? e + 2 : n;
      }
      if (t[r + 1] == '*' && !directive && memchr(t + r, '\n', e - r) != NULL) {
        t[w++] = '\n';
        bol = after_lines = 1;
      } else {
        t[w++] = ' ';
      }
      r = e;
    } else if (c == '\n') {
      t[w++] = t[r++];
      bol = 1;
      directive = after_lines = 0;
    } else if (is_blank(c)) {
      t[w++] = t[r++];
    } else {
      if (bol && (c == '#' || (c == '%' && r + 1 < n && t[r + 1] == ':'))) {
        directive = 1;
        if (after_lines || c == '%') s->unsure = 1;
      }
      bol = after_lines = 0;
      if (c == '"' || c == '\'') copy_literal(t, n, &r, &w);
      else t[w++] = t[r++];
    }
  }
  return w;
}

/* True when t holds a trigraph (clang replaces them in OpenCL C). */
static int has_trigraph(const char *t, size_t n) {
  size_t i;
  for (i = 0; i + 2 < n; i++)
    if (t[i] == '?' && t[i + 1] == '?' && strchr("=/'()!<>-", t[i + 2]) != NULL &&
        t[i + 2] != '\0')
      return 1;
  return 0;
}

static void scan(Scan *s, const char *src, size_t len, const char *curdir, int depth);

/* Tries dir/name (name alone when dir is "") as a file; returns 1 and
** leaves it in path when it is one. */
static int try_path(char *path, size_t size, const char *dir, const char *name) {
  int n = dir == NULL ? -1 : dir[0] == '\0' ? snprintf(path, size, "%s", name)
                                            : snprintf(path, size, "%s/%s", dir, name);
  return n >= 0 && (size_t)n < size && is_file(path);
}

/* Finds name as the compiler would (quoted: curdir first, then every -I
** folder in order), hashes its content once, and scans it in turn. A file
** not found is hashed by name. */
static void include_file(Scan *s, const char *name, int quoted, const char *curdir,
                         int depth) {
  char path[PATH_MAX], real[PATH_MAX], *text, *slash;
  size_t n = 0;
  int i, found = 0;
  if (name[0] == '/') {
    found = try_path(path, sizeof path, "", name);   /* absolute */
  } else {
    found = quoted && try_path(path, sizeof path, curdir, name);
    for (i = 0; !found && i < s->ndirs; i++)
      found = try_path(path, sizeof path, s->dirs[i], name);
  }
  if (!found || realpath(path, real) == NULL) {
    lg_hash_update(s->h, "missing ", 8);
    lg_hash_update(s->h, name, strlen(name) + 1);
    return;
  }
  for (i = 0; i < s->nseen; i++)
    if (strcmp(s->seen[i], real) == 0) return;
  if (s->nseen == MAX_INCLUDES || depth >= MAX_DEPTH || (text = read_file(path, &n)) == NULL) {
    s->unsure = 1;
    return;
  }
  if ((s->seen[s->nseen] = malloc(strlen(real) + 1)) == NULL) {
    free(text);
    s->unsure = 1;
    return;
  }
  strcpy(s->seen[s->nseen++], real);
  lg_hash_update(s->h, "include ", 8);
  lg_hash_update(s->h, real, strlen(real) + 1);
  lg_hash_update(s->h, &n, sizeof n);
  lg_hash_update(s->h, text, n);
  slash = strrchr(path, '/');
  if (slash != NULL) *slash = '\0';
  scan(s, text, n, slash != NULL ? path : ".", depth + 1);
  free(text);
}

/* Reads the operand "name" or <name> at q (blanks before it skipped) and
** includes that file; anything else (a macro) makes the scan unsure.
** Returns where the operand ends. */
static const char *operand(Scan *s, const char *q, const char *eol, const char *curdir,
                           int depth) {
  char close, name[PATH_MAX];
  const char *e;
  while (q < eol && is_blank(*q)) q++;
  close = q < eol && *q == '"' ? '"' : q < eol && *q == '<' ? '>' : 0;
  if (!close || (e = memchr(q + 1, close, (size_t)(eol - q - 1))) == NULL ||
      (size_t)(e - q - 1) >= sizeof name || memchr(q + 1, '\0', (size_t)(e - q - 1)) != NULL) {
    s->unsure = 1;
    return eol;
  }
  memcpy(name, q + 1, (size_t)(e - q - 1));
  name[e - q - 1] = '\0';
  include_file(s, name, close == '"', curdir, depth);
  return e + 1;
}

/* The directive whose name starts at q: includes its file for #include;
** #include_next and #import make the scan unsure; every __has_include(...)
** of the line (for #if, #elif) counts as an include. */
static void directive(Scan *s, const char *q, const char *eol, const char *curdir, int depth) {
  const char *w;
  size_t n;
  while (q < eol && is_blank(*q)) q++;
  for (w = q; q < eol && is_ident(*q); q++) {}
  n = (size_t)(q - w);
  if (n == 7 && memcmp(w, "include", 7) == 0) q = operand(s, q, eol, curdir, depth);
  else if ((n == 12 && memcmp(w, "include_next", 12) == 0) || (n == 6 && memcmp(w, "import", 6) == 0))
    s->unsure = 1;
  while (q < eol) {
    if (!is_ident(*q)) { q++; continue; }
    for (w = q; q < eol && is_ident(*q); q++) {}
    n = (size_t)(q - w);
    if ((n == 13 && memcmp(w, "__has_include", 13) == 0) ||
        (n == 18 && memcmp(w, "__has_include_next", 18) == 0)) {
      while (q < eol && is_blank(*q)) q++;
      if (q < eol && *q == '(' && n == 18) s->unsure = 1;   /* not ifdef __has_include */
      else if (q < eol && *q == '(') q = operand(s, q + 1, eol, curdir, depth);
    }
  }
}

/* Scans one file's text (the source itself at depth 0) for directives. */
static void scan(Scan *s, const char *src, size_t len, const char *curdir, int depth) {
  char *t = malloc(len + 1);
  const char *p, *end;
  if (t == NULL) { s->unsure = 1; return; }
  memcpy(t, src, len);
  if (has_trigraph(t, len)) s->unsure = 1;
  len = uncomment(s, t, splice(t, len));
  for (p = t, end = t + len; p < end;) {
    const char *eol = memchr(p, '\n', (size_t)(end - p)), *q = p;
    if (eol == NULL) eol = end;
    while (q < eol && is_blank(*q)) q++;
    if (q < eol && *q == '#') directive(s, q + 1, eol, curdir, depth);
    p = eol + 1;
  }
  free(t);
}

int lg_hash_includes(lg_Hash *h, const char *source, size_t len,
                     const char *const *dirs, int ndirs) {
  Scan s;
  int i;
  s.h = h;
  s.dirs = dirs;
  s.ndirs = ndirs;
  s.nseen = 0;
  s.unsure = 0;
  scan(&s, source, len, ndirs > 0 ? dirs[0] : NULL, 0);
  for (i = 0; i < s.nseen; i++) free(s.seen[i]);
  return !s.unsure;
}

/* -------------------------------------------------------------- entries */

#define MAGIC "LUAGPU-CACHE-1\n"   /* 16 bytes with its NUL */
#define HEADER (16 + 64 + 24)
#define MAX_ENTRY ((size_t)1 << 30)

int lg_cache_enabled(void) {
  const char *v = getenv("LUAGPU_NO_CACHE");
  return v == NULL || v[0] == '\0' || strcmp(v, "0") == 0;
}

/* Creates folder dir (0700) and its missing parents (0755); returns 0 when
** it cannot. */
static int make_dirs(char *dir) {
  size_t i;
  for (i = 1; dir[i] != '\0'; i++) {
    if (dir[i] != '/') continue;
    dir[i] = '\0';
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) { dir[i] = '/'; return 0; }
    dir[i] = '/';
  }
  return mkdir(dir, 0700) == 0 || errno == EEXIST;
}

/* The cache folder, created (with its parents) when create is set; returns
** 0 when there is none to use. */
static int cache_dir(char *dir, size_t size, int create) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n;
  if (xdg != NULL && xdg[0] == '/')
    n = snprintf(dir, size, "%s/luagpu", xdg);
  else if (home != NULL && home[0] != '\0')
    n = snprintf(dir, size, "%s/.cache/luagpu", home);
  else
    return 0;
  if (n < 0 || (size_t)n >= size) return 0;
  return !create || make_dirs(dir);
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

/* ------------------------------------------------- PoCL's kernel cache */

/* PoCL 3.1 keeps compiled programs in a cache folder of its own, one
** subfolder per program named by a hash of the preprocessed source, the
** options and the device: every process that builds the same program
** shares it. A build writes the subfolder's program.bc by unlink and
** rename (a build that finds the file reads it), and the serialisation
** behind clGetProgramInfo(CL_PROGRAM_BINARY_SIZES) walks the subfolder
** without checking stat or opendir. When one process walks or reads while
** another is between the unlink and the rename, stat fails, a stale
** st_mode says "folder", and readdir(NULL) crashes (or the build's
** assertion "program->data[device_i]" aborts). Kernel launches only add
** folders and rename finished files in, which the walk survives.
**
** So every build, load from a binary and binary extraction luagpu asks of
** PoCL runs under an exclusive flock on luagpu.lock in PoCL's cache folder:
** the one file that every process sharing that folder agrees on, whatever
** its own luagpu cache or its LUAGPU_NO_CACHE. */

static int is_pocl(cl_platform_id p) {
  char name[64];
  memset(name, 0, sizeof name);
  clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof name - 1, name, NULL);
  return strstr(name, "Portable Computing Language") != NULL;
}

/* PoCL's cache folder, found as PoCL finds it: $POCL_CACHE_DIR, else
** $XDG_CACHE_HOME/pocl/kcache, else ~/.cache/pocl/kcache. Returns 0 for
** other platforms. */
static int pocl_dir(cl_platform_id p, char *dir, size_t size) {
  const char *v;
  int n;
  if (!is_pocl(p)) return 0;
  if ((v = getenv("POCL_CACHE_DIR")) != NULL)
    n = snprintf(dir, size, "%s", v);
  else if ((v = getenv("XDG_CACHE_HOME")) != NULL && v[0] != '\0')
    n = snprintf(dir, size, "%s/pocl/kcache", v);
  else if ((v = getenv("HOME")) != NULL && v[0] != '\0')
    n = snprintf(dir, size, "%s/.cache/pocl/kcache", v);
  else
    n = snprintf(dir, size, "/tmp/pocl/kcache");
  return n > 0 && (size_t)n < size;
}

int lg_pocl_lock(cl_platform_id p) {
  char dir[PATH_MAX], path[PATH_MAX + 16];
  int fd;
  if (!pocl_dir(p, dir, sizeof dir) || !make_dirs(dir) ||
      snprintf(path, sizeof path, "%s/luagpu.lock", dir) >= (int)sizeof path)
    return -1;
  fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) fd = open(path, O_RDONLY | O_CLOEXEC);   /* another user's folder */
  if (fd < 0) return -1;
  while (flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) { close(fd); return -1; }
  }
  return fd;
}

void lg_pocl_unlock(int fd) {
  if (fd >= 0) close(fd);   /* closing releases the flock */
}

size_t lg_pocl_name_max(cl_platform_id p) {
  char dir[PATH_MAX];
  long max;
  if (!pocl_dir(p, dir, sizeof dir)) return 0;
  max = pathconf(dir, _PC_NAME_MAX);
  if (max <= 0) max = 255;
  return max > 4 ? (size_t)max - 3 : 1;   /* KERNEL.so */
}
