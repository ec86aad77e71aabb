/*
** bench/c/transfer.c: the C baseline of bench/transfer.lua. A plain OpenCL
** host doing what luagpu's transfers do: on an in-order queue with
** profiling (luagpu's default queue), enqueue a non-blocking
** clEnqueueWriteBuffer / ReadBuffer / CopyBuffer / FillBuffer with an
** event, wait for the event, release it.
**
**   bench_transfer MIB REPEATS [DEVICE-NAME]
**
** prints "device NAME" and, for each of write, read, copy and fill, a line
** "OP_mbps X": the median of REPEATS transfers of MIB MiB, in MB/s (10^6
** bytes per second). The host memory is 64-byte aligned and touched before
** timing, like a luagpu host array.
*/
#define BENCH_NAME "bench_transfer"
#include "common.h"

enum { WRITE, READ, COPY, FILL, NOPS };
static const char *const op_names[NOPS] = {"write", "read", "copy", "fill"};

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 64, bytes = mib << 20;
  int reps = argc > 2 ? atoi(argv[2]) : 10, r, op;
  cl_device_id dev = pick_device(argc > 3 ? argv[3] : NULL);
  cl_context ctx;
  cl_command_queue q;
  cl_mem a, b;
  cl_event ev = NULL;
  cl_int err;
  cl_float zero = 0.0f;
  double median[NOPS], times[256], t0, t;
  char name[256];
  void *host;

  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
  ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  check(err, "clCreateContext");
  q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
  check(err, "clCreateCommandQueue");
  a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  check(err, "clCreateBuffer");
  b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  check(err, "clCreateBuffer");
  if (posix_memalign(&host, 64, bytes) != 0) check(CL_OUT_OF_HOST_MEMORY, "posix_memalign");
  memset(host, 1, bytes);
  check(clEnqueueFillBuffer(q, a, &zero, sizeof zero, 0, bytes, 0, NULL, NULL), "fill");
  check(clEnqueueFillBuffer(q, b, &zero, sizeof zero, 0, bytes, 0, NULL, NULL), "fill");
  check(clFinish(q), "clFinish");

  for (op = 0; op < NOPS; op++) {
    if (reps > 255) reps = 255;
    for (r = 0; r <= reps; r++) {   /* round 0 warms up */
      t0 = now();
      switch (op) {
        case WRITE: err = clEnqueueWriteBuffer(q, a, CL_FALSE, 0, bytes, host, 0, NULL, &ev); break;
        case READ:  err = clEnqueueReadBuffer(q, a, CL_FALSE, 0, bytes, host, 0, NULL, &ev); break;
        case COPY:  err = clEnqueueCopyBuffer(q, a, b, 0, 0, bytes, 0, NULL, &ev); break;
        default:    err = clEnqueueFillBuffer(q, b, &zero, sizeof zero, 0, bytes, 0, NULL, &ev); break;
      }
      check(err, op_names[op]);
      check(clWaitForEvents(1, &ev), "clWaitForEvents");
      clReleaseEvent(ev);
      t = now() - t0;
      if (r > 0) times[r - 1] = t;
    }
    qsort(times, (size_t)reps, sizeof times[0], cmp_double);
    median[op] = times[reps / 2];                /* the median */
  }

  printf("device %s\n", name);
  for (op = 0; op < NOPS; op++) printf("%s_mbps %.1f\n", op_names[op], (double)bytes / median[op] / 1e6);
  free(host);
  clReleaseMemObject(a);
  clReleaseMemObject(b);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return 0;
}
