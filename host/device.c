/*
** device.c: Device objects. gpu.platforms(), gpu.devices(kind),
** gpu.device(spec) (LUAGPU_DEVICE); Device fields, dev:summary(),
** tostring(dev). One Device userdata per cl_device_id, cached in the
** registry so every lookup agrees; its Context is context.c's.
*/
#define _XOPEN_SOURCE 700   /* lstat, access */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define DEVICE_CACHE  "luagpu.device_cache"    /* cl_device_id -> Device */
#define NO_DEVICE_MSG "no OpenCL device found (is an ICD such as pocl-opencl-icd installed?)"

/* ------------------------------------------------------------ helpers */

/* What keeps the cache folder path from being used, or NULL: PoCL lists
** no device when it cannot make or write its cache there. */
static const char *cache_problem(const char *path) {
  struct stat st;
  char up[4096];
  char *slash;
  if (strlen(path) > 1000) return "has too long a path";
  if (lstat(path, &st) == 0) {
    if (S_ISLNK(st.st_mode) && stat(path, &st) != 0) return "is a symbolic link to nothing";
    if (!S_ISDIR(st.st_mode)) return "is not a folder";
    if (access(path, W_OK | X_OK) != 0) return "is not writable";
    return NULL;
  }
  /* missing: the nearest folder above it must let it be made */
  snprintf(up, sizeof up, "%s", path);
  while ((slash = strrchr(up, '/')) != NULL) {
    if (slash == up) slash[1] = '\0';                 /* the root itself */
    else *slash = '\0';
    if (stat(up, &st) == 0) {
      if (!S_ISDIR(st.st_mode)) return "cannot be made (a part of its path is not a folder)";
      if (access(up, W_OK | X_OK) != 0) return "cannot be made (a folder above it is not writable)";
      return NULL;
    }
    if (lstat(up, &st) == 0) return "cannot be made (a part of its path is a symbolic link to nothing)";
    if (strcmp(up, "/") == 0) break;
  }
  return NULL;
}

/* Raises fn's "no device" error. PoCL lists no device when its cache
** folder ($XDG_CACHE_HOME, else ~/.cache) cannot be made or written, and
** when POCL_DEVICES names none it knows (or is set but empty): the message
** then says so instead of blaming the driver's installation. */
static int no_device(lua_State *L, const char *fn) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  const char *pocl = getenv("POCL_DEVICES"), *why;
  char path[4096];
  if (xdg != NULL && xdg[0] != '\0')
    snprintf(path, sizeof path, "%s", xdg);
  else if (home != NULL && home[0] != '\0')
    snprintf(path, sizeof path, "%s/.cache", home);
  else
    path[0] = '\0';
  if (path[0] != '\0' && (why = cache_problem(path)) != NULL)
    return lg_error(L, fn, "no OpenCL device found: the cache folder %s %s, and drivers such "
                    "as PoCL then list no device (make it a writable folder, or set "
                    "XDG_CACHE_HOME to one)", path, why);
  if (pocl != NULL && pocl[0] == '\0')   /* set but empty: PoCL names none either */
    return lg_error(L, fn, "no OpenCL device found (POCL_DEVICES is set but empty: PoCL "
                    "then lists no device; unset it, or name one such as pthread)");
  if (pocl != NULL)
    return lg_error(L, fn, "no OpenCL device found (POCL_DEVICES=%s: PoCL lists only the "
                    "devices it names; unset it, or name one such as pthread)", pocl);
  return lg_error(L, fn, NO_DEVICE_MSG);
}

/* ----------------------------------------------------------- devices */

lg_Device *lg_testdevice(lua_State *L, int idx) {
  return luaL_testudata(L, idx, LG_DEVICE_MT);
}

/* A device whose Context was finalized (a finalizer of the user's running
** late in a collection, or at lua_close) raises rather than using it. */
lg_Device *lg_checkdevice(lua_State *L, int idx) {
  lg_Device *d = luaL_checkudata(L, idx, LG_DEVICE_MT);
  if (d->context == NULL || d->context->ctx == NULL) lg_released_error(L, idx, "device");
  return d;
}

lg_Device *lg_newdevice(lua_State *L, cl_device_id id) {
  lg_Device *d = lua_newuserdatauv(L, sizeof *d, 3);
  memset(d, 0, sizeof *d);
  d->id = id;
  luaL_setmetatable(L, LG_DEVICE_MT);
  clGetDeviceInfo(id, CL_DEVICE_PLATFORM, sizeof d->platform, &d->platform, NULL);
  return d;
}

lg_Device *lg_push_device(lua_State *L, cl_device_id id) {
  lg_Device *d;
  lg_Context *c;
  int devidx;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, DEVICE_CACHE);
  if (lua_rawgetp(L, -1, id) == LUA_TUSERDATA) {
    lua_remove(L, -2);
    return lua_touserdata(L, -1);
  }
  lua_pop(L, 1);
  d = lg_newdevice(L, id);
  devidx = lua_gettop(L);
  c = lg_push_context(L, d->platform);
  d->context = c;
  d->ctx = c->ctx;
  lua_setiuservalue(L, devidx, 1);
  lg_load_device_fields(L, d);
  lua_setiuservalue(L, devidx, 3);
  /* collect after a quarter of the device's memory was allocated, at most 1 GiB */
  if (c->gc_threshold == 0 || c->gc_threshold > d->global_mem_size / 4)
    c->gc_threshold = d->global_mem_size / 4 < ((size_t)1 << 30)
                          ? (size_t)(d->global_mem_size / 4) : ((size_t)1 << 30);
  if (c->gc_threshold == 0) c->gc_threshold = (size_t)256 << 20;
  lua_pushvalue(L, devidx);
  lua_rawsetp(L, -3, id);
  lua_remove(L, -2);
  return d;
}

/* Pushes the list of devices of the given type on every platform. */
static int push_devices(lua_State *L, cl_device_type type) {
  cl_uint np, i, n, j;
  cl_platform_id *plats = lg_get_platforms(&np);
  int k = 0;
  lua_newtable(L);
  for (i = 0; i < np; i++) {
    cl_device_id ids[64];
    n = 0;
    if (clGetDeviceIDs(plats[i], type, 64, ids, &n) != CL_SUCCESS) continue;
    if (n > 64) n = 64;
    for (j = 0; j < n; j++) {
      lg_push_device(L, ids[j]);
      lua_rawseti(L, -2, ++k);
    }
  }
  free(plats);
  return k;
}

static const char *const kind_names[] = {"all", "gpu", "cpu", "accelerator", NULL};
static const cl_device_type kind_types[] = {
  CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_ACCELERATOR
};

static int mod_devices(lua_State *L) {
  int kind = 0;
  if (!lua_isnoneornil(L, 1)) {
    const char *s;
    if (lua_type(L, 1) != LUA_TSTRING)
      return lg_typeerror(L, "gpu.devices", 1, 1, "\"gpu\", \"cpu\", \"accelerator\" or \"all\"");
    s = lua_tostring(L, 1);
    for (kind = 0; kind_names[kind] && strcmp(kind_names[kind], s) != 0; kind++) {}
    if (kind_names[kind] == NULL)
      return lg_argerror(L, "gpu.devices", 1,
                         "expected \"gpu\", \"cpu\", \"accelerator\" or \"all\", got \"%s\"", s);
  }
  push_devices(L, kind_types[kind]);
  return 1;
}

/* Raises with the list of devices there are. */
static int no_match(lua_State *L, const char *spec, int n) {
  int i, list = lua_gettop(L);
  lua_pushliteral(L, "");
  for (i = 1; i <= n; i++) {
    lg_Device *d;
    lua_rawgeti(L, list, i);
    d = lua_touserdata(L, -1);
    lua_getiuservalue(L, -1, 3);
    lua_getfield(L, -1, "platform");
    lua_pushfstring(L, "\n  %d: %s / %s (%s)", i, lua_tostring(L, -1), d->name,
                    lg_device_type_name(d->type));
    lua_replace(L, -4);
    lua_pop(L, 2);
    lua_concat(L, 2);
  }
  return lg_error(L, "gpu.device", "no device matches \"%s\"; the devices are:%s", spec,
                  lua_tostring(L, -1));
}

static int tolower_ascii(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* Case-insensitive substring test. */
static int contains(const char *hay, const char *needle) {
  size_t i, j, n = strlen(needle);
  for (i = 0; hay[i]; i++) {
    for (j = 0; j < n && hay[i + j]; j++)
      if (tolower_ascii(hay[i + j]) != tolower_ascii(needle[j])) break;
    if (j == n) return 1;
  }
  return n == 0;
}

/* Resolves a device spec (nil, index, "gpu"/"cpu"/"accelerator", or a
** substring of "platform / device name") against the list on top. */
static int pick(lua_State *L, int specidx, int n) {
  int i;
  if (n == 0) return no_device(L, "gpu.device");
  if (lua_isnoneornil(L, specidx)) {                  /* first GPU, else first CPU */
    static const cl_device_type order[] = {CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_CPU};
    unsigned k;
    for (k = 0; k < 2; k++)
      for (i = 1; i <= n; i++) {
        lg_Device *d;
        lua_rawgeti(L, -1, i);
        d = lua_touserdata(L, -1);
        if (d->type & order[k]) return 1;
        lua_pop(L, 1);
      }
    lua_rawgeti(L, -1, 1);
    return 1;
  }
  if (lua_type(L, specidx) == LUA_TNUMBER) {
    lua_Integer k = lua_tointeger(L, specidx);
    if (!lua_isinteger(L, specidx) || k < 1 || k > n)
      return lg_argerror(L, "gpu.device", 1, "device index %s out of range (1 to %d)",
                         lua_tostring(L, specidx), n);
    lua_rawgeti(L, -1, k);
    return 1;
  }
  if (lua_type(L, specidx) != LUA_TSTRING)
    return lg_typeerror(L, "gpu.device", 1, specidx,
                        "a device index, \"gpu\", \"cpu\" or a name substring");
  {
    const char *spec = lua_tostring(L, specidx);
    int kind;
    for (kind = 1; kind_names[kind] && strcmp(kind_names[kind], spec) != 0; kind++) {}
    for (i = 1; i <= n; i++) {
      lg_Device *d;
      int match;
      lua_rawgeti(L, -1, i);
      d = lua_touserdata(L, -1);
      if (kind_names[kind] != NULL) {
        match = (d->type & kind_types[kind]) != 0;
      } else {
        lua_getiuservalue(L, -1, 3);
        lua_getfield(L, -1, "platform");
        lua_pushfstring(L, "%s / %s", lua_tostring(L, -1), d->name);
        match = contains(lua_tostring(L, -1), spec);
        lua_pop(L, 3);
      }
      if (match) return 1;
      lua_pop(L, 1);
    }
    return no_match(L, spec, n);
  }
}

/* gpu.device([spec]): nil looks at $LUAGPU_DEVICE, then picks the first GPU,
** else the first CPU. */
static int mod_device(lua_State *L) {
  int n;
  const char *env = NULL;
  lua_Integer k = 0;               /* the index $LUAGPU_DEVICE gives (0: none or too large) */
  lua_settop(L, 1);
  if (lua_isnil(L, 1)) {
    env = getenv("LUAGPU_DEVICE");
    if (env != NULL && env[0] != '\0') {
      /* digits alone are an index ("1 " and " 1" are names, as "+1"), else a name */
      size_t i, len = strlen(env);
      int digits = len > 0;
      for (i = 0; i < len; i++)
        if (env[i] < '0' || env[i] > '9') digits = 0;
      if (digits) {
        for (i = 0; i < len && k >= 0; i++)
          k = k > (LUA_MAXINTEGER - 9) / 10 ? -1 : k * 10 + (env[i] - '0');
        lua_pushinteger(L, k < 0 ? 0 : k);
      } else {
        lua_pushstring(L, env);
      }
      lua_replace(L, 1);
    } else {
      env = NULL;
    }
  }
  n = push_devices(L, CL_DEVICE_TYPE_ALL);
  /* (an index from the environment is no argument of the call: named as such) */
  if (env != NULL && n > 0 && lua_type(L, 1) == LUA_TNUMBER &&
      (lua_tointeger(L, 1) < 1 || lua_tointeger(L, 1) > n))
    return lg_error(L, "gpu.device", "$LUAGPU_DEVICE=%s: device index out of range (1 to %d)",
                    env, n);
  return pick(L, 1, n);
}

/* Fields, tostring and summary stay readable once the context is gone. */
static int dev_index(lua_State *L) {
  luaL_checkudata(L, 1, LG_DEVICE_MT);
  if (lg_pushmethod(L, 1, 2)) return 1;
  lua_getiuservalue(L, 1, 3);
  lua_pushvalue(L, 2);
  if (lua_rawget(L, -2) == LUA_TTABLE) {        /* hand out a copy of table fields */
    lua_newtable(L);
    lua_pushnil(L);
    while (lua_next(L, -3)) {
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_rawset(L, -4);
    }
  }
  return 1;
}

static void human_bytes(char *buf, size_t n, cl_ulong bytes) {
  if (bytes >= ((cl_ulong)1 << 30))
    snprintf(buf, n, "%.1f GiB", (double)bytes / (double)((cl_ulong)1 << 30));
  else if (bytes >= ((cl_ulong)1 << 20))
    snprintf(buf, n, "%.1f MiB", (double)bytes / (double)((cl_ulong)1 << 20));
  else
    snprintf(buf, n, "%.1f KiB", (double)bytes / 1024.0);
}

static int dev_tostring(lua_State *L) {
  lg_Device *d = luaL_checkudata(L, 1, LG_DEVICE_MT);
  char mem[32];
  lua_getiuservalue(L, 1, 3);
  lua_getfield(L, -1, "platform");
  lua_getfield(L, -2, "compute_units");
  human_bytes(mem, sizeof mem, d->global_mem_size);
  lua_pushfstring(L, LG_DEVICE_MT ": %s (%s, %s, %d compute units, %s)", d->name,
                  lg_device_type_name(d->type), lua_tostring(L, -2), (int)lua_tointeger(L, -1), mem);
  return 1;
}

/* Pushes the key padded to a column. */
static void push_key(lua_State *L, const char *k) {
  char buf[64];
  snprintf(buf, sizeof buf, "%-22s ", k);
  lua_pushstring(L, buf);
}

/* dev:summary(): every field, one per line. */
static int dev_summary(lua_State *L) {
  static const char *const order[] = {
    "name", "vendor", "type", "platform", "version", "driver_version", "opencl_c_version",
    "compute_units", "clock_mhz", "global_mem_size", "local_mem_size", "max_alloc_size",
    "constant_buffer_size", "max_work_group_size", "max_work_item_sizes", "address_bits",
    "mem_base_addr_align", "fp64", "available", "host_unified_memory",
    "preferred_vector_width", "extensions", NULL
  };
  luaL_Buffer b;
  int i;
  luaL_checkudata(L, 1, LG_DEVICE_MT);
  lua_getiuservalue(L, 1, 3);
  luaL_buffinit(L, &b);
  for (i = 0; order[i] != NULL; i++) {
    const char *k = order[i];
    lua_getfield(L, 2, k);
    if (strstr(k, "_size") && lua_isinteger(L, -1) && strcmp(k, "max_work_group_size") != 0) {
      char mem[32];
      human_bytes(mem, sizeof mem, (cl_ulong)lua_tointeger(L, -1));
      push_key(L, k);
      lua_pushfstring(L, "%s (%I bytes)\n", mem, lua_tointeger(L, -2));
      lua_concat(L, 2);
    } else if (lua_istable(L, -1) && strcmp(k, "preferred_vector_width") == 0) {
      push_key(L, k);
      lua_getfield(L, -2, "char");  lua_getfield(L, -3, "short"); lua_getfield(L, -4, "int");
      lua_getfield(L, -5, "long");  lua_getfield(L, -6, "float"); lua_getfield(L, -7, "double");
      lua_pushfstring(L, "char %d short %d int %d long %d float %d double %d\n",
                      (int)lua_tointeger(L, -6), (int)lua_tointeger(L, -5),
                      (int)lua_tointeger(L, -4), (int)lua_tointeger(L, -3),
                      (int)lua_tointeger(L, -2), (int)lua_tointeger(L, -1));
      lua_replace(L, -7);
      lua_pop(L, 5);
      lua_concat(L, 2);
    } else if (lua_istable(L, -1)) {
      int j, n = (int)lua_rawlen(L, -1);
      const char *sep = strcmp(k, "extensions") == 0 ? " " : ", ";
      push_key(L, k);
      for (j = 1; j <= n; j++) {
        lua_rawgeti(L, -2, j);
        lua_pushstring(L, lg_tolstring(L, -1));
        lua_remove(L, -2);
        lua_remove(L, -2);
        if (j < n) lua_pushstring(L, sep);
        lua_concat(L, j < n ? 3 : 2);
      }
      lua_pushliteral(L, "\n");
      lua_concat(L, 2);
    } else {
      lg_tolstring(L, -1);
      push_key(L, k);
      lua_insert(L, -2);
      lua_pushliteral(L, "\n");
      lua_concat(L, 3);
    }
    lua_remove(L, -2);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  lua_pushlstring(L, lua_tostring(L, -1), lua_rawlen(L, -1) - 1);   /* no final newline */
  return 1;
}

static int dev_eq(lua_State *L) {
  lua_pushboolean(L, lg_testdevice(L, 1) == lg_testdevice(L, 2));
  return 1;
}

void lg_push_platform(lua_State *L, cl_platform_id id) {
  cl_device_id dids[64];
  cl_uint nd = 0, j;
  lua_createtable(L, 0, 6);
  lg_push_platform_string(L, id, CL_PLATFORM_NAME);    lua_setfield(L, -2, "name");
  lg_push_platform_string(L, id, CL_PLATFORM_VENDOR);  lua_setfield(L, -2, "vendor");
  lg_push_platform_string(L, id, CL_PLATFORM_VERSION); lua_setfield(L, -2, "version");
  lg_push_platform_string(L, id, CL_PLATFORM_PROFILE); lua_setfield(L, -2, "profile");
  lg_push_platform_string(L, id, CL_PLATFORM_EXTENSIONS);
  lg_split_words(L);
  lua_setfield(L, -2, "extensions");
  lua_newtable(L);
  if (clGetDeviceIDs(id, CL_DEVICE_TYPE_ALL, 64, dids, &nd) == CL_SUCCESS) {
    if (nd > 64) nd = 64;
    for (j = 0; j < nd; j++) {
      lg_push_device(L, dids[j]);
      lua_rawseti(L, -2, (lua_Integer)j + 1);
    }
  }
  lua_setfield(L, -2, "devices");
  luaL_setmetatable(L, LG_PLATFORM_MT);
}

/* gpu.platforms(): { Platform, ... }, tables with their devices. */
static int mod_platforms(lua_State *L) {
  cl_uint n, i;
  cl_platform_id *ids = lg_get_platforms(&n);
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    lg_push_platform(L, ids[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  free(ids);
  return 1;
}

static int plat_tostring(lua_State *L) {
  lua_getfield(L, 1, "name");
  lua_getfield(L, 1, "version");
  lua_pushfstring(L, LG_PLATFORM_MT ": %s (%s)", lua_tostring(L, -2), lua_tostring(L, -1));
  return 1;
}

static const luaL_Reg platform_meta[] = {
  {"__tostring", plat_tostring}, {NULL, NULL}
};

static const luaL_Reg device_methods[] = {
  {"summary", dev_summary}, {NULL, NULL}
};

static int dev_released(lua_State *L) {
  lg_Device *d = luaL_checkudata(L, 1, LG_DEVICE_MT);
  lua_pushboolean(L, d->context == NULL || d->context->ctx == NULL);
  return 1;
}

static const luaL_Reg device_meta[] = {
  {"__released", dev_released}, {"__index", dev_index}, {"__tostring", dev_tostring},
  {"__eq", dev_eq}, {NULL, NULL}
};

static const luaL_Reg module_functions[] = {
  {"devices", mod_devices}, {"device", mod_device}, {"platforms", mod_platforms}, {NULL, NULL}
};

void lg_open_device(lua_State *L) {
  luaL_newmetatable(L, LG_PLATFORM_MT);      /* plain tables with a __tostring */
  luaL_setfuncs(L, platform_meta, 0);
  lua_pop(L, 1);
  lg_newclass(L, LG_DEVICE_MT, device_methods, device_meta);
  lg_class_fields(L, LG_DEVICE_MT, lg_device_field_names);
  luaL_setfuncs(L, module_functions, 0);
}

