/*
** state.c: the per-state context (lg_State: tracing, debug mode, hooks,
** serial numbers), one per Lua state as luv keeps its loop context, and the
** records that belong to the state rather than to one object: the user
** events of gpu.user_event's still to be set, the queues whose finish waits
** for lua_close, the hooks the files above register. It calls nothing of
** luagpu's: the files above reach it, never the reverse (a hook of theirs,
** set at open, is how it calls back).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define STATE_MT "luagpu.State"
#define USER_EVENTS_KEY "luagpu.user_events"   /* weak set of gpu.user_event's Events */

static const char STATE_KEY = 's';   /* its address keys the lg_State in the registry */

/* ----------------------------------------------------------- user events */

static cl_int exec_status(cl_event ev) {
  cl_int st = CL_COMPLETE;
  cl_int err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
  return err != CL_SUCCESS ? err : st;
}

void lg_event_note_user(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  lg_state(L);                            /* makes the set */
  lua_getfield(L, LUA_REGISTRYINDEX, USER_EVENTS_KEY);
  lua_pushvalue(L, idx);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

/* Counts the unset user events of the state's, failing each when fail is
** set (nothing can set them any more). */
static int each_unset(lua_State *L, int fail) {
  int n = 0;
  if (lua_getfield(L, LUA_REGISTRYINDEX, USER_EVENTS_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    return 0;
  }
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lg_Event *e = luaL_testudata(L, -2, LG_EVENT_MT);
    lua_pop(L, 1);
    if (e != NULL && e->user && e->ev != NULL && exec_status(e->ev) > CL_COMPLETE) {
      n++;
      if (fail) clSetUserEventStatus(e->ev, -1);
    }
  }
  lua_pop(L, 1);
  return n;
}

int lg_user_events_unset(lua_State *L) { return each_unset(L, 0); }

void lg_fail_user_events(lua_State *L) { each_unset(L, 1); }

/* ------------------------------------------------------ the state itself */

/* At lua_close (the context is made before anything else of luagpu's, so
** its finalizer runs after theirs): unset user events fail, the queues
** whose finish was put off (lg_finish_collected) are finished, then the
** close hooks run (the trace still recording lets its events and queues go). */
static int state_gc(lua_State *L) {
  lg_State *s = luaL_checkudata(L, 1, STATE_MT);
  size_t i;
  int h;
  lg_fail_user_events(L);
  for (i = 0; i < s->nfinish; i++) {
    cl_device_id dev = NULL;
    clGetCommandQueueInfo(s->finish[i], CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
    clFinish(s->finish[i]);
    clReleaseCommandQueue(s->finish[i]);
    if (dev != NULL) clReleaseDevice(dev);   /* retained by lg_finish_collected */
  }
  free(s->finish);
  s->finish = NULL;
  s->nfinish = s->capfinish = 0;
  for (h = 0; h < s->nclose; h++) s->on_close[h](s);
  s->nclose = 0;
  return 0;
}

lg_State *lg_state(lua_State *L) {
  lg_State *s;
  const char *v;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &STATE_KEY) == LUA_TUSERDATA) {
    s = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return s;
  }
  lua_pop(L, 1);
  s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  s->next_serial = 1;
  v = getenv("LUAGPU_DEBUG");
  s->debug_on = v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
  v = getenv("LUAGPU_COMPILE_NOTICE_S");
  s->compile_notice_s = 1.0;
  if (v != NULL && v[0] != '\0') {
    char *end;
    double x = strtod(v, &end);
    if (*end == '\0' && x >= 0 && x < 1e9) s->compile_notice_s = x;
  }
  if (luaL_newmetatable(L, STATE_MT)) {
    lua_pushcfunction(L, state_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &STATE_KEY);
  lua_newtable(L);                        /* the user events, a weak set */
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, USER_EVENTS_KEY);
  return s;
}

void lg_state_on_close(lua_State *L, void (*hook)(lg_State *s)) {
  lg_State *s = lg_state(L);
  int h;
  for (h = 0; h < s->nclose; h++)
    if (s->on_close[h] == hook) return;   /* the module opened again */
  if (s->nclose == LG_CLOSE_HOOKS) luaL_error(L, "luagpu: too many close hooks");
  s->on_close[s->nclose++] = hook;
}

int lg_wait_interrupted(lua_State *L) {
  lg_State *s = lg_state(L);
  return s->wait_interrupted != NULL && s->wait_interrupted();
}

void lg_after_wait(lua_State *L) {
  lg_State *s = lg_state(L);
  if (s->after_wait != NULL) s->after_wait(L);
}

/* While a user event is unset, a command of q may wait for it, and only
** the script could set it: the finish waits for lua_close, where unset
** user events fail first (state_gc finishes q then). */
void lg_finish_collected(lua_State *L, cl_command_queue q) {
  lg_State *s = lg_state(L);
  if (lg_user_events_unset(L) == 0) {
    clFinish(q);
    return;
  }
  if (s->nfinish == s->capfinish) {
    size_t ncap = s->capfinish == 0 ? 8 : s->capfinish * 2;
    cl_command_queue *nf = realloc(s->finish, ncap * sizeof *nf);
    if (nf == NULL) {                 /* no room to remember it: it still completes */
      clFlush(q);
      return;
    }
    s->finish = nf;
    s->capfinish = ncap;
  }
  clFlush(q);
  clRetainCommandQueue(q);
  /* and its device: a sub-device's id may otherwise be released first
     (partition.c's ring of late ids, at lua_close before this state), and
     PoCL's queue does not hold it (SIGSEGV in clFinish at lua_close) */
  {
    cl_device_id dev = NULL;
    if (clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL) == CL_SUCCESS &&
        dev != NULL)
      clRetainDevice(dev);
  }
  s->finish[s->nfinish++] = q;
}

/* ------------------------------------------------ where in the Lua script */

/* The first caller up the stack that is not one of luagpu's own Lua
** helpers (their source names a "luagpu/" file): "file.lua:12" (the
** innermost Lua caller when all are helpers; "" when there is none). */
void lg_lua_where(lua_State *L, char *buf, size_t size) {
  lua_Debug ar;
  int level;
  buf[0] = '\0';
  for (level = 1; level < 16 && lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
    if (buf[0] == '\0' || strstr(ar.source, "luagpu/") == NULL) {
      snprintf(buf, size, "%s:%d", ar.short_src, ar.currentline);
      if (strstr(ar.source, "luagpu/") == NULL) return;
    }
  }
}
