/*
** bench/c/launch.c: the C baseline of bench/launch.lua. A plain OpenCL host
** doing, per launch, what luagpu's call:run does: set the kernel's four
** arguments, enqueue it with an event (on an in-order queue with profiling,
** as luagpu's default queue), release the event; and, for the second
** figure, wait for the event before releasing it.
**
**   bench_launch LAUNCHES REPEATS GLOBAL [DEVICE-NAME]
**
** prints "device NAME", "enqueue_us X", "wait_us Y": the best of REPEATS
** loops of LAUNCHES launches, in microseconds per launch (the enqueue loop
** is timed without the clFinish that follows it). Then the four enqueue
** variants the driver offers, enqueue only, the arguments set once:
** "prof_event_us" (profiling queue, an event asked for), "prof_noevent_us",
** "noprof_event_us", "noprof_noevent_us"; and "read4_us", a blocking read
** of 4 bytes.
*/
#define BENCH_NAME "bench_launch"
#include "common.h"

static const char *source =
  "__kernel void saxpy(float a, __global const float *x, __global float *y, int n) {\n"
  "  int i = get_global_id(0);\n"
  "  if (i < n) y[i] += a * x[i];\n"
  "}\n";

enum { N = 1024 };   /* the elements of x and y, saxpy's n */

/* Seconds per launch over a loop of `launches` launches of saxpy on x and y,
** each as luagpu's call:run makes one: the four arguments set, the kernel
** enqueued with an event, the event released (waited for first when wait). */
static double launch_loop(cl_command_queue q, cl_kernel k, cl_mem x, cl_mem y, size_t global,
                          int launches, int wait) {
  cl_float a = 2.0f;
  cl_int n = N;
  cl_event ev;
  double t0 = now();
  int i;
  for (i = 0; i < launches; i++) {
    clSetKernelArg(k, 0, sizeof a, &a);
    clSetKernelArg(k, 1, sizeof x, &x);
    clSetKernelArg(k, 2, sizeof y, &y);
    clSetKernelArg(k, 3, sizeof n, &n);
    check(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, &ev), "enqueue");
    if (wait) check(clWaitForEvents(1, &ev), "clWaitForEvents");
    clReleaseEvent(ev);
  }
  return (now() - t0) / launches;
}

/* Seconds per enqueue of saxpy, arguments already set, with an event asked
** for (and released) or not: the driver's own cost of one launch. */
static double enqueue_loop(cl_command_queue q, cl_kernel k, size_t global, int launches,
                           int event) {
  cl_event ev;
  double t0 = now(), t;
  int i;
  for (i = 0; i < launches; i++) {
    check(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, event ? &ev : NULL),
          "enqueue");
    if (event) clReleaseEvent(ev);
  }
  t = (now() - t0) / launches;
  clFinish(q);
  return t;
}

/* Seconds per blocking read of 4 bytes of x. */
static double read_loop(cl_command_queue q, cl_mem x, int reads) {
  float v;
  double t0 = now();
  int i;
  for (i = 0; i < reads; i++)
    check(clEnqueueReadBuffer(q, x, CL_TRUE, 0, sizeof v, &v, 0, NULL, NULL), "read");
  return (now() - t0) / reads;
}

/* The best over reps of the four enqueue variants and the 4-byte read. */
static void variants(cl_context ctx, cl_device_id dev, cl_kernel k, cl_mem x, size_t global,
                     int launches, int reps) {
  static const char *const names[] = {"prof_event", "prof_noevent", "noprof_event",
                                      "noprof_noevent"};
  double best[5] = {1e30, 1e30, 1e30, 1e30, 1e30}, t;
  cl_command_queue qs[2];
  cl_int err;
  int r, v;
  qs[0] = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
  check(err, "clCreateCommandQueue");
  qs[1] = clCreateCommandQueue(ctx, dev, 0, &err);
  check(err, "clCreateCommandQueue");
  for (r = 0; r <= reps; r++) {      /* round 0 warms up */
    for (v = 0; v < 4; v++) {
      t = enqueue_loop(qs[v / 2], k, global, launches, v % 2 == 0);
      if (r > 0 && t < best[v]) best[v] = t;
    }
    t = read_loop(qs[1], x, launches / 10 + 1);
    if (r > 0 && t < best[4]) best[4] = t;
  }
  for (v = 0; v < 4; v++) printf("%s_us %.3f\n", names[v], best[v] * 1e6);
  printf("read4_us %.3f\n", best[4] * 1e6);
  clReleaseCommandQueue(qs[0]);
  clReleaseCommandQueue(qs[1]);
}

int main(int argc, char **argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 20000, reps = argc > 2 ? atoi(argv[2]) : 5;
  size_t global = argc > 3 ? (size_t)atol(argv[3]) : 64;
  cl_device_id dev = pick_device(argc > 4 ? argv[4] : NULL);
  cl_int err;
  cl_context ctx;
  cl_command_queue q;
  cl_program prog;
  cl_kernel k;
  cl_mem x, y;
  double best_enq = 1e30, best_wait = 1e30, t;
  char name[256];
  int r;

  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
  ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  check(err, "clCreateContext");
  q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
  check(err, "clCreateCommandQueue");
  prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
  check(err, "clCreateProgramWithSource");
  check(clBuildProgram(prog, 1, &dev, "-cl-kernel-arg-info", NULL, NULL), "clBuildProgram");
  k = clCreateKernel(prog, "saxpy", &err);
  check(err, "clCreateKernel");
  x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &err);
  check(err, "clCreateBuffer");
  y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &err);
  check(err, "clCreateBuffer");

  for (r = 0; r <= reps; r++) {      /* round 0 warms up */
    t = launch_loop(q, k, x, y, global, launches, 0);
    clFinish(q);
    if (r > 0 && t < best_enq) best_enq = t;
    t = launch_loop(q, k, x, y, global, launches, 1);
    if (r > 0 && t < best_wait) best_wait = t;
  }
  printf("device %s\nenqueue_us %.3f\nwait_us %.3f\n", name, best_enq * 1e6, best_wait * 1e6);
  variants(ctx, dev, k, x, global, launches, reps);

  clReleaseMemObject(x);
  clReleaseMemObject(y);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return 0;
}
