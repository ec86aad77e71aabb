/*
** query.c: dev:info(name) and platform:info(name), any clGetDeviceInfo or
** clGetPlatformInfo query by its name ("CL_DEVICE_MAX_COMPUTE_UNITS", or
** "max_compute_units"), the OpenCL 3.0 feature queries included, each
** answer converted by its type: integers, booleans, strings, lists, versions
** as "3.0.0" and name-version lists as {name = "1.0.0", ...}. A query the
** driver does not answer returns nil and the reason.
*/
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* kind: u cl_uint, U cl_ulong (also bitfields), z size_t, Z size_t list,
** b cl_bool, s string, v cl_version, n cl_name_version list, x bytes (hex);
** objects: P the Platform, D the parent Device, p partition properties
** (dev:partition's keys), t partition type (dev:partition's argument) */
typedef struct Query {
  const char *name;
  cl_uint code;
  char kind;
} Query;

static const Query device_queries[] = {
  {"CL_DEVICE_TYPE", 0x1000, 'U'},
  {"CL_DEVICE_VENDOR_ID", 0x1001, 'u'},
  {"CL_DEVICE_MAX_COMPUTE_UNITS", 0x1002, 'u'},
  {"CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS", 0x1003, 'u'},
  {"CL_DEVICE_MAX_WORK_GROUP_SIZE", 0x1004, 'z'},
  {"CL_DEVICE_MAX_WORK_ITEM_SIZES", 0x1005, 'Z'},
  {"CL_DEVICE_PREFERRED_VECTOR_WIDTH_CHAR", 0x1006, 'u'},
  {"CL_DEVICE_PREFERRED_VECTOR_WIDTH_SHORT", 0x1007, 'u'},
  {"CL_DEVICE_PREFERRED_VECTOR_WIDTH_INT", 0x1008, 'u'},
  {"CL_DEVICE_PREFERRED_VECTOR_WIDTH_LONG", 0x1009, 'u'},
  {"CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT", 0x100A, 'u'},
  {"CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE", 0x100B, 'u'},
  {"CL_DEVICE_MAX_CLOCK_FREQUENCY", 0x100C, 'u'},
  {"CL_DEVICE_ADDRESS_BITS", 0x100D, 'u'},
  {"CL_DEVICE_MAX_READ_IMAGE_ARGS", 0x100E, 'u'},
  {"CL_DEVICE_MAX_WRITE_IMAGE_ARGS", 0x100F, 'u'},
  {"CL_DEVICE_MAX_MEM_ALLOC_SIZE", 0x1010, 'U'},
  {"CL_DEVICE_IMAGE2D_MAX_WIDTH", 0x1011, 'z'},
  {"CL_DEVICE_IMAGE2D_MAX_HEIGHT", 0x1012, 'z'},
  {"CL_DEVICE_IMAGE3D_MAX_WIDTH", 0x1013, 'z'},
  {"CL_DEVICE_IMAGE3D_MAX_HEIGHT", 0x1014, 'z'},
  {"CL_DEVICE_IMAGE3D_MAX_DEPTH", 0x1015, 'z'},
  {"CL_DEVICE_IMAGE_SUPPORT", 0x1016, 'b'},
  {"CL_DEVICE_MAX_PARAMETER_SIZE", 0x1017, 'z'},
  {"CL_DEVICE_MAX_SAMPLERS", 0x1018, 'u'},
  {"CL_DEVICE_MEM_BASE_ADDR_ALIGN", 0x1019, 'u'},
  {"CL_DEVICE_MIN_DATA_TYPE_ALIGN_SIZE", 0x101A, 'u'},
  {"CL_DEVICE_SINGLE_FP_CONFIG", 0x101B, 'U'},
  {"CL_DEVICE_GLOBAL_MEM_CACHE_TYPE", 0x101C, 'u'},
  {"CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE", 0x101D, 'u'},
  {"CL_DEVICE_GLOBAL_MEM_CACHE_SIZE", 0x101E, 'U'},
  {"CL_DEVICE_GLOBAL_MEM_SIZE", 0x101F, 'U'},
  {"CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE", 0x1020, 'U'},
  {"CL_DEVICE_MAX_CONSTANT_ARGS", 0x1021, 'u'},
  {"CL_DEVICE_LOCAL_MEM_TYPE", 0x1022, 'u'},
  {"CL_DEVICE_LOCAL_MEM_SIZE", 0x1023, 'U'},
  {"CL_DEVICE_ERROR_CORRECTION_SUPPORT", 0x1024, 'b'},
  {"CL_DEVICE_PROFILING_TIMER_RESOLUTION", 0x1025, 'z'},
  {"CL_DEVICE_ENDIAN_LITTLE", 0x1026, 'b'},
  {"CL_DEVICE_AVAILABLE", 0x1027, 'b'},
  {"CL_DEVICE_COMPILER_AVAILABLE", 0x1028, 'b'},
  {"CL_DEVICE_EXECUTION_CAPABILITIES", 0x1029, 'U'},
  {"CL_DEVICE_QUEUE_PROPERTIES", 0x102A, 'U'},
  {"CL_DEVICE_QUEUE_ON_HOST_PROPERTIES", 0x102A, 'U'},
  {"CL_DEVICE_NAME", 0x102B, 's'},
  {"CL_DEVICE_VENDOR", 0x102C, 's'},
  {"CL_DRIVER_VERSION", 0x102D, 's'},
  {"CL_DEVICE_PROFILE", 0x102E, 's'},
  {"CL_DEVICE_VERSION", 0x102F, 's'},
  {"CL_DEVICE_EXTENSIONS", 0x1030, 's'},
  {"CL_DEVICE_PLATFORM", 0x1031, 'P'},
  {"CL_DEVICE_DOUBLE_FP_CONFIG", 0x1032, 'U'},
  {"CL_DEVICE_HALF_FP_CONFIG", 0x1033, 'U'},
  {"CL_DEVICE_PREFERRED_VECTOR_WIDTH_HALF", 0x1034, 'u'},
  {"CL_DEVICE_HOST_UNIFIED_MEMORY", 0x1035, 'b'},
  {"CL_DEVICE_NATIVE_VECTOR_WIDTH_CHAR", 0x1036, 'u'},
  {"CL_DEVICE_NATIVE_VECTOR_WIDTH_SHORT", 0x1037, 'u'},
  {"CL_DEVICE_NATIVE_VECTOR_WIDTH_INT", 0x1038, 'u'},
  {"CL_DEVICE_NATIVE_VECTOR_WIDTH_LONG", 0x1039, 'u'},
  {"CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT", 0x103A, 'u'},
  {"CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE", 0x103B, 'u'},
  {"CL_DEVICE_NATIVE_VECTOR_WIDTH_HALF", 0x103C, 'u'},
  {"CL_DEVICE_OPENCL_C_VERSION", 0x103D, 's'},
  {"CL_DEVICE_LINKER_AVAILABLE", 0x103E, 'b'},
  {"CL_DEVICE_BUILT_IN_KERNELS", 0x103F, 's'},
  {"CL_DEVICE_IMAGE_MAX_BUFFER_SIZE", 0x1040, 'z'},
  {"CL_DEVICE_IMAGE_MAX_ARRAY_SIZE", 0x1041, 'z'},
  {"CL_DEVICE_PARENT_DEVICE", 0x1042, 'D'},
  {"CL_DEVICE_PARTITION_MAX_SUB_DEVICES", 0x1043, 'u'},
  {"CL_DEVICE_PARTITION_PROPERTIES", 0x1044, 'p'},
  {"CL_DEVICE_PARTITION_AFFINITY_DOMAIN", 0x1045, 'U'},
  {"CL_DEVICE_PARTITION_TYPE", 0x1046, 't'},
  {"CL_DEVICE_REFERENCE_COUNT", 0x1047, 'u'},
  {"CL_DEVICE_PREFERRED_INTEROP_USER_SYNC", 0x1048, 'b'},
  {"CL_DEVICE_PRINTF_BUFFER_SIZE", 0x1049, 'z'},
  {"CL_DEVICE_IMAGE_PITCH_ALIGNMENT", 0x104A, 'u'},
  {"CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT", 0x104B, 'u'},
  {"CL_DEVICE_MAX_READ_WRITE_IMAGE_ARGS", 0x104C, 'u'},
  {"CL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE", 0x104D, 'z'},
  {"CL_DEVICE_QUEUE_ON_DEVICE_PROPERTIES", 0x104E, 'U'},
  {"CL_DEVICE_QUEUE_ON_DEVICE_PREFERRED_SIZE", 0x104F, 'u'},
  {"CL_DEVICE_QUEUE_ON_DEVICE_MAX_SIZE", 0x1050, 'u'},
  {"CL_DEVICE_MAX_ON_DEVICE_QUEUES", 0x1051, 'u'},
  {"CL_DEVICE_MAX_ON_DEVICE_EVENTS", 0x1052, 'u'},
  {"CL_DEVICE_SVM_CAPABILITIES", 0x1053, 'U'},
  {"CL_DEVICE_GLOBAL_VARIABLE_PREFERRED_TOTAL_SIZE", 0x1054, 'z'},
  {"CL_DEVICE_MAX_PIPE_ARGS", 0x1055, 'u'},
  {"CL_DEVICE_PIPE_MAX_ACTIVE_RESERVATIONS", 0x1056, 'u'},
  {"CL_DEVICE_PIPE_MAX_PACKET_SIZE", 0x1057, 'u'},
  {"CL_DEVICE_PREFERRED_PLATFORM_ATOMIC_ALIGNMENT", 0x1058, 'u'},
  {"CL_DEVICE_PREFERRED_GLOBAL_ATOMIC_ALIGNMENT", 0x1059, 'u'},
  {"CL_DEVICE_PREFERRED_LOCAL_ATOMIC_ALIGNMENT", 0x105A, 'u'},
  {"CL_DEVICE_IL_VERSION", 0x105B, 's'},
  {"CL_DEVICE_MAX_NUM_SUB_GROUPS", 0x105C, 'u'},
  {"CL_DEVICE_SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS", 0x105D, 'b'},
  {"CL_DEVICE_NUMERIC_VERSION", 0x105E, 'v'},
  {"CL_DEVICE_OPENCL_C_NUMERIC_VERSION_KHR", 0x105F, 'v'},
  {"CL_DEVICE_EXTENSIONS_WITH_VERSION", 0x1060, 'n'},
  {"CL_DEVICE_ILS_WITH_VERSION", 0x1061, 'n'},
  {"CL_DEVICE_BUILT_IN_KERNELS_WITH_VERSION", 0x1062, 'n'},
  {"CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES", 0x1063, 'U'},
  {"CL_DEVICE_ATOMIC_FENCE_CAPABILITIES", 0x1064, 'U'},
  {"CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT", 0x1065, 'b'},
  {"CL_DEVICE_OPENCL_C_ALL_VERSIONS", 0x1066, 'n'},
  {"CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE", 0x1067, 'z'},
  {"CL_DEVICE_WORK_GROUP_COLLECTIVE_FUNCTIONS_SUPPORT", 0x1068, 'b'},
  {"CL_DEVICE_GENERIC_ADDRESS_SPACE_SUPPORT", 0x1069, 'b'},
  {"CL_DEVICE_UUID_KHR", 0x106A, 'x'},
  {"CL_DRIVER_UUID_KHR", 0x106B, 'x'},
  {"CL_DEVICE_LUID_VALID_KHR", 0x106C, 'b'},
  {"CL_DEVICE_LUID_KHR", 0x106D, 'x'},
  {"CL_DEVICE_NODE_MASK_KHR", 0x106E, 'u'},
  {"CL_DEVICE_OPENCL_C_FEATURES", 0x106F, 'n'},
  {"CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES", 0x1070, 'U'},
  {"CL_DEVICE_PIPE_SUPPORT", 0x1071, 'b'},
  {"CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED", 0x1072, 's'},
  {"CL_DEVICE_INTEGER_DOT_PRODUCT_CAPABILITIES_KHR", 0x1073, 'U'},
  {NULL, 0, 0}
};

static const Query platform_queries[] = {
  {"CL_PLATFORM_PROFILE", 0x0900, 's'},
  {"CL_PLATFORM_VERSION", 0x0901, 's'},
  {"CL_PLATFORM_NAME", 0x0902, 's'},
  {"CL_PLATFORM_VENDOR", 0x0903, 's'},
  {"CL_PLATFORM_EXTENSIONS", 0x0904, 's'},
  {"CL_PLATFORM_HOST_TIMER_RESOLUTION", 0x0905, 'U'},
  {"CL_PLATFORM_NUMERIC_VERSION", 0x0906, 'v'},
  {"CL_PLATFORM_EXTENSIONS_WITH_VERSION", 0x0907, 'n'},
  {"CL_PLATFORM_ICD_SUFFIX_KHR", 0x0920, 's'},
  {NULL, 0, 0}
};

/* The query named name (full, or without its prefix, in any case). */
static const Query *find_query(const Query *q, const char *prefix, const char *name) {
  size_t plen = strlen(prefix);
  for (; q->name != NULL; q++) {
    const char *full = q->name, *a = name, *b;
    if (strncmp(full, prefix, plen) == 0 && strncmp(full, "CL_DRIVER_", 10) != 0) b = full + plen;
    else b = full + 3;                   /* CL_DRIVER_VERSION: "driver_version" */
    if (strcmp(name, full) == 0) return q;
    while (*a != '\0' && *b != '\0' && toupper((unsigned char)*a) == *b) a++, b++;
    if (*a == '\0' && *b == '\0') return q;
  }
  return NULL;
}

static void push_version(lua_State *L, cl_uint v) {
  lua_pushfstring(L, "%d.%d.%d", (int)(v >> 22), (int)((v >> 12) & 0x3ff), (int)(v & 0xfff));
}

/* Pushes the answer in buf (size bytes) as kind says. */
static void push_answer(lua_State *L, char kind, const unsigned char *buf, size_t size) {
  size_t i, n;
  switch (kind) {
    case 'u': { cl_uint v = 0; memcpy(&v, buf, size < sizeof v ? size : sizeof v);
                lua_pushinteger(L, (lua_Integer)v); break; }
    case 'U': { cl_ulong v = 0; memcpy(&v, buf, size < sizeof v ? size : sizeof v);
                lua_pushinteger(L, (lua_Integer)v); break; }
    case 'z': { size_t v = 0; memcpy(&v, buf, size < sizeof v ? size : sizeof v);
                lua_pushinteger(L, (lua_Integer)v); break; }
    case 'b': { cl_bool v = 0; memcpy(&v, buf, size < sizeof v ? size : sizeof v);
                lua_pushboolean(L, v != 0); break; }
    case 'v': { cl_uint v = 0; memcpy(&v, buf, size < sizeof v ? size : sizeof v);
                push_version(L, v); break; }
    case 'Z':
      n = size / sizeof(size_t);
      lua_createtable(L, (int)n, 0);
      for (i = 0; i < n; i++) {
        size_t v;
        memcpy(&v, buf + i * sizeof v, sizeof v);
        lua_pushinteger(L, (lua_Integer)v);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
      }
      break;
    case 'n': {                          /* cl_name_version: a version, a 64-byte name */
      const size_t one = 4 + 64;
      lua_createtable(L, 0, (int)(size / one));
      for (i = 0; i + one <= size; i += one) {
        cl_uint v;
        memcpy(&v, buf + i, 4);
        lua_pushlstring(L, (const char *)buf + i + 4, strnlen((const char *)buf + i + 4, 64));
        push_version(L, v);
        lua_rawset(L, -3);
      }
      break;
    }
    case 'x': {
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (i = 0; i < size; i++) {
        char hex[3];
        snprintf(hex, sizeof hex, "%02x", buf[i]);
        luaL_addlstring(&b, hex, 2);
      }
      luaL_pushresult(&b);
      break;
    }
    default:                             /* 's' */
      n = size > 0 && buf[size - 1] == '\0' ? size - 1 : size;
      lua_pushlstring(L, (const char *)buf, strnlen((const char *)buf, n));
  }
}

/* Asks get (clGetDeviceInfo or clGetPlatformInfo, through ask) for q: pushes
** the answer, or nil and the reason; returns the count pushed. */
typedef cl_int (*Ask)(const void *obj, cl_uint code, size_t size, void *buf, size_t *got);

static cl_int ask_device(const void *obj, cl_uint code, size_t size, void *buf, size_t *got) {
  return clGetDeviceInfo(*(const cl_device_id *)obj, code, size, buf, got);
}

static cl_int ask_platform(const void *obj, cl_uint code, size_t size, void *buf, size_t *got) {
  return clGetPlatformInfo(*(const cl_platform_id *)obj, code, size, buf, got);
}

static int query(lua_State *L, Ask ask, const void *obj, const Query *q) {
  size_t size = 0;
  unsigned char *buf;
  cl_int err = ask(obj, q->code, 0, NULL, &size);
  if (err == CL_SUCCESS) {
    buf = lua_newuserdatauv(L, size + 1, 0);   /* collected with the stack */
    err = ask(obj, q->code, size, buf, NULL);
    if (err == CL_SUCCESS) {
      buf[size] = '\0';
      push_answer(L, q->kind, buf, size);
      return 1;
    }
  }
  luaL_pushfail(L);
  lua_pushfstring(L, "%s: the driver does not answer (%s)", q->name, lg_clerror_name(err));
  return 2;
}

static const Query *check_query(lua_State *L, const Query *table, const char *prefix,
                                const char *fn) {
  const char *name;
  const Query *q;
  if (lua_type(L, 2) != LUA_TSTRING)
    lg_argerror(L, fn, 1, "expected a query name such as \"%sVERSION\", got %s", prefix,
                luaL_typename(L, 2));
  name = lua_tostring(L, 2);
  q = find_query(table, prefix, name);
  if (q == NULL)
    lg_argerror(L, fn, 1, "unknown query '%s' (expected a %s* name, with or without its "
                "prefix)", name, prefix);
  return q;
}

static const struct { cl_device_affinity_domain bit; const char *name; } domains[] = {
  {CL_DEVICE_AFFINITY_DOMAIN_NUMA, "numa"}, {CL_DEVICE_AFFINITY_DOMAIN_L4_CACHE, "l4"},
  {CL_DEVICE_AFFINITY_DOMAIN_L3_CACHE, "l3"}, {CL_DEVICE_AFFINITY_DOMAIN_L2_CACHE, "l2"},
  {CL_DEVICE_AFFINITY_DOMAIN_L1_CACHE, "l1"},
  {CL_DEVICE_AFFINITY_DOMAIN_NEXT_PARTITIONABLE, "next"}, {0, NULL}
};

/* Pushes a list of cl_device_partition_property (n of them, 0-ended or
** not) as what dev:partition takes: {equally = n}, {counts = {...}} or
** {affinity = "l2"}; nil for none (not a sub-device). */
static void push_partition_type(lua_State *L, const cl_device_partition_property *p, size_t n) {
  size_t i;
  if (n == 0 || p[0] == 0) {
    lua_pushnil(L);
    return;
  }
  lua_createtable(L, 0, 1);
  if (p[0] == CL_DEVICE_PARTITION_EQUALLY && n >= 2) {
    lua_pushinteger(L, (lua_Integer)p[1]);
    lua_setfield(L, -2, "equally");
  } else if (p[0] == CL_DEVICE_PARTITION_BY_COUNTS) {
    lua_newtable(L);
    for (i = 1; i < n && p[i] != CL_DEVICE_PARTITION_BY_COUNTS_LIST_END; i++) {
      lua_pushinteger(L, (lua_Integer)p[i]);
      lua_rawseti(L, -2, (lua_Integer)i);
    }
    lua_setfield(L, -2, "counts");
  } else if (p[0] == CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN && n >= 2) {
    int k;
    for (k = 0; domains[k].name && domains[k].bit != (cl_device_affinity_domain)p[1]; k++) {}
    if (domains[k].name) lua_pushstring(L, domains[k].name);
    else lua_pushinteger(L, (lua_Integer)p[1]);
    lua_setfield(L, -2, "affinity");
  } else {
    lua_pushinteger(L, (lua_Integer)p[0]);     /* a vendor's kind: its number */
    lua_setfield(L, -2, "kind");
  }
}

/* The object queries of the Device at 1 (kinds P, D, p, t): pushes the
** answer, or nil and the reason; returns the count pushed. */
static int object_query(lua_State *L, lg_Device *d, const Query *q) {
  size_t size = 0, i, n;
  cl_device_partition_property *props;
  cl_int err;
  if (q->kind == 'P') {
    lg_push_platform(L, d->platform);
    return 1;
  }
  if (q->kind == 'D') {
    cl_device_id parent = NULL, grand = NULL;
    err = clGetDeviceInfo(d->id, q->code, sizeof parent, &parent, NULL);
    if (err != CL_SUCCESS) goto fail;
    if (parent == NULL) {
      lua_pushnil(L);                         /* a root device: no parent */
      return 1;
    }
    lua_getiuservalue(L, 1, 3);               /* dev:partition's sub-devices know theirs */
    if (lua_getfield(L, -1, "parent") == LUA_TUSERDATA &&
        ((lg_Device *)lua_touserdata(L, -1))->id == parent)
      return 1;
    err = clGetDeviceInfo(parent, CL_DEVICE_PARENT_DEVICE, sizeof grand, &grand, NULL);
    if (err == CL_SUCCESS && grand == NULL) {
      lg_push_device(L, parent);              /* a root device: the cached one */
      return 1;
    }
    luaL_pushfail(L);
    lua_pushfstring(L, "%s: the parent is a sub-device luagpu did not make", q->name);
    return 2;
  }
  err = clGetDeviceInfo(d->id, q->code, 0, NULL, &size);
  if (err != CL_SUCCESS) goto fail;
  n = size / sizeof *props;
  props = lua_newuserdatauv(L, (n ? n : 1) * sizeof *props, 0);
  if (n > 0 && (err = clGetDeviceInfo(d->id, q->code, size, props, NULL)) != CL_SUCCESS)
    goto fail;
  if (q->kind == 't') {
    push_partition_type(L, props, n);
    return 1;
  }
  lua_newtable(L);                            /* 'p': the kinds dev:partition takes */
  for (i = 0; i < n && props[i] != 0; i++) {
    if (props[i] == CL_DEVICE_PARTITION_EQUALLY) lua_pushliteral(L, "equally");
    else if (props[i] == CL_DEVICE_PARTITION_BY_COUNTS) lua_pushliteral(L, "counts");
    else if (props[i] == CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN) lua_pushliteral(L, "affinity");
    else lua_pushinteger(L, (lua_Integer)props[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
fail:
  luaL_pushfail(L);
  lua_pushfstring(L, "%s: the driver does not answer (%s)", q->name, lg_clerror_name(err));
  return 2;
}

/* dev:info(name) */
static int dev_info(lua_State *L) {
  lg_Device *d = lg_checkdevice(L, 1);
  const Query *q = check_query(L, device_queries, "CL_DEVICE_", "device:info");
  if (strchr("PDpt", q->kind) != NULL) return object_query(L, d, q);
  return query(L, ask_device, &d->id, q);
}

/* platform:info(name): the platform of the table's first device, else the
** platform whose name and version are the table's. */
static int plat_info(lua_State *L) {
  cl_platform_id id = NULL;
  const Query *q;
  luaL_checktype(L, 1, LUA_TTABLE);
  q = check_query(L, platform_queries, "CL_PLATFORM_", "platform:info");
  if (lua_getfield(L, 1, "devices") == LUA_TTABLE && lua_rawgeti(L, -1, 1) != LUA_TNIL)
    id = lg_checkdevice(L, -1)->platform;
  if (id == NULL) {
    cl_uint n = 0, i;
    cl_platform_id *ids = lg_get_platforms(&n);
    const char *name, *version;
    lua_getfield(L, 1, "name");
    lua_getfield(L, 1, "version");
    name = lua_tostring(L, -2);
    version = lua_tostring(L, -1);
    for (i = 0; i < n && id == NULL && name != NULL && version != NULL; i++) {
      char a[1024] = "", b[1024] = "";
      clGetPlatformInfo(ids[i], CL_PLATFORM_NAME, sizeof a - 1, a, NULL);
      clGetPlatformInfo(ids[i], CL_PLATFORM_VERSION, sizeof b - 1, b, NULL);
      if (strcmp(a, name) == 0 && strcmp(b, version) == 0) id = ids[i];
    }
    free(ids);
    if (id == NULL) return lg_error(L, "platform:info", "no such platform");
  }
  return query(L, ask_platform, &id, q);
}

static const luaL_Reg device_methods[] = {{"info", dev_info}, {NULL, NULL}};

void lg_open_query(lua_State *L) {
  lg_add_methods(L, LG_DEVICE_MT, device_methods);
  luaL_getmetatable(L, LG_PLATFORM_MT);
  if (lua_getfield(L, -1, "__index") != LUA_TTABLE) {   /* platforms are plain tables */
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "__index");
  }
  lua_pushcfunction(L, plat_info);
  lua_setfield(L, -2, "info");
  lua_pop(L, 2);
}
