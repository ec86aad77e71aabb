/*
** clblast_sgemm.c: the baseline for bench/matmul.lua. Times CLBlast's SGEMM
** (or DGEMM with --double), row-major C = A * B, on one OpenCL device.
**
**   bench_clblast_sgemm [--device SUBSTR] [--reps N] [--double] SIZE|MxNxK ...
**
** SUBSTR picks the first device whose "platform / device name" contains it,
** case-insensitively (as gpu.device(SUBSTR) does); "gpu" ("cpu") the first GPU (CPU);
** default: the first device.
** For each size it prints one line:
**
**   clblast M N K MEDIAN_MS BEST_MS GFLOPS MAXRELERR
**
** GFLOPS is 2*M*N*K over the median wall time of one call (enqueue to
** clFinish), after one warm-up call that also builds CLBlast's kernels;
** MAXRELERR compares 64 sampled entries of C with a CPU dot product.
*/
#define CL_TARGET_OPENCL_VERSION 120
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <CL/cl.h>
#include <clblast_c.h>

static void die(const char *what, long code) {
  fprintf(stderr, "bench_clblast_sgemm: %s (%ld)\n", what, code);
  exit(1);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int contains_nocase(const char *hay, const char *needle) {
  size_t n = strlen(needle), i, j;
  for (i = 0; hay[i]; i++) {
    for (j = 0; j < n && hay[i + j]; j++)
      if (tolower((unsigned char)hay[i + j]) != tolower((unsigned char)needle[j])) break;
    if (j == n) return 1;
  }
  return n == 0;
}

/* The first device whose "platform / device name" contains want (NULL: any). */
static cl_device_id pick_device(const char *want, cl_platform_id *platform) {
  cl_platform_id plats[16];
  cl_uint np = 0, p, d;
  if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0) die("no OpenCL platform", 0);
  for (p = 0; p < np && p < 16; p++) {
    cl_device_id devs[16];
    cl_uint nd = 0;
    char pname[256], dname[256], full[520];
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS) continue;
    clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
    for (d = 0; d < nd && d < 16; d++) {
      clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof dname, dname, NULL);
      snprintf(full, sizeof full, "%s / %s", pname, dname);
      cl_device_type type = 0;
      clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof type, &type, NULL);
      int match = want == NULL ? 1
                : strcmp(want, "gpu") == 0 ? (type & CL_DEVICE_TYPE_GPU) != 0
                : strcmp(want, "cpu") == 0 ? (type & CL_DEVICE_TYPE_CPU) != 0
                : contains_nocase(full, want);
      if (match) {
        *platform = plats[p];
        fprintf(stderr, "bench_clblast_sgemm: device %s\n", full);
        return devs[d];
      }
    }
  }
  die("no device matches --device", 0);
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One size: fills A and B with random values in [-1, 1), times reps calls. */
static void run_size(cl_context ctx, cl_command_queue q, size_t m, size_t n, size_t k,
                     int reps, int dbl) {
  size_t es = dbl ? sizeof(double) : sizeof(float);
  size_t na = m * k, nb = k * n, nc = m * n, i;
  double *ha = malloc(na * sizeof(double)), *hb = malloc(nb * sizeof(double));
  void *ta = malloc(na * es), *tb = malloc(nb * es), *tc = malloc(nc * es);
  double *times = malloc((size_t)reps * sizeof(double)), maxerr = 0;
  cl_int err;
  cl_mem a, b, c;
  int r;
  if (!ha || !hb || !ta || !tb || !tc || !times) die("out of host memory", 0);
  for (i = 0; i < na; i++) ha[i] = 2.0 * rand() / ((double)RAND_MAX + 1) - 1;
  for (i = 0; i < nb; i++) hb[i] = 2.0 * rand() / ((double)RAND_MAX + 1) - 1;
  for (i = 0; i < na; i++) { if (dbl) ((double *)ta)[i] = ha[i]; else ((float *)ta)[i] = (float)ha[i]; }
  for (i = 0; i < nb; i++) { if (dbl) ((double *)tb)[i] = hb[i]; else ((float *)tb)[i] = (float)hb[i]; }
  a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, na * es, ta, &err);
  if (err) die("clCreateBuffer", err);
  b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, nb * es, tb, &err);
  if (err) die("clCreateBuffer", err);
  c = clCreateBuffer(ctx, CL_MEM_READ_WRITE, nc * es, NULL, &err);
  if (err) die("clCreateBuffer", err);
  for (r = -1; r < reps; r++) {
    double t0 = now();
    CLBlastStatusCode s = dbl
      ? CLBlastDgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, m, n, k,
                     1.0, a, 0, k, b, 0, n, 0.0, c, 0, n, &q, NULL)
      : CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, m, n, k,
                     1.0f, a, 0, k, b, 0, n, 0.0f, c, 0, n, &q, NULL);
    if (s != CLBlastSuccess) die("CLBlast gemm failed", s);
    clFinish(q);
    if (r >= 0) times[r] = now() - t0;
  }
  err = clEnqueueReadBuffer(q, c, CL_TRUE, 0, nc * es, tc, 0, NULL, NULL);
  if (err) die("clEnqueueReadBuffer", err);
  for (r = 0; r < 64; r++) {
    size_t row = (size_t)rand() % m, col = (size_t)rand() % n, j;
    double want = 0, scale = 0, got, e;
    for (j = 0; j < k; j++) {
      want += ha[row * k + j] * hb[j * n + col];
      scale += ha[row * k + j] < 0 ? -ha[row * k + j] : ha[row * k + j];
    }
    got = dbl ? ((double *)tc)[row * n + col] : ((float *)tc)[row * n + col];
    e = (got > want ? got - want : want - got) / (scale > 1 ? scale : 1);
    if (e > maxerr) maxerr = e;
  }
  qsort(times, (size_t)reps, sizeof(double), cmp_double);
  printf("clblast %zu %zu %zu %.4f %.4f %.2f %.2e\n", m, n, k, times[reps / 2] * 1e3,
         times[0] * 1e3, 2.0 * (double)m * (double)n * (double)k / times[reps / 2] * 1e-9, maxerr);
  fflush(stdout);
  clReleaseMemObject(a); clReleaseMemObject(b); clReleaseMemObject(c);
  free(ha); free(hb); free(ta); free(tb); free(tc); free(times);
}

int main(int argc, char **argv) {
  const char *want = NULL;
  int reps = 10, dbl = 0, i, nsizes = 0;
  cl_platform_id platform;
  cl_device_id dev;
  cl_context ctx;
  cl_command_queue q;
  cl_int err;
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) want = argv[++i];
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--double") == 0) dbl = 1;
    else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: bench_clblast_sgemm [--device SUBSTR] [--reps N] [--double] SIZE|MxNxK ...\n");
      return 2;
    } else nsizes++;
  }
  if (nsizes == 0 || reps < 1) die("give at least one size and --reps >= 1", 0);
  dev = pick_device(want, &platform);
  {
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
    ctx = clCreateContext(props, 1, &dev, NULL, NULL, &err);
    if (err) die("clCreateContext", err);
  }
  q = clCreateCommandQueue(ctx, dev, 0, &err);
  if (err) die("clCreateCommandQueue", err);
  srand(12345);
  for (i = 1; i < argc; i++) {
    unsigned long m, n, k;
    if (strcmp(argv[i], "--device") == 0 || strcmp(argv[i], "--reps") == 0) { i++; continue; }
    if (argv[i][0] == '-') continue;
    if (sscanf(argv[i], "%lux%lux%lu", &m, &n, &k) != 3) {
      if (sscanf(argv[i], "%lu", &m) != 1) die("bad size", 0);
      n = k = m;
    }
    if (m == 0 || n == 0 || k == 0) die("sizes must be positive", 0);
    run_size(ctx, q, m, n, k, reps, dbl);
  }
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return 0;
}
