/*
** probe.h: the luagpu program's look at the system (host/probe.c), for
** `luagpu --doctor`. Not part of the module.
*/
#ifndef LUAGPU_PROBE_H
#define LUAGPU_PROBE_H

#include <lua.h>

/* Pushes a table of functions: listdir, isdir, canwrite,
** canload, loader, platforms. */
void lg_push_probes(lua_State *L);

#endif
