/*
** internal.h: what the subsystems of luagpu share. Nothing here is public;
** the embedding API is luagpu.h.
**
** Layout of the module: module.c opens each subsystem with lg_open_* in turn,
** each one registering its metatable(s) and adding its functions to the
** module table (at the top of the stack when lg_open_* is called) and, where
** it adds methods to another type (dev:buffer, dev:build, dev:run), through
** lg_add_methods.
*/
#ifndef LUAGPU_INTERNAL_H
#define LUAGPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "luagpu.h"
#include <lauxlib.h>

#define LG_VERSION "0.1.0"

/* Metatable names: what users see in errors and tostring. */
#define LG_PLATFORM_MT "luagpu.Platform"
#define LG_CONTEXT_MT  "luagpu.Context"
#define LG_DEVICE_MT   "luagpu.Device"
#define LG_QUEUE_MT    "luagpu.Queue"
#define LG_ARRAY_MT    "luagpu.Array"
#define LG_BUFFER_MT   "luagpu.Buffer"
#define LG_EVENT_MT    "luagpu.Event"
#define LG_PROGRAM_MT  "luagpu.Program"
#define LG_KERNEL_MT   "luagpu.Kernel"
#define LG_CALL_MT     "luagpu.Call"
#define LG_LOCALMEM_MT "luagpu.LocalMem"

#define LG_MAXDIM 8          /* most dimensions of an array or buffer shape */
#define LG_TYPENAME_MAX 16   /* "ushort16" and the NUL fit */

/* ------------------------------------------------------------ errors.c */

/* "CL_INVALID_VALUE" for -30; "CL_UNKNOWN_ERROR" for what it does not know */
const char *lg_clerror_name(cl_int err);
/* Raises "luagpu: CALL: NAME (ERR)" and, when hint is not NULL, ": hint"
** formatted as by lua_pushfstring. Never returns. */
int lg_clerror(lua_State *L, const char *call, cl_int err, const char *hint, ...);
/* Raises "luagpu: FN: argument #ARG: message". ARG is the number the user
** sees: for methods, self does not count (b:write(x): x is #1). */
int lg_argerror(lua_State *L, const char *fn, int arg, const char *fmt, ...);
/* Raises "luagpu: FN: message". */
int lg_error(lua_State *L, const char *fn, const char *fmt, ...);
/* Raises "luagpu: FN: argument #ARG: expected WHAT, got TYPENAME" for the
** value at stack index idx (typename uses __name, so "luagpu.Buffer"). */
int lg_typeerror(lua_State *L, const char *fn, int arg, int idx, const char *what);
/* True for the CL errors that mean "out of memory": a full collection may
** free device memory held by dead userdata. */
int lg_is_oom(cl_int err);

/* Adds the functions of fns to the methods (__index) table of metatable
** mt, which must already be registered. */
void lg_add_methods(lua_State *L, const char *mt, const luaL_Reg *fns);
/* Creates metatable mt with __name, the methods table as __index (unless
** the metamethods set __index themselves), and metamethods meta. Leaves
** nothing on the stack. */
void lg_newclass(lua_State *L, const char *mt, const luaL_Reg *methods,
                 const luaL_Reg *meta);
/* For __index functions of classes with fields: pushes the method named by
** the key at keyidx of the object at objidx and returns 1, or pushes nothing
** and returns 0 when there is no such method. */
int lg_pushmethod(lua_State *L, int objidx, int keyidx);
/* Reads a size (integer >= 0) from the value at idx; raises naming fn/arg. */
size_t lg_checksize(lua_State *L, int idx, const char *fn, int arg, const char *what);

/* ------------------------------------------------------------- types.c */

typedef enum lg_Scalar {
  LG_CHAR, LG_UCHAR, LG_SHORT, LG_USHORT, LG_INT, LG_UINT,
  LG_LONG, LG_ULONG, LG_FLOAT, LG_DOUBLE, LG_NSCALARS
} lg_Scalar;

/* An element type: a scalar type and a vector width (1, 2, 3, 4, 8, 16). */
typedef struct lg_Type {
  lg_Scalar scalar;
  int width;
} lg_Type;

extern const char *const lg_scalar_names[];   /* "char" .. "double", NULL */
size_t lg_scalar_size(lg_Scalar s);
int lg_scalar_isfloat(lg_Scalar s);
/* Scalars stored per element: the width, but 4 for width 3 (float3 takes
** the space of float4, as in OpenCL). */
int lg_type_slots(lg_Type t);
size_t lg_type_size(lg_Type t);                  /* bytes per element */
const char *lg_type_name(lg_Type t, char *buf);  /* buf: LG_TYPENAME_MAX */
/* Parses "float", "uchar4", ...; returns 1 on success, 0 if unknown. Also
** accepts the OpenCL spellings "unsigned int" etc. and "size_t"-free names
** only; "half" is not supported. */
int lg_parse_type(const char *s, lg_Type *t);
/* lg_parse_type on the string argument at idx, raising naming fn/arg. */
lg_Type lg_checktype(lua_State *L, int idx, const char *fn, int arg);
/* Stores the Lua value at idx into *p as scalar s. Raises
** "luagpu: FN: WHAT: ..." when it is not a number or does not fit s
** (2.5 into int, 300 into uchar, -1 into uint). Integers reach long/ulong
** exactly; ulong takes Lua's negative integers as their two's complement
** only when they come from math.ult-style use (i.e. never: -1 raises). */
void lg_store_scalar(lua_State *L, int idx, lg_Scalar s, void *p,
                     const char *fn, const char *what);
/* Pushes the scalar at p: integers as Lua integers (ulong above 2^63-1
** wraps, as Lua's own unsigned arithmetic does), floats as floats. */
void lg_push_scalar(lua_State *L, lg_Scalar s, const void *p);

/* ------------------------------------------------------------- array.c */

/* A host array: typed, off-heap (the data lives inside the userdata itself,
** so it is freed only when Lua frees the userdata: an Event that keeps the
** array in its user value keeps the memory valid). */
typedef struct lg_Array {
  lg_Type type;
  size_t count;                /* elements (vectors for vector types) */
  size_t nscalars;             /* count * width: what #a gives */
  int ndim;
  size_t shape[LG_MAXDIM];     /* shape[0..ndim-1]; {count} for 1-D */
  size_t bytes;                /* count * lg_type_size(type) */
  void *data;                  /* 64-byte aligned, inside this userdata */
} lg_Array;

/* Pushes a new zero-filled array of count elements of type t (1-D). */
lg_Array *lg_newarray(lua_State *L, lg_Type t, size_t count);
/* Same, with a shape; count is the product of shape. */
lg_Array *lg_newarray_shaped(lua_State *L, lg_Type t, int ndim, const size_t *shape);
lg_Array *lg_checkarray(lua_State *L, int idx);
lg_Array *lg_testarray(lua_State *L, int idx);   /* NULL if not an array */
/* Pushes a new array of type t holding the flat list of scalars in the
** table at idx. When expect_count is not (size_t)-1 the table must hold
** exactly expect_count elements (expect_count * width scalars); raises
** "luagpu: FN: argument #ARG: expected N values, got M" otherwise. */
lg_Array *lg_table_to_array(lua_State *L, int idx, lg_Type t, size_t expect_count,
                            const char *fn, int arg);

/* --------------------------------------------------------------- npy.c */
void lg_open_npy(lua_State *L);     /* a:save, gpu.load */

/* ------------------------------------------------------------ device.c */

/* One per platform, shared by its devices (uservalue 1 of each Device). */
typedef struct lg_Context {
  cl_context ctx;              /* NULL once released */
  cl_platform_id platform;
  size_t bytes_since_gc;       /* device bytes allocated since the last full GC */
  size_t gc_threshold;         /* collect when bytes_since_gc passes this */
  int borrowed;                /* handed in by an embedding application */
} lg_Context;

typedef struct lg_Device {
  cl_device_id id;
  cl_platform_id platform;
  cl_context ctx;              /* borrowed from the Context (uservalue 1) */
  lg_Context *context;
  cl_command_queue queue;      /* default queue, from the Queue in uservalue 2 */
  cl_device_type type;
  int fp64;
  cl_uint mem_base_addr_align; /* in bytes (OpenCL reports bits) */
  size_t max_work_group_size;
  cl_uint max_work_item_dims;
  size_t max_work_item_sizes[3];
  cl_ulong global_mem_size, max_alloc_size, local_mem_size;
  char name[128];
} lg_Device;
/* Device uservalues: 1 Context, 2 default Queue, 3 table of fields. */

lg_Device *lg_checkdevice(lua_State *L, int idx);
lg_Device *lg_testdevice(lua_State *L, int idx);
/* Pushes the device's default Queue userdata. */
void lg_push_default_queue(lua_State *L, int devidx);
/* Pushes the Device userdata for id (one per cl_device_id, cached). */
lg_Device *lg_push_device(lua_State *L, cl_device_id id);
/* Tells the collector that bytes of device memory were just allocated in
** context c; runs a full collection when enough has piled up since the last. */
void lg_account_alloc(lua_State *L, lg_Context *c, size_t bytes);

/* ------------------------------------------------------------- queue.c */

typedef struct lg_Queue {
  cl_command_queue q;          /* NULL once released */
  lg_Device *dev;              /* kept alive by uservalue 1 */
  int profiling, out_of_order;
  int borrowed;                /* handed in by an embedding application */
} lg_Queue;

lg_Queue *lg_checkqueue(lua_State *L, int idx);
lg_Queue *lg_testqueue(lua_State *L, int idx);
/* Pushes a new Queue on the device at devidx. */
lg_Queue *lg_newqueue(lua_State *L, int devidx, int profiling, int out_of_order);

/* The options table every enqueueing call takes: {wait = {ev, ...}, queue = q}.
** lg_getopts reads it from stack index arg (none or nil: defaults) for the
** device at devidx and pushes two values: the Queue userdata to use (the
** device's default queue unless opts.queue) and a userdata holding the
** wait list (or nil when empty). Every event must belong to the device's
** context. o->queue and o->wait stay valid while those two stay on the stack. */
typedef struct lg_Opts {
  lg_Queue *queue;
  cl_uint nwait;
  const cl_event *wait;
} lg_Opts;
void lg_getopts(lua_State *L, int arg, int devidx, const char *fn, int argno, lg_Opts *o);
/* Collects the Events at stack indices first..last (dev:run's trailing
** events) into a wait list: pushes one userdata holding it (or nil when
** empty) and sets o->nwait and o->wait. Each must belong to context ctx. */
void lg_push_waitlist(lua_State *L, int first, int last, cl_context ctx,
                      const char *fn, lg_Opts *o);

/* ------------------------------------------------------------- event.c */

/* What ev:wait() returns. */
typedef enum lg_Result {
  LG_RESULT_NONE,              /* nothing */
  LG_RESULT_VALUE,             /* uservalue 2 as it is (a host array) */
  LG_RESULT_SCALAR             /* uservalue 2 is a 1-element array: its number */
} lg_Result;

typedef struct lg_Event {
  cl_event ev;                 /* NULL once released */
  lg_Result result;
  int profiling;               /* the queue had profiling on */
  char command[48];            /* "write", "read", "kernel saxpy", ... */
} lg_Event;
/* Event uservalues: 1 what it keeps alive (a table), 2 the result. */

/* Pushes a new Event owning ev (which must not be NULL; it is released if
** pushing fails). The nkeep values at stack indices keep[] (buffers, host
** arrays, the queue, a bound call) stay alive until the command completes
** and the Event is collected or waited on: its __gc waits for completion
** first, so nothing the command uses is freed under it. */
lg_Event *lg_pushevent(lua_State *L, cl_event ev, const char *command,
                       const int *keep, int nkeep);
/* Sets the result of the Event at evidx to the value at validx. */
void lg_event_setresult(lua_State *L, int evidx, int validx, lg_Result kind);
lg_Event *lg_checkevent(lua_State *L, int idx);
lg_Event *lg_testevent(lua_State *L, int idx);

/* ------------------------------------------------------------ buffer.c */

typedef enum lg_Access { LG_MIXED, LG_IN, LG_OUT } lg_Access;

/* A device buffer, or a view (b:sub) of one. A view shares its root's
** cl_mem and keeps its parent in uservalue 2; it becomes an OpenCL
** sub-buffer only when used as a kernel argument. */
typedef struct lg_Buffer {
  cl_mem mem;                  /* roots: owned, NULL once released; views: NULL */
  struct lg_Buffer *root;      /* self for a root; kept alive via uservalue 2 */
  cl_mem sub;                  /* views: the sub-buffer, made on first kernel use */
  lg_Type type;
  size_t offset;               /* in elements, from the root's start */
  size_t count;                /* elements: what #b gives */
  int ndim;
  size_t shape[LG_MAXDIM];
  lg_Access access;
  int is_scalar;               /* made by dev:scalar: read gives a number */
  int released;                /* this view (or root) was released */
} lg_Buffer;
/* Buffer uservalues: 1 Device, 2 parent (views only). */

/* Raises "attempt to use a released buffer" for a released buffer or a
** view whose root was released. */
lg_Buffer *lg_checkbuffer(lua_State *L, int idx);
lg_Buffer *lg_testbuffer(lua_State *L, int idx);  /* NULL if not a Buffer */
/* The cl_mem to pass to a kernel: the root's for a root, the sub-buffer
** for a view (created here; raises with the alignment in bytes when the
** view's origin is not aligned to the device's mem_base_addr_align). */
cl_mem lg_buffer_kernel_mem(lua_State *L, lg_Buffer *b);
/* Pushes a new root Buffer wrapping mem (retained by the caller's
** reference: the Buffer takes it over) on the device at devidx. */
lg_Buffer *lg_wrapbuffer(lua_State *L, int devidx, cl_mem mem, lg_Type t,
                         size_t count, lg_Access access);

/* ----------------------------------------------- program.c and kernel.c */

void lg_open_device(lua_State *L);
void lg_open_queue(lua_State *L);
void lg_open_array(lua_State *L);
void lg_open_event(lua_State *L);
void lg_open_buffer(lua_State *L);
void lg_open_program(lua_State *L);
void lg_open_kernel(lua_State *L);

/* ------------------------------------------------------------ module.c */

/* The folder the module was loaded from, resolved to the checkout or the
** install prefix: where lua/ and kernels/ are looked up. Set at open. */
const char *lg_root_dir(void);
/* Embedded kernel sources (build/kernels.c, generated from kernels/). */
typedef struct lg_EmbeddedFile { const char *name; const char *text; } lg_EmbeddedFile;
extern const lg_EmbeddedFile lg_embedded_kernels[];   /* ends with {NULL, NULL} */

#endif
