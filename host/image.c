/*
** image.c: images and samplers. dev:image(format, size [, opts]),
** dev:image_formats([dims]), dev:sampler{...}; img:write, img:read,
** img:fill, img:copy_to (an image or a buffer), img:copy_from (a buffer);
** images and samplers as kernel arguments (call.c asks lg_bind_other), with
** the parameter's read_only/write_only checked against the image's access.
**
** Pixels reach the host as host arrays of the channel type's scalar
** ("unorm_int8" -> uchar, "float" -> float, "half" -> ushort), shaped
** {[depth or layers,] [height,] width, channels}. Sizes, origins and
** regions are in pixels, 1-based, in OpenCL's order {x, y [, z]}.
** Images and samplers have no release(): a bound call keeps them in its
** arguments, so only the collector frees them.
*/
#include <string.h>

#include "internal.h"

#define LG_IMAGE_MT "luagpu.Image"
#define LG_SAMPLER_MT "luagpu.Sampler"

typedef struct Image {
  cl_mem mem;
  lg_Device *dev;              /* kept alive by uservalue 1 */
  cl_mem_object_type kind;
  int dims;                    /* 1, 2, 3 (an array counts its layers as a dimension) */
  int array;
  size_t size[3];              /* width, height, depth or layers (1 when absent) */
  int order, ctype;            /* indices into the tables below */
  lg_Access access;
} Image;

typedef struct Sampler { cl_sampler s; } Sampler;

static const struct { const char *name; cl_channel_order order; int channels; } orders[] = {
  {"r", CL_R, 1}, {"a", CL_A, 1}, {"intensity", CL_INTENSITY, 1},
  {"luminance", CL_LUMINANCE, 1}, {"rg", CL_RG, 2}, {"ra", CL_RA, 2}, {"rgba", CL_RGBA, 4},
  {"bgra", CL_BGRA, 4}, {"argb", CL_ARGB, 4}, {NULL, 0, 0}
};

static const struct { const char *name; cl_channel_type type; lg_Scalar scalar; } ctypes[] = {
  {"unorm_int8", CL_UNORM_INT8, LG_UCHAR}, {"unorm_int16", CL_UNORM_INT16, LG_USHORT},
  {"snorm_int8", CL_SNORM_INT8, LG_CHAR}, {"snorm_int16", CL_SNORM_INT16, LG_SHORT},
  {"int8", CL_SIGNED_INT8, LG_CHAR}, {"int16", CL_SIGNED_INT16, LG_SHORT},
  {"int32", CL_SIGNED_INT32, LG_INT}, {"uint8", CL_UNSIGNED_INT8, LG_UCHAR},
  {"uint16", CL_UNSIGNED_INT16, LG_USHORT}, {"uint32", CL_UNSIGNED_INT32, LG_UINT},
  {"half", CL_HALF_FLOAT, LG_USHORT}, {"float", CL_FLOAT, LG_FLOAT}, {NULL, 0, LG_CHAR}
};

static Image *check_image(lua_State *L, int idx) {
  return luaL_checkudata(L, idx, LG_IMAGE_MT);
}

static int image_support(lg_Device *d) {
  cl_bool yes = CL_FALSE;
  clGetDeviceInfo(d->id, CL_DEVICE_IMAGE_SUPPORT, sizeof yes, &yes, NULL);
  return yes == CL_TRUE;
}

static void need_images(lua_State *L, lg_Device *d, const char *fn) {
  if (!image_support(d))
    lg_error(L, fn, "%s has no image support (dev.image_support is false)", d->name);
}

static cl_mem_object_type object_type(int dims, int array) {
  if (array) return dims == 2 ? CL_MEM_OBJECT_IMAGE1D_ARRAY : CL_MEM_OBJECT_IMAGE2D_ARRAY;
  return dims == 1 ? CL_MEM_OBJECT_IMAGE1D
                   : dims == 2 ? CL_MEM_OBJECT_IMAGE2D : CL_MEM_OBJECT_IMAGE3D;
}

static const char *kind_name(cl_mem_object_type t) {
  switch (t) {
    case CL_MEM_OBJECT_IMAGE1D: return "1-D";
    case CL_MEM_OBJECT_IMAGE2D: return "2-D";
    case CL_MEM_OBJECT_IMAGE3D: return "3-D";
    case CL_MEM_OBJECT_IMAGE1D_ARRAY: return "1-D array";
    default: return "2-D array";
  }
}

/* Whether the device's context supports format f for images of type t. */
static int format_supported(lua_State *L, lg_Device *d, cl_mem_object_type t, cl_mem_flags fl,
                            const cl_image_format *f) {
  cl_uint n = 0, i;
  cl_image_format *all;
  if (clGetSupportedImageFormats(d->ctx, fl, t, 0, NULL, &n) != CL_SUCCESS || n == 0) return 0;
  all = lua_newuserdatauv(L, sizeof *all * n, 0);
  clGetSupportedImageFormats(d->ctx, fl, t, n, all, NULL);
  lua_pop(L, 1);   /* not collected before the next allocation */
  for (i = 0; i < n; i++)
    if (all[i].image_channel_order == f->image_channel_order &&
        all[i].image_channel_data_type == f->image_channel_data_type)
      return 1;
  return 0;
}

static int find_name(lua_State *L, int idx, int which, const char *fn, const char *what) {
  const char *s = lua_type(L, idx) == LUA_TSTRING ? lua_tostring(L, idx) : NULL;
  int i;
  for (i = 0; s != NULL; i++) {
    const char *name = which ? ctypes[i].name : orders[i].name;
    if (name == NULL) break;
    if (strcmp(name, s) == 0) return i;
  }
  return lg_argerror(L, fn, 1, "%s: expected %s, got %s", what,
                     which ? "a channel type (\"unorm_int8\", \"float\", ...: see "
                             "dev:image_formats())"
                           : "a channel order (\"r\", \"rg\", \"rgba\", ...)",
                     lua_type(L, idx) == LUA_TSTRING ? lua_pushfstring(L, "\"%s\"", s)
                                                     : luaL_typename(L, idx));
}

static size_t channels(const Image *im) { return (size_t)orders[im->order].channels; }

/* Pushes a host array for a region of im, shaped {[d,] [h,] w, channels}. */
static lg_Array *push_pixels(lua_State *L, const Image *im, const size_t *region,
                             const char *fn) {
  size_t shape[4];
  int i, n = 0;
  lg_Type t;
  t.scalar = ctypes[im->ctype].scalar;
  t.width = 1;
  for (i = im->dims - 1; i >= 0; i--) shape[n++] = region[i];
  shape[n++] = channels(im);
  return lg_newarray_for(L, t, n, shape, fn, 0);
}

/* dev:image(format, size [, opts]): opts access, host, array. */
static int dev_image(lua_State *L) {
  static const char *const fn = "dev:image";
  static const char *const keys[] = {"access", "host", "array", NULL};
  static const char *const access_names[] = {"mixed", "in", "out", NULL};
  static const cl_mem_flags access_flags[] = {CL_MEM_READ_WRITE, CL_MEM_READ_ONLY,
                                              CL_MEM_WRITE_ONLY};
  lg_Device *d = lg_checkdevice(L, 1);
  cl_image_format f;
  cl_image_desc desc;
  cl_mem_flags flags;
  lg_Array *host = NULL;
  Image *im;
  cl_int err;
  int i, n;
  need_images(L, d, fn);
  if (!lua_istable(L, 2))
    return lg_typeerror(L, fn, 1, 2, "a format {order =, type =}");
  lua_settop(L, 4);
  lua_getfield(L, 2, "order");
  lua_getfield(L, 2, "type");
  if (!lua_istable(L, 3)) return lg_typeerror(L, fn, 2, 3, "a size {width [, height [, depth]]}");
  if (!lua_isnil(L, 4) && !lua_istable(L, 4)) return lg_typeerror(L, fn, 3, 4, "an options table");
  lg_checkoptions(L, 4, fn, 3, keys);
  im = lua_newuserdatauv(L, sizeof *im, 1);
  memset(im, 0, sizeof *im);
  luaL_setmetatable(L, LG_IMAGE_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  im->dev = d;
  im->order = find_name(L, 5, 0, fn, "order");
  im->ctype = find_name(L, 6, 1, fn, "type");
  n = (int)lua_rawlen(L, 3);
  if (n < 1 || n > 3) return lg_argerror(L, fn, 2, "expected 1 to 3 sizes, got %d", n);
  im->size[0] = im->size[1] = im->size[2] = 1;
  for (i = 0; i < n; i++) {
    int ok;
    lua_Integer v;
    lua_rawgeti(L, 3, i + 1);
    v = lua_tointegerx(L, -1, &ok);
    if (!ok || v < 1)
      return lg_argerror(L, fn, 2, "size[%d]: expected an integer >= 1, got %s", i + 1,
                         luaL_tolstring(L, -1, NULL));
    im->size[i] = (size_t)v;
    lua_pop(L, 1);
  }
  im->dims = n;
  if (lua_istable(L, 4)) {
    lua_getfield(L, 4, "array");
    im->array = lua_toboolean(L, -1);
    lua_getfield(L, 4, "access");
    if (!lua_isnil(L, -1)) {
      const char *s = lua_tostring(L, -1);
      int a;
      for (a = 0; s != NULL && lua_type(L, -1) == LUA_TSTRING && access_names[a]; a++)
        if (strcmp(access_names[a], s) == 0) break;
      if (s == NULL || lua_type(L, -1) != LUA_TSTRING || access_names[a] == NULL)
        return lg_argerror(L, fn, 3, "access: expected \"in\", \"out\" or \"mixed\", got %s",
                           lua_type(L, -1) == LUA_TSTRING ? lua_pushfstring(L, "\"%s\"", s)
                                                          : luaL_typename(L, -1));
      im->access = a == 0 ? LG_MIXED : a == 1 ? LG_IN : LG_OUT;
    }
    lua_pop(L, 2);
  }
  if (im->array && n == 1)
    return lg_argerror(L, fn, 2, "an image array needs a size {width, layers} or {width, "
                       "height, layers}");
  im->kind = object_type(n, im->array);
  f.image_channel_order = orders[im->order].order;
  f.image_channel_data_type = ctypes[im->ctype].type;
  flags = access_flags[im->access == LG_MIXED ? 0 : im->access == LG_IN ? 1 : 2];
  if (!format_supported(L, d, im->kind, flags, &f))
    return lg_error(L, fn, "format %s/%s is not supported by %s for %s images (dev:"
                    "image_formats() lists those that are)", orders[im->order].name,
                    ctypes[im->ctype].name, d->name, kind_name(im->kind));
  if (lua_istable(L, 4) && lua_getfield(L, 4, "host") != LUA_TNIL) {
    size_t count = im->size[0] * im->size[1] * im->size[2] * channels(im);
    lg_Type t;
    t.scalar = ctypes[im->ctype].scalar;
    t.width = 1;
    if (lua_istable(L, -1) && lg_testarray(L, -1) == NULL)
      host = lg_table_to_array(L, lua_gettop(L), t, count, fn, 3);
    else if ((host = lg_testarray(L, -1)) == NULL)
      return lg_argerror(L, fn, 3, "host: expected a host array or a table, got %s",
                         luaL_typename(L, -1));
    lg_check_array_fits(L, host, t, count, fn, "argument #3: host");
    flags |= CL_MEM_COPY_HOST_PTR;
  }
  memset(&desc, 0, sizeof desc);
  desc.image_type = im->kind;
  desc.image_width = im->size[0];
  desc.image_height = n >= 2 && !(im->array && n == 2) ? im->size[1] : 0;
  desc.image_depth = n == 3 && !im->array ? im->size[2] : 0;
  desc.image_array_size = im->array ? im->size[n - 1] : 0;
  im->mem = clCreateImage(d->ctx, flags, &f, &desc, host != NULL ? host->data : NULL, &err);
  if (im->mem == NULL)
    return lg_clerror(L, "clCreateImage", err, "a %s image of %d x %d x %d pixels on %s",
                      kind_name(im->kind), (int)im->size[0], (int)im->size[1],
                      (int)im->size[2], d->name);
  lua_settop(L, 7);
  return 1;
}

static int img_gc(lua_State *L) {
  Image *im = luaL_checkudata(L, 1, LG_IMAGE_MT);
  if (im->mem != NULL) clReleaseMemObject(im->mem);
  im->mem = NULL;
  return 0;
}

/* Reads the table at idx, im->dims integers >= 1 (what: "origin", "region",
** ...), into out: 0-based when origin is set. out keeps what it held in the
** dimensions im lacks. */
static void read_coords(lua_State *L, const Image *im, int idx, size_t *out, int origin,
                        const char *fn, int argno, const char *what) {
  int k;
  if (!lua_istable(L, idx) || (int)lua_rawlen(L, idx) != im->dims)
    lg_argerror(L, fn, argno, "%s: expected a table of %d integers", what, im->dims);
  for (k = 0; k < im->dims; k++) {
    int ok;
    lua_Integer v;
    lua_rawgeti(L, idx, k + 1);
    v = lua_tointegerx(L, -1, &ok);
    if (!ok || v < 1)
      lg_argerror(L, fn, argno, "%s[%d]: expected an integer >= 1, got %s", what, k + 1,
                  luaL_tolstring(L, -1, NULL));
    out[k] = origin ? (size_t)v - 1 : (size_t)v;
    lua_pop(L, 1);
  }
}

/* Raises unless the box of region at origin lies inside im; side ("",
** "source ", "destination ") starts the message. */
static void check_inside(lua_State *L, const Image *im, const size_t *origin,
                         const size_t *region, const char *fn, const char *side) {
  int i;
  for (i = 0; i < im->dims; i++)
    if (origin[i] + region[i] > im->size[i])
      lg_error(L, fn, "%sregion out of range: dimension %d: pixels %I..%I of %I", side, i + 1,
               (lua_Integer)origin[i] + 1, (lua_Integer)(origin[i] + region[i]),
               (lua_Integer)im->size[i]);
}

static void whole(const Image *im, size_t *origin, size_t *region) {
  int i;
  for (i = 0; i < 3; i++) {
    origin[i] = 0;
    region[i] = im->size[i];
  }
}

/* Reads {x, y, z} at idx (1-based, or none: whole) into 0-based origin and
** region for im; checks them against its size. */
static void read_region(lua_State *L, const Image *im, int oidx, int ridx, size_t *origin,
                        size_t *region, const char *fn, int argno) {
  whole(im, origin, region);
  if (oidx == 0) return;
  read_coords(L, im, oidx, origin, 1, fn, argno, "origin");
  read_coords(L, im, ridx, region, 0, fn, argno + 1, "region");
  check_inside(L, im, origin, region, fn, "");
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
  Image *im = check_image(L, 1);
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
  lua_settop(L, 5);
  if (write || lg_testarray(L, 2) != NULL) first = 3;
  else if (!lua_isnil(L, 2) && !lua_istable(L, 2))
    lg_typeerror(L, fn, 1, 2, "a host array, an origin or an options table");
  optsidx = first;
  if (lua_istable(L, first) && lua_rawlen(L, first) > 0) {   /* origin, region */
    read_region(L, im, first, first + 1, origin, region, fn, first - 1);
    optsidx = first + 2;
  } else {
    read_region(L, im, 0, 0, origin, region, fn, first - 1);
  }
  if (!lua_isnoneornil(L, optsidx) && !lua_istable(L, optsidx))
    lg_typeerror(L, fn, optsidx - 1, optsidx, "an options table");
  count = region[0] * region[1] * region[2] * channels(im);
  t.scalar = ctypes[im->ctype].scalar;
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
  } else if (first == 3) {
    a = lg_testarray(L, 2);
    lg_check_array_fits(L, a, t, count, fn, "argument #1");
    lua_pushvalue(L, 2);
  } else {
    a = push_pixels(L, im, region, fn);
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
    if (lg_event_after_wait != NULL) lg_event_after_wait(L);
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

/* img:fill(color [, origin, region] [, opts]): color a table of 4 numbers
** (floats for normalized and float types, integers for the integer ones). */
static int img_fill(lua_State *L) {
  static const char *const fn = "image:fill";
  Image *im = check_image(L, 1);
  size_t origin[3], region[3];
  union { float f[4]; cl_int i[4]; cl_uint u[4]; } color;
  cl_channel_type ct = ctypes[im->ctype].type;
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
  lua_settop(L, 5);
  if (is_coords(L, 3)) {
    read_region(L, im, 3, 4, origin, region, fn, 2);
    optsidx = 5;
  } else {
    whole(im, origin, region);
  }
  if (!lua_isnoneornil(L, optsidx) && !lua_istable(L, optsidx))
    lg_typeerror(L, fn, optsidx - 1, optsidx, "an options table");
  lua_settop(L, optsidx);
  lg_checkoptions(L, optsidx, fn, optsidx - 1, (const char *const[]){"wait", "queue", NULL});
  lua_getiuservalue(L, 1, 1);
  lg_getopts(L, optsidx, -1, fn, optsidx - 1, &o);
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
  Image *im = check_image(L, 1), *di = from ? NULL : luaL_testudata(L, 2, LG_IMAGE_MT);
  lg_Buffer *b = lg_testbuffer(L, 2);
  size_t origin[3], dorigin[3] = {0, 0, 0}, region[3], count, offset = 0;
  char tname[LG_TYPENAME_MAX], tname2[LG_TYPENAME_MAX];
  lg_Opts o;
  cl_event ev = NULL;
  cl_int err;
  int keep[3], optsidx = 3, given;
  lg_Type t;
  t.scalar = ctypes[im->ctype].scalar;
  t.width = 1;
  if (di == NULL && b == NULL)
    return lg_typeerror(L, fn, 1, 2, from ? "a " LG_BUFFER_MT : "an " LG_IMAGE_MT " or a "
                        LG_BUFFER_MT);
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
      if (!ok || v < 1)
        return lg_argerror(L, fn, optsidx - 1, "offset: expected an integer >= 1, got %s",
                           luaL_tolstring(L, optsidx, NULL));
      offset = (size_t)v - 1;
      given = 1;
      optsidx++;
    }
    count = region[0] * region[1] * region[2] * channels(im);
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
  if (!lua_isnoneornil(L, optsidx) && !lua_istable(L, optsidx))
    lg_typeerror(L, fn, optsidx - 1, optsidx, "an options table");
  lua_settop(L, optsidx);
  lg_checkoptions(L, optsidx, fn, optsidx - 1, (const char *const[]){"wait", "queue", NULL});
  lua_getiuservalue(L, 1, 1);
  lg_getopts(L, optsidx, -1, fn, optsidx - 1, &o);
  if (b != NULL && !lg_buffer_live(b))
    return lg_argerror(L, fn, 1, "attempt to use a released buffer");
  if (di != NULL)
    err = clEnqueueCopyImage(o.queue->q, im->mem, di->mem, origin, dorigin, region, o.nwait,
                             o.wait, &ev);
  else if (from)
    err = clEnqueueCopyBufferToImage(o.queue->q, b->root->mem, im->mem,
                                     (b->offset + offset) * lg_type_size(b->type), origin,
                                     region, o.nwait, o.wait, &ev);
  else
    err = clEnqueueCopyImageToBuffer(o.queue->q, im->mem, b->root->mem, origin, region,
                                     (b->offset + offset) * lg_type_size(b->type), o.nwait,
                                     o.wait, &ev);
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

static int img_index(lua_State *L) {
  Image *im;
  const char *k;
  if (lg_pushmethod(L, 1, 2)) return 1;
  im = check_image(L, 1);
  k = lua_tostring(L, 2);
  if (k == NULL) return 0;
  if (strcmp(k, "width") == 0) lua_pushinteger(L, (lua_Integer)im->size[0]);
  else if (strcmp(k, "height") == 0) lua_pushinteger(L, (lua_Integer)im->size[1]);
  else if (strcmp(k, "depth") == 0) lua_pushinteger(L, (lua_Integer)im->size[2]);
  else if (strcmp(k, "kind") == 0) lua_pushstring(L, kind_name(im->kind));
  else if (strcmp(k, "order") == 0) lua_pushstring(L, orders[im->order].name);
  else if (strcmp(k, "channel_type") == 0) lua_pushstring(L, ctypes[im->ctype].name);
  else if (strcmp(k, "channels") == 0) lua_pushinteger(L, (lua_Integer)channels(im));
  else if (strcmp(k, "device") == 0) lua_getiuservalue(L, 1, 1);
  else if (strcmp(k, "access") == 0)
    lua_pushstring(L, im->access == LG_IN ? "in" : im->access == LG_OUT ? "out" : "mixed");
  else return 0;
  return 1;
}

static int img_tostring(lua_State *L) {
  Image *im = check_image(L, 1);
  lua_pushfstring(L, LG_IMAGE_MT ": %s %s/%s, %d x %d x %d", kind_name(im->kind),
                  orders[im->order].name, ctypes[im->ctype].name, (int)im->size[0],
                  (int)im->size[1], (int)im->size[2]);
  return 1;
}

/* dev:image_formats([dims]): {{order =, type =}, ...} of read-write images
** of dims (default 2) dimensions the device supports (those luagpu names). */
static int dev_image_formats(lua_State *L) {
  lg_Device *d = lg_checkdevice(L, 1);
  lua_Integer dims = luaL_optinteger(L, 2, 2);
  cl_uint n = 0, i;
  cl_image_format *all;
  int k = 0;
  need_images(L, d, "dev:image_formats");
  if (dims < 1 || dims > 3)
    return lg_argerror(L, "dev:image_formats", 1, "expected 1, 2 or 3 dimensions, got %I", dims);
  clGetSupportedImageFormats(d->ctx, CL_MEM_READ_WRITE, object_type((int)dims, 0), 0, NULL, &n);
  all = lua_newuserdatauv(L, sizeof *all * (n ? n : 1), 0);
  if (n > 0)
    clGetSupportedImageFormats(d->ctx, CL_MEM_READ_WRITE, object_type((int)dims, 0), n, all,
                               NULL);
  lua_newtable(L);
  for (i = 0; i < n; i++) {
    int o, t;
    for (o = 0; orders[o].name && orders[o].order != all[i].image_channel_order; o++) {}
    for (t = 0; ctypes[t].name && ctypes[t].type != all[i].image_channel_data_type; t++) {}
    if (orders[o].name == NULL || ctypes[t].name == NULL) continue;
    lua_createtable(L, 0, 2);
    lua_pushstring(L, orders[o].name);
    lua_setfield(L, -2, "order");
    lua_pushstring(L, ctypes[t].name);
    lua_setfield(L, -2, "type");
    lua_rawseti(L, -2, ++k);
  }
  return 1;
}

/* dev:sampler{normalized =, address =, filter =}. */
static int dev_sampler(lua_State *L) {
  static const char *const fn = "dev:sampler";
  static const char *const keys[] = {"normalized", "address", "filter", NULL};
  static const char *const addr_names[] = {"none", "clamp_to_edge", "clamp", "repeat",
                                           "mirrored_repeat", NULL};
  static const cl_addressing_mode addr[] = {CL_ADDRESS_NONE, CL_ADDRESS_CLAMP_TO_EDGE,
                                            CL_ADDRESS_CLAMP, CL_ADDRESS_REPEAT,
                                            CL_ADDRESS_MIRRORED_REPEAT};
  lg_Device *d = lg_checkdevice(L, 1);
  int a = 2, f = 0, norm = 0, i;
  Sampler *s;
  cl_int err;
  need_images(L, d, fn);
  if (!lua_isnoneornil(L, 2) && !lua_istable(L, 2))
    return lg_typeerror(L, fn, 1, 2, "an options table {normalized =, address =, filter =}");
  lua_settop(L, 2);
  lg_checkoptions(L, 2, fn, 1, keys);
  if (lua_istable(L, 2)) {
    lua_getfield(L, 2, "normalized");
    norm = lua_toboolean(L, -1);
    if (lua_getfield(L, 2, "address") != LUA_TNIL) {
      const char *x = lua_tostring(L, -1);
      for (i = 0; x && lua_type(L, -1) == LUA_TSTRING && addr_names[i]; i++)
        if (strcmp(x, addr_names[i]) == 0) break;
      if (x == NULL || lua_type(L, -1) != LUA_TSTRING || addr_names[i] == NULL)
        return lg_argerror(L, fn, 1, "address: expected \"none\", \"clamp_to_edge\", \"clamp\", "
                           "\"repeat\" or \"mirrored_repeat\", got %s", luaL_tolstring(L, -1, NULL));
      a = i;
    }
    if (lua_getfield(L, 2, "filter") != LUA_TNIL) {
      const char *x = lua_tostring(L, -1);
      if (x == NULL || lua_type(L, -1) != LUA_TSTRING ||
          (strcmp(x, "nearest") != 0 && strcmp(x, "linear") != 0))
        return lg_argerror(L, fn, 1, "filter: expected \"nearest\" or \"linear\", got %s",
                           luaL_tolstring(L, -1, NULL));
      f = strcmp(x, "linear") == 0;
    }
  }
  s = lua_newuserdatauv(L, sizeof *s, 1);
  s->s = NULL;
  luaL_setmetatable(L, LG_SAMPLER_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  s->s = clCreateSampler(d->ctx, norm ? CL_TRUE : CL_FALSE, addr[a],
                         f ? CL_FILTER_LINEAR : CL_FILTER_NEAREST, &err);
  if (s->s == NULL) return lg_clerror(L, "clCreateSampler", err, NULL);
  return 1;
}

static int sampler_gc(lua_State *L) {
  Sampler *s = luaL_checkudata(L, 1, LG_SAMPLER_MT);
  if (s->s != NULL) clReleaseSampler(s->s);
  s->s = NULL;
  return 0;
}

/* call.c's hook for parameters of kind LG_ARG_OTHER: images and samplers. */
static int bind_other(lua_State *L, const lg_ArgInfo *a, lg_Device *kdev, int idx,
                      const char *fn, int argno, void *slot, size_t *size) {
  Image *im = luaL_testudata(L, idx, LG_IMAGE_MT);
  Sampler *s = luaL_testudata(L, idx, LG_SAMPLER_MT);
  const char *t = a->type_name;
  if (strncmp(t, "image", 5) == 0) {
    static const struct { const char *name; cl_mem_object_type kind; } kinds[] = {
      {"image1d_t", CL_MEM_OBJECT_IMAGE1D}, {"image2d_t", CL_MEM_OBJECT_IMAGE2D},
      {"image3d_t", CL_MEM_OBJECT_IMAGE3D}, {"image1d_array_t", CL_MEM_OBJECT_IMAGE1D_ARRAY},
      {"image2d_array_t", CL_MEM_OBJECT_IMAGE2D_ARRAY}, {NULL, 0}
    };
    int k;
    if (im == NULL)
      lg_typeerror(L, fn, argno, idx, lua_pushfstring(L, "an " LG_IMAGE_MT " for parameter "
                                                      "'%s %s'", t, a->name));
    for (k = 0; kinds[k].name && strncmp(t, kinds[k].name, strlen(kinds[k].name)) != 0; k++) {}
    if (kinds[k].name != NULL && kinds[k].kind != im->kind)
      lg_argerror(L, fn, argno, "parameter '%s %s' takes a %s image, got a %s one", t, a->name,
                  kind_name(kinds[k].kind), kind_name(im->kind));
    if (strcmp(a->access, "read_only") == 0 && im->access == LG_OUT)
      lg_argerror(L, fn, argno, "parameter '%s' is read_only, the image has access \"out\"",
                  a->name);
    if (strcmp(a->access, "write_only") == 0 && im->access == LG_IN)
      lg_argerror(L, fn, argno, "parameter '%s' is write_only, the image has access \"in\"",
                  a->name);
    if (strcmp(a->access, "read_write") == 0 && im->access != LG_MIXED)
      lg_argerror(L, fn, argno, "parameter '%s' is read_write, the image has access \"%s\"",
                  a->name, im->access == LG_IN ? "in" : "out");
    if (im->dev->ctx != kdev->ctx)
      lg_argerror(L, fn, argno, "(%s): the image is on %s, of another context", a->name,
                  im->dev->name);
    memcpy(slot, &im->mem, sizeof(cl_mem));
    *size = sizeof(cl_mem);
    return 1;
  }
  if (strncmp(t, "sampler_t", 9) == 0) {
    if (s == NULL)
      lg_typeerror(L, fn, argno, idx, lua_pushfstring(L, "a " LG_SAMPLER_MT " for parameter "
                                                      "'%s'", a->name));
    memcpy(slot, &s->s, sizeof(cl_sampler));
    *size = sizeof(cl_sampler);
    return 1;
  }
  return 0;
}

static const luaL_Reg image_methods[] = {
  {"read", img_read}, {"write", img_write}, {"fill", img_fill}, {"copy_to", img_copy_to},
  {"copy_from", img_copy_from}, {NULL, NULL}
};

static const luaL_Reg image_meta[] = {
  {"__index", img_index}, {"__gc", img_gc}, {"__tostring", img_tostring}, {NULL, NULL}
};

static const luaL_Reg sampler_meta[] = {
  {"__gc", sampler_gc}, {NULL, NULL}
};

static const luaL_Reg device_methods[] = {
  {"image", dev_image}, {"image_formats", dev_image_formats}, {"sampler", dev_sampler},
  {NULL, NULL}
};

void lg_open_image(lua_State *L) {
  lg_newclass(L, LG_IMAGE_MT, image_methods, image_meta);
  lg_newclass(L, LG_SAMPLER_MT, NULL, sampler_meta);
  lg_add_methods(L, LG_DEVICE_MT, device_methods);
  lg_bind_other = bind_other;
}
