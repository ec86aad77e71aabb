/*
** lineedit.c: the REPL's line editing, with readline when the program is
** built with it (LUAGPU_READLINE: the Makefile links libreadline.a when the
** machine has it): lines read through readline's callback interface so that
** Ctrl-C abandons one; a history in ~/.luagpu_history where a multi-line
** chunk is one entry, appended the moment it is entered; Tab completion from
** the program's Lua half. Linked into the program only.
*/
#define _XOPEN_SOURCE 700   /* realpath */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lua.h>

#include "lineedit.h"

#ifdef LUAGPU_READLINE
#include <readline/readline.h>
#include <readline/history.h>

#define HISTORY_FILE ".luagpu_history"
#define HISTORY_MAX 1000

static volatile sig_atomic_t got_sigint = 0;
static int (*push_part)(lua_State *L, const char *name) = NULL;

static void on_sigint(int sig) {
  (void)sig;
  got_sigint = 1;
}

static char history_path[4096];

/* Sets history_path to ~/.luagpu_history with every symlink resolved;
** returns 0, history_path empty, when the history is to be off. readline
** writes a whole file (trimming it) to a temporary file it renames over
** the path, and given a symlink renames to the link's text: a relative link
** ("notes.txt", as GNU stow makes) then named a file in the current
** directory, not beside the link, and that file was overwritten. So
** readline only gets the resolved path. A missing file, or the missing
** target of a link, is created by the first entry: readline opens it then,
** renaming nothing, and the open follows the link as the system does. A
** FIFO (read_history blocked in open), a directory or a device is no
** history file, nor is a link that cannot be resolved (a loop). */
static int history_resolve(const char *home) {
  char path[sizeof history_path], *real;
  struct stat st;
  snprintf(path, sizeof path, "%s/" HISTORY_FILE, home);
  real = realpath(path, NULL);
  if (real == NULL && errno == ENOENT) {   /* no file, or a link to none yet */
    memcpy(history_path, path, sizeof path);
    return 1;
  }
  if (real == NULL || stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
    fprintf(stderr, "luagpu: %s: %s%s: history off\n", path,
            real == NULL ? "cannot resolve: " : "",
            real == NULL ? strerror(errno) : "not a regular file");
    free(real);
    return 0;
  }
  snprintf(history_path, sizeof history_path, "%s", real);   /* < PATH_MAX */
  free(real);
  return 1;
}

/* Reads ~/.luagpu_history ($HOME's). Entries are written with a timestamp
** line before each ("#1700000000"), so that a multi-line chunk reads back
** as one entry. The file is read whole and, past HISTORY_MAX entries,
** written again with the last HISTORY_MAX: history_truncate_file counts
** lines, not entries (a chunk of 3 lines is 3), so it would split a chunk
** and it leaves the first line kept without its timestamp. */
static void history_start(void) {
  const char *home = getenv("HOME");
  history_comment_char = '#';
  history_write_timestamps = 1;
  history_multiline_entries = 1;
  if (home != NULL && home[0] != '\0' && history_resolve(home)) {
    read_history(history_path);
    if (history_length > HISTORY_MAX) {
      stifle_history(HISTORY_MAX);
      write_history(history_path);
    }
  }
  stifle_history(HISTORY_MAX);
}

/* Adds a chunk (all its lines: Up recalls it whole) and appends it to the
** file at once, so that no way out (os.exit, a signal, a crash) loses it. */
void lg_line_history_add(const char *chunk) {
  HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
  if (chunk[0] == '\0' || (last != NULL && strcmp(last->line, chunk) == 0)) return;
  add_history(chunk);
  if (history_path[0] == '\0') return;
  if (access(history_path, F_OK) == 0) append_history(1, history_path);
  else write_history(history_path);
}

/* Tab: the candidates come from main.lua's complete(word), where a word
** runs over names, dots and colons ("gpu.de", "dev:", "b.ty"). */
static lua_State *complete_L = NULL;

static char *complete_next(const char *text, int state) {
  static lua_Integer i;
  lua_State *L = complete_L;
  char *match = NULL;
  int top = lua_gettop(L);
  if (state == 0) {
    i = 0;
    if (push_part(L, "complete") == LUA_OK) {
      lua_pushstring(L, text);
      if (lua_pcall(L, 1, 1, 0) != LUA_OK || !lua_istable(L, -1)) lua_pushnil(L);
    }
    lua_setfield(L, LUA_REGISTRYINDEX, "luagpu.completions");
    lua_settop(L, top);
  }
  if (lua_getfield(L, LUA_REGISTRYINDEX, "luagpu.completions") == LUA_TTABLE &&
      lua_rawgeti(L, -1, ++i) == LUA_TSTRING)
    match = strdup(lua_tostring(L, -1));
  lua_settop(L, top);
  return match;
}

static char **complete(const char *text, int start, int end) {
  (void)start, (void)end;
  rl_attempted_completion_over = 1;      /* never file names */
  rl_completion_append_character = '\0';
  return rl_completion_matches(text, complete_next);
}

static char *rl_line = NULL;
static int rl_have_line = 0;

static void on_line(char *line) {
  rl_line = line;
  rl_have_line = 1;
  rl_callback_handler_remove();
}

/* One line through readline's callback interface, so that Ctrl-C can
** abandon it: returns the line (malloc'd), NULL at end of input or, with
** *interrupted set, on Ctrl-C. */
char *lg_line_read(const char *prompt, int *interrupted) {
  struct sigaction sa, before;
  rl_line = NULL, rl_have_line = 0, got_sigint = 0;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;      /* no SA_RESTART: select returns EINTR */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &before);
  rl_callback_handler_install(prompt, on_line);
  while (!rl_have_line) {
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(fileno(rl_instream), &fds);
    if (select(fileno(rl_instream) + 1, &fds, NULL, NULL, NULL) < 0) {
      if (errno == EINTR && !got_sigint) continue;
      rl_free_line_state();
      rl_callback_sigcleanup();
      rl_callback_handler_remove();
      fputs("\n", rl_outstream);
      *interrupted = got_sigint != 0;
      break;
    }
    rl_callback_read_char();
  }
  sigaction(SIGINT, &before, NULL);
  return rl_line;
}

int lg_line_start(lua_State *L, int (*push)(lua_State *L, const char *name)) {
  rl_readline_name = "luagpu";
  rl_catch_signals = 0;
  complete_L = L;
  push_part = push;
  rl_attempted_completion_function = complete;
  rl_completer_word_break_characters = " \t\n\"\\'`@$><=;|&{(,+-*/%^~#[]}";
  history_start();
  return 1;
}

#else   /* no readline: the REPL reads plain lines */

int lg_line_start(lua_State *L, int (*push)(lua_State *L, const char *name)) {
  (void)L, (void)push;
  return 0;
}

char *lg_line_read(const char *prompt, int *interrupted) {
  (void)prompt, (void)interrupted;
  return NULL;
}

void lg_line_history_add(const char *chunk) {
  (void)chunk;
}

#endif
