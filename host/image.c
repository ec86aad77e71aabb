/*
** image.c: images and samplers. dev:image(format, size [, opts]),
** dev:image_formats([dims]), dev:sampler{...}; the Image class (its
** transfers, img:write, img:read, img:fill, img:copy_to, img:copy_from, are
** in image_transfer.c); images and samplers as kernel arguments (call.c
** asks lg_bind_image_arg), with the parameter's read_only/write_only checked
** against the image's access.
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

#define LG_SAMPLER_MT "luagpu.Sampler"


typedef struct Sampler {
  cl_sampler s;
  lg_Device *dev;   /* its device (uservalue 1 keeps it) */
} Sampler;

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

lg_Image *lg_check_image(lua_State *L, int idx) {
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
  lg_check_nul(L, idx, fn, 1, what);
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

size_t lg_image_channels(const lg_Image *im) { return (size_t)orders[im->order].channels; }

lg_Scalar lg_image_scalar(const lg_Image *im) { return ctypes[im->ctype].scalar; }

cl_channel_type lg_image_channel_type(const lg_Image *im) { return ctypes[im->ctype].type; }

/* Pushes a host array for a region of im, shaped {[d,] [h,] w, channels}. */
lg_Array *lg_push_pixels(lua_State *L, const lg_Image *im, const size_t *region,
                         const char *fn) {
  size_t shape[4];
  int i, n = 0;
  lg_Type t;
  t.scalar = ctypes[im->ctype].scalar;
  t.width = 1;
  for (i = im->dims - 1; i >= 0; i--) shape[n++] = region[i];
  shape[n++] = lg_image_channels(im);
  return lg_newarray_for(L, t, n, shape, fn, 0);
}

static size_t device_size(lg_Device *d, cl_device_info what) {
  size_t v = 0;
  if (clGetDeviceInfo(d->id, what, sizeof v, &v, NULL) != CL_SUCCESS) return (size_t)-1;
  return v;
}

/* Raises unless im's sizes fit the device's limits for its kind of image
** (OpenCL 1.2: 1-D images and arrays have image2d_max_width, layers
** image_max_array_size), naming the dev:info query that says the limit. */
static void check_limits(lua_State *L, lg_Device *d, const lg_Image *im, const char *fn) {
  static const char *const q2d[] = {"image2d_max_width", "image2d_max_height"};
  static const cl_device_info i2d[] = {CL_DEVICE_IMAGE2D_MAX_WIDTH, CL_DEVICE_IMAGE2D_MAX_HEIGHT};
  static const char *const q3d[] = {"image3d_max_width", "image3d_max_height",
                                    "image3d_max_depth"};
  static const cl_device_info i3d[] = {CL_DEVICE_IMAGE3D_MAX_WIDTH, CL_DEVICE_IMAGE3D_MAX_HEIGHT,
                                       CL_DEVICE_IMAGE3D_MAX_DEPTH};
  static const char *const what[] = {"width", "height", "depth"};
  int i, n = im->dims, pixels = im->array ? n - 1 : n;
  for (i = 0; i < n; i++) {
    const char *q;
    size_t max;
    if (i == pixels) {
      q = "image_max_array_size";
      max = device_size(d, CL_DEVICE_IMAGE_MAX_ARRAY_SIZE);
    } else if (im->kind == CL_MEM_OBJECT_IMAGE3D) {
      q = q3d[i];
      max = device_size(d, i3d[i]);
    } else {
      q = q2d[i];
      max = device_size(d, i2d[i]);
    }
    if (im->size[i] > max)
      lg_argerror(L, fn, 2, "size[%d]: %s %I is more than %s allows for a %s image (%s: %I)",
                  i + 1, i == pixels ? "layers" : what[i], (lua_Integer)im->size[i], d->name,
                  kind_name(im->kind), q, (lua_Integer)max);
  }
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
  lg_Image *im;
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
                         lg_tolstring(L, -1));
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
      lg_check_nul(L, -1, fn, 3, "access");
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
  check_limits(L, d, im, fn);
  f.image_channel_order = orders[im->order].order;
  f.image_channel_data_type = ctypes[im->ctype].type;
  flags = access_flags[im->access == LG_MIXED ? 0 : im->access == LG_IN ? 1 : 2];
  if (!format_supported(L, d, im->kind, flags, &f))
    return lg_error(L, fn, "format %s/%s is not supported by %s for %s images (dev:"
                    "image_formats() lists those that are)", orders[im->order].name,
                    ctypes[im->ctype].name, d->name, kind_name(im->kind));
  if (lua_istable(L, 4) && lua_getfield(L, 4, "host") != LUA_TNIL) {
    size_t shape[4] = {im->size[0], im->size[1], im->size[2], lg_image_channels(im)}, count;
    lg_Type t;
    t.scalar = ctypes[im->ctype].scalar;
    t.width = 1;
    count = lg_shape_count(L, t, 4, shape, fn);
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
    return lg_clerror(L, "clCreateImage", err, "a %s image of %I x %I x %I pixels on %s",
                      kind_name(im->kind), (lua_Integer)im->size[0], (lua_Integer)im->size[1],
                      (lua_Integer)im->size[2], d->name);
  lua_settop(L, 7);
  return 1;
}

static int img_gc(lua_State *L) {
  lg_Image *im = luaL_checkudata(L, 1, LG_IMAGE_MT);
  if (im->mem != NULL) clReleaseMemObject(im->mem);
  im->mem = NULL;
  return 0;
}

static int img_index(lua_State *L) {
  lg_Image *im;
  const char *k;
  if (lg_pushmethod(L, 1, 2)) return 1;
  im = lg_check_image(L, 1);
  k = lua_tostring(L, 2);
  if (k == NULL) return 0;
  if (strcmp(k, "width") == 0) lua_pushinteger(L, (lua_Integer)im->size[0]);
  else if (strcmp(k, "height") == 0) lua_pushinteger(L, (lua_Integer)im->size[1]);
  else if (strcmp(k, "depth") == 0) lua_pushinteger(L, (lua_Integer)im->size[2]);
  else if (strcmp(k, "kind") == 0) lua_pushstring(L, kind_name(im->kind));
  else if (strcmp(k, "order") == 0) lua_pushstring(L, orders[im->order].name);
  else if (strcmp(k, "channel_type") == 0) lua_pushstring(L, ctypes[im->ctype].name);
  else if (strcmp(k, "channels") == 0) lua_pushinteger(L, (lua_Integer)lg_image_channels(im));
  else if (strcmp(k, "device") == 0) lua_getiuservalue(L, 1, 1);
  else if (strcmp(k, "access") == 0)
    lua_pushstring(L, im->access == LG_IN ? "in" : im->access == LG_OUT ? "out" : "mixed");
  else return 0;
  return 1;
}

static int img_tostring(lua_State *L) {
  lg_Image *im = lg_check_image(L, 1);
  lua_pushfstring(L, LG_IMAGE_MT ": %s %s/%s, %I x %I x %I", kind_name(im->kind),
                  orders[im->order].name, ctypes[im->ctype].name, (lua_Integer)im->size[0],
                  (lua_Integer)im->size[1], (lua_Integer)im->size[2]);
  return 1;
}

/* dev:image_formats([dims]): {{order =, type =}, ...} of read-write images
** of dims (default 2) dimensions the device supports (those luagpu names). */
static int dev_image_formats(lua_State *L) {
  lg_Device *d = lg_checkdevice(L, 1);
  lua_Integer dims = lua_isnoneornil(L, 2) ? 2 : lg_checkinteger(L, 2, "dev:image_formats", 1);
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
                           "\"repeat\" or \"mirrored_repeat\", got %s", lg_tolstring(L, -1));
      a = i;
    }
    if (lua_getfield(L, 2, "filter") != LUA_TNIL) {
      const char *x = lua_tostring(L, -1);
      if (x == NULL || lua_type(L, -1) != LUA_TSTRING ||
          (strcmp(x, "nearest") != 0 && strcmp(x, "linear") != 0))
        return lg_argerror(L, fn, 1, "filter: expected \"nearest\" or \"linear\", got %s",
                           lg_tolstring(L, -1));
      f = strcmp(x, "linear") == 0;
    }
  }
  s = lua_newuserdatauv(L, sizeof *s, 1);
  s->s = NULL;
  s->dev = d;
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
int lg_bind_image_arg(lua_State *L, const lg_ArgInfo *a, lg_Device *kdev, int idx,
                      const char *fn, int argno, void *slot, size_t *size) {
  lg_Image *im = luaL_testudata(L, idx, LG_IMAGE_MT);
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
    if (s->dev->ctx != kdev->ctx)
      lg_argerror(L, fn, argno, "(%s): the sampler is on %s, of another context", a->name,
                  s->dev->name);
    memcpy(slot, &s->s, sizeof(cl_sampler));
    *size = sizeof(cl_sampler);
    return 1;
  }
  return 0;
}

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
  lg_newclass(L, LG_IMAGE_MT, NULL, image_meta);   /* methods: image_transfer.c */
  {
    static const char *const fields[] = {"width", "height", "depth", "kind", "order",
                                         "channel_type", "channels", "device", "access", NULL};
    lg_class_fields(L, LG_IMAGE_MT, fields);
  }
  lg_newclass(L, LG_SAMPLER_MT, NULL, sampler_meta);
  lg_add_methods(L, LG_DEVICE_MT, device_methods);
}
