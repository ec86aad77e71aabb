/*
** sync.c: how commands are ordered. The options table every enqueueing
** call takes, {wait = {ev, ...}, queue = q}, read into a queue and a wait
** list; dev:run's trailing events; and the commands that are nothing but a
** wait list, q:marker and q:barrier.
*/
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define WAITLIST_MT "luagpu.WaitList"

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
  cl_int st = CL_COMPLETE;
  if (e == NULL) {
    const char *got = luaL_getmetafield(L, idx, "__name") == LUA_TSTRING
                          ? lua_tostring(L, -1) : luaL_typename(L, idx);
    lg_error(L, fn, "%s: expected a " LG_EVENT_MT ", got %s", where, got);
  }
  if (e->ev == NULL) lg_error(L, fn, "%s: attempt to use a released event", where);
  if (clGetEventInfo(e->ev, CL_EVENT_CONTEXT, sizeof ectx, &ectx, NULL) == CL_SUCCESS &&
      ectx != ctx)
    lg_error(L, fn, "%s: the event belongs to another context (another "
             "platform's device, or a sub-device of dev:partition)",
             where);
  if (clGetEventInfo(e->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL) ==
          CL_SUCCESS && st < 0) {   /* drivers differ on what follows: refuse it here */
    if (e->user && lua_getiuservalue(L, idx, 2) == LUA_TSTRING)   /* ev:fail(msg) */
      lg_error_tail(L, -1, fn, "%s: the user event it waits for failed: ", where);
    lg_error(L, fn, "%s: the %s command it waits for failed (%s)", where, e->command,
             lg_clerror_name(st));
  }
  /* a command on another queue waits for it: make sure it was submitted */
  if (e->queue != NULL && e->queue->q != NULL) clFlush(e->queue->q);
  clRetainEvent(e->ev);
  w->ev[w->n++] = e->ev;
}

/* Reads the value at idx (nil, an Event, or a list of Events) and then the
** Events at stack indices first..last (dev:run's trailing events; none when
** last < first) into one wait list: pushes the list's userdata, or nil when
** it is empty. */
static void read_wait(lua_State *L, int idx, int first, int last, cl_context ctx,
                      const char *fn, int argno, lg_Opts *o) {
  WaitList *w;
  char where[64];
  lua_Integer i, n = 0, extra = last >= first ? last - first + 1 : 0;
  int list;
  o->nwait = 0;
  o->wait = NULL;
  idx = lua_absindex(L, idx);
  /* a list is read raw: a __len or __index of the user's cannot lie about it */
  list = lua_istable(L, idx) && !lg_testevent(L, idx);
  if (list) n = (lua_Integer)lua_rawlen(L, idx);
  else if (!lua_isnil(L, idx)) n = 1;
  if (n > LG_MAX_EVENTS)
    lg_argerror(L, fn, argno, "wait: %I events are too many (at most %d)", n, LG_MAX_EVENTS);
  if (n + extra == 0) {
    lua_pushnil(L);
    return;
  }
  w = push_waitlist(L, (int)(n + extra));
  for (i = 1; i <= n; i++) {
    if (list) {
      snprintf(where, sizeof where, "argument #%d: wait[%d]", argno, (int)i);
      lua_rawgeti(L, idx, i);
    } else {
      snprintf(where, sizeof where, "argument #%d: wait", argno);
      lua_pushvalue(L, idx);
    }
    add_event(L, w, -1, ctx, fn, where);
    lua_pop(L, 1);
  }
  for (i = first; i <= last; i++) {
    snprintf(where, sizeof where, "argument #%d", (int)i - 1);
    add_event(L, w, (int)i, ctx, fn, where);
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
    read_wait(L, arg, 0, -1, q->dev->ctx, fn, 1, o);
    return;
  }
  if (!lua_istable(L, arg))
    lg_typeerror(L, fn, 1, arg, "an options table {wait = {...}}");
  lg_checkoptions(L, arg, fn, 1, wait_option);
  lua_getfield(L, arg, "wait");
  read_wait(L, -1, 0, -1, q->dev->ctx, fn, 1, o);
}

void lg_getopts_events(lua_State *L, int arg, int devidx, int first, int last,
                       const char *fn, int argno, lg_Opts *o) {
  lg_Device *d;
  int top;
  arg = lua_absindex(L, arg);
  devidx = lua_absindex(L, devidx);
  if (last >= first) {
    first = lua_absindex(L, first);
    last = lua_absindex(L, last);
  }
  d = lg_checkdevice(L, devidx);
  if (lua_isnoneornil(L, arg)) {
    lg_push_default_queue(L, devidx);
    o->queue = lua_touserdata(L, -1);
    lua_pushnil(L);
    read_wait(L, -1, first, last, d->ctx, fn, argno, o);
    lua_remove(L, -2);
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
  read_wait(L, -1, first, last, d->ctx, fn, argno, o);
  lua_remove(L, -2);   /* the wait field's value */
}

void lg_getopts(lua_State *L, int arg, int devidx, const char *fn, int argno, lg_Opts *o) {
  lg_getopts_events(L, arg, devidx, 0, -1, fn, argno, o);
}

/* ----------------------------------------------------- markers, barriers */

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
  if (lg_tracing(L))
    lg_trace_add(L, q->q, ev, barrier ? "barrier" : "marker", NULL, 0, NULL, NULL, 0, o.nwait,
                 o.wait);
  keep[0] = 1;
  lg_pushevent(L, ev, barrier ? "barrier" : "marker", keep, 1);
  return 1;
}

static int q_marker(lua_State *L) { return q_sync(L, 0); }
static int q_barrier(lua_State *L) { return q_sync(L, 1); }

static const luaL_Reg queue_methods[] = {
  {"marker", q_marker}, {"barrier", q_barrier}, {NULL, NULL}
};

void lg_open_sync(lua_State *L) {
  luaL_newmetatable(L, WAITLIST_MT);
  lua_pushcfunction(L, wl_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lg_add_methods(L, LG_QUEUE_MT, queue_methods);
}
