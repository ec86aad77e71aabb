/*
** errors.c: OpenCL error names, the one formatter of CL failures, and the
** argument errors every subsystem raises ("luagpu: FN: argument #N: ...").
*/
#include <stdarg.h>
#include <string.h>

#include "internal.h"

typedef struct { cl_int code; const char *name; } ErrorName;

static const ErrorName error_names[] = {
  {0, "CL_SUCCESS"},
  {-1, "CL_DEVICE_NOT_FOUND"},
  {-2, "CL_DEVICE_NOT_AVAILABLE"},
  {-3, "CL_COMPILER_NOT_AVAILABLE"},
  {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
  {-5, "CL_OUT_OF_RESOURCES"},
  {-6, "CL_OUT_OF_HOST_MEMORY"},
  {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"},
  {-8, "CL_MEM_COPY_OVERLAP"},
  {-9, "CL_IMAGE_FORMAT_MISMATCH"},
  {-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED"},
  {-11, "CL_BUILD_PROGRAM_FAILURE"},
  {-12, "CL_MAP_FAILURE"},
  {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
  {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
  {-15, "CL_COMPILE_PROGRAM_FAILURE"},
  {-16, "CL_LINKER_NOT_AVAILABLE"},
  {-17, "CL_LINK_PROGRAM_FAILURE"},
  {-18, "CL_DEVICE_PARTITION_FAILED"},
  {-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
  {-30, "CL_INVALID_VALUE"},
  {-31, "CL_INVALID_DEVICE_TYPE"},
  {-32, "CL_INVALID_PLATFORM"},
  {-33, "CL_INVALID_DEVICE"},
  {-34, "CL_INVALID_CONTEXT"},
  {-35, "CL_INVALID_QUEUE_PROPERTIES"},
  {-36, "CL_INVALID_COMMAND_QUEUE"},
  {-37, "CL_INVALID_HOST_PTR"},
  {-38, "CL_INVALID_MEM_OBJECT"},
  {-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"},
  {-40, "CL_INVALID_IMAGE_SIZE"},
  {-41, "CL_INVALID_SAMPLER"},
  {-42, "CL_INVALID_BINARY"},
  {-43, "CL_INVALID_BUILD_OPTIONS"},
  {-44, "CL_INVALID_PROGRAM"},
  {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
  {-46, "CL_INVALID_KERNEL_NAME"},
  {-47, "CL_INVALID_KERNEL_DEFINITION"},
  {-48, "CL_INVALID_KERNEL"},
  {-49, "CL_INVALID_ARG_INDEX"},
  {-50, "CL_INVALID_ARG_VALUE"},
  {-51, "CL_INVALID_ARG_SIZE"},
  {-52, "CL_INVALID_KERNEL_ARGS"},
  {-53, "CL_INVALID_WORK_DIMENSION"},
  {-54, "CL_INVALID_WORK_GROUP_SIZE"},
  {-55, "CL_INVALID_WORK_ITEM_SIZE"},
  {-56, "CL_INVALID_GLOBAL_OFFSET"},
  {-57, "CL_INVALID_EVENT_WAIT_LIST"},
  {-58, "CL_INVALID_EVENT"},
  {-59, "CL_INVALID_OPERATION"},
  {-60, "CL_INVALID_GL_OBJECT"},
  {-61, "CL_INVALID_BUFFER_SIZE"},
  {-62, "CL_INVALID_MIP_LEVEL"},
  {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
  {-64, "CL_INVALID_PROPERTY"},
  {-65, "CL_INVALID_IMAGE_DESCRIPTOR"},
  {-66, "CL_INVALID_COMPILER_OPTIONS"},
  {-67, "CL_INVALID_LINKER_OPTIONS"},
  {-68, "CL_INVALID_DEVICE_PARTITION_COUNT"},
  {-69, "CL_INVALID_PIPE_SIZE"},
  {-70, "CL_INVALID_DEVICE_QUEUE"},
  {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
  {-9999, "NVIDIA_ILLEGAL_MEMORY_ACCESS"},
};

/* Hints for errors whose usual cause is known, used when the caller gives none. */
static const ErrorName error_hints[] = {
  {-4, "the device is out of memory for this allocation"},
  {-5, "the device ran out of resources (often an out-of-bounds access in a kernel, "
       "or too many registers or too much local memory per work-group)"},
  {-6, "the host is out of memory"},
  {-7, "the queue was made without profiling: use dev:queue{profiling = true}"},
  {-13, "a view used as a kernel argument must start at a multiple of the "
        "device's mem_base_addr_align"},
  {-1001, "no OpenCL platform found (is an ICD such as pocl-opencl-icd installed?)"},
  {-9999, "a kernel accessed memory out of bounds"},
};

const char *lg_clerror_name(cl_int err) {
  size_t i;
  for (i = 0; i < sizeof(error_names) / sizeof(error_names[0]); i++)
    if (error_names[i].code == err) return error_names[i].name;
  return "CL_UNKNOWN_ERROR";
}

static const char *default_hint(cl_int err) {
  size_t i;
  for (i = 0; i < sizeof(error_hints) / sizeof(error_hints[0]); i++)
    if (error_hints[i].code == err) return error_hints[i].name;
  return NULL;
}

/* Pushes where the script called luagpu, as luaL_where(L, 1) does, but
** past the frames of luagpu's Lua helpers: a C function a helper called
** (a launch, a blocking read that runs on_complete callbacks) raises at the
** script's line that called the helper, as the helpers' own errors do
** (core/check.lua's H.fail). A helper's frame is one whose chunk name
** starts with the folder luagpu.core.check registers (LG_HELPERS_DIR_KEY)
** and ends in ".lua"; before that module loads, level 1 as always. */
static void where(lua_State *L) {
  lua_Debug ar;
  size_t dlen = 0;
  int level = 1;
  const char *dir = NULL;
  if (lua_getfield(L, LUA_REGISTRYINDEX, LG_HELPERS_DIR_KEY) == LUA_TSTRING)
    dir = lua_tolstring(L, -1, &dlen);
  while (dir != NULL && dlen > 0 && lua_getstack(L, level, &ar) && lua_getinfo(L, "S", &ar)) {
    size_t n = strlen(ar.source);
    if (!(n > dlen + 4 && strncmp(ar.source, dir, dlen) == 0 &&
          strcmp(ar.source + n - 4, ".lua") == 0))
      break;
    level++;
  }
  lua_pop(L, 1);
  luaL_where(L, level);
}

int lg_clerror(lua_State *L, const char *call, cl_int err, const char *hint, ...) {
  luaL_Buffer b;
  where(L);
  luaL_buffinit(L, &b);
  lua_pushfstring(L, "luagpu: %s: %s (%d)", call, lg_clerror_name(err), (int)err);
  luaL_addvalue(&b);
  if (hint != NULL) {
    va_list ap;
    va_start(ap, hint);
    luaL_addstring(&b, ": ");
    lua_pushvfstring(L, hint, ap);
    va_end(ap);
    luaL_addvalue(&b);
  } else if (default_hint(err) != NULL) {
    luaL_addstring(&b, ": ");
    luaL_addstring(&b, default_hint(err));
  }
  luaL_pushresult(&b);
  lua_concat(L, 2);
  return lua_error(L);
}

const char *lg_path(lua_State *L, int idx, int arg, const char *fn) {
  size_t len;
  const char *path = lua_tolstring(L, idx, &len);
  if (path != NULL && strlen(path) != len)
    lg_argerror(L, fn, arg, "the file path holds a NUL byte (at position %d)",
                (int)strlen(path) + 1);
  return path;
}

int lg_argerror(lua_State *L, const char *fn, int arg, const char *fmt, ...) {
  va_list ap;
  where(L);
  lua_pushfstring(L, "luagpu: %s: argument #%d: ", fn, arg);
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 3);
  return lua_error(L);
}

int lg_error(lua_State *L, const char *fn, const char *fmt, ...) {
  va_list ap;
  where(L);
  lua_pushfstring(L, "luagpu: %s: ", fn);
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 3);
  return lua_error(L);
}

int lg_error_tail(lua_State *L, int tail, const char *fn, const char *fmt, ...) {
  va_list ap;
  tail = lua_absindex(L, tail);
  where(L);
  lua_pushfstring(L, "luagpu: %s: ", fn);
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_pushvalue(L, tail);
  lua_concat(L, 4);
  return lua_error(L);
}

const char *lg_tolstring(lua_State *L, int idx) {
  if (lua_type(L, idx) == LUA_TNUMBER && !lua_isinteger(L, idx)) {
    lua_Number x = lua_tonumber(L, idx);
    if (x != x) return lua_pushstring(L, "nan");
  }
  return luaL_tolstring(L, idx, NULL);
}

const char *lg_pushnumber(lua_State *L, lua_Number x) {
  if (x != x) return lua_pushstring(L, "nan");
  return lua_pushfstring(L, "%f", x);
}

int lg_typeerror(lua_State *L, const char *fn, int arg, int idx, const char *what) {
  const char *got;
  if (luaL_getmetafield(L, idx, "__name") == LUA_TSTRING)
    got = lua_tostring(L, -1);
  else if (lua_type(L, idx) == LUA_TLIGHTUSERDATA)
    got = "light userdata";
  else
    got = luaL_typename(L, idx);
  return lg_argerror(L, fn, arg, "expected %s, got %s", what, got);
}

lua_Integer lg_checkinteger(lua_State *L, int idx, const char *fn, int arg) {
  int ok = 0;
  lua_Integer v = lua_tointegerx(L, idx, &ok);
  if (!ok || lua_type(L, idx) != LUA_TNUMBER) {
    if (lua_type(L, idx) == LUA_TNUMBER)
      lg_argerror(L, fn, arg, "expected an integer, got %s", lg_tolstring(L, idx));
    lg_typeerror(L, fn, arg, idx, "an integer");
  }
  return v;
}

const char *lg_checklstring(lua_State *L, int idx, const char *fn, int arg, size_t *len) {
  if (lua_type(L, idx) != LUA_TSTRING) lg_typeerror(L, fn, arg, idx, "a string");
  return lua_tolstring(L, idx, len);
}

void lg_check_nul(lua_State *L, int idx, const char *fn, int arg, const char *what) {
  size_t len;
  const char *s;
  if (lua_type(L, idx) != LUA_TSTRING) return;
  s = lua_tolstring(L, idx, &len);
  if (strlen(s) != len) lg_argerror(L, fn, arg, "%s holds a NUL byte", what);
}

void lg_nomore(lua_State *L, const char *fn, int n, int self) {
  if (lua_gettop(L) > n)
    lg_typeerror(L, fn, n + 1 - self, n + 1, "no more arguments");
}

int lg_is_oom(cl_int err) {
  return err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
         err == CL_OUT_OF_HOST_MEMORY;
}

size_t lg_checksize(lua_State *L, int idx, const char *fn, int arg, const char *what) {
  lua_Integer n;
  int isint = 0;
  if (lua_type(L, idx) != LUA_TNUMBER)
    return (size_t)lg_typeerror(L, fn, arg, idx, what);
  n = lua_tointegerx(L, idx, &isint);
  if (!isint)
    return (size_t)lg_argerror(L, fn, arg, "expected %s, got %s", what, lg_tolstring(L, idx));
  if (n < 0)
    return (size_t)lg_argerror(L, fn, arg, "expected %s, got %I", what, n);
  return (size_t)n;
}
