/*
** module.c: luaopen_luagpu. Opens each subsystem in turn (root.c first, so
** the pure-Lua helpers are found), and gives the module its small
** functions: gpu.version, gpu.root, gpu.now, gpu.type, gpu.kernel_source,
** gpu.load; last, it runs luagpu.autoload, which says which Lua helper
** provides what (dev:tensor, gpu.reduce, ...): the C side names no other.
*/
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* gpu.now(): monotonic wall-clock seconds, for timing scripts. */
static int mod_now(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
  return 1;
}

/* gpu.kernel_source(name): the source of kernels/NAME, embedded in the
** build; falls back to the file under the root's kernels/ folder. NAME must
** be a plain file name of a kernel source (NAME.cl, no folder, no NUL). */
static int mod_kernel_source(lua_State *L) {
  size_t len;
  const char *name;
  const lg_EmbeddedFile *f;
  char path[PATH_MAX + 64];
  struct stat st;
  FILE *fp;
  int fd;
  luaL_Buffer b;
  if (lua_type(L, 1) != LUA_TSTRING)
    return lg_typeerror(L, "gpu.kernel_source", 1, 1, "a kernel file name");
  name = lua_tolstring(L, 1, &len);
  if (len < 4 || strlen(name) != len || strchr(name, '/') != NULL || name[0] == '.' ||
      strcmp(name + len - 3, ".cl") != 0)
    return lg_argerror(L, "gpu.kernel_source", 1, "expected a kernel file name such as "
                       "\"reduce.cl\", got \"%s\"", name);
  for (f = lg_embedded_kernels; f->name != NULL; f++) {
    if (strcmp(f->name, name) == 0) { lua_pushstring(L, f->text); return 1; }
  }
  fp = NULL;
  fd = -1;
  if (lg_root_dir() != NULL &&
      snprintf(path, sizeof path, "%s/kernels/%s", lg_root_dir(), name) < (int)sizeof path)
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);   /* a FIFO would block a plain open */
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (fp = fdopen(fd, "rb")) == NULL))
    close(fd);
  if (fp == NULL)
    return lg_argerror(L, "gpu.kernel_source", 1, "no kernel source named '%s'", name);
  luaL_buffinit(L, &b);
  for (;;) {
    size_t n = fread(luaL_prepbuffer(&b), 1, LUAL_BUFFERSIZE, fp);
    luaL_addsize(&b, n);
    if (n < LUAL_BUFFERSIZE) break;
  }
  fclose(fp);
  luaL_pushresult(&b);
  return 1;
}

/* gpu.type(v): "Buffer", "Device", "Event", ... for luagpu's objects (the
** metatable name without "luagpu."; "Tensor" and "ShardedTensor" for
** luagpu.tensor's tables),
** "released Buffer" once released (as io.type gives "closed file"; the
** class's __released tells), nil for anything else. */
static int mod_type(lua_State *L) {
  int t = lua_type(L, 1);
  luaL_checkany(L, 1);
  if ((t == LUA_TUSERDATA || t == LUA_TTABLE) &&
      luaL_getmetafield(L, 1, "__name") == LUA_TSTRING &&
      (t == LUA_TUSERDATA ? strncmp(lua_tostring(L, -1), "luagpu.", 7) == 0
                          : (strcmp(lua_tostring(L, -1), "luagpu.Tensor") == 0 ||
                             strcmp(lua_tostring(L, -1), "luagpu.ShardedTensor") == 0))) {
    int released = 0;
    if (luaL_getmetafield(L, 1, "__released") == LUA_TFUNCTION) {
      lua_pushvalue(L, 1);
      lua_call(L, 1, 1);
      released = lua_toboolean(L, -1);
      lua_pop(L, 1);
    }
    lua_pushfstring(L, "%s%s", released ? "released " : "", lua_tostring(L, -1) + 7);
    return 1;
  }
  lua_pushnil(L);
  return 1;
}

/* gpu.load(path, dev): with a Device, a tensor on it (the hook "load" of
** luagpu.autoload's: luagpu.tensor's load); with any other second
** argument, npy.c's gpu.load (its upvalue): a host array. */
static int mod_load(lua_State *L) {
  int n = lua_gettop(L);
  if (luaL_testudata(L, 2, LG_DEVICE_MT) != NULL) lg_push_luahook(L, "load", "gpu.load");
  else lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, n, LUA_MULTRET);
  return lua_gettop(L);
}

/* Runs luagpu.autoload, the one helper the C side names (found as every
** helper is: on package.path, else embedded in the build): its table is
** kept as the Lua hooks (lg_push_luahook), and its open(gpu) declares what
** the helpers provide before they are loaded (dev:tensor, gpu.reduce, ...). */
static void open_autoload(lua_State *L) {
  lg_require_helper(L, "luagpu.autoload");
  if (!lua_istable(L, -1) || lua_getfield(L, -1, "open") != LUA_TFUNCTION)
    luaL_error(L, "luagpu: luagpu.autoload must return a table with a function 'open'");
  lua_pushvalue(L, -3);
  lua_call(L, 1, 0);
  lua_setfield(L, LUA_REGISTRYINDEX, LG_LUA_HOOKS);
}

/* gpu.released(v): true for a released luagpu object, false for a live
** one, nil for anything else; makes no string (gpu.type's question, for
** checks on every launch). */
static int mod_released(lua_State *L) {
  int released = 0;
  luaL_checkany(L, 1);
  if (lua_type(L, 1) != LUA_TUSERDATA || luaL_getmetafield(L, 1, "__name") != LUA_TSTRING ||
      strncmp(lua_tostring(L, -1), "luagpu.", 7) != 0) {
    lua_pushnil(L);
    return 1;
  }
  if (luaL_getmetafield(L, 1, "__released") == LUA_TFUNCTION) {
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    released = lua_toboolean(L, -1);
  }
  lua_pushboolean(L, released);
  return 1;
}

static const luaL_Reg module_functions[] = {
  {"now", mod_now}, {"kernel_source", mod_kernel_source}, {"type", mod_type},
  {"released", mod_released}, {NULL, NULL}
};

LUAGPU_API int luaopen_luagpu(lua_State *L) {
  lg_find_helpers(L);
  luaL_newlib(L, module_functions);
  lua_pushliteral(L, LG_VERSION);
  lua_setfield(L, -2, "version");
  if (lg_root_dir() != NULL) {
    lua_pushstring(L, lg_root_dir());
    lua_setfield(L, -2, "root");
  }
  if (lg_code_dir() != NULL) {
    lua_pushstring(L, lg_code_dir());
    lua_setfield(L, -2, "code_dir");
  }
  lg_open_context(L);
  lg_open_device(L);
  lg_open_queue(L);
  lg_open_sync(L);
  lg_open_array(L);
  lg_open_npy(L);
  lg_open_event(L);
  lg_open_userevent(L);
  lg_open_buffer(L);
  lg_open_pinned(L);
  lg_open_transfer(L);
  lg_open_rect(L);
  lg_open_map(L);
  lg_open_partition(L);
  lg_open_image(L);
  lg_open_image_transfer(L);
  lg_open_program(L);
  lg_open_kernel(L);
  lg_open_trace(L);
  lg_open_debug(L);
  lg_open_query(L);
  lg_open_binary(L);
  lg_open_png(L);
  lg_open_class(L);
  lua_getfield(L, -1, "load");
  lua_pushcclosure(L, mod_load, 1);
  lua_setfield(L, -2, "load");
  open_autoload(L);
  return 1;
}
