/* queue.c: stub until its subsystem lands */
#include "internal.h"

void lg_open_queue(lua_State *L) { (void)L; }

lg_Queue *lg_newqueue(lua_State *L, int devidx, int profiling, int out_of_order) {
  (void)devidx; (void)profiling; (void)out_of_order;
  luaL_error(L, "queues are not implemented yet");
  return NULL;
}
