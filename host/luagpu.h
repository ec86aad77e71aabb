/*
** luagpu.h: the public API of luagpu for C programs that embed Lua.
**
**   luaL_requiref(L, "luagpu", luaopen_luagpu, 1);
**
** hands a Lua state the module (as `require "luagpu"` would, and also as
** the global `luagpu`). The functions below let an application share its
** own OpenCL objects with scripts and take them back. Reference counts stay
** correct whichever side lets go first: every handle passed in is retained
** by luagpu (and released when the Lua object is collected or released, at
** the latest by lua_close), every handle passed out is retained for the
** caller, who releases it.
**
** The luagpu_push_* functions never raise a Lua error, so they may be
** called outside any lua_pcall: each returns LUA_OK (0) and pushes its
** result, or returns an error status (as lua_pcall does) and pushes the
** error message ("luagpu: luagpu_push_buffer: ..."). They open the module
** in L first if no one has. Each needs 3 free stack slots, as any Lua API
** call may (LUA_MINSTACK slots are free in a C function).
**
** Handles must be valid OpenCL objects or NULL: a NULL handle, or one of
** the wrong context or kind, is reported as an error; a dangling or
** garbage pointer cannot be detected (the OpenCL driver may crash on it).
*/
#ifndef LUAGPU_H
#define LUAGPU_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <stddef.h>
#include <CL/cl.h>
#include <lua.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define LUAGPU_API __attribute__((visibility("default")))
#else
#define LUAGPU_API
#endif

/* Opens the module: pushes the luagpu table. */
LUAGPU_API int luaopen_luagpu(lua_State *L);

/* Pushes a Device for the application's own device dev in its context ctx:
** buffers, programs and queues the script makes on it live in ctx, and
** its default queue (where commands go unless a script names another) is
** queue, or one luagpu makes in ctx when queue is NULL. ctx and queue are
** retained. The same (ctx, dev, queue) gives the same Device while the
** script holds it. Errors: a NULL ctx or dev, dev not in ctx, queue of
** another context or device. */
LUAGPU_API int luagpu_push_device(lua_State *L, cl_context ctx, cl_device_id dev,
                                  cl_command_queue queue);

/* Pushes a Buffer wrapping mem (retained; released when the Buffer is
** collected or released) as count elements of type, a luagpu element type
** name ("float", "int4", ...), on the Device at stack index devidx (one
** that luagpu_push_device pushed, or any other in mem's context). count 0
** takes as many elements as fit in mem. The Buffer's access is "in" for a
** cl_mem made with CL_MEM_HOST_WRITE_ONLY, "out" for CL_MEM_HOST_READ_ONLY,
** else "mixed". Errors: a NULL mem, an image, mem of another context, an
** unknown type, count elements not fitting in mem. */
LUAGPU_API int luagpu_push_buffer(lua_State *L, int devidx, cl_mem mem,
                                  const char *type, size_t count);

/* Pushes an Event wrapping ev (retained), which scripts can wait on, pass
** in {wait = ...} lists, and profile when its queue has profiling on.
** Dropping the Event never waits for ev (luagpu keeps nothing alive for
** it), so a user event the application never completes does not block
** lua_close. Errors: a NULL or invalid ev. */
LUAGPU_API int luagpu_push_event(lua_State *L, cl_event ev);

/* Returns the cl_mem under the Buffer at idx, retained for the caller (who
** clReleaseMemObject's it), or NULL when idx holds no live Buffer. For a
** view (b:sub), that is the cl_mem of the buffer it is a view of: offset
** and size, when not NULL, receive the byte range of the Buffer within the
** cl_mem (0 and the whole size for a buffer that is no view). Never raises.
** The call counts as a write of the Buffer (b.version changes): code that
** writes the cl_mem later, after luagpu used the Buffer again, calls it
** again before luagpu's next use, or luagpu may trust positions it checked
** before (the gathers skip their range check while b.version stands). */
LUAGPU_API cl_mem luagpu_to_mem(lua_State *L, int idx, size_t *offset, size_t *size);

/* Returns the cl_event of the Event at idx, retained for the caller, or
** NULL when idx holds no live Event. Never raises. */
LUAGPU_API cl_event luagpu_to_event(lua_State *L, int idx);

/* Returns the cl_command_queue of the Queue at idx, or the default queue
** of the Device at idx (made now if the script has not used it yet),
** retained for the caller; NULL when idx holds neither, a released Queue,
** or the queue could not be made. Never raises. The queue's context and
** device are clGetCommandQueueInfo's CL_QUEUE_CONTEXT and CL_QUEUE_DEVICE. */
LUAGPU_API cl_command_queue luagpu_to_queue(lua_State *L, int idx);

/* For C modules loaded beside luagpu that must not link against it (the
** static program exports its symbols, luagpu.so keeps them local): once
** luagpu is open, the registry holds at LUAGPU_CAPI a light userdata
** pointing to this table of functions.
**   to_array: the data of the host array at idx, or NULL when idx holds no
**   luagpu.Array (never raises); *nscalars receives the scalars its memory
**   holds (count * 4 for width-3 types, whose fourth lanes are padding) and
**   *scalar the name of their type ("float", "ulong"). */
#define LUAGPU_CAPI "luagpu.capi"
#define LUAGPU_CAPI_VERSION 1
typedef struct luagpu_CAPI {
  int version;
  void *(*to_array)(lua_State *L, int idx, size_t *nscalars, const char **scalar);
} luagpu_CAPI;

#ifdef __cplusplus
}
#endif

#endif
