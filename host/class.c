/*
** class.c: what every luagpu class shares. Registering a class (its
** metatable, methods table and __name), adding methods to another class,
** gpu.extend (methods of Lua helpers', also declared to load on first
** lookup), the one checker of options tables, and the one message for a
** released object.
*/
#include <string.h>

#include "internal.h"

/* Pushes the string key under which the table on top holds the function at
** fidx, and returns it; NULL (nothing pushed) when none does. */
static const char *key_of(lua_State *L, int fidx) {
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (lua_rawequal(L, -1, fidx) && lua_type(L, -2) == LUA_TSTRING) {
      lua_pop(L, 1);
      return lua_tostring(L, -1);
    }
    lua_pop(L, 1);
  }
  return NULL;
}

/* The name under which the running C function is a method (or, failing
** that, a metamethod: "__len") of the object at idx (pushed), or NULL. */
static const char *running_method(lua_State *L, int idx) {
  lua_Debug ar;
  const char *name = NULL;
  int f;
  idx = lua_absindex(L, idx);
  if (!lua_getstack(L, 0, &ar) || !lua_getinfo(L, "f", &ar)) return NULL;
  f = lua_gettop(L);
  if (!lua_getmetatable(L, idx)) return NULL;
  if (lua_getfield(L, -1, "__methods") == LUA_TTABLE) name = key_of(L, f);
  if (name == NULL) {
    lua_settop(L, f + 1);          /* the metatable */
    name = key_of(L, f);
  }
  return name;
}

int lg_released_error(lua_State *L, int idx, const char *what) {
  const char *name = running_method(L, idx);
  if (name != NULL)
    return luaL_error(L, "luagpu: %s:%s: attempt to use a released %s", what, name, what);
  return luaL_error(L, "luagpu: attempt to use a released %s", what);
}

/* The __newindex of every class that sets none itself: objects have no
** fields to write. Upvalue 1 is the class's name in lower case. */
static int class_newindex(lua_State *L) {
  return lg_error(L, lua_tostring(L, lua_upvalueindex(1)), "field '%s' is read-only",
                  lg_tolstring(L, 2));
}

int lg_handle_released(lua_State *L) {
  void *const *handle = lua_touserdata(L, 1);
  lua_pushboolean(L, handle != NULL && *handle == NULL);
  return 1;
}

/* Pushes "event" for "luagpu.Event". */
static void push_short_name(lua_State *L, const char *mt) {
  char name[32];
  size_t i;
  const char *dot = strchr(mt, '.');
  mt = dot != NULL ? dot + 1 : mt;
  for (i = 0; mt[i] != '\0' && i < sizeof name - 1; i++)
    name[i] = (char)(mt[i] >= 'A' && mt[i] <= 'Z' ? mt[i] - 'A' + 'a' : mt[i]);
  lua_pushlstring(L, name, i);
}

#define CLASSES_KEY "luagpu.classes"   /* registry: "Device" -> its metatable */

void lg_newclass(lua_State *L, const char *mt, const luaL_Reg *methods,
                 const luaL_Reg *meta) {
  luaL_newmetatable(L, mt);
  if (strncmp(mt, "luagpu.", 7) == 0 && mt[7] >= 'A' && mt[7] <= 'Z') {
    luaL_getsubtable(L, LUA_REGISTRYINDEX, CLASSES_KEY);   /* what gpu.extend knows */
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, mt + 7);
    lua_pop(L, 1);
  }
  if (meta != NULL) luaL_setfuncs(L, meta, 0);
  if (lua_getfield(L, -1, "__newindex") == LUA_TNIL) {
    push_short_name(L, mt);
    lua_pushcclosure(L, class_newindex, 1);
    lua_setfield(L, -3, "__newindex");
  }
  lua_pop(L, 1);
  lua_newtable(L);                       /* methods */
  if (methods != NULL) luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__methods");
  if (lua_getfield(L, -1, "__index") == LUA_TNIL) {
    lua_pop(L, 1);
    lua_getfield(L, -1, "__methods");
    lua_setfield(L, -2, "__index");
  } else {
    lua_pop(L, 1);
  }
  lua_pushliteral(L, "luagpu");
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);
}

void lg_add_methods(lua_State *L, const char *mt, const luaL_Reg *fns) {
  luaL_getmetatable(L, mt);
  lua_getfield(L, -1, "__methods");
  luaL_setfuncs(L, fns, 0);
  lua_pop(L, 2);
}

int lg_pushmethod(lua_State *L, int objidx, int keyidx) {
  if (!lua_getmetatable(L, objidx)) return 0;
  lua_getfield(L, -1, "__methods");
  lua_pushvalue(L, keyidx);
  if (lua_gettable(L, -2) != LUA_TNIL) {     /* not raw: methods declared lazily */
    lua_replace(L, -3);
    lua_pop(L, 1);
    return 1;
  }
  lua_pop(L, 3);
  return 0;
}

/* The __index of a class's methods table once gpu.extend declared some
** of its methods lazily: the first lookup of one runs its load function
** (which adds them with gpu.extend), then looks again. While load runs,
** its names are not lazy (a lookup inside it finds nothing); when it
** raises they are again. Upvalue 1: the table name -> load. */
static int lazy_index(lua_State *L) {
  int lazy = lua_upvalueindex(1), names;
  lua_settop(L, 2);                       /* 1: the methods, 2: the key */
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lazy) != LUA_TFUNCTION) return 1;
  lua_newtable(L);                        /* 4: the names of this load's */
  names = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, lazy)) {
    if (lua_rawequal(L, -1, 3)) {
      lua_pushvalue(L, -2);
      lua_pushvalue(L, -2);
      lua_rawset(L, names);
    }
    lua_pop(L, 1);
  }
  lua_pushnil(L);
  while (lua_next(L, names)) {            /* clearing existing keys during next is allowed */
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_pushnil(L);
    lua_rawset(L, lazy);
  }
  lua_pushvalue(L, 3);
  if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
    lua_pushnil(L);
    while (lua_next(L, names)) {
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_rawset(L, lazy);
    }
    return lua_error(L);
  }
  lua_pushvalue(L, 2);
  lua_rawget(L, 1);
  return 1;
}

void lg_class_fields(lua_State *L, const char *mt, const char *const fields[]) {
  int i;
  luaL_getmetatable(L, mt);
  lua_newtable(L);
  for (i = 0; fields[i] != NULL; i++) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, fields[i]);
  }
  lua_setfield(L, -2, "__fields");
  lua_pop(L, 1);
}

/* Raises when the name at idx is a field of the class whose metatable is
** at mtidx (its __fields): a method of that name would hide it from every
** helper that reads it. */
static void check_not_field(lua_State *L, int mtidx, int idx, const char *cls) {
  int field;
  if (lua_getfield(L, mtidx, "__fields") != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  lua_pushvalue(L, idx);
  field = lua_rawget(L, -2) != LUA_TNIL;
  lua_pop(L, 2);
  if (field)
    lg_argerror(L, "gpu.extend", 2, "%s has a field '%s': gpu.extend does not hide it behind "
                "a method", cls, lua_tostring(L, idx));
}

/* Checks gpu.extend's second argument (at 2: name -> function, or with
** lazy, a list of names) against the class's methods at midx and fields
** (its metatable at midx - 1). */
static void check_extension(lua_State *L, int midx, const char *cls, int lazy) {
  lua_Integer i, n = (lua_Integer)lua_rawlen(L, 2);
  if (lazy) {
    for (i = 1; i <= n; i++) {
      if (lua_rawgeti(L, 2, i) != LUA_TSTRING)
        lg_argerror(L, "gpu.extend", 2, "name #%I: expected a method name, got %s", i,
                    luaL_typename(L, -1));
      check_not_field(L, midx - 1, lua_gettop(L), cls);
      lua_pushvalue(L, -1);
      if (lua_rawget(L, midx) != LUA_TNIL)
        lg_argerror(L, "gpu.extend", 2, "%s already has a method '%s'", cls,
                    lua_tostring(L, -2));
      lua_pop(L, 2);
    }
    return;
  }
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      lg_argerror(L, "gpu.extend", 2, "expected method names as keys, got %s",
                  luaL_typename(L, -2));
    if (!lua_isfunction(L, -1))
      lg_argerror(L, "gpu.extend", 2, "method '%s': expected a function, got %s",
                  lua_tostring(L, -2), luaL_typename(L, -1));
    check_not_field(L, midx - 1, lua_gettop(L) - 1, cls);
    lua_pushvalue(L, -2);
    if (lua_rawget(L, midx) == LUA_TFUNCTION && lua_iscfunction(L, -1))
      lg_argerror(L, "gpu.extend", 2, "%s's method '%s' is built in: gpu.extend does not "
                  "replace it", cls, lua_tostring(L, -3));
    lua_pop(L, 2);
  }
}

/* Raises gpu.extend's "no class named 'x' (expected Array, Buffer, ...)",
** the classes (the table at idx) in sorted order. */
static int no_class(lua_State *L, int idx, const char *cls) {
  const char *names[64];
  size_t n = 0, i, j;
  luaL_Buffer b;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    const char *k = lua_tostring(L, -2);        /* kept alive by the table */
    lua_pop(L, 1);
    for (i = n; i > 0 && strcmp(names[i - 1], k) > 0; i--) names[i] = names[i - 1];
    names[i] = k;
    if (n < sizeof names / sizeof names[0] - 1) n++;
  }
  luaL_buffinit(L, &b);
  for (j = 0; j < n; j++) {
    if (j > 0) luaL_addstring(&b, ", ");
    luaL_addstring(&b, names[j]);
  }
  luaL_pushresult(&b);
  return lg_argerror(L, "gpu.extend", 1, "no class named '%s' (expected %s)", cls,
                     lua_tostring(L, -1));
}

/* Adds the names of the list at 2 to the lazily found methods of the
** methods table at midx, each loaded by the function at 3. */
static void declare_lazy(lua_State *L, int midx) {
  lua_Integer i, n = (lua_Integer)lua_rawlen(L, 2);
  if (!lua_getmetatable(L, midx)) {       /* the methods' own __index: lazy_index */
    lua_newtable(L);
    lua_newtable(L);                      /* its upvalue: name -> load */
    lua_pushcclosure(L, lazy_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pushvalue(L, -1);
    lua_setmetatable(L, midx);
  }
  lua_getfield(L, -1, "__index");
  lua_getupvalue(L, -1, 1);
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, 2, i);
    lua_pushvalue(L, 3);
    lua_rawset(L, -3);
  }
  lua_pop(L, 3);
}

/* gpu.extend(class, methods): adds the functions of methods (name ->
** function) to the class named ("Device", as gpu.type says), or replaces
** those gpu.extend added before; a built-in (C) method is never replaced.
** gpu.extend(class, names, load): declares the methods named (a list) to
** be found on first lookup: load() runs then, and must add them. */
static int mod_extend(lua_State *L) {
  const char *cls;
  int lazy = !lua_isnoneornil(L, 3), midx;
  if (lua_type(L, 1) != LUA_TSTRING) return lg_typeerror(L, "gpu.extend", 1, 1, "a class name");
  if (!lua_istable(L, 2))
    return lg_typeerror(L, "gpu.extend", 2, 2, lazy ? "a list of method names"
                                                      : "a table of methods");
  if (lazy && !lua_isfunction(L, 3))
    return lg_typeerror(L, "gpu.extend", 3, 3, "a function that adds the methods");
  lua_settop(L, 3);
  cls = lua_tostring(L, 1);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, CLASSES_KEY);             /* 4 */
  if (lua_getfield(L, 4, cls) != LUA_TTABLE || lua_getfield(L, -1, "__methods") != LUA_TTABLE)
    return no_class(L, 4, cls);
  midx = lua_gettop(L);
  check_extension(L, midx, cls, lazy);
  if (lazy) {
    declare_lazy(L, midx);
    return 0;
  }
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, midx);
  }
  return 0;
}

void lg_open_class(lua_State *L) {
  lua_pushcfunction(L, mod_extend);
  lua_setfield(L, -2, "extend");
}

void lg_checkoptions(lua_State *L, int idx, const char *fn, int arg,
                     const char *const keys[]) {
  idx = lua_absindex(L, idx);
  if (!lua_istable(L, idx)) return;     /* the caller reports the type */
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int i = 0;
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    lg_check_nul(L, -2, fn, arg, "an option's name");
    while (k != NULL && keys[i] != NULL && strcmp(keys[i], k) != 0) i++;
    if (k == NULL || keys[i] == NULL) {
      luaL_Buffer b;
      const char *bad = lg_tolstring(L, -2);
      luaL_buffinit(L, &b);
      for (i = 0; keys[i] != NULL; i++) {
        if (i > 0) luaL_addstring(&b, ", ");
        luaL_addstring(&b, keys[i]);
      }
      luaL_pushresult(&b);
      lg_argerror(L, fn, arg, "unknown option '%s' (expected %s)", bad, lua_tostring(L, -1));
    }
    lua_pop(L, 1);
  }
}
