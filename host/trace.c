/*
** trace.c: the command trace behind gpu.trace and `luagpu --trace`. While
** tracing is on in a Lua state, every enqueueing call (call.c, transfer.c, sync.c)
** hands its command here: the cl_event (retained), the queue (retained), the
** kind, kernel name, sizes, bytes, wait list and the Lua file:line of the
** user's code that enqueued it. gpu.trace(false) waits for the recorded
** commands, reads their profiling timestamps and returns the record as Lua
** tables; luagpu.trace (lua/luagpu/trace.lua) writes it as Chrome
** trace-event JSON or an SVG timeline. When tracing is off the enqueue paths
** pay one test of the state's trace_on. The record belongs to the Lua state
** (lg_State): states trace independently.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define MAX_RECORDS ((size_t)1 << 20)

typedef struct lg_TraceRecord {
  cl_event ev;
  cl_command_queue q;
  char kind[12];               /* "kernel", "write", "read", "fill", "copy", "marker", ... */
  char name[64];               /* the kernel's name, else "" */
  char where[160];             /* "file.lua:12" */
  cl_uint dims;
  size_t global[3], local[3];  /* local[0] == 0: none given */
  size_t bytes;
  cl_ulong host_ns;            /* CLOCK_MONOTONIC at the enqueue */
  size_t wait0;                /* its wait list: waits[wait0 .. wait0 + nwait - 1] of the state */
  cl_uint nwait;
} Record;

typedef struct lg_TraceBuild {
  char name[64];               /* the program's file or first kernel */
  char where[160];             /* "file.lua:12" */
  cl_ulong t0_ns, t1_ns;       /* CLOCK_MONOTONIC */
} Build;

cl_ulong lg_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (cl_ulong)ts.tv_sec * 1000000000u + (cl_ulong)ts.tv_nsec;
}
#define now_ns lg_now_ns

/* Lets the record go. */
static void trace_clear(lg_State *s) {
  size_t i;
  for (i = 0; i < s->nrecords; i++) {
    clReleaseEvent(s->records[i].ev);
    clReleaseCommandQueue(s->records[i].q);
  }
  for (i = 0; i < s->nwaits; i++) clReleaseEvent(s->waits[i]);
  free(s->records);
  free(s->waits);
  free(s->builds);
  s->records = NULL;
  s->waits = NULL;
  s->builds = NULL;
  s->nrecords = s->cap = s->dropped = s->nwaits = s->capwaits = 0;
  s->nbuilds = s->capbuilds = 0;
}

/* At lua_close (a close hook of the state's): a trace still recording lets
** its events and queues go. */
static void trace_close(lg_State *s) {
  s->trace_on = 0;
  trace_clear(s);
}

int lg_tracing(lua_State *L) { return lg_state(L)->trace_on; }

/* Room for one more record and nwait more waits; 0 when there is none. */
static int reserve(lg_State *s, cl_uint nwait) {
  if (s->nrecords == s->cap) {
    size_t ncap = s->cap == 0 ? 256 : s->cap * 2;
    Record *nr = ncap <= MAX_RECORDS ? realloc(s->records, ncap * sizeof *nr) : NULL;
    if (nr == NULL) return 0;
    s->records = nr;
    s->cap = ncap;
  }
  if (nwait > s->capwaits - s->nwaits) {
    size_t ncap = s->capwaits == 0 ? 256 : s->capwaits;
    cl_event *nw;
    while (ncap - s->nwaits < nwait && ncap <= MAX_RECORDS * 64) ncap *= 2;
    nw = ncap - s->nwaits >= nwait ? realloc(s->waits, ncap * sizeof *nw) : NULL;
    if (nw == NULL) return 0;
    s->waits = nw;
    s->capwaits = ncap;
  }
  return 1;
}

void lg_trace_add(lua_State *L, cl_command_queue q, cl_event ev, const char *kind,
                  const char *name, cl_uint dims, const size_t *global, const size_t *local,
                  size_t bytes, cl_uint nwait, const cl_event *wait) {
  lg_State *s = lg_state(L);
  Record *r;
  cl_uint i;
  if (ev == NULL || q == NULL) return;
  if (!reserve(s, nwait)) {
    s->dropped++;
    return;
  }
  r = &s->records[s->nrecords++];
  memset(r, 0, sizeof *r);
  clRetainEvent(ev);
  clRetainCommandQueue(q);
  r->ev = ev;
  r->q = q;
  r->host_ns = now_ns();
  snprintf(r->kind, sizeof r->kind, "%s", kind);
  snprintf(r->name, sizeof r->name, "%s", name != NULL ? name : "");
  lg_lua_where(L, r->where, sizeof r->where);
  r->dims = dims > 3 ? 3 : dims;
  for (i = 0; i < r->dims; i++) {
    r->global[i] = global[i];
    r->local[i] = local != NULL ? local[i] : 0;
  }
  r->bytes = bytes;
  r->wait0 = s->nwaits;
  r->nwait = nwait;
  for (i = 0; i < nwait; i++) {
    clRetainEvent(wait[i]);
    s->waits[s->nwaits++] = wait[i];
  }
}

void lg_trace_build(lua_State *L, const char *name, cl_ulong t0_ns, cl_ulong t1_ns) {
  lg_State *s = lg_state(L);
  Build *b;
  if (!s->trace_on) return;
  if (s->nbuilds == s->capbuilds) {
    size_t ncap = s->capbuilds == 0 ? 16 : s->capbuilds * 2;
    Build *nb = ncap <= MAX_RECORDS ? realloc(s->builds, ncap * sizeof *nb) : NULL;
    if (nb == NULL) return;            /* the picture lacks a mark, nothing else */
    s->builds = nb;
    s->capbuilds = ncap;
  }
  b = &s->builds[s->nbuilds++];
  snprintf(b->name, sizeof b->name, "%s", name != NULL ? name : "a program");
  lg_lua_where(L, b->where, sizeof b->where);
  b->t0_ns = t0_ns;
  b->t1_ns = t1_ns;
}

/* ------------------------------------------------------ the record in Lua */

static void set_int(lua_State *L, const char *k, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

static void set_sizes(lua_State *L, const char *k, const size_t *s, cl_uint n) {
  cl_uint i;
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)s[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, k);
}

/* Pushes the name of the device of q. */
static void push_device_name(lua_State *L, cl_command_queue q) {
  cl_device_id d = NULL;
  char name[256] = "";
  if (clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof d, &d, NULL) == CL_SUCCESS)
    clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
  name[sizeof name - 1] = '\0';
  lua_pushstring(L, name);
}

static cl_int exec_status(cl_event ev) {
  cl_int st = CL_COMPLETE;
  cl_int err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
  return err != CL_SUCCESS ? err : st;
}

/* The index of the record of ev before record i; i when there is none. */
static size_t record_of(const lg_State *s, cl_event ev, size_t i) {
  size_t j;
  for (j = i; j-- > 0;)
    if (s->records[j].ev == ev) return j;
  return i;
}

/* Record i as a table: {seq, queue, device, kind, name, global, local,
** bytes, where, host, queued, submit, start, end, waits, status}. A record
** not pending is waited for; a pending one has no device times. */
static void push_record(lua_State *L, const lg_State *s, size_t i, size_t qn, int pending) {
  static const cl_profiling_info what[4] = {
    CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
    CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END
  };
  static const char *const names[4] = {"queued", "submit", "start", "end"};
  const Record *r = &s->records[i];
  cl_int st = CL_COMPLETE;
  cl_uint w;
  int k;
  if (!pending) {
    clWaitForEvents(1, &r->ev);
    st = exec_status(r->ev);
  }
  lua_createtable(L, 0, 16);
  set_int(L, "seq", (lua_Integer)i + 1);
  set_int(L, "queue", (lua_Integer)qn + 1);
  push_device_name(L, r->q);
  lua_setfield(L, -2, "device");
  lua_pushstring(L, r->kind);
  lua_setfield(L, -2, "kind");
  lua_pushstring(L, r->name[0] != '\0' ? r->name : r->kind);
  lua_setfield(L, -2, "name");
  if (r->dims > 0) {
    set_sizes(L, "global", r->global, r->dims);
    if (r->local[0] != 0) set_sizes(L, "local", r->local, r->dims);
  }
  set_int(L, "bytes", (lua_Integer)r->bytes);
  lua_pushstring(L, r->where);
  lua_setfield(L, -2, "where");
  set_int(L, "host", (lua_Integer)r->host_ns);
  lua_pushstring(L, pending ? "pending" : st == CL_COMPLETE ? "complete" : "error");
  lua_setfield(L, -2, "status");
  for (k = 0; k < 4 && !pending; k++) {
    cl_ulong t = 0;
    if (clGetEventProfilingInfo(r->ev, what[k], sizeof t, &t, NULL) != CL_SUCCESS) break;
    set_int(L, names[k], (lua_Integer)t);
  }
  lua_newtable(L);
  for (w = 0, k = 0; w < r->nwait; w++) {   /* the earlier records it waited for */
    size_t j = record_of(s, s->waits[r->wait0 + w], i);
    if (j < i) {
      lua_pushinteger(L, (lua_Integer)j + 1);
      lua_rawseti(L, -2, ++k);
    }
  }
  lua_setfield(L, -2, "waits");
}

/* Waits for the recorded commands and pushes the record: a list of tables
** (push_record), with n = its length, dropped = the commands not kept
** (past 2^20 or out of memory) and builds = the programs built from source
** meanwhile ({name, where, host, host_end}). Clears the trace. While a user event of the
** state's is unset nothing is waited for: a command not yet done may wait
** for it, directly or through commands the record never saw (one enqueued
** before gpu.trace(true) ahead of it on an in-order queue), and only the
** script can set it; a command not done then is recorded "pending". */
static void push_trace(lua_State *L) {
  lg_State *s = lg_state(L);
  size_t i, j, nq = 0, n = s->nrecords;
  cl_command_queue *queues = malloc((n + 1) * sizeof *queues);
  size_t *qn = malloc((n + 1) * sizeof *qn);
  int gated = lg_user_events_unset(L) > 0;
  if (queues == NULL || qn == NULL) {
    free(queues);
    free(qn);
    trace_clear(s);
    luaL_error(L, "luagpu: gpu.trace: out of memory");
  }
  for (i = 0; i < n; i++) {           /* queues numbered in order of first use */
    for (j = 0; j < nq && queues[j] != s->records[i].q; j++) {}
    if (j == nq) {
      queues[nq++] = s->records[i].q;
      clFlush(s->records[i].q);
    }
    qn[i] = j;
  }
  lua_createtable(L, (int)(n < 1000000 ? n : 1000000), 2);
  for (i = 0; i < n; i++) {
    push_record(L, s, i, qn[i], gated && exec_status(s->records[i].ev) > CL_COMPLETE);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  set_int(L, "n", (lua_Integer)n);
  set_int(L, "dropped", (lua_Integer)s->dropped);
  lua_createtable(L, (int)(s->nbuilds < 1000 ? s->nbuilds : 1000), 0);
  for (i = 0; i < s->nbuilds; i++) {   /* builds: {name, where, host, host_end} */
    lua_createtable(L, 0, 4);
    lua_pushstring(L, s->builds[i].name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, s->builds[i].where);
    lua_setfield(L, -2, "where");
    set_int(L, "host", (lua_Integer)s->builds[i].t0_ns);
    set_int(L, "host_end", (lua_Integer)s->builds[i].t1_ns);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "builds");
  free(queues);
  free(qn);
  trace_clear(s);
}

/* ----------------------------------------------------- the trace's file */

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail), i;
  if (n < m) return 0;
  for (i = 0; i < m; i++)
    if ((s[n - m + i] | 0x20) != tail[i]) return 0;
  return 1;
}

/* Whether the regular file at path is empty or starts as a trace of ours. */
static int looks_like_trace(const char *path) {
  static const char *const heads[] = {
    "{\"displayTimeUnit\"", "<svg xmlns=\"http://www.w3.org/2000/svg\"", NULL
  };
  char head[64];
  ssize_t got;
  int i, fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return 0;
  got = read(fd, head, sizeof head - 1);
  close(fd);
  if (got < 0) return 0;
  head[got] = '\0';
  if (got == 0) return 1;
  for (i = 0; heads[i] != NULL; i++)
    if (strncmp(head, heads[i], strlen(heads[i])) == 0) return 1;
  return 0;
}

/* trace_file.check(path [, fn]): raises unless a trace may be written at
** path: refused are a name ending in .lua, a symbolic link (but one to an
** open file of the process's, /dev/stdout), a folder, and a file that is
** neither empty nor a trace of ours. Returns true when the trace is
** written straight into path (a device or pipe, /dev/stdout),
** false when through a new file renamed over it. */
static int tf_check(lua_State *L) {
  const char *fn = luaL_optstring(L, 2, "trace.write");
  const char *path = (luaL_checkstring(L, 1), lg_path(L, 1, 1, fn));
  struct stat st;
  if (path[0] == '\0') return lg_error(L, fn, "expected a file path, got an empty string");
  if (ends_with(path, ".lua"))
    return lg_error(L, fn, "refusing to write a trace over %s (a Lua script): give the "
                    "trace its own file (out.json, or out.svg)", path);
  if (lstat(path, &st) != 0) {
    if (errno == ENOENT) {            /* a new file: its folder must take it */
      const char *slash = strrchr(path, '/');
      const char *dir = slash == NULL ? "." : slash == path ? "/"
                        : lua_pushlstring(L, path, (size_t)(slash - path));
      if (access(dir, W_OK | X_OK) != 0)
        return lg_error(L, fn, "cannot write %s: %s", path, strerror(errno));
      lua_pushboolean(L, 0);
      return 1;
    }
    return lg_error(L, fn, "cannot write %s: %s", path, strerror(errno));
  }
  if (S_ISLNK(st.st_mode)) {
    if (lg_save_is_stream(path)) {    /* /dev/stdout: written in place, a pipe or a file */
      lua_pushboolean(L, 1);
      return 1;
    }
    return lg_error(L, fn, "refusing to write a trace through the symbolic link %s: give "
                    "the file itself", path);
  }
  if (S_ISDIR(st.st_mode)) return lg_error(L, fn, "cannot write %s: it is a folder", path);
  if (S_ISREG(st.st_mode)) {
    if (!looks_like_trace(path))
      return lg_error(L, fn, "refusing to overwrite %s: it is not a trace luagpu wrote "
                      "(give a new file, such as out.json)", path);
    lua_pushboolean(L, 0);
    return 1;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* trace_file.write(path, text [, direct [, fn]]): writes text at path as
** lg_save_open does: a regular file (or a new one) through a new file of
** the same folder, renamed over path once all is written, so that path is
** never truncated before the record is ready; a device or pipe in place
** (direct, check's answer, is what lg_save_open finds again), a FIFO only
** while a reader has it open. Raises naming path and the system's reason
** on any failed write, close or rename. */
static int tf_write(lua_State *L) {
  const char *fn = luaL_optstring(L, 4, "trace.write");
  const char *path = (luaL_checkstring(L, 1), lg_path(L, 1, 1, fn));
  size_t len;
  const char *text = luaL_checklstring(L, 2, &len);
  lg_SaveFile save;
  /* without a wait for a reader: a FIFO nobody reads hung here for ever */
  if (!lg_save_open(&save, path, LG_SAVE_NOWAIT)) {
    if (errno == ENXIO)
      return lg_error(L, fn, "cannot write %s: no process reads the FIFO (start its reader "
                      "first)", path);
    return lg_error(L, fn, "cannot write %s: %s", path, lg_save_why(&save, errno));
  }
  if (!lg_save_close(&save, lg_save_write(&save, text, len)))
    return lg_error(L, fn, "cannot write %s: %s", path, strerror(errno));
  return 0;
}

/* Raises unless a trace may be written at the path at index 1 (the
** program's --trace checks its file before the script runs). */
int lg_trace_check_path(lua_State *L) {
  lua_settop(L, 1);
  lua_pushliteral(L, "--trace");
  return tf_check(L);
}

/* gpu.trace(true): starts recording (dropping an earlier record);
** gpu.trace(false): stops and returns the record; gpu.trace(path): checks
** path, stops and writes it (the Lua hook write_trace, luagpu.trace's
** writer: Chrome JSON, or SVG for a path ending in .svg), and returns it. */
static int mod_trace(lua_State *L) {
  lg_State *s = lg_state(L);
  int t = lua_type(L, 1);
  if (t == LUA_TBOOLEAN && lua_toboolean(L, 1)) {
    trace_clear(s);
    s->trace_on = 1;
    return 0;
  }
  if (t != LUA_TBOOLEAN && t != LUA_TSTRING)
    return lg_argerror(L, "gpu.trace", 1, "expected true, false or a file path, got %s",
                       luaL_typename(L, 1));
  if (!s->trace_on && t == LUA_TSTRING)
    return lg_error(L, "gpu.trace", "not tracing: call gpu.trace(true) first");
  lua_settop(L, 1);
  if (t == LUA_TSTRING) {              /* a refused path leaves the trace recording */
    lua_pushcfunction(L, tf_check);
    lua_pushvalue(L, 1);
    lua_pushliteral(L, "gpu.trace");
    lua_call(L, 2, 0);
  }
  s->trace_on = 0;
  push_trace(L);
  if (t == LUA_TSTRING) {
    lg_push_luahook(L, "write_trace", "gpu.trace");   /* luagpu.trace's write */
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 1);
    lua_pushliteral(L, "gpu.trace");
    lua_call(L, 3, 0);
  }
  return 1;
}

/* gpu.tracing(): true while a trace records. */
static int mod_tracing(lua_State *L) {
  lua_pushboolean(L, lg_state(L)->trace_on);
  return 1;
}

static const luaL_Reg trace_functions[] = {
  {"trace", mod_trace}, {"tracing", mod_tracing}, {NULL, NULL}
};

static const luaL_Reg file_functions[] = {
  {"check", tf_check}, {"write", tf_write}, {NULL, NULL}
};

/* Also makes package.loaded["luagpu.trace_file"], the file half of
** luagpu.trace: check(path) and write(path, text, direct). */
void lg_open_trace(lua_State *L) {
  luaL_setfuncs(L, trace_functions, 0);
  lg_state_on_close(L, trace_close);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  luaL_newlib(L, file_functions);
  lua_setfield(L, -2, "luagpu.trace_file");
  lua_pop(L, 1);
}
