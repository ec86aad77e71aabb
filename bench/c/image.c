/*
** bench/c/image.c: the C baseline of bench/gpu/image.lua. A plain OpenCL
** host doing what img:write(a):wait() and img:read(a):wait() do, on an
** in-order queue with profiling on (luagpu's default queue): for 2-D RGBA
** float images of each size, REPS calls of clEnqueueWriteImage and
** clEnqueueReadImage of the whole image, both blocking (CL_TRUE, no event)
** and non-blocking with an event that is waited for and released (what
** luagpu enqueues). The host memory is 64-byte aligned and touched before
** timing, like a luagpu host array.
**
**   bench_image [REPS [SIZES [DEVICE-NAME]]] > c.txt
**
** SIZES: the image sides, comma-separated (default 256,4096). Prints
** "device NAME", "reps N", and per size S lines "CHOST OP_S MEDIAN us" for
** OP write, read (blocking) and write_event, read_event: the median wall
** clock of one call (round 0, a warm-up, not counted).
*/
#define BENCH_NAME "bench_image"
#include "common.h"

#define MAX_REPS 1000

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

enum { WRITE, READ, WRITE_EVENT, READ_EVENT, NOPS };
static const char *const op_names[NOPS] = {"write", "read", "write_event", "read_event"};

/* One call of op on the whole image; returns its wall clock in seconds. */
static double one_call(cl_command_queue q, cl_mem im, int op, const size_t *region,
                       void *host) {
  static const size_t origin[3] = {0, 0, 0};
  cl_event ev = NULL;
  double t0 = now();
  switch (op) {
    case WRITE:
      check(clEnqueueWriteImage(q, im, CL_TRUE, origin, region, 0, 0, host, 0, NULL, NULL),
            "clEnqueueWriteImage");
      break;
    case READ:
      check(clEnqueueReadImage(q, im, CL_TRUE, origin, region, 0, 0, host, 0, NULL, NULL),
            "clEnqueueReadImage");
      break;
    case WRITE_EVENT:
      check(clEnqueueWriteImage(q, im, CL_FALSE, origin, region, 0, 0, host, 0, NULL, &ev),
            "clEnqueueWriteImage");
      break;
    default:
      check(clEnqueueReadImage(q, im, CL_FALSE, origin, region, 0, 0, host, 0, NULL, &ev),
            "clEnqueueReadImage");
      break;
  }
  if (ev != NULL) {
    check(clWaitForEvents(1, &ev), "clWaitForEvents");
    clReleaseEvent(ev);
  }
  return now() - t0;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 20, r, op;
  const char *sizes = argc > 2 ? argv[2] : "256,4096", *p;
  cl_device_id dev = pick_device(argc > 3 ? argv[3] : NULL);
  static double times[MAX_REPS];
  cl_image_format f = {CL_RGBA, CL_FLOAT};
  cl_context ctx;
  cl_command_queue q;
  cl_int err;
  char name[256];

  if (reps < 1) reps = 1;
  if (reps > MAX_REPS - 1) reps = MAX_REPS - 1;
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
  ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  check(err, "clCreateContext");
  q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
  check(err, "clCreateCommandQueue");
  printf("device %s\nreps %d\n", name, reps);
  for (p = sizes; *p != '\0';) {
    size_t side = (size_t)strtoul(p, NULL, 10), bytes = side * side * 4 * sizeof(cl_float);
    size_t region[3];
    cl_image_desc desc;
    void *host;
    cl_mem im;
    while (*p != '\0' && *p != ',') p++;
    if (*p == ',') p++;
    if (side == 0) continue;
    region[0] = side;
    region[1] = side;
    region[2] = 1;
    memset(&desc, 0, sizeof desc);
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = side;
    desc.image_height = side;
    im = clCreateImage(ctx, CL_MEM_READ_WRITE, &f, &desc, NULL, &err);
    check(err, "clCreateImage");
    if (posix_memalign(&host, 64, bytes) != 0) check(CL_OUT_OF_HOST_MEMORY, "posix_memalign");
    memset(host, 0, bytes);
    for (op = 0; op < NOPS; op++) {
      for (r = 0; r <= reps; r++) {   /* round 0 warms up */
        double t = one_call(q, im, op, region, host);
        if (r > 0) times[r - 1] = t;
      }
      printf("CHOST %s_%d %.2f us\n", op_names[op], (int)side, median(times, reps) * 1e6);
      fflush(stdout);
    }
    clReleaseMemObject(im);
    free(host);
  }
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return 0;
}
