/*
** embed_check: checks of the embedding API (luagpu.h) from C, run by
** spec/embed_spec.lua. Prints "ok - NAME" or "not ok - NAME: DETAIL" per
** check and exits 1 if any failed. What it checks: reference counts of the
** application's context, queue, buffers and events after every way of
** letting go; errors returned (never raised) for bad handles; views handed
** back with their byte range; user events; teardown without hangs; two
** Lua states that trace and debug independently. "embed_check threads
** SEED" instead opens states in several threads at the same moment, each
** building kernels of its own (SEED makes them new to the caches).
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lualib.h>

#include "luagpu.h"

static int failures, checks;
static cl_context ctx, ctx2;
static cl_device_id dev;
static cl_command_queue queue, queue2;

static void ok(int cond, const char *name, const char *detail) {
  checks++;
  if (cond) {
    printf("ok - %s\n", name);
  } else {
    failures++;
    printf("not ok - %s: %s\n", name, detail ? detail : "");
  }
}

static void die(cl_int err, const char *what) {
  if (err != CL_SUCCESS) {
    printf("not ok - setup: %s failed: %d\n", what, (int)err);
    exit(1);
  }
}

/* A new buffer of the context; exits when the runtime cannot make one. */
static cl_mem new_buffer(cl_context c, cl_mem_flags flags, size_t size, void *host) {
  cl_int err;
  cl_mem m = clCreateBuffer(c, flags, size, host, &err);
  die(err, "clCreateBuffer");
  return m;
}

enum kind { MEM, CONTEXT, QUEUE, EVENT };

/* The reference count of o, a CL object of that kind. */
static cl_uint refs(enum kind kind, void *o) {
  cl_uint n = 0;
  switch (kind) {
    case MEM: clGetMemObjectInfo(o, CL_MEM_REFERENCE_COUNT, sizeof n, &n, NULL); break;
    case CONTEXT: clGetContextInfo(o, CL_CONTEXT_REFERENCE_COUNT, sizeof n, &n, NULL); break;
    case QUEUE: clGetCommandQueueInfo(o, CL_QUEUE_REFERENCE_COUNT, sizeof n, &n, NULL); break;
    case EVENT: clGetEventInfo(o, CL_EVENT_REFERENCE_COUNT, sizeof n, &n, NULL); break;
  }
  return n;
}

static void sleep_ms(long ms) {
  struct timespec t;
  t.tv_sec = ms / 1000;
  t.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&t, NULL);
}

/* Whether the reference count of o reaches want within 3 s: PoCL's worker
** threads let go of what finished commands held a little later. */
static int refs_reach(enum kind kind, void *o, cl_uint want) {
  int i;
  for (i = 0; i < 300 && refs(kind, o) != want; i++) sleep_ms(10);
  return refs(kind, o) == want;
}

static int mem_is(cl_mem m, cl_uint want) {
  return refs_reach(MEM, m, want);
}

static int event_is(cl_event e, cl_uint want) {
  return refs_reach(EVENT, e, want);
}

/* The event's reference count once it has stopped changing. */
static cl_uint event_refs_settled(cl_event e) {
  cl_uint n = refs(EVENT, e);
  int i, same = 0;
  clWaitForEvents(1, &e);
  for (i = 0; i < 300 && same < 5; i++) {
    cl_uint m;
    sleep_ms(10);
    m = refs(EVENT, e);
    same = m == n ? same + 1 : 0;
    n = m;
  }
  return n;
}

static lua_State *new_state(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "luagpu", luaopen_luagpu, 0);
  lua_setglobal(L, "gpu");
  return L;
}

/* Sets the global name to a Buffer of mem, as count elements of type, on
** the Device in the global dev; returns luagpu_push_buffer's status. */
static int set_buffer(lua_State *L, const char *name, cl_mem mem, const char *type,
                      size_t count) {
  int status;
  lua_getglobal(L, "dev");
  status = luagpu_push_buffer(L, -1, mem, type, count);
  lua_setglobal(L, name);
  lua_pop(L, 1);
  return status;
}

/* Runs code; returns its first result as a string ("" for none), or the
** error message prefixed by "error: ". The result stays valid until the
** next call. */
static const char *run(lua_State *L, const char *code) {
  static char out[1024];
  int top = lua_gettop(L);
  if (luaL_loadstring(L, code) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK)
    snprintf(out, sizeof out, "error: %s", lua_tostring(L, -1));
  else
    snprintf(out, sizeof out, "%s", lua_isnoneornil(L, -1) ? "" : luaL_tolstring(L, -1, NULL));
  lua_settop(L, top);
  return out;
}

/* Checks that run(L, code) returns want exactly. */
static void expect(lua_State *L, const char *name, const char *code, const char *want) {
  const char *got = run(L, code);
  char detail[1200];
  snprintf(detail, sizeof detail, "expected \"%s\", got \"%s\"", want, got);
  ok(strcmp(got, want) == 0, name, detail);
}

/* Checks a luagpu_push_* status: fails with the message pushed, and the
** stack grew by one. */
static void expect_error(lua_State *L, int top, int status, const char *name, const char *want) {
  const char *msg = lua_tostring(L, -1);
  char detail[1200];
  snprintf(detail, sizeof detail, "status %d, top %d -> %d, message \"%s\", expected \"%s\"",
           status, top, lua_gettop(L), msg ? msg : "(none)", want);
  ok(status != LUA_OK && lua_gettop(L) == top + 1 && msg != NULL && strstr(msg, want) != NULL,
     name, detail);
  lua_settop(L, top);
}

static void setup(void) {
  cl_platform_id platform;
  cl_int err;
  die(clGetPlatformIDs(1, &platform, NULL), "clGetPlatformIDs");
  die(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &dev, NULL), "clGetDeviceIDs");
  ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  die(err, "clCreateContext");
  ctx2 = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  die(err, "clCreateContext");
  queue = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
  die(err, "clCreateCommandQueue");
  queue2 = clCreateCommandQueue(ctx2, dev, 0, &err);
  die(err, "clCreateCommandQueue");
}

/* Pushing opens the module when no one has; the same handles give the same Device. */
static void check_devices(void) {
  lua_State *L = luaL_newstate();
  int st;
  luaL_openlibs(L);
  st = luagpu_push_device(L, ctx, dev, queue);
  ok(st == LUA_OK && luaL_testudata(L, -1, "luagpu.Device") != NULL,
     "push_device opens the module first", lua_tostring(L, -1));
  lua_setglobal(L, "dev");
  luagpu_push_device(L, ctx, dev, queue);
  lua_setglobal(L, "same");
  luagpu_push_device(L, ctx, dev, NULL);
  lua_setglobal(L, "other");
  expect(L, "same handles, same Device", "return rawequal(dev, same)", "true");
  expect(L, "no queue, another Device", "return rawequal(dev, other)", "false");
  expect(L, "the app's Device is not luagpu's own",
         "return rawequal(dev, require('luagpu').device())", "false");
  expect(L, "device fields", "return dev.name == require('luagpu').device().name", "true");
  lua_getglobal(L, "dev");
  {
    cl_command_queue q = luagpu_to_queue(L, -1);
    ok(q == queue, "to_queue gives the app's queue back", NULL);
    if (q != NULL) clReleaseCommandQueue(q);
  }
  lua_getglobal(L, "other");
  {
    cl_command_queue q = luagpu_to_queue(L, -1);
    cl_context qctx = NULL;
    if (q != NULL) clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
    ok(q != NULL && q != queue && qctx == ctx, "without a queue, luagpu makes one in the app's "
       "context", NULL);
    if (q != NULL) clReleaseCommandQueue(q);
  }
  lua_close(L);
}

/* Every error is returned, with the message pushed; nothing raises. */
static void check_errors(void) {
  lua_State *L = new_state();
  cl_mem small, tiny, other, img;
  cl_int err;
  int top = lua_gettop(L);
  cl_image_format fmt = {CL_RGBA, CL_UNORM_INT8};
  cl_image_desc desc;
  expect_error(L, top, luagpu_push_device(L, NULL, dev, NULL), "push_device: NULL context",
               "luagpu: luagpu_push_device: expected a cl_context, got NULL");
  expect_error(L, top, luagpu_push_device(L, ctx, NULL, NULL), "push_device: NULL device",
               "luagpu: luagpu_push_device: expected a cl_device_id, got NULL");
  expect_error(L, top, luagpu_push_device(L, ctx, dev, queue2),
               "push_device: a queue of another context",
               "luagpu: luagpu_push_device: the queue belongs to another context");
  small = new_buffer(ctx, CL_MEM_READ_WRITE, 400, NULL);
  other = new_buffer(ctx2, CL_MEM_READ_WRITE, 400, NULL);
  tiny = new_buffer(ctx, CL_MEM_READ_WRITE, 16, NULL);
  memset(&desc, 0, sizeof desc);
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = desc.image_height = 4;
  img = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);   /* NULL: no images */
  lua_pushinteger(L, 42);
  top = lua_gettop(L);
  expect_error(L, top, luagpu_push_buffer(L, -1, small, "float", 100),
               "push_buffer: not a Device",
               "luagpu: luagpu_push_buffer: devidx: expected a luagpu.Device, got number");
  luagpu_push_device(L, ctx, dev, queue);
  top = lua_gettop(L);
  expect_error(L, top, luagpu_push_buffer(L, top, NULL, "float", 100), "push_buffer: NULL mem",
               "luagpu: luagpu_push_buffer: expected a cl_mem, got NULL");
  expect_error(L, top, luagpu_push_buffer(L, top, small, "flaot", 100),
               "push_buffer: unknown type", "luagpu_push_buffer: unknown element type 'flaot'");
  expect_error(L, top, luagpu_push_buffer(L, top, small, NULL, 100), "push_buffer: NULL type",
               "luagpu_push_buffer: unknown element type NULL");
  expect_error(L, top, luagpu_push_buffer(L, top, small, "float", 101), "push_buffer: too many",
               "luagpu_push_buffer: the cl_mem holds 400 bytes: not room for 101 elements of "
               "float");
  expect_error(L, top, luagpu_push_buffer(L, top, tiny, "double4", 0),
               "push_buffer: not room for one",
               "the cl_mem holds 16 bytes: not room for 1 elements of double4");
  expect_error(L, top, luagpu_push_buffer(L, top, other, "float", 100),
               "push_buffer: another context",
               "luagpu_push_buffer: the cl_mem belongs to another context than the device's");
  if (img != NULL)
    expect_error(L, top, luagpu_push_buffer(L, top, img, "uchar", 16), "push_buffer: an image",
                 "luagpu_push_buffer: the cl_mem is an image, not a buffer");
  expect_error(L, top, luagpu_push_event(L, NULL), "push_event: NULL",
               "luagpu: luagpu_push_event: expected a cl_event, got NULL");
  ok(mem_is(small, 1) && mem_is(tiny, 1) && mem_is(other, 1) &&
     (img == NULL || mem_is(img, 1)), "failed pushes take no reference", NULL);
  lua_pushinteger(L, 1);
  ok(luagpu_to_mem(L, -1, NULL, NULL) == NULL && luagpu_to_event(L, -1) == NULL &&
     luagpu_to_queue(L, -1) == NULL && luagpu_to_mem(L, 100, NULL, NULL) == NULL,
     "to_*: NULL for what is not theirs", NULL);
  /* indices Lua does not check itself: far past the top, 0, below the bottom,
  ** pseudo-indices (these crashed before luagpu checked them) */
  top = lua_gettop(L);
  ok(luagpu_to_mem(L, 1000000, NULL, NULL) == NULL && luagpu_to_event(L, 1000000) == NULL &&
     luagpu_to_queue(L, 1000000) == NULL && luagpu_to_mem(L, 0, NULL, NULL) == NULL &&
     luagpu_to_event(L, -1000) == NULL && luagpu_to_queue(L, -top - 1) == NULL &&
     luagpu_to_mem(L, LUA_REGISTRYINDEX, NULL, NULL) == NULL &&
     luagpu_to_event(L, LUA_REGISTRYINDEX - 1) == NULL, "to_*: NULL for invalid indices", NULL);
  expect_error(L, top, luagpu_push_buffer(L, 1000000, small, "float", 100),
               "push_buffer: an invalid devidx",
               "luagpu: luagpu_push_buffer: invalid stack index 1000000");
  expect_error(L, top, luagpu_push_buffer(L, -1000, small, "float", 100),
               "push_buffer: a devidx below the bottom",
               "luagpu: luagpu_push_buffer: invalid stack index -1000");
  lua_close(L);
  clReleaseMemObject(small);
  clReleaseMemObject(other);
  clReleaseMemObject(tiny);
  if (img != NULL) clReleaseMemObject(img);
}

/* Buffers: reference counts whoever lets go first, views, access. */
static void check_buffers(void) {
  lua_State *L = new_state();
  cl_mem a, b, ro, got;
  size_t off = 1, size = 1;
  float host[256];
  int i;
  char detail[128];
  for (i = 0; i < 256; i++) host[i] = (float)i * 0.5f;
  a = new_buffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host);
  b = new_buffer(ctx, CL_MEM_READ_WRITE, sizeof host, NULL);
  ro = new_buffer(ctx, CL_MEM_READ_WRITE | CL_MEM_HOST_READ_ONLY, 64, NULL);
  luagpu_push_device(L, ctx, dev, queue);
  lua_setglobal(L, "dev");
  ok(set_buffer(L, "a", a, "float", 0) == LUA_OK && mem_is(a, 2), "push_buffer retains", NULL);
  set_buffer(L, "b", b, "float4", 64);
  set_buffer(L, "ro", ro, "int", 16);
  expect(L, "count 0 takes the whole cl_mem", "return #a .. ' ' .. a.type .. ' ' .. a.bytes",
         "256 float 1024");
  expect(L, "the Buffer reads the app's data", "return a:get()[256]", "127.5");
  expect(L, "host flags set access", "return ro.access", "out");
  expect(L, "an \"out\" buffer rejects writes",
         "local ok, e = pcall(ro.write, ro, {1}) return e",
         "luagpu: buffer:write: the buffer has access \"out\" (device to host only): it cannot "
         "be written from the host (make it with access = \"mixed\")");
  /* the app lets go first: the Buffer still works */
  clReleaseMemObject(b);
  expect(L, "the app releases first, the script still uses it",
         "local t = {} for i = 1, 256 do t[i] = i end b:write(t) "
         "local g = b:get() return g[1] + g[256]", "257.0");
  /* the script lets go first: the app's reference stays */
  run(L, "a:release()");
  snprintf(detail, sizeof detail, "refcount %u", (unsigned)refs(MEM, a));
  ok(mem_is(a, 1), "buffer:release gives back luagpu's reference", detail);
  set_buffer(L, "a", a, "float", 256);
  run(L, "a = nil collectgarbage() collectgarbage()");
  ok(mem_is(a, 1), "the collector gives back luagpu's reference", NULL);
  /* a view goes back as its root's cl_mem and byte range */
  set_buffer(L, "a", a, "float", 256);
  luaL_loadstring(L, "return a:sub(5, 14)");
  lua_call(L, 0, 1);
  got = luagpu_to_mem(L, -1, &off, &size);
  ok(got == a && off == 16 && size == 40 && mem_is(a, 3),
     "to_mem of a view: the root's cl_mem, retained, and the byte range", NULL);
  if (got != NULL) clReleaseMemObject(got);
  run(L, "a:release()");
  ok(luagpu_to_mem(L, -1, NULL, NULL) == NULL, "to_mem of a view of a released buffer: NULL",
     NULL);
  lua_pop(L, 1);
  /* a buffer the script made, taken over by the app, outlives the state */
  luaL_loadstring(L, "local z = dev:buffer('int', 8) z:fill(7) dev:finish() return z");
  lua_call(L, 0, 1);
  got = luagpu_to_mem(L, -1, &off, &size);
  lua_pop(L, 1);
  lua_close(L);
  {
    int back[8] = {0};
    cl_int e = got ? clEnqueueReadBuffer(queue, got, CL_TRUE, 0, sizeof back, back, 0, NULL,
                                         NULL) : -1;
    ok(got != NULL && e == CL_SUCCESS && back[0] == 7 && back[7] == 7 && mem_is(got, 1),
       "a script's buffer taken by the app outlives lua_close", NULL);
    if (got != NULL) clReleaseMemObject(got);
  }
  ok(mem_is(a, 1) && mem_is(ro, 1), "lua_close gives back every reference", NULL);
  clReleaseMemObject(a);
  clReleaseMemObject(ro);
}

/* Events: the app's events in wait lists, user events, profiling. */
static void check_events(void) {
  lua_State *L = new_state();
  cl_int err;
  cl_event user, never, written, back;
  cl_uint refs;
  cl_mem m;
  int host[64];
  int i;
  for (i = 0; i < 64; i++) host[i] = i;
  m = new_buffer(ctx, CL_MEM_READ_WRITE, sizeof host, NULL);
  user = clCreateUserEvent(ctx, &err);
  die(err, "clCreateUserEvent");
  never = clCreateUserEvent(ctx, &err);
  die(err, "clCreateUserEvent");
  die(clEnqueueWriteBuffer(queue, m, CL_FALSE, 0, sizeof host, host, 0, NULL, &written),
      "clEnqueueWriteBuffer");
  luagpu_push_device(L, ctx, dev, queue);
  lua_setglobal(L, "dev");
  set_buffer(L, "m", m, "int", 64);
  refs = event_refs_settled(written);
  ok(luagpu_push_event(L, written) == LUA_OK && event_is(written, refs + 1),
     "push_event retains", NULL);
  lua_setglobal(L, "written");
  luagpu_push_event(L, user);
  lua_setglobal(L, "user");
  luagpu_push_event(L, never);
  lua_setglobal(L, "never");
  clReleaseEvent(written);
  expect(L, "an app's event in a wait list",
         "local q = dev:queue() local r = m:read({wait = {written}, queue = q}):wait() "
         "return r[1] + r[64]", "63");
  expect(L, "profile of an app's event (its queue profiles)",
         "return written:profile().duration >= 0", "true");
  expect(L, "an app's event names its command", "return written.command .. ', ' .. user.command",
         "write (application), user event");
  expect(L, "a command waits for the app's user event",
         "gated = m:fill(9, {wait = user}) return gated.status ~= 'complete'", "true");
  clSetUserEventStatus(user, CL_COMPLETE);
  expect(L, "it runs once the app completes it", "gated:wait() return m:get()[33]", "9");
  luaL_loadstring(L, "return gated");
  lua_call(L, 0, 1);
  back = luagpu_to_event(L, -1);
  lua_pop(L, 1);
  ok(back != NULL && event_is(back, 2), "to_event retains", NULL);
  run(L, "never = nil user = nil gated = nil collectgarbage() collectgarbage()");
  ok(event_is(never, 1) && event_is(user, 1) && event_is(back, 1),
     "collecting the Events gives back their references, without waiting for a user event "
     "never completed", NULL);
  lua_close(L);
  clReleaseEvent(back);
  clSetUserEventStatus(never, CL_COMPLETE);
  clReleaseEvent(never);
  clReleaseEvent(user);
  clReleaseMemObject(m);
}

/* The reference counts of ctx and queue once PoCL's worker threads have
** let go of what finished commands held (they do so a little later):
** waits up to 5 s for them to reach want_c and want_q (0: to stop falling). */
static void settle(cl_uint *c, cl_uint *q, cl_uint want_c, cl_uint want_q) {
  int i, same = 0;
  clFinish(queue);
  *c = refs(CONTEXT, ctx);
  *q = refs(QUEUE, queue);
  for (i = 0; i < 500; i++) {
    cl_uint c2, q2;
    sleep_ms(10);
    c2 = refs(CONTEXT, ctx);
    q2 = refs(QUEUE, queue);
    same = c2 == *c && q2 == *q ? same + 1 : 0;
    *c = c2;
    *q = q2;
    if (want_c ? (c2 == want_c && q2 == want_q) : same >= 5) break;
  }
}

/* Everything a script makes in the app's context is let go by lua_close:
** the context's and the queue's reference counts come back. */
static void check_teardown(void) {
  cl_uint c0, q0, c1, q1;
  lua_State *L = new_state();
  cl_mem m;
  char detail[128];
  settle(&c0, &q0, 0, 0);
  m = new_buffer(ctx, CL_MEM_READ_WRITE, 4096, NULL);
  luagpu_push_device(L, ctx, dev, queue);
  lua_setglobal(L, "dev");
  luagpu_push_device(L, ctx, dev, NULL);
  lua_setglobal(L, "dev2");
  set_buffer(L, "m", m, "float", 1024);
  clReleaseMemObject(m);      /* the app lets go first; lua_close frees it */
  expect(L, "a script's work in the app's context",
         "local p = dev:build[[kernel void twice(global float *x) {"
         "  x[get_global_id(0)] *= 2.0f; }]] "
         "m:fill(1.5) "
         "local v = m:sub(33, 64) "
         "local ev = p.twice(v):run({#v}) "
         "local q = dev:queue{out_of_order = true} "
         "local b2 = dev2:buffer('float', 1024) "
         "m:copy_to(b2, {queue = q, wait = ev}):wait() "
         "local g = b2:get() "
         "local b3 = dev2:buffer('float', 1 << 16) "
         "pending = {} "
         "for i = 1, 20 do pending[i] = b3:fill(i, {queue = q}) end "
         "return g[32] + g[33] + g[64] + g[65]", "9.0");
  lua_close(L);
  settle(&c1, &q1, c0, q0);
  snprintf(detail, sizeof detail, "context %u -> %u, queue %u -> %u", (unsigned)c0,
           (unsigned)c1, (unsigned)q0, (unsigned)q1);
  ok(c1 == c0 && q1 == q0,
     "lua_close lets go of everything in the app's context", detail);
}

/* Two Lua states at once: tracing, debug mode and their teardown belong to
** each state (issue 27 item 45). */
static void check_two_states(void) {
  static const char *const work =
    "local d = gpu.device() local b = d:buffer('float', 64) "
    "b:fill(1.5):wait() return 0";
  lua_State *A = new_state(), *B = new_state();
  expect(A, "state A starts a trace", "gpu.trace(true) return gpu.tracing()", "true");
  expect(B, "state B does not trace when A does", "return gpu.tracing()", "false");
  expect(B, "state B's commands", work, "0");
  expect(B, "state B traces on its own", "gpu.trace(true) return gpu.tracing()", "true");
  expect(A, "state A's commands", "local d = gpu.device() d:buffer('float', 64):fill(2):wait() "
         "return 0", "0");
  expect(B, "state B's trace holds only B's commands",
         "local r = gpu.trace(false) return #r", "0");
  expect(A, "state A's trace lacks B's commands",
         "local r = gpu.trace(false) local n = 0 "
         "for _, c in ipairs(r) do if c.bytes == 256 then n = n + 1 end end "
         "return #r .. ' ' .. n", "2 2");
  expect(A, "debug mode off in A", "return tostring(gpu.debug())", "false");
  expect(B, "gpu.debug(true) in B", "gpu.debug(true) return tostring(gpu.debug())", "true");
  expect(A, "B's debug mode leaves A's off", "return tostring(gpu.debug())", "false");
  expect(A, "A traces again", "gpu.trace(true) return tostring(gpu.tracing())", "true");
  lua_close(B);
  expect(A, "closing B leaves A's trace recording", "return tostring(gpu.tracing())", "true");
  expect(A, "A's trace after B closed",
         "local d = gpu.device() d:buffer('float', 8):fill(3):wait() "
         "local r = gpu.trace(false) return #r .. ' ' .. r[#r].kind", "2 fill");
  lua_close(A);
}

/* ------------------------------------------------ states in threads */

#define NTHREADS 3

static pthread_barrier_t start_line;
static long seed;

/* One thread: a state opened at the same moment as the others', its
** device list, then four builds of kernels no other thread builds, with
** the cache on; the result ("" or what went wrong) into arg's buffer. */
static void *thread_main(void *arg) {
  static const char *const code =
    "local id, seed = ... local gpu = require 'luagpu' "
    "local devs = gpu.devices() "
    "if #devs == 0 then return 'no devices' end "
    "if devs[1].name == '' then return 'a device without a name' end "
    "local dev = devs[1] "
    "for i = 1, 4 do "
    "  local src = ('kernel void f%d_%d(global float *x) { float a = x[0]; "
    "for (int k = 0; k < %d; k++) a = a * 1.0001f + %d.0f; x[get_global_id(0)] = a; }')"
    "    :format(id, i, seed, i) "
    "  local p = dev:build(src) assert(p['f' .. id .. '_' .. i]) "
    "end return ''";
  char *out = arg;
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "luagpu", luaopen_luagpu, 0);   /* before the barrier: no CL call yet */
  lua_pop(L, 1);
  pthread_barrier_wait(&start_line);
  if (luaL_loadstring(L, code) != LUA_OK ||
      (lua_pushinteger(L, out[0]), lua_pushinteger(L, seed), lua_pcall(L, 2, 1, 0)) != LUA_OK)
    snprintf(out, 512, "error: %s", lua_tostring(L, -1));
  else
    snprintf(out, 512, "%s", lua_tostring(L, -1));
  lua_close(L);
  return NULL;
}

/* States opened and building in NTHREADS threads at once (issue 27
** follow-up): PoCL's first discovery raced (a crash, or a state seeing no
** device) and two builds in one process waited for each other's hold on
** PoCL's cache lock until its timeout. */
static int check_threads(const char *arg) {
  pthread_t t[NTHREADS];
  char out[NTHREADS][512], name[64];
  int i;
  seed = atol(arg);
  pthread_barrier_init(&start_line, NULL, NTHREADS);
  for (i = 0; i < NTHREADS; i++) {
    out[i][0] = (char)(i + 1);
    pthread_create(&t[i], NULL, thread_main, out[i]);
  }
  for (i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&start_line);
  for (i = 0; i < NTHREADS; i++) {
    snprintf(name, sizeof name, "thread %d's state found a device and built", i + 1);
    ok(out[i][0] == '\0', name, out[i]);
  }
  printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "threads") == 0) return check_threads(argv[2]);
  setup();
  check_two_states();
  check_devices();
  check_errors();
  check_buffers();
  check_events();
  check_teardown();
  clReleaseCommandQueue(queue2);
  clReleaseCommandQueue(queue);
  clReleaseContext(ctx2);
  clReleaseContext(ctx);
  printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
