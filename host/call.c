/*
** call.c: binding and launching kernels. k(args...) checks and converts
** every argument once, into a Call ready for clSetKernelArg; call:run and
** dev:run check the sizes against the device and kernel limits, set the
** arguments (skipped when this call set them last on its cl_kernel) and
** enqueue, returning the Event. gpu.localmem(type, count) sizes __local
** parameters.
*/
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define SLOT 16   /* scalar values are stored 16-byte aligned: double16 is 128 */

/* ------------------------------------------------------------ localmem */

/* gpu.localmem(type, count) */
static int lm_new(lua_State *L) {
  lg_Type t = lg_checktype(L, 1, "gpu.localmem", 1);
  size_t n = lg_checksize(L, 2, "gpu.localmem", 2, "a count of elements >= 1");
  size_t size = lg_type_size(t);
  char name[LG_TYPENAME_MAX];
  lg_LocalMem *m;
  if (n == 0) return lg_argerror(L, "gpu.localmem", 2, "expected a count of elements >= 1, got 0");
  if (n > (size_t)LUA_MAXINTEGER / size)   /* bytes must fit, and be a Lua integer */
    return lg_argerror(L, "gpu.localmem", 2, "too large: %I elements of %s (at most %I)",
                       (lua_Integer)n, lg_type_name(t, name),
                       (lua_Integer)((size_t)LUA_MAXINTEGER / size));
  m = lua_newuserdatauv(L, sizeof *m, 0);
  m->type = t;
  m->count = n;
  m->bytes = n * size;
  luaL_setmetatable(L, LG_LOCALMEM_MT);
  return 1;
}

static int lm_index(lua_State *L) {
  lg_LocalMem *m = luaL_checkudata(L, 1, LG_LOCALMEM_MT);
  const char *k = luaL_checkstring(L, 2);
  char name[LG_TYPENAME_MAX];
  if (strcmp(k, "type") == 0) lua_pushstring(L, lg_type_name(m->type, name));
  else if (strcmp(k, "count") == 0) lua_pushinteger(L, (lua_Integer)m->count);
  else if (strcmp(k, "bytes") == 0) lua_pushinteger(L, (lua_Integer)m->bytes);
  else if (!lg_pushmethod(L, 1, 2)) lua_pushnil(L);   /* gpu.extend's */
  return 1;
}

static int lm_tostring(lua_State *L) {
  lg_LocalMem *m = luaL_checkudata(L, 1, LG_LOCALMEM_MT);
  char name[LG_TYPENAME_MAX];
  lua_pushfstring(L, LG_LOCALMEM_MT " (%s, %I)", lg_type_name(m->type, name),
                  (lua_Integer)m->count);
  return 1;
}

/* ------------------------------------------------------------- binding */

/* Pushes "float* x" style text naming parameter i, for messages. */
static const char *param(lua_State *L, const lg_ArgInfo *a) {
  const char *space = strcmp(a->address, "private") == 0 ? "" : a->address;
  return lua_pushfstring(L, "%s%s%s%s%s %s", space, space[0] ? " " : "", a->qualifiers,
                         a->qualifiers[0] ? " " : "", a->type_name, a->name);
}

/* Names of the parameters, ", "-separated. */
static const char *param_names(lua_State *L, const lg_Kernel *k) {
  luaL_Buffer b;
  cl_uint i;
  luaL_buffinit(L, &b);
  for (i = 0; i < k->nargs; i++) {
    if (i > 0) luaL_addstring(&b, ", ");
    luaL_addstring(&b, k->args[i].name);
  }
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

/* The Buffer at idx; a value whose metatable has a __tobuffer function (a
** Tensor) is replaced at idx by what that returns, so the call keeps it. */
static lg_Buffer *buffer_arg(lua_State *L, int idx) {
  lg_Buffer *b = lg_testbuffer(L, idx);
  if (b != NULL) return b;
  if (luaL_getmetafield(L, idx, "__tobuffer") == LUA_TNIL) return NULL;
  if (!lua_isfunction(L, -1)) {
    lua_pop(L, 1);
    return NULL;
  }
  lua_pushvalue(L, idx);
  lua_call(L, 1, 1);
  lua_replace(L, idx);
  return lg_testbuffer(L, idx);
}

static void bind_buffer(lua_State *L, lg_Kernel *k, const lg_ArgInfo *a, int i, int idx,
                        lg_CallArg *ca, cl_mem *slot) {
  lg_Buffer *b = buffer_arg(L, idx);
  char want[LG_TYPENAME_MAX], got[LG_TYPENAME_MAX];
  if (b == NULL)
    lg_typeerror(L, k->command, i, idx,
                 a->typed ? lua_pushfstring(L, "a Buffer of %s for parameter '%s'",
                                            lg_type_name(a->type, want), param(L, a))
                          : lua_pushfstring(L, "a Buffer for parameter '%s'", param(L, a)));
  if (!lg_buffer_live(b))
    lg_argerror(L, k->command, i, "(%s): attempt to use a released buffer", a->name);
  if (a->typed && (b->type.scalar != a->type.scalar || b->type.width != a->type.width))
    lg_argerror(L, k->command, i, "expected a Buffer of %s for parameter '%s', got a Buffer of %s",
                lg_type_name(a->type, want), param(L, a), lg_type_name(b->type, got));
  if (b->dev->ctx != k->dev->ctx)
    lg_argerror(L, k->command, i, "(%s): the buffer is on %s, of another context than %s",
                a->name, b->dev->name, k->dev->name);
  *slot = lg_buffer_kernel_mem(L, b);
  ca->size = sizeof(cl_mem);
  ca->value = slot;
  ca->buf = b;
}

/* Binds a gpu.localmem argument, adding its bytes to *local, the call's
** sum so far (saturating: never wrapping past SIZE_MAX). */
static void bind_local(lua_State *L, lg_Kernel *k, const lg_ArgInfo *a, int i, int idx,
                       lg_CallArg *ca, size_t *local) {
  lg_LocalMem *m = luaL_testudata(L, idx, LG_LOCALMEM_MT);
  char want[LG_TYPENAME_MAX], got[LG_TYPENAME_MAX];
  if (m == NULL)
    lg_typeerror(L, k->command, i, idx,
                 lua_pushfstring(L, "gpu.localmem(type, count) for parameter '%s'", param(L, a)));
  if (a->typed && (m->type.scalar != a->type.scalar || m->type.width != a->type.width))
    lg_argerror(L, k->command, i, "expected gpu.localmem of %s for parameter '%s', got %s",
                lg_type_name(a->type, want), param(L, a), lg_type_name(m->type, got));
  *local = m->bytes > SIZE_MAX - *local ? SIZE_MAX : *local + m->bytes;
  ca->size = m->bytes;
  ca->value = NULL;
}

/* Pushes "argument #i (TYPE NAME)", for messages. */
static const char *arg_what(lua_State *L, int i, const lg_ArgInfo *a) {
  return lua_pushfstring(L, "argument #%d (%s %s)", i, a->type_name, a->name);
}

/* The number (or the table of numbers, for a vector) at idx into slot:
** the messages that name the argument are made only for a value that
** needs them (formatting them for every argument of every call cost more
** than the rest of the binding). */
static void bind_scalar(lua_State *L, lg_Kernel *k, const lg_ArgInfo *a, int i, int idx,
                        lg_CallArg *ca, unsigned char *slot) {
  int w = a->type.width, j;
  size_t es = lg_scalar_size(a->type.scalar);
  ca->size = lg_type_size(a->type);
  ca->value = slot;
  if (w == 1) {
    if (!lg_store_scalar_quick(L, idx, a->type.scalar, slot)) {
      lg_store_scalar(L, idx, a->type.scalar, slot, k->command, arg_what(L, i, a));
      lua_pop(L, 1);
    }
    return;
  }
  if (!lua_istable(L, idx) || luaL_getmetafield(L, idx, "__name") != LUA_TNIL)
    lg_error(L, k->command, "%s: expected a table of %d numbers, got %s", arg_what(L, i, a), w,
             luaL_typename(L, idx));
  if (lua_rawlen(L, idx) != (size_t)w)
    lg_error(L, k->command, "%s: expected a table of %d numbers, got a table of %d",
             arg_what(L, i, a), w, (int)lua_rawlen(L, idx));
  for (j = 0; j < w; j++) {
    lua_rawgeti(L, idx, j + 1);
    if (!lg_store_scalar_quick(L, -1, a->type.scalar, slot + (size_t)j * es)) {
      const char *wj = lua_pushfstring(L, "%s[%d]", arg_what(L, i, a), j + 1);
      lg_store_scalar(L, -3, a->type.scalar, slot + (size_t)j * es, k->command, wj);
      lua_pop(L, 2);
    }
    lua_pop(L, 1);
  }
}

lg_Call *lg_bindcall(lua_State *L, int kidx, int first, int last) {
  lg_Kernel *k = luaL_checkudata(L, kidx, LG_KERNEL_MT);
  int n = last - first + 1, i, argsidx;
  size_t data = 0, local = 0, head = (sizeof(lg_Call) + SLOT - 1) / SLOT * SLOT;
  unsigned char *p;
  lg_Call *c;
  cl_uint j;
  if (k->k == NULL) lg_released_error(L, kidx, "kernel");
  if (n != (int)k->nargs)
    lg_error(L, k->command, "expected %d argument%s (%s), got %d", (int)k->nargs,
             k->nargs == 1 ? "" : "s", param_names(L, k), n);
  for (j = 0; j < k->nargs; j++) {
    const lg_ArgInfo *a = &k->args[j];
    if (a->kind == LG_ARG_BUFFER || a->kind == LG_ARG_OTHER) data += SLOT;
    else if (a->kind == LG_ARG_SCALAR) data += (lg_type_size(a->type) + SLOT - 1) / SLOT * SLOT;
  }
  head += (k->nargs * sizeof(lg_CallArg) + SLOT - 1) / SLOT * SLOT;
  c = lua_newuserdatauv(L, head + data, 2);
  memset(c, 0, head + data);
  luaL_setmetatable(L, LG_CALL_MT);
  lua_pushvalue(L, kidx);
  lua_setiuservalue(L, -2, 1);
  c->kernel = k;
  c->nargs = k->nargs;
  c->args = (lg_CallArg *)((unsigned char *)c + (sizeof(lg_Call) + SLOT - 1) / SLOT * SLOT);
  p = (unsigned char *)c + head;
  lua_createtable(L, n, 0);
  argsidx = lua_gettop(L);
  for (i = 0; i < n; i++) {
    const lg_ArgInfo *a = &k->args[i];
    int idx = first + i;
    switch (a->kind) {
      case LG_ARG_BUFFER:
        bind_buffer(L, k, a, i + 1, idx, &c->args[i], (cl_mem *)p);
        p += SLOT;
        break;
      case LG_ARG_LOCAL:
        bind_local(L, k, a, i + 1, idx, &c->args[i], &local);
        break;
      case LG_ARG_SCALAR:
        bind_scalar(L, k, a, i + 1, idx, &c->args[i], p);
        p += (lg_type_size(a->type) + SLOT - 1) / SLOT * SLOT;
        break;
      default:   /* images and samplers: image.c's */
        if (!lg_bind_image_arg(L, a, k->dev, idx, k->command, i + 1, p, &c->args[i].size))
          lg_argerror(L, k->command, i + 1, "parameter '%s' has a type luagpu cannot pass",
                      param(L, a));
        c->args[i].value = p;
        p += SLOT;
    }
    lua_pushvalue(L, idx);
    lua_rawseti(L, argsidx, i + 1);
  }
  if (local > k->dev->local_mem_size)
    lg_error(L, k->command, "the gpu.localmem arguments take %s bytes, more than the "
             "device's local_mem_size (%I bytes)",
             local > (size_t)LUA_MAXINTEGER ? "over 2^63"
                                            : lua_pushfstring(L, "%I", (lua_Integer)local),
             (lua_Integer)k->dev->local_mem_size);
  lua_setiuservalue(L, -2, 2);
  c->serial = lg_state(L)->next_serial++;   /* per state: a kernel is one state's */
  return c;
}

/* ----------------------------------------------------------- launching */

/* Reads 1 to 3 sizes (a table, or a number for one dimension) at idx;
** returns the number of dimensions. min is the least size allowed. */
static cl_uint get_sizes(lua_State *L, int idx, size_t *out, size_t min, const char *fn,
                         int argno, const char *what) {
  lua_Integer v;
  cl_uint n, i;
  int isnum;
  if (lua_type(L, idx) == LUA_TNUMBER) {
    v = lua_tointegerx(L, idx, &isnum);
    if (!isnum || v < (lua_Integer)min)
      lg_argerror(L, fn, argno, "%s: expected an integer >= %d, got %s", what, (int)min,
                  lg_tolstring(L, idx));
    out[0] = (size_t)v;
    return 1;
  }
  if (!lua_istable(L, idx))
    lg_typeerror(L, fn, argno, idx, lua_pushfstring(L, "%s: a table of 1 to 3 sizes", what));
  n = (cl_uint)lua_rawlen(L, idx);
  if (n < 1 || n > 3)
    lg_argerror(L, fn, argno, "%s: expected 1 to 3 dimensions, got %d", what, (int)n);
  for (i = 0; i < n; i++) {
    lua_rawgeti(L, idx, (lua_Integer)i + 1);
    v = lua_tointegerx(L, -1, &isnum);
    if (!isnum || v < (lua_Integer)min)
      lg_argerror(L, fn, argno, "%s[%d]: expected an integer >= %d, got %s", what, (int)i + 1,
                  (int)min, lg_tolstring(L, -1));
    out[i] = (size_t)v;
    lua_pop(L, 1);
  }
  return n;
}

/* Pushes "{a, b, c}". */
static const char *fmt_sizes(lua_State *L, const size_t *s, cl_uint n) {
  if (n == 1) return lua_pushfstring(L, "{%I}", (lua_Integer)s[0]);
  if (n == 2) return lua_pushfstring(L, "{%I, %I}", (lua_Integer)s[0], (lua_Integer)s[1]);
  return lua_pushfstring(L, "{%I, %I, %I}", (lua_Integer)s[0], (lua_Integer)s[1],
                         (lua_Integer)s[2]);
}

#define ENQ "clEnqueueNDRangeKernel"

/* An empty launch: a marker on q after the wait list, and its Event. */
static int empty_launch(lua_State *L, cl_command_queue q, int qidx, cl_uint nwait,
                        const cl_event *wait, const char *command) {
  cl_event ev = NULL;
  int keep[1];
  cl_int err = clEnqueueMarkerWithWaitList(q, nwait, wait, &ev);
  if (err != CL_SUCCESS) lg_clerror(L, "clEnqueueMarkerWithWaitList", err, NULL);
  if (lg_tracing(L))          /* command is "kernel NAME" */
    lg_trace_add(L, q, ev, "kernel", command + 7, 0, NULL, NULL, 0, nwait, wait);
  keep[0] = qidx;
  lg_pushevent(L, ev, command, keep, qidx != 0 ? 1 : 0);
  return 1;
}

static void check_local(lua_State *L, const lg_Kernel *k, const size_t *g, const size_t *l,
                        cl_uint dims) {
  const lg_Device *d = k->dev;
  size_t total = 1;
  cl_uint i;
  for (i = 0; i < dims; i++) {
    if (l[i] > d->max_work_item_sizes[i])
      lg_clerror(L, ENQ, CL_INVALID_WORK_ITEM_SIZE, "local size %s exceeds the device's "
                 "max_work_item_sizes[%d] = %I", fmt_sizes(L, l, dims), (int)i + 1,
                 (lua_Integer)d->max_work_item_sizes[i]);
    total *= l[i];
  }
  if (total > d->max_work_group_size)
    lg_clerror(L, ENQ, CL_INVALID_WORK_GROUP_SIZE, "local size %s has %I work-items, more "
               "than the device's max_work_group_size %I", fmt_sizes(L, l, dims),
               (lua_Integer)total, (lua_Integer)d->max_work_group_size);
  if (total > k->work_group_size)
    lg_clerror(L, ENQ, CL_INVALID_WORK_GROUP_SIZE, "local size %s has %I work-items, more "
               "than kernel %s allows on this device (work_group_size %I)",
               fmt_sizes(L, l, dims), (lua_Integer)total, k->name,
               (lua_Integer)k->work_group_size);
  for (i = 0; i < dims; i++)
    if (g[i] % l[i] != 0)
      lg_clerror(L, ENQ, CL_INVALID_WORK_GROUP_SIZE, "local size %s does not divide global "
                 "size %s", fmt_sizes(L, l, dims), fmt_sizes(L, g, dims));
}

/* One launch: where its parts are on the stack, and what the options gave. */
typedef struct Launch {
  int callidx, gidx, lidx;     /* the Call, the global and local sizes */
  const size_t *off;           /* the global offset, or NULL */
  cl_uint offdims;
  cl_command_queue q;          /* NULL when the options' metamethods released it */
  int qidx;                    /* its Queue userdata; 0 for the default queue */
  cl_uint nwait;
  const cl_event *wait;
  const char *fn;              /* "call:run" or "dev:run" */
  int argno;                   /* the argument number of the global size */
  int no_event;                /* opts.event == false: no Event asked for, none returned */
} Launch;

/* Enqueues the launch a describes and pushes its Event. A global size with
** a 0 in it runs nothing: a marker (waiting on the same list) stands in. */
static int launch(lua_State *L, const Launch *a) {
  lg_Call *c = lua_touserdata(L, a->callidx);
  lg_Kernel *k = c->kernel;
  const char *fn = a->fn;
  cl_command_queue q = a->q;
  size_t g[3], l[3];
  cl_uint dims, i;
  cl_event ev = NULL;
  cl_int err;
  int has_local = !lua_isnoneornil(L, a->lidx), argno = a->argno;
  lg_Event *pre = NULL;        /* the Event, made before the enqueue */
  int evidx = 0;               /* its place on the stack */
  const lg_State *st = lg_state(L);
  if (k->k == NULL) lg_error(L, fn, "attempt to use a released kernel");
  if (q == NULL) lg_error(L, fn, "attempt to use a released queue");
  dims = get_sizes(L, a->gidx, g, 0, fn, argno, "global size");
  if (dims > k->dev->max_work_item_dims)
    lg_argerror(L, fn, argno, "the device has %d dimensions, got %d",
                (int)k->dev->max_work_item_dims, (int)dims);
  if (has_local) {
    cl_uint ldims = get_sizes(L, a->lidx, l, 1, fn, argno + 1, "local size");
    if (ldims != dims)
      lg_argerror(L, fn, argno + 1, "local size %s has not the %d dimension%s of global size %s",
                  fmt_sizes(L, l, ldims), (int)dims, dims > 1 ? "s" : "", fmt_sizes(L, g, dims));
    check_local(L, k, g, l, dims);
  }
  {
    /* Drivers count work-groups in 32 bits (PoCL aborts the process past
    ** that): refuse a launch that would need more, whatever local size
    ** OpenCL would choose. */
    double groups = 1.0;
    for (i = 0; i < dims; i++) {
      size_t per = has_local ? l[i] : (i == 0 ? k->dev->max_work_group_size : 1);
      groups *= (double)((g[i] + per - 1) / per);
    }
    if (groups >= 4294967296.0)
      lg_argerror(L, fn, argno, "global size %s needs %s work-groups, more than the 2^32 - 1 "
                  "OpenCL drivers can launch", fmt_sizes(L, g, dims),
                  groups < 9e18 ? lua_pushfstring(L, "%I", (lua_Integer)groups)
                                : lg_pushnumber(L, (lua_Number)groups));
  }
  if (a->off != NULL && a->offdims != dims)
    lg_error(L, fn, "offset %s has not the %d dimension%s of global size %s",
             fmt_sizes(L, a->off, a->offdims), (int)dims, dims > 1 ? "s" : "",
             fmt_sizes(L, g, dims));
  for (i = 0; i < c->nargs; i++)
    if (c->args[i].buf != NULL) {
      if (!lg_buffer_live(c->args[i].buf))
        lg_error(L, fn, "argument #%d (%s) of kernel %s: attempt to use a released buffer",
                 (int)i + 1, k->args[i].name, k->name);
      lg_buffer_written(c->args[i].buf);    /* const or not: the kernel may cast it away */
    }
  for (i = 0; i < dims; i++)
    if (g[i] == 0) {
      if (a->no_event) return 0;   /* nothing to run, nothing to return */
      return empty_launch(L, q, a->qidx, a->nwait, a->wait, k->command);
    }
  if (k->args_of != c->serial) {
    k->args_of = 0;
    for (i = 0; i < c->nargs; i++) {
      err = clSetKernelArg(k->k, i, c->args[i].size, c->args[i].value);
      if (err != CL_SUCCESS)
        lg_clerror(L, "clSetKernelArg", err, "argument #%d (%s) of kernel %s", (int)i + 1,
                   k->args[i].name, k->name);
    }
    k->args_of = c->serial;
  }
  /* The Event is made here, released (no cl_event) until the command is
  ** enqueued: nothing can fail between the enqueue and the return, and no
  ** protected call is needed. It keeps nothing on the default queue
  ** (OpenCL itself retains the kernel and the buffers of an enqueued
  ** command, and an Event holding nothing is let go by the collector
  ** without waiting: a waiting __gc would throttle a launch loop to the
  ** device's pace); an explicit queue it keeps, for its flush and
  ** profiling. */
  if (!a->no_event) {
    pre = a->qidx == 0 ? lg_newevent(L, k->command) : lg_newevent_on(L, k->command, a->qidx);
    evidx = lua_gettop(L);
  }
  err = clEnqueueNDRangeKernel(q, k->k, dims, a->off, g, has_local ? l : NULL,
                               a->nwait, a->wait, a->no_event && !st->trace_on ? NULL : &ev);
  if (lg_is_oom(err)) {       /* dead buffers may hold the memory: collect, retry once */
    lua_gc(L, LUA_GCCOLLECT);
    err = clEnqueueNDRangeKernel(q, k->k, dims, a->off, g, has_local ? l : NULL,
                                 a->nwait, a->wait, a->no_event && !st->trace_on ? NULL : &ev);
  }
  if (err != CL_SUCCESS) lg_clerror(L, ENQ, err, NULL);
  if (st->trace_on) {         /* the trace's own event when no Event was asked for */
    lg_trace_add(L, q, ev, "kernel", k->name, dims, g, has_local ? l : NULL, 0, a->nwait,
                 a->wait);
    if (a->no_event) clReleaseEvent(ev);
  }
  if (a->no_event) {
    if (st->debug_on) lg_debug_after_launch(L, c, q, NULL);
    return 0;
  }
  lg_event_start(L, pre, ev);
  if (st->debug_on && lg_debug_after_launch(L, c, q, ev))   /* may raise: the Event owns ev */
    lg_debug_later(L, evidx, a->callidx);                  /* skipped: checked when waited */
  return 1;
}

/* luaL_checkudata without the registry lookup: the metatable is upvalue 1
** of call:run (the launch path counts every instruction). */
static lg_Call *check_call(lua_State *L, int idx) {
  lg_Call *c = lua_touserdata(L, idx);
  if (c != NULL && lua_getmetatable(L, idx)) {
    int same = lua_rawequal(L, -1, lua_upvalueindex(1));
    lua_pop(L, 1);
    if (same) return c;
  }
  return luaL_checkudata(L, idx, LG_CALL_MT);
}

/* Pushes the Device of the Call at idx. */
static int push_call_device(lua_State *L, int idx) {
  lua_getiuservalue(L, idx, 1);       /* kernel */
  lua_getiuservalue(L, -1, 1);        /* program */
  lua_getiuservalue(L, -1, 1);        /* device */
  lua_replace(L, -3);
  lua_pop(L, 1);
  return lua_gettop(L);
}

/* Reads opts.offset and opts.event of the options table at idx into a
** (the offset into off). */
static void get_run_options(lua_State *L, int idx, size_t *off, Launch *a) {
  if (lua_getfield(L, idx, "offset") != LUA_TNIL) {
    a->offdims = get_sizes(L, lua_gettop(L), off, 0, a->fn, a->argno + 2, "offset");
    a->off = off;
  }
  if (lua_getfield(L, idx, "event") != LUA_TNIL) {
    if (!lua_isboolean(L, -1))
      lg_argerror(L, a->fn, a->argno + 2, "event: expected a boolean, got %s",
                  luaL_typename(L, -1));
    a->no_event = !lua_toboolean(L, -1);
  }
  lua_pop(L, 2);
}

/* The options of call:run and dev:run. */
static const char *const run_options[] = {"wait", "queue", "offset", "event", NULL};

/* call:run(global [, local] [, opts]) */
/* Whether the options table at idx is exactly {event = false} (read raw):
** the launch path of helpers that want no Event, which needs none of the
** options' checks; sets a->no_event. */
static int only_no_event(lua_State *L, int idx, Launch *a) {
  int only;
  if (!lua_istable(L, idx) || lua_getmetatable(L, idx)) {
    if (lua_istable(L, idx)) lua_pop(L, 1);
    return 0;
  }
  lua_pushnil(L);
  if (!lua_next(L, idx)) return 0;
  only = lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), "event") == 0 &&
         lua_isboolean(L, -1) && !lua_toboolean(L, -1);
  lua_pop(L, 1);                            /* the value; the key stays for lua_next */
  if (!only || lua_next(L, idx)) {
    lua_settop(L, idx);
    return 0;
  }
  a->no_event = 1;
  return 1;
}

static int call_run(lua_State *L) {
  lg_Call *c = check_call(L, 1);
  lg_Device *d = c->kernel->dev;
  Launch a = {1, 2, 3, NULL, 0, NULL, 0, 0, NULL, "call:run", 1, 0};
  lg_Opts o;
  size_t off[3];
  int qidx;
  if (lua_isnoneornil(L, 4) || only_no_event(L, 4, &a)) {   /* the common cases */
    if (d->queue == NULL) {
      push_call_device(L, 1);
      lg_push_default_queue(L, -1);
      lua_pop(L, 2);
    }
    lua_settop(L, 3);
    a.q = d->queue;
    return launch(L, &a);
  }
  lua_settop(L, 4);
  lg_checkoptions(L, 4, "call:run", 3, run_options);
  push_call_device(L, 1);
  lg_getopts(L, 4, -1, "call:run", 3, &o);
  /* a kernel runs only on a queue of the device it was built for (PoCL
  ** aborts the process on another's) */
  if (o.queue->dev != d)
    return lg_argerror(L, "call:run", 3, "queue: the queue is on another device (%s) than the "
                       "one the kernel was built for (%s)", o.queue->dev->name, d->name);
  qidx = lua_gettop(L) - 1;                 /* the Queue lg_getopts pushed */
  get_run_options(L, 4, off, &a);
  a.q = o.queue->q;
  a.qidx = o.queue->q == d->queue ? 0 : qidx;
  a.nwait = o.nwait;
  a.wait = o.wait;
  return launch(L, &a);
}

/* dev:run(call, global [, local] [, ev...] [, opts]) */
static int dev_run(lua_State *L) {
  lg_Device *d = lg_checkdevice(L, 1);
  lg_Call *c = luaL_testudata(L, 2, LG_CALL_MT);
  int top = lua_gettop(L), last = top, optidx = 0;
  Launch a = {2, 3, 4, NULL, 0, NULL, 0, 0, NULL, "dev:run", 2, 0};
  lg_Opts o;
  size_t off[3];
  if (c == NULL) return lg_typeerror(L, "dev:run", 1, 2, "a " LG_CALL_MT " (k(...))");
  if (c->kernel->dev != d)
    return lg_argerror(L, "dev:run", 1, "the call's kernel was built for another device (%s), "
                       "not %s", c->kernel->dev->name, d->name);
  if (top >= 5 && lua_istable(L, top)) {
    optidx = top;
    last = top - 1;
    lg_checkoptions(L, optidx, "dev:run", optidx - 1, run_options);
  }
  if (top < 4) lua_settop(L, 4);
  lua_pushnil(L);                           /* stands for absent options */
  lg_getopts_events(L, optidx ? optidx : lua_gettop(L), 1, 5, last, "dev:run", optidx - 1, &o);
  if (o.queue->dev != d)
    return lg_argerror(L, "dev:run", optidx - 1, "queue: the queue is on another device (%s) "
                       "than the one the kernel was built for (%s)", o.queue->dev->name, d->name);
  a.qidx = o.queue->q == d->queue ? 0 : lua_gettop(L) - 1;   /* the default queue: none */
  if (optidx) {
    a.argno = optidx - 3;      /* so that a.argno + 2 names the options */
    get_run_options(L, optidx, off, &a);
    a.argno = 2;
  }
  a.q = o.queue->q;
  a.nwait = o.nwait;
  a.wait = o.wait;
  return launch(L, &a);
}

/* call:with(old, new): a copy of the call with every argument that is the
** Buffer old bound to the Buffer new instead (checked as k(...) checks a
** buffer); the other arguments are copied as they were converted; the
** call itself when old is none of them. The helpers use it to run a
** remembered sequence of launches into another output buffer without
** binding every argument again. */
static int call_with(lua_State *L) {
  lg_Call *c = luaL_checkudata(L, 1, LG_CALL_MT);
  lg_Kernel *k = c->kernel;
  lg_Buffer *old = lg_testbuffer(L, 2);
  size_t size = lua_rawlen(L, 1);
  ptrdiff_t shift;
  lg_Call *n;
  cl_uint i;
  int found = 0;
  if (old == NULL) return lg_typeerror(L, "call:with", 1, 2, "a Buffer");
  if (lg_testbuffer(L, 3) == NULL) return lg_typeerror(L, "call:with", 2, 3, "a Buffer");
  lua_settop(L, 3);
  for (i = 0; i < c->nargs && !found; i++)
    found = c->args[i].buf == old && k->args[i].kind == LG_ARG_BUFFER;
  if (!found) {
    lua_settop(L, 1);
    return 1;
  }
  if (k->k == NULL) {
    lua_getiuservalue(L, 1, 1);
    lg_released_error(L, 4, "kernel");
  }
  n = lua_newuserdatauv(L, size, 2);                          /* 4 */
  memcpy(n, c, size);
  shift = (unsigned char *)n - (unsigned char *)c;
  n->args = (lg_CallArg *)((unsigned char *)c->args + shift);
  for (i = 0; i < n->nargs; i++)   /* every value lies inside the userdata */
    if (n->args[i].value != NULL)
      n->args[i].value = (const unsigned char *)n->args[i].value + shift;
  luaL_setmetatable(L, LG_CALL_MT);
  lua_getiuservalue(L, 1, 1);
  lua_setiuservalue(L, 4, 1);
  lua_getiuservalue(L, 1, 2);                                 /* 5: the old arguments */
  lua_createtable(L, (int)n->nargs, 0);                       /* 6 */
  for (i = 0; i < n->nargs; i++) {
    if (c->args[i].buf == old && k->args[i].kind == LG_ARG_BUFFER) {
      bind_buffer(L, k, &k->args[i], (int)i + 1, 3, &n->args[i], (cl_mem *)n->args[i].value);
      lua_pushvalue(L, 3);
    } else {
      lua_rawgeti(L, 5, (lua_Integer)i + 1);
    }
    lua_rawseti(L, 6, (lua_Integer)i + 1);
  }
  lua_setiuservalue(L, 4, 2);
  lua_settop(L, 4);
  n->serial = lg_state(L)->next_serial++;
  return 1;
}

static int call_tostring(lua_State *L) {
  lg_Call *c = luaL_checkudata(L, 1, LG_CALL_MT);
  lua_pushfstring(L, LG_CALL_MT " (%s): %p", c->kernel->name, (void *)c);
  return 1;
}

static const luaL_Reg call_meta[] = {
  {"__tostring", call_tostring}, {NULL, NULL}
};

static const luaL_Reg localmem_meta[] = {
  {"__index", lm_index}, {"__tostring", lm_tostring}, {NULL, NULL}
};

static const luaL_Reg device_methods[] = {
  {"run", dev_run}, {NULL, NULL}
};

void lg_open_call(lua_State *L) {
  /* __index is the methods table itself: call:run is one table lookup */
  lg_newclass(L, LG_CALL_MT, NULL, call_meta);
  luaL_getmetatable(L, LG_CALL_MT);
  lua_getfield(L, -1, "__methods");
  lua_pushvalue(L, -2);
  lua_pushcclosure(L, call_run, 1);
  lua_setfield(L, -2, "run");
  lua_pushcfunction(L, call_with);
  lua_setfield(L, -2, "with");
  lua_pop(L, 2);
  lg_newclass(L, LG_LOCALMEM_MT, NULL, localmem_meta);
  lg_add_methods(L, LG_DEVICE_MT, device_methods);
  lua_pushcfunction(L, lm_new);
  lua_setfield(L, -2, "localmem");
}
