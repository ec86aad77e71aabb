/*
** context.c: the per-platform OpenCL contexts that the devices of a
** platform share (one luagpu.Context each, cached in the registry), and the
** accounting that runs the collector when device memory piles up.
*/
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CONTEXT_CACHE "luagpu.context_cache"   /* cl_platform_id -> Context */

static int ctx_gc(lua_State *L) {
  lg_Context *c = luaL_checkudata(L, 1, LG_CONTEXT_MT);
  if (c->ctx != NULL) clReleaseContext(c->ctx);
  c->ctx = NULL;
  return 0;
}

/* Pushes the Context of platform p, creating it over all its devices. */
lg_Context *lg_push_context(lua_State *L, cl_platform_id p) {
  lg_Context *c;
  cl_uint n = 0;
  cl_device_id *ids;
  cl_int err;
  cl_context_properties props[3];
  luaL_getsubtable(L, LUA_REGISTRYINDEX, CONTEXT_CACHE);
  if (lua_rawgetp(L, -1, p) == LUA_TUSERDATA) {
    lua_remove(L, -2);
    return lua_touserdata(L, -1);
  }
  lua_pop(L, 1);
  c = lua_newuserdatauv(L, sizeof *c, 0);
  memset(c, 0, sizeof *c);
  c->platform = p;
  luaL_setmetatable(L, LG_CONTEXT_MT);
  err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, NULL, &n);
  if (err != CL_SUCCESS) lg_clerror(L, "clGetDeviceIDs", err, NULL);
  ids = lua_newuserdatauv(L, sizeof(cl_device_id) * n, 0);
  err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, ids, NULL);
  if (err != CL_SUCCESS) lg_clerror(L, "clGetDeviceIDs", err, NULL);
  props[0] = CL_CONTEXT_PLATFORM;
  props[1] = (cl_context_properties)p;
  props[2] = 0;
  c->ctx = clCreateContext(props, n, ids, NULL, NULL, &err);
  if (c->ctx == NULL) lg_clerror(L, "clCreateContext", err, NULL);
  lua_pop(L, 1);                               /* ids */
  lua_pushvalue(L, -1);
  lua_rawsetp(L, -3, p);
  lua_remove(L, -2);
  return c;
}

void lg_account_alloc(lua_State *L, lg_Context *c, size_t bytes) {
  c->bytes_since_gc += bytes;
  if (c->bytes_since_gc >= c->gc_threshold) {
    c->bytes_since_gc = 0;
    lua_gc(L, LUA_GCCOLLECT, 0);
  } else if (bytes >= 1024 && lua_gc(L, LUA_GCISRUNNING)) {
    /* count device bytes as Lua allocation debt, so the collector's pace
    ** follows them too: dropped buffers go within about a cycle of the Lua
    ** heap's size, not only at the threshold (issue 7: flat memory) */
    size_t kb = bytes >> 10;
    lua_gc(L, LUA_GCSTEP, kb > (1 << 20) ? 1 << 20 : (int)kb);
  }
}

lg_Context *lg_push_borrowed_context(lua_State *L, cl_context ctx, cl_platform_id p) {
  /* released state until retained; its user value: what must outlive the cl_context (the
  ** sub-device ids of partition.c), finalized after it */
  lg_Context *c = lua_newuserdatauv(L, sizeof *c, 1);
  memset(c, 0, sizeof *c);
  c->platform = p;
  luaL_setmetatable(L, LG_CONTEXT_MT);
  clRetainContext(ctx);
  c->ctx = ctx;
  return c;
}

static const luaL_Reg context_meta[] = {
  {"__gc", ctx_gc}, {NULL, NULL}
};

/* Makes the state's context first (state.c), so that its finalizer runs
** after those of everything luagpu makes. */
void lg_open_context(lua_State *L) {
  lg_state(L);
  lg_newclass(L, LG_CONTEXT_MT, NULL, context_meta);
}
