/* event.c: stub until its subsystem lands */
#include "internal.h"

void lg_open_event(lua_State *L) { (void)L; }
