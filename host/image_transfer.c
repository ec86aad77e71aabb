/*
** image_transfer.c: an image's transfers: img:write and img:read (whole, or
** a region, from and into host arrays), img:fill (every pixel or a region),
** img:copy_to (to an image, whole or regions; to a buffer) and
** img:copy_from (a buffer). Origins and regions are in pixels, 1-based, in
** OpenCL's order {x, y [, z]}; out-of-range ones raise with the numbers.
** The Image class itself is image.c's.
*/
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Reads the table at idx, im->dims integers >= 1 (what: "origin", "region",
** ...), into out: 0-based when origin is set. out keeps what it held in the
** dimensions im lacks. */
static void read_coords(lua_State *L, const lg_Image *im, int idx, size_t *out, int origin,
                        const char *fn, int argno, const char *what) {
  int k;
  if (!lua_istable(L, idx) || (int)lua_rawlen(L, idx) != im->dims)
    lg_argerror(L, fn, argno, "%s: expected a table of %d integers", what, im->dims);
  for (k = 0; k < im->dims; k++) {
    int ok;
    lua_Integer v;
    lua_rawgeti(L, idx, k + 1);
    v = lua_tointegerx(L, -1, &ok);
    if (!ok || lua_type(L, -1) != LUA_TNUMBER || v < 1)   /* ("2" is no size) */
      lg_argerror(L, fn, argno, "%s[%d]: expected an integer >= 1, got %s", what, k + 1,
                  lg_tolstring(L, -1));
    out[k] = origin ? (size_t)v - 1 : (size_t)v;
    lua_pop(L, 1);
  }
}

/* Raises unless the box of region at origin lies inside im; side ("",
** "source ", "destination ") starts the message. */
static void check_inside(lua_State *L, const lg_Image *im, const size_t *origin,
                         const size_t *region, const char *fn, const char *side) {
  int i;
  for (i = 0; i < im->dims; i++)
    if (region[i] > im->size[i] || origin[i] > im->size[i] - region[i]) {
      char last[32];   /* origin + region may pass lua_Integer: printed unsigned */
      snprintf(last, sizeof last, "%zu", origin[i] + region[i]);
      lg_error(L, fn, "%sregion out of range: dimension %d: pixels %I..%s of %I", side, i + 1,
               (lua_Integer)origin[i] + 1, last, (lua_Integer)im->size[i]);
    }
}

static void whole(const lg_Image *im, size_t *origin, size_t *region) {
  int i;
  for (i = 0; i < 3; i++) {
    origin[i] = 0;
    region[i] = im->size[i];
  }
}

/* Reads {x, y, z} at idx (1-based, or none: whole) into 0-based origin and
** region for im; checks them against its size. */
static void read_region(lua_State *L, const lg_Image *im, int oidx, int ridx, size_t *origin,
                        size_t *region, const char *fn, int argno) {
  whole(im, origin, region);
  if (oidx == 0) return;
  read_coords(L, im, oidx, origin, 1, fn, argno, "origin");
  read_coords(L, im, ridx, region, 0, fn, argno + 1, "region");
  check_inside(L, im, origin, region, fn, "");
}

/* Raises when a value is given at stack index from or after it, up to top:
** an argument the call did not take (a region after a nil origin, a
** region after the options), which was ignored. */
static void nothing_after(lua_State *L, int from, int top, const char *fn) {
  int i;
  for (i = from; i <= top; i++)
    if (!lua_isnil(L, i))
      lg_argerror(L, fn, i - 1, "expected nothing here, got %s (an origin and a region go "
                  "together, before the options)", luaL_typename(L, i));
}

/* Whether the value at idx starts an origin/region list (a table with a
** list part; an options table has none). */
static int is_coords(lua_State *L, int idx) {
  return lua_istable(L, idx) && lua_rawlen(L, idx) > 0;
}

/* img:read([dst] [, origin, region] [, opts]), img:write(src [, origin, region] [, opts]):
** an Event keeping the image, the host array and the queue. With
** opts.blocking true, the call blocks (no Event is made): read returns the
** host array, write nothing. The pixels go straight between the image and
** the host array (dst, src, or a new one): no copy on the host. */
static int img_rw(lua_State *L, int write) {
  const char *fn = write ? "image:write" : "image:read";
  lg_Image *im = lg_check_image(L, 1);
  size_t origin[3], region[3], count;
  int first = 2, optsidx, arr, qidx, keep[3], blocking = 0;
  lg_Array *a = NULL;
  lg_Opts o;
  cl_event ev = NULL;
  cl_int err;
  lg_Type t;
  if (write && im->access == LG_OUT)
    lg_error(L, fn, "the image has access \"out\": it cannot be written from the host");
  if (!write && im->access == LG_IN)
    lg_error(L, fn, "the image has access \"in\": it cannot be read back to the host");
  lg_nomore(L, fn, 5, 1);
  lua_settop(L, 5);
  if (write || lg_testarray(L, 2) != NULL) first = 3;
  else if (lua_isnil(L, 2) && lua_istable(L, 3)) first = 3;   /* img:read(nil, origin, ...) */
  else if (!lua_isnil(L, 2) && !lua_istable(L, 2))
    lg_typeerror(L, fn, 1, 2, "a host array, an origin or an options table");
  optsidx = first;
  if (lua_istable(L, first) && lua_rawlen(L, first) > 0) {   /* origin, region */
    read_region(L, im, first, first + 1, origin, region, fn, first - 1);
    optsidx = first + 2;
  } else {
    read_region(L, im, 0, 0, origin, region, fn, first - 1);
  }
  nothing_after(L, optsidx + 1, 5, fn);
  if (!lua_isnoneornil(L, optsidx) && !lua_istable(L, optsidx))
    lg_typeerror(L, fn, optsidx - 1, optsidx, "an options table");
  count = region[0] * region[1] * region[2] * lg_image_channels(im);
  t.scalar = lg_image_scalar(im);
  t.width = 1;
  if (write) {
    if (lua_istable(L, 2) && lg_testarray(L, 2) == NULL) {
      a = lg_table_to_array(L, 2, t, count, fn, 1);
    } else {
      if ((a = lg_testarray(L, 2)) == NULL)
        lg_typeerror(L, fn, 1, 2, "a host array or a table");
      lg_check_array_fits(L, a, t, count, fn, "argument #1");
      lua_pushvalue(L, 2);
    }
  } else if (first == 3 && lg_testarray(L, 2) != NULL) {
    a = lg_testarray(L, 2);
    lg_check_array_fits(L, a, t, count, fn, "argument #1");
    lua_pushvalue(L, 2);
  } else {
    a = lg_push_pixels(L, im, region, fn);
  }
  arr = lua_gettop(L);
  lua_settop(L, arr > 5 ? arr : 5);
  lg_checkoptions(L, optsidx, fn, optsidx - 1,
                  (const char *const[]){"wait", "queue", "blocking", NULL});
  if (lua_istable(L, optsidx)) {
    int ty = lua_getfield(L, optsidx, "blocking");
    if (ty != LUA_TNIL && ty != LUA_TBOOLEAN)
      lg_argerror(L, fn, optsidx - 1, "blocking: expected a boolean, got %s",
                  luaL_typename(L, -1));
    blocking = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  lua_getiuservalue(L, 1, 1);
  lg_getopts(L, optsidx, -1, fn, optsidx - 1, &o);
  qidx = lua_gettop(L) - 1;
  if (o.queue->q == NULL) lg_error(L, fn, "attempt to use a released queue");
  if (write)
    err = clEnqueueWriteImage(o.queue->q, im->mem, blocking ? CL_TRUE : CL_FALSE, origin,
                              region, 0, 0, a->data, o.nwait, o.wait, blocking ? NULL : &ev);
  else
    err = clEnqueueReadImage(o.queue->q, im->mem, blocking ? CL_TRUE : CL_FALSE, origin,
                             region, 0, 0, a->data, o.nwait, o.wait, blocking ? NULL : &ev);
  if (err != CL_SUCCESS) lg_clerror(L, write ? "clEnqueueWriteImage" : "clEnqueueReadImage",
                                    err, NULL);
  if (blocking) {              /* done: the callbacks of commands done by now run, as after a wait */
    lg_after_wait(L);
    if (write) return 0;
    lua_pushvalue(L, arr);
    return 1;
  }
  keep[0] = 1;
  keep[1] = arr;
  keep[2] = qidx;
  lg_pushevent(L, ev, write ? "image write" : "image read", keep, 3);
  if (!write) lg_event_setresult(L, -1, arr, LG_RESULT_VALUE);
  return 1;
}

static int img_read(lua_State *L) { return img_rw(L, 0); }
static int img_write(lua_State *L) { return img_rw(L, 1); }

/* The options of fill and copy at stack index optsidx (none, nil or a table
** of wait and queue; the stack is cut there) into o, for the image at 1 (its
** device is its first user value, left on the stack). Raises when the
** queue was released meanwhile (by the options' own metamethods). */
static void wait_queue_options(lua_State *L, int optsidx, const char *fn, lg_Opts *o) {
  if (!lua_isnoneornil(L, optsidx) && !lua_istable(L, optsidx))
    lg_typeerror(L, fn, optsidx - 1, optsidx, "an options table");
  lua_settop(L, optsidx);
  lg_checkoptions(L, optsidx, fn, optsidx - 1, (const char *const[]){"wait", "queue", NULL});
  lua_getiuservalue(L, 1, 1);
  lg_getopts(L, optsidx, -1, fn, optsidx - 1, o);
  if (o->queue->q == NULL) lg_error(L, fn, "attempt to use a released queue");
}

/* img:fill(color [, origin, region] [, opts]): color a table of 4 numbers
** (floats for normalized and float types, integers for the integer ones). */
static int img_fill(lua_State *L) {
  static const char *const fn = "image:fill";
  lg_Image *im = lg_check_image(L, 1);
  size_t origin[3], region[3];
  union { float f[4]; cl_int i[4]; cl_uint u[4]; } color;
  cl_channel_type ct = lg_image_channel_type(im);
  lg_Opts o;
  cl_event ev = NULL;
  cl_int err;
  int k, keep[2], optsidx = 3;
  if (!lua_istable(L, 2) || lua_rawlen(L, 2) != 4)
    return lg_typeerror(L, fn, 1, 2, "a color: a table of 4 numbers");
  for (k = 0; k < 4; k++) {
    lua_rawgeti(L, 2, k + 1);
    if (ct == CL_SIGNED_INT8 || ct == CL_SIGNED_INT16 || ct == CL_SIGNED_INT32)
      lg_store_scalar(L, -1, LG_INT, &color.i[k], fn, "argument #1");
    else if (ct == CL_UNSIGNED_INT8 || ct == CL_UNSIGNED_INT16 || ct == CL_UNSIGNED_INT32)
      lg_store_scalar(L, -1, LG_UINT, &color.u[k], fn, "argument #1");
    else
      lg_store_scalar(L, -1, LG_FLOAT, &color.f[k], fn, "argument #1");
    lua_pop(L, 1);
  }
  lg_nomore(L, fn, 5, 1);
  lua_settop(L, 5);
  if (is_coords(L, 3)) {
    read_region(L, im, 3, 4, origin, region, fn, 2);
    optsidx = 5;
  } else {
    whole(im, origin, region);
  }
  nothing_after(L, optsidx + 1, 5, fn);
  wait_queue_options(L, optsidx, fn, &o);
  err = clEnqueueFillImage(o.queue->q, im->mem, &color, origin, region, o.nwait, o.wait, &ev);
  if (err != CL_SUCCESS) lg_clerror(L, "clEnqueueFillImage", err, NULL);
  keep[0] = 1;
  keep[1] = lua_gettop(L) - 1;
  lg_pushevent(L, ev, "image fill", keep, 2);
  return 1;
}

/* img:copy_to(dst [, src_origin, dst_origin, region] [, opts]): dst an
** image of the same format and kind (of the same size too when no region
** is given). img:copy_to(buffer [, origin, region] [, offset] [, opts]) and
** img:copy_from(buffer, ...): the pixels of the region (the whole image by
** default) to or from the buffer's elements from offset (1-based, default
** 1), a buffer of the pixels' scalar type (of exactly the image's count of
** scalars when neither region nor offset is given). */
static int img_copy(lua_State *L, int from) {
  const char *fn = from ? "image:copy_from" : "image:copy_to";
  lg_Image *im = lg_check_image(L, 1), *di = from ? NULL : luaL_testudata(L, 2, LG_IMAGE_MT);
  lg_Buffer *b = lg_testbuffer(L, 2);
  size_t origin[3], dorigin[3] = {0, 0, 0}, region[3], count, offset = 0;
  char tname[LG_TYPENAME_MAX], tname2[LG_TYPENAME_MAX];
  lg_Opts o;
  cl_event ev = NULL;
  cl_int err;
  int keep[3], optsidx = 3, given;
  lg_Type t;
  t.scalar = lg_image_scalar(im);
  t.width = 1;
  if (di == NULL && b == NULL)
    return lg_typeerror(L, fn, 1, 2, from ? "a " LG_BUFFER_MT : "an " LG_IMAGE_MT " or a "
                        LG_BUFFER_MT);
  lg_nomore(L, fn, 7, 1);
  lua_settop(L, 7);
  whole(im, origin, region);
  given = is_coords(L, 3);
  if (di != NULL) {
    if (di->order != im->order || di->ctype != im->ctype || di->kind != im->kind ||
        (!given && memcmp(di->size, im->size, sizeof im->size) != 0))
      return lg_argerror(L, fn, 1, "expected an image of the same format%s",
                         given ? " and kind" : ", kind and size");
    if (di->dev->ctx != im->dev->ctx)
      return lg_argerror(L, fn, 1, "the destination is on %s, of another context than %s",
                         di->dev->name, im->dev->name);
    if (given) {
      read_coords(L, im, 3, origin, 1, fn, 2, "source origin");
      read_coords(L, im, 4, dorigin, 1, fn, 3, "destination origin");
      read_coords(L, im, 5, region, 0, fn, 4, "region");
      check_inside(L, im, origin, region, fn, "source ");
      check_inside(L, di, dorigin, region, fn, "destination ");
      optsidx = 6;
    }
  } else {
    if (!lg_buffer_live(b)) return lg_argerror(L, fn, 1, "attempt to use a released buffer");
    if (b->dev->ctx != im->dev->ctx)
      return lg_argerror(L, fn, 1, "the buffer is on %s, of another context than %s",
                         b->dev->name, im->dev->name);
    if (given) {
      read_region(L, im, 3, 4, origin, region, fn, 2);
      optsidx = 5;
    }
    if (lua_type(L, optsidx) == LUA_TNUMBER) {
      int ok;
      lua_Integer v = lua_tointegerx(L, optsidx, &ok);
      if (!ok || lua_type(L, optsidx) != LUA_TNUMBER || v < 1)
        return lg_argerror(L, fn, optsidx - 1, "offset: expected an integer >= 1, got %s",
                           lg_tolstring(L, optsidx));
      offset = (size_t)v - 1;
      given = 1;
      optsidx++;
    }
    count = region[0] * region[1] * region[2] * lg_image_channels(im);
    if (!given) {
      if (b->type.scalar != t.scalar || b->type.width != 1 || b->count != count)
        return lg_argerror(L, fn, 1, "expected a buffer of %I %s, got %I %s",
                           (lua_Integer)count, lg_type_name(t, tname), (lua_Integer)b->count,
                           lg_type_name(b->type, tname2));
    } else {
      if (b->type.scalar != t.scalar || b->type.width != 1)
        return lg_argerror(L, fn, 1, "expected a buffer of %s (the pixels' scalar type), got "
                           "one of %s", lg_type_name(t, tname), lg_type_name(b->type, tname2));
      if (offset + count > b->count)
        return lg_error(L, fn, "buffer out of range: elements %I..%I of %I",
                        (lua_Integer)offset + 1, (lua_Integer)(offset + count),
                        (lua_Integer)b->count);
    }
  }
  nothing_after(L, optsidx + 1, 7, fn);
  wait_queue_options(L, optsidx, fn, &o);
  if (b != NULL && !lg_buffer_live(b))
    return lg_argerror(L, fn, 1, "attempt to use a released buffer");
  if (di != NULL)
    err = clEnqueueCopyImage(o.queue->q, im->mem, di->mem, origin, dorigin, region, o.nwait,
                             o.wait, &ev);
  else if (from)
    err = clEnqueueCopyBufferToImage(o.queue->q, b->root->mem, im->mem,
                                     (b->offset + offset) * lg_type_size(b->type), origin,
                                     region, o.nwait, o.wait, &ev);
  else {
    lg_buffer_written(b);
    err = clEnqueueCopyImageToBuffer(o.queue->q, im->mem, b->root->mem, origin, region,
                                     (b->offset + offset) * lg_type_size(b->type), o.nwait,
                                     o.wait, &ev);
  }
  if (err != CL_SUCCESS)
    lg_clerror(L, di != NULL ? "clEnqueueCopyImage" : from ? "clEnqueueCopyBufferToImage"
                                                            : "clEnqueueCopyImageToBuffer",
               err, NULL);
  keep[0] = 1;
  keep[1] = 2;
  keep[2] = lua_gettop(L) - 1;
  lg_pushevent(L, ev, "image copy", keep, 3);
  return 1;
}

static int img_copy_to(lua_State *L) { return img_copy(L, 0); }
static int img_copy_from(lua_State *L) { return img_copy(L, 1); }

static const luaL_Reg image_methods[] = {
  {"read", img_read}, {"write", img_write}, {"fill", img_fill}, {"copy_to", img_copy_to},
  {"copy_from", img_copy_from}, {NULL, NULL}
};

void lg_open_image_transfer(lua_State *L) {
  lg_add_methods(L, LG_IMAGE_MT, image_methods);
}
