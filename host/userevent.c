/*
** userevent.c: events the script completes, callbacks, and a loop for
** coroutines. gpu.user_event(dev), ev:complete(), ev:fail(msg),
** ev:on_complete(fn), gpu.poll(), gpu.await(ev), gpu.run_loop(fn, ...),
** gpu.spawn(fn, ...).
**
** Callbacks never run on a driver thread. clSetEventCallback's function
** only counts, under a mutex, in a block that the Lua state and every
** pending driver callback hold a reference to (whoever drops the last one
** frees it, so a callback after lua_close touches no freed memory). The
** Lua functions wait in a registry list and run on the Lua thread when a
** wait, gpu.poll or gpu.run_loop drains it: each one whose event is done
** runs, in the order registered, under a protected call; their errors are
** raised together after all have run, with their tracebacks.
*/
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define SHARED_MT "luagpu.CallbackBlock"
#define SHARED_KEY "luagpu.callback_block"
#define PENDING_KEY "luagpu.callbacks"      /* list of {ev, fn} */
#define LOOP_KEY "luagpu.run_loop"          /* the running loop's task list */
#define CURRENT_KEY "luagpu.run_loop_task"  /* the task the loop resumed */

/* ------------------------------------------------------ the shared block */

typedef struct Block {
  pthread_mutex_t mu;
  int refs;                    /* the Lua state's, and one per pending callback */
  unsigned long fired;         /* driver callbacks seen so far */
  int draining;                /* Lua thread only: a callback that waits must not drain */
} Block;

typedef struct BlockRef { Block *b; } BlockRef;

static void block_unref(Block *b) {
  int last;
  pthread_mutex_lock(&b->mu);
  last = --b->refs == 0;
  pthread_mutex_unlock(&b->mu);
  if (last) {
    pthread_mutex_destroy(&b->mu);
    free(b);
  }
}

/* On a driver thread: only counts, and lets go of the callback's reference. */
static void CL_CALLBACK on_event(cl_event ev, cl_int status, void *data) {
  Block *b = data;
  (void)ev;
  (void)status;
  pthread_mutex_lock(&b->mu);
  b->fired++;
  pthread_mutex_unlock(&b->mu);
  block_unref(b);
}

static int blockref_gc(lua_State *L) {
  BlockRef *r = lua_touserdata(L, 1);
  if (r->b != NULL) block_unref(r->b);
  r->b = NULL;
  return 0;
}

static Block *get_block(lua_State *L) {
  BlockRef *r;
  lua_getfield(L, LUA_REGISTRYINDEX, SHARED_KEY);
  r = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return r != NULL ? r->b : NULL;
}

/* ----------------------------------------------------------- user events */

static cl_int exec_status(cl_event ev) {
  cl_int st = CL_COMPLETE;
  cl_int err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
  return err != CL_SUCCESS ? err : st;
}

/* gpu.user_event(dev): an Event that completes when the script says so. */
static int mod_user_event(lua_State *L) {
  lg_Device *d = lg_testdevice(L, 1);
  lg_Event *e;
  cl_event ev;
  cl_int err;
  if (d == NULL) return lg_typeerror(L, "gpu.user_event", 1, 1, "a " LG_DEVICE_MT);
  d = lg_checkdevice(L, 1);
  ev = clCreateUserEvent(d->ctx, &err);
  if (err != CL_SUCCESS) return lg_clerror(L, "clCreateUserEvent", err, NULL);
  e = lg_pushevent(L, ev, "user event", NULL, 0);
  e->user = 1;
  lg_event_note_user(L, -1);   /* failed at lua_close before any queue is finished */
  return 1;
}

static lg_Event *check_user(lua_State *L, const char *fn) {
  lg_Event *e = lg_checkevent(L, 1);
  cl_int st;
  if (!e->user)
    lg_error(L, fn, "only an event of gpu.user_event can be set (this is a %s command)",
             e->command);
  st = exec_status(e->ev);
  if (st <= CL_COMPLETE)
    lg_error(L, fn, "the user event was already %s", st == CL_COMPLETE ? "completed" : "failed");
  return e;
}

static int ev_complete(lua_State *L) {
  lg_Event *e = check_user(L, "event:complete");
  cl_int err = clSetUserEventStatus(e->ev, CL_COMPLETE);
  if (err != CL_SUCCESS) lg_clerror(L, "clSetUserEventStatus", err, NULL);
  return 0;
}

/* ev:fail([msg]): the event ends in error; waiting on it raises msg, and
** commands waiting for it do not run. */
static int ev_fail(lua_State *L) {
  lg_Event *e = check_user(L, "event:fail");
  cl_int err;
  if (!lua_isnoneornil(L, 2) && lua_type(L, 2) != LUA_TSTRING)
    return lg_typeerror(L, "event:fail", 1, 2, "a message string");
  if (lua_isnoneornil(L, 2)) lua_pushliteral(L, "failed by ev:fail()");
  else lua_pushvalue(L, 2);
  lua_setiuservalue(L, 1, 2);
  err = clSetUserEventStatus(e->ev, -1);
  if (err != CL_SUCCESS) lg_clerror(L, "clSetUserEventStatus", err, NULL);
  return 0;
}

/* ------------------------------------------------------------- callbacks */

/* ev:on_complete(fn): fn(ev, status) runs on the Lua thread once the
** command is done ("complete" or "error"; "released" when the script
** released the event first), at the next wait, gpu.poll or loop turn.
** Returns ev. */
static int ev_on_complete(lua_State *L) {
  lg_Event *e = lg_checkevent(L, 1);
  Block *b = get_block(L);
  cl_int err;
  if (!lua_isfunction(L, 2) && luaL_getmetafield(L, 2, "__call") == LUA_TNIL)
    return lg_typeerror(L, "event:on_complete", 1, 2, "a function");
  lua_settop(L, 2);
  lua_getfield(L, LUA_REGISTRYINDEX, PENDING_KEY);
  lua_createtable(L, 2, 0);
  lua_pushvalue(L, 1);
  lua_rawseti(L, -2, 1);
  lua_pushvalue(L, 2);
  lua_rawseti(L, -2, 2);
  pthread_mutex_lock(&b->mu);
  b->refs++;
  pthread_mutex_unlock(&b->mu);
  err = clSetEventCallback(e->ev, CL_COMPLETE, on_event, b);
  if (err != CL_SUCCESS) {
    block_unref(b);
    return lg_clerror(L, "clSetEventCallback", err, NULL);
  }
  lua_rawseti(L, 3, (lua_Integer)lua_rawlen(L, 3) + 1);
  lua_settop(L, 1);
  return 1;
}

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static void take_results(lua_State *L);

/* Runs the callbacks whose events are done; raises their errors together.
** Returns how many ran. The tasks of gpu.run_loop awaiting those events
** take their results first: a callback may release its event. */
static int drain(lua_State *L) {
  int i, n, ran = 0, nerr = 0, top = lua_gettop(L);
  luaL_Buffer errs;
  Block *b = get_block(L);
  if (b == NULL || b->draining) return 0;
  if (lua_getfield(L, LUA_REGISTRYINDEX, PENDING_KEY) != LUA_TTABLE || lua_rawlen(L, -1) == 0) {
    lua_settop(L, top);
    return 0;
  }
  n = (int)lua_rawlen(L, -1);
  lua_newtable(L);                              /* the list from now on */
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, PENDING_KEY);
  lua_newtable(L);                              /* errors */
  lua_newtable(L);                              /* the callbacks to run now */
  for (i = 1; i <= n; i++) {
    lg_Event *e;
    lua_rawgeti(L, top + 1, i);
    lua_rawgeti(L, -1, 1);
    e = lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (e->ev != NULL && exec_status(e->ev) > CL_COMPLETE)   /* not yet: keep it */
      lua_rawseti(L, top + 2, (lua_Integer)lua_rawlen(L, top + 2) + 1);
    else
      lua_rawseti(L, top + 4, (lua_Integer)lua_rawlen(L, top + 4) + 1);
  }
  n = (int)lua_rawlen(L, top + 4);
  if (n == 0) {
    lua_settop(L, top);
    return 0;
  }
  b->draining = 1;
  take_results(L);                              /* before any callback runs */
  for (i = 1; i <= n; i++) {
    lg_Event *e;
    lua_rawgeti(L, top + 4, i);
    lua_rawgeti(L, -1, 1);
    e = lua_touserdata(L, -1);
    lua_pushcfunction(L, traceback);
    lua_rawgeti(L, -3, 2);
    lua_pushvalue(L, -3);
    lua_pushstring(L, e->ev == NULL ? "released"
                      : exec_status(e->ev) == CL_COMPLETE ? "complete" : "error");
    ran++;
    if (lua_pcall(L, 2, 0, -4) != LUA_OK)
      lua_rawseti(L, top + 3, ++nerr);
    lua_settop(L, top + 4);
  }
  b->draining = 0;
  if (nerr == 0) {
    lua_settop(L, top);
    return ran;
  }
  luaL_buffinit(L, &errs);
  for (i = 1; i <= nerr; i++) {
    lua_pushfstring(L, "%scallback %d of %d failed: ", i > 1 ? "\n" : "", i, nerr);
    luaL_addvalue(&errs);
    lua_rawgeti(L, top + 3, i);
    luaL_addvalue(&errs);
  }
  luaL_pushresult(&errs);
  return lg_error(L, "on_complete", "%s", lua_tostring(L, -1));
}

/* The state's after_wait hook (lg_after_wait): after every blocking wait. */
static void after_wait(lua_State *L) {
  drain(L);
}

/* gpu.poll(): runs the callbacks of commands now done, lets go of what
** collected Events kept for them; returns how many callbacks ran. */
static int mod_poll(lua_State *L) {
  lg_event_sweep(L);
  lua_pushinteger(L, drain(L));
  return 1;
}

/* ------------------------------------------------------- await, run_loop */

static int AWAIT_TAG;   /* its address marks a yield of gpu.await */

static int await_k(lua_State *L, int status, lua_KContext ctx) {
  int top = lua_gettop(L);
  (void)status;
  (void)ctx;
  if (!lua_toboolean(L, top - 1)) return lua_error(L);   /* the message on top */
  return 1;
}

/* Pushes ev:wait()'s results (blocking) for the Event at idx. */
static int wait_on(lua_State *L, int idx) {
  lua_getfield(L, idx, "wait");
  lua_pushvalue(L, idx);
  lua_call(L, 1, 1);
  return 1;
}

static int wait_cf(lua_State *L) { return wait_on(L, 1); }

/* For each task of the running loop whose awaited event is done: takes
** ev:wait()'s outcome now (fields 4 and 5 of the task: ok, and the result
** or the message), so that a callback releasing the event after does not
** take it away. Called by drain with callbacks held back (ev:wait drains). */
static void take_results(lua_State *L) {
  int i, n, top = lua_gettop(L);
  if (lua_getfield(L, LUA_REGISTRYINDEX, LOOP_KEY) != LUA_TTABLE) {
    lua_settop(L, top);
    return;
  }
  n = (int)lua_rawlen(L, top + 1);
  for (i = 1; i <= n; i++) {
    lg_Event *e;
    if (lua_rawgeti(L, top + 1, i) != LUA_TTABLE) {   /* an ended task */
      lua_settop(L, top + 1);
      continue;
    }
    lua_rawgeti(L, top + 2, 2);
    e = lua_touserdata(L, -1);
    if (e != NULL && e->ev != NULL && exec_status(e->ev) <= CL_COMPLETE) {
      lua_pushcfunction(L, wait_cf);
      lua_insert(L, -2);
      lua_pushboolean(L, lua_pcall(L, 1, 1, 0) == LUA_OK);
      lua_rawseti(L, top + 2, 4);
      lua_rawseti(L, top + 2, 5);
      lua_pushnil(L);
      lua_rawseti(L, top + 2, 2);
    }
    lua_settop(L, top + 1);
  }
  lua_settop(L, top);
}

/* gpu.await(ev): in a task of gpu.run_loop, yields to the loop until the
** command is done, then gives ev:wait()'s result (raising as it does);
** anywhere else, ev:wait(). */
static int mod_await(lua_State *L) {
  lg_Event *e = lg_testevent(L, 1);
  int mine;
  if (e == NULL) return lg_typeerror(L, "gpu.await", 1, 1, "a " LG_EVENT_MT);
  if (e->ev == NULL)   /* (as gpu.wait says it) */
    return lg_argerror(L, "gpu.await", 1, "attempt to use a released event");
  lua_settop(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, CURRENT_KEY);
  mine = lua_tothread(L, -1) == L;
  lua_pop(L, 1);
  if (!mine || !lua_isyieldable(L) || exec_status(e->ev) <= CL_COMPLETE) return wait_on(L, 1);
  lua_pushlightuserdata(L, &AWAIT_TAG);
  lua_pushvalue(L, 1);
  return lua_yieldk(L, 2, 0, await_k);
}

/* A task: {co, ev} (ev: what it awaits, nil when it can run), with its
** first arguments already on co's stack (nargs in field 3). */
static void add_task(lua_State *L, int loopidx, int first, int last, const char *fn) {
  lua_State *co;
  int i, n = last - first + 1;
  luaL_checktype(L, first, LUA_TFUNCTION);
  if (!lua_checkstack(L, n + 3)) lg_error(L, fn, "too many arguments (%d)", n - 1);
  lua_createtable(L, 3, 0);
  co = lua_newthread(L);
  lua_rawseti(L, -2, 1);
  if (!lua_checkstack(co, n + 1)) lg_error(L, fn, "too many arguments (%d)", n - 1);
  for (i = first; i <= last; i++) lua_pushvalue(L, i);
  lua_xmove(L, co, n);
  lua_pushinteger(L, last - first);
  lua_rawseti(L, -2, 3);
  lua_rawseti(L, loopidx, (lua_Integer)lua_rawlen(L, loopidx) + 1);
}

/* gpu.spawn(fn, ...): a new task of the running gpu.run_loop. */
static int mod_spawn(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, LOOP_KEY) != LUA_TTABLE)
    return lg_error(L, "gpu.spawn", "no gpu.run_loop is running");
  if (!lua_isfunction(L, 1)) return lg_typeerror(L, "gpu.spawn", 1, 1, "a function");
  add_task(L, lua_gettop(L), 1, lua_gettop(L) - 1, "gpu.spawn");
  return 0;
}

/* Resumes the task at ti (a table) of the loop; returns 1 if it ended. */
static int resume(lua_State *L, int ti) {
  lua_State *co;
  int nargs = 0, nres, st;
  lua_rawgeti(L, ti, 1);
  co = lua_tothread(L, -1);
  lua_pop(L, 1);
  if (lua_rawgeti(L, ti, 4) != LUA_TNIL) {       /* its result, taken by drain */
    lua_rawgeti(L, ti, 5);
    if (!lua_checkstack(co, 2)) lg_error(L, "gpu.run_loop", "a task's stack is full");
    lua_xmove(L, co, 2);
    nargs = 2;
    lua_pushnil(L);
    lua_rawseti(L, ti, 4);
    lua_pushnil(L);
    lua_rawseti(L, ti, 5);
  } else if (lua_rawgeti(L, ti, 2) != LUA_TNIL) {   /* the awaited event is done */
    int evidx = lua_gettop(L);
    lua_pushcfunction(L, wait_cf);
    lua_pushvalue(L, evidx);
    st = lua_pcall(L, 1, 1, 0);
    lua_pushboolean(L, st == LUA_OK);
    lua_insert(L, -2);
    if (!lua_checkstack(co, 2)) lg_error(L, "gpu.run_loop", "a task's stack is full");
    lua_xmove(L, co, 2);
    nargs = 2;
    lua_pushnil(L);
    lua_rawseti(L, ti, 2);
  } else if (lua_rawgeti(L, ti, 3) == LUA_TNUMBER) {   /* first start */
    nargs = (int)lua_tointeger(L, -1);
    lua_pushnil(L);
    lua_rawseti(L, ti, 3);
  }
  lua_settop(L, ti);
  lua_pushthread(co);
  lua_xmove(co, L, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, CURRENT_KEY);
  st = lua_resume(co, L, nargs, &nres);
  lua_pushnil(L);
  lua_setfield(L, LUA_REGISTRYINDEX, CURRENT_KEY);
  if (st == LUA_OK) return 1;
  if (st == LUA_YIELD) {
    if (nres == 2 && lua_touserdata(co, -2) == &AWAIT_TAG) {
      lua_xmove(co, L, 1);
      lua_rawseti(L, ti, 2);
    }
    lua_settop(co, 0);
    return 0;
  }
  luaL_traceback(L, co, lua_type(co, -1) == LUA_TSTRING ? lua_tostring(co, -1)
                         : "(error object is not a string)", 0);
  lg_error(L, "gpu.run_loop", "a task failed: %s", lua_tostring(L, -1));
  return 1;
}

/* True when every task awaits an unset event of gpu.user_event's and every
** pending callback's event is one too: only the tasks could set them. */
static int stuck(lua_State *L, int loopidx) {
  int i, n = (int)lua_rawlen(L, loopidx), top = lua_gettop(L);
  for (i = 1; i <= n; i++) {
    lg_Event *e;
    lua_rawgeti(L, loopidx, i);
    lua_rawgeti(L, -1, 2);
    e = lua_touserdata(L, -1);
    lua_settop(L, top);
    if (e == NULL || !e->user || e->ev == NULL || exec_status(e->ev) <= CL_COMPLETE) return 0;
  }
  lua_getfield(L, LUA_REGISTRYINDEX, PENDING_KEY);
  n = (int)lua_rawlen(L, -1);
  for (i = 1; i <= n; i++) {
    lg_Event *e;
    lua_rawgeti(L, top + 1, i);
    lua_rawgeti(L, -1, 1);
    e = lua_touserdata(L, -1);
    lua_settop(L, top + 1);
    if (!e->user || e->ev == NULL || exec_status(e->ev) <= CL_COMPLETE) {
      lua_settop(L, top);
      return 0;
    }
  }
  lua_settop(L, top);
  return 1;
}

/* The loop itself, called protected by mod_run_loop with its tasks at 1. */
static int loop(lua_State *L) {
  long ns = 20000;
  while (lua_rawlen(L, 1) > 0) {
    int i, n = (int)lua_rawlen(L, 1), progressed = 0, j = 0;
    for (i = 1; i <= n; i++) {
      lg_Event *e;
      lua_rawgeti(L, 1, i);
      lua_rawgeti(L, -1, 2);
      e = lua_touserdata(L, -1);
      lua_pop(L, 1);
      if (e != NULL && e->ev != NULL && exec_status(e->ev) > CL_COMPLETE) {
        lua_pop(L, 1);
        continue;
      }
      progressed = 1;
      if (resume(L, lua_gettop(L))) {           /* ended: mark it */
        lua_pushboolean(L, 0);
        lua_rawseti(L, 1, i);
      }
      lua_settop(L, 1);
    }
    n = (int)lua_rawlen(L, 1);                  /* with tasks spawned meanwhile */
    for (i = 1; i <= n; i++) {                  /* drop the ended ones */
      if (lua_rawgeti(L, 1, i) == LUA_TTABLE) lua_rawseti(L, 1, ++j);
      else lua_pop(L, 1);
    }
    for (i = j + 1; i <= n; i++) {
      lua_pushnil(L);
      lua_rawseti(L, 1, i);
    }
    if (drain(L) > 0) progressed = 1;   /* after the tasks: one may await an event that a
                                           callback releases (its result is taken first) */
    if (progressed) {
      ns = 20000;
    } else {
      struct timespec ts;
      if (stuck(L, 1))
        lg_error(L, "gpu.run_loop", "every task awaits a user event that no one can complete "
                 "(%d tasks)", (int)lua_rawlen(L, 1));
      if (lg_wait_interrupted(L))
        luaL_error(L, "interrupted! (gpu.run_loop)");
      ts.tv_sec = 0;
      ts.tv_nsec = ns;
      nanosleep(&ts, NULL);
      if (ns < 2000000) ns *= 2;
    }
  }
  drain(L);
  return 0;
}

/* gpu.run_loop(fn, ...): runs fn(...) as a task, and every task that
** gpu.spawn adds, until all have ended; gpu.await inside them yields. */
static int mod_run_loop(lua_State *L) {
  int st;
  if (!lua_isfunction(L, 1)) return lg_typeerror(L, "gpu.run_loop", 1, 1, "a function");
  if (lua_getfield(L, LUA_REGISTRYINDEX, LOOP_KEY) != LUA_TNIL)
    return lg_error(L, "gpu.run_loop", "a loop is already running (add tasks with gpu.spawn)");
  lua_pop(L, 1);
  lua_pushcfunction(L, loop);
  lua_newtable(L);
  add_task(L, lua_gettop(L), 1, lua_gettop(L) - 2, "gpu.run_loop");
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, LOOP_KEY);
  st = lua_pcall(L, 1, 0, 0);
  lua_pushnil(L);
  lua_setfield(L, LUA_REGISTRYINDEX, LOOP_KEY);
  if (st != LUA_OK) return lua_error(L);
  return 0;
}

static const luaL_Reg event_methods[] = {
  {"complete", ev_complete}, {"fail", ev_fail}, {"on_complete", ev_on_complete},
  {NULL, NULL}
};

static const luaL_Reg module_functions[] = {
  {"user_event", mod_user_event}, {"poll", mod_poll}, {"await", mod_await},
  {"run_loop", mod_run_loop}, {"spawn", mod_spawn}, {NULL, NULL}
};

void lg_open_userevent(lua_State *L) {
  BlockRef *r;
  Block *b;
  lg_add_methods(L, LG_EVENT_MT, event_methods);
  luaL_setfuncs(L, module_functions, 0);
  lg_state(L)->after_wait = after_wait;
  if (get_block(L) != NULL) return;   /* opened again (a second require): keep the state's */
  b = malloc(sizeof *b);
  if (b == NULL) luaL_error(L, "luagpu: not enough memory");
  pthread_mutex_init(&b->mu, NULL);
  b->refs = 1;
  b->fired = 0;
  b->draining = 0;
  r = lua_newuserdatauv(L, sizeof *r, 0);
  r->b = b;
  luaL_newmetatable(L, SHARED_MT);
  lua_pushcfunction(L, blockref_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, SHARED_KEY);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, PENDING_KEY);
}
