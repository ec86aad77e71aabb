/*
** root.c: where luagpu's own files are. The checkout or install root that
** the module (or the program linking it) was loaded from, where lua/ and
** kernels/ are looked up; package.path extended to its helpers; and, after
** every other searcher, one that finds the helpers embedded in the build
** (build/helpers.c), so build/luagpu alone runs require "luagpu.reduce";
** the helper luaopen_luagpu runs, and the Lua functions the C side calls.
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

static char root_dir[PATH_MAX], code_dir[PATH_MAX];

const char *lg_root_dir(void) { return root_dir[0] ? root_dir : NULL; }
const char *lg_code_dir(void) { return code_dir[0] ? code_dir : NULL; }

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Cuts the last path component of path in place; returns 0 when none is left. */
static int cut_last(char *path) {
  char *slash = strrchr(path, '/');
  if (slash == NULL || slash == path) return 0;
  *slash = '\0';
  return 1;
}

/* Finds where this code was loaded from (the .so, or the program that links
** it in), then looks upward for a checkout (host/luagpu.h beside lua/ and kernels/) or an
** install (share/luagpu). */
static void find_root(void) {
  char here[PATH_MAX], probe[PATH_MAX + 64];
  Dl_info info;
  int up;
  here[0] = '\0';
  if (dladdr((void *)lg_root_dir, &info) && info.dli_fname &&
      strstr(info.dli_fname, ".so") != NULL && realpath(info.dli_fname, probe) != NULL)
    snprintf(here, sizeof here, "%.*s", (int)sizeof here - 1, probe);
  if (here[0] == '\0' || strstr(here, ".so") == NULL) {
    ssize_t n = readlink("/proc/self/exe", here, sizeof here - 1);
    here[n > 0 ? n : 0] = '\0';
  }
  if (here[0] == '\0' || !cut_last(here)) return;
  snprintf(code_dir, sizeof code_dir, "%s", here);
  for (up = 0; up < 4; up++) {
    snprintf(probe, sizeof probe, "%s/host/luagpu.h", here);
    if (access(probe, R_OK) == 0) { snprintf(root_dir, sizeof root_dir, "%s", here); return; }
    snprintf(probe, sizeof probe, "%s/share/luagpu", here);
    if (is_dir(probe)) { snprintf(root_dir, sizeof root_dir, "%.*s", (int)sizeof root_dir - 1, probe); return; }
    if (!cut_last(here)) return;
  }
}

/* Prepends the checkout's lua/ folder (or an install prefix's share/lua)
** to package.path, unless it is there already. */
static void extend_package_path(lua_State *L) {
  const char *root = lg_root_dir();
  char dir[PATH_MAX + 32];
  if (root == NULL) return;
  snprintf(dir, sizeof dir, "%s/lua", root);
  if (!is_dir(dir)) {   /* install: PREFIX/share/luagpu -> PREFIX/share/lua/5.4 */
    snprintf(dir, sizeof dir, "%s/../lua/" LUA_VERSION_MAJOR "." LUA_VERSION_MINOR, root);
    if (!is_dir(dir)) return;
  }
  if (lua_getglobal(L, "package") != LUA_TTABLE) { lua_pop(L, 1); return; }
  lua_getfield(L, -1, "path");
  if (lua_isstring(L, -1) && strstr(lua_tostring(L, -1), dir) == NULL) {
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s", dir, dir, lua_tostring(L, -1));
    lua_setfield(L, -3, "path");
  }
  lua_pop(L, 2);
}

/* The embedded helper named path ("luagpu/reduce/init.lua"), or NULL. */
static const lg_EmbeddedFile *embedded_helper(const char *path) {
  const lg_EmbeddedFile *f;
  for (f = lg_embedded_helpers; f->name != NULL; f++)
    if (strcmp(f->name, path) == 0) return f;
  return NULL;
}

/* The last of package.searchers: "luagpu.reduce" from the embedded copy of
** lua/luagpu/reduce.lua, or of lua/luagpu/reduce/init.lua (a package).
** Returns the loader and its chunk name, or a message saying there is no
** such embedded helper. */
static int search_embedded(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const lg_EmbeddedFile *f;
  char path[256];
  size_t i, n = strlen(name);
  if (n + sizeof "/init.lua" > sizeof path) return 0;
  for (i = 0; i < n; i++) path[i] = name[i] == '.' ? '/' : name[i];
  memcpy(path + n, ".lua", sizeof ".lua");
  f = embedded_helper(path);
  if (f == NULL) {
    memcpy(path + n, "/init.lua", sizeof "/init.lua");
    f = embedded_helper(path);
  }
  if (f == NULL) {
    path[n] = '\0';
    lua_pushfstring(L, "no built-in luagpu helper '%s.lua' or '%s/init.lua'", path, path);
    return 1;
  }
  lua_pushfstring(L, "@[luagpu built-in]/%s", path);
  if (luaL_loadbuffer(L, f->text, strlen(f->text), lua_tostring(L, -1)) != LUA_OK)
    return lua_error(L);
  lua_insert(L, -2);    /* the loader, then its chunk name as loader data */
  return 2;
}

/* Appends search_embedded to package.searchers, once. */
static void add_searcher(lua_State *L) {
  lua_Integer n;
  if (lua_getglobal(L, "package") != LUA_TTABLE ||
      lua_getfield(L, -1, "searchers") != LUA_TTABLE) {
    lua_pop(L, 2);
    return;
  }
  n = (lua_Integer)lua_rawlen(L, -1);
  if (n > 0 && lua_rawgeti(L, -1, n) == LUA_TFUNCTION &&
      lua_tocfunction(L, -1) == search_embedded) {
    lua_pop(L, 3);
    return;
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, search_embedded);
  lua_rawseti(L, -2, n + 1);
  lua_pop(L, 2);
}

void lg_find_helpers(lua_State *L) {
  if (root_dir[0] == '\0') find_root();
  extend_package_path(L);
  add_searcher(L);
}

void lg_require_helper(lua_State *L, const char *name) {
  if (lua_getglobal(L, "require") == LUA_TFUNCTION) {
    lua_pushstring(L, name);
    lua_call(L, 1, 1);
    return;
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, search_embedded);
  lua_pushstring(L, name);
  lua_call(L, 1, 2);                    /* the loader and its chunk name, or a message */
  if (!lua_isfunction(L, -2))
    luaL_error(L, "luagpu: %s", lua_isstring(L, -2) ? lua_tostring(L, -2) : name);
  lua_pushstring(L, name);
  lua_insert(L, -2);                    /* loader(name, chunk name), as require calls it */
  lua_call(L, 2, 1);
}

void lg_push_luahook(lua_State *L, const char *name, const char *fn) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, LG_LUA_HOOKS) != LUA_TTABLE ||
      lua_getfield(L, -1, name) != LUA_TFUNCTION)
    luaL_error(L, "luagpu: %s: no Lua helper for it (luagpu.autoload has no function '%s')",
               fn, name);
  lua_remove(L, -2);
}
