/*
** internal.h: what the subsystems of luagpu share. Nothing here is public;
** the embedding API is luagpu.h.
**
** Layout of the module: module.c opens each subsystem with lg_open_* in turn,
** each one registering its metatable(s) and adding its functions to the
** module table (at the top of the stack when lg_open_* is called) and, where
** it adds methods to another type (dev:buffer, dev:build, dev:run), through
** lg_add_methods. Each file calls only files below it (docs/ARCHITECTURE.md
** draws the layers; tools/layers.lua checks them).
*/
#ifndef LUAGPU_INTERNAL_H
#define LUAGPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
#define LG_MAX_EVENTS 65536  /* most events in one wait list or gpu.wait */

/* ------------------------------------------------------------ errors.c */

/* "CL_INVALID_VALUE" for -30; "CL_UNKNOWN_ERROR" for what it does not know */
const char *lg_clerror_name(cl_int err);
/* The raising functions below put the position of the script's call in
** front of their message: the first frame up the stack that is not one of
** luagpu's Lua helpers, whose chunk names start with the string
** luagpu.core.check leaves in the registry under this key. */
#define LG_HELPERS_DIR_KEY "luagpu.helpers_dir"
/* Raises "luagpu: CALL: NAME (ERR)" and, when hint is not NULL, ": hint"
** formatted as by lua_pushfstring. Never returns. */
int lg_clerror(lua_State *L, const char *call, cl_int err, const char *hint, ...);
/* Raises "luagpu: FN: argument #ARG: message". ARG is the number the user
** sees: for methods, self does not count (b:write(x): x is #1). */
int lg_argerror(lua_State *L, const char *fn, int arg, const char *fmt, ...);
/* The file path at stack index idx (a string, checked by the caller; the
** user's argument #arg): raises where it holds a NUL, which would end it
** early (the C library reads up to it). */
const char *lg_path(lua_State *L, int idx, int arg, const char *fn);
/* Raises "luagpu: FN: message". */
int lg_error(lua_State *L, const char *fn, const char *fmt, ...);
/* Raises "luagpu: FN: message" followed by the string at stack index tail,
** whole (a NUL in it too: a "%s" would end there). */
int lg_error_tail(lua_State *L, int tail, const char *fn, const char *fmt, ...);
/* Raises "luagpu: FN: argument #ARG: expected WHAT, got TYPENAME" for the
** value at stack index idx (typename uses __name, so "luagpu.Buffer"). */
int lg_typeerror(lua_State *L, const char *fn, int arg, int idx, const char *what);
/* The integer at stack index idx (argument #arg of fn), or raises
** "luagpu: FN: argument #ARG: expected an integer, got ..." (luaL's own
** checks name no luagpu call). */
lua_Integer lg_checkinteger(lua_State *L, int idx, const char *fn, int arg);
/* The string at stack index idx (argument #arg of fn; a number is not
** taken), its length in *len when len is not NULL; raises as
** lg_typeerror does. */
const char *lg_checklstring(lua_State *L, int idx, const char *fn, int arg, size_t *len);
/* Raises "luagpu: FN: argument #ARG: WHAT holds a NUL byte" when the string
** at idx (if a string) has one: a name compared by the C library would
** match up to it and the rest be dropped. */
void lg_check_nul(lua_State *L, int idx, const char *fn, int arg, const char *what);
/* Raises "luagpu: FN: argument #K: expected no more arguments, got
** TYPENAME" when more than n values are on the stack (K: the first extra
** one as the user counts, self not counted for a method: self 1). */
void lg_nomore(lua_State *L, const char *fn, int n, int self);
/* luaL_tolstring (the value at idx as text, pushed) and lua_pushfstring's
** "%f" of x, for messages: a NaN shows as "nan" (its sign means nothing;
** Lua's own format gives "-nan" on most hosts, as NumPy does not). */
const char *lg_tolstring(lua_State *L, int idx);
const char *lg_pushnumber(lua_State *L, lua_Number x);
/* Reads a size (integer >= 0) from the value at idx; raises naming fn/arg. */
size_t lg_checksize(lua_State *L, int idx, const char *fn, int arg, const char *what);
/* True for the CL errors that mean "out of memory": a full collection may
** free device memory held by dead userdata. */
int lg_is_oom(cl_int err);

/* ------------------------------------------------------------- state.c */

/* The per-state context: everything luagpu keeps for one Lua state (one per
** state, a userdata in the registry, made on first use (lg_open_context
** makes it before anything else of luagpu's), finalized last at lua_close),
** so that states run independently, in one thread or several. Only the
** state's own thread touches it; OpenCL callbacks on driver threads never
** do (userevent.c's reach a refcounted block of their own). state.c calls
** no file above it: the hooks below are how it calls back, each set once,
** at open, to a fixed function (each declared in the layers block of
** docs/ARCHITECTURE.md, which tools/layers.lua checks). */
#define LG_CLOSE_HOOKS 4
struct lg_TraceRecord;
struct lg_TraceBuild;
typedef struct lg_State {
  int trace_on;                /* gpu.trace records: enqueue paths call lg_trace_add */
  int debug_on;                /* gpu.debug, LUAGPU_DEBUG */
  /* A program (the luagpu REPL, luagpu -v) that wants slow builds told sets
  ** compile_notice: a build from source taking compile_notice_s seconds or
  ** more (LUAGPU_COMPILE_NOTICE_S, default 1) then says so on stderr. */
  int compile_notice;
  double compile_notice_s;
  uint64_t next_serial;        /* of bound calls (call.c) */
  /* A program (the luagpu REPL) that wants waits to stop on Ctrl-C sets this:
  ** ev:wait, gpu.wait and gpu.run_loop then poll the command and raise
  ** "interrupted!" when it answers true (the command goes on). NULL: waits
  ** block in OpenCL. */
  int (*wait_interrupted)(void);
  void (*after_wait)(lua_State *L);   /* userevent.c's: runs the callbacks (lg_after_wait) */
  void (*on_close[LG_CLOSE_HOOKS])(struct lg_State *s);   /* run at lua_close, in order */
  int nclose;
  struct lg_TraceRecord *records;  /* trace.c's record */
  size_t nrecords, cap, dropped;
  cl_event *waits;             /* the records' wait lists, retained */
  size_t nwaits, capwaits;
  struct lg_TraceBuild *builds;  /* trace.c's program builds from source */
  size_t nbuilds, capbuilds;
  cl_command_queue *finish;    /* queues whose finish waits for lua_close */
  size_t nfinish, capfinish;
} lg_State;

/* The state's context (made on first use; raises only for lack of memory). */
lg_State *lg_state(lua_State *L);
/* Adds hook to what lua_close runs on the state, after unset user events
** failed and the put-off finishes are done (once: a hook already there is
** not added again when the module opens again). */
void lg_state_on_close(lua_State *L, void (*hook)(lg_State *s));
/* True when the program (lg_State.wait_interrupted) says a wait must stop. */
int lg_wait_interrupted(lua_State *L);
/* Runs the on_complete callbacks of commands now done (the state's
** after_wait, which userevent.c sets; raising a callback's error): called
** after every blocking wait luagpu does: ev:wait, gpu.wait, ev:profile
** (event.c), q:finish and dev:finish (queue.c), b:get (transfer.c), a
** blocking b:map (map.c), img:read and img:write with {blocking = true}. */
void lg_after_wait(lua_State *L);
/* The user events of gpu.user_event's (a weak set in the registry):
** lg_event_note_user adds the Event at idx; lg_user_events_unset counts
** those still unset; lg_fail_user_events fails them (at lua_close: nothing
** can set them any more). */
void lg_event_note_user(lua_State *L, int idx);
int lg_user_events_unset(lua_State *L);
void lg_fail_user_events(lua_State *L);
/* The finish of a collected queue q (lua_close included): now, or while a
** user event is unset (a command may wait for it) at lua_close, after
** unset user events fail. */
void lg_finish_collected(lua_State *L, cl_command_queue q);
/* "file.lua:12": the first caller up the stack outside luagpu's helpers. */
void lg_lua_where(lua_State *L, char *buf, size_t size);

/* ------------------------------------------------------------- class.c */

/* Adds the functions of fns to the methods (__index) table of metatable
** mt, which must already be registered. */
void lg_add_methods(lua_State *L, const char *mt, const luaL_Reg *fns);
/* Creates metatable mt with __name, the methods table as __index (unless
** the metamethods set __index themselves), metamethods meta, and (unless
** meta sets one) a __newindex raising "luagpu: CLASS: field 'x' is
** read-only". Leaves nothing on the stack. */
void lg_newclass(lua_State *L, const char *mt, const luaL_Reg *methods,
                 const luaL_Reg *meta);
/* savefile.c: how a:save, gpu.write_file and trace files write a file
** whole (the file's comment says where: a temporary file renamed over a
** regular one, in place for anything else). lg_save_open opens for writing
** what path reaches (s->fd) or returns 0 with errno set (and s->why, a
** message to give in place of strerror: lg_save_why); LG_SAVE_NOWAIT: a
** FIFO no process reads raises ENXIO instead of waiting for a reader.
** lg_save_write writes all of data (0 with errno set on failure).
** lg_save_close(s, ok) closes s->fd (unless the caller set it to -1, having
** closed it) and, when ok (else errno says why not), renames the temporary
** file over the target, else removes it; returns 0 with errno set.
** lg_save_is_stream: whether path leads, through its links, to an open
** file of a process's (/dev/stdout, /proc/PID/fd/N). */
typedef struct lg_SaveFile {
  int fd;
  char *target;                /* path with its links followed (malloc'd) */
  char *tmp;                   /* the temporary file beside it; NULL: written in place */
  const char *why;
} lg_SaveFile;
#define LG_SAVE_NOWAIT 1
int lg_save_open(lg_SaveFile *s, const char *path, int flags);
int lg_save_write(lg_SaveFile *s, const void *data, size_t len);
int lg_save_close(lg_SaveFile *s, int ok);
const char *lg_save_why(const lg_SaveFile *s, int err);
int lg_save_is_stream(const char *path);
/* Names the fields (a NULL-ended list) that objects of class mt have:
** gpu.extend refuses a method of such a name, which would hide the field
** (the class's __index looks for methods first). */
void lg_class_fields(lua_State *L, const char *mt, const char *const fields[]);
/* For __index functions of classes with fields: pushes the method named by
** the key at keyidx of the object at objidx and returns 1, or pushes nothing
** and returns 0 when there is no such method. */
int lg_pushmethod(lua_State *L, int objidx, int keyidx);
/* Sets gpu.extend in the module table on top of the stack: methods of Lua
** helpers' added to a class (the classes lg_newclass made), or declared
** to load on first lookup. */
void lg_open_class(lua_State *L);
/* Raises "luagpu: FN: argument #ARG: unknown option 'K' (expected a, b)"
** when the table at idx has a key not in keys (NULL-terminated, listed in
** the order the message gives them). Does nothing when idx is not a table. */
void lg_checkoptions(lua_State *L, int idx, const char *fn, int arg,
                     const char *const keys[]);
/* Raises "luagpu: WHAT:METHOD: attempt to use a released WHAT" when the
** running C function is METHOD of the object at idx (found in its class's
** methods), else "luagpu: attempt to use a released WHAT". Never returns. */
int lg_released_error(lua_State *L, int idx, const char *what);
/* A __released metamethod (gpu.type asks it) for classes whose struct
** begins with their OpenCL handle, NULL once released (Event, Queue, ...). */
int lg_handle_released(lua_State *L);

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
/* lg_store_scalar's common cases without a message at hand: stores the
** Lua integer or float at idx into *p as s and returns 1 where it fits s
** (a float only into float or double); returns 0, storing nothing, for
** anything else, which the caller hands to lg_store_scalar with its
** message (to store, or to raise). */
int lg_store_scalar_quick(lua_State *L, int idx, lg_Scalar s, void *p);
/* Raises "FN: WHAT: U does not fit S (its range)": a ulong value past
** 2^63 - 1 (no Lua integer holds it) for an integer type s, printed
** exactly. */
void lg_ulong_misfit(lua_State *L, const char *fn, const char *what, uint64_t u, lg_Scalar s);
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
  const int *gone;             /* arrays of b:map (and their subs): the mapping's
                               ** flag, set by unmap; NULL for others */
} lg_Array;

/* Pushes a new zero-filled array of count elements of type t (1-D). */
lg_Array *lg_newarray(lua_State *L, lg_Type t, size_t count);
lg_Array *lg_checkarray(lua_State *L, int idx);
lg_Array *lg_testarray(lua_State *L, int idx);   /* NULL if not an array */
/* Pushes a new array of type t holding the flat list of scalars in the
** table at idx. When expect_count is not (size_t)-1 the table must hold
** exactly expect_count elements (expect_count * width scalars); raises
** "luagpu: FN: argument #ARG: expected N values, got M" otherwise. */
lg_Array *lg_table_to_array(lua_State *L, int idx, lg_Type t, size_t expect_count,
                            const char *fn, int arg);
/* A new array of the given shape (count: the product of shape), with the
** caller's name in errors ("luagpu: FN: not enough memory ..."),
** zero-filled only when zero is set. ndim 0 means {1}. */
lg_Array *lg_newarray_for(lua_State *L, lg_Type t, int ndim, const size_t *shape,
                          const char *fn, int zero);
/* The most bytes a host array (and any size luagpu computes from Lua's
** numbers) may span: half of what both size_t and lua_Integer hold. */
#define LG_MAX_BYTES \
  (((size_t)LUA_MAXINTEGER < SIZE_MAX ? (size_t)LUA_MAXINTEGER : SIZE_MAX) / 2)
/* The product of shape, raising "luagpu: FN: too large: ..." when an array of
** that many elements of t could not exist. */
size_t lg_shape_count(lua_State *L, lg_Type t, int ndim, const size_t *shape,
                      const char *fn);
/* The address of scalar i (0-based, over the real lanes: float3 skips the
** padding lane) of a. */
void *lg_array_scalar(const lg_Array *a, size_t i);
/* lg_store_scalar with WHAT formatted from fmt and n ("value #%I") only when
** it raises: the fast path for storing many values. */
void lg_array_store(lua_State *L, int idx, lg_Scalar s, void *p, const char *fn,
                    const char *fmt, lua_Integer n);
/* Copies the scalars of src into dst (same number of scalars), converting
** each with the checks of lg_store_scalar; errors read
** "luagpu: FN: WHAT: value #N: ..." (WHAT may be ""). */
void lg_array_convert(lua_State *L, lg_Array *dst, const lg_Array *src, const char *fn,
                      const char *what);

/* --------------------------------------------------------------- npy.c */
void lg_open_npy(lua_State *L);     /* a:save, gpu.load */

/* --------------------------------------------------- context.c, device.c */

/* One per platform, shared by its devices (uservalue 1 of each Device). */
typedef struct lg_Context {
  cl_context ctx;              /* NULL once released */
  cl_platform_id platform;
  size_t bytes_since_gc;       /* device bytes allocated since the last full GC */
  size_t gc_threshold;         /* collect when bytes_since_gc passes this */
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

/* info.c: the platform ids (malloc'd, *n set; NULL and 0 when there is
** none), a platform's or device's info string (pushed; "" when unknown),
** the words of the string on top as a list (replacing it), "gpu"/"cpu"/...
** for a device type, and a device's limits (filled into d, whose id and
** platform are set) with its table of fields (pushed). */
cl_platform_id *lg_get_platforms(cl_uint *n);
void lg_push_platform_string(lua_State *L, cl_platform_id p, cl_platform_info what);
void lg_push_device_string(lua_State *L, cl_device_id d, cl_device_info what);
void lg_split_words(lua_State *L);
const char *lg_device_type_name(cl_device_type t);
void lg_load_device_fields(lua_State *L, lg_Device *d);
extern const char *const lg_device_field_names[];   /* info.c: the fields it sets */

/* context.c: pushes the Context of platform p (one per platform, cached;
** made over all its devices), or a new one borrowing an application's ctx
** (retained). lg_account_alloc tells the collector that bytes of device
** memory were just allocated in c, and runs a full collection when enough
** has piled up since the last. */
lg_Context *lg_push_context(lua_State *L, cl_platform_id p);
lg_Context *lg_push_borrowed_context(lua_State *L, cl_context ctx, cl_platform_id p);
void lg_account_alloc(lua_State *L, lg_Context *c, size_t bytes);
void lg_open_context(lua_State *L);

/* device.c. lg_checkdevice raises for a Device whose Context was already
** finalized (a late finalizer of the user's, lua_close). */
lg_Device *lg_checkdevice(lua_State *L, int idx);
lg_Device *lg_testdevice(lua_State *L, int idx);
/* Pushes a Platform table for id, as gpu.platforms() lists them. */
void lg_push_platform(lua_State *L, cl_platform_id id);
/* Pushes the Device userdata for id (one per cl_device_id, cached). */
lg_Device *lg_push_device(lua_State *L, cl_device_id id);
/* Pushes a new Device for id with no context, fields nor queue yet (for
** lg_push_device and the embedding API, which fill them in). */
lg_Device *lg_newdevice(lua_State *L, cl_device_id id);

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
/* For a program at its end: fails unset user events, then waits for the
** commands of every queue of the state (however many), calling say once with
** what it waits for when that takes over half a second; returns 1 when
** interrupted() stopped the wait, 0 when all are done. */
int lg_finish_all(lua_State *L, int (*interrupted)(void), void (*say)(const char *msg));
/* Pushes a Queue on the device at devidx wrapping cq (an embedding
** application's; the Queue takes over one reference). */
lg_Queue *lg_wrapqueue(lua_State *L, int devidx, cl_command_queue cq);
/* Pushes the default Queue of the Device at devidx (uservalue 2 of the
** Device, made on first use: in-order, profiling). */
void lg_push_default_queue(lua_State *L, int devidx);

/* -------------------------------------------------------------- sync.c */

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
/* lg_getopts, with the Events at stack indices first..last (dev:run's
** trailing events; none when last < first) added to the same wait list. */
void lg_getopts_events(lua_State *L, int arg, int devidx, int first, int last,
                       const char *fn, int argno, lg_Opts *o);

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
  int profiling;               /* the queue had profiling on (-1: not known) */
  char command[48];            /* "write", "read", "kernel saxpy", ... */
  lg_Queue *queue;             /* the kept Queue (flushed before waiting), or NULL */
  int user;                    /* made by gpu.user_event: fails when collected unset */
  int debug_later;             /* uservalue 3 holds debug checks to run once it is done */
} lg_Event;
/* Event uservalues: 1 what it keeps alive (a table; nil once the command
** is known to be done), 2 the result, 3 debug mode's checks put off
** ({call, where}, debug.c). The Queue among the kept values
** tells whether the event can be profiled: keep it (keep[] of lg_pushevent). */

/* ------------------------------------------------------------- trace.c */

/* While gpu.trace records in the state (lg_tracing), the enqueue paths call
** lg_trace_add with each command just enqueued (ev, q and the wait list are
** retained by the trace; dims 0 and NULL sizes for transfers; local NULL
** when none was given). lg_trace_check_path is a lua_CFunction raising
** unless a trace may be written at the path at 1. */
int lg_tracing(lua_State *L);
void lg_trace_add(lua_State *L, cl_command_queue q, cl_event ev, const char *kind,
                  const char *name, cl_uint dims, const size_t *global, const size_t *local,
                  size_t bytes, cl_uint nwait, const cl_event *wait);
int lg_trace_check_path(lua_State *L);
void lg_open_trace(lua_State *L);
/* A program built from source while tracing (program.c): its name and its
** span on CLOCK_MONOTONIC (lg_now_ns), marked in the trace's pictures. */
void lg_trace_build(lua_State *L, const char *name, cl_ulong t0_ns, cl_ulong t1_ns);
cl_ulong lg_now_ns(void);
/* query.c: dev:info(name), platform:info(name). */
void lg_open_query(lua_State *L);

/* Pushes a new Event owning ev (which must not be NULL; it is released if
** pushing fails). The nkeep values at stack indices keep[] (buffers, host
** arrays, the queue, a bound call) stay alive until the command completes
** and the Event is collected or waited on: its __gc waits for completion
** first, so nothing the command uses is freed under it. */
lg_Event *lg_pushevent(lua_State *L, cl_event ev, const char *command,
                       const int *keep, int nkeep);
/* Sets the result of the Event at evidx to the value at validx. */
void lg_event_setresult(lua_State *L, int evidx, int validx, lg_Result kind);
/* The two halves of lg_pushevent for an Event that keeps nothing, on a
** path that must not pay for a protected call (a launch on the default
** queue): lg_newevent pushes an Event in the released state (no cl_event)
** before the command is enqueued, so nothing can fail after it;
** lg_event_start then gives it ev (and, inside a finalizer, waits for it). */
lg_Event *lg_newevent(lua_State *L, const char *command);
/* The same for a command on the explicit Queue at qidx, which the Event
** keeps (for its flush and profiling). */
lg_Event *lg_newevent_on(lua_State *L, const char *command, int qidx);
void lg_event_start(lua_State *L, lg_Event *e, cl_event ev);
lg_Event *lg_checkevent(lua_State *L, int idx);
lg_Event *lg_testevent(lua_State *L, int idx);
/* Releases what parked Events kept for commands now done (event.c parks
** what an Event collected before its command ended keeps, rather than
** blocking the collector). Returns how many commands are still parked. */
int lg_event_sweep(lua_State *L);

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
  lg_Device *dev;              /* kept alive by uservalue 1 */
  size_t canary;               /* roots made in debug mode: bytes of guard zone after the data */
  uint64_t version;            /* roots: commands enqueued that may write it (b.version) */
} lg_Buffer;
/* Buffer uservalues: 1 Device, 2 parent (views only). */

/* Counts a command that may write the memory of b's root (b.version, the
** same through every view of it): kernels b is an argument of, writes,
** fills, copies into it, maps and unmaps, luagpu_to_mem. */
#define lg_buffer_written(b) ((void)((b)->root->version++))

/* Raises "attempt to use a released buffer" for a released buffer or a
** view whose root was released. */
lg_Buffer *lg_checkbuffer(lua_State *L, int idx);
lg_Buffer *lg_testbuffer(lua_State *L, int idx);  /* NULL if not a Buffer */
/* The cl_mem to pass to a kernel: the root's for a root, the sub-buffer
** for a view (created here; raises with the alignment in bytes when the
** view's origin is not aligned to the device's mem_base_addr_align). */
cl_mem lg_buffer_kernel_mem(lua_State *L, lg_Buffer *b);
/* Pushes a new root Buffer wrapping mem (retained by the caller's
** reference: the Buffer takes it over) on the device at devidx. Raises
** "luagpu: luagpu_push_buffer: ..." (the Buffer releasing mem) when count
** elements of t do not fit the cl_mem's size. */
lg_Buffer *lg_wrapbuffer(lua_State *L, int devidx, cl_mem mem, lg_Type t,
                         size_t count, lg_Access access);
/* True unless the buffer, or the root of a view, was released. */
int lg_buffer_live(const lg_Buffer *b);
/* Raises "luagpu: FN: WHAT: ..." unless the host array a has type t and
** count elements (its message counts scalars: "expected 1024 values, got 1000"). */
void lg_check_array_fits(lua_State *L, const lg_Array *a, lg_Type t, size_t count,
                         const char *fn, const char *what);

/* ---------------------------------------------------------- transfer.c */

/* b:write, b:read, b:get, b:fill, b:copy_to. */
void lg_open_transfer(lua_State *L);
/* pinned.c: page-locked slots for the numbers reads bring back. */
#define LG_PINNED_SLOT 16      /* bytes: any one scalar */
/* The slot of ctx for blocking reads (a slab made through q when needed),
** which only a blocking read uses, from its enqueue until it has pushed its
** number; NULL when none can be had. */
void *lg_pinned_scratch(lua_State *L, cl_context ctx, cl_command_queue q);
/* Pushes a 1-element array of scalar type t over a slot, which it owns
** until collected or lg_pinned_array_done; NULL, nothing pushed, when no
** slot can be had. */
lg_Array *lg_push_pinned_array(lua_State *L, cl_context ctx, cl_command_queue q, lg_Type t);
/* Gives back the slot of the array at idx now, when it has one: its number
** was read and nothing reads the array again. */
void lg_pinned_array_done(lua_State *L, int idx);
void lg_open_pinned(lua_State *L);

/* rect.c: b:read_rect, b:write_rect, b:copy_rect_to. */
void lg_open_rect(lua_State *L);
/* map.c: b:map, b:unmap. */
void lg_open_map(lua_State *L);
/* partition.c: dev:partition. */
void lg_open_partition(lua_State *L);

/* ------------------------------------------ each file's lg_open_* part */

void lg_open_device(lua_State *L);
void lg_open_queue(lua_State *L);
void lg_open_sync(lua_State *L);     /* q:marker, q:barrier */
void lg_open_array(lua_State *L);
void lg_open_event(lua_State *L);
void lg_open_userevent(lua_State *L);   /* gpu.user_event, on_complete, await */
void lg_open_buffer(lua_State *L);
void lg_open_program(lua_State *L);
void lg_open_kernel(lua_State *L);

/* -------------------------------------------- kernel.c, program.c, call.c */

/* A built program (dev:build, dev:build_file). Uservalues: 1 Device, 2 table
** name -> Kernel (each made once, on first use), 3 table of fields (log,
** options, file, names, meta). */
typedef struct lg_Program {
  cl_program prog;             /* NULL once released */
  lg_Device *dev;              /* kept alive by uservalue 1 */
  int from_cache;              /* loaded from the on-disk program cache */
} lg_Program;

lg_Program *lg_checkprogram(lua_State *L, int idx);
/* Pushes the Kernel of the Program at progidx named name, made on first
** use and cached; raises naming fn, listing the kernels, when there is none. */
void lg_push_kernel(lua_State *L, int progidx, const char *name, const char *fn);
/* Makes every kernel of the Program at progidx (kept in its kernel table),
** so that metadata from a binary or a cache entry that disagrees with the
** driver about an argument raises now, naming fn ("a damaged binary: ..."). */
void lg_check_kernels(lua_State *L, int progidx, const char *fn);
/* binary.c: dev:build_binary, and prog.binary: the Program metatable's
** __binary, which kernel.c calls with the Program (binary.c calls kernel.c,
** so kernel.c does not link to it: a hook, declared in the layers block of
** docs/ARCHITECTURE.md, "hook kernel.c -> binary.c: __binary"). */
void lg_open_binary(lua_State *L);
/* The driver's binary of program p for p's device. Programs live in a
** context of all the platform's devices and report one binary per device
** of the program: lg_binary_size finds p's (its index among count) and its
** size in bytes (0: none); lg_binary_copy copies it into out (size bytes).
** Both return the OpenCL status; neither calls Lua. */
cl_int lg_binary_size(lg_Program *p, cl_uint *index, cl_uint *count, size_t *size);
cl_int lg_binary_copy(lg_Program *p, cl_uint index, cl_uint count, unsigned char *out);
void lg_open_png(lua_State *L);    /* gpu.encode_png, gpu.write_file (png.c) */

/* What a kernel parameter takes. */
typedef enum lg_ArgKind {
  LG_ARG_BUFFER,               /* __global or __constant pointer: Buffer or view */
  LG_ARG_LOCAL,                /* __local pointer: gpu.localmem */
  LG_ARG_SCALAR,               /* private scalar or vector: numbers */
  LG_ARG_OTHER                 /* images, samplers, structs by value */
} lg_ArgKind;

typedef struct lg_ArgInfo {
  const char *name;            /* parameter name ("" when unknown) */
  const char *type_name;       /* as the compiler reports it: "float*", "int4" */
  const char *address;         /* "global" | "local" | "constant" | "private" */
  const char *access;          /* "read_only" | "write_only" | "read_write" | "none" */
  const char *qualifiers;      /* "const restrict" ... ("" for none) */
  lg_ArgKind kind;
  int typed;                   /* type below is known (not void*, not a struct) */
  lg_Type type;                /* pointee type of pointers, type of scalars */
} lg_ArgInfo;

/* A kernel of a program (prog.NAME). Uservalues: 1 Program, 2 a userdata
** holding the argument info and its strings. */
typedef struct lg_Kernel {
  cl_kernel k;                 /* NULL once released */
  lg_Device *dev;
  const char *name;            /* in uservalue 2 */
  cl_uint nargs;
  const lg_ArgInfo *args;      /* in uservalue 2 */
  size_t work_group_size;      /* CL_KERNEL_WORK_GROUP_SIZE */
  uint64_t args_of;            /* serial of the Call whose arguments are set */
  char command[48];            /* "kernel NAME" for its Events */
} lg_Kernel;

/* Pushes a new Kernel named name of the Program at progidx, from the
** program's argument metadata (see lg_program_meta). */
lg_Kernel *lg_newkernel(lua_State *L, int progidx, const char *name, const char *fn);
/* Pushes the argument metadata of every kernel of a built program, one
** line a kernel or parameter (the format lg_newkernel reads); kept in the
** program cache, since drivers need not report argument info for programs
** loaded from binaries. Raises naming fn on CL failures. */
void lg_program_meta(lua_State *L, cl_program prog, const char *fn);
/* 1 when meta (n bytes, from a binary or a cache file) is well formed as
** lg_program_meta writes it: each kernel's argument count a decimal below
** LG_MAX_KERNEL_ARGS followed by that many argument lines. */
#define LG_MAX_KERNEL_ARGS 65536
int lg_meta_ok(const char *meta, size_t n);
/* Sets fields.names (the table at index fields) to the kernel names of its
** meta string ("kernel\tNAME\t..." lines), in their order. */
void lg_program_names(lua_State *L, int fields);

/* gpu.localmem(type, count): the size of a __local parameter. */
typedef struct lg_LocalMem {
  lg_Type type;
  size_t count;
  size_t bytes;
} lg_LocalMem;

/* One argument of a bound call, ready for clSetKernelArg. */
typedef struct lg_CallArg {
  size_t size;
  const void *value;           /* NULL for __local */
  lg_Buffer *buf;              /* buffers: checked for release before each run */
} lg_CallArg;

/* A kernel bound to arguments (k(...)), in call.c. Uservalues: 1 Kernel,
** 2 table of the arguments as given (which keeps buffers alive). */
typedef struct lg_Call {
  lg_Kernel *kernel;           /* kept alive by uservalue 1 */
  uint64_t serial;             /* unique per call: lg_Kernel.args_of */
  cl_uint nargs;
  lg_CallArg *args;            /* inside this userdata, then the scalar values */
} lg_Call;

/* k(...): binds the arguments at stack indices first..last to the Kernel
** at kidx and pushes the Call. */
lg_Call *lg_bindcall(lua_State *L, int kidx, int first, int last);
void lg_open_call(lua_State *L);   /* called by lg_open_kernel */
/* image.c: binds a parameter of kind LG_ARG_OTHER (an image or a sampler)
** from the value at idx into slot (16 bytes), setting *size; returns 0 when
** it does not know the parameter's type. */
int lg_bind_image_arg(lua_State *L, const lg_ArgInfo *a, lg_Device *kdev, int idx,
                      const char *fn, int argno, void *slot, size_t *size);
/* image.c: dev:image, dev:image_formats, dev:sampler, the Image class. */
#define LG_IMAGE_MT "luagpu.Image"
typedef struct lg_Image {
  cl_mem mem;
  lg_Device *dev;              /* kept alive by uservalue 1 */
  cl_mem_object_type kind;
  int dims;                    /* 1, 2, 3 (an array counts its layers as a dimension) */
  int array;
  size_t size[3];              /* width, height, depth or layers (1 when absent) */
  int order, ctype;            /* indices into image.c's tables of orders and types */
  lg_Access access;
} lg_Image;
void lg_open_image(lua_State *L);
lg_Image *lg_check_image(lua_State *L, int idx);
size_t lg_image_channels(const lg_Image *im);
lg_Scalar lg_image_scalar(const lg_Image *im);           /* of a channel */
cl_channel_type lg_image_channel_type(const lg_Image *im);
/* a new host array for a region of im, shaped {[d,] [h,] w, channels} */
lg_Array *lg_push_pixels(lua_State *L, const lg_Image *im, const size_t *region,
                         const char *fn);
/* image_transfer.c: adds the Image methods read, write, fill, copy_to and
** copy_from (after lg_open_image). */
void lg_open_image_transfer(lua_State *L);

/* ------------------------------------------------------------- debug.c */

/* In debug mode (lg_debugging: gpu.debug(true), LUAGPU_DEBUG=1) buffers get a guard
** zone of lg_debug_guard_bytes(bytes) after their data, filled by
** lg_debug_fill_guard; call.c then calls lg_debug_after_launch (waits,
** raises naming a failed kernel, its arguments and line, or a write past
** the end of a buffer argument), transfer.c lg_debug_after_transfer (waits;
** returns the command's failure status, 0 when it did not fail) and
** lg_debug_transfer_error. */
int lg_debugging(lua_State *L);
size_t lg_debug_guard_bytes(size_t bytes);
cl_int lg_debug_fill_guard(cl_command_queue q, cl_mem mem, size_t offset, size_t guard);
/* lg_debug_after_launch returns 1 when it skipped the checks (the command
** may wait for an unset user event); lg_debug_later then has the Event at
** evidx keep the Call at callidx and the Lua line, and wait_ok (event.c)
** calls lg_debug_check_later with the command's final status once it is
** done: the checks run then, raising as at the launch. */
int lg_debug_after_launch(lua_State *L, const lg_Call *c, cl_command_queue q, cl_event ev);
void lg_debug_later(lua_State *L, int evidx, int callidx);
void lg_debug_check_later(lua_State *L, int evidx, lg_Event *e, cl_int st);
cl_int lg_debug_after_transfer(lua_State *L, cl_event ev);
void lg_debug_transfer_error(lua_State *L, const char *command, cl_int st);
void lg_open_debug(lua_State *L);

/* -------------------------------------- sha256.c, includes.c, cache.c */

/* SHA-256 (sha256.c), the hash of the program cache's keys and entries. */
typedef struct lg_Hash {
  uint32_t h[8];
  uint64_t len;
  unsigned char buf[64];
} lg_Hash;
void lg_hash_init(lg_Hash *s);
void lg_hash_update(lg_Hash *s, const void *p, size_t n);
void lg_hash_final(lg_Hash *s, unsigned char out[32]);
/* Hashes, in order of first appearance, the content of every file that the
** source includes with #include "..." or <...> or tests with __has_include
** (recursively, each file once), searched as the compiler does: quoted
** names in the including file's folder (dirs[0] for the source itself),
** then every name in dirs[0..ndirs-1], the compiler's -I folders in its
** order (NULL entries skipped). Files not found are hashed by name. Returns
** 0 when it cannot be sure it saw every file (an #include of a macro,
** trigraphs, ...): such a build must not be cached. An include that finds
** something other than a file or folder (a FIFO, a device) is described in
** bad (badsize bytes; "" when none): the compiler would block on it. */
int lg_hash_includes(lg_Hash *s, const char *source, size_t len,
                     const char *const *dirs, int ndirs, char *bad, size_t badsize);
/* The on-disk program cache (cache.c): SHA-256 keyed entries under
** $XDG_CACHE_HOME/luagpu (else ~/.cache/luagpu), off with LUAGPU_NO_CACHE=1. */
int lg_cache_enabled(void);
/* 1 unless b (n bytes) is a PoCL binary with a part missing or cut short,
** which PoCL would abort on rather than refuse (cache.c). */
int lg_binary_whole(const unsigned char *b, size_t n);
/* One entry: the binary, the build log and the argument metadata. */
typedef struct lg_CacheEntry {
  const unsigned char *binary;
  size_t binary_size;
  const char *log, *meta;
  size_t log_size, meta_size;
} lg_CacheEntry;
/* Reads the entry for key (64 hex digits): pushes the file's content and
** points e into it, returning 1 when it is whole and for this key;
** otherwise pushes nil and returns 0. */
int lg_cache_load(lua_State *L, const char *key, lg_CacheEntry *e);
/* Writes the entry for key (temp file, then rename); failures are silent
** (the cache is an optimization). Raises nothing. */
void lg_cache_store(const char *key, const lg_CacheEntry *e);
/* Whether the cache holds an entry for key now (a store may have failed:
** a cache folder that is a file, or read-only). */
int lg_cache_has(const char *key);
/* Takes the lock that every build step (build, load from a binary, binary
** extraction) holds: one per process (other threads wait; the same thread
** may take it again), and on PoCL also the flock that keeps processes
** sharing PoCL's own cache folder from seeing each other's half-written
** files. lg_pocl_unlock lets one taking go; nothing in between may raise
** unless something (a Capture) lets it go on the way out. */
void lg_pocl_lock(cl_platform_id p);
void lg_pocl_unlock(void);
/* The longest kernel name PoCL can build (it names a file KERNEL.so in its
** cache folder), or 0 when the platform is not PoCL. */
size_t lg_pocl_name_max(cl_platform_id p);

/* ----------------------------------------------------------- capture.c */

/* The temporary file of one build's steps; a userdata whose __close and
** __gc close it. */
typedef struct Capture {
  int fd;                      /* -1 until the first step (or when none) */
  off_t taken;                 /* bytes already pushed by lg_push_captured */
  int saved;                   /* the real fd 2 during a step, else -1 */
  int locked;                  /* set from the first step until the capture
                                  closes: the build lock (lg_pocl_lock), so a
                                  build, its checks and its extraction see one
                                  state of PoCL's cache */
} Capture;
/* A build step (clBuildProgram, a load from a binary, a binary
** extraction) runs between lg_step_begin and lg_step_end: the PoCL cache
** lock held, fd 2 going to c's temporary file. lg_push_capture pushes a new
** Capture (its file made at the first step); lg_push_captured pushes what
** c's steps printed since the last call; lg_settle_log replaces the log at
** logidx by itself plus the captured lines on top that it lacks (popping
** them), giving lines other than clang's summaries back to stderr. */
void lg_step_begin(Capture *c, lg_Device *d);
void lg_step_end(Capture *c);
/* clBuildProgram of prog for dev on a thread of its own with a large stack
** (capture.c): a compiler that runs in the calling thread (PoCL's clang)
** recurses once per level of an expression's nesting, and a long one
** overflowed the default 8 MiB and crashed the process. */
cl_int lg_build_program(cl_program prog, cl_device_id dev, const char *options);
Capture *lg_push_capture(lua_State *L);
void lg_push_captured(lua_State *L, Capture *c);
void lg_settle_log(lua_State *L, int logidx);
void lg_open_capture(lua_State *L);

/* -------------------------------------------------------------- root.c */

/* The folder the module was loaded from, resolved to the checkout or the
** install prefix: where lua/ and kernels/ are looked up. Set at open. */
const char *lg_root_dir(void);
/* The folder of the file this code was loaded from: luagpu.so's, or the
** program's that links it in (NULL when unknown). */
const char *lg_code_dir(void);
/* Finds the root, puts its lua/ on package.path, and adds the searcher of
** the embedded helpers after package.searchers' own. */
void lg_find_helpers(lua_State *L);
/* Pushes require(name) for one of luagpu's helpers ("luagpu.autoload");
** in a state without require (a sandbox), runs the copy embedded in the
** build instead. */
void lg_require_helper(lua_State *L, const char *name);
/* The functions that the C side calls in Lua helpers (gpu.load's for a
** Device, gpu.trace's writer) are the fields of luagpu.autoload's table,
** which luaopen_luagpu keeps in the registry under LG_LUA_HOOKS.
** lg_push_luahook pushes the one named, raising naming fn when there is
** none. */
#define LG_LUA_HOOKS "luagpu.lua_hooks"
void lg_push_luahook(lua_State *L, const char *name, const char *fn);
/* Files embedded at build time by tools/embed.sh, each array ending with
** {NULL, NULL}: kernels/ (build/kernels.c, "reduce.cl") and the pure-Lua
** helpers (build/helpers.c, "luagpu/core/check.lua"). */
typedef struct lg_EmbeddedFile { const char *name; const char *text; } lg_EmbeddedFile;
extern const lg_EmbeddedFile lg_embedded_kernels[];
extern const lg_EmbeddedFile lg_embedded_helpers[];

#endif
