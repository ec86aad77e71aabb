/*
** trace.c: the command trace behind gpu.trace and `luagpu --trace`. While
** lg_trace_on is set, every enqueueing call (call.c, transfer.c, sync.c)
** hands its command here: the cl_event (retained), the queue (retained), the
** kind, kernel name, sizes, bytes, wait list and the Lua file:line of the
** user's code that enqueued it. gpu.trace(false) waits for the recorded
** commands, reads their profiling timestamps and returns the record as Lua
** tables; luagpu.trace (lua/luagpu/trace.lua) writes it as Chrome
** trace-event JSON or an SVG timeline. When tracing is off the enqueue paths
** pay one branch on lg_trace_on.
*/
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define MAX_WAITS 8
#define MAX_RECORDS ((size_t)1 << 20)

int lg_trace_on = 0;

typedef struct Record {
  cl_event ev;
  cl_command_queue q;
  char kind[12];               /* "kernel", "write", "read", "fill", "copy", "marker", ... */
  char name[64];               /* the kernel's name, else "" */
  char where[160];             /* "file.lua:12" */
  cl_uint dims;
  size_t global[3], local[3];  /* local[0] == 0: none given */
  size_t bytes;
  cl_ulong host_ns;            /* CLOCK_MONOTONIC at the enqueue */
  cl_uint nwait;               /* up to MAX_WAITS kept of them */
  cl_event wait[MAX_WAITS];
} Record;

static Record *records = NULL;
static size_t nrecords = 0, cap = 0, dropped = 0;

static cl_ulong now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (cl_ulong)ts.tv_sec * 1000000000u + (cl_ulong)ts.tv_nsec;
}

/* Lets every record go. */
static void clear(void) {
  size_t i;
  for (i = 0; i < nrecords; i++) {
    clReleaseEvent(records[i].ev);
    clReleaseCommandQueue(records[i].q);
  }
  free(records);
  records = NULL;
  nrecords = cap = dropped = 0;
}

/* The first caller up the stack that is not one of luagpu's own Lua
** helpers (their source names a "luagpu/" file): "file.lua:12" (the
** innermost Lua caller when all are helpers; "" when there is none). */
void lg_lua_where(lua_State *L, char *buf, size_t size) {
  lua_Debug ar;
  int level;
  buf[0] = '\0';
  for (level = 1; level < 16 && lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
    if (buf[0] == '\0' || strstr(ar.source, "luagpu/") == NULL) {
      snprintf(buf, size, "%s:%d", ar.short_src, ar.currentline);
      if (strstr(ar.source, "luagpu/") == NULL) return;
    }
  }
}

void lg_trace_add(lua_State *L, cl_command_queue q, cl_event ev, const char *kind,
                  const char *name, cl_uint dims, const size_t *global, const size_t *local,
                  size_t bytes, cl_uint nwait, const cl_event *wait) {
  Record *r;
  cl_uint i;
  if (ev == NULL || q == NULL) return;
  if (nrecords == cap) {
    size_t ncap = cap == 0 ? 256 : cap * 2;
    Record *nr = ncap <= MAX_RECORDS ? realloc(records, ncap * sizeof *nr) : NULL;
    if (nr == NULL) { dropped++; return; }
    records = nr;
    cap = ncap;
  }
  r = &records[nrecords++];
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
  r->nwait = nwait > MAX_WAITS ? MAX_WAITS : nwait;
  for (i = 0; i < r->nwait; i++) r->wait[i] = wait[i];
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

/* One record as a table: {seq, queue, device, kind, name, global, local,
** bytes, where, host, queued, submit, start, end, waits, status}. Queues
** are numbered in order of first use. */
static void push_record(lua_State *L, size_t i, cl_command_queue *queues, size_t *nq) {
  static const cl_profiling_info what[4] = {
    CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
    CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END
  };
  static const char *const names[4] = {"queued", "submit", "start", "end"};
  const Record *r = &records[i];
  size_t qn, j;
  cl_int st = CL_COMPLETE;
  cl_uint w;
  int k;
  for (qn = 0; qn < *nq && queues[qn] != r->q; qn++) {}
  if (qn == *nq) queues[(*nq)++] = r->q;
  clWaitForEvents(1, &r->ev);
  clGetEventInfo(r->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
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
  lua_pushstring(L, st == CL_COMPLETE ? "complete" : "error");
  lua_setfield(L, -2, "status");
  for (k = 0; k < 4; k++) {
    cl_ulong t = 0;
    if (clGetEventProfilingInfo(r->ev, what[k], sizeof t, &t, NULL) != CL_SUCCESS) break;
    set_int(L, names[k], (lua_Integer)t);
  }
  lua_newtable(L);
  for (w = 0, k = 0; w < r->nwait; w++)   /* the earlier records it waited for */
    for (j = 0; j < i; j++)
      if (records[j].ev == r->wait[w]) {
        lua_pushinteger(L, (lua_Integer)j + 1);
        lua_rawseti(L, -2, ++k);
      }
  lua_setfield(L, -2, "waits");
}

/* Waits for the recorded commands and pushes the record: a list of tables
** (push_record), with n = its length and dropped = the commands not kept
** (past 2^20 or out of memory). Clears the trace. */
static void push_trace(lua_State *L) {
  size_t i, nq = 0;
  cl_command_queue *queues = malloc((nrecords + 1) * sizeof *queues);
  if (queues == NULL) {
    clear();
    luaL_error(L, "luagpu: gpu.trace: out of memory");
  }
  lua_createtable(L, (int)(nrecords < 1000000 ? nrecords : 1000000), 2);
  for (i = 0; i < nrecords; i++) {
    push_record(L, i, queues, &nq);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  set_int(L, "n", (lua_Integer)nrecords);
  set_int(L, "dropped", (lua_Integer)dropped);
  free(queues);
  clear();
}

/* gpu.trace(true): starts recording (dropping an earlier record);
** gpu.trace(false): stops and returns the record; gpu.trace(path): stops
** and writes it (luagpu.trace: Chrome JSON, or SVG for a path ending in
** .svg), and returns it. */
static int mod_trace(lua_State *L) {
  int t = lua_type(L, 1);
  if (t == LUA_TBOOLEAN && lua_toboolean(L, 1)) {
    clear();
    lg_trace_on = 1;
    return 0;
  }
  if (t != LUA_TBOOLEAN && t != LUA_TSTRING)
    return lg_argerror(L, "gpu.trace", 1, "expected true, false or a file path, got %s",
                       luaL_typename(L, 1));
  if (!lg_trace_on && t == LUA_TSTRING)
    return lg_error(L, "gpu.trace", "not tracing: call gpu.trace(true) first");
  lg_trace_on = 0;
  lua_settop(L, 1);
  push_trace(L);
  if (t == LUA_TSTRING) {
    lua_getglobal(L, "require");
    lua_pushliteral(L, "luagpu.trace");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "write");
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 1);
    lua_call(L, 2, 0);
    lua_pop(L, 1);
  }
  return 1;
}

/* gpu.tracing(): true while a trace records. */
static int mod_tracing(lua_State *L) {
  lua_pushboolean(L, lg_trace_on);
  return 1;
}

/* The __gc of a sentinel in the registry: at lua_close, a trace still
** recording lets its events and queues go. */
static int trace_gc(lua_State *L) {
  (void)L;
  lg_trace_on = 0;
  clear();
  return 0;
}

static const luaL_Reg trace_functions[] = {
  {"trace", mod_trace}, {"tracing", mod_tracing}, {NULL, NULL}
};

void lg_open_trace(lua_State *L) {
  luaL_setfuncs(L, trace_functions, 0);
  lua_newuserdatauv(L, 1, 0);
  lua_newtable(L);
  lua_pushcfunction(L, trace_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, "luagpu.trace_sentinel");
}
