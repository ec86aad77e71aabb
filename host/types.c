/*
** types.c: element types (scalars and their vectors), their names and
** sizes, and checked conversion between Lua values and typed memory.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char *const lg_scalar_names[] = {
  "char", "uchar", "short", "ushort", "int", "uint",
  "long", "ulong", "float", "double", NULL
};

static const size_t scalar_sizes[] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};

size_t lg_scalar_size(lg_Scalar s) { return scalar_sizes[s]; }

int lg_scalar_isfloat(lg_Scalar s) { return s == LG_FLOAT || s == LG_DOUBLE; }

int lg_type_slots(lg_Type t) { return t.width == 3 ? 4 : t.width; }

size_t lg_type_size(lg_Type t) {
  return scalar_sizes[t.scalar] * (size_t)lg_type_slots(t);
}

const char *lg_type_name(lg_Type t, char *buf) {
  if (t.width == 1)
    strcpy(buf, lg_scalar_names[t.scalar]);
  else
    snprintf(buf, LG_TYPENAME_MAX, "%s%d", lg_scalar_names[t.scalar], t.width);
  return buf;
}

/* OpenCL C spellings that kernel argument info may report. */
static const struct { const char *alias; lg_Scalar s; } aliases[] = {
  {"unsigned char", LG_UCHAR}, {"unsigned short", LG_USHORT},
  {"unsigned int", LG_UINT}, {"unsigned long", LG_ULONG},
  {"signed char", LG_CHAR}, {"int8_t", LG_CHAR}, {"uint8_t", LG_UCHAR},
  {"int16_t", LG_SHORT}, {"uint16_t", LG_USHORT}, {"int32_t", LG_INT},
  {"uint32_t", LG_UINT}, {"int64_t", LG_LONG}, {"uint64_t", LG_ULONG},
  {"unsigned", LG_UINT},
};

int lg_parse_type(const char *s, lg_Type *t) {
  size_t i, n;
  int w = 1;
  for (i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
    if (strcmp(s, aliases[i].alias) == 0) {
      t->scalar = aliases[i].s;
      t->width = 1;
      return 1;
    }
  }
  for (i = 0; lg_scalar_names[i] != NULL; i++) {
    n = strlen(lg_scalar_names[i]);
    if (strncmp(s, lg_scalar_names[i], n) != 0) continue;
    if (s[n] == '\0') w = 1;
    else if (strcmp(s + n, "2") == 0) w = 2;
    else if (strcmp(s + n, "3") == 0) w = 3;
    else if (strcmp(s + n, "4") == 0) w = 4;
    else if (strcmp(s + n, "8") == 0) w = 8;
    else if (strcmp(s + n, "16") == 0) w = 16;
    else continue;                      /* "uchar" after "char" fails here */
    t->scalar = (lg_Scalar)i;
    t->width = w;
    return 1;
  }
  return 0;
}

lg_Type lg_checktype(lua_State *L, int idx, const char *fn, int arg) {
  lg_Type t = {LG_FLOAT, 1};
  const char *s;
  if (lua_type(L, idx) != LUA_TSTRING)
    lg_typeerror(L, fn, arg, idx, "an element type name such as \"float\" or \"int4\"");
  lg_check_nul(L, idx, fn, arg, "the element type name");
  s = lua_tostring(L, idx);
  if (!lg_parse_type(s, &t))
    lg_argerror(L, fn, arg, "unknown element type '%s' (expected one of char uchar short "
                "ushort int uint long ulong float double, optionally with a vector "
                "width 2 3 4 8 16, as \"float4\")", s);
  return t;
}

static const struct { lua_Integer lo, hi; } int_ranges[] = {
  {-128, 127}, {0, 255}, {-32768, 32767}, {0, 65535},
  {-2147483647 - 1, 2147483647}, {0, 4294967295LL},
};

static void store_integer(lua_State *L, lg_Scalar s, lua_Integer v, void *p,
                          const char *fn, const char *what) {
  if (s <= LG_UINT && (v < int_ranges[s].lo || v > int_ranges[s].hi))
    lg_error(L, fn, "%s: %I does not fit %s (%I to %I)", what, v, lg_scalar_names[s],
             int_ranges[s].lo, int_ranges[s].hi);
  if (s == LG_ULONG && v < 0)
    lg_error(L, fn, "%s: %I does not fit ulong (0 to 2^64-1)", what, v);
  switch (s) {
    case LG_CHAR:   *(int8_t *)p = (int8_t)v; break;
    case LG_UCHAR:  *(uint8_t *)p = (uint8_t)v; break;
    case LG_SHORT:  *(int16_t *)p = (int16_t)v; break;
    case LG_USHORT: *(uint16_t *)p = (uint16_t)v; break;
    case LG_INT:    *(int32_t *)p = (int32_t)v; break;
    case LG_UINT:   *(uint32_t *)p = (uint32_t)v; break;
    case LG_LONG:   *(int64_t *)p = (int64_t)v; break;
    case LG_ULONG:  *(uint64_t *)p = (uint64_t)v; break;
    case LG_FLOAT:  *(float *)p = (float)v; break;
    case LG_DOUBLE: *(double *)p = (double)v; break;
    default: break;
  }
}

/* Raises "FN: WHAT: NUM does not fit S (its range)" for an integer type s. */
static void misfit(lua_State *L, const char *fn, const char *what, const char *num,
                   lg_Scalar s) {
  char range[64];
  if (s <= LG_UINT)
    snprintf(range, sizeof range, "%lld to %lld", (long long)int_ranges[s].lo,
             (long long)int_ranges[s].hi);
  else
    snprintf(range, sizeof range, "%s", s == LG_ULONG ? "0 to 2^64-1"
                                                       : "-9223372036854775808 to 9223372036854775807");
  lg_error(L, fn, "%s: %s does not fit %s (%s)", what, num, lg_scalar_names[s], range);
}

void lg_ulong_misfit(lua_State *L, const char *fn, const char *what, uint64_t u, lg_Scalar s) {
  char num[32];
  snprintf(num, sizeof num, "%llu", (unsigned long long)u);
  misfit(L, fn, what, num, s);
}

void lg_store_scalar(lua_State *L, int idx, lg_Scalar s, void *p,
                     const char *fn, const char *what) {
  int t = lua_type(L, idx);
  if (t != LUA_TNUMBER) {
    const char *got = luaL_typename(L, idx);
    if (t == LUA_TSTRING) got = lua_pushfstring(L, "string \"%s\"", lua_tostring(L, idx));
    lg_error(L, fn, "%s: expected a number, got %s", what, got);
  }
  if (lua_isinteger(L, idx)) {
    store_integer(L, s, lua_tointeger(L, idx), p, fn, what);
    return;
  }
  {
    lua_Number x = lua_tonumber(L, idx);
    lua_Integer i = 0;
    if (s == LG_FLOAT) { *(float *)p = (float)x; return; }
    if (s == LG_DOUBLE) { *(double *)p = (double)x; return; }
    if (!lua_numbertointeger(x, &i) || (lua_Number)i != x) {
      /* 2^63 <= x < 2^64 is still a valid ulong */
      if (s == LG_ULONG && x >= 9223372036854775808.0 && x < 18446744073709551616.0 &&
          floor(x) == x) {
        *(uint64_t *)p = (uint64_t)x;
        return;
      }
      if (floor(x) == x) {   /* integral, but past the type's range: say so, exactly */
        char num[64];
        snprintf(num, sizeof num, "%.0f", x);
        misfit(L, fn, what, num, s);
      }
      lg_error(L, fn, "%s: %s is not an integer (%s holds integers)", what,
               lg_pushnumber(L, x), lg_scalar_names[s]);
    }
    store_integer(L, s, i, p, fn, what);
  }
}

int lg_store_scalar_quick(lua_State *L, int idx, lg_Scalar s, void *p) {
  if (lua_isinteger(L, idx)) {
    lua_Integer v = lua_tointeger(L, idx);
    if (s <= LG_UINT && (v < int_ranges[s].lo || v > int_ranges[s].hi)) return 0;
    if (s == LG_ULONG && v < 0) return 0;
    store_integer(L, s, v, p, NULL, NULL);      /* fits: raises nothing */
    return 1;
  }
  if (lua_type(L, idx) != LUA_TNUMBER) return 0;
  if (s == LG_FLOAT) { *(float *)p = (float)lua_tonumber(L, idx); return 1; }
  if (s == LG_DOUBLE) { *(double *)p = (double)lua_tonumber(L, idx); return 1; }
  return 0;
}

void lg_push_scalar(lua_State *L, lg_Scalar s, const void *p) {
  switch (s) {
    case LG_CHAR:   lua_pushinteger(L, *(const int8_t *)p); break;
    case LG_UCHAR:  lua_pushinteger(L, *(const uint8_t *)p); break;
    case LG_SHORT:  lua_pushinteger(L, *(const int16_t *)p); break;
    case LG_USHORT: lua_pushinteger(L, *(const uint16_t *)p); break;
    case LG_INT:    lua_pushinteger(L, *(const int32_t *)p); break;
    case LG_UINT:   lua_pushinteger(L, *(const uint32_t *)p); break;
    case LG_LONG:   lua_pushinteger(L, (lua_Integer)*(const int64_t *)p); break;
    case LG_ULONG:  lua_pushinteger(L, (lua_Integer)*(const uint64_t *)p); break;
    case LG_FLOAT:  lua_pushnumber(L, *(const float *)p); break;
    case LG_DOUBLE: lua_pushnumber(L, *(const double *)p); break;
    default: lua_pushnil(L); break;
  }
}
