/* program.c: stub until its subsystem lands */
#include "internal.h"

void lg_open_program(lua_State *L) { (void)L; }
