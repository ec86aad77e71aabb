/*
** map.c: zero-copy mapping. b:map(mode [, first [, last]] [, opts]) maps
** elements first..last of a buffer (or view) into host memory and returns
** a host array aliasing the mapping: on CPUs and integrated GPUs nothing is
** copied. b:unmap(a [, opts]) enqueues the unmap and returns its Event;
** from then on any use of a (or of a:sub views of it) raises.
**
** The array (uservalues: 1 the Mapping, 2 the Buffer) points at the
** Mapping's flag (lg_Array.gone), which unmap sets and array.c checks. The
** Mapping retains the cl_mem and the queue, so an array collected still
** mapped is unmapped by the Mapping's __gc whatever was finalized first.
**
** With {blocking = false} the map is enqueued and its Event returned beside
** the array: the array's memory is the mapping's from the start, its
** contents are the buffer's once the Event completes. The Event keeps the
** buffer, the Mapping and the queue; the Mapping retains the map's cl_event,
** which every unmap of it (b:unmap, the __gc) waits for, so an unmap never
** overtakes its map, even on an out-of-order queue or another queue.
**
** The whole of an empty buffer maps to an empty array: nothing is mapped
** (OpenCL maps no 0 bytes); a marker stands in for the map and the unmap,
** as for empty transfers.
*/
#include <string.h>

#include "internal.h"

#define MAPPING_MT "luagpu.Mapping"

typedef struct Mapping {
  int gone;                    /* unmapped (or never mapped) */
  cl_command_queue q;          /* retained */
  cl_mem mem;                  /* retained: the root buffer's */
  void *ptr;                   /* NULL: an empty buffer's (nothing mapped) */
  cl_event mapped;             /* retained: the map command (non-blocking maps only) */
} Mapping;

static int mapping_gc(lua_State *L) {
  Mapping *m = lua_touserdata(L, 1);
  if (!m->gone && m->ptr != NULL && m->q != NULL) {
    cl_event ev = NULL;
    if (clEnqueueUnmapMemObject(m->q, m->mem, m->ptr, m->mapped != NULL, &m->mapped,
                                &ev) == CL_SUCCESS) {
      clFlush(m->q);
      clReleaseEvent(ev);
    }
  }
  m->gone = 1;
  if (m->mapped != NULL) clReleaseEvent(m->mapped);
  m->mapped = NULL;
  if (m->q != NULL) clReleaseCommandQueue(m->q);
  if (m->mem != NULL) clReleaseMemObject(m->mem);
  m->q = NULL;
  m->mem = NULL;
  return 0;
}

static const char *const mode_names[] = {"read", "write", "read_write", "discard", NULL};
static const cl_map_flags mode_flags[] = {
  CL_MAP_READ, CL_MAP_WRITE, CL_MAP_READ | CL_MAP_WRITE, CL_MAP_WRITE_INVALIDATE_REGION
};

/* The data of the array of an empty mapping: no byte of it is read. */
static const char empty_data[1];

static lua_Integer position(lua_State *L, int idx, int argno, lua_Integer n) {
  int ok;
  lua_Integer v = lua_tointegerx(L, idx, &ok);
  if (!ok)
    lg_argerror(L, "buffer:map", argno, "expected an integer, got %s", lg_tolstring(L, idx));
  return v < 0 ? v + n + 1 : v;
}

/* b:map(mode [, first [, last]] [, opts]): blocks until mapped; returns the
** host array (the buffer's shape when the whole of it is mapped). With
** opts.blocking false, returns the array and the Event of the map (whose
** wait() gives the array too). */
static int buf_map(lua_State *L) {
  static const char *const fn = "buffer:map";
  static const char *const map_options[] = {"wait", "queue", "blocking", NULL};
  lg_Buffer *b = lg_checkbuffer(L, 1);
  lua_Integer n = (lua_Integer)b->count, first = 1, last = n;
  size_t esize = lg_type_size(b->type);
  const char *mode = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : NULL;
  int i, optsidx = 3, whole, blocking = 1, qidx, midx, keep[3], empty;
  cl_event ev = NULL;
  lg_Opts o;
  Mapping *m;
  lg_Array *a;
  cl_int err;
  void *ptr;
  lg_check_nul(L, 2, fn, 1, "the mode");
  for (i = 0; mode != NULL && lua_type(L, 2) == LUA_TSTRING && mode_names[i]; i++)
    if (strcmp(mode, mode_names[i]) == 0) break;
  if (mode == NULL || lua_type(L, 2) != LUA_TSTRING || mode_names[i] == NULL)
    lg_argerror(L, fn, 1, "expected \"read\", \"write\", \"read_write\" or \"discard\", got %s",
                lua_type(L, 2) == LUA_TSTRING ? lua_pushfstring(L, "\"%s\"", mode)
                                              : luaL_typename(L, 2));
  if (lua_type(L, 3) == LUA_TNUMBER) {
    first = position(L, 3, 2, n);
    optsidx = 4;
    if (lua_type(L, 4) == LUA_TNUMBER) {
      last = position(L, 4, 3, n);
      optsidx = 5;
    }
  }
  empty = n == 0 && optsidx == 3;   /* the whole of an empty buffer, no positions given */
  if (!empty && (first < 1 || first > last || last > n))
    lg_error(L, fn, "expected 1 <= first <= last <= %I, got first = %I, last = %I "
             "(negative positions count from the end)", n, first, last);
  if (b->access == LG_IN && (mode_flags[i] & CL_MAP_READ))
    lg_error(L, fn, "the buffer has access \"in\" (host to device only): it cannot be "
             "mapped for \"%s\" (map it for \"write\" or \"discard\")", mode);
  if (b->access == LG_OUT && i != 0)
    lg_error(L, fn, "the buffer has access \"out\" (device to host only): it cannot be "
             "mapped for \"%s\" (map it for \"read\")", mode);
  if (!lua_isnoneornil(L, optsidx) && !lua_istable(L, optsidx))
    lg_typeerror(L, fn, optsidx - 1, optsidx, "an options table {wait =, queue =, blocking =}");
  lua_settop(L, optsidx);
  lg_checkoptions(L, optsidx, fn, optsidx - 1, map_options);
  if (lua_istable(L, optsidx)) {
    int ty = lua_getfield(L, optsidx, "blocking");
    if (ty != LUA_TNIL && ty != LUA_TBOOLEAN)
      lg_argerror(L, fn, optsidx - 1, "blocking: expected a boolean, got %s",
                  luaL_typename(L, -1));
    blocking = ty == LUA_TNIL || lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  lua_getiuservalue(L, 1, 1);
  lg_getopts(L, optsidx, -1, fn, optsidx - 1, &o);
  qidx = lua_gettop(L) - 1;
  m = lua_newuserdatauv(L, sizeof *m, 0);
  memset(m, 0, sizeof *m);
  m->gone = 1;
  luaL_setmetatable(L, MAPPING_MT);
  if (!lg_buffer_live(b)) lg_error(L, fn, "attempt to use a released buffer");
  if (o.queue->q == NULL) lg_error(L, fn, "attempt to use a released queue");
  midx = lua_gettop(L);
  lg_buffer_written(b);        /* what the host writes lands at the unmap: counted there too */
  if (empty) {
    ptr = NULL;
    err = clEnqueueMarkerWithWaitList(o.queue->q, o.nwait, o.wait, &ev);
    if (err != CL_SUCCESS) lg_clerror(L, "clEnqueueMarkerWithWaitList", err, NULL);
    if (blocking) {            /* as a blocking map: after the wait list */
      err = clWaitForEvents(1, &ev);
      clReleaseEvent(ev);
      ev = NULL;
      if (err != CL_SUCCESS) lg_clerror(L, "clWaitForEvents", err, NULL);
    }
  } else {
    ptr = clEnqueueMapBuffer(o.queue->q, b->root->mem, blocking ? CL_TRUE : CL_FALSE,
                             mode_flags[i], (b->offset + (size_t)(first - 1)) * esize,
                             (size_t)(last - first + 1) * esize, o.nwait, o.wait,
                             blocking ? NULL : &ev, &err);
    if (err != CL_SUCCESS) lg_clerror(L, "clEnqueueMapBuffer", err, NULL);
  }
  if (ev != NULL) {            /* the Mapping owns one reference, the Event below the other */
    clRetainEvent(ev);
    m->mapped = ev;
  }
  clRetainCommandQueue(o.queue->q);
  clRetainMemObject(b->root->mem);
  m->q = o.queue->q;
  m->mem = b->root->mem;
  m->ptr = ptr;
  m->gone = 0;
  a = lua_newuserdatauv(L, sizeof *a, 2);
  memset(a, 0, sizeof *a);
  a->type = b->type;
  a->count = empty ? 0 : (size_t)(last - first + 1);
  a->nscalars = a->count * (size_t)b->type.width;
  whole = a->count == b->count && b->ndim >= 1;
  a->ndim = whole ? b->ndim : 1;
  if (whole) memcpy(a->shape, b->shape, sizeof(size_t) * (size_t)b->ndim);
  else a->shape[0] = a->count;
  a->bytes = a->count * esize;
  a->data = empty ? (void *)empty_data : ptr;
  a->gone = &m->gone;
  lua_pushvalue(L, -2);
  lua_setiuservalue(L, -2, 1);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 2);
  luaL_setmetatable(L, LG_ARRAY_MT);
  if (blocking) {
    lg_after_wait(L);   /* callbacks, as after a wait */
    return 1;
  }
  keep[0] = 1;
  keep[1] = midx;
  keep[2] = qidx;
  lg_pushevent(L, ev, "map", keep, 3);
  lg_event_setresult(L, -1, -2, LG_RESULT_VALUE);
  return 2;
}

/* b:unmap(a [, opts]): a is what b:map returned; an Event. */
static int buf_unmap(lua_State *L) {
  static const char *const fn = "buffer:unmap";
  static const char *const unmap_options[] = {"wait", "queue", NULL};
  lg_Buffer *b = lg_checkbuffer(L, 1);
  lg_Array *a = luaL_testudata(L, 2, LG_ARRAY_MT);
  Mapping *m = NULL;
  lg_Opts o;
  cl_event ev = NULL, *wait;
  cl_int err;
  cl_uint nwait;
  int keep[3], qidx;
  if (a == NULL) return lg_typeerror(L, fn, 1, 2, "a host array of buffer:map");
  if (lua_getiuservalue(L, 2, 1) == LUA_TUSERDATA) m = luaL_testudata(L, -1, MAPPING_MT);
  lua_pop(L, 1);
  if (m == NULL || a->gone != &m->gone)
    lg_argerror(L, fn, 1, "expected a host array of buffer:map, got another one");
  if (m->gone) lg_argerror(L, fn, 1, "the array was already unmapped");
  if (m->mem != b->root->mem)
    lg_argerror(L, fn, 1, "the array maps another buffer");
  if (!lua_isnoneornil(L, 3) && !lua_istable(L, 3))
    lg_typeerror(L, fn, 2, 3, "an options table {wait =, queue =}");
  lua_settop(L, 3);
  lg_checkoptions(L, 3, fn, 2, unmap_options);
  lua_getiuservalue(L, 1, 1);
  lg_getopts(L, 3, -1, fn, 2, &o);
  qidx = lua_gettop(L) - 1;
  if (o.queue->q == NULL) lg_error(L, fn, "attempt to use a released queue");
  nwait = o.nwait + (m->mapped != NULL);
  wait = lua_newuserdatauv(L, sizeof *wait * (nwait ? nwait : 1), 0);
  if (o.nwait > 0) memcpy(wait, o.wait, sizeof *wait * o.nwait);
  if (m->mapped != NULL) wait[o.nwait] = m->mapped;
  lg_buffer_written(b);
  if (m->ptr == NULL)          /* an empty buffer's: nothing was mapped */
    err = clEnqueueMarkerWithWaitList(o.queue->q, nwait, nwait ? wait : NULL, &ev);
  else
    err = clEnqueueUnmapMemObject(o.queue->q, m->mem, m->ptr, nwait, nwait ? wait : NULL, &ev);
  lua_pop(L, 1);
  if (err != CL_SUCCESS)
    lg_clerror(L, m->ptr == NULL ? "clEnqueueMarkerWithWaitList" : "clEnqueueUnmapMemObject",
               err, NULL);
  m->gone = 1;
  keep[0] = 1;
  keep[1] = 2;
  keep[2] = qidx;
  lg_pushevent(L, ev, "unmap", keep, 3);
  return 1;
}

static const luaL_Reg map_methods[] = {
  {"map", buf_map}, {"unmap", buf_unmap}, {NULL, NULL}
};

void lg_open_map(lua_State *L) {
  luaL_newmetatable(L, MAPPING_MT);
  lua_pushcfunction(L, mapping_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lg_add_methods(L, LG_BUFFER_MT, map_methods);
}
