/*
** probe.c: what `luagpu --doctor` asks the system that Lua's standard
** library cannot: the names in a folder, whether a folder takes a new file
** (without touching what is there), whether a shared library loads
** (and why not), which libOpenCL the program uses, and the raw result of
** clGetPlatformIDs. Linked into the program only, never into the module.
*/
#define _GNU_SOURCE   /* dladdr */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "probe.h"

/* listdir(path): a sorted list of the names in folder path (without "."
** and ".."), or nil and the reason. */
static int pr_listdir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  DIR *d = opendir(path);
  struct dirent *e;
  lua_Integer n = 0;
  if (d == NULL) {
    luaL_pushfail(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
    return 2;
  }
  lua_newtable(L);
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    lua_pushstring(L, e->d_name);
    lua_rawseti(L, -2, ++n);
  }
  closedir(d);
  lua_getglobal(L, "table");
  lua_getfield(L, -1, "sort");
  lua_pushvalue(L, -3);
  lua_call(L, 1, 0);
  lua_pop(L, 1);
  return 1;
}

/* isdir(path): "folder", "file" (anything else that exists), "link" (a
** symbolic link to nothing, or a loop of them), or nil. */
static int pr_isdir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  struct stat st;
  if (stat(path, &st) == 0) lua_pushstring(L, S_ISDIR(st.st_mode) ? "folder" : "file");
  else if (lstat(path, &st) == 0) lua_pushstring(L, "link");
  else luaL_pushfail(L);
  return 1;
}

/* canwrite(dir): true when a file can be created in folder dir, else nil
** and the reason. The probe file is new (O_EXCL: an existing name, a
** symbolic link included, is never opened, so nothing that was there is
** truncated or followed) and removed again. */
static int pr_canwrite(lua_State *L) {
  const char *dir = luaL_checkstring(L, 1);
  char path[PATH_MAX];
  int i, fd = -1, err = EEXIST;
  for (i = 0; i < 100 && fd < 0 && err == EEXIST; i++) {
    if (snprintf(path, sizeof path, "%s/.doctor-probe.%ld.%d", dir, (long)getpid(), i) >=
        (int)sizeof path) {
      err = ENAMETOOLONG;
      break;
    }
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) err = errno;
  }
  if (fd < 0) {
    luaL_pushfail(L);
    lua_pushstring(L, strerror(err));
    return 2;
  }
  close(fd);
  unlink(path);   /* ours: just made with O_EXCL */
  lua_pushboolean(L, 1);
  return 1;
}

/* canload(lib): true when the dynamic linker loads lib (a name it searches
** for, or a path), else nil and its message. The library is closed again. */
static int pr_canload(lua_State *L) {
  void *h = dlopen(luaL_checkstring(L, 1), RTLD_LAZY | RTLD_LOCAL);
  if (h == NULL) {
    const char *msg = dlerror();
    luaL_pushfail(L);
    lua_pushstring(L, msg != NULL ? msg : "cannot be loaded");
    return 2;
  }
  dlclose(h);
  lua_pushboolean(L, 1);
  return 1;
}

/* loader(): the path of the library that provides clGetPlatformIDs to this
** program (the ICD loader), or nil. */
static int pr_loader(lua_State *L) {
  Dl_info info;
  void *sym = dlsym(RTLD_DEFAULT, "clGetPlatformIDs");
  if (sym != NULL && dladdr(sym, &info) != 0 && info.dli_fname != NULL)
    lua_pushstring(L, info.dli_fname);
  else
    luaL_pushfail(L);
  return 1;
}

/* platforms(): the number of platforms and clGetPlatformIDs's status, as
** the error's name ("CL_SUCCESS", "CL_PLATFORM_NOT_FOUND_KHR"). */
static int pr_platforms(lua_State *L) {
  cl_uint n = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &n);
  lua_pushinteger(L, err == CL_SUCCESS ? (lua_Integer)n : 0);
  lua_pushstring(L, err == CL_SUCCESS ? "CL_SUCCESS" : lg_clerror_name(err));
  lua_pushinteger(L, err);
  return 3;
}

/* cache_on(): whether the program cache is on (cache.c's reading of
** LUAGPU_NO_CACHE, the one rule of its words). */
static int pr_cache_on(lua_State *L) {
  lua_pushboolean(L, lg_cache_enabled());
  return 1;
}

void lg_push_probes(lua_State *L) {
  static const luaL_Reg probes[] = {
    {"listdir", pr_listdir}, {"isdir", pr_isdir}, {"canwrite", pr_canwrite},
    {"canload", pr_canload},
    {"loader", pr_loader}, {"platforms", pr_platforms}, {"cache_on", pr_cache_on},
    {NULL, NULL}
  };
  luaL_newlib(L, probes);
}
