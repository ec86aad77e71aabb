/*
** transfer.c: moving data to, from and between device buffers (and views):
** b:write, b:read, b:get, b:fill, b:copy_to. Each is one OpenCL call on
** the queue of its options, with no per-element work in Lua; each but get
** returns an Event that keeps the buffers, host array and queue alive.
*/
#include <string.h>

#include "internal.h"

/* Options these calls take: anything else is most likely a typo. fill and
** copy_to also take event = false (enqueue without an Event, return
** nothing), as call:run does. */
static const char *const transfer_options[] = {"wait", "queue", NULL};
static const char *const device_options[] = {"wait", "queue", "event", NULL};

/* Pushes the buffer's device, then reads the options at optsidx (pushing
** the queue and the wait list). Returns the stack index of the queue. */
static int get_opts(lua_State *L, int optsidx, const char *fn, int argno, lg_Opts *o) {
  optsidx = lua_absindex(L, optsidx);
  lg_checkoptions(L, optsidx, fn, argno, transfer_options);
  lua_getiuservalue(L, 1, 1);
  lg_getopts(L, optsidx, -1, fn, argno, o);
  return lua_gettop(L) - 1;
}

/* get_opts for fill and copy_to, which also take event = false: returns
** the queue's stack index and sets *no_event. */
static int get_device_opts(lua_State *L, int optsidx, const char *fn, int argno, lg_Opts *o,
                           int *no_event) {
  optsidx = lua_absindex(L, optsidx);
  lg_checkoptions(L, optsidx, fn, argno, device_options);
  *no_event = 0;
  if (lua_istable(L, optsidx)) {
    if (lua_getfield(L, optsidx, "event") != LUA_TNIL) {
      if (!lua_isboolean(L, -1))
        lg_argerror(L, fn, argno, "event: expected a boolean, got %s", luaL_typename(L, -1));
      *no_event = !lua_toboolean(L, -1);
    }
    lua_pop(L, 1);
  }
  lua_getiuservalue(L, 1, 1);
  lg_getopts(L, optsidx, -1, fn, argno, o);
  return lua_gettop(L) - 1;
}

/* Raises unless b and the queue are still live: option tables and host
** data are read before the enqueue, and Lua code could run meanwhile. */
static void check_live(lua_State *L, const lg_Buffer *b, const lg_Opts *o, const char *fn) {
  if (!lg_buffer_live(b)) lg_error(L, fn, "attempt to use a released buffer");
  if (o->queue->q == NULL) lg_error(L, fn, "attempt to use a released queue");
}

/* One transfer between b (a buffer or view) and host memory or dst. */
typedef enum Kind { WRITE, READ, FILL, COPY } Kind;
typedef struct Transfer {
  Kind kind;
  const lg_Buffer *b, *dst;    /* dst: COPY only */
  void *host;                  /* WRITE and READ: count elements; FILL: one */
  int blocking;                /* READ only: no Event is asked for */
  int no_event;                /* FILL and COPY: option event = false */
} Transfer;

static const char *const enqueue_names[] = {
  "clEnqueueWriteBuffer", "clEnqueueReadBuffer", "clEnqueueFillBuffer", "clEnqueueCopyBuffer"
};

/* ev is NULL for a blocking read that needs no event. */
static cl_int enqueue_once(const Transfer *t, const lg_Opts *o, cl_event *ev) {
  size_t esize = lg_type_size(t->b->type), off = t->b->offset * esize;
  size_t bytes = t->b->count * esize;
  cl_mem mem = t->b->root->mem;
  switch (t->kind) {
    case WRITE:
      return clEnqueueWriteBuffer(o->queue->q, mem, CL_FALSE, off, bytes, t->host, o->nwait,
                                  o->wait, ev);
    case READ:
      return clEnqueueReadBuffer(o->queue->q, mem, t->blocking ? CL_TRUE : CL_FALSE, off,
                                 bytes, t->host, o->nwait, o->wait, ev);
    case FILL:
      return clEnqueueFillBuffer(o->queue->q, mem, t->host, esize, off, bytes, o->nwait,
                                 o->wait, ev);
    default:
      return clEnqueueCopyBuffer(o->queue->q, mem, t->dst->root->mem, off,
                                 t->dst->offset * esize, bytes, o->nwait, o->wait, ev);
  }
}

/* Enqueues t on the queue and after the wait list of o; returns its event
** (NULL for a blocking read). An empty buffer has nothing to move: a marker
** stands in. When the driver lacks memory, it tries once more after a full
** collection (dead buffers may hold it). */
static cl_event enqueue(lua_State *L, const Transfer *t, const lg_Opts *o) {
  cl_event ev = NULL;
  int eventless = t->blocking || t->no_event;
  cl_event *evp = eventless && !lg_tracing(L) ? NULL : &ev;
  cl_int err;
  if (t->b->count == 0 && t->no_event) return NULL;   /* nothing to move, nothing to tell */
  if (t->kind != READ) lg_buffer_written(t->kind == COPY ? t->dst : t->b);
  if (t->b->count == 0) {
    err = clEnqueueMarkerWithWaitList(o->queue->q, o->nwait, o->wait, &ev);
  } else {
    err = enqueue_once(t, o, evp);
    if (lg_is_oom(err)) {
      lua_gc(L, LUA_GCCOLLECT, 0);
      err = enqueue_once(t, o, evp);
    }
  }
  if (err != CL_SUCCESS) lg_clerror(L, enqueue_names[t->kind], err, NULL);
  if (lg_tracing(L)) {          /* a blocking read gets an event for the trace only */
    static const char *const kinds[] = {"write", "read", "fill", "copy"};
    lg_trace_add(L, o->queue->q, ev, kinds[t->kind], NULL, 0, NULL, NULL,
                 t->b->count * lg_type_size(t->b->type), o->nwait, o->wait);
    if (eventless && ev != NULL) {
      clReleaseEvent(ev);
      ev = NULL;
    }
  }
  if (lg_debugging(L) && ev != NULL && (err = lg_debug_after_transfer(L, ev)) != 0) {
    static const char *const kinds[] = {"write", "read", "fill", "copy"};
    clReleaseEvent(ev);
    lg_debug_transfer_error(L, kinds[t->kind], err);
  }
  return ev;
}

static void push_event(lua_State *L, cl_event ev, const char *command, int a, int b, int q) {
  int keep[3];
  int n = 0;
  keep[n++] = a;
  if (b != 0) keep[n++] = b;
  keep[n++] = q;
  lg_pushevent(L, ev, command, keep, n);
}

/* ------------------------------------------------------------ write */

/* b:write(src [, opts]): src a table, a host array of the same type and
** count, or a number for a one-element buffer. */
static int buf_write(lua_State *L) {
  static const char *const fn = "buffer:write";
  lg_Buffer *b = lg_checkbuffer(L, 1);
  Transfer t = {WRITE, NULL, NULL, NULL, 0, 0};
  lg_Array *a;
  lg_Opts o;
  int arr, qidx;
  lua_settop(L, 3);   /* opts at 3 stays put while values are pushed */
  if (b->access == LG_OUT)
    lg_error(L, fn, "the buffer has access \"out\" (device to host only): it cannot be "
             "written from the host (make it with access = \"mixed\")");
  switch (lua_type(L, 2)) {
    case LUA_TTABLE:
      a = lg_table_to_array(L, 2, b->type, b->count, fn, 1);
      break;
    case LUA_TNUMBER:
      if (b->count != 1 || b->type.width != 1)
        lg_argerror(L, fn, 1, "expected a table or host array of %I values, got a number "
                    "(buffer:fill sets every element to one value)",
                    (lua_Integer)(b->count * (size_t)b->type.width));
      a = lg_newarray(L, b->type, 1);
      lg_store_scalar(L, 2, b->type.scalar, a->data, fn, "argument #1");
      break;
    default:
      a = lg_testarray(L, 2);
      if (a == NULL) lg_typeerror(L, fn, 1, 2, "a table, a host array or a number");
      lg_check_array_fits(L, a, b->type, b->count, fn, "argument #1");
      lua_pushvalue(L, 2);
      break;
  }
  arr = lua_gettop(L);
  qidx = get_opts(L, 3, fn, 2, &o);
  check_live(L, b, &o, fn);
  t.b = b;
  t.host = a->data;
  push_event(L, enqueue(L, &t, &o), "write", 1, arr, qidx);
  return 1;
}

/* -------------------------------------------------------------- read */

/* b:read() and b:get() of a scalar buffer (one element of width 1): the
** number comes back through a page-locked slot (pinned.c) where one can be
** had. get reads it and gives the slot back; read's Event owns it. */
static int read_number(lua_State *L, lg_Buffer *b, int optsidx, int blocking) {
  const char *fn = blocking ? "buffer:get" : "buffer:read";
  Transfer t = {READ, NULL, NULL, NULL, 0, 0};
  lg_Array *a;
  lg_Opts o;
  cl_event ev;
  int arr, qidx;
  qidx = get_opts(L, optsidx, fn, optsidx - 1, &o);
  t.b = b;
  t.blocking = blocking;
  if (blocking) {
    double local[2];              /* LG_PINNED_SLOT bytes, aligned */
    t.host = lg_pinned_scratch(L, b->dev->ctx, o.queue->q);
    if (t.host == NULL) t.host = local;
    check_live(L, b, &o, fn);     /* after what may run a collector's finalizers */
    ev = enqueue(L, &t, &o);
    if (ev != NULL) {
      clWaitForEvents(1, &ev);
      clReleaseEvent(ev);
    }
    lg_push_scalar(L, b->type.scalar, t.host);
    lg_after_wait(L);   /* callbacks, as after a wait */
    return 1;
  }
  a = lg_push_pinned_array(L, b->dev->ctx, o.queue->q, b->type);
  if (a == NULL) a = lg_newarray_for(L, b->type, b->ndim, b->shape, fn, 0);
  arr = lua_gettop(L);
  t.host = a->data;
  check_live(L, b, &o, fn);
  ev = enqueue(L, &t, &o);
  push_event(L, ev, "read", 1, arr, qidx);
  lg_event_setresult(L, -1, arr, LG_RESULT_SCALAR);
  return 1;
}

/* b:read([dst] [, opts]) and b:get([dst] [, opts]): the same, but get
** blocks and returns the result instead of an Event. */
static int read_impl(lua_State *L, int blocking) {
  const char *fn = blocking ? "buffer:get" : "buffer:read";
  lg_Buffer *b = lg_checkbuffer(L, 1);
  Transfer t = {READ, NULL, NULL, NULL, 0, 0};
  lg_Array *a;
  lg_Opts o;
  cl_event ev;
  int arr, qidx, optsidx = 3, number;
  lua_settop(L, 3);
  if (b->access == LG_IN)
    lg_error(L, fn, "the buffer has access \"in\" (host to device only): it cannot be read "
             "back to the host (make it with access = \"mixed\")");
  a = lg_testarray(L, 2);
  number = a == NULL && b->is_scalar && b->type.width == 1;
  if (a != NULL) {
    lg_check_array_fits(L, a, b->type, b->count, fn, "argument #1");
    lua_pushvalue(L, 2);
  } else {
    if (lua_istable(L, 2)) optsidx = 2;
    else if (!lua_isnoneornil(L, 2))
      lg_typeerror(L, fn, 1, 2, "a host array or an options table");
    if (number) return read_number(L, b, optsidx, blocking);
    a = lg_newarray_for(L, b->type, b->ndim, b->shape, fn, 0);
  }
  arr = lua_gettop(L);
  qidx = get_opts(L, optsidx, fn, optsidx - 1, &o);
  t.b = b;
  t.host = a->data;
  t.blocking = blocking;
  /* a blocking read of at most one slot's bytes into a new array (a
  ** kernel's flag or count, a few numbers) also comes through the
  ** page-locked slot, then is copied: on NVIDIA's OpenCL 2-3 us to
  ** enqueue instead of 7-9 from pageable memory */
  {
    size_t bytes = b->count * lg_type_size(b->type);
    void *pinned = NULL;
    if (blocking && !number && a->bytes == bytes && bytes > 0 &&
        bytes <= LG_PINNED_SLOT && lg_testarray(L, 2) == NULL)
      pinned = lg_pinned_scratch(L, b->dev->ctx, o.queue->q);
    if (pinned != NULL) t.host = pinned;
    check_live(L, b, &o, fn);   /* after what may run a collector's finalizers */
    ev = enqueue(L, &t, &o);
    if (blocking) {
      if (ev != NULL) {   /* the marker of an empty buffer: waited for, then let go */
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
      }
      if (pinned != NULL) memcpy(a->data, pinned, bytes);
      lg_after_wait(L);   /* callbacks, as after a wait */
      if (number) lg_push_scalar(L, b->type.scalar, a->data);
      else lua_pushvalue(L, arr);
      return 1;
    }
  }
  push_event(L, ev, "read", 1, arr, qidx);
  lg_event_setresult(L, -1, arr, number ? LG_RESULT_SCALAR : LG_RESULT_VALUE);
  return 1;
}

static int buf_read(lua_State *L) { return read_impl(L, 0); }
static int buf_get(lua_State *L) { return read_impl(L, 1); }

/* -------------------------------------------------------------- fill */

/* b:fill(value [, opts]): value a number (for vector types, set in every
** lane) or, for vector types, a table of one element's lanes. */
static int buf_fill(lua_State *L) {
  static const char *const fn = "buffer:fill";
  lg_Buffer *b = lg_checkbuffer(L, 1);
  size_t ssize = lg_scalar_size(b->type.scalar);
  union { char c[128]; double align; } pattern;
  Transfer t = {FILL, NULL, NULL, NULL, 0, 0};
  lg_Opts o;
  int i, qidx, w = b->type.width;
  lua_settop(L, 3);
  memset(&pattern, 0, sizeof pattern);
  if (lua_type(L, 2) == LUA_TNUMBER) {
    lg_store_scalar(L, 2, b->type.scalar, pattern.c, fn, "argument #1");
    for (i = 1; i < w; i++) memcpy(pattern.c + (size_t)i * ssize, pattern.c, ssize);
  } else if (lua_istable(L, 2)) {
    char tname[LG_TYPENAME_MAX];
    if (lua_rawlen(L, 2) != (size_t)w)
      lg_argerror(L, fn, 1, "expected a number or a table of %d numbers (one %s), got a "
                  "table of %I", w, lg_type_name(b->type, tname), (lua_Integer)lua_rawlen(L, 2));
    for (i = 0; i < w; i++) {
      const char *what = lua_pushfstring(L, "argument #1[%d]", i + 1);
      lua_rawgeti(L, 2, i + 1);
      lg_store_scalar(L, -1, b->type.scalar, pattern.c + (size_t)i * ssize, fn, what);
      lua_pop(L, 2);
    }
  } else {
    lg_typeerror(L, fn, 1, 2, w > 1 ? "a number or a table of lanes" : "a number");
  }
  qidx = get_device_opts(L, 3, fn, 2, &o, &t.no_event);
  check_live(L, b, &o, fn);
  t.b = b;
  t.host = pattern.c;
  if (t.no_event) {
    enqueue(L, &t, &o);
    return 0;
  }
  push_event(L, enqueue(L, &t, &o), "fill", 1, 0, qidx);
  return 1;
}

/* ----------------------------------------------------------- copy_to */

/* b:copy_to(dst [, opts]): dst a buffer or view of the same element type
** and count, in the same context; the two may not overlap. */
static int buf_copy_to(lua_State *L) {
  static const char *const fn = "buffer:copy_to";
  lg_Buffer *b = lg_checkbuffer(L, 1), *d = lg_testbuffer(L, 2);
  char t1[LG_TYPENAME_MAX], t2[LG_TYPENAME_MAX];
  Transfer t = {COPY, NULL, NULL, NULL, 0, 0};
  lg_Opts o;
  int qidx;
  lua_settop(L, 3);
  if (d == NULL) lg_typeerror(L, fn, 1, 2, "a " LG_BUFFER_MT);
  if (!lg_buffer_live(d)) lg_argerror(L, fn, 1, "attempt to use a released buffer");
  if (d->type.scalar != b->type.scalar || d->type.width != b->type.width)
    lg_argerror(L, fn, 1, "expected a buffer of %s, got one of %s",
                lg_type_name(b->type, t1), lg_type_name(d->type, t2));
  if (d->count != b->count)
    lg_argerror(L, fn, 1, "expected a buffer of %I elements, got %I", (lua_Integer)b->count,
                (lua_Integer)d->count);
  if (d->dev->ctx != b->dev->ctx)
    lg_argerror(L, fn, 1, "the destination is on %s, of another context than %s",
                d->dev->name, b->dev->name);
  if (d->root == b->root && d->offset < b->offset + b->count &&
      b->offset < d->offset + d->count)
    lg_argerror(L, fn, 1, "source and destination overlap (elements %I..%I and %I..%I of "
                "one buffer)", (lua_Integer)b->offset + 1, (lua_Integer)(b->offset + b->count),
                (lua_Integer)d->offset + 1, (lua_Integer)(d->offset + d->count));
  qidx = get_device_opts(L, 3, fn, 2, &o, &t.no_event);
  check_live(L, b, &o, fn);
  if (!lg_buffer_live(d)) lg_argerror(L, fn, 1, "attempt to use a released buffer");
  t.b = b;
  t.dst = d;
  if (t.no_event) {
    enqueue(L, &t, &o);
    return 0;
  }
  push_event(L, enqueue(L, &t, &o), "copy", 1, 2, qidx);
  return 1;
}

static const luaL_Reg transfer_methods[] = {
  {"write", buf_write}, {"read", buf_read}, {"get", buf_get}, {"fill", buf_fill},
  {"copy_to", buf_copy_to}, {NULL, NULL}
};

void lg_open_transfer(lua_State *L) {
  lg_add_methods(L, LG_BUFFER_MT, transfer_methods);
}
