/*
** partition.c: sub-devices. dev:partition{equally = n} and
** dev:partition{counts = {n1, n2, ...}} split a device's compute units into
** Devices that work like any other (buffers, queues, programs, kernels);
** dev:partition{affinity = "numa" | "l1" .. "l4" | "next"} splits it along
** the caches or NUMA nodes its compute units share, where it can.
**
** The sub-devices of one call share a new Context over them (a buffer of
** one is usable by its siblings, not by the parent: OpenCL contexts hold a
** fixed list of devices). Each Device's fields gain `parent` (the Device it
** was cut from, kept alive). The sub-device ids are released by a holder,
** the Context's user value, made before the Context, so finalized after it
** in the same collection (or at lua_close). Nothing else keeps them: once a
** script drops the sub-devices and what it made on them, all is freed.
*/
#include <string.h>

#include "internal.h"

#define SUBDEVICES_MT "luagpu.SubDevices"

typedef struct Holder {
  cl_uint n;
  cl_device_id ids[1];
} Holder;

/* Sub-device ids are released late: PoCL's worker threads may still touch
** a sub-device just after its last command completes (a collection right
** after `b:write(...):wait()` freed it under them: SIGSEGV in
** POclReleaseEvent). A holder's ids go into the state's ring of LATE ids;
** an id is released when LATE more have come after it, or at lua_close.
** At most LATE ids wait: a few partitions' worth of memory. */
#define LATE 256
#define LATE_KEY "luagpu.subdevices_released_late"

typedef struct Late {
  cl_uint next, n;              /* the next slot to fill; how many are held */
  cl_device_id ids[LATE];
} Late;

static int late_gc(lua_State *L) {
  Late *r = lua_touserdata(L, 1);
  cl_uint i;
  for (i = 0; i < r->n; i++) clReleaseDevice(r->ids[i]);
  r->n = r->next = 0;
  return 0;
}

static int holder_gc(lua_State *L) {
  Holder *h = lua_touserdata(L, 1);
  Late *r = NULL;
  cl_uint i;
  if (lua_getfield(L, LUA_REGISTRYINDEX, LATE_KEY) == LUA_TUSERDATA)
    r = lua_touserdata(L, -1);
  lua_pop(L, 1);
  for (i = 0; i < h->n; i++) {
    if (r == NULL) {                    /* none to wait in (the state is closing) */
      clReleaseDevice(h->ids[i]);
      continue;
    }
    if (r->n == LATE) clReleaseDevice(r->ids[r->next]);   /* the oldest goes now */
    else r->n++;
    r->ids[r->next] = h->ids[i];
    r->next = (r->next + 1) % LATE;
  }
  h->n = 0;
  return 0;
}

/* Whether the device lists how among its partition properties. */
static int supports(cl_device_id id, cl_device_partition_property how, char *list, size_t size) {
  cl_device_partition_property props[16];
  size_t got = 0, i, n;
  int yes = 0;
  list[0] = '\0';
  if (clGetDeviceInfo(id, CL_DEVICE_PARTITION_PROPERTIES, sizeof props, props, &got) !=
      CL_SUCCESS)
    return 0;
  n = got / sizeof props[0];
  for (i = 0; i < n && props[i] != 0; i++) {
    const char *name = props[i] == CL_DEVICE_PARTITION_EQUALLY ? "equally"
                       : props[i] == CL_DEVICE_PARTITION_BY_COUNTS ? "counts"
                       : props[i] == CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN ? "affinity domain"
                                                                             : NULL;
    if (props[i] == how) yes = 1;
    if (name != NULL && strlen(list) + strlen(name) + 3 < size) {
      if (list[0] != '\0') strcat(list, ", ");
      strcat(list, name);
    }
  }
  return yes;
}

static lua_Integer check_units(lua_State *L, int idx, const char *what, int k) {
  int ok;
  lua_Integer v = lua_tointegerx(L, idx, &ok);
  if (!ok || v < 1) {
    if (k > 0)
      lg_argerror(L, "device:partition", 1, "%s[%d]: expected an integer >= 1, got %s", what, k,
                  lg_tolstring(L, idx));
    lg_argerror(L, "device:partition", 1, "%s: expected an integer >= 1, got %s", what,
                lg_tolstring(L, idx));
  }
  return v;
}

static const char *const domain_names[] = {"numa", "l4", "l3", "l2", "l1", "next", NULL};
static const cl_device_affinity_domain domain_bits[] = {
  CL_DEVICE_AFFINITY_DOMAIN_NUMA, CL_DEVICE_AFFINITY_DOMAIN_L4_CACHE,
  CL_DEVICE_AFFINITY_DOMAIN_L3_CACHE, CL_DEVICE_AFFINITY_DOMAIN_L2_CACHE,
  CL_DEVICE_AFFINITY_DOMAIN_L1_CACHE, CL_DEVICE_AFFINITY_DOMAIN_NEXT_PARTITIONABLE
};

/* Reads opts.affinity (at idx) into *bit, raising unless the device at d
** supports partitioning by that affinity domain (saying what it supports). */
static void check_affinity(lua_State *L, int idx, lg_Device *d, cl_device_affinity_domain *bit) {
  static const char *const fn = "device:partition";
  const char *s = lua_type(L, idx) == LUA_TSTRING ? lua_tostring(L, idx) : NULL;
  cl_device_affinity_domain have = 0;
  char list[64];
  int i;
  for (i = 0; s != NULL && domain_names[i]; i++)
    if (strcmp(s, domain_names[i]) == 0) break;
  if (s == NULL || domain_names[i] == NULL)
    lg_argerror(L, fn, 1, "affinity: expected \"numa\", \"l4\", \"l3\", \"l2\", \"l1\" or "
                "\"next\", got %s", s != NULL ? lua_pushfstring(L, "\"%s\"", s)
                                             : luaL_typename(L, idx));
  if (!supports(d->id, CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN, list, sizeof list))
    lg_error(L, fn, "%s cannot be partitioned by affinity domain (%s%s)", d->name,
             list[0] ? "it supports: " : "it supports no partitioning", list);
  clGetDeviceInfo(d->id, CL_DEVICE_PARTITION_AFFINITY_DOMAIN, sizeof have, &have, NULL);
  if (!(have & domain_bits[i])) {
    luaL_Buffer names;
    int k, n = 0;
    luaL_buffinit(L, &names);
    for (k = 0; domain_names[k]; k++)
      if (have & domain_bits[k]) {
        if (n++ > 0) luaL_addstring(&names, ", ");
        luaL_addstring(&names, domain_names[k]);
      }
    luaL_pushresult(&names);
    lg_error(L, fn, "%s cannot be partitioned by affinity domain \"%s\" (it supports: %s)",
             d->name, s, n > 0 ? lua_tostring(L, -1) : "none");
  }
  *bit = domain_bits[i];
}

/* dev:partition{equally = n} | {counts = {...}} | {affinity = domain}: a
** list of new Devices. */
static int dev_partition(lua_State *L) {
  static const char *const fn = "device:partition";
  static const char *const keys[] = {"equally", "counts", "affinity", NULL};
  lg_Device *d = lg_checkdevice(L, 1);
  cl_device_partition_property props[72];
  cl_uint units = 0, n = 0, i;
  cl_context_properties cprops[3];
  cl_context ctx;
  lg_Context *c;
  Holder *h;
  char list[64];
  cl_int err;
  int np = 0, equally, ctxidx, k, given, holder;
  if (!lua_istable(L, 2))
    return lg_typeerror(L, fn, 1, 2, "a table {equally = n}, {counts = {...}} or "
                        "{affinity = domain}");
  lua_settop(L, 2);
  lg_checkoptions(L, 2, fn, 1, keys);
  lua_getfield(L, 2, "equally");
  lua_getfield(L, 2, "counts");
  lua_getfield(L, 2, "affinity");
  given = !lua_isnil(L, 3) + !lua_isnil(L, 4) + !lua_isnil(L, 5);
  if (given != 1)
    return lg_argerror(L, fn, 1, "expected one of equally = n, counts = {...} or affinity = "
                       "domain, got %s", given == 0 ? "neither" : "more than one");
  equally = !lua_isnil(L, 3);
  clGetDeviceInfo(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
  if (!lua_isnil(L, 5)) {
    cl_device_affinity_domain bit = 0;
    check_affinity(L, 5, d, &bit);
    props[np++] = CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN;
    props[np++] = (cl_device_partition_property)bit;
  } else if (!supports(d->id, equally ? CL_DEVICE_PARTITION_EQUALLY
                                      : CL_DEVICE_PARTITION_BY_COUNTS, list, sizeof list)) {
    return lg_error(L, fn, "%s cannot be partitioned %s (%s%s)", d->name,
                    equally ? "equally" : "by counts",
                    list[0] ? "it supports: " : "it supports no partitioning", list);
  } else if (equally) {
    lua_Integer e = check_units(L, 3, "equally", 0);
    if (e > (lua_Integer)units)
      return lg_argerror(L, fn, 1, "equally: %I compute units per sub-device, the device has %d",
                         e, (int)units);
    props[np++] = CL_DEVICE_PARTITION_EQUALLY;
    props[np++] = (cl_device_partition_property)e;
  } else {
    lua_Integer sum = 0;
    int len;
    if (!lua_istable(L, 4))
      return lg_argerror(L, fn, 1, "counts: expected a list of integers, got %s",
                         luaL_typename(L, 4));
    len = (int)lua_rawlen(L, 4);
    if (len < 1 || len > 64)
      return lg_argerror(L, fn, 1, "counts: expected 1 to 64 counts, got %d", len);
    props[np++] = CL_DEVICE_PARTITION_BY_COUNTS;
    for (k = 1; k <= len; k++) {
      lua_Integer v;
      lua_rawgeti(L, 4, k);
      v = check_units(L, -1, "counts", k);
      if (v > (lua_Integer)units)      /* each at most units: the sum cannot wrap */
        return lg_argerror(L, fn, 1, "counts[%d]: %I compute units, the device has %d", k, v,
                           (int)units);
      sum += v;
      props[np++] = (cl_device_partition_property)v;
      lua_pop(L, 1);
    }
    if (sum > (lua_Integer)units)
      return lg_argerror(L, fn, 1, "counts: %I compute units in all, the device has %d", sum,
                         (int)units);
    props[np++] = CL_DEVICE_PARTITION_BY_COUNTS_LIST_END;
  }
  props[np] = 0;
  err = clCreateSubDevices(d->id, props, 0, NULL, &n);
  if (err != CL_SUCCESS) return lg_clerror(L, "clCreateSubDevices", err, NULL);
  /* the holder first: from here on an error leaks nothing */
  h = lua_newuserdatauv(L, sizeof(Holder) + sizeof(cl_device_id) * n, 0);
  h->n = 0;
  luaL_setmetatable(L, SUBDEVICES_MT);
  holder = lua_gettop(L);
  err = clCreateSubDevices(d->id, props, n, h->ids, NULL);
  if (err != CL_SUCCESS) return lg_clerror(L, "clCreateSubDevices", err, NULL);
  h->n = n;
  cprops[0] = CL_CONTEXT_PLATFORM;
  cprops[1] = (cl_context_properties)d->platform;
  cprops[2] = 0;
  ctx = clCreateContext(cprops, n, h->ids, NULL, NULL, &err);
  if (ctx == NULL) return lg_clerror(L, "clCreateContext", err, NULL);
  c = lg_push_borrowed_context(L, ctx, d->platform);   /* retains it */
  clReleaseContext(ctx);
  lua_pushvalue(L, holder);
  lua_setiuservalue(L, -2, 1);
  c->gc_threshold = d->global_mem_size / 4 < ((size_t)1 << 30)
                        ? (size_t)(d->global_mem_size / 4) : ((size_t)1 << 30);
  if (c->gc_threshold == 0) c->gc_threshold = (size_t)256 << 20;
  ctxidx = lua_gettop(L);
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    lg_Device *s = lg_newdevice(L, h->ids[i]);
    s->context = c;
    s->ctx = c->ctx;
    lua_pushvalue(L, ctxidx);
    lua_setiuservalue(L, -2, 1);
    lg_load_device_fields(L, s);
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "parent");
    lua_setiuservalue(L, -2, 3);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

static const luaL_Reg device_methods[] = {
  {"partition", dev_partition}, {NULL, NULL}
};

void lg_open_partition(lua_State *L) {
  luaL_newmetatable(L, SUBDEVICES_MT);
  lua_pushcfunction(L, holder_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  if (lua_getfield(L, LUA_REGISTRYINDEX, LATE_KEY) == LUA_TNIL) {
    Late *r = lua_newuserdatauv(L, sizeof *r, 0);   /* made before any holder: closed after */
    r->n = r->next = 0;
    lua_newtable(L);
    lua_pushcfunction(L, late_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, LATE_KEY);
  }
  lua_pop(L, 1);
  lg_add_methods(L, LG_DEVICE_MT, device_methods);
}
