/*
** bench/c/twogpu.c: does running a memory-bound kernel on two GPUs at once
** cost more when both are in one OpenCL context (as luagpu makes them) than
** in a context each? (issue 16: reduce.sum split over two H200s stops at
** 1.7x). Each GPU reads N floats (default 2^29, 2 GiB) in a kernel that sums
** them per work-item; wall clock, medians of REPS after a warm-up:
**   one GPU      enqueue on GPU 1, clFinish
**   shared       one context of both: enqueue on 1, flush, on 2, flush, finish both
**   own          a context per GPU: the same
**   make build/bench_twogpu && build/bench_twogpu [LOG2N [REPS]]
** On two H200s both forms took 1.00-1.03x one GPU's time for twice the work:
** the driver runs two GPUs of one context side by side.
*/
#define CL_TARGET_OPENCL_VERSION 120
#define _POSIX_C_SOURCE 200809L
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *src =
  "__kernel void fill(__global float4 *x) { x[get_global_id(0)] = (float4)(1.0f); }\n"
  "__kernel void sum(__global const float4 *x, __global float *out, uint n4) {\n"
  "  size_t i = get_global_id(0), g = get_global_size(0);\n"
  "  float4 s = (float4)(0.0f);\n"
  "  for (; i < n4; i += g) s += x[i];\n"
  "  out[get_global_id(0)] = s.x + s.y + s.z + s.w;\n"
  "}\n";

#define CHECK(e, what) do { if ((e) != CL_SUCCESS) { \
  fprintf(stderr, "%s: %d\n", what, (int)(e)); exit(1); } } while (0)
#define GROUPS (132 * 8 * 256)   /* work-items: 8 groups of 256 per H200 compute unit */

typedef struct { cl_command_queue q; cl_kernel k; } Side;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A queue, a program and the sum kernel over a new filled buffer of n
   floats on device d of context ctx. */
static Side side(cl_context ctx, cl_device_id d, size_t n) {
  cl_int e;
  Side s;
  size_t n4 = n / 4, g = GROUPS;
  cl_uint n4u = (cl_uint)n4;
  cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
  CHECK(e, "clCreateProgramWithSource");
  CHECK(clBuildProgram(p, 1, &d, "", NULL, NULL), "clBuildProgram");
  s.q = clCreateCommandQueue(ctx, d, 0, &e);
  CHECK(e, "clCreateCommandQueue");
  cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &e);
  CHECK(e, "clCreateBuffer");
  cl_mem out = clCreateBuffer(ctx, CL_MEM_READ_WRITE, g * 4, NULL, &e);
  CHECK(e, "clCreateBuffer");
  cl_kernel f = clCreateKernel(p, "fill", &e);
  CHECK(e, "clCreateKernel fill");
  clSetKernelArg(f, 0, sizeof x, &x);
  CHECK(clEnqueueNDRangeKernel(s.q, f, 1, NULL, &n4, NULL, 0, NULL, NULL), "fill");
  s.k = clCreateKernel(p, "sum", &e);
  CHECK(e, "clCreateKernel sum");
  clSetKernelArg(s.k, 0, sizeof x, &x);
  clSetKernelArg(s.k, 1, sizeof out, &out);
  clSetKernelArg(s.k, 2, sizeof n4u, &n4u);
  CHECK(clFinish(s.q), "clFinish");
  return s;
}

static void launch(Side *s) {
  size_t g = GROUPS, l = 256;
  CHECK(clEnqueueNDRangeKernel(s->q, s->k, 1, NULL, &g, &l, 0, NULL, NULL), "sum");
  clFlush(s->q);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median wall time of reps rounds of launching on sides[0..count-1]
   and finishing them all. */
static double median_of(Side *sides, int count, int reps) {
  double t[256];
  for (int r = -3; r < reps; r++) {
    double t0 = now();
    for (int i = 0; i < count; i++) launch(&sides[i]);
    for (int i = 0; i < count; i++) clFinish(sides[i].q);
    if (r >= 0) t[r] = now() - t0;
  }
  qsort(t, (size_t)reps, sizeof t[0], cmp);
  return t[reps / 2];
}

int main(int argc, char **argv) {
  int log2n = argc > 1 ? atoi(argv[1]) : 29, reps = argc > 2 ? atoi(argv[2]) : 21;
  size_t n = (size_t)1 << log2n;
  cl_platform_id plats[8];
  cl_uint np = 0, nd = 0;
  cl_device_id devs[8];
  cl_int e;
  if (reps > 256) reps = 256;
  CHECK(clGetPlatformIDs(8, plats, &np), "clGetPlatformIDs");
  for (cl_uint i = 0; i < np && nd < 2; i++)
    if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_GPU, 8, devs, &nd) != CL_SUCCESS) nd = 0;
  for (cl_uint i = 0; i < np && nd < 2; i++)   /* no two GPUs: any two devices (PoCL) */
    if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 8, devs, &nd) != CL_SUCCESS) nd = 0;
  if (nd < 2) { fprintf(stderr, "two devices of one platform needed\n"); return 1; }
  cl_context shared = clCreateContext(NULL, 2, devs, NULL, NULL, &e);
  CHECK(e, "clCreateContext shared");
  Side sh[2] = {side(shared, devs[0], n), side(shared, devs[1], n)};
  cl_context own1 = clCreateContext(NULL, 1, &devs[0], NULL, NULL, &e);
  CHECK(e, "clCreateContext own 1");
  cl_context own2 = clCreateContext(NULL, 1, &devs[1], NULL, NULL, &e);
  CHECK(e, "clCreateContext own 2");
  Side ow[2] = {side(own1, devs[0], n), side(own2, devs[1], n)};
  for (int round = 0; round < 2; round++) {
    double one = median_of(sh, 1, reps), two = median_of(sh, 2, reps);
    double one_own = median_of(ow, 1, reps), two_own = median_of(ow, 2, reps);
    printf("2^%d floats per GPU, medians of %d (round %d)\n", log2n, reps, round + 1);
    printf("  one GPU, shared context   %.3f ms\n", one * 1e3);
    printf("  two GPUs, shared context  %.3f ms  (%.2fx one GPU's time, for twice the work)\n",
           two * 1e3, two / one);
    printf("  one GPU, own context      %.3f ms\n", one_own * 1e3);
    printf("  two GPUs, own contexts    %.3f ms  (%.2fx one GPU's time)\n", two_own * 1e3,
           two_own / one_own);
  }
  return 0;
}
