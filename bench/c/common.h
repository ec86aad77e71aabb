/*
** bench/c/common.h: what the C baselines share: a monotonic clock, a check
** that exits on a CL error, and the device choice of gpu.device() (a named
** device, else the first GPU, else the first device). Define BENCH_NAME
** before including it.
*/
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void check(cl_int err, const char *what) {
  if (err != CL_SUCCESS) {
    fprintf(stderr, "%s: %s failed: %d\n", BENCH_NAME, what, (int)err);
    exit(1);
  }
}

/* The device named want (any, when NULL): else the first GPU, else the first device. */
static cl_device_id pick_device(const char *want) {
  cl_platform_id plats[16];
  cl_device_id devs[64], gpu = NULL, any = NULL;
  cl_uint np = 0, nd, i, j;
  char name[256];
  check(clGetPlatformIDs(16, plats, &np), "clGetPlatformIDs");
  for (i = 0; i < np && i < 16; i++) {
    nd = 0;
    if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 64, devs, &nd) != CL_SUCCESS) continue;
    for (j = 0; j < nd && j < 64; j++) {
      cl_device_type t = 0;
      clGetDeviceInfo(devs[j], CL_DEVICE_NAME, sizeof name, name, NULL);
      if (want != NULL && strcmp(name, want) == 0) return devs[j];
      clGetDeviceInfo(devs[j], CL_DEVICE_TYPE, sizeof t, &t, NULL);
      if (any == NULL) any = devs[j];
      if (gpu == NULL && (t & CL_DEVICE_TYPE_GPU)) gpu = devs[j];
    }
  }
  if (any == NULL) check(CL_DEVICE_NOT_FOUND, "finding a device");
  return gpu != NULL ? gpu : any;
}

#endif
