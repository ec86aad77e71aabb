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
** of 4 bytes. Then what might stand in for a kernel's own event: the
** kernel without one and a marker with one after it ("prof_marker_us",
** "noprof_marker_us"), events kept and released after the loop
** ("prof_event_kept_us"); a non-blocking read of 4 bytes with an event
** into pageable memory ("read4_async_us") and into pinned memory mapped
** from a CL_MEM_ALLOC_HOST_PTR buffer ("read4_pinned_async_us"), the
** kernel before it without an event ("kernel_read4_us": a whole reduce
** enqueue), each on the queue without profiling; and the last on the
** profiling queue ("kernel_read4_prof_us").
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

/* Seconds per enqueue of saxpy without an event followed by a marker with
** one (released): an event that says when the kernel is done. */
static double marker_loop(cl_command_queue q, cl_kernel k, size_t global, int launches) {
  cl_event ev;
  double t0 = now(), t;
  int i;
  for (i = 0; i < launches; i++) {
    check(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL), "enqueue");
    check(clEnqueueMarkerWithWaitList(q, 0, NULL, &ev), "marker");
    clReleaseEvent(ev);
  }
  t = (now() - t0) / launches;
  clFinish(q);
  return t;
}

enum { KEPT = 4096 };

/* Seconds per enqueue of saxpy with an event, the events released only
** after each batch of KEPT (as a collector would). */
static double kept_loop(cl_command_queue q, cl_kernel k, size_t global, int launches) {
  static cl_event evs[KEPT];
  double t0 = now(), t;
  int i, j, n = 0;
  for (i = 0; i < launches; i++) {
    check(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, &evs[n++]), "enqueue");
    if (n == KEPT) {
      for (j = 0; j < n; j++) clReleaseEvent(evs[j]);
      n = 0;
    }
  }
  for (j = 0; j < n; j++) clReleaseEvent(evs[j]);
  t = (now() - t0) / launches;
  clFinish(q);
  return t;
}

/* Seconds per non-blocking read of 4 bytes of x into dst with an event
** (waited for outside the time), after a kernel without event when k. */
static double read_async_loop(cl_command_queue q, cl_kernel k, size_t global, cl_mem x,
                              float *dst, int reads) {
  cl_event ev;
  double t = 0, t0;
  int i;
  for (i = 0; i < reads; i++) {
    t0 = now();
    if (k) check(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL), "enqueue");
    check(clEnqueueReadBuffer(q, x, CL_FALSE, 0, sizeof *dst, dst, 0, NULL, &ev), "read");
    t += now() - t0;
    clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
  }
  return t / reads;
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
  static const char *const more[] = {"prof_marker", "noprof_marker", "prof_event_kept",
                                     "read4_async", "read4_pinned_async", "kernel_read4", "kernel_read4_prof"};
  double best[5] = {1e30, 1e30, 1e30, 1e30, 1e30}, best2[7], t;
  cl_command_queue qs[2];
  cl_mem pinned;
  float *host, pageable;
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

  pinned = clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR, sizeof(float), NULL, &err);
  check(err, "clCreateBuffer");
  host = clEnqueueMapBuffer(qs[1], pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                            sizeof(float), 0, NULL, NULL, &err);
  check(err, "clEnqueueMapBuffer");
  for (v = 0; v < 7; v++) best2[v] = 1e30;
  for (r = 0; r <= reps; r++) {
    double ts[7];
    ts[0] = marker_loop(qs[0], k, global, launches);
    ts[1] = marker_loop(qs[1], k, global, launches);
    ts[2] = kept_loop(qs[0], k, global, launches);
    ts[3] = read_async_loop(qs[1], NULL, global, x, &pageable, launches / 10 + 1);
    ts[4] = read_async_loop(qs[1], NULL, global, x, host, launches / 10 + 1);
    ts[5] = read_async_loop(qs[1], k, global, x, host, launches / 10 + 1);
    ts[6] = read_async_loop(qs[0], k, global, x, host, launches / 10 + 1);
    for (v = 0; v < 7; v++)
      if (r > 0 && ts[v] < best2[v]) best2[v] = ts[v];
  }
  for (v = 0; v < 7; v++) printf("%s_us %.3f\n", more[v], best2[v] * 1e6);
  clEnqueueUnmapMemObject(qs[1], pinned, host, 0, NULL, NULL);
  clFinish(qs[1]);
  clReleaseMemObject(pinned);
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
