/*
** lineedit.h: the REPL's line editing (host/lineedit.c): readline with
** Ctrl-C, multi-line history and Tab completion when the program is built
** with it (LUAGPU_READLINE), else nothing. Not part of the module.
*/
#ifndef LUAGPU_LINEEDIT_H
#define LUAGPU_LINEEDIT_H

#include <lua.h>

/* Sets readline up for L's REPL on a terminal: history from ~/.luagpu_history,
** Tab completion from complete(word) of the program's Lua half, pushed by
** push(L, "complete"), which returns LUA_OK. Returns 0 when the program has
** no readline (then the REPL reads plain lines). */
int lg_line_start(lua_State *L, int (*push)(lua_State *L, const char *name));
/* One line (malloc'd), or NULL at the end of input or, with *interrupted
** set, when Ctrl-C abandoned it. */
char *lg_line_read(const char *prompt, int *interrupted);
/* Adds a chunk (all its lines) to the history and appends it to the file. */
void lg_line_history_add(const char *chunk);

#endif
