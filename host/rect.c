/*
** rect.c: rectangular transfers of 1-, 2- and 3-D regions: b:read_rect,
** b:write_rect, b:copy_rect_to. The buffer is seen with its shape (or
** opts.shape), row-major, the last dimension varying fastest; origins and
** regions are in elements, 1-based, listed in the shape's order. The host
** side is a host array of the region's shape unless opts.host_shape (and
** opts.host_origin) place the region inside a larger one.
*/
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* One side of a transfer: what it is seen as, and the box in it. */
typedef struct Box {
  int nd;
  size_t shape[3], origin[3];  /* origin 0-based here */
} Box;

static const char *const rw_options[] = {"wait", "queue", "shape", "host_shape", "host_origin",
                                         NULL};
static const char *const copy_options[] = {"wait", "queue", "shape", "dst_shape", NULL};

/* Reads the list at idx of n (1..3; 0: any of 1..3) integers >= least into
** out; returns how many. what names it in errors. */
static int read_dims(lua_State *L, int idx, int n, size_t *out, lua_Integer least,
                     const char *fn, int argno, const char *what) {
  int i, len;
  idx = lua_absindex(L, idx);
  if (!lua_istable(L, idx))
    lg_argerror(L, fn, argno, "%s: expected a table of %s, got %s", what,
                n ? lua_pushfstring(L, "%d integers", n) : "1 to 3 integers",
                luaL_typename(L, idx));
  len = (int)lua_rawlen(L, idx);
  if ((n != 0 && len != n) || (n == 0 && (len < 1 || len > 3)))
    lg_argerror(L, fn, argno, "%s: expected %s, got %d", what,
                n ? lua_pushfstring(L, "%d integers (one per dimension)", n)
                  : "1 to 3 integers", len);
  for (i = 0; i < len; i++) {
    lua_Integer v;
    int ok;
    lua_rawgeti(L, idx, i + 1);
    v = lua_tointegerx(L, -1, &ok);
    if (!ok || lua_type(L, -1) != LUA_TNUMBER || v < least)   /* ("2" is no size) */
      lg_argerror(L, fn, argno, "%s[%d]: expected an integer >= %d, got %s", what, i + 1,
                  (int)least, lg_tolstring(L, -1));
    out[i] = (size_t)v;
    lua_pop(L, 1);
  }
  return len;
}

static size_t product(const size_t *s, int nd) {
  size_t p = 1;
  int i;
  for (i = 0; i < nd; i++) p *= s[i];
  return p;
}

/* The number of elements of shape s (nd dimensions), or 0 when it would
** pass max: the caller raises. No product here wraps. */
static size_t count_upto(const size_t *s, int nd, size_t max) {
  size_t p = 1;
  int i;
  for (i = 0; i < nd; i++) {
    if (s[i] > max / p) return 0;
    p *= s[i];
  }
  return p;
}

/* Pushes shape s as "{a, b, c}". */
static const char *push_shape(lua_State *L, const size_t *s, int nd) {
  luaL_Buffer b;
  int i;
  luaL_buffinit(L, &b);
  luaL_addchar(&b, '{');
  for (i = 0; i < nd; i++) {
    if (i > 0) luaL_addstring(&b, ", ");
    lua_pushfstring(L, "%I", (lua_Integer)s[i]);
    luaL_addvalue(&b);
  }
  luaL_addchar(&b, '}');
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

/* Raises unless the box of region at origin lies inside shape. */
static void check_inside(lua_State *L, const Box *b, const size_t *region, const char *fn,
                         const char *side) {
  int i;
  for (i = 0; i < b->nd; i++)
    if (region[i] > b->shape[i] || b->origin[i] > b->shape[i] - region[i]) {
      char last[32];   /* origin + region may pass lua_Integer: printed unsigned */
      snprintf(last, sizeof last, "%zu", b->origin[i] + region[i]);
      lg_error(L, fn, "region out of range: %s dimension %d: elements %I..%s of %I", side,
               i + 1, (lua_Integer)b->origin[i] + 1, last, (lua_Integer)b->shape[i]);
    }
}

/* The buffer's side: its shape (or opts[key]) over its elements. */
static void buffer_box(lua_State *L, const lg_Buffer *b, int optsidx, const char *key,
                       Box *x, const char *fn, int argno) {
  if (lua_istable(L, optsidx) && lua_getfield(L, optsidx, key) != LUA_TNIL) {
    size_t n;
    x->nd = read_dims(L, -1, 0, x->shape, 1, fn, argno, key);
    lua_pop(L, 1);
    n = count_upto(x->shape, x->nd, LG_MAX_BYTES);
    if (n == 0)
      lg_argerror(L, fn, argno, "%s: %s is more elements than the buffer's %I", key,
                  push_shape(L, x->shape, x->nd), (lua_Integer)b->count);
    if (n > b->count)
      lg_argerror(L, fn, argno, "%s: %I elements, more than the buffer's %I", key,
                  (lua_Integer)n, (lua_Integer)b->count);
    return;
  }
  if (lua_istable(L, optsidx)) lua_pop(L, 1);
  if (b->ndim > 3)
    lg_error(L, fn, "the buffer has %d dimensions: give opts.%s of at most 3", b->ndim, key);
  x->nd = b->ndim < 1 ? 1 : b->ndim;
  memcpy(x->shape, b->shape, sizeof(size_t) * (size_t)x->nd);
  if (b->ndim < 1) x->shape[0] = b->count;
}

/* OpenCL's origin, region (bytes in x) and pitches of box x for region r. */
static void to_cl(const Box *x, const size_t *r, size_t esize, size_t base, size_t o[3],
                  size_t reg[3], size_t *row, size_t *slice) {
  int nd = x->nd;
  o[0] = base + x->origin[nd - 1] * esize;
  o[1] = nd >= 2 ? x->origin[nd - 2] : 0;
  o[2] = nd == 3 ? x->origin[0] : 0;
  if (reg != NULL) {
    reg[0] = r[nd - 1] * esize;
    reg[1] = nd >= 2 ? r[nd - 2] : 1;
    reg[2] = nd == 3 ? r[0] : 1;
  }
  *row = x->shape[nd - 1] * esize;
  *slice = *row * (nd >= 2 ? x->shape[nd - 2] : 1);
}

/* Reads origin (at oidx, argument oarg) and region (at ridx) for box x. */
static void read_box(lua_State *L, Box *x, int oidx, int oarg, size_t *region, int ridx,
                     int rarg, const char *fn) {
  size_t one[3];
  int i;
  if (region != NULL) read_dims(L, ridx, x->nd, region, 1, fn, rarg, "region");
  read_dims(L, oidx, x->nd, one, 1, fn, oarg, "origin");
  for (i = 0; i < x->nd; i++) x->origin[i] = one[i] - 1;
}

/* The host side: opts.host_shape and opts.host_origin, else the region. */
static void host_box(lua_State *L, int optsidx, const Box *dev, const size_t *region, Box *h,
                     size_t esize, const char *fn, int argno) {
  int i;
  h->nd = dev->nd;
  memcpy(h->shape, region, sizeof(size_t) * (size_t)h->nd);
  memset(h->origin, 0, sizeof h->origin);
  if (!lua_istable(L, optsidx)) return;
  if (lua_getfield(L, optsidx, "host_shape") != LUA_TNIL)
    read_dims(L, -1, h->nd, h->shape, 1, fn, argno, "host_shape");
  if (lua_getfield(L, optsidx, "host_origin") != LUA_TNIL) {
    read_dims(L, -1, h->nd, h->origin, 1, fn, argno, "host_origin");
    for (i = 0; i < h->nd; i++) h->origin[i]--;
  }
  lua_pop(L, 2);
  if (count_upto(h->shape, h->nd, LG_MAX_BYTES / esize) == 0)
    lg_argerror(L, fn, argno, "host_shape: %s is too large (at most %I elements of %I bytes)",
                push_shape(L, h->shape, h->nd), (lua_Integer)(LG_MAX_BYTES / esize),
                (lua_Integer)esize);
  check_inside(L, h, region, fn, "host");
}

/* Pushes the device, then the queue and wait list of the options. */
static int get_opts(lua_State *L, int bidx, int optsidx, const char *fn, int argno,
                    lg_Opts *o) {
  lua_getiuservalue(L, bidx, 1);
  lg_getopts(L, optsidx, -1, fn, argno, o);
  return lua_gettop(L) - 1;
}

static void check_live(lua_State *L, const lg_Buffer *b, const lg_Opts *o, const char *fn) {
  if (!lg_buffer_live(b)) lg_error(L, fn, "attempt to use a released buffer");
  if (o->queue->q == NULL) lg_error(L, fn, "attempt to use a released queue");
}

static void push_event(lua_State *L, cl_event ev, const char *command, int a, int b, int q) {
  int keep[3] = {a, b, q};
  lg_pushevent(L, ev, command, keep, 3);
}

/* b:read_rect(origin, region [, dst] [, opts]) and
** b:write_rect(origin, region, src [, opts]). */
static int rw_rect(lua_State *L, int write) {
  const char *fn = write ? "buffer:write_rect" : "buffer:read_rect";
  lg_Buffer *b = lg_checkbuffer(L, 1);
  size_t esize = lg_type_size(b->type), region[3], bo[3], ho[3], reg[3], brow, bslice, hrow,
         hslice;
  int optsidx = 5, arr, qidx;
  Box dev, host;
  lg_Array *a = NULL;
  lg_Opts o;
  cl_event ev = NULL;
  cl_int err;
  lua_settop(L, 5);
  if (!write && lua_isnil(L, 5) && lua_istable(L, 4) && lg_testarray(L, 4) == NULL) {
    lua_insert(L, 4);   /* read_rect(origin, region, opts) */
  }
  if (write && b->access == LG_OUT)
    lg_error(L, fn, "the buffer has access \"out\" (device to host only): it cannot be "
             "written from the host (make it with access = \"mixed\")");
  if (!write && b->access == LG_IN)
    lg_error(L, fn, "the buffer has access \"in\" (host to device only): it cannot be read "
             "back to the host (make it with access = \"mixed\")");
  if (!lua_isnoneornil(L, optsidx) && !lua_istable(L, optsidx))
    lg_typeerror(L, fn, 4, optsidx, "an options table");
  lg_checkoptions(L, optsidx, fn, 4, rw_options);
  buffer_box(L, b, optsidx, "shape", &dev, fn, 4);
  read_box(L, &dev, 2, 1, region, 3, 2, fn);
  check_inside(L, &dev, region, fn, "buffer");
  host_box(L, optsidx, &dev, region, &host, esize, fn, 4);
  if (write && lua_istable(L, 4) && lg_testarray(L, 4) == NULL) {
    a = lg_table_to_array(L, 4, b->type, product(host.shape, host.nd), fn, 3);
  } else if (!lua_isnil(L, 4)) {
    a = lg_testarray(L, 4);
    if (a == NULL)
      lg_typeerror(L, fn, 3, 4, write ? "a host array or a table" : "a host array");
    lg_check_array_fits(L, a, b->type, product(host.shape, host.nd), fn, "argument #3");
    lua_pushvalue(L, 4);
  } else if (write) {
    lg_typeerror(L, fn, 3, 4, "a host array or a table");
  } else {
    int zero = memcmp(host.shape, region, sizeof(size_t) * (size_t)host.nd) != 0;
    a = lg_newarray_for(L, b->type, host.nd, host.shape, fn, zero);
  }
  arr = lua_gettop(L);
  qidx = get_opts(L, 1, optsidx, fn, 4, &o);
  check_live(L, b, &o, fn);
  to_cl(&dev, region, esize, b->offset * esize, bo, reg, &brow, &bslice);
  to_cl(&host, region, esize, 0, ho, NULL, &hrow, &hslice);
  if (write) lg_buffer_written(b);
  if (write)
    err = clEnqueueWriteBufferRect(o.queue->q, b->root->mem, CL_FALSE, bo, ho, reg, brow,
                                   bslice, hrow, hslice, a->data, o.nwait, o.wait, &ev);
  else
    err = clEnqueueReadBufferRect(o.queue->q, b->root->mem, CL_FALSE, bo, ho, reg, brow,
                                  bslice, hrow, hslice, a->data, o.nwait, o.wait, &ev);
  if (err != CL_SUCCESS)
    lg_clerror(L, write ? "clEnqueueWriteBufferRect" : "clEnqueueReadBufferRect", err, NULL);
  if (lg_tracing(L))
    lg_trace_add(L, o.queue->q, ev, write ? "write" : "read", NULL, 0, NULL, NULL,
                 product(region, dev.nd) * esize, o.nwait, o.wait);
  push_event(L, ev, write ? "write_rect" : "read_rect", 1, arr, qidx);
  if (!write) lg_event_setresult(L, -1, arr, LG_RESULT_VALUE);
  return 1;
}

static int buf_read_rect(lua_State *L) { return rw_rect(L, 0); }
static int buf_write_rect(lua_State *L) { return rw_rect(L, 1); }

/* b:copy_rect_to(dst, origin, dst_origin, region [, opts]): opts.shape
** and opts.dst_shape say how the two are seen (default: their shapes). */
static int buf_copy_rect_to(lua_State *L) {
  static const char *const fn = "buffer:copy_rect_to";
  lg_Buffer *b = lg_checkbuffer(L, 1), *d = lg_testbuffer(L, 2);
  size_t esize = lg_type_size(b->type), region[3], so[3], dso[3], reg[3], srow, sslice, drow,
         dslice;
  char t1[LG_TYPENAME_MAX], t2[LG_TYPENAME_MAX];
  Box src, dst;
  lg_Opts o;
  cl_event ev = NULL;
  cl_int err;
  int qidx;
  lua_settop(L, 6);
  if (d == NULL) lg_typeerror(L, fn, 1, 2, "a " LG_BUFFER_MT);
  if (!lg_buffer_live(d)) lg_argerror(L, fn, 1, "attempt to use a released buffer");
  if (d->type.scalar != b->type.scalar || d->type.width != b->type.width)
    lg_argerror(L, fn, 1, "expected a buffer of %s, got one of %s",
                lg_type_name(b->type, t1), lg_type_name(d->type, t2));
  if (d->dev->ctx != b->dev->ctx)
    lg_argerror(L, fn, 1, "the destination is on %s, of another context than %s",
                d->dev->name, b->dev->name);
  if (!lua_isnil(L, 6) && !lua_istable(L, 6)) lg_typeerror(L, fn, 5, 6, "an options table");
  lg_checkoptions(L, 6, fn, 5, copy_options);
  buffer_box(L, b, 6, "shape", &src, fn, 5);
  buffer_box(L, d, 6, "dst_shape", &dst, fn, 5);
  if (src.nd != dst.nd)
    lg_error(L, fn, "the source is seen in %d dimensions, the destination in %d (give "
             "opts.shape or opts.dst_shape)", src.nd, dst.nd);
  read_box(L, &src, 3, 2, region, 5, 4, fn);
  read_box(L, &dst, 4, 3, NULL, 0, 0, fn);
  check_inside(L, &src, region, fn, "source");
  check_inside(L, &dst, region, fn, "destination");
  qidx = get_opts(L, 1, 6, fn, 5, &o);
  check_live(L, b, &o, fn);
  if (!lg_buffer_live(d)) lg_argerror(L, fn, 1, "attempt to use a released buffer");
  to_cl(&src, region, esize, b->offset * esize, so, reg, &srow, &sslice);
  to_cl(&dst, region, esize, d->offset * esize, dso, NULL, &drow, &dslice);
  lg_buffer_written(d);
  err = clEnqueueCopyBufferRect(o.queue->q, b->root->mem, d->root->mem, so, dso, reg, srow,
                                sslice, drow, dslice, o.nwait, o.wait, &ev);
  if (err == CL_MEM_COPY_OVERLAP)   /* (as copy_to's message, naming the call) */
    lg_argerror(L, fn, 1, "source and destination regions overlap (the same buffer's "
                "elements, read and written by one copy)");
  if (err != CL_SUCCESS) lg_clerror(L, "clEnqueueCopyBufferRect", err, NULL);
  if (lg_tracing(L))
    lg_trace_add(L, o.queue->q, ev, "copy", NULL, 0, NULL, NULL,
                 product(region, src.nd) * esize, o.nwait, o.wait);
  push_event(L, ev, "copy_rect", 1, 2, qidx);
  return 1;
}

static const luaL_Reg rect_methods[] = {
  {"read_rect", buf_read_rect}, {"write_rect", buf_write_rect},
  {"copy_rect_to", buf_copy_rect_to}, {NULL, NULL}
};

void lg_open_rect(lua_State *L) {
  lg_add_methods(L, LG_BUFFER_MT, rect_methods);
}
