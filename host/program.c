/*
** program.c: dev:build(source, opts) and dev:build_file(path, opts), and
** Program objects: prog.kernels, prog.log, prog.NAME, prog:kernel(NAME).
** A build asks for kernel argument info, enables cl_khr_fp64 where the
** device has it, looks #include files up in the source's folder and in the
** root's kernels/, and goes through the on-disk program cache (cache.c).
*/
#define _XOPEN_SOURCE 700   /* realpath */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define MAX_DIRS 16

lg_Program *lg_checkprogram(lua_State *L, int idx) {
  lg_Program *p = luaL_checkudata(L, idx, LG_PROGRAM_MT);
  if (p->prog == NULL) lg_released_error(L, idx, "program");
  return p;
}

/* ---------------------------------------------------------- options */

/* Pushes " -D NAME[=VALUE]" for every entry of the defines table at idx,
** in the order of the names (so equal tables give equal options). */
static void push_defines(lua_State *L, int idx, const char *fn, int arg) {
  int n = 0, i, j, list;
  lua_newtable(L);
  list = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    const char *p = k;
    char num[64];
    if (k == NULL || !(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')))
      lg_argerror(L, fn, arg, "defines: expected identifiers as names, got %s",
                  luaL_tolstring(L, -2, NULL));
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
        if (strpbrk(lua_tostring(L, -1), " \t\n\"'\\") != NULL)
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

/* Adds the folders named by -I in the user's options to dirs, pushing each
** one's name (the pointers stay valid while they stay on the stack). */
static void user_include_dirs(lua_State *L, const char *opt, const char **dirs, int *ndirs) {
  const char *p = opt;
  while (p != NULL && (p = strstr(p, "-I")) != NULL && *ndirs < MAX_DIRS - 1) {
    const char *e;
    int word = p == opt || p[-1] == ' ';
    p += 2;
    while (*p == ' ') p++;
    for (e = p; *e && *e != ' '; e++) {}
    if (word && e > p) dirs[(*ndirs)++] = lua_pushlstring(L, p, (size_t)(e - p));
    p = e;
  }
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
                        int fields) {
  lg_CacheEntry e;
  cl_int err, status = CL_SUCCESS;
  const unsigned char *bin;
  if (!lg_cache_load(L, key, &e)) {
    lua_pop(L, 1);
    return 0;
  }
  bin = e.binary;
  p->prog = clCreateProgramWithBinary(p->dev->ctx, 1, &p->dev->id, &e.binary_size, &bin,
                                      &status, &err);
  if (p->prog != NULL && err == CL_SUCCESS && status == CL_SUCCESS)
    err = clBuildProgram(p->prog, 1, &p->dev->id, options, NULL, NULL);
  if (p->prog == NULL || err != CL_SUCCESS || status != CL_SUCCESS) {
    if (p->prog != NULL) clReleaseProgram(p->prog);
    p->prog = NULL;
    lua_pop(L, 1);
    return 0;
  }
  lua_pushlstring(L, e.log, e.log_size);
  lua_setfield(L, fields, "log");
  lua_pushlstring(L, e.meta, e.meta_size);
  lua_setfield(L, fields, "meta");
  lua_pop(L, 1);
  p->from_cache = 1;
  return 1;
}

/* Builds from source, raising with the build log on failure, and stores
** the binary in the cache. */
static void build_source(lua_State *L, lg_Program *p, const char *key, int srcidx,
                         const char *options, int fields, const char *fn, const char *file) {
  size_t len, size = 0;
  const char *src = lua_tolstring(L, srcidx, &len);
  cl_int err;
  lg_CacheEntry e;
  unsigned char *bin;
  p->prog = clCreateProgramWithSource(p->dev->ctx, 1, &src, &len, &err);
  if (p->prog == NULL || err != CL_SUCCESS) {
    p->prog = NULL;
    lg_clerror(L, "clCreateProgramWithSource", err, NULL);
  }
  err = clBuildProgram(p->prog, 1, &p->dev->id, options, NULL, NULL);
  push_build_log(L, p->prog, p->dev->id);
  if (err != CL_SUCCESS) {
    const char *log = lua_tostring(L, -1);
    clReleaseProgram(p->prog);
    p->prog = NULL;
    if (file != NULL) fn = lua_pushfstring(L, "%s: %s", fn, file);
    if (err == CL_BUILD_PROGRAM_FAILURE || log[0] != '\0')
      lg_clerror(L, lua_pushfstring(L, "%s: clBuildProgram", fn), err, "build log:\n%s", log);
    lg_clerror(L, lua_pushfstring(L, "%s: clBuildProgram", fn), err, "options: %s", options);
  }
  lua_setfield(L, fields, "log");
  lg_program_meta(L, p->prog, fn);
  lua_setfield(L, fields, "meta");
  if (key == NULL ||
      clGetProgramInfo(p->prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) !=
          CL_SUCCESS || size == 0)
    return;
  bin = lua_newuserdatauv(L, size, 0);
  if (clGetProgramInfo(p->prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS) {
    e.binary = bin;
    e.binary_size = size;
    lua_getfield(L, fields, "log");
    e.log = lua_tolstring(L, -1, &e.log_size);
    lua_getfield(L, fields, "meta");
    e.meta = lua_tolstring(L, -1, &e.meta_size);
    lg_cache_store(key, &e);
    lua_pop(L, 2);
  }
  lua_pop(L, 1);
}

/* Sets fields.names, the list of kernel names read off fields.meta. */
static void set_names(lua_State *L, int fields) {
  const char *m;
  int n = 0;
  lua_getfield(L, fields, "meta");
  m = lua_tostring(L, -1);
  lua_newtable(L);
  while (m != NULL && *m) {
    const char *eol = strchr(m, '\n');
    if (strncmp(m, "kernel\t", 7) == 0) {
      const char *e = strchr(m + 7, '\t');
      lua_pushlstring(L, m + 7, (size_t)(e != NULL ? e - m - 7 : 0));
      lua_rawseti(L, -2, ++n);
    }
    m = eol != NULL ? eol + 1 : NULL;
  }
  lua_setfield(L, fields, "names");
  lua_pop(L, 1);
}

/* The work of dev:build and dev:build_file: the device is at 1, the source
** text at srcidx, the options table at optidx; file is the path (or NULL)
** and srcdir the folder of relative includes. Pushes the Program. */
static int build(lua_State *L, int srcidx, int optidx, const char *file, const char *srcdir,
                 const char *fn) {
  lg_Device *d = lg_checkdevice(L, 1);
  lg_Program *p;
  luaL_Buffer b;
  const char *user = NULL, *options, *defines, *dirs[MAX_DIRS], *key = NULL;
  char kdir[PATH_MAX + 16];
  int ndirs = 0, fields, progidx, defidx, i;
  unsigned char sum[32];
  if (!lua_isnoneornil(L, optidx)) {
    if (!lua_istable(L, optidx))
      lg_typeerror(L, fn, optidx - 1, optidx, "an options table {options =, defines =}");
    lua_pushnil(L);
    while (lua_next(L, optidx)) {
      const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?";
      if (strcmp(k, "options") != 0 && strcmp(k, "defines") != 0)
        lg_argerror(L, fn, optidx - 1, "unknown option '%s' (expected options, defines)",
                    luaL_tolstring(L, -2, NULL));
      lua_pop(L, 1);
    }
    if (lua_getfield(L, optidx, "options") != LUA_TNIL && lua_type(L, -1) != LUA_TSTRING)
      lg_argerror(L, fn, optidx - 1, "options: expected a string, got %s", luaL_typename(L, -1));
    user = lua_tostring(L, -1);
    lua_pop(L, 1);                    /* still referenced by the options table */
    if (lua_getfield(L, optidx, "defines") != LUA_TNIL && !lua_istable(L, -1))
      lg_argerror(L, fn, optidx - 1, "defines: expected a table, got %s", luaL_typename(L, -1));
  } else {
    lua_pushnil(L);
  }
  defidx = lua_gettop(L);
  p = lua_newuserdatauv(L, sizeof *p, 3);   /* released until the build succeeds */
  memset(p, 0, sizeof *p);
  p->dev = d;
  luaL_setmetatable(L, LG_PROGRAM_MT);
  progidx = lua_gettop(L);
  lua_newtable(L);
  fields = lua_gettop(L);

  /* include folders: the source's, the user's -I, the root's kernels/ */
  dirs[ndirs++] = srcdir;
  user_include_dirs(L, user, dirs, &ndirs);
  if (lg_root_dir() != NULL) {
    snprintf(kdir, sizeof kdir, "%s/kernels", lg_root_dir());
    dirs[ndirs++] = kdir;
  }
  if (lua_istable(L, defidx)) push_defines(L, defidx, fn, optidx - 1);
  else lua_pushliteral(L, "");
  defines = lua_tostring(L, -1);
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "-cl-kernel-arg-info");
  for (i = 0; i < ndirs; i++) {
    if (i > 0 && dirs[i] != kdir) continue;    /* the user's -I are in the user's options */
    if (dirs[i] == NULL || strchr(dirs[i], ' ') != NULL) continue;
    luaL_addstring(&b, " -I ");
    luaL_addstring(&b, dirs[i]);
  }
  luaL_addstring(&b, defines);
  if (user != NULL && user[0] != '\0') {
    luaL_addchar(&b, ' ');
    luaL_addstring(&b, user);
  }
  luaL_pushresult(&b);
  options = lua_tostring(L, -1);
  lua_pushvalue(L, -1);
  lua_setfield(L, fields, "options");

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

  if (lg_cache_enabled()) {
    lg_Hash h;
    size_t len;
    const char *src = lua_tolstring(L, srcidx, &len);
    char hex[65];
    lg_hash_init(&h);
    hash_device(&h, d);
    lg_hash_update(&h, options, strlen(options) + 1);
    lg_hash_update(&h, src, len);
    lg_hash_includes(&h, src, len, dirs, ndirs);
    lg_hash_final(&h, sum);
    for (i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", sum[i]);
    key = lua_pushstring(L, hex);
  }
  if (key == NULL || !build_cached(L, p, key, options, fields))
    build_source(L, p, key, srcidx, options, fields, fn, file);
  set_names(L, fields);
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
  lua_pushvalue(L, progidx);
  return 1;
}

/* dev:build(source [, opts]) */
static int dev_build(lua_State *L) {
  char cwd[PATH_MAX];
  lg_checkdevice(L, 1);
  if (lua_type(L, 2) != LUA_TSTRING)
    return lg_typeerror(L, "dev:build", 1, 2, "a string of OpenCL C source");
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
  f = fopen(alt, "rb");
  if (f != NULL && (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))) {
    fclose(f);
    return lg_argerror(L, "dev:build_file", 1, "'%s' is not a file", path);
  }
  if (f == NULL)
    return lg_argerror(L, "dev:build_file", 1, "cannot open '%s': %s", path, strerror(errno));
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

/* ------------------------------------------------------------ programs */

/* Pushes the kernel-name list of fields (at fidx) joined with ", ". */
static void push_names(lua_State *L, int fidx) {
  luaL_Buffer b;
  lua_Integer i, n;
  lua_getfield(L, fidx, "names");
  n = (lua_Integer)lua_rawlen(L, -1);
  luaL_buffinit(L, &b);
  for (i = 1; i <= n; i++) {
    if (i > 1) luaL_addstring(&b, ", ");
    lua_rawgeti(L, -2, i);
    luaL_addvalue(&b);
  }
  if (n == 0) luaL_addstring(&b, "none");
  luaL_pushresult(&b);
  lua_remove(L, -2);
}

void lg_push_kernel(lua_State *L, int progidx, const char *name, const char *fn) {
  lua_Integer i, n;
  progidx = lua_absindex(L, progidx);
  lg_checkprogram(L, progidx);
  lua_getiuservalue(L, progidx, 2);
  if (lua_getfield(L, -1, name) == LUA_TUSERDATA) {
    lua_remove(L, -2);
    return;
  }
  lua_pop(L, 1);
  lua_getiuservalue(L, progidx, 3);
  lua_getfield(L, -1, "names");
  n = (lua_Integer)lua_rawlen(L, -1);
  for (i = 1; i <= n; i++) {
    int found;
    lua_rawgeti(L, -1, i);
    found = strcmp(lua_tostring(L, -1), name) == 0;
    lua_pop(L, 1);
    if (found) break;
  }
  if (i > n) {
    push_names(L, -2);
    lg_error(L, fn, "no kernel named '%s' (kernels: %s)", name, lua_tostring(L, -1));
  }
  lua_pop(L, 2);
  lg_newkernel(L, progidx, name, fn);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, name);
  lua_remove(L, -2);
}

/* prog:kernel(name) */
static int prog_kernel(lua_State *L) {
  lg_checkprogram(L, 1);
  if (lua_type(L, 2) != LUA_TSTRING)
    return lg_typeerror(L, "prog:kernel", 1, 2, "a kernel name");
  lg_push_kernel(L, 1, lua_tostring(L, 2), "prog:kernel");
  return 1;
}

/* prog:release(), also __close: releases the program and its kernels
** (calls bound to them raise when run afterwards). */
static int prog_release(lua_State *L) {
  lg_Program *p = luaL_checkudata(L, 1, LG_PROGRAM_MT);
  if (p->prog == NULL) return 0;
  if (lua_getiuservalue(L, 1, 2) == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      lg_Kernel *k = luaL_testudata(L, -1, LG_KERNEL_MT);
      if (k != NULL && k->k != NULL) clReleaseKernel(k->k);
      if (k != NULL) k->k = NULL;
      lua_pop(L, 1);
    }
  }
  clReleaseProgram(p->prog);
  p->prog = NULL;
  return 0;
}

static int prog_gc(lua_State *L) {
  lg_Program *p = luaL_checkudata(L, 1, LG_PROGRAM_MT);
  if (p->prog != NULL) clReleaseProgram(p->prog);
  p->prog = NULL;
  return 0;
}

/* Fields first (kernels, log, options, file, device, cached), then the
** methods, then kernels by name; anything else raises. */
static int prog_index(lua_State *L) {
  lg_Program *p = luaL_checkudata(L, 1, LG_PROGRAM_MT);
  const char *key;
  if (lua_type(L, 2) == LUA_TSTRING && lg_pushmethod(L, 1, 2)) return 1;
  lg_checkprogram(L, 1);
  key = lua_tostring(L, 2);
  if (lua_type(L, 2) != LUA_TSTRING) {
    lua_getiuservalue(L, 1, 3);
    push_names(L, -1);
    return lg_error(L, "program", "no kernel named %s (kernels: %s)",
                    luaL_tolstring(L, 2, NULL), lua_tostring(L, -2));
  }
  lua_getiuservalue(L, 1, 3);
  if (strcmp(key, "kernels") == 0) {
    lua_Integer i, n;
    lua_getfield(L, -1, "names");
    n = (lua_Integer)lua_rawlen(L, -1);
    lua_createtable(L, (int)n, 0);
    for (i = 1; i <= n; i++) {
      lua_rawgeti(L, -2, i);
      lua_rawseti(L, -2, i);
    }
    return 1;
  }
  if (strcmp(key, "log") == 0 || strcmp(key, "options") == 0 || strcmp(key, "file") == 0) {
    lua_getfield(L, -1, key);
    return 1;
  }
  if (strcmp(key, "device") == 0) {
    lua_getiuservalue(L, 1, 1);
    return 1;
  }
  if (strcmp(key, "cached") == 0) {
    lua_pushboolean(L, p->from_cache);
    return 1;
  }
  lua_pop(L, 1);
  lg_push_kernel(L, 1, key, "program");
  return 1;
}

static int prog_newindex(lua_State *L) {
  return lg_error(L, "program", "field '%s' is read-only", luaL_tolstring(L, 2, NULL));
}

static int prog_tostring(lua_State *L) {
  lg_Program *p = luaL_checkudata(L, 1, LG_PROGRAM_MT);
  if (p->prog == NULL) {
    lua_pushfstring(L, LG_PROGRAM_MT " (released): %p", (void *)p);
    return 1;
  }
  lua_getiuservalue(L, 1, 3);
  push_names(L, -1);
  lua_pushfstring(L, LG_PROGRAM_MT " {%s} on %s: %p", lua_tostring(L, -1), p->dev->name,
                  (void *)p);
  return 1;
}

static const luaL_Reg program_methods[] = {
  {"kernel", prog_kernel},
  {"release", prog_release},
  {NULL, NULL}
};

static const luaL_Reg program_meta[] = {
  {"__index", prog_index},
  {"__newindex", prog_newindex},
  {"__gc", prog_gc},
  {"__close", prog_release},
  {"__tostring", prog_tostring},
  {NULL, NULL}
};

static const luaL_Reg device_methods[] = {
  {"build", dev_build},
  {"build_file", dev_build_file},
  {NULL, NULL}
};

void lg_open_program(lua_State *L) {
  lg_newclass(L, LG_PROGRAM_MT, program_methods, program_meta);
  lg_add_methods(L, LG_DEVICE_MT, device_methods);
}
