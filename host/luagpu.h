/*
** luagpu.h: the public API of luagpu for C programs that embed Lua.
**
**   luaL_requiref(L, "luagpu", luaopen_luagpu, 1);
**
** hands a Lua state the module. The functions below let an application
** share its own OpenCL objects with scripts and take them back; reference
** counts stay correct whichever side releases first (every handle passed in
** is retained by luagpu, every handle passed out is retained for the caller).
*/
#ifndef LUAGPU_H
#define LUAGPU_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
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

/* Pushes a Device for the application's own device, context and queue: the
** script's enqueues on that device then go to queue (its default queue).
** queue may be NULL (luagpu makes one). All three are retained. Raises a
** Lua error on bad handles. */
LUAGPU_API void luagpu_push_device(lua_State *L, cl_context ctx, cl_device_id dev,
                                   cl_command_queue queue);

/* Pushes a Buffer wrapping mem, of count elements of type (a name such as
** "float" or "int4") on the Device at stack index devidx. mem is retained;
** the Buffer releases its reference when collected or released. */
LUAGPU_API void luagpu_push_buffer(lua_State *L, int devidx, cl_mem mem,
                                   const char *type, size_t count);

/* Returns the cl_mem of the Buffer at idx, retained for the caller (who
** must clReleaseMemObject it), or NULL when idx holds no live Buffer. For a
** view, the sub-buffer is returned. */
LUAGPU_API cl_mem luagpu_to_mem(lua_State *L, int idx);

/* Pushes an Event wrapping ev (retained). */
LUAGPU_API void luagpu_push_event(lua_State *L, cl_event ev);

/* Returns the cl_event of the Event at idx, retained for the caller, or
** NULL when idx holds no live Event. */
LUAGPU_API cl_event luagpu_to_event(lua_State *L, int idx);

#ifdef __cplusplus
}
#endif

#endif
