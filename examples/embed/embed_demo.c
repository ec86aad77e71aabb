/*
** embed_demo: a C application that owns its OpenCL set-up (context, queue,
** buffers) and lets a Lua script do part of the work on them through
** luagpu.h, then reads the result back in C and checks it.
**
**   make && build/embed_demo [script.lua]
**
** The script (the one below, or the file given) sees the globals
**   gpu     the luagpu module
**   dev     the application's device: its context, and its queue as the
**           default queue, so the script's commands go to the app's queue
**   x, y    the application's two cl_mem buffers, as luagpu Buffers of float
**   ready   the application's write of x, as an Event the script waits on
** and returns an Event the application waits on, and a Buffer of its own
** that the application takes over as a cl_mem.
**
** Build it like any Lua host, linking the luagpu module as a library:
**   cc -I/usr/include/lua5.4 -I<luagpu>/host embed_demo.c <luagpu>/build/luagpu.so \
**      -llua5.4 -lOpenCL -lm
*/
#define _POSIX_C_SOURCE 200809L   /* nanosleep */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <lauxlib.h>
#include <lualib.h>

#include "luagpu.h"

#define N 100000

static const char *const script =
  "local prog = dev:build [[\n"
  "  kernel void poly(global const float *x, global float *y, float a, float b) {\n"
  "    size_t i = get_global_id(0);\n"
  "    y[i] = a * x[i] * x[i] + b;\n"
  "  }\n"
  "]]\n"
  "-- waits for the application's write of x, on the application's queue\n"
  "local ev = prog.poly(x, y, 2.0, 1.0):run({#x}, nil, {wait = {ready}})\n"
  "-- a buffer of the script's own: y + 1, which the application takes over\n"
  "local z = dev:buffer('float', #y)\n"
  "local copy = y:copy_to(z, {wait = {ev}})\n"
  "local add = dev:build[[kernel void inc(global float *z) { z[get_global_id(0)] += 1.0f; }]]\n"
  "return add.inc(z):run({#z}, nil, {wait = {copy}}), z\n";

static void check(cl_int err, const char *what) {
  if (err != CL_SUCCESS) {
    fprintf(stderr, "embed_demo: %s failed: %d\n", what, (int)err);
    exit(1);
  }
}

/* The first device of the first platform, in a context of the app's own. */
static void setup(cl_context *ctx, cl_device_id *dev, cl_command_queue *queue) {
  cl_platform_id platform;
  cl_int err;
  check(clGetPlatformIDs(1, &platform, NULL), "clGetPlatformIDs");
  check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, dev, NULL), "clGetDeviceIDs");
  *ctx = clCreateContext(NULL, 1, dev, NULL, NULL, &err);
  check(err, "clCreateContext");
  *queue = clCreateCommandQueue(*ctx, *dev, 0, &err);
  check(err, "clCreateCommandQueue");
}

/* Runs a luagpu_push_* status check: on failure, prints the message. */
static void pushed(lua_State *L, int status, const char *global) {
  if (status != LUA_OK) {
    fprintf(stderr, "embed_demo: %s\n", lua_tostring(L, -1));
    exit(1);
  }
  lua_setglobal(L, global);
}

int main(int argc, char **argv) {
  cl_context ctx;
  cl_device_id dev;
  cl_command_queue queue;
  cl_mem x, y, z;
  cl_event ready, done;
  cl_int err;
  cl_uint refs = 0;
  static float hx[N], hy[N], hz[N];
  double maxerr = 0;
  size_t zoff = 0, zsize = 0;
  lua_State *L;
  int i, status;

  setup(&ctx, &dev, &queue);
  for (i = 0; i < N; i++) hx[i] = (float)(i % 1000) / 250.0f - 2.0f;
  x = clCreateBuffer(ctx, CL_MEM_READ_ONLY, sizeof hx, NULL, &err);
  check(err, "clCreateBuffer x");
  y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof hy, NULL, &err);
  check(err, "clCreateBuffer y");
  check(clEnqueueWriteBuffer(queue, x, CL_FALSE, 0, sizeof hx, hx, 0, NULL, &ready),
        "clEnqueueWriteBuffer");

  /* A Lua state with the standard libraries and luagpu, then the app's objects. */
  L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "luagpu", luaopen_luagpu, 0);
  lua_setglobal(L, "gpu");
  pushed(L, luagpu_push_device(L, ctx, dev, queue), "dev");
  lua_getglobal(L, "dev");
  pushed(L, luagpu_push_buffer(L, -1, x, "float", N), "x");
  pushed(L, luagpu_push_buffer(L, -1, y, "float", 0), "y");   /* 0: all that fits */
  lua_pop(L, 1);
  pushed(L, luagpu_push_event(L, ready), "ready");
  clReleaseEvent(ready);   /* the script's Event holds its own reference */

  status = argc > 1 ? luaL_loadfile(L, argv[1]) : luaL_loadstring(L, script);
  if (status == LUA_OK) status = lua_pcall(L, 0, 2, 0);
  if (status != LUA_OK) {
    fprintf(stderr, "embed_demo: %s\n", lua_tostring(L, -1));
    return 1;
  }
  done = luagpu_to_event(L, -2);
  z = luagpu_to_mem(L, -1, &zoff, &zsize);
  if (done == NULL || z == NULL) {
    fprintf(stderr, "embed_demo: the script must return an Event and a Buffer\n");
    return 1;
  }
  /* The app's queue: the read runs after the script's commands on it. */
  check(clEnqueueReadBuffer(queue, y, CL_TRUE, 0, sizeof hy, hy, 1, &done, NULL), "read y");
  clReleaseEvent(done);

  /* Closing the state releases every reference luagpu took; the app's own
  ** (x, y, the context, the queue) and the one it took on z remain. */
  lua_close(L);
  for (i = 0; i < 300; i++) {   /* a driver may let go of finished commands' buffers a bit later */
    struct timespec pause = {0, 10000000L};
    check(clGetMemObjectInfo(y, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, NULL), "refcount");
    if (refs == 1) break;
    nanosleep(&pause, NULL);
  }
  check(clEnqueueReadBuffer(queue, z, CL_TRUE, zoff, sizeof hz, hz, 0, NULL, NULL), "read z");

  for (i = 0; i < N; i++) {
    double want = 2.0 * (double)hx[i] * (double)hx[i] + 1.0;
    double e1 = fabs(hy[i] - want), e2 = fabs(hz[i] - (want + 1.0));
    if (e1 > maxerr) maxerr = e1;
    if (e2 > maxerr) maxerr = e2;
  }
  printf("embed_demo: %d elements, y = 2x^2 + 1 and z = y + 1 computed by the script on "
         "the app's queue; max error %g; y's reference count after lua_close: %u\n",
         N, maxerr, (unsigned)refs);
  clReleaseMemObject(z);
  clReleaseMemObject(y);
  clReleaseMemObject(x);
  clReleaseCommandQueue(queue);
  clReleaseContext(ctx);
  if (maxerr > 1e-4 || refs != 1) {
    printf("embed_demo: FAILED\n");
    return 1;
  }
  printf("embed_demo: ok\n");
  return 0;
}
