/*
** queue.c: command queues: dev:queue, the device's default queue (made on
** first use), q:finish, q:flush, dev:finish, dev:flush, release. How
** commands wait on each other (options, wait lists, markers) is sync.c.
*/
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define QUEUES_KEY "luagpu.queues"   /* weak set of the state's Queues */

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
  if (lua_getfield(L, LUA_REGISTRYINDEX, QUEUES_KEY) == LUA_TTABLE) {
    lua_pushvalue(L, -2);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
  }
  lua_pop(L, 1);
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

/* Whether a new default queue profiles: yes, unless LUAGPU_PROFILING=0. */
static int default_profiling(void) {
  const char *env = getenv("LUAGPU_PROFILING");
  return env == NULL || strcmp(env, "0") != 0;
}

/* The device's default queue: uservalue 2 of the Device, made on first use. */
void lg_push_default_queue(lua_State *L, int devidx) {
  lg_Device *d;
  devidx = lua_absindex(L, devidx);
  d = lg_checkdevice(L, devidx);
  if (lua_getiuservalue(L, devidx, 2) == LUA_TUSERDATA) return;
  lua_pop(L, 1);
  lg_newqueue(L, devidx, default_profiling(), 0);
  lua_pushvalue(L, -1);
  lua_setiuservalue(L, devidx, 2);
  d->queue = ((lg_Queue *)lua_touserdata(L, -1))->q;
}

/* The device's default queue lives as long as the device: an explicit
** release of it does nothing, only the collector (at lua_close) frees it. */
static int q_free(lua_State *L, int collecting) {
  lg_Queue *q = luaL_checkudata(L, 1, LG_QUEUE_MT);
  if (q->q == NULL) return 0;
  if (!collecting && q->dev != NULL && q->dev->queue == q->q) return 0;
  /* the Device (uservalue 1) outlives this call: it must not keep the handle */
  if (q->dev != NULL && q->dev->queue == q->q) q->dev->queue = NULL;
  /* A collected queue (lua_close included) waits for its commands: the
  ** process may end right after, and a driver still working on them then
  ** (PoCL compiling a kernel on its own thread) crashes in its teardown. */
  if (collecting && !q->borrowed) lg_finish_collected(L, q->q);
  clReleaseCommandQueue(q->q);   /* flushes: pending commands still complete */
  q->q = NULL;
  return 0;
}

static int q_gc(lua_State *L) { return q_free(L, 1); }
static int q_release(lua_State *L) { return q_free(L, 0); }

/* clFinish (or with flush, clFlush) on q; after a finish, the on_complete
** callbacks of commands now done run, as after any wait. */
static int finish(lua_State *L, lg_Queue *q, int flush) {
  cl_int err = flush ? clFlush(q->q) : clFinish(q->q);
  if (err != CL_SUCCESS) lg_clerror(L, flush ? "clFlush" : "clFinish", err, NULL);
  if (!flush) lg_after_wait(L);
  return 0;
}

static int q_finish(lua_State *L) { return finish(L, lg_checkqueue(L, 1), 0); }
static int q_flush(lua_State *L) { return finish(L, lg_checkqueue(L, 1), 1); }

static int q_index(lua_State *L) {
  lg_Queue *q;
  const char *k;
  if (lg_pushmethod(L, 1, 2)) return 1;
  q = luaL_checkudata(L, 1, LG_QUEUE_MT);
  k = lua_tostring(L, 2);
  if (k == NULL) return 0;
  if (q->q == NULL) lg_error(L, lua_pushfstring(L, "queue.%s", k),
                             "attempt to use a released queue");
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

/* dev:finish() and dev:flush(): q:finish() and q:flush() of the default queue. */
static int dev_finish(lua_State *L) {
  lg_checkdevice(L, 1);
  lg_push_default_queue(L, 1);
  return finish(L, lua_touserdata(L, -1), 0);
}

static int dev_flush(lua_State *L) {
  lg_checkdevice(L, 1);
  lg_push_default_queue(L, 1);
  return finish(L, lua_touserdata(L, -1), 1);
}

/* dev:set_profiling(on): the device's default queue from now on profiles
** (true) or not (false: enqueueing costs less on some drivers, and Events
** of it have no times). Commands already enqueued complete first on the
** old queue, which Events may still hold. */
static int dev_set_profiling(lua_State *L) {
  lg_Device *d = lg_checkdevice(L, 1);
  lg_Queue *q;
  int on;
  luaL_checkany(L, 2);
  if (!lua_isboolean(L, 2)) return lg_typeerror(L, "dev:set_profiling", 1, 2, "a boolean");
  on = lua_toboolean(L, 2);
  lg_push_default_queue(L, 1);
  q = lua_touserdata(L, -1);
  if (q->profiling == on) return 0;
  finish(L, q, 0);
  lg_newqueue(L, 1, on, 0);
  lua_setiuservalue(L, 1, 2);
  lg_push_default_queue(L, 1);
  d->queue = ((lg_Queue *)lua_touserdata(L, -1))->q;
  return 0;
}

/* dev:default_queue(): the Queue that commands without {queue =} run on. */
static int dev_default_queue(lua_State *L) {
  lg_checkdevice(L, 1);
  lg_push_default_queue(L, 1);
  return 1;
}

/* -------------------------------------------- waiting for every queue */

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The number of the queues whose marker is not done; pushes the message
** naming them (the first three, with their count when there are more). */
static int busy_queues(lua_State *L, const cl_event *marks, const lg_Queue *const *queues,
                       int n) {
  luaL_Buffer b;
  int i, nleft = 0;
  for (i = 0; i < n; i++) {
    cl_int st = CL_COMPLETE;
    clGetEventInfo(marks[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    if (st > CL_COMPLETE) nleft++;
  }
  luaL_buffinit(L, &b);
  if (nleft > 3) lua_pushfstring(L, "%d queues (", nleft);
  else lua_pushliteral(L, "");
  luaL_addvalue(&b);
  for (i = 0, nleft = 0; i < n; i++) {
    cl_int st = CL_COMPLETE;
    clGetEventInfo(marks[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    if (st <= CL_COMPLETE) continue;
    if (++nleft > 3) {
      luaL_addstring(&b, ", ...)");
      break;
    }
    lua_pushfstring(L, "%s%s queue of %s", nleft > 1 ? ", " : "",
                    queues[i]->dev->queue == queues[i]->q ? "the default" : "a",
                    queues[i]->dev->name);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  return nleft;
}

/* For a program at its end: unset user events fail, then a marker on every
** queue of the state's (however many) is waited for, polling, with say
** called once after half a second; interrupted() ends the wait. Returns 1
** when it was interrupted with commands left. */
int lg_finish_all(lua_State *L, int (*interrupted)(void), void (*say)(const char *msg)) {
  cl_event *marks = NULL;
  const lg_Queue **queues = NULL;
  int n = 0, cap = 0, i, said = 0, left = 0, top = lua_gettop(L), keep;
  long ns = 100000;
  double t0 = seconds();
  lg_fail_user_events(L);
  lua_newtable(L);                      /* the Queues, kept alive while they are waited for */
  keep = lua_gettop(L);
  if (lua_getfield(L, LUA_REGISTRYINDEX, QUEUES_KEY) == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      lua_pop(L, 1);
      if (cap < INT_MAX / 2) cap++;
    }
    marks = lua_newuserdatauv(L, (size_t)(cap > 0 ? cap : 1) * sizeof *marks, 0);
    queues = lua_newuserdatauv(L, (size_t)(cap > 0 ? cap : 1) * sizeof *queues, 0);
    lua_pushnil(L);
    while (lua_next(L, keep + 1)) {
      lg_Queue *q = luaL_testudata(L, -2, LG_QUEUE_MT);
      lua_pop(L, 1);
      if (n < cap && q != NULL && q->q != NULL &&
          clEnqueueMarkerWithWaitList(q->q, 0, NULL, &marks[n]) == CL_SUCCESS) {
        clFlush(q->q);
        queues[n++] = q;
        lua_pushvalue(L, -1);
        lua_rawseti(L, keep, n);
      }
    }
  }
  for (;;) {
    for (i = 0, left = 0; i < n && !left; i++) {
      cl_int st = CL_COMPLETE;
      clGetEventInfo(marks[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
      if (st > CL_COMPLETE) left = 1;
    }
    if (!left || (interrupted != NULL && interrupted())) break;
    if (!said && say != NULL && seconds() - t0 >= 0.5) {
      said = 1;
      busy_queues(L, marks, queues, n);
      say(lua_pushfstring(L, "waiting for the commands still running on %s (Ctrl-C aborts)",
                          lua_tostring(L, -1)));
      lua_pop(L, 2);
    }
    {
      struct timespec ts;
      ts.tv_sec = 0;
      ts.tv_nsec = ns;
      nanosleep(&ts, NULL);
      if (ns < 10000000) ns *= 2;
    }
  }
  for (i = 0; i < n; i++) clReleaseEvent(marks[i]);
  lua_settop(L, top);
  return left;
}

/* ------------------------------------------------------------- open */

static const luaL_Reg queue_methods[] = {
  {"finish", q_finish}, {"flush", q_flush}, {"release", q_release}, {NULL, NULL}
};

static const luaL_Reg queue_meta[] = {
  {"__released", lg_handle_released}, {"__index", q_index}, {"__gc", q_gc},
  {"__close", q_release}, {"__tostring", q_tostring}, {NULL, NULL}
};

static const luaL_Reg device_methods[] = {
  {"queue", dev_queue}, {"finish", dev_finish}, {"flush", dev_flush},
  {"default_queue", dev_default_queue}, {"set_profiling", dev_set_profiling},
  {NULL, NULL}
};

void lg_open_queue(lua_State *L) {
  lg_newclass(L, LG_QUEUE_MT, queue_methods, queue_meta);
  {
    static const char *const fields[] = {"device", "profiling", "out_of_order", "default", NULL};
    lg_class_fields(L, LG_QUEUE_MT, fields);
  }
  if (lua_getfield(L, LUA_REGISTRYINDEX, QUEUES_KEY) == LUA_TNIL) {
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, QUEUES_KEY);
  }
  lua_pop(L, 1);
  lg_add_methods(L, LG_DEVICE_MT, device_methods);
}
