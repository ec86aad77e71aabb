/*
** queue.c: command queues (dev:queue, the device's default queue),
** q:finish/flush/marker/barrier, and the options every enqueueing call
** takes: {wait = {ev, ...}, queue = q}, turned into a queue and a wait list.
*/
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define WAITLIST_MT "luagpu.WaitList"

/* The name under which the running C function is a method of the object
** at idx (pushed), or NULL. */
static const char *running_method(lua_State *L, int idx) {
  lua_Debug ar;
  idx = lua_absindex(L, idx);
  if (!lua_getstack(L, 0, &ar) || !lua_getinfo(L, "f", &ar)) return NULL;
  if (lua_getmetatable(L, idx) && lua_getfield(L, -1, "__methods") == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      if (lua_rawequal(L, -1, -5) && lua_type(L, -2) == LUA_TSTRING) {
        lua_pop(L, 1);
        return lua_tostring(L, -1);
      }
      lua_pop(L, 1);
    }
  }
  return NULL;
}

int lg_released_error(lua_State *L, int idx, const char *what) {
  const char *name = running_method(L, idx);
  if (name != NULL)
    return luaL_error(L, "luagpu: %s:%s: attempt to use a released %s", what, name, what);
  return luaL_error(L, "luagpu: attempt to use a released %s", what);
}

/* ------------------------------------------------------------ queues */

lg_Queue *lg_testqueue(lua_State *L, int idx) {
  return luaL_testudata(L, idx, LG_QUEUE_MT);
}

lg_Queue *lg_checkqueue(lua_State *L, int idx) {
  lg_Queue *q = luaL_checkudata(L, idx, LG_QUEUE_MT);
  if (q->q == NULL) lg_released_error(L, idx, "queue");
  return q;
}

/* Pushes a Queue userdata in the released state, holding the device. */
static lg_Queue *push_queue(lua_State *L, int devidx) {
  lg_Device *d = lg_checkdevice(L, devidx);
  lg_Queue *q;
  devidx = lua_absindex(L, devidx);
  q = lua_newuserdatauv(L, sizeof *q, 1);
  memset(q, 0, sizeof *q);
  q->dev = d;
  luaL_setmetatable(L, LG_QUEUE_MT);
  lua_pushvalue(L, devidx);
  lua_setiuservalue(L, -2, 1);
  return q;
}

lg_Queue *lg_newqueue(lua_State *L, int devidx, int profiling, int out_of_order) {
  cl_command_queue_properties props = 0;
  cl_int err = CL_SUCCESS;
  lg_Queue *q;
  int attempt;
  devidx = lua_absindex(L, devidx);
  q = push_queue(L, devidx);
  if (profiling) props |= CL_QUEUE_PROFILING_ENABLE;
  if (out_of_order) props |= CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
  for (attempt = 0; attempt < 2; attempt++) {
    q->q = clCreateCommandQueue(q->dev->ctx, q->dev->id, props, &err);
    if (q->q != NULL || !lg_is_oom(err)) break;
    lua_gc(L, LUA_GCCOLLECT, 0);
  }
  if (q->q == NULL) {
    if (err == CL_INVALID_QUEUE_PROPERTIES || err == CL_INVALID_VALUE)
      lg_clerror(L, "clCreateCommandQueue", err, "%s does not support %s queues",
                 q->dev->name, out_of_order ? "out-of-order" : "profiling");
    lg_clerror(L, "clCreateCommandQueue", err, NULL);
  }
  q->profiling = profiling != 0;
  q->out_of_order = out_of_order != 0;
  return q;
}

lg_Queue *lg_wrapqueue(lua_State *L, int devidx, cl_command_queue cq) {
  cl_command_queue_properties props = 0;
  lg_Queue *q;
  devidx = lua_absindex(L, devidx);
  q = push_queue(L, devidx);
  q->q = cq;
  q->borrowed = 1;
  clGetCommandQueueInfo(cq, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
  q->profiling = (props & CL_QUEUE_PROFILING_ENABLE) != 0;
  q->out_of_order = (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0;
  return q;
}

/* The device's default queue lives as long as the device: an explicit
** release of it does nothing, only the collector (at lua_close) frees it. */
static int q_free(lua_State *L, int collecting) {
  lg_Queue *q = luaL_checkudata(L, 1, LG_QUEUE_MT);
  if (q->q == NULL) return 0;
  if (!collecting && q->dev != NULL && q->dev->queue == q->q) return 0;
  /* the Device (uservalue 1) outlives this call: it must not keep the handle */
  if (q->dev != NULL && q->dev->queue == q->q) q->dev->queue = NULL;
  clReleaseCommandQueue(q->q);   /* flushes: pending commands still complete */
  q->q = NULL;
  return 0;
}

static int q_gc(lua_State *L) { return q_free(L, 1); }
static int q_release(lua_State *L) { return q_free(L, 0); }

static int q_finish(lua_State *L) {
  lg_Queue *q = lg_checkqueue(L, 1);
  cl_int err = clFinish(q->q);
  if (err != CL_SUCCESS) lg_clerror(L, "clFinish", err, NULL);
  return 0;
}

static int q_flush(lua_State *L) {
  lg_Queue *q = lg_checkqueue(L, 1);
  cl_int err = clFlush(q->q);
  if (err != CL_SUCCESS) lg_clerror(L, "clFlush", err, NULL);
  return 0;
}

/* Reads an options table at arg that may hold only `wait`; pushes the
** wait list (see lg_getopts). */
static void marker_opts(lua_State *L, int arg, lg_Queue *q, const char *fn, lg_Opts *o);

/* q:marker{wait=} and q:barrier{wait=}: an Event that completes when the
** waited events (or, without any, every command enqueued before) have. */
static int q_sync(lua_State *L, int barrier) {
  const char *fn = barrier ? "queue:barrier" : "queue:marker";
  lg_Queue *q = lg_checkqueue(L, 1);
  lg_Opts o;
  cl_event ev = NULL;
  cl_int err;
  int keep[1];
  marker_opts(L, 2, q, fn, &o);
  if (q->q == NULL) lg_released_error(L, 1, "queue");   /* by the options' metamethods */
  if (barrier)
    err = clEnqueueBarrierWithWaitList(q->q, o.nwait, o.wait, &ev);
  else
    err = clEnqueueMarkerWithWaitList(q->q, o.nwait, o.wait, &ev);
  if (err != CL_SUCCESS)
    lg_clerror(L, barrier ? "clEnqueueBarrierWithWaitList" : "clEnqueueMarkerWithWaitList",
               err, NULL);
  keep[0] = 1;
  lg_pushevent(L, ev, barrier ? "barrier" : "marker", keep, 1);
  return 1;
}

static int q_marker(lua_State *L) { return q_sync(L, 0); }
static int q_barrier(lua_State *L) { return q_sync(L, 1); }

static int q_index(lua_State *L) {
  lg_Queue *q;
  const char *k;
  if (lg_pushmethod(L, 1, 2)) return 1;
  q = lg_checkqueue(L, 1);
  k = lua_tostring(L, 2);
  if (k == NULL) return 0;
  if (strcmp(k, "device") == 0) lua_getiuservalue(L, 1, 1);
  else if (strcmp(k, "profiling") == 0) lua_pushboolean(L, q->profiling);
  else if (strcmp(k, "out_of_order") == 0) lua_pushboolean(L, q->out_of_order);
  else if (strcmp(k, "default") == 0) lua_pushboolean(L, q->dev->queue == q->q);
  else return 0;
  return 1;
}

static int q_tostring(lua_State *L) {
  lg_Queue *q = luaL_checkudata(L, 1, LG_QUEUE_MT);
  if (q->q == NULL) {
    lua_pushliteral(L, LG_QUEUE_MT " (released)");
    return 1;
  }
  lua_pushfstring(L, LG_QUEUE_MT ": %s%s, profiling %s, on %s (%p)",
                  q->dev->queue == q->q ? "default, " : "",
                  q->out_of_order ? "out-of-order" : "in-order",
                  q->profiling ? "on" : "off", q->dev->name, (void *)q->q);
  return 1;
}

/* ---------------------------------------------------- device methods */

/* dev:queue([{out_of_order = false, profiling = true}]) */
static int dev_queue(lua_State *L) {
  static const char *const keys[] = {"out_of_order", "profiling", NULL};
  int profiling = 1, out_of_order = 0;
  lg_checkdevice(L, 1);
  if (!lua_isnoneornil(L, 2)) {
    if (!lua_istable(L, 2))
      lg_typeerror(L, "dev:queue", 1, 2, "an options table {out_of_order =, profiling =}");
    int i;
    lg_checkoptions(L, 2, "dev:queue", 1, keys);
    for (i = 0; keys[i] != NULL; i++) {
      if (lua_getfield(L, 2, keys[i]) != LUA_TNIL && !lua_isboolean(L, -1))
        lg_argerror(L, "dev:queue", 1, "%s: expected a boolean, got %s", keys[i],
                    luaL_typename(L, -1));
      if (!lua_isnil(L, -1)) *(i == 0 ? &out_of_order : &profiling) = lua_toboolean(L, -1);
      lua_pop(L, 1);
    }
  }
  lua_settop(L, 1);
  lg_newqueue(L, 1, profiling, out_of_order);
  return 1;
}

/* dev:finish(): waits for everything enqueued on the default queue. */
static int dev_finish(lua_State *L) {
  lg_Queue *q;
  cl_int err;
  lg_checkdevice(L, 1);
  lg_push_default_queue(L, 1);
  q = lua_touserdata(L, -1);
  err = clFinish(q->q);
  if (err != CL_SUCCESS) lg_clerror(L, "clFinish", err, NULL);
  return 0;
}

/* dev:default_queue(): the Queue that commands without {queue =} run on. */
static int dev_default_queue(lua_State *L) {
  lg_checkdevice(L, 1);
  lg_push_default_queue(L, 1);
  return 1;
}

static int dev_flush(lua_State *L) {
  lg_Queue *q;
  cl_int err;
  lg_checkdevice(L, 1);
  lg_push_default_queue(L, 1);
  q = lua_touserdata(L, -1);
  err = clFlush(q->q);
  if (err != CL_SUCCESS) lg_clerror(L, "clFlush", err, NULL);
  return 0;
}

/* -------------------------------------------------------- wait lists */

/* A wait list: the events, each retained, so that releasing an Event while
** the list is being built (or used) cannot pull its cl_event away. */
typedef struct WaitList {
  cl_uint n;
  cl_event ev[1];
} WaitList;

static int wl_gc(lua_State *L) {
  WaitList *w = lua_touserdata(L, 1);
  cl_uint i;
  for (i = 0; i < w->n; i++) clReleaseEvent(w->ev[i]);
  w->n = 0;
  return 0;
}

static WaitList *push_waitlist(lua_State *L, int n) {
  WaitList *w = lua_newuserdatauv(L, sizeof(WaitList) + sizeof(cl_event) * (size_t)n, 0);
  w->n = 0;
  luaL_setmetatable(L, WAITLIST_MT);
  return w;
}

/* Adds the Event at idx to w after checking it; where names it in errors. */
static void add_event(lua_State *L, WaitList *w, int idx, cl_context ctx, const char *fn,
                      const char *where) {
  lg_Event *e = lg_testevent(L, idx);
  cl_context ectx = NULL;
  if (e == NULL) {
    const char *got = luaL_getmetafield(L, idx, "__name") == LUA_TSTRING
                          ? lua_tostring(L, -1) : luaL_typename(L, idx);
    lg_error(L, fn, "%s: expected a " LG_EVENT_MT ", got %s", where, got);
  }
  if (e->ev == NULL) lg_error(L, fn, "%s: attempt to use a released event", where);
  if (clGetEventInfo(e->ev, CL_EVENT_CONTEXT, sizeof ectx, &ectx, NULL) == CL_SUCCESS &&
      ectx != ctx)
    lg_error(L, fn, "%s: the event belongs to another context (another platform's device)",
             where);
  /* a command on another queue waits for it: make sure it was submitted */
  if (e->queue != NULL && e->queue->q != NULL) clFlush(e->queue->q);
  clRetainEvent(e->ev);
  w->ev[w->n++] = e->ev;
}

/* Reads the value at idx (nil, an Event, or a list of Events) into a wait
** list: pushes the list's userdata, or nil when it is empty. */
static void read_wait(lua_State *L, int idx, cl_context ctx, const char *fn, int argno,
                      lg_Opts *o) {
  WaitList *w;
  char where[64];
  o->nwait = 0;
  o->wait = NULL;
  idx = lua_absindex(L, idx);
  if (lua_isnil(L, idx)) {
    lua_pushnil(L);
    return;
  }
  if (lua_istable(L, idx) && !lg_testevent(L, idx)) {
    /* a list is read raw: a __len or __index of the user's cannot lie about it */
    lua_Integer i, n = (lua_Integer)lua_rawlen(L, idx);
    if (n == 0) {
      lua_pushnil(L);
      return;
    }
    if (n > LG_MAX_EVENTS)
      lg_argerror(L, fn, argno, "wait: %I events are too many (at most %d)", n, LG_MAX_EVENTS);
    w = push_waitlist(L, (int)n);
    for (i = 1; i <= n; i++) {
      snprintf(where, sizeof where, "argument #%d: wait[%d]", argno, (int)i);
      lua_rawgeti(L, idx, i);
      add_event(L, w, -1, ctx, fn, where);
      lua_pop(L, 1);
    }
  } else {
    snprintf(where, sizeof where, "argument #%d: wait", argno);
    w = push_waitlist(L, 1);
    add_event(L, w, idx, ctx, fn, where);
  }
  o->nwait = w->n;
  o->wait = w->ev;
}

static void marker_opts(lua_State *L, int arg, lg_Queue *q, const char *fn, lg_Opts *o) {
  static const char *const wait_option[] = {"wait", NULL};
  o->queue = q;
  if (lua_isnoneornil(L, arg)) {
    lua_pushnil(L);
    o->nwait = 0;
    o->wait = NULL;
    return;
  }
  if (lg_testevent(L, arg)) {   /* q:marker(ev) reads as q:marker{wait = {ev}} */
    read_wait(L, arg, q->dev->ctx, fn, 1, o);
    return;
  }
  if (!lua_istable(L, arg))
    lg_typeerror(L, fn, 1, arg, "an options table {wait = {...}}");
  lg_checkoptions(L, arg, fn, 1, wait_option);
  lua_getfield(L, arg, "wait");
  read_wait(L, -1, q->dev->ctx, fn, 1, o);
}

void lg_getopts(lua_State *L, int arg, int devidx, const char *fn, int argno, lg_Opts *o) {
  lg_Device *d;
  int top;
  arg = lua_absindex(L, arg);
  devidx = lua_absindex(L, devidx);
  d = lg_checkdevice(L, devidx);
  if (lua_isnoneornil(L, arg)) {
    lg_push_default_queue(L, devidx);
    o->queue = lua_touserdata(L, -1);
    o->nwait = 0;
    o->wait = NULL;
    lua_pushnil(L);
    return;
  }
  if (!lua_istable(L, arg) || lg_testevent(L, arg))
    lg_typeerror(L, fn, argno, arg, "an options table {wait = {...}, queue = q}");
  top = lua_gettop(L);
  if (lua_getfield(L, arg, "queue") == LUA_TNIL) {
    lua_pop(L, 1);
    lg_push_default_queue(L, devidx);
    o->queue = lua_touserdata(L, -1);
  } else {
    lg_Queue *q = lg_testqueue(L, -1);
    if (q == NULL)
      lg_argerror(L, fn, argno, "queue: expected a " LG_QUEUE_MT ", got %s",
                  luaL_getmetafield(L, top + 1, "__name") == LUA_TSTRING
                      ? lua_tostring(L, -1) : luaL_typename(L, top + 1));
    if (q->q == NULL) lg_argerror(L, fn, argno, "queue: attempt to use a released queue");
    if (q->dev->ctx != d->ctx)
      lg_argerror(L, fn, argno, "queue: the queue is on %s, of another context than %s",
                  q->dev->name, d->name);
    o->queue = q;
  }
  lua_getfield(L, arg, "wait");
  read_wait(L, -1, d->ctx, fn, argno, o);
  lua_remove(L, -2);   /* the wait field's value */
}

void lg_push_waitlist(lua_State *L, int first, int last, cl_context ctx,
                      const char *fn, lg_Opts *o) {
  WaitList *w;
  int i;
  char where[64];
  first = lua_absindex(L, first);
  last = lua_absindex(L, last);
  o->nwait = 0;
  o->wait = NULL;
  if (last < first) {
    lua_pushnil(L);
    return;
  }
  w = push_waitlist(L, last - first + 1);
  for (i = first; i <= last; i++) {
    snprintf(where, sizeof where, "argument #%d", i - 1);
    add_event(L, w, i, ctx, fn, where);
  }
  o->nwait = w->n;
  o->wait = w->ev;
}

/* ------------------------------------------------------------- open */

static const luaL_Reg queue_methods[] = {
  {"finish", q_finish},
  {"flush", q_flush},
  {"marker", q_marker},
  {"barrier", q_barrier},
  {"release", q_release},
  {NULL, NULL}
};

static const luaL_Reg queue_meta[] = {
  {"__index", q_index},
  {"__gc", q_gc},
  {"__close", q_release},
  {"__tostring", q_tostring},
  {NULL, NULL}
};

static const luaL_Reg device_methods[] = {
  {"queue", dev_queue},
  {"finish", dev_finish},
  {"flush", dev_flush},
  {"default_queue", dev_default_queue},
  {NULL, NULL}
};

void lg_open_queue(lua_State *L) {
  lg_newclass(L, LG_QUEUE_MT, queue_methods, queue_meta);
  luaL_newmetatable(L, WAITLIST_MT);
  lua_pushcfunction(L, wl_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lg_add_methods(L, LG_DEVICE_MT, device_methods);
}
