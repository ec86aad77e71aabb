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
** is timed without the clFinish that follows it).
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

  clReleaseMemObject(x);
  clReleaseMemObject(y);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return 0;
}
