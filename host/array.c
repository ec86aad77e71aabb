/*
** array.c: host arrays (luagpu.Array). The typed data lives inside the
** userdata itself, 64-byte aligned, so the collector frees it with the
** array and anything holding the array (an Event's user value) keeps the
** memory valid. Lua sees a flat list of scalars, 1-based: a float4 array
** of n elements has #a == n*4; a float3 one takes the space of float4 but
** shows only its 3 real lanes (#a == n*3).
*/
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define ALIGN 64
#define SHOW 8          /* scalars tostring shows */

/* ------------------------------------------------------------ creation */

static int alloc_ud(lua_State *L) {
  size_t size = *(const size_t *)lua_touserdata(L, 1);
  lua_newuserdatauv(L, size, 0);
  return 1;
}

/* Appends "{d1, d2, ...}" to b. */
static void add_shape(luaL_Buffer *b, int ndim, const size_t *shape) {
  int i;
  char num[32];
  luaL_addchar(b, '{');
  for (i = 0; i < ndim; i++) {
    snprintf(num, sizeof num, "%s%zu", i > 0 ? ", " : "", shape[i]);
    luaL_addstring(b, num);
  }
  luaL_addchar(b, '}');
}

size_t lg_shape_count(lua_State *L, lg_Type t, int ndim, const size_t *shape,
                      const char *fn) {
  size_t max = LG_MAX_BYTES / lg_type_size(t), count = 1;
  int i, empty = 0;
  /* the sizes but the 0s count too (as NumPy's and tensors' limits):
     {2^62, 0} holds nothing, but no shape of that many would fit */
  for (i = 0; i < ndim; i++) {
    if (shape[i] == 0) {
      empty = 1;
      continue;
    }
    if (shape[i] > max / count) {
      char tname[LG_TYPENAME_MAX];
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      add_shape(&b, ndim, shape);
      luaL_pushresult(&b);
      lg_error(L, fn, "too large: shape %s of %s (at most %I elements)", lua_tostring(L, -1),
               lg_type_name(t, tname), (lua_Integer)max);
    }
    count *= shape[i];
  }
  return empty ? 0 : count;
}

lg_Array *lg_newarray_for(lua_State *L, lg_Type t, int ndim, const size_t *shape,
                          const char *fn, int zero) {
  static const size_t one = 1;
  size_t count, bytes, total;
  lg_Array *a;
  int status;
  if (ndim <= 0) { ndim = 1; shape = &one; }
  if (ndim > LG_MAXDIM)
    lg_error(L, fn, "%d dimensions given (at most %d)", ndim, LG_MAXDIM);
  count = lg_shape_count(L, t, ndim, shape, fn);
  bytes = count * lg_type_size(t);
  total = sizeof(lg_Array) + bytes + ALIGN;
  /* a failed allocation raises our message, not Lua's bare "not enough memory" */
  lua_pushcfunction(L, alloc_ud);
  lua_pushlightuserdata(L, &total);
  status = lua_pcall(L, 1, 1, 0);
  if (status == LUA_ERRMEM) {
    lua_pop(L, 1);
    lg_error(L, fn, "not enough memory for a host array of %I bytes", (lua_Integer)bytes);
  } else if (status != LUA_OK) {
    lua_error(L);
  }
  a = (lg_Array *)lua_touserdata(L, -1);
  a->type = t;
  a->count = count;
  a->nscalars = count * (size_t)t.width;
  a->ndim = ndim;
  memset(a->shape, 0, sizeof a->shape);
  memcpy(a->shape, shape, (size_t)ndim * sizeof(size_t));
  a->bytes = bytes;
  a->data = (void *)(((uintptr_t)(a + 1) + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
  a->gone = NULL;
  if (zero) memset(a->data, 0, bytes);
  luaL_setmetatable(L, LG_ARRAY_MT);
  return a;
}

lg_Array *lg_newarray(lua_State *L, lg_Type t, size_t count) {
  return lg_newarray_for(L, t, 1, &count, "array", 1);
}

/* An array of b:map after b:unmap raises, whatever uses it. */
static lg_Array *check_mapped(lua_State *L, lg_Array *a) {
  if (a != NULL && a->gone != NULL && *a->gone)
    luaL_error(L, "luagpu: attempt to use a host array of b:map after b:unmap");
  return a;
}

lg_Array *lg_checkarray(lua_State *L, int idx) {
  return check_mapped(L, (lg_Array *)luaL_checkudata(L, idx, LG_ARRAY_MT));
}

lg_Array *lg_testarray(lua_State *L, int idx) {
  return check_mapped(L, (lg_Array *)luaL_testudata(L, idx, LG_ARRAY_MT));
}

/* ------------------------------------------------------- scalar access */

void *lg_array_scalar(const lg_Array *a, size_t i) {
  if (a->type.width == 3) i = i / 3 * 4 + i % 3;
  return (char *)a->data + i * lg_scalar_size(a->type.scalar);
}

/* Stores the value at idx into *p when it is a number that fits s without
** any question (the common case); returns 0 to leave the rest, and every
** error message, to lg_store_scalar. */
static int fast_store(lua_State *L, int idx, lg_Scalar s, void *p) {
  if (lua_isinteger(L, idx)) {
    lua_Integer v = lua_tointeger(L, idx);
    switch (s) {
      case LG_CHAR:
        if (v < -128 || v > 127) return 0;
        *(int8_t *)p = (int8_t)v; return 1;
      case LG_UCHAR:
        if (v < 0 || v > 255) return 0;
        *(uint8_t *)p = (uint8_t)v; return 1;
      case LG_SHORT:
        if (v < -32768 || v > 32767) return 0;
        *(int16_t *)p = (int16_t)v; return 1;
      case LG_USHORT:
        if (v < 0 || v > 65535) return 0;
        *(uint16_t *)p = (uint16_t)v; return 1;
      case LG_INT:
        if (v < INT32_MIN || v > INT32_MAX) return 0;
        *(int32_t *)p = (int32_t)v; return 1;
      case LG_UINT:
        if (v < 0 || v > (lua_Integer)UINT32_MAX) return 0;
        *(uint32_t *)p = (uint32_t)v; return 1;
      case LG_LONG: *(int64_t *)p = (int64_t)v; return 1;
      case LG_ULONG:
        if (v < 0) return 0;
        *(uint64_t *)p = (uint64_t)v; return 1;
      case LG_FLOAT: *(float *)p = (float)v; return 1;
      case LG_DOUBLE: *(double *)p = (double)v; return 1;
      default: return 0;
    }
  }
  if (lua_type(L, idx) == LUA_TNUMBER) {
    if (s == LG_FLOAT) { *(float *)p = (float)lua_tonumber(L, idx); return 1; }
    if (s == LG_DOUBLE) { *(double *)p = (double)lua_tonumber(L, idx); return 1; }
  }
  return 0;
}

void lg_array_store(lua_State *L, int idx, lg_Scalar s, void *p, const char *fn,
                    const char *fmt, lua_Integer n) {
  if (fast_store(L, idx, s, p)) return;
  idx = lua_absindex(L, idx);
  lg_store_scalar(L, idx, s, p, fn, lua_pushfstring(L, fmt, n));
  lua_pop(L, 1);
}

/* Pushes scalar i of a; ulongs past 2^63-1 as floats so that a converted
** copy keeps their value (reads through a[i] wrap, as lg_push_scalar does). */
static void push_exact(lua_State *L, const lg_Array *a, size_t i) {
  const void *p = lg_array_scalar(a, i);
  if (a->type.scalar == LG_ULONG && *(const uint64_t *)p > (uint64_t)LUA_MAXINTEGER)
    lua_pushnumber(L, (lua_Number)*(const uint64_t *)p);
  else
    lg_push_scalar(L, a->type.scalar, p);
}

void lg_array_convert(lua_State *L, lg_Array *dst, const lg_Array *src, const char *fn,
                      const char *what) {
  size_t i, n = dst->nscalars, ss = lg_scalar_size(src->type.scalar);
  lg_Scalar s = dst->type.scalar;
  if (s == src->type.scalar && (dst->type.width == 3) == (src->type.width == 3)) {
    memcpy(dst->data, src->data, dst->bytes < src->bytes ? dst->bytes : src->bytes);
    return;
  }
  for (i = 0; i < n; i++) {
    void *p = lg_array_scalar(dst, i);
    if (s == src->type.scalar) {
      memcpy(p, lg_array_scalar(src, i), ss);
      continue;
    }
    if (src->type.scalar == LG_ULONG && s != LG_FLOAT && s != LG_DOUBLE &&
        *(const uint64_t *)lg_array_scalar(src, i) > (uint64_t)LUA_MAXINTEGER) {
      /* (as a float it would print rounded: 2^64 - 1 as 2^64) */
      if (what[0] != '\0')
        lua_pushfstring(L, "%s: value #%I", what, (lua_Integer)(i + 1));
      else
        lua_pushfstring(L, "value #%I", (lua_Integer)(i + 1));
      lg_ulong_misfit(L, fn, lua_tostring(L, -1), *(const uint64_t *)lg_array_scalar(src, i), s);
    }
    push_exact(L, src, i);
    if (!fast_store(L, -1, s, p)) {
      if (what[0] != '\0')
        lua_pushfstring(L, "%s: value #%I", what, (lua_Integer)(i + 1));
      else
        lua_pushfstring(L, "value #%I", (lua_Integer)(i + 1));
      lg_store_scalar(L, -2, s, p, fn, lua_tostring(L, -1));
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
}

lg_Array *lg_table_to_array(lua_State *L, int idx, lg_Type t, size_t expect_count,
                            const char *fn, int arg) {
  size_t n, i, count, w = (size_t)t.width;
  lg_Array *a;
  char tname[LG_TYPENAME_MAX];
  idx = lua_absindex(L, idx);
  n = lua_rawlen(L, idx);
  if (expect_count != (size_t)-1) {
    if (expect_count > SIZE_MAX / w || n != expect_count * w)
      lg_argerror(L, fn, arg, "expected %I value%s, got %I",
                  (lua_Integer)(expect_count * w), expect_count * w == 1 ? "" : "s",
                  (lua_Integer)n);
  } else if (n % w != 0) {
    lg_argerror(L, fn, arg, "expected a multiple of %d values for %s, got %I",
                t.width, lg_type_name(t, tname), (lua_Integer)n);
  }
  count = n / w;
  a = lg_newarray_for(L, t, 1, &count, fn, t.width == 3);
  i = 0;
  if (t.width != 3 && t.scalar == LG_FLOAT) {          /* the common case, kept tight */
    float *p = a->data;
    for (; i < n; i++) {
      if (lua_rawgeti(L, idx, (lua_Integer)(i + 1)) != LUA_TNUMBER) break;
      p[i] = (float)lua_tonumber(L, -1);
      lua_pop(L, 1);
    }
    if (i < n) lua_pop(L, 1);                           /* the value that stopped it */
  } else if (t.width != 3 && t.scalar == LG_DOUBLE) {
    double *p = a->data;
    for (; i < n; i++) {
      if (lua_rawgeti(L, idx, (lua_Integer)(i + 1)) != LUA_TNUMBER) break;
      p[i] = (double)lua_tonumber(L, -1);
      lua_pop(L, 1);
    }
    if (i < n) lua_pop(L, 1);
  }
  for (; i < n; i++) {
    lua_rawgeti(L, idx, (lua_Integer)(i + 1));
    if (!fast_store(L, -1, t.scalar, lg_array_scalar(a, i))) {
      lua_pushfstring(L, "argument #%d: value #%I", arg, (lua_Integer)(i + 1));
      lg_store_scalar(L, -2, t.scalar, lg_array_scalar(a, i), fn, lua_tostring(L, -1));
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  return a;
}

/* ---------------------------------------------------------- gpu.array */

/* Reads the shape table at idx into shape; returns the number of dimensions. */
static int check_shape(lua_State *L, int idx, size_t *shape, const char *fn, int arg) {
  int ndim, i;
  if (!lua_istable(L, idx))
    lg_argerror(L, fn, arg, "shape: expected a table of sizes, got %s", luaL_typename(L, idx));
  ndim = (int)(lua_rawlen(L, idx) > LG_MAXDIM + 1 ? LG_MAXDIM + 1 : lua_rawlen(L, idx));
  if (ndim < 1 || ndim > LG_MAXDIM)
    lg_argerror(L, fn, arg, "shape: expected 1 to %d sizes, got %I", LG_MAXDIM,
                (lua_Integer)lua_rawlen(L, idx));
  for (i = 0; i < ndim; i++) {
    int isint = 0;
    lua_Integer v;
    lua_rawgeti(L, idx, i + 1);
    v = lua_tointegerx(L, -1, &isint);
    if (!isint || lua_type(L, -1) != LUA_TNUMBER || v < 0)
      lg_argerror(L, fn, arg, "shape[%d]: expected a size (integer >= 0), got %s", i + 1,
                  lua_type(L, -1) == LUA_TNUMBER ? lg_tolstring(L, -1)
                                                 : luaL_typename(L, -1));
    shape[i] = (size_t)v;
    lua_pop(L, 1);
  }
  return ndim;
}

/* gpu.array(type, n) / (type, d1, d2, ...) / (type, {values}) /
** (type, {shape = {d1, ...}}) / (type, {values, shape = {...}}) /
** (type, {values}, {shape = {...}}) */
static int arr_new(lua_State *L) {
  static const char *const fn = "gpu.array";
  lg_Type t = lg_checktype(L, 1, fn, 1);
  size_t shape[LG_MAXDIM];
  int top = lua_gettop(L), ndim = 0, i, shape_arg = 0;
  if (lua_type(L, 2) == LUA_TNUMBER) {
    if (top - 1 > LG_MAXDIM)
      lg_argerror(L, fn, LG_MAXDIM + 2, "expected at most %d sizes, got %d", LG_MAXDIM, top - 1);
    for (i = 2; i <= top; i++)
      shape[ndim++] = lg_checksize(L, i, fn, i, "a size (integer >= 0)");
    lg_newarray_for(L, t, ndim, shape, fn, 1);
    return 1;
  }
  if (!lua_istable(L, 2))
    return lg_typeerror(L, fn, 2, 2, "a number of elements, a table of values or {shape = {...}}");
  if (lua_getfield(L, 2, "shape") != LUA_TNIL) {
    shape_arg = 2;
    ndim = check_shape(L, -1, shape, fn, 2);
    if (top >= 3 && !lua_isnil(L, 3))
      lg_argerror(L, fn, 3, "the shape is given in argument #2 already");
  } else if (top >= 3 && !lua_isnil(L, 3)) {
    if (!lua_istable(L, 3))
      return lg_typeerror(L, fn, 3, 3, "an options table {shape = {...}}");
    if (lua_getfield(L, 3, "shape") != LUA_TNIL) {
      shape_arg = 3;
      ndim = check_shape(L, -1, shape, fn, 3);
    }
  }
  if (shape_arg == 0) {
    lg_table_to_array(L, 2, t, (size_t)-1, fn, 2);
  } else if (shape_arg == 2 && lua_rawlen(L, 2) == 0) {
    lg_newarray_for(L, t, ndim, shape, fn, 1);          /* {shape = ...} alone: zeros */
  } else {
    size_t count = lg_shape_count(L, t, ndim, shape, fn);
    lg_Array *a = lg_table_to_array(L, 2, t, count, fn, 2);
    a->ndim = ndim;
    memcpy(a->shape, shape, (size_t)ndim * sizeof(size_t));
  }
  return 1;
}

/* ------------------------------------------------------ element access */

/* Resolves the index key at idx of a (1-based, negative from the end) to a
** 0-based scalar position. Returns 0 for #a + 1 when reading (so ipairs
** stops there); raises for anything else out of range. */
static int check_index(lua_State *L, const lg_Array *a, int idx, size_t *pos, int reading) {
  lua_Integer i, n = (lua_Integer)a->nscalars;
  int isint = 0;
  i = lua_tointegerx(L, idx, &isint);
  if (!isint)
    lg_error(L, "array", "index %s is not an integer", lg_tolstring(L, idx));
  if (i < 0) i += n + 1;
  if (i >= 1 && i <= n) {
    *pos = (size_t)(i - 1);
    return 1;
  }
  if (reading && i == n + 1) return 0;
  i = lua_tointeger(L, idx);
  if (n == 0)
    return lg_error(L, "array", "index %I is out of range (the array is empty)", i);
  return lg_error(L, "array", "index %I is out of range (1 to %I, or -%I to -1)", i, n, n);
}

static int push_field(lua_State *L, lg_Array *a, const char *k) {
  char tname[LG_TYPENAME_MAX];
  int i;
  if (strcmp(k, "type") == 0) {
    lua_pushstring(L, lg_type_name(a->type, tname));
  } else if (strcmp(k, "count") == 0) {
    lua_pushinteger(L, (lua_Integer)a->count);
  } else if (strcmp(k, "bytes") == 0) {
    lua_pushinteger(L, (lua_Integer)a->bytes);
  } else if (strcmp(k, "shape") == 0) {
    lua_createtable(L, a->ndim, 0);
    for (i = 0; i < a->ndim; i++) {
      lua_pushinteger(L, (lua_Integer)a->shape[i]);
      lua_rawseti(L, -2, i + 1);
    }
  } else {
    return 0;
  }
  return 1;
}

static int arr_index(lua_State *L) {
  lg_Array *a = lg_checkarray(L, 1);
  size_t pos;
  if (lua_type(L, 2) == LUA_TNUMBER) {
    if (!check_index(L, a, 2, &pos, 1)) return 0;
    lg_push_scalar(L, a->type.scalar, lg_array_scalar(a, pos));
    return 1;
  }
  if (lua_type(L, 2) == LUA_TSTRING) {
    if (lg_pushmethod(L, 1, 2)) return 1;
    return push_field(L, a, lua_tostring(L, 2));   /* unknown names read as nil */
  }
  return lg_error(L, "array", "index must be an integer, got %s", luaL_typename(L, 2));
}

static int arr_newindex(lua_State *L) {
  lg_Array *a = lg_checkarray(L, 1);
  size_t pos;
  if (lua_type(L, 2) == LUA_TNUMBER) {
    check_index(L, a, 2, &pos, 0);
    lg_array_store(L, 3, a->type.scalar, lg_array_scalar(a, pos), "array", "index %I",
                   (lua_Integer)(pos + 1));
    return 0;
  }
  if (lua_type(L, 2) == LUA_TSTRING)
    return lg_error(L, "array", "cannot assign to field '%s' (only elements can be set)",
                    lua_tostring(L, 2));
  return lg_error(L, "array", "index must be an integer, got %s", luaL_typename(L, 2));
}

static int arr_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)lg_checkarray(L, 1)->nscalars);
  return 1;
}

static void add_scalar(luaL_Buffer *b, const lg_Array *a, size_t i) {
  char num[64];
  const void *p = lg_array_scalar(a, i);
  switch (a->type.scalar) {
    case LG_FLOAT: snprintf(num, sizeof num, "%.7g", (double)*(const float *)p); break;
    case LG_DOUBLE: snprintf(num, sizeof num, "%.14g", *(const double *)p); break;
    case LG_ULONG:
      snprintf(num, sizeof num, "%llu", (unsigned long long)*(const uint64_t *)p);
      break;
    default: {
      lua_State *L = b->L;
      lg_push_scalar(L, a->type.scalar, p);
      snprintf(num, sizeof num, LUA_INTEGER_FMT, lua_tointeger(L, -1));
      lua_pop(L, 1);
    }
  }
  luaL_addstring(b, num);
}

/* luagpu.Array<float>[1024]: {0, 0, 0, ...}; shaped: luagpu.Array<float>[3x4] */
static int arr_tostring(lua_State *L) {
  lg_Array *a = lg_checkarray(L, 1);
  char tname[LG_TYPENAME_MAX], num[32];
  luaL_Buffer b;
  size_t i;
  int d;
  luaL_buffinit(L, &b);
  lua_pushfstring(L, LG_ARRAY_MT "<%s>[", lg_type_name(a->type, tname));
  luaL_addvalue(&b);
  for (d = 0; d < a->ndim; d++) {
    snprintf(num, sizeof num, "%s%zu", d > 0 ? "x" : "", a->shape[d]);
    luaL_addstring(&b, num);
  }
  luaL_addstring(&b, "]: {");
  for (i = 0; i < a->nscalars && i < SHOW; i++) {
    if (i > 0) luaL_addstring(&b, ", ");
    add_scalar(&b, a, i);
  }
  if (a->nscalars > SHOW) luaL_addstring(&b, ", ...");
  luaL_addchar(&b, '}');
  luaL_pushresult(&b);
  return 1;
}

/* ------------------------------------------------------------- methods */

/* a:totable(): the flat list of scalars */
static int arr_totable(lua_State *L) {
  lg_Array *a = lg_checkarray(L, 1);
  size_t i;
  if (a->nscalars > (size_t)INT_MAX)
    return lg_error(L, "array:totable", "%I values are too many for a Lua table",
                    (lua_Integer)a->nscalars);
  lua_createtable(L, (int)a->nscalars, 0);
  for (i = 0; i < a->nscalars; i++) {
    lg_push_scalar(L, a->type.scalar, lg_array_scalar(a, i));
    lua_rawseti(L, -2, (lua_Integer)(i + 1));
  }
  return 1;
}

/* a:fill(v): every scalar (every lane of a vector) becomes v; returns a */
static int arr_fill(lua_State *L) {
  lg_Array *a = lg_checkarray(L, 1);
  size_t i, ss = lg_scalar_size(a->type.scalar);
  union { double d; int64_t i; unsigned char b[8]; } v;
  lg_array_store(L, 2, a->type.scalar, &v, "array:fill", "argument #%I", 1);
  if (ss == 1 && a->type.width != 3) {
    memset(a->data, v.b[0], a->bytes);
  } else {
    for (i = 0; i < a->nscalars; i++) memcpy(lg_array_scalar(a, i), v.b, ss);
  }
  lua_settop(L, 1);
  return 1;
}

/* a:copy([type]): a new array of the same shape; with a type (of the same
** vector width), each value converted with the checks of a[i] = v */
static int arr_copy(lua_State *L) {
  lg_Array *a = lg_checkarray(L, 1), *c;
  lg_Type t = a->type;
  char tname[LG_TYPENAME_MAX], aname[LG_TYPENAME_MAX];
  if (!lua_isnoneornil(L, 2)) {
    t = lg_checktype(L, 2, "array:copy", 1);
    if (t.width != a->type.width)
      return lg_argerror(L, "array:copy", 1, "%s has width %d, the array's %s has width %d",
                         lg_type_name(t, tname), t.width, lg_type_name(a->type, aname),
                         a->type.width);
  }
  c = lg_newarray_for(L, t, a->ndim, a->shape, "array:copy", t.width == 3);
  lg_array_convert(L, c, a, "array:copy", "");
  return 1;
}

/* An integer position at idx (argument #arg of array:sub), negative from
** the end of n. */
static lua_Integer sub_position(lua_State *L, int idx, int arg, lua_Integer n) {
  int isint = 0;
  lua_Integer v;
  if (lua_type(L, idx) != LUA_TNUMBER) lg_typeerror(L, "array:sub", arg, idx, "an integer");
  v = lua_tointegerx(L, idx, &isint);
  if (!isint) lg_argerror(L, "array:sub", arg, "expected an integer, got %s", lg_tolstring(L, idx));
  return v < 0 ? v + n + 1 : v;
}

/* a:sub(first [, last]): a 1-D array over elements first..last of a,
** sharing a's memory (no copy; writes go to a); it keeps a alive. */
static int arr_sub(lua_State *L) {
  lg_Array *a = lg_checkarray(L, 1), *v;
  lua_Integer n = (lua_Integer)a->count, first, last;
  first = sub_position(L, 2, 1, n);
  last = lua_isnoneornil(L, 3) ? n : sub_position(L, 3, 2, n);
  if (first < 1 || first > last || last > n)
    lg_error(L, "array:sub", "expected 1 <= first <= last <= %I, got first = %I, last = %I "
             "(negative positions count from the end)", n, first, last);
  v = lua_newuserdatauv(L, sizeof *v, 1);
  *v = *a;
  v->count = (size_t)(last - first + 1);
  v->nscalars = v->count * (size_t)a->type.width;
  v->ndim = 1;
  memset(v->shape, 0, sizeof v->shape);
  v->shape[0] = v->count;
  v->bytes = v->count * lg_type_size(a->type);
  v->data = (char *)a->data + (size_t)(first - 1) * lg_type_size(a->type);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  luaL_setmetatable(L, LG_ARRAY_MT);
  return 1;
}

/* luagpu_CAPI's to_array (luagpu.h). */
static void *capi_to_array(lua_State *L, int idx, size_t *nscalars, const char **scalar) {
  lg_Array *a = lg_testarray(L, idx);
  if (a == NULL) return NULL;
  *nscalars = a->bytes / lg_scalar_size(a->type.scalar);
  *scalar = lg_scalar_names[a->type.scalar];
  return a->data;
}

static const luagpu_CAPI capi = {LUAGPU_CAPI_VERSION, capi_to_array};

void lg_open_array(lua_State *L) {
  lua_pushlightuserdata(L, (void *)&capi);
  lua_setfield(L, LUA_REGISTRYINDEX, LUAGPU_CAPI);
  static const luaL_Reg methods[] = {
    {"totable", arr_totable}, {"fill", arr_fill}, {"copy", arr_copy}, {"sub", arr_sub},
    {NULL, NULL}
  };
  static const luaL_Reg meta[] = {
    {"__index", arr_index}, {"__newindex", arr_newindex}, {"__len", arr_len},
    {"__tostring", arr_tostring}, {NULL, NULL}
  };
  lg_newclass(L, LG_ARRAY_MT, methods, meta);
  {
    static const char *const fields[] = {"type", "count", "bytes", "shape", NULL};
    lg_class_fields(L, LG_ARRAY_MT, fields);
  }
  lua_pushcfunction(L, arr_new);
  lua_setfield(L, -2, "array");
}
