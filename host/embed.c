/*
** embed.c: the embedding API of luagpu.h. An application hands a Lua state
** its own OpenCL context, device and queue (a Device whose default queue
** is the application's), its cl_mem objects (Buffers) and cl_events
** (Events), and takes Buffers, Events and Queues back as OpenCL handles.
**
** Every function that can fail runs its work under lua_pcall and returns
** the status, so a caller outside any protected call never meets a Lua
** error (which would be a panic). Handles coming in are retained once the
** Lua object that releases them holds them; handles going out are retained
** for the caller.
*/
#include <string.h>

#include "internal.h"

/* What a luagpu_push_* call hands its protected half. */
typedef struct Args {
  const char *fn;
  cl_context ctx;
  cl_device_id dev;
  cl_command_queue queue;
  cl_mem mem;
  const char *type;
  size_t count;
  cl_event ev;
} Args;

/* Opens the module in L unless it is open (its metatables registered). */
static void ensure_open(lua_State *L) {
  if (luaL_getmetatable(L, LG_BUFFER_MT) != LUA_TTABLE) {
    luaL_requiref(L, "luagpu", luaopen_luagpu, 0);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/* True when idx names a value on the stack: an application's index is
** not trusted (Lua itself does not check them, and a bad one crashes). */
static int valid_index(lua_State *L, int idx) {
  int top = lua_gettop(L);
  if (idx > 0) return idx <= top;
  return idx < 0 && idx > LUA_REGISTRYINDEX && -idx <= top;
}

/* Runs f(args, value at idx or nil) protected; it leaves one value. An
** invalid idx leaves the message instead, as an error does. */
static int run_protected(lua_State *L, lua_CFunction f, Args *a, int idx) {
  if (!lua_checkstack(L, 3)) return LUA_ERRMEM;
  if (idx != 0 && !valid_index(L, idx)) {
    lua_pushfstring(L, "luagpu: %s: invalid stack index %d (the stack holds %d values)",
                    a != NULL && a->fn != NULL ? a->fn : "luagpu", idx, lua_gettop(L));
    return LUA_ERRRUN;
  }
  if (idx != 0) idx = lua_absindex(L, idx);
  lua_pushcfunction(L, f);
  lua_pushlightuserdata(L, a);
  if (idx != 0) lua_pushvalue(L, idx);
  else lua_pushnil(L);
  return lua_pcall(L, 2, 1, 0);
}

/* ----------------------------------------------------------- devices */


#define EMBED_CACHE "luagpu.embed_devices"   /* "ctx/id/queue" -> Device, weak */

/* Pushes a Device for id inside the application's context ctx, whose
** default queue is queue (NULL: luagpu makes one on first use). Unlike
** lg_push_device it is not the cached Device of id: its Context wraps ctx
** (retained, borrowed) and its default Queue wraps queue (retained). The
** same (ctx, id, queue) gives the same Device while that one lives. The
** caller has checked that id belongs to ctx and queue to both. */
static lg_Device *push_device_with(lua_State *L, cl_context ctx, cl_device_id id,
                               cl_command_queue queue) {
  lg_Device *d;
  lg_Context *c;
  int cache, devidx;
  if (luaL_getsubtable(L, LUA_REGISTRYINDEX, EMBED_CACHE) == 0) {
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
  }
  cache = lua_gettop(L);
  lua_pushfstring(L, "%p/%p/%p", (void *)ctx, (void *)id, (void *)queue);
  if (lua_rawget(L, cache) == LUA_TUSERDATA) {
    lua_remove(L, cache);
    return lua_touserdata(L, -1);
  }
  lua_pop(L, 1);
  d = lg_newdevice(L, id);
  devidx = lua_gettop(L);
  c = lg_push_borrowed_context(L, ctx, d->platform);
  d->context = c;
  d->ctx = ctx;
  lua_setiuservalue(L, devidx, 1);
  lg_load_device_fields(L, d);
  lua_setiuservalue(L, devidx, 3);
  c->gc_threshold = d->global_mem_size / 4 < ((size_t)1 << 30)
                        ? (size_t)(d->global_mem_size / 4) : ((size_t)1 << 30);
  if (c->gc_threshold == 0) c->gc_threshold = (size_t)256 << 20;
  if (queue != NULL) {
    lg_wrapqueue(L, devidx, queue);           /* takes over the reference ... */
    clRetainCommandQueue(queue);              /* ... taken here, once it is held */
    d->queue = queue;
    lua_setiuservalue(L, devidx, 2);
  }
  lua_pushfstring(L, "%p/%p/%p", (void *)ctx, (void *)id, (void *)queue);
  lua_pushvalue(L, devidx);
  lua_rawset(L, cache);
  lua_remove(L, cache);
  return d;
}



/* Raises unless dev is one of ctx's devices. */
static void check_in_context(lua_State *L, const Args *a) {
  size_t size = 0, i, n;
  cl_device_id *ids;
  cl_int err = clGetContextInfo(a->ctx, CL_CONTEXT_DEVICES, 0, NULL, &size);
  if (err != CL_SUCCESS) lg_clerror(L, "clGetContextInfo", err, "the cl_context given");
  n = size / sizeof(cl_device_id);
  ids = lua_newuserdatauv(L, size ? size : 1, 0);
  err = clGetContextInfo(a->ctx, CL_CONTEXT_DEVICES, size, ids, NULL);
  if (err != CL_SUCCESS) lg_clerror(L, "clGetContextInfo", err, "the cl_context given");
  for (i = 0; i < n && ids[i] != a->dev; i++) {}
  if (i == n) lg_error(L, a->fn, "the cl_device_id is not one of the context's %d devices", (int)n);
  lua_pop(L, 1);
}

static int push_device_p(lua_State *L) {
  Args *a = lua_touserdata(L, 1);
  ensure_open(L);
  if (a->ctx == NULL) lg_error(L, a->fn, "expected a cl_context, got NULL");
  if (a->dev == NULL) lg_error(L, a->fn, "expected a cl_device_id, got NULL");
  check_in_context(L, a);
  if (a->queue != NULL) {
    cl_context qctx = NULL;
    cl_device_id qdev = NULL;
    cl_int err = clGetCommandQueueInfo(a->queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
    if (err == CL_SUCCESS)
      err = clGetCommandQueueInfo(a->queue, CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL);
    if (err != CL_SUCCESS) lg_clerror(L, "clGetCommandQueueInfo", err, "the queue given");
    if (qctx != a->ctx) lg_error(L, a->fn, "the queue belongs to another context");
    if (qdev != a->dev) lg_error(L, a->fn, "the queue belongs to another device of the context");
  }
  push_device_with(L, a->ctx, a->dev, a->queue);
  return 1;
}

LUAGPU_API int luagpu_push_device(lua_State *L, cl_context ctx, cl_device_id dev,
                                  cl_command_queue queue) {
  Args a;
  memset(&a, 0, sizeof a);
  a.fn = "luagpu_push_device";
  a.ctx = ctx;
  a.dev = dev;
  a.queue = queue;
  return run_protected(L, push_device_p, &a, 0);
}

/* ----------------------------------------------------------- buffers */

/* The access a cl_mem's host flags allow. */
static lg_Access access_of(cl_mem_flags flags) {
  if (flags & CL_MEM_HOST_WRITE_ONLY) return LG_IN;
  if (flags & CL_MEM_HOST_READ_ONLY) return LG_OUT;
  return LG_MIXED;
}

static int push_buffer_p(lua_State *L) {
  Args *a = lua_touserdata(L, 1);
  lg_Device *d;
  lg_Type t;
  cl_mem_object_type mtype = 0;
  cl_context mctx = NULL;
  cl_mem_flags flags = 0;
  size_t size = 0, esize;
  char tname[LG_TYPENAME_MAX];
  cl_int err;
  ensure_open(L);
  d = lg_testdevice(L, 2);
  if (d == NULL)
    lg_error(L, a->fn, "devidx: expected a " LG_DEVICE_MT ", got %s",
             luaL_getmetafield(L, 2, "__name") == LUA_TSTRING ? lua_tostring(L, -1)
                                                                : luaL_typename(L, 2));
  if (a->mem == NULL) lg_error(L, a->fn, "expected a cl_mem, got NULL");
  if (a->type == NULL || !lg_parse_type(a->type, &t))
    lg_error(L, a->fn, "unknown element type %s%s%s", a->type ? "'" : "",
             a->type ? a->type : "NULL", a->type ? "'" : "");
  err = clGetMemObjectInfo(a->mem, CL_MEM_TYPE, sizeof mtype, &mtype, NULL);
  if (err == CL_SUCCESS)
    err = clGetMemObjectInfo(a->mem, CL_MEM_CONTEXT, sizeof mctx, &mctx, NULL);
  if (err == CL_SUCCESS)
    err = clGetMemObjectInfo(a->mem, CL_MEM_FLAGS, sizeof flags, &flags, NULL);
  if (err == CL_SUCCESS)
    err = clGetMemObjectInfo(a->mem, CL_MEM_SIZE, sizeof size, &size, NULL);
  if (err != CL_SUCCESS) lg_clerror(L, "clGetMemObjectInfo", err, "the cl_mem given");
  if (mtype != CL_MEM_OBJECT_BUFFER)
    lg_error(L, a->fn, "the cl_mem is an image, not a buffer");
  if (mctx != d->ctx)
    lg_error(L, a->fn, "the cl_mem belongs to another context than the device's (%s)", d->name);
  esize = lg_type_size(t);
  if (a->count == 0) a->count = size / esize;
  if (a->count == 0 || a->count > size / esize)
    lg_error(L, a->fn, "the cl_mem holds %I bytes: not room for %I elements of %s",
             (lua_Integer)size, (lua_Integer)(a->count ? a->count : 1),
             lg_type_name(t, tname));
  lg_wrapbuffer(L, 2, a->mem, t, a->count, access_of(flags));   /* takes over a reference */
  clRetainMemObject(a->mem);                  /* ... taken here, once the Buffer holds it */
  return 1;
}

LUAGPU_API int luagpu_push_buffer(lua_State *L, int devidx, cl_mem mem,
                                  const char *type, size_t count) {
  Args a;
  memset(&a, 0, sizeof a);
  a.fn = "luagpu_push_buffer";
  a.mem = mem;
  a.type = type;
  a.count = count;
  return run_protected(L, push_buffer_p, &a, devidx);
}

LUAGPU_API cl_mem luagpu_to_mem(lua_State *L, int idx, size_t *offset, size_t *size) {
  lg_Buffer *b;
  size_t esize;
  if (!valid_index(L, idx)) return NULL;
  b = luaL_testudata(L, idx, LG_BUFFER_MT);
  if (b == NULL || !lg_buffer_live(b)) return NULL;
  esize = lg_type_size(b->type);
  if (offset != NULL) *offset = b->offset * esize;
  if (size != NULL) *size = b->count * esize;
  if (clRetainMemObject(b->root->mem) != CL_SUCCESS) return NULL;
  lg_buffer_written(b);        /* the caller may write through it */
  return b->root->mem;
}

/* ------------------------------------------------------------ events */

/* A name for the command of an event, as luagpu's own Events have. */
static const char *command_name(cl_command_type t) {
  switch (t) {
    case CL_COMMAND_NDRANGE_KERNEL: case CL_COMMAND_TASK: return "kernel (application)";
    case CL_COMMAND_READ_BUFFER: case CL_COMMAND_READ_BUFFER_RECT: return "read (application)";
    case CL_COMMAND_WRITE_BUFFER: case CL_COMMAND_WRITE_BUFFER_RECT: return "write (application)";
    case CL_COMMAND_COPY_BUFFER: case CL_COMMAND_COPY_BUFFER_RECT: return "copy (application)";
    case CL_COMMAND_FILL_BUFFER: return "fill (application)";
    case CL_COMMAND_MARKER: return "marker (application)";
    case CL_COMMAND_BARRIER: return "barrier (application)";
    case CL_COMMAND_USER: return "user event";
    default: return "command (application)";
  }
}

static int push_event_p(lua_State *L) {
  Args *a = lua_touserdata(L, 1);
  cl_command_type ctype = 0;
  cl_command_queue q = NULL;
  cl_command_queue_properties props = 0;
  lg_Event *e;
  cl_int err;
  ensure_open(L);
  if (a->ev == NULL) lg_error(L, a->fn, "expected a cl_event, got NULL");
  err = clGetEventInfo(a->ev, CL_EVENT_COMMAND_TYPE, sizeof ctype, &ctype, NULL);
  if (err == CL_SUCCESS)
    err = clGetEventInfo(a->ev, CL_EVENT_COMMAND_QUEUE, sizeof q, &q, NULL);
  if (err != CL_SUCCESS) lg_clerror(L, "clGetEventInfo", err, "the cl_event given");
  if (q != NULL) {
    clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
    clFlush(q);   /* a command of ours may wait for it: make sure it was submitted */
  }
  /* nothing is kept alive for the command: collecting the Event never waits */
  clRetainEvent(a->ev);
  e = lg_pushevent(L, a->ev, command_name(ctype), NULL, 0);
  e->profiling = (props & CL_QUEUE_PROFILING_ENABLE) != 0;
  return 1;
}

LUAGPU_API int luagpu_push_event(lua_State *L, cl_event ev) {
  Args a;
  memset(&a, 0, sizeof a);
  a.fn = "luagpu_push_event";
  a.ev = ev;
  return run_protected(L, push_event_p, &a, 0);
}

LUAGPU_API cl_event luagpu_to_event(lua_State *L, int idx) {
  lg_Event *e;
  if (!valid_index(L, idx)) return NULL;
  e = luaL_testudata(L, idx, LG_EVENT_MT);
  if (e == NULL || e->ev == NULL) return NULL;
  if (clRetainEvent(e->ev) != CL_SUCCESS) return NULL;
  return e->ev;
}

/* ------------------------------------------------------------ queues */

/* Pushes the default Queue of the Device at 2 (made on first use). */
static int default_queue_p(lua_State *L) {
  lg_push_default_queue(L, 2);
  return 1;
}

LUAGPU_API cl_command_queue luagpu_to_queue(lua_State *L, int idx) {
  lg_Queue *q;
  cl_command_queue cq = NULL;
  if (!valid_index(L, idx)) return NULL;
  q = luaL_testudata(L, idx, LG_QUEUE_MT);
  if (q == NULL) {
    lg_Device *d = luaL_testudata(L, idx, LG_DEVICE_MT);
    if (d == NULL) return NULL;
    if (d->queue == NULL) {
      if (run_protected(L, default_queue_p, NULL, idx) != LUA_OK) {
        lua_pop(L, 1);
        return NULL;
      }
      lua_pop(L, 1);   /* the Device keeps its default queue */
    }
    cq = d->queue;
  } else {
    cq = q->q;
  }
  if (cq == NULL || clRetainCommandQueue(cq) != CL_SUCCESS) return NULL;
  return cq;
}
