/*
** buffer.c: device buffers (dev:buffer, dev:scalar) and views (b:sub):
** creation, fields, lifetime, and the cl_mem a kernel argument needs.
** The transfers (write, read, get, fill, copy_to) are in transfer.c.
**
** A root Buffer owns its cl_mem. A view shares its root's cl_mem and an
** element offset into it, holding its parent in uservalue 2 (so the root
** outlives every view); it becomes an OpenCL sub-buffer only when passed
** to a kernel, which needs the origin aligned to mem_base_addr_align.
*/
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const char *const access_names[] = {"mixed", "in", "out", NULL};

/* ------------------------------------------------------------ checks */

lg_Buffer *lg_testbuffer(lua_State *L, int idx) {
  return luaL_testudata(L, idx, LG_BUFFER_MT);
}

lg_Buffer *lg_checkbuffer(lua_State *L, int idx) {
  lg_Buffer *b = luaL_checkudata(L, idx, LG_BUFFER_MT);
  if (b->released || b->root->mem == NULL) lg_released_error(L, idx, "buffer");
  return b;
}

int lg_buffer_live(const lg_Buffer *b) {
  return !b->released && b->root->mem != NULL;
}

/* ---------------------------------------------------------- creation */

/* Pushes a Buffer userdata in the released state on the device at devidx. */
static lg_Buffer *push_buffer(lua_State *L, int devidx) {
  lg_Device *d = lg_checkdevice(L, devidx);
  lg_Buffer *b;
  devidx = lua_absindex(L, devidx);
  b = lua_newuserdatauv(L, sizeof *b, 3);   /* 3: a use_host root's host array */
  memset(b, 0, sizeof *b);
  b->root = b;
  b->dev = d;
  luaL_setmetatable(L, LG_BUFFER_MT);
  lua_pushvalue(L, devidx);
  lua_setiuservalue(L, -2, 1);
  return b;
}

/* Fills the new buffer with zeros and waits, so that a command on any
** other queue sees zeros. Returns the CL error. */
static cl_int zero_fill(lua_State *L, int devidx, lg_Buffer *b, size_t bytes) {
  static const char zeros[128];
  lg_Queue *q;
  cl_event ev = NULL;
  cl_int err;
  lg_push_default_queue(L, devidx);
  q = lua_touserdata(L, -1);
  lua_pop(L, 1);   /* the device keeps it */
  err = clEnqueueFillBuffer(q->q, b->mem, zeros, lg_type_size(b->type), 0, bytes, 0, NULL,
                            &ev);
  if (err != CL_SUCCESS) return err;
  if (lg_tracing(L)) lg_trace_add(L, q->q, ev, "fill", "zero-fill", 0, NULL, NULL, bytes, 0, NULL);
  err = clWaitForEvents(1, &ev);
  if (err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) {
    cl_int st = CL_SUCCESS;
    clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    if (st < 0) err = st;
  }
  clReleaseEvent(ev);
  return err;
}

/* Debug mode: fills the guard zone after the data of the new buffer b with
** the canary, and writes host (bytes of it) when given. Returns the error. */
static cl_int guard_buffer(lua_State *L, int devidx, lg_Buffer *b, size_t bytes, size_t guard,
                           const void *host) {
  lg_Queue *q;
  cl_int err;
  lg_push_default_queue(L, devidx);
  q = lua_touserdata(L, -1);
  lua_pop(L, 1);
  err = lg_debug_fill_guard(q->q, b->mem, bytes ? bytes : lg_type_size(b->type), guard);
  if (err == CL_SUCCESS && host != NULL && bytes > 0)
    err = clEnqueueWriteBuffer(q->q, b->mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
  if (err == CL_SUCCESS) b->canary = guard;
  return err;
}

/* The number of elements of shape, raising when their bytes would not fit
** in a size_t (the product is never allowed to wrap). The sizes but the 0s
** count too, as for host arrays and tensors: {0, 2^62, 2^62} is refused. */
static size_t shape_count(lua_State *L, lg_Type t, int ndim, const size_t *shape,
                          const char *fn) {
  size_t count = 1, esize = lg_type_size(t);
  char tname[LG_TYPENAME_MAX];
  int i, empty = 0;
  for (i = 0; i < ndim; i++) {
    if (shape[i] == 0) {
      empty = 1;
      continue;
    }
    if (shape[i] > ((size_t)-1 / esize) / count)
      lg_error(L, fn, "too many elements of %s for one buffer", lg_type_name(t, tname));
    count *= shape[i];
  }
  return empty ? 0 : count;
}

/* Pushes a new root buffer of count elements (shape ndim/shape) on the
** device at devidx, holding a copy of host (bytes of it) or zeros (without
** init: whatever the device's memory held, not even waited for); with
** use_host, over host itself (CL_MEM_USE_HOST_PTR: the caller keeps it
** alive); use_host 2: pinned, in memory the host can reach
** (CL_MEM_ALLOC_HOST_PTR: page-locked on NVIDIA's OpenCL, for b:map once and
** transfers at full speed). On lack of memory, runs a full collection and
** tries once more. With paced, its bytes count as Lua allocation debt
** (lg_account_alloc); without, the caller paces collections itself. */
static lg_Buffer *new_root(lua_State *L, int devidx, lg_Type t, int ndim, const size_t *shape,
                           lg_Access access, const void *host, int use_host, int init,
                           int paced, const char *fn) {
  size_t count, esize = lg_type_size(t), bytes;
  char tname[LG_TYPENAME_MAX];
  lg_Buffer *b;
  lg_Device *d;
  cl_int err = CL_SUCCESS;
  int attempt;
  size_t guard = 0;
  devidx = lua_absindex(L, devidx);
  d = lg_checkdevice(L, devidx);
  count = shape_count(L, t, ndim, shape, fn);
  bytes = count * esize;
  if (lg_debugging(L) && !use_host) {   /* a guard zone after the data, when it fits */
    size_t g = lg_debug_guard_bytes(bytes);
    if ((cl_ulong)bytes + g <= d->max_alloc_size) guard = g;
  }
  if ((cl_ulong)bytes > d->max_alloc_size) {
    char nbytes[32];   /* unsigned: 2^63 bytes and more read negative as a lua_Integer */
    snprintf(nbytes, sizeof nbytes, "%llu", (unsigned long long)bytes);
    lg_error(L, fn, "%s bytes (%I elements of %s) exceed the device's max_alloc_size "
             "(%I bytes)", nbytes, (lua_Integer)count, lg_type_name(t, tname),
             (lua_Integer)d->max_alloc_size);
  }
  b = push_buffer(L, devidx);
  b->type = t;
  b->count = count;
  b->ndim = ndim;
  memcpy(b->shape, shape, sizeof(size_t) * (size_t)ndim);
  b->access = access;
  for (attempt = 0; attempt < 2; attempt++) {
    if (attempt > 0) lua_gc(L, LUA_GCCOLLECT, 0);
    /* an empty buffer still gets one element of memory: OpenCL has no empty ones */
    b->mem = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE |
                            (use_host == 2 ? CL_MEM_ALLOC_HOST_PTR : 0) |
                            (host && bytes && !guard
                                 ? (use_host == 1 ? CL_MEM_USE_HOST_PTR : CL_MEM_COPY_HOST_PTR) : 0),
                            (bytes ? bytes : esize) + guard,
                            bytes && !guard ? (void *)host : NULL, &err);
    if (b->mem != NULL && (host == NULL || bytes == 0 || guard) && (init || guard)) {
      err = zero_fill(L, devidx, b, bytes ? bytes : esize);   /* some drivers allocate only now */
      if (err == CL_SUCCESS && guard) err = guard_buffer(L, devidx, b, bytes, guard, host);
      if (err != CL_SUCCESS) {
        clReleaseMemObject(b->mem);
        b->mem = NULL;
      }
    }
    if (b->mem != NULL || !lg_is_oom(err)) break;
  }
  if (b->mem == NULL) {
    if (lg_is_oom(err))
      lg_clerror(L, "clCreateBuffer", err, "no memory on %s for %I bytes, even after a full "
                 "collection", d->name, (lua_Integer)bytes);
    lg_clerror(L, host ? "clCreateBuffer" : "clEnqueueFillBuffer", err, NULL);
  }
  if (paced) lg_account_alloc(L, d->context, bytes);
  return b;
}

/* Reads the size argument of dev:buffer at idx: a count or a shape table. */
static int read_shape(lua_State *L, int idx, size_t *shape, const char *fn) {
  int ndim, i;
  if (lua_type(L, idx) == LUA_TNUMBER) {
    shape[0] = lg_checksize(L, idx, fn, 2, "an element count (integer >= 0)");
    return 1;
  }
  if (!lua_istable(L, idx))
    lg_typeerror(L, fn, 2, idx, "an element count or a shape table");
  if (lua_rawlen(L, idx) < 1 || lua_rawlen(L, idx) > LG_MAXDIM)
    lg_argerror(L, fn, 2, "expected a shape of 1 to %d sizes, got %I", LG_MAXDIM,
                (lua_Integer)lua_rawlen(L, idx));
  ndim = (int)lua_rawlen(L, idx);
  for (i = 0; i < ndim; i++) {
    int isint = 0;
    lua_Integer v;
    lua_rawgeti(L, idx, i + 1);
    v = lua_tointegerx(L, -1, &isint);
    if (lua_type(L, -1) != LUA_TNUMBER || !isint || v < 0)
      lg_argerror(L, fn, 2, "shape[%d]: expected an integer >= 0, got %s", i + 1,
                  lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1)
                                                 : luaL_typename(L, -1));
    shape[i] = (size_t)v;
    lua_pop(L, 1);
  }
  /* a shape holds only its sizes: an option put there ({4, pinned = true})
     would be lost */
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int isint = 0;
    lua_Integer k;
    lua_pop(L, 1);
    k = lua_tointegerx(L, -1, &isint);
    if (lua_type(L, -1) != LUA_TNUMBER || !isint || k < 1 || k > ndim) {
      const char *key;
      if (lua_type(L, -1) == LUA_TSTRING)
        key = lua_pushfstring(L, "\"%s\"", lua_tostring(L, -1));
      else if (lua_type(L, -1) == LUA_TNUMBER) {
        lua_pushvalue(L, -1);           /* lua_tostring converts in place: a copy */
        key = lua_tostring(L, -1);
      } else
        key = luaL_typename(L, -1);
      lg_argerror(L, fn, 2, "a shape holds only sizes, got the key %s (options go in "
                  "argument #3)", key);
    }
  }
  return ndim;
}

/* Checks that the host array a can be the whole contents of a buffer of
** count elements of type t. */
void lg_check_array_fits(lua_State *L, const lg_Array *a, lg_Type t, size_t count,
                         const char *fn, const char *what) {
  char want[LG_TYPENAME_MAX], got[LG_TYPENAME_MAX];
  if (a->type.scalar != t.scalar || a->type.width != t.width)
    lg_error(L, fn, "%s: expected a host array of %s, got one of %s (arrays are not "
             "converted: make one with gpu.array(\"%s\", ...))", what, lg_type_name(t, want),
             lg_type_name(a->type, got), want);
  if (a->count != count)
    lg_error(L, fn, "%s: expected %I value%s, got %I", what,
             (lua_Integer)(count * (size_t)t.width), count * (size_t)t.width == 1 ? "" : "s",
             (lua_Integer)a->nscalars);
}

/* dev:buffer(type, n | {shape} [, {access = "in"|"out"|"mixed", host = data,
** use_host = bool, pinned = bool, init = bool, collect = bool}]) */
static int dev_buffer(lua_State *L) {
  static const char *const fn = "dev:buffer";
  static const char *const buffer_options[] = {"access", "host", "use_host", "pinned",
                                                        "init", "collect", NULL};
  size_t shape[LG_MAXDIM], count;
  lg_Access access = LG_MIXED;
  const void *host = NULL;
  int ndim, i, hostidx = 0, use_host = 0, init = 1, paced = 1;
  lg_Type t;
  lg_checkdevice(L, 1);
  t = lg_checktype(L, 2, fn, 1);
  ndim = read_shape(L, 3, shape, fn);
  count = shape_count(L, t, ndim, shape, fn);
  if (!lua_isnoneornil(L, 4)) {
    if (!lua_istable(L, 4))
      lg_typeerror(L, fn, 3, 4, "an options table {access =, host =}");
    lg_checkoptions(L, 4, fn, 3, buffer_options);
    lua_getfield(L, 4, "access");
    if (!lua_isnil(L, -1)) {
      const char *s = lua_tostring(L, -1);
      for (i = 0; s != NULL && lua_type(L, -1) == LUA_TSTRING && access_names[i]; i++)
        if (strcmp(access_names[i], s) == 0) break;
      if (s == NULL || lua_type(L, -1) != LUA_TSTRING || access_names[i] == NULL)
        lg_argerror(L, fn, 3, "access: expected \"in\", \"out\" or \"mixed\", got %s",
                    lua_type(L, -1) == LUA_TSTRING
                        ? lua_pushfstring(L, "\"%s\"", s) : luaL_typename(L, -1));
      access = (lg_Access)i;
    }
    lua_getfield(L, 4, "host");
    hostidx = lua_gettop(L);
    if (lua_istable(L, hostidx)) {
      host = lg_table_to_array(L, hostidx, t, count, fn, 3)->data;
    } else if (!lua_isnil(L, hostidx)) {
      lg_Array *a = lg_testarray(L, hostidx);
      if (a == NULL)
        lg_argerror(L, fn, 3, "host: expected a host array or a table, got %s",
                    luaL_getmetafield(L, hostidx, "__name") == LUA_TSTRING
                        ? lua_tostring(L, -1) : luaL_typename(L, hostidx));
      lg_check_array_fits(L, a, t, count, fn, "argument #3: host");
      host = a->data;
    }
    lua_getfield(L, 4, "use_host");   /* the host array's memory is the buffer's */
    use_host = lua_toboolean(L, -1);
    if (use_host && lg_testarray(L, hostidx) == NULL)
      lg_argerror(L, fn, 3, "use_host: expected host = a host array, got %s",
                  lua_istable(L, hostidx) ? "a table" : luaL_typename(L, hostidx));
    lua_getfield(L, 4, "pinned");     /* CL_MEM_ALLOC_HOST_PTR */
    if (!lua_isnil(L, -1)) {
      if (!lua_isboolean(L, -1))
        lg_argerror(L, fn, 3, "pinned: expected a boolean, got %s", luaL_typename(L, -1));
      if (lua_toboolean(L, -1) && use_host)
        lg_argerror(L, fn, 3, "pinned and use_host: give one of them");
      if (lua_toboolean(L, -1)) use_host = 2;
    }
    lua_getfield(L, 4, "init");       /* false: no zero-fill, contents undefined */
    if (!lua_isnil(L, -1)) {
      if (!lua_isboolean(L, -1))
        lg_argerror(L, fn, 3, "init: expected a boolean, got %s", luaL_typename(L, -1));
      init = lua_toboolean(L, -1);
      if (!init && host != NULL)
        lg_argerror(L, fn, 3, "init = false and host: give one of them");
    }
    /* false: the buffer's bytes do not step Lua's collector (an allocator
    ** that paces collections itself: luagpu's tensor pool, whose steps a
    ** collection in the middle of an op would defeat) */
    lua_getfield(L, 4, "collect");
    if (!lua_isnil(L, -1)) {
      if (!lua_isboolean(L, -1))
        lg_argerror(L, fn, 3, "collect: expected a boolean, got %s", luaL_typename(L, -1));
      paced = lua_toboolean(L, -1);
    }
  }
  new_root(L, 1, t, ndim, shape, access, host, use_host, init, paced, fn);
  if (use_host == 1) {
    lua_pushvalue(L, hostidx);
    lua_setiuservalue(L, -2, 3);
  }
  return 1;
}

/* dev:scalar(type [, value]): a one-element buffer whose read gives a number. */
static int dev_scalar(lua_State *L) {
  static const char *const fn = "dev:scalar";
  size_t one = 1;
  lg_Type t;
  lg_Buffer *b;
  union { char c[128]; double align; } init;
  lg_checkdevice(L, 1);
  t = lg_checktype(L, 2, fn, 1);
  memset(&init, 0, sizeof init);
  if (!lua_isnoneornil(L, 3)) {
    if (lua_type(L, 3) == LUA_TTABLE || t.width > 1) {
      lg_Array *a;
      if (!lua_istable(L, 3))
        lg_typeerror(L, fn, 2, 3, lua_pushfstring(L, "a table of %d numbers", t.width));
      a = lg_table_to_array(L, 3, t, 1, fn, 2);
      memcpy(init.c, a->data, lg_type_size(t));
    } else {
      lg_store_scalar(L, 3, t.scalar, init.c, fn, "argument #2");
    }
  }
  b = new_root(L, 1, t, 1, &one, LG_MIXED, init.c, 0, 1, 1, fn);
  b->is_scalar = 1;
  return 1;
}

lg_Buffer *lg_wrapbuffer(lua_State *L, int devidx, cl_mem mem, lg_Type t,
                         size_t count, lg_Access access) {
  size_t size = 0, esize = lg_type_size(t);
  lg_Buffer *b;
  devidx = lua_absindex(L, devidx);
  b = push_buffer(L, devidx);
  b->mem = mem;   /* from here on, the collector releases it */
  b->type = t;
  b->count = count;
  b->ndim = 1;
  b->shape[0] = count;
  b->access = access;
  clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
  if (count == 0 || count > size / esize) {
    char tname[LG_TYPENAME_MAX];
    lg_error(L, "luagpu_push_buffer", "the cl_mem holds %I bytes: not room for %I elements "
             "of %s", (lua_Integer)size, (lua_Integer)count, lg_type_name(t, tname));
  }
  return b;
}

/* ------------------------------------------------------------- views */

/* Resolves a 1-based, possibly negative position against n. */
static lua_Integer resolve(lua_Integer i, size_t n) {
  return i < 0 ? (lua_Integer)n + i + 1 : i;
}

/* b:sub(first [, last]): a view of elements first..last (last defaults to -1). */
static int buf_sub(lua_State *L) {
  lg_Buffer *b = lg_checkbuffer(L, 1), *v;
  lua_Integer first, last;
  int isint = 0;
  if (lua_type(L, 2) != LUA_TNUMBER) lg_typeerror(L, "buffer:sub", 1, 2, "an integer");
  first = lua_tointegerx(L, 2, &isint);
  if (!isint) lg_argerror(L, "buffer:sub", 1, "expected an integer, got %s", lg_tolstring(L, 2));
  if (lua_isnoneornil(L, 3)) {
    last = -1;
  } else {
    if (lua_type(L, 3) != LUA_TNUMBER) lg_typeerror(L, "buffer:sub", 2, 3, "an integer");
    last = lua_tointegerx(L, 3, &isint);
    if (!isint)
      lg_argerror(L, "buffer:sub", 2, "expected an integer, got %s", lg_tolstring(L, 3));
  }
  first = resolve(first, b->count);
  last = resolve(last, b->count);
  if (first < 1 || first > last || last > (lua_Integer)b->count)
    lg_error(L, "buffer:sub", "expected 1 <= first <= last <= %I, got first = %I, last = %I "
             "(negative positions count from the end)", (lua_Integer)b->count, first, last);
  lua_getiuservalue(L, 1, 1);
  v = push_buffer(L, -1);
  v->root = b->root;
  v->type = b->type;
  v->offset = b->offset + (size_t)(first - 1);
  v->count = (size_t)(last - first + 1);
  v->ndim = 1;
  v->shape[0] = v->count;
  v->access = b->access;
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 2);   /* the parent */
  return 1;
}

cl_mem lg_buffer_kernel_mem(lua_State *L, lg_Buffer *b) {
  lg_Buffer *root = b->root;
  size_t esize = lg_type_size(b->type), align;
  cl_buffer_region region;
  cl_int err = CL_SUCCESS;
  if (!lg_buffer_live(b)) luaL_error(L, "luagpu: attempt to use a released buffer");
  if (root == b) return b->mem;
  if (b->offset == 0 && b->count == root->count) return root->mem;
  if (b->sub != NULL) return b->sub;
  align = b->dev->mem_base_addr_align ? b->dev->mem_base_addr_align : 1;
  region.origin = b->offset * esize;
  region.size = b->count * esize;
  if (region.origin % align != 0) {
    char tname[LG_TYPENAME_MAX];
    lg_error(L, "kernel argument", "a view of elements %I..%I starts at byte %I of its buffer, "
             "not a multiple of the device's mem_base_addr_align (%I bytes): views passed to "
             "kernels must start at element 1 + k*%I (%s)", (lua_Integer)b->offset + 1,
             (lua_Integer)(b->offset + b->count), (lua_Integer)region.origin,
             (lua_Integer)align, (lua_Integer)(align / esize),
             lg_type_name(b->type, tname));
  }
  b->sub = clCreateSubBuffer(root->mem, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  if (b->sub == NULL) lg_clerror(L, "clCreateSubBuffer", err, NULL);
  return b->sub;
}

/* ----------------------------------------------------------- lifetime */

/* release, __gc, __close: a root lets its cl_mem go (OpenCL frees it once
** the commands using it are done), a view its sub-buffer. */
static int buf_release(lua_State *L) {
  lg_Buffer *b = luaL_checkudata(L, 1, LG_BUFFER_MT);
  if (b->root == b && b->mem != NULL) {
    clReleaseMemObject(b->mem);
    b->mem = NULL;
  }
  if (b->sub != NULL) {
    clReleaseMemObject(b->sub);
    b->sub = NULL;
  }
  b->released = 1;
  return 0;
}

/* ------------------------------------------------------------- fields */

static void push_shape(lua_State *L, const lg_Buffer *b) {
  int i;
  lua_createtable(L, b->ndim, 0);
  for (i = 0; i < b->ndim; i++) {
    lua_pushinteger(L, (lua_Integer)b->shape[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

/* Pushes the root Buffer of the Buffer at idx: itself, or the end of its
** chain of parents (uservalue 2). */
static void push_root(lua_State *L, int idx) {
  lua_pushvalue(L, idx);
  while (lua_getiuservalue(L, -1, 2) == LUA_TUSERDATA) lua_remove(L, -2);
  lua_pop(L, 1);
}

static int buf_index(lua_State *L) {
  lg_Buffer *b;
  const char *k;
  char tname[LG_TYPENAME_MAX];
  if (lg_pushmethod(L, 1, 2)) return 1;
  b = luaL_checkudata(L, 1, LG_BUFFER_MT);
  k = lua_tostring(L, 2);
  if (k == NULL) return 0;
  if (!lg_buffer_live(b))
    luaL_error(L, "luagpu: buffer.%s: attempt to use a released buffer", k);
  if (strcmp(k, "type") == 0) lua_pushstring(L, lg_type_name(b->type, tname));
  else if (strcmp(k, "shape") == 0) push_shape(L, b);
  else if (strcmp(k, "bytes") == 0) lua_pushinteger(L, (lua_Integer)(b->count * lg_type_size(b->type)));
  else if (strcmp(k, "count") == 0) lua_pushinteger(L, (lua_Integer)b->count);
  else if (strcmp(k, "device") == 0) lua_getiuservalue(L, 1, 1);
  else if (strcmp(k, "access") == 0) lua_pushstring(L, access_names[b->access]);
  else if (strcmp(k, "parent") == 0) lua_getiuservalue(L, 1, 2);
  else if (strcmp(k, "root") == 0) push_root(L, 1);
  else if (strcmp(k, "offset") == 0) lua_pushinteger(L, (lua_Integer)b->offset);
  else if (strcmp(k, "version") == 0) lua_pushinteger(L, (lua_Integer)b->root->version);
  else return 0;
  return 1;
}

static int buf_newindex(lua_State *L) {
  return lg_error(L, "buffer", "cannot set field '%s' (buffers have read-only fields; "
                  "use buffer:write to change the contents)", lg_tolstring(L, 2));
}

static int buf_len(lua_State *L) {
  lg_Buffer *b = lg_checkbuffer(L, 1);
  lua_pushinteger(L, (lua_Integer)b->count);
  return 1;
}

static int buf_tostring(lua_State *L) {
  lg_Buffer *b = luaL_checkudata(L, 1, LG_BUFFER_MT);
  char tname[LG_TYPENAME_MAX];
  luaL_Buffer sb;
  int i;
  if (!lg_buffer_live(b)) {
    lua_pushliteral(L, LG_BUFFER_MT " (released)");
    return 1;
  }
  luaL_buffinit(L, &sb);
  luaL_addstring(&sb, LG_BUFFER_MT ": ");
  if (b->root != b) luaL_addstring(&sb, "view of ");
  luaL_addstring(&sb, lg_type_name(b->type, tname));
  for (i = 0; i < b->ndim; i++) {
    lua_pushfstring(L, "%s%I", i == 0 ? "[" : ", ", (lua_Integer)b->shape[i]);
    luaL_addvalue(&sb);
  }
  luaL_addchar(&sb, ']');
  if (b->root != b) {
    lua_pushfstring(L, " at elements %I..%I", (lua_Integer)b->offset + 1,
                    (lua_Integer)(b->offset + b->count));
    luaL_addvalue(&sb);
  }
  lua_pushfstring(L, " (%s%s, %I bytes, %s)", b->is_scalar ? "scalar, " : "",
                  access_names[b->access], (lua_Integer)(b->count * lg_type_size(b->type)),
                  b->dev->name);
  luaL_addvalue(&sb);
  luaL_pushresult(&sb);
  return 1;
}

/* ------------------------------------------------------------- open */

static const luaL_Reg buffer_methods[] = {
  {"sub", buf_sub}, {"release", buf_release}, {NULL, NULL}
};

/* For gpu.type: true once the buffer, or the root of a view, was released. */
static int buf_released(lua_State *L) {
  lua_pushboolean(L, !lg_buffer_live(luaL_checkudata(L, 1, LG_BUFFER_MT)));
  return 1;
}

static const luaL_Reg buffer_meta[] = {
  {"__released", buf_released}, {"__index", buf_index}, {"__newindex", buf_newindex},
  {"__len", buf_len}, {"__gc", buf_release}, {"__close", buf_release},
  {"__tostring", buf_tostring}, {NULL, NULL}
};

static const luaL_Reg device_methods[] = {
  {"buffer", dev_buffer}, {"scalar", dev_scalar}, {NULL, NULL}
};

void lg_open_buffer(lua_State *L) {
  lg_newclass(L, LG_BUFFER_MT, buffer_methods, buffer_meta);
  {
    static const char *const fields[] = {"type", "shape", "bytes", "count", "device", "access",
                                         "parent", "root", "offset", "version", NULL};
    lg_class_fields(L, LG_BUFFER_MT, fields);
  }
  lg_add_methods(L, LG_DEVICE_MT, device_methods);
}
