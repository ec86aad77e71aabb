/*
** binary.c: program binaries. prog.binary is the built program as a Lua
** string that dev:build_binary(bytes) turns back into a Program without
** compiling: luagpu's container around the driver's binary, which also
** holds the device's name, the build options and the kernels' argument
** metadata (drivers need not report argument info for programs made from
** binaries). dev:build_binary also takes a driver's bare binary, when the
** driver reports the argument info itself.
**   "LUAGPU-BINARY-1\n" "<n> <n> <n> <n>\n" device name, options, metadata,
**   binary (their lengths in bytes, then the bytes, in that order)
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAGIC "LUAGPU-BINARY-1\n"
#define MAGIC_LEN (sizeof MAGIC - 1)

cl_int lg_binary_size(lg_Program *p, cl_uint *index, cl_uint *count, size_t *size) {
  cl_uint nd = 0, j;
  cl_device_id *ids = NULL;
  size_t *sizes = NULL;
  cl_int err = clGetProgramInfo(p->prog, CL_PROGRAM_NUM_DEVICES, sizeof nd, &nd, NULL);
  *size = 0;
  if (err == CL_SUCCESS && nd == 0) err = CL_INVALID_PROGRAM_EXECUTABLE;
  if (err == CL_SUCCESS && ((ids = calloc(nd, sizeof *ids)) == NULL ||
                            (sizes = calloc(nd, sizeof *sizes)) == NULL))
    err = CL_OUT_OF_HOST_MEMORY;
  if (err == CL_SUCCESS)
    err = clGetProgramInfo(p->prog, CL_PROGRAM_DEVICES, nd * sizeof *ids, ids, NULL);
  if (err == CL_SUCCESS)
    err = clGetProgramInfo(p->prog, CL_PROGRAM_BINARY_SIZES, nd * sizeof *sizes, sizes, NULL);
  if (err == CL_SUCCESS) {
    for (j = 0; j < nd && ids[j] != p->dev->id; j++) continue;
    if (j == nd) {
      err = CL_INVALID_DEVICE;
    } else {
      *index = j;
      *count = nd;
      *size = sizes[j];
    }
  }
  free(ids);
  free(sizes);
  return err;
}

cl_int lg_binary_copy(lg_Program *p, cl_uint index, cl_uint count, unsigned char *out) {
  /* (an entry left NULL: the driver skips that device's binary) */
  unsigned char **bins = calloc(count, sizeof *bins);
  cl_int err;
  if (bins == NULL) return CL_OUT_OF_HOST_MEMORY;
  bins[index] = out;
  err = clGetProgramInfo(p->prog, CL_PROGRAM_BINARIES, count * sizeof *bins, bins, NULL);
  free(bins);
  return err;
}

/* Pushes the driver's binary of p (raising naming fn on failure). The
** build lock is let go while Lua allocates (which may raise). */
static void push_driver_binary(lua_State *L, lg_Program *p, const char *fn) {
  size_t size = 0;
  cl_uint index = 0, count = 0;
  unsigned char *bin;
  cl_int err;
  lg_pocl_lock(p->dev->platform);
  err = lg_binary_size(p, &index, &count, &size);
  lg_pocl_unlock();
  if (err == CL_SUCCESS && size > 0) {
    bin = lua_newuserdatauv(L, size, 0);
    lg_pocl_lock(p->dev->platform);
    err = lg_binary_copy(p, index, count, bin);
    lg_pocl_unlock();
    if (err == CL_SUCCESS) lua_pushlstring(L, (const char *)bin, size);
    lua_remove(L, err == CL_SUCCESS ? -2 : -1);
  }
  if (err != CL_SUCCESS) lg_clerror(L, lua_pushfstring(L, "%s: clGetProgramInfo", fn), err, NULL);
  if (size == 0) lg_error(L, fn, "the driver gave an empty binary");
}

/* prog.binary: the Program's __binary (kernel.c calls it for the field). */
static int prog_binary(lua_State *L) {
  int progidx = 1;
  lg_Program *p = lg_checkprogram(L, progidx);
  size_t nopt = 0, nmeta = 0;
  const char *opt, *meta;
  int fields;
  lua_getiuservalue(L, progidx, 3);
  fields = lua_gettop(L);
  lua_getfield(L, fields, "options");
  opt = lua_tolstring(L, -1, &nopt);
  lua_getfield(L, fields, "meta");
  meta = lua_tolstring(L, -1, &nmeta);
  push_driver_binary(L, p, "program.binary");
  lua_pushfstring(L, MAGIC "%I %I %I %I\n%s", (lua_Integer)strlen(p->dev->name),
                  (lua_Integer)nopt, (lua_Integer)nmeta, (lua_Integer)lua_rawlen(L, -1),
                  p->dev->name);
  lua_pushlstring(L, opt != NULL ? opt : "", opt != NULL ? nopt : 0);
  lua_pushlstring(L, meta != NULL ? meta : "", meta != NULL ? nmeta : 0);
  lua_pushvalue(L, -4);
  lua_concat(L, 4);
  lua_replace(L, fields);
  lua_settop(L, fields);
  return 1;
}

/* The parts of a container: pointers into the string, and lengths. */
typedef struct Parts {
  const char *name, *options, *meta, *bin;
  size_t nname, noptions, nmeta, nbin;
} Parts;

/* Reads a container (s, n bytes) into *x; returns 0 when it is none or
** damaged. Every length is checked against what is there. */
static int read_container(const char *s, size_t n, Parts *x) {
  size_t len[4];
  const char *p, *nl, *q;
  size_t left, i;
  if (n < MAGIC_LEN || memcmp(s, MAGIC, MAGIC_LEN) != 0) return 0;
  p = s + MAGIC_LEN;
  left = n - MAGIC_LEN;
  nl = memchr(p, '\n', left < 128 ? left : 128);
  if (nl == NULL) return 0;
  for (q = p, i = 0; i < 4; i++) {      /* four decimals, one space apart, none past n */
    int digits = 0;
    if (i > 0 && *q++ != ' ') return 0;
    for (len[i] = 0; q < nl && *q >= '0' && *q <= '9'; q++, digits++) {
      if (len[i] > (n - (size_t)(*q - '0')) / 10) return 0;
      len[i] = len[i] * 10 + (size_t)(*q - '0');
    }
    if (digits == 0) return 0;
  }
  if (q != nl) return 0;
  left -= (size_t)(nl - p) + 1;
  p = nl + 1;
  for (i = 0; i < 4; i++) {
    if (len[i] > left) return 0;
    left -= len[i];
  }
  if (left != 0 || len[3] == 0) return 0;
  x->name = p;                     x->nname = len[0];
  x->options = p + len[0];         x->noptions = len[1];
  x->meta = x->options + len[1];   x->nmeta = len[2];
  x->bin = x->meta + len[2];       x->nbin = len[3];
  return 1;
}

static void push_log(lua_State *L, cl_program prog, cl_device_id dev) {
  size_t n = 0;
  char *log;
  if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS || n == 0) {
    lua_pushliteral(L, "");
    return;
  }
  log = lua_newuserdatauv(L, n + 1, 0);
  if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS) n = 0;
  log[n] = '\0';
  n = strlen(log);
  while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' ' || log[n - 1] == '\r')) n--;
  lua_pushlstring(L, log, n);
  lua_remove(L, -2);
}

/* dev:build_binary(bytes): a Program from prog.binary's string (made for a
** device of the same name), or from a driver's own binary. */
static int dev_build_binary(lua_State *L) {
  static const char *const fn = "device:build_binary";
  lg_Device *d = lg_checkdevice(L, 1);
  size_t n;
  const char *s;
  const unsigned char *bin;
  Parts x;
  lg_Program *p;
  cl_int err = CL_SUCCESS, status = CL_SUCCESS;
  int progidx, fields;
  if (lua_type(L, 2) != LUA_TSTRING)
    return lg_argerror(L, fn, 1, "expected a binary string (prog.binary), got %s",
                       luaL_typename(L, 2));
  s = lua_tolstring(L, 2, &n);
  if (!read_container(s, n, &x)) {
    if (n >= MAGIC_LEN && memcmp(s, MAGIC, MAGIC_LEN) == 0)
      return lg_argerror(L, fn, 1, "a damaged or cut-short binary (%I bytes)", (lua_Integer)n);
    if (n == 0) return lg_argerror(L, fn, 1, "expected a binary string, got an empty one");
    memset(&x, 0, sizeof x);             /* a driver's bare binary */
    x.bin = s;
    x.nbin = n;
    x.options = "";
  } else if (!lg_meta_ok(x.meta, x.nmeta)) {
    return lg_argerror(L, fn, 1, "a damaged binary: its kernel metadata is malformed");
  } else if (x.nname != strlen(d->name) || memcmp(x.name, d->name, x.nname) != 0) {
    lua_pushlstring(L, x.name, x.nname);
    return lg_argerror(L, fn, 1, "the binary was built for %s, not for %s", lua_tostring(L, -1),
                       d->name);
  }
  if (!lg_binary_whole((const unsigned char *)x.bin, x.nbin))
    return lg_argerror(L, fn, 1, "a damaged or cut-short binary (%I bytes)", (lua_Integer)n);
  p = lua_newuserdatauv(L, sizeof *p, 3);   /* released until the build succeeds */
  memset(p, 0, sizeof *p);
  p->dev = d;
  luaL_setmetatable(L, LG_PROGRAM_MT);
  progidx = lua_gettop(L);
  lua_newtable(L);
  fields = lua_gettop(L);
  lua_pushlstring(L, x.options, x.noptions);
  lua_setfield(L, fields, "options");
  bin = (const unsigned char *)x.bin;
  lua_pushlstring(L, x.options, x.noptions);   /* before the lock: it may raise */
  lg_pocl_lock(d->platform);
  p->prog = clCreateProgramWithBinary(d->ctx, 1, &d->id, &x.nbin, &bin, &status, &err);
  if (p->prog != NULL && err == CL_SUCCESS && status == CL_SUCCESS)
    err = lg_build_program(p->prog, d->id, lua_tostring(L, -1));
  lg_pocl_unlock();
  lua_pop(L, 1);
  if (p->prog == NULL || err != CL_SUCCESS || status != CL_SUCCESS) {
    if (p->prog != NULL) clReleaseProgram(p->prog);
    p->prog = NULL;
    return lg_clerror(L, lua_pushfstring(L, "%s: clCreateProgramWithBinary", fn),
                      err != CL_SUCCESS ? err : status,
                      "the binary does not load on %s (another device or driver made it?)",
                      d->name);
  }
  push_log(L, p->prog, d->id);
  lua_setfield(L, fields, "log");
  if (x.meta != NULL) lua_pushlstring(L, x.meta, x.nmeta);
  else lg_program_meta(L, p->prog, fn);   /* raises (releasing nothing: p is collected) */
  lua_setfield(L, fields, "meta");
  lg_program_names(L, fields);
  lua_setiuservalue(L, progidx, 3);
  lua_newtable(L);
  lua_setiuservalue(L, progidx, 2);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, progidx, 1);
  if (x.meta != NULL) lg_check_kernels(L, progidx, fn);   /* metadata the driver did not give */
  lua_settop(L, progidx);
  return 1;
}

static const luaL_Reg device_methods[] = {{"build_binary", dev_build_binary}, {NULL, NULL}};

void lg_open_binary(lua_State *L) {
  lg_add_methods(L, LG_DEVICE_MT, device_methods);
  luaL_getmetatable(L, LG_PROGRAM_MT);
  lua_pushcfunction(L, prog_binary);
  lua_setfield(L, -2, "__binary");
  lua_pop(L, 1);
}
