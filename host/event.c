/*
** event.c: Events, what every enqueueing call returns, all made by
** lg_pushevent. An Event keeps alive (uservalue 1, a table) the queue,
** buffers and host arrays its command uses until the command completes, and
** its __gc waits for completion before letting go, so dropping an Event
** never frees memory under a running command. An Event that keeps nothing
** (a launch on the default queue: OpenCL retains the kernel and buffers of
** an enqueued command itself) has no table and is dropped without waiting.
** ev:wait(), ev.status, ev:profile(), ev.duration, gpu.wait().
*/
#include <string.h>
#include <time.h>

#include "internal.h"

lg_Event *lg_testevent(lua_State *L, int idx) {
  return luaL_testudata(L, idx, LG_EVENT_MT);
}

lg_Event *lg_checkevent(lua_State *L, int idx) {
  lg_Event *e = luaL_checkudata(L, idx, LG_EVENT_MT);
  if (e->ev == NULL) lg_released_error(L, idx, "event");
  return e;
}

/* Called protected by lg_pushevent with the values to keep as arguments:
** returns a new Event (no cl_event yet) holding them in a table. */
static int new_event(lua_State *L) {
  int i, n = lua_gettop(L);
  lg_newevent(L, "");
  if (n == 0) return 1;            /* nothing kept: no table, and __gc need not wait */
  lua_createtable(L, n, 0);
  for (i = 1; i <= n; i++) {
    lua_pushvalue(L, i);
    lua_rawseti(L, -2, i);
  }
  lua_setiuservalue(L, -2, 1);
  return 1;
}

lg_Event *lg_pushevent(lua_State *L, cl_event ev, const char *command,
                       const int *keep, int nkeep) {
  int i, top = lua_gettop(L);
  lg_Event *e;
  if (!lua_checkstack(L, nkeep + 4)) {
    if (nkeep > 0) clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
    luaL_error(L, "luagpu: stack overflow (too many values for one event)");
  }
  lua_pushcfunction(L, new_event);
  for (i = 0; i < nkeep; i++)
    lua_pushvalue(L, keep[i] < 0 && keep[i] > LUA_REGISTRYINDEX ? top + keep[i] + 1 : keep[i]);
  if (lua_pcall(L, nkeep, 1, 0) != LUA_OK) {
    /* what the command uses is still on the stack: wait before letting go
    ** (with nothing kept, never: an application's user event may not end) */
    if (nkeep > 0) clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
    lua_error(L);
  }
  e = lua_touserdata(L, -1);
  strncpy(e->command, command, sizeof e->command - 1);
  for (i = 0; i < nkeep; i++) {
    lg_Queue *q = luaL_testudata(L, keep[i] < 0 && keep[i] > LUA_REGISTRYINDEX
                                      ? top + keep[i] + 1 : keep[i], LG_QUEUE_MT);
    if (q != NULL) {
      e->queue = q;
      e->profiling = q->profiling;
      break;
    }
  }
  /* with nothing kept, nothing can go from under the command: a user event
  ** (a script's, or an application's) is never waited for, not even inside
  ** a finalizer, where it would wait for ever for the script to set it */
  if (nkeep > 0) lg_event_start(L, e, ev);
  else e->ev = ev;
  return e;
}

lg_Event *lg_newevent(lua_State *L, const char *command) {
  lg_Event *e = lua_newuserdatauv(L, sizeof *e, 3);
  memset(e, 0, sizeof *e);
  e->profiling = -1;
  strncpy(e->command, command, sizeof e->command - 1);
  luaL_setmetatable(L, LG_EVENT_MT);
  return e;
}

lg_Event *lg_newevent_on(lua_State *L, const char *command, int qidx) {
  lg_Queue *q = luaL_checkudata(L, qidx, LG_QUEUE_MT);
  lg_Event *e;
  qidx = lua_absindex(L, qidx);
  e = lg_newevent(L, command);
  lua_createtable(L, 1, 0);
  lua_pushvalue(L, qidx);
  lua_rawseti(L, -2, 1);
  lua_setiuservalue(L, -2, 1);
  e->queue = q;
  e->profiling = q->profiling;
  return e;
}

/* Whether a finalizer runs from lua_close (or from a collection the
** application started outside any call): nothing runs under its __gc call.
** One that a collection runs in the middle of a script has the script's
** frames under it. */
static int closing(lua_State *L) {
  lua_Debug ar;
  int level, fin = -1;
  for (level = 0; lua_getstack(L, level, &ar); level++)
    if (lua_getinfo(L, "n", &ar) && ar.namewhat != NULL && ar.name != NULL &&
        strcmp(ar.namewhat, "metamethod") == 0 && strcmp(ar.name, "__gc") == 0)
      fin = level;
  return fin < 0 || fin == level - 1;
}

void lg_event_start(lua_State *L, lg_Event *e, cl_event ev) {
  e->ev = ev;
  /* Inside a finalizer that lua_close runs (where lua_gc answers -1) the
  ** Event gets no finalizer of its own, and what the command uses is freed
  ** right after. So a command enqueued there completes now. Elsewhere, in
  ** a finalizer a collection runs, the Event is an Event like any other: a
  ** command there may wait for a user event the script sets afterwards. */
  if (lua_gc(L, LUA_GCISRUNNING) == -1 && closing(L)) {
    if (e->queue != NULL && e->queue->q != NULL) clFlush(e->queue->q);
    clWaitForEvents(1, &e->ev);
  }
}

void lg_event_setresult(lua_State *L, int evidx, int validx, lg_Result kind) {
  lg_Event *e;
  evidx = lua_absindex(L, evidx);
  e = luaL_checkudata(L, evidx, LG_EVENT_MT);
  lua_pushvalue(L, validx);
  lua_setiuservalue(L, evidx, 2);
  e->result = kind;
}

/* The command no longer runs: what it used may go. */
static void drop_keep(lua_State *L, int idx, lg_Event *e) {
  lua_pushnil(L);
  lua_setiuservalue(L, idx, 1);
  e->queue = NULL;
}

static cl_int exec_status(cl_event ev) {
  cl_int st = CL_COMPLETE;
  cl_int err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
  return err != CL_SUCCESS ? err : st;
}

/* Blocks until the command of the Event at idx is done. Returns its final
** status: CL_COMPLETE, or the (negative) error it ended with. */
static cl_int wait_event(lua_State *L, int idx, lg_Event *e) {
  cl_int st;
  if (e->queue != NULL && e->queue->q != NULL) clFlush(e->queue->q);
  clWaitForEvents(1, &e->ev);
  st = exec_status(e->ev);
  if (st <= CL_COMPLETE) drop_keep(L, idx, e);
  return st;
}

/* With the program's wait_interrupted set: polls the command (sleeping 20 us, doubling
** to 2 ms) until it is done, and raises when the program says so. The
** Event keeps what the command uses, so it goes on safely. */
static void wait_interruptible(lua_State *L, lg_Event *e) {
  long ns = 20000;
  cl_command_queue q = NULL;   /* an Event that keeps nothing has no queue */
  if (clGetEventInfo(e->ev, CL_EVENT_COMMAND_QUEUE, sizeof q, &q, NULL) == CL_SUCCESS &&
      q != NULL)
    clFlush(q);
  while (exec_status(e->ev) > CL_COMPLETE) {
    struct timespec ts;
    if (lg_wait_interrupted(L)) luaL_error(L, "interrupted! (the %s command goes on)", e->command);
    ts.tv_sec = 0;
    ts.tv_nsec = ns;
    nanosleep(&ts, NULL);
    if (ns < 2000000) ns *= 2;
  }
}

/* Waits and raises when the command failed. */
static void wait_ok(lua_State *L, int idx, lg_Event *e, const char *fn) {
  cl_int st;
  if (lg_state(L)->wait_interrupted != NULL) wait_interruptible(L, e);
  st = wait_event(L, idx, e);
  if (e->debug_later && st <= CL_COMPLETE) lg_debug_check_later(L, idx, e, st);
  if (st < 0) {
    if (e->user && lua_getiuservalue(L, idx, 2) == LUA_TSTRING)   /* ev:fail(msg) */
      lg_error_tail(L, -1, fn, "%s failed: ", e->command);
    /* (drivers give what they like here: PoCL CL_DEVICE_NOT_FOUND) */
    lg_clerror(L, lua_pushfstring(L, "%s: %s command", fn, e->command), st,
               "it ended in error; a command does so too when an event in its wait list "
               "failed (a user event's ev:fail, or a command that failed)");
  }
}

static void push_result(lua_State *L, int idx, lg_Event *e) {
  if (e->result == LG_RESULT_NONE) {
    lua_pushnil(L);
    return;
  }
  lua_getiuservalue(L, idx, 2);
  if (e->result == LG_RESULT_SCALAR) {
    lg_Array *a = lg_testarray(L, -1);
    if (a != NULL && a->count >= 1) {
      /* the number, kept from now on instead of the array, whose
      ** page-locked slot (if any) is free again */
      lg_push_scalar(L, a->type.scalar, a->data);
      lg_pinned_array_done(L, -2);
      lua_remove(L, -2);
      lua_pushvalue(L, -1);
      lua_setiuservalue(L, idx, 2);
      e->result = LG_RESULT_VALUE;
    }
  }
}

/* Parked commands: what an Event collected before its command ended kept
** (a "luagpu.Parked" userdata per command: the retained cl_event, the kept
** table as its uservalue), in a registry table used as a set. The
** collector never blocks on a command, which may wait for a user event
** only the script can complete; lg_event_sweep lets go of the done ones,
** and at lua_close the table's __gc (it was made first, so it runs after
** the Events' finalizers, which fail unset user events) waits for the rest. */
#define PARKED_KEY "luagpu.parked"

typedef struct Parked { cl_event ev; } Parked;

static int sweep(lua_State *L, int all);

static void park(lua_State *L, int idx, lg_Event *e) {
  Parked *p;
  sweep(L, 0);                           /* only commands not done stay parked */
  if (e->queue != NULL && e->queue->q != NULL) clFlush(e->queue->q);
  lua_getfield(L, LUA_REGISTRYINDEX, PARKED_KEY);
  p = lua_newuserdatauv(L, sizeof *p, 1);
  p->ev = NULL;
  lua_getiuservalue(L, idx, 1);
  lua_setiuservalue(L, -2, 1);
  clRetainEvent(e->ev);
  p->ev = e->ev;
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

static int sweep(lua_State *L, int all) {
  int left = 0;
  if (lua_getfield(L, LUA_REGISTRYINDEX, PARKED_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    return 0;
  }
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    Parked *p = lua_touserdata(L, -2);
    lua_pop(L, 1);
    if (p->ev != NULL && all) clWaitForEvents(1, &p->ev);
    if (p->ev == NULL || exec_status(p->ev) <= CL_COMPLETE) {
      if (p->ev != NULL) clReleaseEvent(p->ev);
      p->ev = NULL;
      lua_pushvalue(L, -1);
      lua_pushnil(L);
      lua_rawset(L, -4);   /* clearing a field while traversing is allowed */
    } else {
      left++;
    }
  }
  lua_pop(L, 1);
  return left;
}

int lg_event_sweep(lua_State *L) { return sweep(L, 0); }

static int parked_gc(lua_State *L) {
  lg_fail_user_events(L);   /* lua_close: nothing can set them now */
  sweep(L, 1);
  return 0;
}

/* Lets the event go. Inside a finalizer, what the Event keeps is parked
** until its command is done; release and __close wait for it. A user event
** of gpu.user_event's collected unset fails: nothing can complete it now. */
static int ev_free(lua_State *L) {
  lg_Event *e = luaL_checkudata(L, 1, LG_EVENT_MT);
  if (e->ev == NULL) return 0;
  if (e->user && exec_status(e->ev) > CL_COMPLETE) clSetUserEventStatus(e->ev, -1);
  if (lua_getiuservalue(L, 1, 1) != LUA_TNIL) {   /* nothing kept (done, or an */
    if (lua_gc(L, LUA_GCISRUNNING) == -1 && exec_status(e->ev) > CL_COMPLETE)
      park(L, 1, e);                               /* application's event): no wait */
    else
      wait_event(L, 1, e);
  }
  lua_pop(L, 1);
  clReleaseEvent(e->ev);
  e->ev = NULL;
  drop_keep(L, 1, e);
  lua_pushnil(L);
  lua_setiuservalue(L, 1, 2);
  return 0;
}

/* ev:wait(): the result is taken before the callbacks run (one of them
** may release the Event). */
static int ev_wait(lua_State *L) {
  lg_Event *e = lg_checkevent(L, 1);
  wait_ok(L, 1, e, "event:wait");
  push_result(L, 1, e);
  lg_after_wait(L);
  return 1;
}

static const char *status_name(cl_int st) {
  switch (st) {
    case CL_QUEUED: return "queued";
    case CL_SUBMITTED: return "submitted";
    case CL_RUNNING: return "running";
    case CL_COMPLETE: return "complete";
    default: return "error";
  }
}

static void check_profiling(lua_State *L, lg_Event *e, const char *fn) {
  /* (before any wait: one may never be set) */
  if (e->user)
    lg_error(L, fn, "a user event has no profile: OpenCL times the commands of a queue "
             "(profile the commands that wait for it)");
  if (e->profiling == 0)
    lg_error(L, fn, "the queue of this %s command has profiling off (dev:set_profiling(true) "
             "turns it on for a device's default queue, dev:queue{profiling = true} makes a "
             "queue with it)", e->command);
}

/* Fills t[0..3] with the queued, submit, start and end times (ns). */
static void get_times(lua_State *L, lg_Event *e, const char *fn, cl_ulong t[4]) {
  static const cl_profiling_info what[4] = {
    CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
    CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END
  };
  int i;
  check_profiling(L, e, fn);
  wait_ok(L, 1, e, fn);
  for (i = 0; i < 4; i++) {   /* before the callbacks, which may release the Event */
    cl_int err = clGetEventProfilingInfo(e->ev, what[i], sizeof t[i], &t[i], NULL);
    if (err == CL_PROFILING_INFO_NOT_AVAILABLE) {
      e->profiling = 0;
      check_profiling(L, e, fn);
    }
    if (err != CL_SUCCESS) lg_clerror(L, "clGetEventProfilingInfo", err, NULL);
  }
  lg_after_wait(L);
}

/* ev:profile(): {queued=, submit=, start=, ["end"]=, duration=} in ns. */
static int ev_profile(lua_State *L) {
  static const char *const names[4] = {"queued", "submit", "start", "end"};
  lg_Event *e = lg_checkevent(L, 1);
  cl_ulong t[4];
  int i;
  get_times(L, e, "event:profile", t);
  lua_createtable(L, 0, 5);
  for (i = 0; i < 4; i++) {
    lua_pushinteger(L, (lua_Integer)t[i]);
    lua_setfield(L, -2, names[i]);
  }
  lua_pushinteger(L, (lua_Integer)(t[3] - t[2]));
  lua_setfield(L, -2, "duration");
  return 1;
}

static int ev_index(lua_State *L) {
  lg_Event *e;
  const char *k;
  if (lg_pushmethod(L, 1, 2)) return 1;
  e = luaL_checkudata(L, 1, LG_EVENT_MT);
  k = lua_tostring(L, 2);
  if (k == NULL) return 0;
  if (strcmp(k, "command") == 0) {
    lua_pushstring(L, e->command);
    return 1;
  }
  if (e->ev == NULL) luaL_error(L, "luagpu: event.%s: attempt to use a released event", k);
  if (strcmp(k, "status") == 0) {
    cl_int st = exec_status(e->ev);
    if (st <= CL_COMPLETE) drop_keep(L, 1, e);
    lua_pushstring(L, status_name(st));
  } else if (strcmp(k, "duration") == 0) {
    cl_ulong t[4];
    get_times(L, e, "event.duration", t);
    lua_pushinteger(L, (lua_Integer)(t[3] - t[2]));
  } else {
    return 0;
  }
  return 1;
}

static int ev_tostring(lua_State *L) {
  lg_Event *e = luaL_checkudata(L, 1, LG_EVENT_MT);
  lua_pushfstring(L, LG_EVENT_MT ": %s (%s)", e->command[0] ? e->command : "command",
                  e->ev == NULL ? "released" : status_name(exec_status(e->ev)));
  return 1;
}

/* gpu.wait(ev1, ev2, ...) or gpu.wait{ev1, ev2, ...}: waits for all of
** them, raises if any failed, and returns their results in order. */
static int mod_wait(lua_State *L) {
  int i, n, list = 0;
  if (lua_gettop(L) == 1 && lua_istable(L, 1) && !lg_testevent(L, 1)) {
    /* read raw: a __len of the user's cannot make the count negative or lie */
    lua_Integer len = (lua_Integer)lua_rawlen(L, 1);
    if (len > LG_MAX_EVENTS)
      return lg_argerror(L, "gpu.wait", 1, "%I events are too many (at most %d)", len,
                         LG_MAX_EVENTS);
    n = (int)len;
    luaL_checkstack(L, n + 4, "too many events");
    for (i = 1; i <= n; i++) lua_rawgeti(L, 1, i);
    list = 1;
  } else {
    n = lua_gettop(L);
  }
  /* arguments are checked first, so that nothing waits for a bad call */
  for (i = 1; i <= n; i++) {
    int idx = list + i;
    lg_Event *e = lg_testevent(L, idx);
    const char *where = list ? lua_pushfstring(L, "argument #1[%d]", i)
                             : lua_pushfstring(L, "argument #%d", i);
    if (e == NULL) {
      const char *got = luaL_getmetafield(L, idx, "__name") == LUA_TSTRING
                            ? lua_tostring(L, -1) : luaL_typename(L, idx);
      lg_error(L, "gpu.wait", "%s: expected a " LG_EVENT_MT ", got %s", where, got);
    }
    if (e->ev == NULL) lg_error(L, "gpu.wait", "%s: attempt to use a released event", where);
    lua_pop(L, 1);
    if (e->queue != NULL && e->queue->q != NULL) clFlush(e->queue->q);
  }
  luaL_checkstack(L, n, "too many events");
  for (i = 1; i <= n; i++) {
    lg_Event *e = lua_touserdata(L, list + i);
    if (e->ev == NULL) lg_error(L, "gpu.wait", "event #%d was released while waiting", i);
    wait_ok(L, list + i, e, "gpu.wait");
  }
  for (i = 1; i <= n; i++) push_result(L, list + i, lua_touserdata(L, list + i));
  lg_after_wait(L);   /* after the results: a callback may release an Event */
  return n;
}

static const luaL_Reg event_methods[] = {
  {"wait", ev_wait}, {"profile", ev_profile}, {"release", ev_free}, {NULL, NULL}
};

static const luaL_Reg event_meta[] = {
  {"__released", lg_handle_released}, {"__index", ev_index}, {"__gc", ev_free},
  {"__close", ev_free}, {"__tostring", ev_tostring}, {NULL, NULL}
};

static const luaL_Reg module_functions[] = {
  {"wait", mod_wait}, {NULL, NULL}
};

void lg_open_event(lua_State *L) {
  lg_newclass(L, LG_EVENT_MT, event_methods, event_meta);
  {
    static const char *const fields[] = {"command", "status", "duration", NULL};
    lg_class_fields(L, LG_EVENT_MT, fields);
  }
  if (lua_getfield(L, LUA_REGISTRYINDEX, PARKED_KEY) == LUA_TNIL) {
    lua_newtable(L);                     /* the parked commands; one per state, */
    lua_createtable(L, 0, 1);            /* kept when the module is opened again */
    lua_pushcfunction(L, parked_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, PARKED_KEY);
  }
  lua_pop(L, 1);
  luaL_setfuncs(L, module_functions, 0);
}
