/*
** debug.c: the debug mode (gpu.debug(true), or LUAGPU_DEBUG=1 in the
** environment when the module opens). While it is on, buffers are made
** with a guard zone (a canary) after their data, every kernel launch waits
** for its kernel, and then: a failed kernel raises naming the kernel, its
** arguments and the Lua line that launched it; a kernel that wrote into the
** guard zone of a buffer argument raises "kernel K wrote past the end of
** argument #2 (y) at element N". Transfers wait too, and name their line
** when they fail. Off, the launch path pays one test of the state's
** debug_on (debug mode is per Lua state). While a user event of
** gpu.user_event's is unset, a command not yet done is not waited for (it
** may wait for that event, which only the script can set): its checks are
** skipped, and a failure shows when its Event is waited for.
*/
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CANARY_BYTE 0xCB

int lg_debugging(lua_State *L) { return lg_state(L)->debug_on; }

/* Whether the check of a command must be skipped: it is not done and a
** user event is unset (waiting might never end). */
static int may_block(lua_State *L, cl_event ev) {
  cl_int st = CL_COMPLETE;
  if (lg_user_events_unset(L) == 0) return 0;
  if (ev == NULL) return 1;
  clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
  return st > CL_COMPLETE;
}

size_t lg_debug_guard_bytes(size_t bytes) {
  size_t g = bytes / 8;                    /* 1/8 of the data, 256 B to 64 KiB */
  if (g < 256) g = 256;
  if (g > 65536) g = 65536;
  return (g + 127) / 128 * 128;
}

cl_int lg_debug_fill_guard(cl_command_queue q, cl_mem mem, size_t offset, size_t guard) {
  static const unsigned char pattern = CANARY_BYTE;
  cl_event ev = NULL;
  cl_int err = clEnqueueFillBuffer(q, mem, &pattern, 1, offset, guard, 0, NULL, &ev);
  if (err != CL_SUCCESS) return err;
  err = clWaitForEvents(1, &ev);
  clReleaseEvent(ev);
  return err;
}

/* Pushes a description of argument i of call c: "y (global float*: a buffer
** of 1000 float)", "n = 1000 (uint)", "tile (local: 1024 bytes)". */
static void push_arg(lua_State *L, const lg_Kernel *k, const lg_Call *c, cl_uint i) {
  const lg_ArgInfo *a = &k->args[i];
  const lg_CallArg *v = &c->args[i];
  char tname[LG_TYPENAME_MAX];
  const char *name = a->name[0] != '\0' ? a->name : "?";
  if (v->buf != NULL) {
    lua_pushfstring(L, "#%d %s (%s %s: a buffer of %I %s)", (int)i + 1, name, a->address,
                    a->type_name, (lua_Integer)v->buf->count, lg_type_name(v->buf->type, tname));
  } else if (v->value == NULL) {
    lua_pushfstring(L, "#%d %s (local: %I bytes)", (int)i + 1, name, (lua_Integer)v->size);
  } else if (a->typed && a->type.width == 1) {
    lg_push_scalar(L, a->type.scalar, v->value);
    lua_pushfstring(L, "#%d %s = %s (%s)", (int)i + 1, name, lg_tolstring(L, -1),
                    a->type_name);
    lua_replace(L, -3);
    lua_pop(L, 1);
  } else {
    lua_pushfstring(L, "#%d %s (%s)", (int)i + 1, name, a->type_name);
  }
}

/* Raises: kernel K failed with status, listing its arguments. */
static void launch_failed(lua_State *L, const lg_Kernel *k, const lg_Call *c, cl_int st,
                          const char *where) {
  luaL_Buffer b;
  cl_uint i;
  luaL_buffinit(L, &b);
  for (i = 0; i < c->nargs; i++) {
    push_arg(L, k, c, i);
    luaL_addstring(&b, i > 0 ? ", " : "");
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  luaL_error(L, "luagpu: debug: kernel %s launched at %s failed: %s (%d); its arguments: %s",
             k->name, where, lg_clerror_name(st), (int)st, lua_tostring(L, -1));
}

/* Checks the guard zone of the root of buffer argument i; raises when the
** kernel wrote into it (after putting the canary back). */
static void check_guard(lua_State *L, const lg_Kernel *k, const lg_Call *c, cl_uint i,
                        cl_command_queue q, const char *where) {
  const lg_Buffer *arg = c->args[i].buf, *root = arg->root;
  size_t esize = lg_type_size(root->type), data = root->count * esize, j;
  size_t guard = root->canary;
  unsigned char *got;
  cl_int err;
  if (guard == 0 || root->mem == NULL) return;
  if (data == 0) data = esize;               /* an empty buffer has one element */
  got = malloc(guard);
  if (got == NULL) luaL_error(L, "luagpu: debug: out of memory");
  err = clEnqueueReadBuffer(q, root->mem, CL_TRUE, data, guard, got, 0, NULL, NULL);
  if (err != CL_SUCCESS) {
    free(got);
    lg_clerror(L, "clEnqueueReadBuffer", err, "debug: reading the guard zone of argument #%d "
               "of kernel %s", (int)i + 1, k->name);
  }
  for (j = 0; j < guard && got[j] == CANARY_BYTE; j++) {}
  free(got);
  if (j == guard) return;
  lg_debug_fill_guard(q, root->mem, data, guard);
  {
    /* the first element touched, numbered from the argument's first (a view
    ** counts from its own start, as b:sub's elements do) */
    size_t elem = root->count + j / esize - arg->offset + 1;
    const char *name = k->args[i].name[0] != '\0' ? k->args[i].name : "?";
    char tname[LG_TYPENAME_MAX];
    luaL_error(L, "luagpu: debug: kernel %s wrote past the end of argument #%d (%s) at "
               "element %I (it has %I elements of %s; launched at %s)", k->name, (int)i + 1,
               name, (lua_Integer)elem, (lua_Integer)arg->count,
               lg_type_name(arg->type, tname), where);
  }
}

static void check_launch(lua_State *L, const lg_Call *c, cl_command_queue q, cl_int st,
                         const char *where);

/* check_launch(call, queue, status, where) under lua_pcall: the temporary
** queue is released whatever it raises. */
static int check_later_protected(lua_State *L) {
  check_launch(L, lua_touserdata(L, 1), lua_touserdata(L, 2), (cl_int)lua_tointeger(L, 3),
               lua_tostring(L, 4));
  return 0;
}

/* The checks of a launch that is done (st its status): raises naming a
** failed kernel, or a write into a guard zone (read through q). */
static void check_launch(lua_State *L, const lg_Call *c, cl_command_queue q, cl_int st,
                         const char *where) {
  cl_uint i;
  if (st < 0) launch_failed(L, c->kernel, c, st, where);
  for (i = 0; i < c->nargs; i++)
    if (c->args[i].buf != NULL) check_guard(L, c->kernel, c, i, q, where);
}

int lg_debug_after_launch(lua_State *L, const lg_Call *c, cl_command_queue q, cl_event ev) {
  char where[160];
  cl_int st = CL_COMPLETE, err;
  if (may_block(L, ev)) return 1;
  lg_lua_where(L, where, sizeof where);
  err = ev != NULL ? clWaitForEvents(1, &ev) : clFinish(q);
  if (ev != NULL)
    clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
  if (st >= 0 && err != CL_SUCCESS && err != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    st = err;
  check_launch(L, c, q, st, where);
  return 0;
}

void lg_debug_later(lua_State *L, int evidx, int callidx) {
  lg_Event *e = lua_touserdata(L, evidx);
  char where[160];
  evidx = lua_absindex(L, evidx);
  callidx = lua_absindex(L, callidx);
  lg_lua_where(L, where, sizeof where);
  lua_createtable(L, 2, 0);
  lua_pushvalue(L, callidx);
  lua_rawseti(L, -2, 1);
  lua_pushstring(L, where);
  lua_rawseti(L, -2, 2);
  lua_setiuservalue(L, evidx, 3);
  e->debug_later = 1;
}

void lg_debug_check_later(lua_State *L, int evidx, lg_Event *e, cl_int st) {
  const lg_Call *c;
  cl_command_queue q = NULL, own;
  cl_context ctx = NULL;
  cl_device_id dev = NULL;
  cl_int err;
  int top = lua_gettop(L);
  e->debug_later = 0;
  if (lua_getiuservalue(L, evidx, 3) != LUA_TTABLE) {
    lua_settop(L, top);
    return;
  }
  lua_pushnil(L);
  lua_setiuservalue(L, evidx, 3);
  lua_rawgeti(L, -1, 1);
  lua_rawgeti(L, -2, 2);
  c = lua_touserdata(L, -2);
  /* the guard zones are read through a queue of its own: the command's may
  ** hold later commands that wait for another unset user event */
  clGetEventInfo(e->ev, CL_EVENT_COMMAND_QUEUE, sizeof q, &q, NULL);
  clGetEventInfo(e->ev, CL_EVENT_CONTEXT, sizeof ctx, &ctx, NULL);
  if (q != NULL) clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
  own = ctx != NULL && dev != NULL ? clCreateCommandQueue(ctx, dev, 0, &err) : NULL;
  if (own == NULL) {             /* no queue to read with: the status is all it can tell */
    if (st < 0) launch_failed(L, c->kernel, c, st, lua_tostring(L, -1));
    lua_settop(L, top);
    return;
  }
  lua_pushcfunction(L, check_later_protected);
  lua_pushlightuserdata(L, (void *)c);
  lua_pushlightuserdata(L, own);
  lua_pushinteger(L, st);
  lua_pushvalue(L, -5);          /* where */
  err = lua_pcall(L, 4, 0, 0);
  clReleaseCommandQueue(own);
  if (err != LUA_OK) lua_error(L);
  lua_settop(L, top);
}

cl_int lg_debug_after_transfer(lua_State *L, cl_event ev) {
  cl_int st = CL_COMPLETE;
  if (ev == NULL || may_block(L, ev)) return 0;
  clWaitForEvents(1, &ev);
  clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
  return st < 0 ? st : 0;
}

void lg_debug_transfer_error(lua_State *L, const char *command, cl_int st) {
  char where[160];
  lg_lua_where(L, where, sizeof where);
  luaL_error(L, "luagpu: debug: %s enqueued at %s failed: %s (%d)", command, where,
             lg_clerror_name(st), (int)st);
}

/* gpu.debug([on]): with a boolean, turns the debug mode on or off; returns
** whether it was on. */
static int mod_debug(lua_State *L) {
  lg_State *s = lg_state(L);
  int was = s->debug_on;
  if (!lua_isnoneornil(L, 1)) {
    if (!lua_isboolean(L, 1))
      return lg_argerror(L, "gpu.debug", 1, "expected a boolean, got %s", luaL_typename(L, 1));
    s->debug_on = lua_toboolean(L, 1);
  }
  lua_pushboolean(L, was);
  return 1;
}

static const luaL_Reg debug_functions[] = {{"debug", mod_debug}, {NULL, NULL}};

/* LUAGPU_DEBUG is read when the state's context is made (state.c). */
void lg_open_debug(lua_State *L) {
  luaL_setfuncs(L, debug_functions, 0);
}
