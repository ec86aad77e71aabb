/*
** pinned.c: page-locked host memory for the numbers that reads bring back.
** A read into pageable memory costs NVIDIA's driver a staged copy: 4 bytes
** read with an event took 7.4 us to enqueue on an H200, into page-locked
** memory 2.0 us (bench/c/launch.c, read4_async and read4_pinned_async).
** Reads of a scalar buffer (b:read() and b:get() of dev:scalar, which
** give a number) take a slot of LG_PINNED_SLOT bytes from a slab: a buffer
** made with CL_MEM_ALLOC_HOST_PTR and mapped once, which OpenCL drivers
** back with page-locked memory. Blocking reads share one slot per context
** (a read is done, its number pushed, before another can start); a read's
** Event owns its slot (a "luagpu.PinnedSlot" userdata) until the Event
** gives its number (the slot is then free again) or is collected. Slabs are kept per context for the life of the Lua state, at
** most MAX_SLABS of them: past that, or when a driver refuses the slab,
** reads use ordinary memory as before.
*/
#include <string.h>

#include "internal.h"

#define SLAB_MT "luagpu.PinnedSlab"
#define SLOT_MT "luagpu.PinnedSlot"
#define REGISTRY_KEY "luagpu.pinned"   /* registry: cl_context -> {slab, ...} */

enum { SLOTS = 256, WORDS = SLOTS / 64, MAX_SLABS = 16 };

typedef struct Slab {
  cl_mem mem;                  /* NULL once let go */
  cl_command_queue q;          /* retained: the queue that mapped it, for the unmap */
  char *base;                  /* the mapping: SLOTS * LG_PINNED_SLOT bytes */
  uint64_t free[WORDS];        /* bit i set: slot i is free */
  int nfree;
} Slab;

typedef struct Slot {
  Slab *slab;                  /* NULL once given back */
  int index;
} Slot;

static int slab_gc(lua_State *L) {
  Slab *s = luaL_checkudata(L, 1, SLAB_MT);
  if (s->mem != NULL) {
    if (clEnqueueUnmapMemObject(s->q, s->mem, s->base, 0, NULL, NULL) == CL_SUCCESS)
      lg_finish_collected(L, s->q);   /* not while a user event may hold the queue */
    clReleaseMemObject(s->mem);
    clReleaseCommandQueue(s->q);
    s->mem = NULL;
  }
  return 0;
}

static void give(Slab *s, int i) {
  s->free[i / 64] |= (uint64_t)1 << (i % 64);
  s->nfree++;
}

static int slot_gc(lua_State *L) {
  Slot *t = luaL_checkudata(L, 1, SLOT_MT);
  if (t->slab != NULL) give(t->slab, t->index);
  t->slab = NULL;
  return 0;
}

/* A free slot of s, taken (s has one). */
static int take(Slab *s) {
  int w, bit;
  for (w = 0; s->free[w] == 0; w++) {}
  for (bit = 0; !(s->free[w] >> bit & 1); bit++) {}
  s->free[w] &= ~((uint64_t)1 << bit);
  s->nfree--;
  return w * 64 + bit;
}

/* Pushes a new slab for ctx, mapped through q; nothing pushed and NULL when
** the driver refuses it. */
static Slab *new_slab(lua_State *L, cl_context ctx, cl_command_queue q) {
  size_t bytes = (size_t)SLOTS * LG_PINNED_SLOT;
  cl_int err;
  void *base;
  Slab *s;
  if (ctx == NULL || q == NULL) return NULL;      /* a released queue: the read will say */
  s = lua_newuserdatauv(L, sizeof *s, 0);         /* first: the only step that may raise */
  memset(s, 0, sizeof *s);
  luaL_setmetatable(L, SLAB_MT);
  s->mem = clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, bytes, NULL, &err);
  if (err != CL_SUCCESS) {
    s->mem = NULL;
    lua_pop(L, 1);
    return NULL;
  }
  base = clEnqueueMapBuffer(q, s->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL,
                            NULL, &err);
  if (err != CL_SUCCESS || base == NULL) {
    clReleaseMemObject(s->mem);
    s->mem = NULL;
    lua_pop(L, 1);
    return NULL;
  }
  clRetainCommandQueue(q);
  s->q = q;
  s->base = base;
  memset(s->free, 0xff, sizeof s->free);
  s->nfree = SLOTS;
  return s;
}

/* Pushes the slab of ctx with a free slot (made through q when none has
** one); NULL, nothing pushed, when there is none to be had. */
static Slab *push_slab(lua_State *L, cl_context ctx, cl_command_queue q) {
  lua_Integer i, n;
  Slab *s;
  lua_getfield(L, LUA_REGISTRYINDEX, REGISTRY_KEY);
  if (lua_rawgetp(L, -1, ctx) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, -3, ctx);
  }
  n = (lua_Integer)lua_rawlen(L, -1);
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    s = lua_touserdata(L, -1);
    if (s->nfree > 0 && s->mem != NULL) {
      lua_replace(L, -3);
      lua_pop(L, 1);
      return s;
    }
    lua_pop(L, 1);
  }
  s = n < MAX_SLABS ? new_slab(L, ctx, q) : NULL;
  if (s == NULL) {
    lua_pop(L, 2);
    return NULL;
  }
  lua_pushvalue(L, -1);
  lua_rawseti(L, -3, n + 1);
  lua_replace(L, -3);
  lua_pop(L, 1);
  return s;
}

void *lg_pinned_scratch(lua_State *L, cl_context ctx, cl_command_queue q) {
  void *p = NULL;
  int top = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, REGISTRY_KEY);
  if (lua_rawgetp(L, -1, ctx) == LUA_TTABLE && lua_getfield(L, -1, "scratch") == LUA_TLIGHTUSERDATA)
    p = lua_touserdata(L, -1);
  lua_settop(L, top);
  if (p == NULL) {
    Slab *s = push_slab(L, ctx, q);
    if (s == NULL) return NULL;
    p = s->base + (size_t)take(s) * LG_PINNED_SLOT;   /* taken for good */
    lua_getfield(L, LUA_REGISTRYINDEX, REGISTRY_KEY);
    lua_rawgetp(L, -1, ctx);
    lua_pushlightuserdata(L, p);
    lua_setfield(L, -2, "scratch");
    lua_pop(L, 3);
  }
  return p;
}

lg_Array *lg_push_pinned_array(lua_State *L, cl_context ctx, cl_command_queue q, lg_Type t) {
  size_t bytes = lg_type_size(t);
  lg_Array *a;
  Slot *slot;
  Slab *s;
  if (bytes > LG_PINNED_SLOT) return NULL;
  s = push_slab(L, ctx, q);
  if (s == NULL) return NULL;
  slot = lua_newuserdatauv(L, sizeof *slot, 1);   /* keeps the slab */
  slot->slab = NULL;
  luaL_setmetatable(L, SLOT_MT);
  lua_insert(L, -2);
  lua_setiuservalue(L, -2, 1);
  slot->index = take(s);
  slot->slab = s;
  a = lua_newuserdatauv(L, sizeof *a, 1);           /* keeps the slot */
  memset(a, 0, sizeof *a);
  a->type = t;
  a->count = 1;
  a->nscalars = (size_t)t.width;
  a->ndim = 1;
  a->shape[0] = 1;
  a->bytes = bytes;
  a->data = s->base + (size_t)slot->index * LG_PINNED_SLOT;
  lua_insert(L, -2);
  lua_setiuservalue(L, -2, 1);
  luaL_setmetatable(L, LG_ARRAY_MT);
  return a;
}

void lg_pinned_array_done(lua_State *L, int idx) {
  Slot *slot;
  if (lua_getiuservalue(L, idx, 1) == LUA_TUSERDATA &&
      (slot = luaL_testudata(L, -1, SLOT_MT)) != NULL && slot->slab != NULL) {
    give(slot->slab, slot->index);
    slot->slab = NULL;
  }
  lua_pop(L, 1);
}

void lg_open_pinned(lua_State *L) {
  luaL_newmetatable(L, SLAB_MT);
  lua_pushcfunction(L, slab_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_newmetatable(L, SLOT_MT);
  lua_pushcfunction(L, slot_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  if (lua_getfield(L, LUA_REGISTRYINDEX, REGISTRY_KEY) != LUA_TTABLE) {   /* opened again: */
    lua_newtable(L);                                                      /* keep the slabs */
    lua_setfield(L, LUA_REGISTRYINDEX, REGISTRY_KEY);
  }
  lua_pop(L, 1);
}
