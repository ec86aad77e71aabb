/*
** info.c: reading what OpenCL reports of platforms and devices: the
** platform list, platform and device strings, word lists, and a device's
** limits and its table of fields. No Lua objects are made here.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The first discovery of platforms and devices, once per process: PoCL
** sets its devices up at the first clGetPlatformIDs or clGetDeviceIDs and
** does not guard that against a second thread, which then sees no device
** or crashes reading a half-made one (two Lua states opened at the same
** moment in an embedding program). Every later call finds it done. */
static pthread_once_t discovered = PTHREAD_ONCE_INIT;

static void discover(void) {
  cl_platform_id plats[16];
  cl_device_id ids[64];
  cl_uint np = 0, n, i, j;
  char name[256];
  if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS) return;
  for (i = 0; i < np && i < 16; i++) {
    n = 0;
    if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 64, ids, &n) != CL_SUCCESS) continue;
    for (j = 0; j < n && j < 64; j++)
      clGetDeviceInfo(ids[j], CL_DEVICE_NAME, sizeof name, name, NULL);
  }
}

/* Returns the platform ids (malloc'd; *n set), or NULL with *n = 0 when
** there is no platform at all. */
cl_platform_id *lg_get_platforms(cl_uint *n) {
  cl_platform_id *ids;
  pthread_once(&discovered, discover);
  *n = 0;
  if (clGetPlatformIDs(0, NULL, n) != CL_SUCCESS || *n == 0) { *n = 0; return NULL; }
  ids = malloc(sizeof(cl_platform_id) * *n);
  if (ids == NULL || clGetPlatformIDs(*n, ids, NULL) != CL_SUCCESS) {
    free(ids);
    *n = 0;
    return NULL;
  }
  return ids;
}

void lg_push_platform_string(lua_State *L, cl_platform_id p, cl_platform_info what) {
  char buf[2048];
  if (clGetPlatformInfo(p, what, sizeof buf, buf, NULL) != CL_SUCCESS) buf[0] = '\0';
  buf[sizeof buf - 1] = '\0';
  lua_pushstring(L, buf);
}

/* Pushes a list of the space-separated words of the string on top (replacing it). */
void lg_split_words(lua_State *L) {
  const char *s = lua_tostring(L, -1);
  int i = 0;
  lua_newtable(L);
  while (s != NULL && *s) {
    const char *e;
    while (*s == ' ') s++;
    e = s;
    while (*e && *e != ' ') e++;
    if (e > s) {
      lua_pushlstring(L, s, (size_t)(e - s));
      lua_rawseti(L, -2, ++i);
    }
    s = e;
  }
  lua_remove(L, -2);
}

void lg_push_device_string(lua_State *L, cl_device_id d, cl_device_info what) {
  size_t n = 0;
  char *buf;
  if (clGetDeviceInfo(d, what, 0, NULL, &n) != CL_SUCCESS || n == 0) {
    lua_pushliteral(L, "");
    return;
  }
  buf = malloc(n + 1);
  if (buf == NULL || clGetDeviceInfo(d, what, n, buf, NULL) != CL_SUCCESS) {
    free(buf);
    lua_pushliteral(L, "");
    return;
  }
  buf[n] = '\0';
  while (n > 0 && (buf[n - 1] == '\0' || buf[n - 1] == ' ')) buf[--n] = '\0';
  lua_pushstring(L, buf);
  free(buf);
}

const char *lg_device_type_name(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return "gpu";
  if (t & CL_DEVICE_TYPE_CPU) return "cpu";
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  return "other";
}

#define GET(what, var) clGetDeviceInfo(d->id, what, sizeof(var), &(var), NULL)

/* The fields lg_load_device_fields sets, and "parent" (partition.c's, of
** a sub-device): gpu.extend refuses methods of these names. */
const char *const lg_device_field_names[] = {
  "name", "vendor", "type", "platform", "version", "driver_version", "opencl_c_version",
  "profile", "compute_units", "clock_mhz", "global_mem_size", "local_mem_size",
  "max_alloc_size", "max_work_group_size", "max_work_item_sizes", "address_bits", "fp64",
  "extensions", "preferred_vector_width", "constant_buffer_size", "mem_base_addr_align",
  "available", "host_unified_memory", "image_support", "max_constant_args",
  "timer_resolution_ns", "parent", NULL
};

void lg_load_device_fields(lua_State *L, lg_Device *d) {
  cl_uint u = 0, bits = 0;
  cl_ulong ul = 0;
  cl_bool b = CL_FALSE;
  cl_device_fp_config fp = 0;
  size_t sizes[3] = {0, 0, 0};
  unsigned i;
  static const struct { const char *name; cl_device_info info; } widths[] = {
    {"char", CL_DEVICE_PREFERRED_VECTOR_WIDTH_CHAR},
    {"short", CL_DEVICE_PREFERRED_VECTOR_WIDTH_SHORT},
    {"int", CL_DEVICE_PREFERRED_VECTOR_WIDTH_INT},
    {"long", CL_DEVICE_PREFERRED_VECTOR_WIDTH_LONG},
    {"float", CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT},
    {"double", CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE},
  };
  GET(CL_DEVICE_TYPE, d->type);
  GET(CL_DEVICE_MAX_WORK_GROUP_SIZE, d->max_work_group_size);
  GET(CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, d->max_work_item_dims);
  if (d->max_work_item_dims > 3) d->max_work_item_dims = 3;
  clGetDeviceInfo(d->id, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(size_t) * 3, sizes, NULL);
  memcpy(d->max_work_item_sizes, sizes, sizeof sizes);
  GET(CL_DEVICE_GLOBAL_MEM_SIZE, d->global_mem_size);
  GET(CL_DEVICE_MAX_MEM_ALLOC_SIZE, d->max_alloc_size);
  GET(CL_DEVICE_LOCAL_MEM_SIZE, d->local_mem_size);
  GET(CL_DEVICE_MEM_BASE_ADDR_ALIGN, bits);
  d->mem_base_addr_align = bits / 8 ? bits / 8 : 1;
  GET(CL_DEVICE_DOUBLE_FP_CONFIG, fp);
  d->fp64 = fp != 0;
  clGetDeviceInfo(d->id, CL_DEVICE_NAME, sizeof d->name, d->name, NULL);
  d->name[sizeof d->name - 1] = '\0';

  lua_newtable(L);
  lg_push_device_string(L, d->id, CL_DEVICE_NAME);    lua_setfield(L, -2, "name");
  lg_push_device_string(L, d->id, CL_DEVICE_VENDOR);  lua_setfield(L, -2, "vendor");
  lua_pushstring(L, lg_device_type_name(d->type));           lua_setfield(L, -2, "type");
  lg_push_platform_string(L, d->platform, CL_PLATFORM_NAME); lua_setfield(L, -2, "platform");
  lg_push_device_string(L, d->id, CL_DEVICE_VERSION); lua_setfield(L, -2, "version");
  lg_push_device_string(L, d->id, CL_DRIVER_VERSION); lua_setfield(L, -2, "driver_version");
  lg_push_device_string(L, d->id, CL_DEVICE_OPENCL_C_VERSION);
  lua_setfield(L, -2, "opencl_c_version");
  lg_push_device_string(L, d->id, CL_DEVICE_PROFILE); lua_setfield(L, -2, "profile");
  GET(CL_DEVICE_MAX_COMPUTE_UNITS, u);   lua_pushinteger(L, u); lua_setfield(L, -2, "compute_units");
  GET(CL_DEVICE_MAX_CLOCK_FREQUENCY, u); lua_pushinteger(L, u); lua_setfield(L, -2, "clock_mhz");
  lua_pushinteger(L, (lua_Integer)d->global_mem_size); lua_setfield(L, -2, "global_mem_size");
  lua_pushinteger(L, (lua_Integer)d->local_mem_size);  lua_setfield(L, -2, "local_mem_size");
  lua_pushinteger(L, (lua_Integer)d->max_alloc_size);  lua_setfield(L, -2, "max_alloc_size");
  lua_pushinteger(L, (lua_Integer)d->max_work_group_size);
  lua_setfield(L, -2, "max_work_group_size");
  lua_newtable(L);
  for (i = 0; i < d->max_work_item_dims; i++) {
    lua_pushinteger(L, (lua_Integer)d->max_work_item_sizes[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "max_work_item_sizes");
  GET(CL_DEVICE_ADDRESS_BITS, u);  lua_pushinteger(L, u); lua_setfield(L, -2, "address_bits");
  lua_pushboolean(L, d->fp64);     lua_setfield(L, -2, "fp64");
  lg_push_device_string(L, d->id, CL_DEVICE_EXTENSIONS);
  lg_split_words(L);                  lua_setfield(L, -2, "extensions");
  lua_newtable(L);
  for (i = 0; i < sizeof widths / sizeof widths[0]; i++) {
    u = 0;
    GET(widths[i].info, u);
    lua_pushinteger(L, u);
    lua_setfield(L, -2, widths[i].name);
    if (i < 4) {                   /* the unsigned types share their signed width */
      char uname[16];
      snprintf(uname, sizeof uname, "u%s", widths[i].name);
      lua_pushinteger(L, u);
      lua_setfield(L, -2, uname);
    }
  }
  lua_setfield(L, -2, "preferred_vector_width");
  GET(CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE, ul);
  lua_pushinteger(L, (lua_Integer)ul); lua_setfield(L, -2, "constant_buffer_size");
  lua_pushinteger(L, d->mem_base_addr_align); lua_setfield(L, -2, "mem_base_addr_align");
  GET(CL_DEVICE_AVAILABLE, b);     lua_pushboolean(L, b); lua_setfield(L, -2, "available");
  b = CL_FALSE;
  GET(CL_DEVICE_HOST_UNIFIED_MEMORY, b);
  lua_pushboolean(L, b);           lua_setfield(L, -2, "host_unified_memory");
  b = CL_FALSE;
  GET(CL_DEVICE_IMAGE_SUPPORT, b); lua_pushboolean(L, b); lua_setfield(L, -2, "image_support");
  u = 0;
  GET(CL_DEVICE_MAX_CONSTANT_ARGS, u); lua_pushinteger(L, u);
  lua_setfield(L, -2, "max_constant_args");
  ul = 0;
  GET(CL_DEVICE_PROFILING_TIMER_RESOLUTION, sizes[0]);
  lua_pushinteger(L, (lua_Integer)sizes[0]); lua_setfield(L, -2, "timer_resolution_ns");
}
