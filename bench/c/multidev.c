/*
** bench/c/multidev.c: what an OpenCL driver allows for programs in a
** context of several devices (issue 16). For each device d of the first
** platform with two or more devices, in one context of them all:
**   a) source built for d alone, then clCreateKernelsInProgram / clCreateKernel
**   b) source built for every device
**   c) the binary of (a) loaded for d alone (clCreateProgramWithBinary)
**   d) a separate context for d alone, source built for d
** and whether a buffer written by a kernel on device 1 is read right by a
** kernel on device 2 (one context). Prints one line per case.
**   cc -std=c99 bench/c/multidev.c -lOpenCL -o build/multidev && build/multidev
*/
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *src =
  "__kernel void f(__global int *x, int v) { x[get_global_id(0)] += v; }\n";

static void kernels(const char *what, cl_program p, cl_int built) {
  cl_uint n = 0;
  cl_int e1 = CL_SUCCESS, e2 = CL_SUCCESS;
  cl_kernel k = NULL, ks[4];
  if (built == CL_SUCCESS) {
    e1 = clCreateKernelsInProgram(p, 4, ks, &n);
    if (e1 == CL_SUCCESS) for (cl_uint i = 0; i < n; i++) clReleaseKernel(ks[i]);
    k = clCreateKernel(p, "f", &e2);
    if (k) clReleaseKernel(k);
  }
  printf("%-44s build %d  clCreateKernelsInProgram %d (%u)  clCreateKernel %d\n", what, built,
         e1, n, e2);
}

int main(void) {
  cl_platform_id plats[8];
  cl_uint np = 0, nd = 0, i, d;
  cl_device_id devs[8];
  cl_int err;
  clGetPlatformIDs(8, plats, &np);
  for (i = 0; i < np; i++) {
    nd = 0;
    clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 8, devs, &nd);
    if (nd >= 2) break;
  }
  if (i == np) { printf("no platform with two devices\n"); return 0; }
  cl_context ctx = clCreateContext(NULL, nd, devs, NULL, NULL, &err);
  printf("platform %u: %u devices, context %d\n", i, nd, err);
  for (d = 0; d < nd; d++) {
    char name[256], what[128];
    clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof name, name, NULL);
    printf("device %u: %s\n", d, name);
    size_t len = strlen(src);
    cl_program a = clCreateProgramWithSource(ctx, 1, &src, &len, &err);
    cl_int built = clBuildProgram(a, 1, &devs[d], "", NULL, NULL);
    snprintf(what, sizeof what, "a) source, built for device %u alone", d);
    kernels(what, a, built);
    cl_program b = clCreateProgramWithSource(ctx, 1, &src, &len, &err);
    snprintf(what, sizeof what, "b) source, built for every device");
    kernels(what, b, clBuildProgram(b, 0, NULL, "", NULL, NULL));
    /* c) a's binary for device d */
    cl_uint pn = 0;
    clGetProgramInfo(a, CL_PROGRAM_NUM_DEVICES, sizeof pn, &pn, NULL);
    cl_device_id pd[8];
    size_t sizes[8] = {0};
    clGetProgramInfo(a, CL_PROGRAM_DEVICES, sizeof pd, pd, NULL);
    clGetProgramInfo(a, CL_PROGRAM_BINARY_SIZES, sizeof sizes, sizes, NULL);
    unsigned char *bins[8] = {0};
    for (cl_uint j = 0; j < pn; j++) bins[j] = sizes[j] ? malloc(sizes[j]) : NULL;
    clGetProgramInfo(a, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL);
    for (cl_uint j = 0; j < pn; j++) {
      printf("   program device %u: binary %zu bytes%s\n", j, sizes[j], pd[j] == devs[d] ? " (d)" : "");
      if (pd[j] == devs[d] && sizes[j]) {
        cl_int st;
        const unsigned char *bp = bins[j];
        cl_program c = clCreateProgramWithBinary(ctx, 1, &devs[d], &sizes[j], &bp, &st, &err);
        snprintf(what, sizeof what, "c) binary of (a), loaded for device %u alone", d);
        kernels(what, c, err != CL_SUCCESS ? err : clBuildProgram(c, 1, &devs[d], "", NULL, NULL));
        clReleaseProgram(c);
      }
    }
    for (cl_uint j = 0; j < pn; j++) free(bins[j]);
    cl_context own = clCreateContext(NULL, 1, &devs[d], NULL, NULL, &err);
    cl_program e = clCreateProgramWithSource(own, 1, &src, &len, &err);
    snprintf(what, sizeof what, "d) own context, source for device %u", d);
    kernels(what, e, clBuildProgram(e, 1, &devs[d], "", NULL, NULL));
    clReleaseProgram(a); clReleaseProgram(b); clReleaseProgram(e); clReleaseContext(own);
  }
  /* a buffer shared by two devices' queues, ordered by an event */
  {
    size_t len = strlen(src), n = 1 << 20;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, &len, &err);
    cl_int built = clBuildProgram(p, 0, NULL, "", NULL, NULL);
    cl_kernel k = clCreateKernel(p, "f", &err);
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &err);
    cl_command_queue q0 = clCreateCommandQueue(ctx, devs[0], 0, &err);
    cl_command_queue q1 = clCreateCommandQueue(ctx, devs[1], 0, &err);
    int zero = 0, v1 = 1, v2 = 10, *h = malloc(n * 4);
    cl_event e0, e1;
    clEnqueueFillBuffer(q0, x, &zero, 4, 0, n * 4, 0, NULL, NULL);
    clSetKernelArg(k, 0, sizeof x, &x);
    clSetKernelArg(k, 1, sizeof v1, &v1);
    err = clEnqueueNDRangeKernel(q0, k, 1, NULL, &n, NULL, 0, NULL, &e0);
    clFlush(q0);
    clSetKernelArg(k, 1, sizeof v2, &v2);
    cl_int err2 = clEnqueueNDRangeKernel(q1, k, 1, NULL, &n, NULL, 1, &e0, &e1);
    clEnqueueReadBuffer(q1, x, CL_TRUE, 0, n * 4, h, 1, &e1, NULL);
    size_t bad = 0;
    for (size_t j = 0; j < n; j++) bad += h[j] != 11;
    printf("shared buffer: build %d, kernel on dev0 %d, on dev1 %d, %zu of %zu wrong\n", built,
           err, err2, bad, n);
  }
  return 0;
}
