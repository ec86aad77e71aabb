/*
** main.c: the luagpu program. Runs a script with the module already loaded
** as the global `gpu` and `arg` set as lua5.4 sets it, or a REPL: line
** editing and history (readline, when built with it), multi-line input,
** printed results, errors with a traceback, and Ctrl-C back to the prompt.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "lineedit.h"
#include "probe.h"
#include <lualib.h>


#define PROGNAME "luagpu"

static lua_State *globalL = NULL;
static const char *progname = PROGNAME;   /* NULL inside the REPL: no prefix */
static volatile sig_atomic_t got_sigint = 0;
static volatile sig_atomic_t running_lua = 0;

/* ------------------------------------------------------------ messages */

/* The length of msg's location "file.lua:12: " when luagpu's own prefix
** follows it ("oob.lua:11: luagpu: debug: ..."), else 0. */
static size_t located_prefix(const char *msg) {
  const char *p = strstr(msg, ": " PROGNAME ": "), *q;
  if (p == NULL || memchr(msg, '\n', (size_t)(p - msg)) != NULL) return 0;
  for (q = p; q > msg && q[-1] >= '0' && q[-1] <= '9'; q--) {}
  if (q == p || q == msg || q[-1] != ':') return 0;   /* no ":<line>" before it */
  return (size_t)(p - msg) + 2;
}

/* Writes "luagpu: msg" to stderr; the prefix once when the message already
** carries it, at its start or after a location (luagpu's own errors do):
** "luagpu: oob.lua:11: debug: ...". */
static void message(const char *msg) {
  size_t n = strlen(PROGNAME ": "), at = located_prefix(msg);
  fflush(stdout);
  if (progname != NULL && at > 0) {
    fprintf(stderr, "%s: %.*s%s\n", progname, (int)at, msg, msg + at + n);
    fflush(stderr);
    return;
  }
  if (progname != NULL && strncmp(msg, PROGNAME ": ", n) != 0)
    fprintf(stderr, "%s: ", progname);
  fprintf(stderr, "%s\n", msg);
  fflush(stderr);
}

/* Reports the error message on top of the stack (if status is an error). */
static int report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    message(msg != NULL ? msg : "(error object is not a string)");
    lua_pop(L, 1);
  }
  return status;
}

static int push_main_lua(lua_State *L, const char *name);

/* Message handler: adds a traceback to the error message; an error object
** that is no string prints through its __tostring or the REPL's printer. */
static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      return 1;   /* an error object that describes itself */
    if (push_main_lua(L, "show") == LUA_OK) {   /* else through the REPL's printer */
      lua_pushvalue(L, 1);
      if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING)
        msg = lua_pushfstring(L, "error object: %s", lua_tostring(L, -1));
    }
    if (msg == NULL)
      msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  /* without the helpers' frames (main.lua's traceback; as it is should that fail) */
  if (push_main_lua(L, "traceback") == LUA_OK) {
    lua_pushvalue(L, -2);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) return 1;
  }
  lua_pop(L, 1);   /* the failure's message, or what came back */
  return 1;
}

/* ------------------------------------------------------------- signals */

static void on_sigint(int sig);

/* Hook set by the SIGINT handler: stops the running Lua code, and catches
** the next Ctrl-C again (code that goes on after the error, such as the
** notebook's loop of cells, can be interrupted again). */
static void on_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  if (running_lua) {   /* as catch_sigint installs it: no SA_RESTART */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
  }
  luaL_error(L, "interrupted!");
}

/* While Lua runs, Ctrl-C sets a hook that raises at the next call, return
** or instruction; a second Ctrl-C before it fires (code stuck in C) ends
** the program. At the prompt it only sets got_sigint. */
static void on_sigint(int sig) {
  got_sigint = 1;
  if (running_lua) {
    signal(sig, SIG_DFL);
    lua_sethook(globalL, on_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
  }
}

/* Installs on_sigint (on != 0), or puts back what was there before (the
** default action, or "ignore" when started in the background). No
** SA_RESTART, so a blocking read returns EINTR. */
static void catch_sigint(int on) {
  static struct sigaction before;
  static int installed = 0;
  if (on && !installed) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &before);
    installed = 1;
  } else if (!on && installed) {
    sigaction(SIGINT, &before, NULL);
    installed = 0;
  }
}

/* Calls the function below its narg arguments with a traceback on error
** and Ctrl-C turned into an "interrupted!" error. */
static int docall(lua_State *L, int narg, int nres) {
  int status, base = lua_gettop(L) - narg;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  globalL = L;
  got_sigint = 0;
  running_lua = 1;
  catch_sigint(1);
  status = lua_pcall(L, narg, nres, base);
  catch_sigint(0);
  running_lua = 0;
  lua_sethook(L, NULL, 0, 0);   /* a Ctrl-C that came too late to fire */
  lua_remove(L, base);
  return status;
}

/* ------------------------------------------------ arguments and chunks */

/* arg: arg[0] the script, arg[1..] its arguments, negative indices the
** program and the options before the script (all of argv from 0 when
** there is no script). */
static void create_arg_table(lua_State *L, char **argv, int argc, int script) {
  int i;
  if (script == argc) script = 0;
  lua_createtable(L, argc - script - 1 > 0 ? argc - script - 1 : 0, script + 1);
  for (i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

static int dochunk(lua_State *L, int status) {
  if (status == LUA_OK) status = docall(L, 0, 0);
  return report(L, status);
}

static int dostring(lua_State *L, const char *s, const char *name) {
  return dochunk(L, luaL_loadbuffer(L, s, strlen(s), name));
}

/* -l mod, -l name=mod: global name = require(mod). Without a name the
** global is the module's last component: -l luagpu.reduce sets `reduce`. */
static int dolibrary(lua_State *L, const char *spec) {
  const char *eq = strchr(spec, '='), *mod = eq ? eq + 1 : spec;
  int status;
  lua_getglobal(L, "require");
  lua_pushstring(L, mod);
  status = docall(L, 1, 1);
  if (status == LUA_OK) {   /* stack: module */
    lua_pushglobaltable(L);
    if (eq != NULL) lua_pushlstring(L, spec, (size_t)(eq - spec));
    else lua_pushstring(L, strrchr(mod, '.') ? strrchr(mod, '.') + 1 : mod);
    lua_rotate(L, -3, -1);   /* globals, name, module */
    lua_settable(L, -3);
    lua_pop(L, 1);
  }
  return report(L, status);
}

/* Runs the script at argv[script] ("-" for stdin) with argv[script+1..]
** as its `...`. */
static int handle_script(lua_State *L, char **argv, int argc, int script) {
  const char *fname = argv[script];
  int status, i, n = argc - script - 1;
  if (strcmp(fname, "-") == 0 && strcmp(argv[script - 1], "--") != 0) fname = NULL;
  status = luaL_loadfile(L, fname);
  if (status == LUA_OK) {
    luaL_checkstack(L, n, "too many arguments to script");
    for (i = 1; i <= n; i++) lua_pushstring(L, argv[script + i]);
    status = docall(L, n, 0);
  }
  return report(L, status);
}

/* LUAGPU_INIT, else LUA_INIT_5_4, else LUA_INIT: code, or @file to run. */
static int handle_init(lua_State *L) {
  static const char *const names[] = {"LUAGPU_INIT", "LUA_INIT_5_4", "LUA_INIT", NULL};
  const char *init = NULL, *name = NULL;
  int i;
  for (i = 0; names[i] != NULL && init == NULL; i++) init = getenv(name = names[i]);
  if (init == NULL) return LUA_OK;
  if (init[0] == '@') return dochunk(L, luaL_loadfile(L, init + 1));
  {
    char chunkname[32];
    snprintf(chunkname, sizeof chunkname, "=%s", name);
    return dostring(L, init, chunkname);
  }
}

/* ------------------------------------------------ usage, -v, --devices */

static void print_usage(FILE *f) {
  fputs(
    "usage: " PROGNAME " [options] [script [args]]\n"
    "Available options are:\n"
    "  -e stat    run the Lua code 'stat'\n"
    "  -i         enter the REPL after running the script\n"
    "  -l mod     require library 'mod' into a global named after its last part\n"
    "  -l g=mod   require library 'mod' into global 'g'\n"
    "  -v         show version information, and say which builds take over a second\n"
    "  -E         ignore environment variables (LUAGPU_INIT, LUA_INIT, LUA_PATH, ...)\n"
    "  -W         turn warnings on\n"
    "  --devices  list the OpenCL platforms and devices, then exit\n"
    "  --doctor   check the OpenCL installation, say what is wrong and the fix\n"
    "  --trace f  record every command; write f (Chrome JSON, or SVG for f.svg)\n"
    "  --precompile f.cl ...  build the files for every device into the program cache\n"
    "  --help     show this help, then exit\n"
    "  --         stop handling options\n"
    "  -          run stdin as a script and stop handling options\n"
    "With no script, -e or -v it starts a REPL. The global `gpu` is the luagpu\n"
    "module; $LUAGPU_DEVICE picks the default device of gpu.device().\n", f);
  fflush(f);
}

/* "luagpu 0.1.0 (Lua 5.4.6, OpenCL 1.2 API)" and what follows, on f: the OpenCL
** version is the API luagpu is built against; a platform may offer more. */
static void print_version(lua_State *L, FILE *f, const char *more) {
  lua_getglobal(L, "gpu");
  lua_getfield(L, -1, "version");
  fprintf(f, "%s %s (%s, OpenCL %d.%d API)%s\n", PROGNAME,
          lua_isstring(L, -1) ? lua_tostring(L, -1) : LG_VERSION, LUA_RELEASE,
          CL_TARGET_OPENCL_VERSION / 100, CL_TARGET_OPENCL_VERSION % 100 / 10, more);
  fflush(f);
  lua_pop(L, 2);
}

/* The program's Lua half (host/main.lua, doctor.lua, help.lua, embedded:
** build/main_lua.c): each file a table, made on first use (run with the
** program's name, the probes and help.lua's table) and kept in the
** registry. Pushes field name of file's table (the table itself when name
** is NULL), or returns an error status with the message pushed. */
extern const lg_EmbeddedFile lg_embedded_main[];
#define MAIN_LUA_KEY "luagpu.main_lua"

static int push_part(lua_State *L, const char *file, const char *name) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, MAIN_LUA_KEY);
  if (lua_getfield(L, -1, file) != LUA_TTABLE) {
    const lg_EmbeddedFile *e = lg_embedded_main;
    char chunkname[64];
    int status;
    lua_pop(L, 1);
    while (e->name != NULL && strcmp(e->name, file) != 0) e++;
    if (e->name == NULL) {
      lua_pop(L, 1);
      lua_pushfstring(L, "%s is not built in", file);
      return LUA_ERRRUN;
    }
    snprintf(chunkname, sizeof chunkname, "=[luagpu %s]", file);
    status = luaL_loadbuffer(L, e->text, strlen(e->text), chunkname);
    if (status == LUA_OK) {
      lua_pushstring(L, PROGNAME);
      lg_push_probes(L);
      if (strcmp(file, "help.lua") == 0) lua_pushnil(L);
      else status = push_part(L, "help.lua", NULL);
      if (status == LUA_OK) status = lua_pcall(L, 3, 1, 0);
      else lua_replace(L, -4);   /* the error where the function was */
    }
    if (status != LUA_OK) { lua_remove(L, -2); return status; }
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, file);
  }
  if (name != NULL) {
    lua_getfield(L, -1, name);
    lua_remove(L, -2);
  }
  lua_remove(L, -2);
  return LUA_OK;
}

static int push_main_lua(lua_State *L, const char *name) {
  return push_part(L, "main.lua", name);
}

/* Runs function name of file with the module; returns the exit status it
** returns (--devices, --doctor). */
static int run_part(lua_State *L, const char *file, const char *name) {
  int status = push_part(L, file, name);
  if (status == LUA_OK) {
    lua_getglobal(L, "gpu");
    status = docall(L, 1, 1);
  }
  if (report(L, status) != LUA_OK) return EXIT_FAILURE;
  status = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return status;
}

/* ------------------------------------------------------------- printer */

/* Prints the n values on top of the stack (and pops them). */
static void print_results(lua_State *L, int n) {
  int status;
  if (n == 0) return;
  if (push_main_lua(L, "printer") != LUA_OK) lua_pushnil(L);   /* docall reports it */
  lua_insert(L, -n - 1);
  status = docall(L, n, 1);
  if (status == LUA_OK) {
    size_t len;
    const char *s = luaL_tolstring(L, -1, &len);
    fwrite(s, 1, len, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    lua_pop(L, 2);
  } else {
    lua_pushfstring(L, "error printing the results (%s)", lua_tostring(L, -1));
    lua_remove(L, -2);
    report(L, status);
  }
}

/* ---------------------------------------------------- reading the input */

static int stdin_tty = 0;
static int line_editing = 0;   /* readline reads the lines (lineedit.c) */


/* Pushes the next line (without its newline). Returns 1, 0 at end of
** input, or -1 when Ctrl-C abandoned the line. */
static int push_line(lua_State *L, int first) {
  char *line = NULL;
  size_t len;
  if (stdin_tty) {
    const char *prompt = first ? "gpu> " : ">> ";
    if (line_editing) {
      int interrupted = 0;
      line = lg_line_read(prompt, &interrupted);
      if (line == NULL) return interrupted ? -1 : 0;
      lua_pushstring(L, line);
      free(line);
      return 1;
    }
    fputs(prompt, stdout);
    fflush(stdout);
  }
  {
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) { free(line); return 0; }
    len = (size_t)n;
    if (len > 0 && line[len - 1] == '\n') len--;
    lua_pushlstring(L, line, len);
    free(line);
    return 1;
  }
}

/* ------------------------------------------------------------- the REPL */

/* True when the load error on top means the chunk is only unfinished. */
static int incomplete(lua_State *L, int status) {
  size_t len;
  const char *msg = lua_tolstring(L, -1, &len);
  return status == LUA_ERRSYNTAX && len >= 5 && strcmp(msg + len - 5, "<eof>") == 0;
}

/* Compiles the code on top (a Lua string: it may hold NUL bytes) as
** "return code" (an expression, whose values print), else as statements.
** An expression runs as "return select(1, code)": the same values, but
** its calls are no tail calls, so an error a helper raises names the
** line (stdin:1:) of the call, whose frame a tail call had replaced.
** Pushes the function and returns LUA_OK, or pushes the error and returns
** its status; *more says that reading on may help. */
static int compile(lua_State *L, int *more) {
  int status, ret_more;
  size_t len;
  const char *code = lua_tolstring(L, -1, &len);
  lua_pushliteral(L, "return ");
  lua_pushvalue(L, -2);
  lua_concat(L, 2);
  status = luaL_loadbuffer(L, lua_tostring(L, -1), lua_rawlen(L, -1), "=stdin");
  lua_remove(L, -2);
  if (status == LUA_OK) {
    /* ")" on the code's last line (an error's line is where its operand
    ** was loaded, which a ")" on a line of its own would be), else after
    ** a line break (the code ends in a -- comment) */
    static const char *const close[] = {")", "\n)"};
    int k;
    for (k = 0; k < 2; k++) {
      lua_pushliteral(L, "return select(1, ");
      lua_pushvalue(L, -3);
      lua_pushstring(L, close[k]);
      lua_concat(L, 3);
      if (luaL_loadbuffer(L, lua_tostring(L, -1), lua_rawlen(L, -1), "=stdin") == LUA_OK) {
        lua_remove(L, -2);             /* the select form's text */
        lua_remove(L, -2);             /* the plain form's function */
        return LUA_OK;
      }
      lua_pop(L, 2);                   /* its error and text */
    }
    return LUA_OK;                     /* the plain form */
  }
  ret_more = incomplete(L, status);
  lua_pop(L, 1);
  status = luaL_loadbuffer(L, code, len, "=stdin");
  *more = status != LUA_OK && (ret_more || incomplete(L, status));
  return status;
}

/* Reads lines until they make a chunk: pushes its function and returns
** LUA_OK, or pushes a load error and returns its status; returns -1 at end
** of input and -2 after Ctrl-C, pushing nothing. */
static int read_chunk(lua_State *L) {
  int r = push_line(L, 1), status, more = 0;
  if (r <= 0) return r - 1;
  for (;;) {
    status = compile(L, &more);
    if (status == LUA_OK || !more) break;
    r = push_line(L, 0);
    if (r <= 0) {   /* end of input inside a chunk: report its error */
      if (r == 0) { lua_remove(L, -2); return status; }
      lua_pop(L, 2);
      return -2;
    }
    lua_remove(L, -2);   /* the error */
    lua_pushliteral(L, "\n");
    lua_insert(L, -2);
    lua_concat(L, 3);
  }
  if (line_editing) lg_line_history_add(lua_tostring(L, -2));
  lua_remove(L, -2);   /* the code */
  return status;
}

/* help([v]): prints main.lua's help(v), whose function is upvalue 1. */
static int help(lua_State *L) {
  lua_settop(L, 1);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, 1, 1);
  puts(luaL_checkstring(L, -1));
  fflush(stdout);
  return 0;
}

/* The banner: version and default device (or why there is none). */
static void print_banner(lua_State *L, FILE *f) {
  print_version(L, f, "  help() for help, Ctrl-D exits");
  if (push_main_lua(L, "banner") == LUA_OK) {
    lua_getglobal(L, "gpu");
    if (docall(L, 1, 1) == LUA_OK) fprintf(f, "%s\n", lua_tostring(L, -1));
  }
  lua_pop(L, 1);
  fflush(f);
}

/* While the REPL runs code, waits on commands poll this: after a Ctrl-C it
** stops the hook the signal set (the wait raises instead) and says so. */
static int wait_interrupted(void) {
  if (!got_sigint || globalL == NULL) return 0;
  lua_sethook(globalL, NULL, 0, 0);
  got_sigint = 0;
  return 1;
}

static void say(const char *msg) { message(msg); }

static int sigint_seen(void) { return got_sigint; }

/* At the end of the REPL: waits for the commands still running, saying so
** when that takes a while; Ctrl-C ends the program at once (the commands
** are abandoned: lua_close would wait for them). */
static void finish_all(lua_State *L) {
  const char *oldprogname = progname;
  int stopped;
  progname = PROGNAME;
  got_sigint = 0;
  catch_sigint(1);
  stopped = lg_finish_all(L, sigint_seen, say);
  catch_sigint(0);
  if (stopped) {
    message("interrupted: exiting without waiting for the commands");
    _exit(130);
  }
  progname = oldprogname;
}

/* The REPL: on a terminal with prompts, line editing and history; fed
** through a pipe, without prompts but with the results printed. */
static void repl(lua_State *L) {
  int status;
  const char *oldprogname = progname;
  stdin_tty = isatty(fileno(stdin));
  progname = NULL;
  print_banner(L, stdin_tty ? stdout : stderr);
  line_editing = stdin_tty && lg_line_start(L, push_main_lua);
  if (push_main_lua(L, "help") == LUA_OK) lua_pushcclosure(L, help, 1);
  lua_setglobal(L, "help");   /* nil (no help) if main.lua failed */
  if (push_main_lua(L, "start") == LUA_OK) report(L, docall(L, 0, 0));   /* `dev` */
  else lua_pop(L, 1);
  lg_state(L)->wait_interrupted = wait_interrupted;
  lg_state(L)->compile_notice = 1;
  while ((status = read_chunk(L)) != -1) {
    if (status == -2) continue;   /* Ctrl-C at the prompt: a fresh one */
    if (status == LUA_OK) {
      int base = lua_gettop(L) - 1;
      status = docall(L, 0, LUA_MULTRET);
      fflush(stdout);
      if (status == LUA_OK) print_results(L, lua_gettop(L) - base);
    }
    report(L, status);
  }
  lg_state(L)->wait_interrupted = NULL;
  if (stdin_tty) fputs("\n", stdout);
  fflush(stdout);
  progname = oldprogname;
  finish_all(L);
}

/* ----------------------------------------------------------------- main */

enum { HAS_E = 1, HAS_I = 2, HAS_V = 4, HAS_BIG_E = 8, HAS_W = 16, HAS_DEVICES = 32,
       HAS_HELP = 64, HAS_DOCTOR = 128, HAS_TRACE = 256, HAS_PRECOMPILE = 512 };

/* Scans the options: returns the flags, with *script set to the index of
** the script (argc when none), or -1 with *bad the offending index. */
static int collect_args(char **argv, int argc, int *script, int *bad) {
  int flags = 0, i;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    *bad = i;
    if (a[0] != '-' || strcmp(a, "-") == 0) break;           /* the script */
    if (strcmp(a, "--") == 0) { i++; break; }
    if (strcmp(a, "--devices") == 0) flags |= HAS_DEVICES;
    else if (strcmp(a, "--doctor") == 0) flags |= HAS_DOCTOR;
    else if (strcmp(a, "--precompile") == 0) flags |= HAS_PRECOMPILE;
    else if (strcmp(a, "--trace") == 0) {
      flags |= HAS_TRACE;
      if (++i >= argc || argv[i][0] == '-') return -1;   /* no file: an option, or none */
    }
    else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) flags |= HAS_HELP;
    else if (strcmp(a, "-i") == 0) flags |= HAS_I;
    else if (strcmp(a, "-v") == 0) flags |= HAS_V;
    else if (strcmp(a, "-E") == 0) flags |= HAS_BIG_E;
    else if (strcmp(a, "-W") == 0) flags |= HAS_W;
    else if (a[1] == 'e' || a[1] == 'l') {
      if (a[1] == 'e') flags |= HAS_E;
      if (a[2] == '\0' && (++i >= argc || argv[i][0] == '-')) return -1;   /* no argument */
    }
    else return -1;
  }
  *script = i < argc ? i : argc;
  return flags;
}

/* Runs the -e and -l options in order. */
static int run_args(lua_State *L, char **argv, int script) {
  int i;
  for (i = 1; i < script; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--trace") == 0) i++;
    else if ((a[1] == 'e' || a[1] == 'l') && a[0] == '-') {
      const char *v = a[2] != '\0' ? a + 2 : argv[++i];
      if ((a[1] == 'e' ? dostring(L, v, "=(command line)") : dolibrary(L, v)) != LUA_OK)
        return 0;
    }
  }
  return 1;
}

/* --precompile FILE...: main.lua's precompile with the files (the
** arguments from the script's place on); returns the exit status. */
static int precompile(lua_State *L, char **argv, int argc, int first) {
  int status, i;
  if (first >= argc) {
    fprintf(stderr, PROGNAME ": '--precompile' needs a file (kernels.cl ...)\n");
    return EXIT_FAILURE;
  }
  status = push_main_lua(L, "precompile");
  if (status == LUA_OK) {
    lua_getglobal(L, "gpu");
    lua_createtable(L, argc - first, 0);
    for (i = first; i < argc; i++) {
      lua_pushstring(L, argv[i]);
      lua_rawseti(L, -2, i - first + 1);
    }
    status = docall(L, 2, 1);
  }
  if (report(L, status) != LUA_OK) return EXIT_FAILURE;
  status = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return status;
}

/* --trace FILE: the FILE (the last one given before the script). */
static const char *trace_path(char **argv, int script) {
  const char *path = NULL;
  int i;
  for (i = 1; i + 1 < script; i++)
    if (strcmp(argv[i], "--trace") == 0) path = argv[++i];
  return path;
}

/* gpu.trace(arg): "true" starts the trace, a path stops it and writes it
** there. Reports an error (its message alone: the script's line means
** nothing here). */
static int trace(lua_State *L, const char *arg) {
  lua_getglobal(L, "gpu");
  lua_getfield(L, -1, "trace");
  lua_remove(L, -2);
  if (strcmp(arg, "true") == 0) lua_pushboolean(L, 1);
  else lua_pushstring(L, arg);
  return report(L, lua_pcall(L, 1, 0, 0));
}

/* Refuses a --trace file that must not be written (a script, a file that
** is no trace, a link, a folder) before anything runs. Reports an error. */
static int check_trace(lua_State *L, const char *path) {
  lua_pushcfunction(L, lg_trace_check_path);
  lua_pushstring(L, path);
  return report(L, lua_pcall(L, 1, 0, 0));
}

/* Everything runs in protected mode: argc and argv come as light userdata
** pointers; returns the exit status. */
static int pmain(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = (char **)lua_touserdata(L, 2);
  int script, bad = 0;
  int flags = collect_args(argv, argc, &script, &bad);
  if (flags < 0) {
    const char *a = argv[bad];
    if (strcmp(a, "--trace") == 0 && bad + 1 < argc)   /* the script or an option next */
      fprintf(stderr, PROGNAME ": '--trace' needs a file name before the script or option, "
              "got '%s' (name a file that starts with '-' as ./%s)\n", argv[bad + 1],
              argv[bad + 1]);
    else if (a[1] == 'e' || a[1] == 'l' || strcmp(a, "--trace") == 0)
      fprintf(stderr, PROGNAME ": '%s' needs an argument\n", a);
    else fprintf(stderr, PROGNAME ": unrecognized option '%s'\n", a);
    print_usage(stderr);
    lua_pushinteger(L, EXIT_FAILURE);
    return 1;
  }
  if (flags & HAS_HELP) {
    print_usage(stdout);
    lua_pushinteger(L, EXIT_SUCCESS);
    return 1;
  }
  if (flags & HAS_BIG_E) {   /* package.path and cpath then ignore LUA_PATH... */
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  }
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_luagpu);
  lua_setfield(L, -2, "luagpu");
  lua_pop(L, 1);
  create_arg_table(L, argv, argc, script);
  if (flags & HAS_W) lua_warning(L, "@on", 0);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "luagpu");
  if (report(L, docall(L, 1, 1)) != LUA_OK) {
    lua_pushinteger(L, EXIT_FAILURE);
    return 1;
  }
  lua_setglobal(L, "gpu");
  /* Lua's generational collector, and the tensor pool told so: a loop's
  ** dead results are found by minor collections (core/pool.lua) */
  lua_gc(L, LUA_GCGEN, 0, 0);
  if (luaL_dostring(L, "require('luagpu.core.pool').generational = true") != LUA_OK)
    lua_pop(L, 1);
  if (flags & HAS_PRECOMPILE) {
    lua_pushinteger(L, precompile(L, argv, argc, script));
    return 1;
  }
  if (flags & (HAS_DEVICES | HAS_DOCTOR)) {
    lua_pushinteger(L, flags & HAS_DOCTOR ? run_part(L, "doctor.lua", "run")
                                          : run_part(L, "main.lua", "devices"));
    return 1;
  }
  if (flags & HAS_V) {   /* and the notice of slow builds (the REPL gives it too) */
    print_version(L, stdout, "");
    lg_state(L)->compile_notice = 1;
  }
  if (flags & HAS_TRACE) {
    if (check_trace(L, trace_path(argv, script)) != LUA_OK) {
      lua_pushinteger(L, EXIT_FAILURE);
      return 1;
    }
    trace(L, "true");
  }
  if ((!(flags & HAS_BIG_E) && handle_init(L) != LUA_OK) || !run_args(L, argv, script) ||
      (script < argc && handle_script(L, argv, argc, script) != LUA_OK)) {
    if (flags & HAS_TRACE) trace(L, trace_path(argv, script));
    lua_pushinteger(L, EXIT_FAILURE);
    return 1;
  }
  if ((flags & HAS_I) || (script == argc && !(flags & (HAS_E | HAS_V))))
    repl(L);   /* the trace covers the session too: written when it ends */
  if ((flags & HAS_TRACE) && trace(L, trace_path(argv, script)) != LUA_OK) {
    lua_pushinteger(L, EXIT_FAILURE);
    return 1;
  }
  lua_pushinteger(L, EXIT_SUCCESS);
  return 1;
}

/* A failed run in a job of several MPI ranks (a script that required
** luagpu.mpi) ends the whole job: the other ranks would otherwise wait for
** this one for ever, in a collective or in MPI's own finalization. */
static void abort_mpi_job(lua_State *L) {
  /* no package table yet when the options were refused */
  if (lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE) == LUA_TTABLE &&
      lua_getfield(L, -1, "luagpu_mpi") == LUA_TTABLE &&
      lua_getfield(L, -1, "abort") == LUA_TFUNCTION) {
    lua_pushinteger(L, 1);
    lua_pcall(L, 1, 0, 0);
  }
  lua_settop(L, 0);
}

int main(int argc, char **argv) {
  int status, result = EXIT_FAILURE;
  lua_State *L = luaL_newstate();
  if (L == NULL) {
    message("cannot create state: not enough memory");
    return EXIT_FAILURE;
  }
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  status = lua_pcall(L, 2, 1, 0);
  if (status == LUA_OK) result = (int)lua_tointeger(L, -1);
  else report(L, status);
  if (result != EXIT_SUCCESS) abort_mpi_job(L);
  lua_close(L);
  return result;
}
