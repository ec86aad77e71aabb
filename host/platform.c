/*
** platform.c: OpenCL platforms. gpu.platforms() and the small queries that
** device.c shares: the platform list, platform strings, word lists.
*/
#include <stdlib.h>

#include "internal.h"

/* Returns the platform ids (malloc'd; *n set), or NULL with *n = 0 when
** there is no platform at all. */
cl_platform_id *lg_get_platforms(cl_uint *n) {
  cl_platform_id *ids;
  *n = 0;
  if (clGetPlatformIDs(0, NULL, n) != CL_SUCCESS || *n == 0) { *n = 0; return NULL; }
  ids = malloc(sizeof(cl_platform_id) * *n);
  if (ids == NULL || clGetPlatformIDs(*n, ids, NULL) != CL_SUCCESS) {
    free(ids);
    *n = 0;
    return NULL;
  }
  return ids;
}

void lg_push_platform_string(lua_State *L, cl_platform_id p, cl_platform_info what) {
  char buf[2048];
  if (clGetPlatformInfo(p, what, sizeof buf, buf, NULL) != CL_SUCCESS) buf[0] = '\0';
  buf[sizeof buf - 1] = '\0';
  lua_pushstring(L, buf);
}

/* Pushes a list of the space-separated words of the string on top (replacing it). */
void lg_split_words(lua_State *L) {
  const char *s = lua_tostring(L, -1);
  int i = 0;
  lua_newtable(L);
  while (s != NULL && *s) {
    const char *e;
    while (*s == ' ') s++;
    e = s;
    while (*e && *e != ' ') e++;
    if (e > s) {
      lua_pushlstring(L, s, (size_t)(e - s));
      lua_rawseti(L, -2, ++i);
    }
    s = e;
  }
  lua_remove(L, -2);
}

/* gpu.platforms(): { Platform, ... }, tables with their devices. */
static int mod_platforms(lua_State *L) {
  cl_uint n, i;
  cl_platform_id *ids = lg_get_platforms(&n);
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    lua_createtable(L, 0, 6);
    lg_push_platform_string(L, ids[i], CL_PLATFORM_NAME);    lua_setfield(L, -2, "name");
    lg_push_platform_string(L, ids[i], CL_PLATFORM_VENDOR);  lua_setfield(L, -2, "vendor");
    lg_push_platform_string(L, ids[i], CL_PLATFORM_VERSION); lua_setfield(L, -2, "version");
    lg_push_platform_string(L, ids[i], CL_PLATFORM_PROFILE); lua_setfield(L, -2, "profile");
    lg_push_platform_string(L, ids[i], CL_PLATFORM_EXTENSIONS);
    lg_split_words(L);
    lua_setfield(L, -2, "extensions");
    {
      cl_device_id dids[64];
      cl_uint nd = 0, j;
      lua_newtable(L);
      if (clGetDeviceIDs(ids[i], CL_DEVICE_TYPE_ALL, 64, dids, &nd) == CL_SUCCESS) {
        if (nd > 64) nd = 64;
        for (j = 0; j < nd; j++) {
          lg_push_device(L, dids[j]);
          lua_rawseti(L, -2, (lua_Integer)j + 1);
        }
      }
      lua_setfield(L, -2, "devices");
    }
    luaL_setmetatable(L, LG_PLATFORM_MT);
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
  {"__tostring", plat_tostring},
  {NULL, NULL}
};

void lg_open_platform(lua_State *L) {
  luaL_newmetatable(L, LG_PLATFORM_MT);
  luaL_setfuncs(L, platform_meta, 0);
  lua_pop(L, 1);
  lua_pushcfunction(L, mod_platforms);
  lua_setfield(L, -2, "platforms");
}
