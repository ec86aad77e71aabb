/* buffer.c: stub until its subsystem lands */
#include "internal.h"

void lg_open_buffer(lua_State *L) { (void)L; }
