/*
** class.c: what every luagpu class shares. Registering a class (its
** metatable, methods table and __name), adding methods to another class,
** the one checker of options tables, and the one message for a released
** object.
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
                  luaL_tolstring(L, 2, NULL));
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

void lg_newclass(lua_State *L, const char *mt, const luaL_Reg *methods,
                 const luaL_Reg *meta) {
  luaL_newmetatable(L, mt);
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
  if (lua_rawget(L, -2) != LUA_TNIL) {
    lua_replace(L, -3);
    lua_pop(L, 1);
    return 1;
  }
  lua_pop(L, 3);
  return 0;
}

void lg_checkoptions(lua_State *L, int idx, const char *fn, int arg,
                     const char *const keys[]) {
  idx = lua_absindex(L, idx);
  if (!lua_istable(L, idx)) return;     /* the caller reports the type */
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int i = 0;
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    while (k != NULL && keys[i] != NULL && strcmp(keys[i], k) != 0) i++;
    if (k == NULL || keys[i] == NULL) {
      luaL_Buffer b;
      const char *bad = luaL_tolstring(L, -2, NULL);
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
