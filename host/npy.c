/* npy.c: stub until its subsystem lands */
#include "internal.h"

void lg_open_npy(lua_State *L) { (void)L; }
