/* main.c: stub until the program lands */
#include <stdio.h>
#include "internal.h"
#include <lualib.h>

int main(int argc, char **argv) {
  lua_State *L = luaL_newstate();
  (void)argc; (void)argv;
  luaL_openlibs(L);
  luaL_requiref(L, "luagpu", luaopen_luagpu, 1);
  lua_close(L);
  return 0;
}
