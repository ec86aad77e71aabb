/*
** cache.c: the on-disk program cache. Built binaries are kept under
** $XDG_CACHE_HOME/luagpu (else ~/.cache/luagpu), one file per SHA-256 key
** of everything that decides the binary: platform, device, driver, options,
** source and the content of every included file (program.c computes it,
** with sha256.c and includes.c). An entry is written to a temporary
** file and renamed into place, so concurrent processes never read half of
** one; a checksum at its end catches truncated or damaged entries, which
** then read as absent, and a PoCL binary that PoCL could not load (it
** aborts on some) is neither stored nor loaded. LUAGPU_NO_CACHE=1 turns the cache off. At the end,
** the lock that keeps processes sharing PoCL's own cache out of each other's
** way.
*/
#define _XOPEN_SOURCE 700   /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>   /* strcasecmp */
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* -------------------------------------------------------------- entries */

#define MAGIC "LUAGPU-CACHE-1\n"   /* 16 bytes with its NUL */
#define HEADER (16 + 64 + 24)
#define MAX_ENTRY ((size_t)1 << 30)

/* LUAGPU_NO_CACHE turns the cache off but when it is unset, empty or one
** of the words that mean "no" ("0", "false", "no", "off", any case): a
** script's LUAGPU_NO_CACHE=false turned it off. */
int lg_cache_enabled(void) {
  static const char *const no[] = {"0", "false", "no", "off", NULL};
  const char *v = getenv("LUAGPU_NO_CACHE");
  int i;
  if (v == NULL || v[0] == '\0') return 1;
  for (i = 0; no[i] != NULL; i++)
    if (strcasecmp(v, no[i]) == 0) return 1;
  return 0;
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

/* ------------------------------------------------ PoCL's binary format */

/* PoCL 3.1's binaries ("poclbin", format 9) are a header, then the files of
** the program's cache folder (program.bc) and, per kernel, a record of its
** metadata and the files of its folder; each file is a name and a content,
** each with a 32-bit length. PoCL loads one without checking it: a program
** folder that was missing while PoCL serialised it gives an empty entry,
** and loading that aborts the process (pocl_binary.c, "len > 0"). So a
** PoCL binary is stored, and a stored one loaded, only when its structure
** is whole: every length within the binary, no empty entry or name, and the
** parts adding up to its size. Other drivers' binaries pass unchecked. */

#define POCL_ID "poclbin"                      /* 8 bytes with its NUL */
#define POCL_HEADER (8 + 8 + 4 + 4 + 8 + 4 + 41)

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* True when b[0, n) is a whole sequence of files (name, content). */
static int pocl_files_whole(const unsigned char *b, uint64_t n) {
  uint64_t at = 0, len;
  while (at < n) {
    if (n - at < 4 || (len = get_u32(b + at)) == 0 || len > n - at - 4) return 0;
    at += 4 + len;                                     /* the name */
    if (n - at < 4 || (len = get_u32(b + at)) > n - at - 4) return 0;
    at += 4 + len;                                     /* the content */
  }
  return 1;
}

int lg_binary_whole(const unsigned char *b, size_t n) {
  uint64_t at = POCL_HEADER, len, files;
  uint32_t i, kernels, roots;
  if (n < 8 || memcmp(b, POCL_ID, 8) != 0) return 1;   /* not PoCL's */
  if (n < POCL_HEADER) return 0;
  kernels = get_u32(b + 20);
  roots = get_u32(b + 32);
  if (kernels == 0 || roots == 0) return 0;
  for (i = 0; i < roots; i++) {                        /* program.bc */
    if (n - at < 8 || (len = get_u64(b + at)) == 0 || len > n - at - 8 ||
        !pocl_files_whole(b + at + 8, len))
      return 0;
    at += 8 + len;
  }
  for (i = 0; i < kernels; i++) {
    /* struct_size (the whole record), binaries_size (its files, at its end) */
    if (n - at < 20 || (len = get_u64(b + at)) < 20 || len > n - at ||
        (files = get_u64(b + at + 8)) > len - 20 ||
        !pocl_files_whole(b + at + len - files, files))
      return 0;
    at += len;
  }
  return at == n;
}

int lg_cache_load(lua_State *L, const char *key, lg_CacheEntry *e) {
  char dir[PATH_MAX], path[PATH_MAX + 80];
  unsigned char *p, sum[32];
  uint64_t nb, nl, nm;
  struct stat st;
  size_t size;
  lg_Hash h;
  FILE *f;
  int fd;
  if (!lg_cache_enabled() || !cache_dir(dir, sizeof dir, 0) ||
      snprintf(path, sizeof path, "%s/%s.bin", dir, key) >= (int)sizeof path ||
      stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < HEADER + 32 ||
      (size_t)st.st_size > MAX_ENTRY) {
    lua_pushnil(L);
    return 0;
  }
  size = (size_t)st.st_size;
  p = lua_newuserdatauv(L, size + 1, 0);   /* may raise: nothing is held yet */
  /* a newer entry renamed in meanwhile must be as long; something not a
  ** file put there (a FIFO) is refused without blocking */
  fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  f = fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ? NULL : fdopen(fd, "rb");
  if (f == NULL && fd >= 0) close(fd);
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
  if (memcmp(sum, p + size - 32, 32) != 0 || !lg_binary_whole(p + HEADER, (size_t)nb))
    goto bad;
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

int lg_cache_has(const char *key) {
  char dir[PATH_MAX], path[PATH_MAX + 80];
  struct stat st;
  return cache_dir(dir, sizeof dir, 0) &&
         snprintf(path, sizeof path, "%s/%s.bin", dir, key) < (int)sizeof path &&
         stat(path, &st) == 0 && S_ISREG(st.st_mode);
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
  if (!lg_cache_enabled() || !lg_binary_whole(e->binary, e->binary_size) ||
      !cache_dir(dir, sizeof dir, 1) ||
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
** its own luagpu cache or its LUAGPU_NO_CACHE. A build never waits for it
** silently or forever: lg_pocl_lock names the holder after a while and
** goes on without the lock after LUAGPU_LOCK_TIMEOUT seconds.
**
** A flock belongs to an open file, so two threads of one process taking it
** through two opens would wait for each other like two processes, and a
** thread keeping it between the steps of a build would stall the other's
** until the timeout. So the lock is one per process: a thread takes it
** (waiting while another thread of the process holds it), then the flock,
** once; the same thread may take it again inside (a finalizer's build
** during a build) and the flock goes when the last taking is let go. */

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

/* Who holds the flock on the file of fd, from /proc/locks: "process PID
** (NAME)" into buf, or "another process" when that cannot be told. */
static void lock_holder(int fd, char *buf, size_t size) {
  char line[256], name[64], path[64];
  struct stat st;
  long pid = 0;
  FILE *f;
  snprintf(buf, size, "another process");
  if (fstat(fd, &st) != 0 || (f = fopen("/proc/locks", "r")) == NULL) return;
  while (pid == 0 && fgets(line, sizeof line, f) != NULL) {
    char kind[16], mode[16], access[16], id[64], *ino;
    long who;
    /* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiters have "->" */
    if (strstr(line, "->") != NULL ||
        sscanf(line, "%*s %15s %15s %15s %ld %63s", kind, mode, access, &who, id) != 5 ||
        strcmp(kind, "FLOCK") != 0 || (ino = strrchr(id, ':')) == NULL)
      continue;
    if (strtoull(ino + 1, NULL, 10) == (unsigned long long)st.st_ino) pid = who;
  }
  fclose(f);
  if (pid <= 0) return;
  snprintf(path, sizeof path, "/proc/%ld/comm", pid);
  name[0] = '\0';
  if ((f = fopen(path, "r")) != NULL) {
    if (fgets(name, sizeof name, f) == NULL) name[0] = '\0';
    fclose(f);
  }
  name[strcspn(name, "\n")] = '\0';
  if (name[0] != '\0') snprintf(buf, size, "process %ld (%s)", pid, name);
  else snprintf(buf, size, "process %ld", pid);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Seconds a build waits for the lock before it goes on without it:
** LUAGPU_LOCK_TIMEOUT, else 60 (a legitimate rival build of a large
** program on a busy machine can hold it for tens of seconds). After
** NOTE_AFTER seconds (or half the timeout, when shorter) the wait is
** reported on stderr once, naming the holder. */
#define DEFAULT_TIMEOUT 60.0
#define NOTE_AFTER 10.0

static double lock_timeout(void) {
  const char *v = getenv("LUAGPU_LOCK_TIMEOUT");
  char *end;
  double t;
  if (v == NULL || v[0] == '\0') return DEFAULT_TIMEOUT;
  t = strtod(v, &end);
  return *end == '\0' && t >= 0 && t < 1e9 ? t : DEFAULT_TIMEOUT;
}

/* The flock on PoCL's cache folder of platform p: its fd, or -1 (another
** platform, no lock to be had, or given up after the timeout). */
static int take_flock(cl_platform_id p) {
  char dir[PATH_MAX], path[PATH_MAX + 16], who[128];
  double start, waited, timeout, note, pause = 0.005;
  int fd, noted = 0;
  if (!pocl_dir(p, dir, sizeof dir) || !make_dirs(dir) ||
      snprintf(path, sizeof path, "%s/luagpu.lock", dir) >= (int)sizeof path)
    return -1;
  /* never through a link (a shared /tmp/pocl folder: someone else's link
     would have us create or lock their file), and only a plain file */
  fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);
  if (fd < 0 && errno != ELOOP)   /* another user's folder */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return -1;
  {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) { close(fd); return -1; }
  }
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
  timeout = lock_timeout();
  note = timeout / 2 < NOTE_AFTER ? timeout / 2 : NOTE_AFTER;
  start = now_s();
  for (;;) {
    struct timespec t;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
    if (errno != EWOULDBLOCK && errno != EINTR) break;
    waited = now_s() - start;
    if (waited >= timeout) {
      lock_holder(fd, who, sizeof who);
      fprintf(stderr, "luagpu: gave up waiting for PoCL's cache lock %s after %.0f s "
              "(held by %s): building without it\n", path, waited, who);
      fflush(stderr);
      break;
    }
    if (!noted && waited >= note) {
      noted = 1;
      lock_holder(fd, who, sizeof who);
      fprintf(stderr, "luagpu: waiting for PoCL's cache lock %s, held by %s "
              "(going on without it after %.0f s; LUAGPU_LOCK_TIMEOUT sets that)\n",
              path, who, timeout);
      fflush(stderr);
    }
    t.tv_sec = 0;
    t.tv_nsec = (long)(pause * 1e9);
    nanosleep(&t, NULL);
    if (pause < 0.1) pause *= 2;
  }
  close(fd);
  return -1;
}

/* The lock's state in this process: the thread that holds it and how
** many times (0: free), and the flock it took. */
static pthread_mutex_t guard = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t freed = PTHREAD_COND_INITIALIZER;
static pthread_t owner;
static int depth;
static int flock_fd = -1;

void lg_pocl_lock(cl_platform_id p) {
  pthread_t self = pthread_self();
  pthread_mutex_lock(&guard);
  while (depth > 0 && !pthread_equal(owner, self)) pthread_cond_wait(&freed, &guard);
  if (depth++ > 0) {                  /* a build inside a build (a finalizer's) */
    pthread_mutex_unlock(&guard);
    return;
  }
  owner = self;
  pthread_mutex_unlock(&guard);
  flock_fd = take_flock(p);           /* no other thread reads it until unlocked */
}

void lg_pocl_unlock(void) {
  pthread_mutex_lock(&guard);
  if (depth > 0 && --depth == 0) {
    if (flock_fd >= 0) close(flock_fd);   /* closing releases the flock */
    flock_fd = -1;
    pthread_cond_signal(&freed);
  }
  pthread_mutex_unlock(&guard);
}


size_t lg_pocl_name_max(cl_platform_id p) {
  char dir[PATH_MAX];
  long max;
  if (!pocl_dir(p, dir, sizeof dir)) return 0;
  max = pathconf(dir, _PC_NAME_MAX);
  if (max <= 0) max = 255;
  return max > 4 ? (size_t)max - 3 : 1;   /* KERNEL.so */
}
