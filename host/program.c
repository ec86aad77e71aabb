/*
** program.c: dev:build(source, opts) and dev:build_file(path, opts): the
** compiler's options, the build itself and the program cache's key (the
** Program objects they make are in kernel.c). A build asks for kernel
** argument info, enables cl_khr_fp64 where the device has it, looks
** #include files up in the source's folder, the user's -I folders and the
** root's kernels/ (in that order), and goes through the on-disk program
** cache (cache.c). What the compiler prints to stderr during a build goes
** to the build log instead.
*/
#define _XOPEN_SOURCE 700   /* realpath, mkstemp */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define MAX_DIRS 64
#define SPACES " \t\n\r\f\v"

/* ---------------------------------------------------------- options */

/* Pushes " -D NAME[=VALUE]" for every entry of the defines table at idx,
** in the order of the names (so equal tables give equal options). */
static void push_defines(lua_State *L, int idx, const char *fn, int arg) {
  int n = 0, i, j, list;
  lua_newtable(L);
  list = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    size_t klen = 0, vlen = 0;
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &klen) : NULL;
    const char *p = k;
    char num[64];
    if (k != NULL && strlen(k) != klen)
      lg_argerror(L, fn, arg, "defines: a name holds a NUL byte");
    if (k == NULL || !(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')))
      lg_argerror(L, fn, arg, "defines: expected identifiers as names, got %s",
                  lg_tolstring(L, -2));
    for (p = k; *p; p++)
      if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
            (*p >= '0' && *p <= '9')))
        lg_argerror(L, fn, arg, "defines: expected identifiers as names, got \"%s\"", k);
    switch (lua_type(L, -1)) {
      case LUA_TBOOLEAN:
        if (lua_toboolean(L, -1)) lua_pushfstring(L, " -D %s", k); else lua_pushnil(L);
        break;
      case LUA_TNUMBER:
        if (lua_isinteger(L, -1)) {
          lua_pushfstring(L, " -D %s=%I", k, lua_tointeger(L, -1));
        } else {
          double x = lua_tonumber(L, -1);
          if (!isfinite(x))
            lg_argerror(L, fn, arg, "defines: %s: expected a finite number, got %f", k, x);
          snprintf(num, sizeof num, "%.17g", x);
          if (strpbrk(num, ".en") == NULL) strcat(num, ".0");
          lua_pushfstring(L, " -D %s=%s", k, num);
        }
        break;
      case LUA_TSTRING:
        if (strlen(lua_tolstring(L, -1, &vlen)) != vlen)
          lg_argerror(L, fn, arg, "defines: %s: the value holds a NUL byte", k);
        if (strpbrk(lua_tostring(L, -1), " \t\n\r\f\v\"'\\") != NULL)
          lg_argerror(L, fn, arg, "defines: %s: a value with spaces or quotes cannot pass "
                      "through the build options (use a number or a word)", k);
        lua_pushfstring(L, " -D %s=%s", k, lua_tostring(L, -1));
        break;
      default:
        lg_argerror(L, fn, arg, "defines: %s: expected a number, string or boolean, got %s",
                    k, luaL_typename(L, -1));
    }
    if (lua_isnil(L, -1)) lua_pop(L, 1); else lua_rawseti(L, list, ++n);
    lua_pop(L, 1);
  }
  for (i = 2; i <= n; i++)            /* insertion sort: the tables are small */
    for (j = i; j > 1; j--) {
      lua_rawgeti(L, list, j - 1);
      lua_rawgeti(L, list, j);
      if (strcmp(lua_tostring(L, -2), lua_tostring(L, -1)) <= 0) { lua_pop(L, 2); break; }
      lua_rawseti(L, list, j - 1);
      lua_rawseti(L, list, j);
    }
  lua_pushliteral(L, "");
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, list, i);
    lua_concat(L, 2);
  }
  lua_remove(L, list);
}

/* Checks the user's build options (NULL: none) and adds the folders of
** their -I to dirs, pushing each name (the pointers stay valid while they
** stay on the stack). -D and -I need an argument, attached or the next
** word (PoCL 3.1 crashes on one without). Returns 0 when the program cache
** cannot be sure to search as the compiler does: words not separated by
** plain spaces (PoCL splits at spaces only), or too many folders. */
static int user_options(lua_State *L, const char *opt, const char *fn, int arg,
                        const char **dirs, int *ndirs) {
  const char *p = opt, *e;
  int sure = opt == NULL || strpbrk(opt, "\t\n\r\f\v") == NULL;   /* spaces only */
  while (p != NULL && *(p += strspn(p, SPACES)) != '\0') {
    const char *dir = NULL;
    e = p + strcspn(p, SPACES);
    if (e - p == 2 && p[0] == '-' && (p[1] == 'D' || p[1] == 'I')) {
      const char *w = e + strspn(e, SPACES);
      if (*w == '\0' || *w == '-')
        lg_argerror(L, fn, arg, "options: %s needs %s after it, got %s",
                    p[1] == 'D' ? "-D" : "-I", p[1] == 'D' ? "a macro name" : "a folder",
                    *w == '\0' ? "nothing" :
                    lua_pushfstring(L, "'%s'", lua_pushlstring(L, w, strcspn(w, SPACES))));
      e = w + strcspn(w, SPACES);
      if (p[1] == 'I') dir = w;
    } else if (e - p > 2 && p[0] == '-' && p[1] == 'I') {
      dir = p + 2;
    }
    if (dir != NULL && *ndirs < MAX_DIRS - 1)
      dirs[(*ndirs)++] = lua_pushlstring(L, dir, (size_t)(e - dir));
    else if (dir != NULL)   /* its includes could not be checked (a FIFO would hang) */
      lg_argerror(L, fn, arg, "options: more than %d -I folders (luagpu checks the includes "
                  "they find, and no more)", MAX_DIRS - 2);
    p = e;
  }
  return sure;
}

/* --------------------------------------------------------------- build */

static void push_build_log(lua_State *L, cl_program prog, cl_device_id dev) {
  size_t n = 0;
  char *log;
  if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS ||
      n == 0) {
    lua_pushliteral(L, "");
    return;
  }
  log = lua_newuserdatauv(L, n + 1, 0);
  if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS)
    n = 0;
  log[n] = '\0';
  n = strlen(log);
  while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' ' || log[n - 1] == '\r')) n--;
  lua_pushlstring(L, log, n);
  lua_remove(L, -2);
}

/* Adds the identity of the device and its driver to the cache key. */
static void hash_device(lg_Hash *h, lg_Device *d) {
  static const cl_platform_info pinfo[] = {CL_PLATFORM_NAME, CL_PLATFORM_VERSION};
  static const cl_device_info dinfo[] = {CL_DEVICE_NAME, CL_DEVICE_VENDOR, CL_DEVICE_VERSION,
                                         CL_DRIVER_VERSION};
  char buf[1024];
  size_t i;
  lg_hash_update(h, "luagpu " LG_VERSION, sizeof "luagpu " LG_VERSION);
  for (i = 0; i < sizeof pinfo / sizeof pinfo[0]; i++) {
    memset(buf, 0, sizeof buf);
    clGetPlatformInfo(d->platform, pinfo[i], sizeof buf - 1, buf, NULL);
    lg_hash_update(h, buf, strlen(buf) + 1);
  }
  for (i = 0; i < sizeof dinfo / sizeof dinfo[0]; i++) {
    memset(buf, 0, sizeof buf);
    clGetDeviceInfo(d->id, dinfo[i], sizeof buf - 1, buf, NULL);
    lg_hash_update(h, buf, strlen(buf) + 1);
  }
}

/* Builds from the cached binary; returns 1 on success (the program, its
** log and its metadata are set), 0 leaving nothing behind. */
static int build_cached(lua_State *L, lg_Program *p, const char *key, const char *options,
                        int fields, Capture *c) {
  lg_CacheEntry e;
  cl_int err = CL_SUCCESS, status = CL_SUCCESS;
  const unsigned char *bin;
  if (!lg_cache_load(L, key, &e)) {
    lua_pop(L, 1);
    return 0;
  }
  bin = e.binary;
  lg_step_begin(c, p->dev);
  p->prog = clCreateProgramWithBinary(p->dev->ctx, 1, &p->dev->id, &e.binary_size, &bin,
                                      &status, &err);
  if (p->prog != NULL && err == CL_SUCCESS && status == CL_SUCCESS)
    err = lg_build_program(p->prog, p->dev->id, options);
  lg_step_end(c);
  if (p->prog == NULL || err != CL_SUCCESS || status != CL_SUCCESS) {
    if (p->prog != NULL) clReleaseProgram(p->prog);
    p->prog = NULL;
    lua_pop(L, 1);
    return 0;
  }
  lua_pushlstring(L, e.log, e.log_size);
  lg_push_captured(L, c);
  lg_settle_log(L, -2);
  lua_setfield(L, fields, "log");
  lua_pushlstring(L, e.meta, e.meta_size);
  lua_setfield(L, fields, "meta");
  lua_pop(L, 1);
  p->from_cache = 1;
  return 1;
}

/* Extracts the built binary and stores it in the cache under key with the
** log and metadata of fields (what the extraction printed joins the log);
** failures only mean no entry. */
static void store_binary(lua_State *L, lg_Program *p, const char *key, int fields,
                         Capture *c) {
  size_t size = 0;
  cl_uint index = 0, count = 0;
  unsigned char *bin;
  lg_CacheEntry e;
  cl_int err;
  lg_step_begin(c, p->dev);
  err = lg_binary_size(p, &index, &count, &size);
  lg_step_end(c);
  if (err != CL_SUCCESS || size == 0) return;
  bin = lua_newuserdatauv(L, size, 0);
  lg_step_begin(c, p->dev);
  err = lg_binary_copy(p, index, count, bin);
  lg_step_end(c);
  lua_getfield(L, fields, "log");
  lg_push_captured(L, c);
  lg_settle_log(L, -2);
  lua_pushvalue(L, -1);
  lua_setfield(L, fields, "log");
  if (err == CL_SUCCESS) {
    e.binary = bin;
    e.binary_size = size;
    e.log = lua_tolstring(L, -1, &e.log_size);
    lua_getfield(L, fields, "meta");
    e.meta = lua_tolstring(L, -1, &e.meta_size);
    lg_cache_store(key, &e);
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
}

/* Raises (releasing the program) when a kernel's name is longer than the
** driver takes: PoCL names a file KERNEL.so in its cache folder and aborts
** the process when it cannot (at binary extraction or first launch). */
static void check_names(lua_State *L, lg_Program *p, int fields, const char *fn) {
  size_t max = lg_pocl_name_max(p->dev->platform), n;
  lua_Integer i;
  if (max == 0) return;
  lua_getfield(L, fields, "names");
  for (i = 1; lua_rawgeti(L, -1, i) == LUA_TSTRING; i++) {
    const char *name = lua_tolstring(L, -1, &n);
    if (n > max) {
      clReleaseProgram(p->prog);
      p->prog = NULL;
      lg_error(L, fn, "kernel '%s...' has a name of %d characters: PoCL takes at most %d "
               "(it names a file after each kernel)",
               lua_pushlstring(L, name, 24), (int)n, (int)max);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
}

/* Builds from source, raising with the build log on failure, and stores
** the binary in the cache (key NULL: not cached). unsearched: a folder the
** includes would have been searched in but for a space in its path (the
** failure's message then says so), or NULL. */
static void build_source(lua_State *L, lg_Program *p, const char *key, int srcidx,
                         const char *options, int fields, const char *fn, const char *file,
                         Capture *c, const char *unsearched) {
  size_t len;
  const char *src = lua_tolstring(L, srcidx, &len);
  cl_int made, err;
  lg_step_begin(c, p->dev);
  p->prog = clCreateProgramWithSource(p->dev->ctx, 1, &src, &len, &made);
  if (p->prog != NULL && made != CL_SUCCESS) clReleaseProgram(p->prog);
  if (made != CL_SUCCESS) p->prog = NULL;
  err = p->prog != NULL ? lg_build_program(p->prog, p->dev->id, options) : made;
  lg_step_end(c);
  if (p->prog == NULL) lg_clerror(L, "clCreateProgramWithSource", made, NULL);
  push_build_log(L, p->prog, p->dev->id);
  lg_push_captured(L, c);
  lg_settle_log(L, -2);
  if (err != CL_SUCCESS) {
    const char *log = lua_tostring(L, -1);
    clReleaseProgram(p->prog);
    p->prog = NULL;
    if (file != NULL) fn = lua_pushfstring(L, "%s: %s", fn, file);
    if (unsearched != NULL && strstr(log, "file not found") != NULL)
      log = lua_pushfstring(L, "%s\n(#include did not search %s: its path holds a space, which "
                            "OpenCL's build options cannot pass)", log, unsearched);
    if (err == CL_BUILD_PROGRAM_FAILURE || log[0] != '\0')
      lg_clerror(L, lua_pushfstring(L, "%s: clBuildProgram", fn), err, "build log:\n%s", log);
    lg_clerror(L, lua_pushfstring(L, "%s: clBuildProgram", fn), err, "options: %s", options);
  }
  lua_setfield(L, fields, "log");
  lg_program_meta(L, p->prog, fn);
  lua_setfield(L, fields, "meta");
  lg_program_names(L, fields);
  check_names(L, p, fields, fn);
  if (key != NULL) store_binary(L, p, key, fields, c);
}

static const char *const build_keys[] = {"options", "defines", NULL};

/* Pushes (and returns) the options the compiler gets: luagpu's own, -I for
** the source's folder srcdir (when not NULL), the defines, the user's
** options, then -I for kdir (when not NULL): so the compiler searches the
** source's folder, the user's -I, then the root's kernels/, as documented
** and as the cache key's scan does. */
static const char *push_options(lua_State *L, const char *srcdir, const char *defines,
                                const char *user, const char *kdir) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "-cl-kernel-arg-info");
  if (srcdir != NULL) {
    luaL_addstring(&b, " -I ");
    luaL_addstring(&b, srcdir);
  }
  luaL_addstring(&b, defines);
  if (user != NULL && user[0] != '\0') {
    luaL_addchar(&b, ' ');
    luaL_addstring(&b, user);
  }
  if (kdir != NULL) {
    luaL_addstring(&b, " -I ");
    luaL_addstring(&b, kdir);
  }
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

/* Pushes (and returns) options as the cache key sees them: every -D in
** one form ("-DN=4" and "-D N=4" are both " -D N=4"), after the other words
** and sorted, so that a defines table and the same -D in an options string
** (dev:build_file's, luagpu --precompile's) give one key. The definitions
** keep their place and order when that can matter: a -U among the options,
** or a name defined twice. */
static const char *push_key_options(lua_State *L, const char *options) {
  const char *p = options, *e, *d;
  int n = 0, list, i, j, sorted = 1, pass;
  luaL_Buffer b;
  lua_newtable(L);
  list = lua_gettop(L);
  for (pass = 1; pass <= 2; pass++) {
    if (pass == 2) {
      luaL_buffinit(L, &b);
      p = options;
    }
    while (*(p += strspn(p, SPACES)) != '\0') {
      e = p + strcspn(p, SPACES);
      if (p[0] == '-' && p[1] == 'U') sorted = 0;
      if (p[0] == '-' && p[1] == 'D') {
        d = p + 2;
        if (e == d) {   /* "-D NAME": the next word */
          d = e + strspn(e, SPACES);
          e = d + strcspn(d, SPACES);
        }
        if (pass == 1) {
          lua_pushlstring(L, d, (size_t)(e - d));
          lua_rawseti(L, list, ++n);
        } else if (!sorted) {
          luaL_addstring(&b, " -D ");
          luaL_addlstring(&b, d, (size_t)(e - d));
        }
      } else if (pass == 2) {
        luaL_addchar(&b, ' ');
        luaL_addlstring(&b, p, (size_t)(e - p));
      }
      p = e;
    }
    if (pass == 1 && sorted) {
      for (i = 1; i <= n && sorted; i++)   /* a name defined twice: order matters */
        for (j = i + 1; j <= n && sorted; j++) {
          const char *x = (lua_rawgeti(L, list, i), lua_tostring(L, -1));
          const char *y = (lua_rawgeti(L, list, j), lua_tostring(L, -1));
          size_t lx = strcspn(x, "="), ly = strcspn(y, "=");
          if (lx == ly && memcmp(x, y, lx) == 0) sorted = 0;
          lua_pop(L, 2);
        }
      for (i = 2; i <= n && sorted; i++)   /* insertion sort: the lists are small */
        for (j = i; j > 1; j--) {
          lua_rawgeti(L, list, j - 1);
          lua_rawgeti(L, list, j);
          if (strcmp(lua_tostring(L, -2), lua_tostring(L, -1)) <= 0) { lua_pop(L, 2); break; }
          lua_rawseti(L, list, j - 1);
          lua_rawseti(L, list, j);
        }
    }
  }
  for (i = 1; i <= n && sorted; i++) {
    luaL_addstring(&b, " -D ");
    lua_rawgeti(L, list, i);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  lua_remove(L, list);
  return lua_tostring(L, -1);
}

/* Scans the includes of the source at srcidx, raising naming fn when one
** is not a file (the compiler would open it, and a FIFO blocks it forever
** with the build lock held). When cached is set, pushes the cache key (nil
** when the build must not be cached) and returns it; else returns NULL. */
static const char *push_key(lua_State *L, lg_Device *d, const char *options, int srcidx,
                            const char *const *dirs, int ndirs, int cached, const char *fn) {
  lg_Hash h;
  size_t len;
  const char *src = lua_tolstring(L, srcidx, &len);
  unsigned char sum[32];
  char hex[65], bad[2 * PATH_MAX + 64];
  int i, sure;
  lg_hash_init(&h);
  hash_device(&h, d);
  options = push_key_options(L, options);
  lg_hash_update(&h, options, strlen(options) + 1);
  lua_pop(L, 1);   /* (the hash has it) */
  lg_hash_update(&h, src, len);
  sure = lg_hash_includes(&h, src, len, dirs, ndirs, bad, sizeof bad);
  if (bad[0] != '\0') lg_error(L, fn, "%s", bad);
  if (!cached) return NULL;
  if (!sure) {
    lua_pushnil(L);
    return NULL;
  }
  lg_hash_final(&h, sum);
  for (i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", sum[i]);
  return lua_pushstring(L, hex);
}

static int check_kernels(lua_State *L) {
  lg_check_kernels(L, 1, "dev:build");
  return 0;
}

/* 1 when the metadata of the Program at progidx (from a cache entry)
** agrees with the driver about every kernel's arguments (lg_check_kernels);
** 0, with nothing left on the stack, when it does not. */
static int kernels_agree(lua_State *L, int progidx) {
  lua_pushcfunction(L, check_kernels);
  lua_pushvalue(L, progidx);
  if (lua_pcall(L, 1, 0, 0) == LUA_OK) return 1;
  lua_pop(L, 1);
  return 0;
}

/* The notice of a slow build (lg_State.compile_notice), on stderr: which
** program (its file, else its first kernel), how long, and whether the
** program cache keeps it. fields: the Program's fields table. */
static void compile_notice(lua_State *L, int fields, const char *file, double secs,
                           const char *key) {
  const char *name = NULL, *slash;
  int top = lua_gettop(L);
  lua_Integer n;
  lua_getfield(L, fields, "names");
  n = lua_istable(L, -1) ? (lua_Integer)lua_rawlen(L, -1) : 0;
  if (file != NULL) {
    slash = strrchr(file, '/');
    name = lua_pushstring(L, slash != NULL ? slash + 1 : file);
  } else if (n > 0 && lua_rawgeti(L, -1, 1) == LUA_TSTRING) {
    name = n == 1 ? lua_tostring(L, -1)
                  : lua_pushfstring(L, "%s (and %I more kernels)", lua_tostring(L, -1), n - 1);
  } else {
    name = lua_pushliteral(L, "a program");
  }
  fflush(stdout);
  fprintf(stderr, "luagpu: compiling %s took %.1f s; %s\n", name, secs,
          key != NULL && lg_cache_has(key) ? "it is cached for next time"
          : key != NULL ? "it could not be cached (see luagpu --doctor)"
          : lg_cache_enabled() ? "it is not cached (its includes could not all be followed)"
          : "the program cache is off (LUAGPU_NO_CACHE)");
  fflush(stderr);
  lua_settop(L, top);
}

/* A build from source into gpu.trace's record: the program's file name,
** else its first kernel's, from t0_ns until now. */
static void trace_build(lua_State *L, int fields, const char *file, cl_ulong t0_ns) {
  const char *name = "a program", *slash;
  int top = lua_gettop(L);
  if (file != NULL) {
    slash = strrchr(file, '/');
    name = slash != NULL ? slash + 1 : file;
  } else if (lua_getfield(L, fields, "names") == LUA_TTABLE &&
             lua_rawgeti(L, -1, 1) == LUA_TSTRING) {
    name = lua_tostring(L, -1);
  }
  lg_trace_build(L, name, t0_ns, lg_now_ns());
  lua_settop(L, top);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The work of dev:build and dev:build_file: the device is at 1, the source
** text at srcidx, the options table at optidx; file is the path (or NULL)
** and srcdir the folder of relative includes. Pushes the Program. */
static int build(lua_State *L, int srcidx, int optidx, const char *file, const char *srcdir,
                 const char *fn) {
  lg_Device *d = lg_checkdevice(L, 1);
  lg_Program *p;
  Capture *c;
  const char *user = NULL, *options, *dirs[MAX_DIRS], *key = NULL, *kdir = NULL;
  const char *unsearched = NULL;     /* a folder left out for a space in its path */
  char kbuf[PATH_MAX + 16];
  int ndirs = 0, fields, progidx, defidx, sure;
  if (!lua_isnoneornil(L, optidx)) {
    if (!lua_istable(L, optidx))
      lg_typeerror(L, fn, optidx - 1, optidx, "an options table {options =, defines =}");
    lg_checkoptions(L, optidx, fn, optidx - 1, build_keys);
    size_t len = 0;
    if (lua_getfield(L, optidx, "options") != LUA_TNIL && lua_type(L, -1) != LUA_TSTRING)
      lg_argerror(L, fn, optidx - 1, "options: expected a string, got %s", luaL_typename(L, -1));
    user = lua_tolstring(L, -1, &len);
    if (user != NULL && strlen(user) != len)    /* the compiler would read up to it */
      lg_argerror(L, fn, optidx - 1, "options: a NUL byte would end them early");
    lua_pop(L, 1);                    /* still referenced by the options table */
    if (lua_getfield(L, optidx, "defines") != LUA_TNIL && !lua_istable(L, -1))
      lg_argerror(L, fn, optidx - 1, "defines: expected a table, got %s", luaL_typename(L, -1));
  } else {
    lua_pushnil(L);
  }
  defidx = lua_gettop(L);

  /* include folders, the compiler's -I in its order: the source's (unless
  ** it cannot pass through the options), the user's, the root's kernels/ */
  if (srcdir != NULL && strchr(srcdir, ' ') != NULL) unsearched = srcdir, srcdir = NULL;
  dirs[ndirs++] = srcdir;
  sure = user_options(L, user, fn, optidx - 1, dirs, &ndirs);
  if (lg_root_dir() != NULL &&
      snprintf(kbuf, sizeof kbuf, "%s/kernels", lg_root_dir()) < (int)sizeof kbuf) {
    if (strchr(kbuf, ' ') == NULL) dirs[ndirs++] = kdir = kbuf;
    else if (unsearched == NULL) unsearched = kbuf;
  }
  if (lua_istable(L, defidx)) push_defines(L, defidx, fn, optidx - 1);
  else lua_pushliteral(L, "");
  options = push_options(L, srcdir, lua_tostring(L, -1), user, kdir);

  p = lua_newuserdatauv(L, sizeof *p, 3);   /* released until the build succeeds */
  memset(p, 0, sizeof *p);
  p->dev = d;
  luaL_setmetatable(L, LG_PROGRAM_MT);
  progidx = lua_gettop(L);
  lua_newtable(L);
  fields = lua_gettop(L);
  lua_pushstring(L, options);
  lua_setfield(L, fields, "options");
  c = lg_push_capture(L);
  lua_toclose(L, -1);                 /* its file and the lock close when build returns or raises */

  /* the source as the compiler sees it */
  if (d->fp64) lua_pushliteral(L, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
  else lua_pushliteral(L, "");
  if (file != NULL) {
    luaL_gsub(L, file, "\\", "\\\\");
    luaL_gsub(L, lua_tostring(L, -1), "\"", "\\\"");
    lua_pushfstring(L, "#line 1 \"%s\"\n", lua_tostring(L, -1));
    lua_replace(L, -3);
    lua_pop(L, 1);
  } else {
    lua_pushliteral(L, "#line 1 \"<source>\"\n");   /* else the log names a temp file */
  }
  lua_pushvalue(L, srcidx);
  lua_concat(L, 3);
  srcidx = lua_gettop(L);

  key = push_key(L, d, options, srcidx, dirs, ndirs, lg_cache_enabled() && sure, fn);
  if (key == NULL || !build_cached(L, p, key, options, fields, c)) {
    double t0 = now_s();
    cl_ulong t0_ns = lg_now_ns();
    build_source(L, p, key, srcidx, options, fields, fn, file, c, unsearched);
    if (lg_tracing(L)) trace_build(L, fields, file, t0_ns);
    if (lg_state(L)->compile_notice && now_s() - t0 >= lg_state(L)->compile_notice_s)
      compile_notice(L, fields, file, now_s() - t0, key);
  }
  if (p->from_cache) lg_program_names(L, fields);
  if (file != NULL) {
    lua_pushstring(L, file);
    lua_setfield(L, fields, "file");
  }
  lua_pushvalue(L, fields);
  lua_setiuservalue(L, progidx, 3);
  lua_newtable(L);
  lua_setiuservalue(L, progidx, 2);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, progidx, 1);
  if (p->from_cache && !kernels_agree(L, progidx)) {
    /* an entry whose metadata the driver contradicts: built again, and replaced */
    clReleaseProgram(p->prog);
    p->prog = NULL;
    p->from_cache = 0;
    lua_newtable(L);
    lua_setiuservalue(L, progidx, 2);   /* the kernels made from it go with it */
    build_source(L, p, key, srcidx, options, fields, fn, file, c, unsearched);
  }
  lua_pushvalue(L, progidx);
  return 1;
}

/* dev:build(source [, opts]) */
static int dev_build(lua_State *L) {
  char cwd[PATH_MAX];
  lg_checkdevice(L, 1);
  if (lua_type(L, 2) != LUA_TSTRING)
    return lg_typeerror(L, "dev:build", 1, 2, "a string of OpenCL C source");
  lg_check_nul(L, 2, "dev:build", 1, "the source");
  lua_settop(L, 3);
  return build(L, 2, 3, NULL, getcwd(cwd, sizeof cwd), "dev:build");
}

/* dev:build_file(path [, opts]): a relative path not found from the
** current folder is also looked up under the root and its kernels/. */
static int dev_build_file(lua_State *L) {
  const char *path;
  char real[PATH_MAX], alt[PATH_MAX + 32];
  FILE *f = NULL;
  struct stat st;
  luaL_Buffer b;
  size_t n;
  int fd;
  lg_checkdevice(L, 1);
  if (lua_type(L, 2) != LUA_TSTRING)
    return lg_typeerror(L, "dev:build_file", 1, 2, "a file name");
  lua_settop(L, 3);
  path = lua_tostring(L, 2);
  snprintf(alt, sizeof alt, "%s", path);
  if (realpath(path, real) == NULL && path[0] != '/' && lg_root_dir() != NULL) {
    snprintf(alt, sizeof alt, "%s/%s", lg_root_dir(), path);
    if (realpath(alt, real) == NULL) {
      snprintf(alt, sizeof alt, "%s/kernels/%s", lg_root_dir(), path);
      if (realpath(alt, real) == NULL) snprintf(alt, sizeof alt, "%s", path);
    }
  }
  /* opened without blocking, then checked: a FIFO (or a device) would
  ** block a plain open until a writer came */
  fd = open(alt, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return lg_argerror(L, "dev:build_file", 1, "cannot open '%s': %s", path, strerror(errno));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (f = fdopen(fd, "rb")) == NULL) {
    close(fd);
    return lg_argerror(L, "dev:build_file", 1, "'%s' is not a file", path);
  }
  luaL_buffinit(L, &b);
  do {
    n = fread(luaL_prepbuffer(&b), 1, LUAL_BUFFERSIZE, f);
    luaL_addsize(&b, n);
  } while (n == LUAL_BUFFERSIZE);
  fclose(f);
  luaL_pushresult(&b);
  if (realpath(alt, real) != NULL) {
    char *slash = strrchr(real, '/');
    if (slash != NULL) *slash = '\0';
  } else {
    real[0] = '\0';
  }
  return build(L, 4, 3, path, real[0] ? real : NULL, "dev:build_file");
}

static const luaL_Reg device_methods[] = {
  {"build", dev_build}, {"build_file", dev_build_file}, {NULL, NULL}
};

void lg_open_program(lua_State *L) {
  lg_open_capture(L);
  lg_add_methods(L, LG_DEVICE_MT, device_methods);
}
