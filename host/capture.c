/*
** capture.c: build steps. What the compiler prints on fd 2 while luagpu
** builds, loads or extracts a program goes to a temporary file and from
** there into the build log; the PoCL cache lock is held meanwhile.
*/
#define _XOPEN_SOURCE 700   /* mkstemp */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define CAPTURE_MT "luagpu.capture"   /* internal: never reaches Lua code */

/* A build step (clBuildProgram, a load from a binary, a binary extraction)
** runs with the build lock held (cache.c says why) and fd 2 going to a
** temporary file: PoCL's compiler prints "1 error generated." and the like
** there, which belong in the build log. The lock is taken at a capture's
** first step and kept from step to step until the capture closes (by its
** to-be-closed slot, or __gc), so an error between steps cannot leave it
** behind; no Lua function is called inside a step, so none leaves the
** redirection behind. The lock is one per process, so it also keeps two
** threads from redirecting fd 2 at once. A crash inside a step first puts
** what the step printed on the real stderr. */

static const int crash_signals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
#define NCRASH ((int)(sizeof crash_signals / sizeof crash_signals[0]))
static struct sigaction crash_old[NCRASH];
static volatile sig_atomic_t crash_saved = -1, crash_fd = -1;

/* A crash inside a step: the real stderr back, what the step printed
** copied to it, then the signal handled as before the step. */
static void on_crash(int sig) {
  char buf[1024];
  ssize_t n;
  off_t off = 0;
  int i;
  if (crash_saved >= 0) {
    dup2(crash_saved, 2);
    while ((n = pread(crash_fd, buf, sizeof buf, off)) > 0 && write(2, buf, (size_t)n) == n)
      off += n;
  }
  for (i = 0; i < NCRASH; i++)
    if (crash_signals[i] == sig) sigaction(sig, &crash_old[i], NULL);
  raise(sig);
}

/* ------------------------------------------------- a build's own stack */

/* Stack sizes tried for a build's thread, largest first: the memory is
** only reserved (pages are touched as the compiler recurses), and each
** MiB holds about 4000 levels of a nested expression in PoCL's clang. */
static const size_t build_stacks[] = {(size_t)1 << 30, (size_t)256 << 20, (size_t)64 << 20};

typedef struct {
  cl_program prog;
  cl_device_id dev;
  const char *options;
  cl_int err;
} BuildJob;

static void *build_thread(void *arg) {
  BuildJob *j = arg;
  j->err = clBuildProgram(j->prog, 1, &j->dev, j->options, NULL, NULL);
  return NULL;
}

cl_int lg_build_program(cl_program prog, cl_device_id dev, const char *options) {
  BuildJob j = {prog, dev, options, CL_SUCCESS};
  size_t i;
  for (i = 0; i < sizeof build_stacks / sizeof build_stacks[0]; i++) {
    pthread_attr_t a;
    pthread_t t;
    int made;
    if (pthread_attr_init(&a) != 0) break;
    made = pthread_attr_setstacksize(&a, build_stacks[i]) == 0 &&
           pthread_create(&t, &a, build_thread, &j) == 0;
    pthread_attr_destroy(&a);
    if (made) {
      pthread_join(t, NULL);
      return j.err;
    }
  }
  build_thread(&j);   /* no thread to be had: on this one's stack */
  return j.err;
}

/* An unlinked temporary file (close-on-exec) in $TMPDIR, else (unset, or
** a folder that takes no file: the compiler's lines reached the terminal)
** in /tmp; -1 when neither takes one. */
static int temp_file(void) {
  const char *dirs[2];
  char path[PATH_MAX];
  int i, fd = -1;
  dirs[0] = getenv("TMPDIR");
  dirs[1] = "/tmp";
  for (i = 0; i < 2 && fd < 0; i++) {
    if (dirs[i] == NULL || dirs[i][0] == '\0') continue;
    if (snprintf(path, sizeof path, "%s/luagpu-build-XXXXXX", dirs[i]) >= (int)sizeof path)
      continue;
    fd = mkstemp(path);
  }
  if (fd < 0) return -1;
  unlink(path);
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
}

/* Starts a step on the platform of d: the lock taken, fd 2 redirected to
** c's file (left alone when there is none, or no fd 2). */
void lg_step_begin(Capture *c, lg_Device *d) {
  struct sigaction sa;
  int i;
  if (!c->locked) {
    lg_pocl_lock(d->platform);
    c->locked = 1;
  }
  c->saved = -1;
  if (c->fd < 0) c->fd = temp_file();
  fflush(stderr);
  if (c->fd < 0 || (c->saved = fcntl(2, F_DUPFD_CLOEXEC, 3)) < 0) return;
  if (dup2(c->fd, 2) < 0) {
    close(c->saved);
    c->saved = -1;
    return;
  }
  crash_fd = c->fd;
  crash_saved = c->saved;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_crash;
  sigemptyset(&sa.sa_mask);
  for (i = 0; i < NCRASH; i++) sigaction(crash_signals[i], &sa, &crash_old[i]);
}

/* Ends the step begun by step_begin: fd 2 and the signals as they were
** (the lock stays until the capture closes). */
void lg_step_end(Capture *c) {
  int i;
  if (c->saved >= 0) {
    fflush(stderr);
    for (i = 0; i < NCRASH; i++) sigaction(crash_signals[i], &crash_old[i], NULL);
    crash_saved = -1;
    dup2(c->saved, 2);
    close(c->saved);
    c->saved = -1;
  }
}

static int capture_gc(lua_State *L) {
  Capture *c = luaL_checkudata(L, 1, CAPTURE_MT);
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
  if (c->locked) lg_pocl_unlock();   /* held from step to step */
  c->locked = 0;
  return 0;
}

Capture *lg_push_capture(lua_State *L) {
  Capture *c = lua_newuserdatauv(L, sizeof *c, 0);
  c->fd = c->saved = -1;
  c->locked = 0;
  c->taken = 0;
  luaL_setmetatable(L, CAPTURE_MT);
  return c;
}

/* Pushes what c's steps printed since the last call. */
void lg_push_captured(lua_State *L, Capture *c) {
  luaL_Buffer b;
  ssize_t n;
  luaL_buffinit(L, &b);
  while (c->fd >= 0 && (n = pread(c->fd, luaL_prepbuffer(&b), LUAL_BUFFERSIZE, c->taken)) > 0) {
    luaL_addsize(&b, (size_t)n);
    c->taken += n;
  }
  luaL_pushresult(&b);
}

/* True for clang's "N warnings generated.", "N errors generated." and
** "N warnings and M errors generated." (s holds n bytes). */
static int is_summary(const char *s, size_t n) {
  const char *e = s + n, *w;
  int words = 0;
  while (s < e) {
    if (*s < '0' || *s > '9') return 0;
    while (s < e && *s >= '0' && *s <= '9') s++;
    if (e - s > 8 && memcmp(s, " warning", 8) == 0) s += 8;
    else if (e - s > 6 && memcmp(s, " error", 6) == 0) s += 6;
    else return 0;
    if (s < e && *s == 's') s++;
    words++;
    w = s;
    if (e - w == 11 && memcmp(w, " generated.", 11) == 0) return words <= 2;
    if (e - w < 5 || memcmp(w, " and ", 5) != 0) return 0;
    s = w + 5;
  }
  return 0;
}

/* True when text holds line (n bytes) as a whole line. */
static int has_line(const char *text, const char *line, size_t n) {
  for (;;) {
    if (strncmp(text, line, n) == 0 && (text[n] == '\n' || text[n] == '\0')) return 1;
    if ((text = strchr(text, '\n')) == NULL) return 0;
    text++;
  }
}

/* Replaces the log at logidx by itself and the lines of the captured text
** on top that it lacks, which it pops. Lines other than clang's summaries
** may be another thread's or the program's own: those also go back to the
** real stderr, never lost. */
void lg_settle_log(lua_State *L, int logidx) {
  int capidx = lua_gettop(L);
  const char *log = lua_tostring(L, logidx), *p = lua_tostring(L, capidx);
  luaL_Buffer b;
  logidx = lua_absindex(L, logidx);
  luaL_buffinit(L, &b);
  luaL_addstring(&b, log);
  while (*p != '\0') {
    size_t n = strcspn(p, "\n"), len = n;
    while (len > 0 && (p[len - 1] == '\r' || p[len - 1] == ' ')) len--;
    if (len > 0 && !has_line(log, p, len)) {
      if (luaL_bufflen(&b) > 0) luaL_addchar(&b, '\n');
      luaL_addlstring(&b, p, len);
      if (!is_summary(p, len)) fprintf(stderr, "%.*s\n", (int)len, p);
    }
    p += n + (p[n] == '\n');
  }
  luaL_pushresult(&b);
  lua_replace(L, logidx);
  lua_settop(L, capidx - 1);
}

void lg_open_capture(lua_State *L) {
  static const luaL_Reg capture_meta[] = {
    {"__gc", capture_gc}, {"__close", capture_gc}, {NULL, NULL}
  };
  lg_newclass(L, CAPTURE_MT, NULL, capture_meta);
}
