-- luagpu.core.types: the element types, once. Every helper reads sizes,
-- signedness, ranges, the C spellings of their limits and the promotion of
-- two types from here; spec/core_types_spec.lua checks the table against
-- the C module's (host/types.c).
--
--   T.NAMES                the scalar types in order ("char" .. "double")
--   T.SIZES[t]             bytes per element
--   T.FLOATS[t], T.INTEGERS[t], T.SIGNED[t] (signed integers only)
--   T.UNSIGNED_OF[t]       the unsigned integer type of t's width
--   T.WRAP[t]              the unsigned type integer + - * of t compute in
--   T.RANGES[t]            {lo, hi} as Lua integers (integers only; ulong's
--                          hi is math.maxinteger: Lua has no larger integer)
--   T.LIMITS[t]            {lo, hi} as OpenCL C expressions (floats: -inf, inf)
--   T.NAN[t]               NaN as an OpenCL C expression (floats only)
--   T.LIST                 "char, uchar, ..., float or double" for messages
--   T.promote(a, b)        the type two tensor types combine to
--   T.with_number(t, v)    the type a tensor of t and the Lua number v give
--   T.floating(t)          the type of a float result from t (/, ^, sqrt...)
--   T.fits(t, v)           nil, or why the Lua number v is no value of t
--   T.check_scalar(fn, where, t)   t, or raises "expected a scalar element
--                          type (char .. double)" (algo's and reduce.new's words)
--
-- Adding an element type is one row of ROWS (and its C side in types.c).

local H = require "luagpu.core.check"

local mtype, format, floor, ipairs, pairs = math.type, string.format, math.floor, ipairs, pairs
local concat, type = table.concat, type

local T = {}

-- name, bytes, kind ("s" signed integer, "u" unsigned, "f" floating),
-- the unsigned type wrapping arithmetic uses, range (Lua integers), the C
-- expressions of its least and greatest values, NaN (floats).
local ROWS = {
  {"char",   1, "s", "uint",  -128, 127, "CHAR_MIN", "CHAR_MAX"},
  {"uchar",  1, "u", "uint",  0, 255, "0", "UCHAR_MAX"},
  {"short",  2, "s", "uint",  -32768, 32767, "SHRT_MIN", "SHRT_MAX"},
  {"ushort", 2, "u", "uint",  0, 65535, "0", "USHRT_MAX"},
  {"int",    4, "s", "uint",  -2147483648, 2147483647, "INT_MIN", "INT_MAX"},
  {"uint",   4, "u", "uint",  0, 4294967295, "0", "UINT_MAX"},
  {"long",   8, "s", "ulong", math.mininteger, math.maxinteger, "LONG_MIN", "LONG_MAX"},
  {"ulong",  8, "u", "ulong", 0, math.maxinteger, "0", "ULONG_MAX"},
  {"float",  4, "f", nil, nil, nil, "-INFINITY", "INFINITY", "NAN"},
  {"double", 8, "f", nil, nil, nil, "-(double)INFINITY", "(double)INFINITY", "((double)NAN)"},
}

T.NAMES, T.SIZES, T.FLOATS, T.INTEGERS, T.SIGNED = {}, {}, {}, {}, {}
T.UNSIGNED_OF, T.WRAP, T.RANGES, T.LIMITS, T.NAN = {}, {}, {}, {}, {}
local SIGNED_OF_SIZE, UNSIGNED_OF_SIZE = {}, {}
for i, r in ipairs(ROWS) do
  local t, size, kind = r[1], r[2], r[3]
  T.NAMES[i], T.SIZES[t] = t, size
  T.LIMITS[t] = {r[7], r[8]}
  if kind == "f" then
    T.FLOATS[t], T.NAN[t] = true, r[9]
  else
    T.INTEGERS[t], T.WRAP[t], T.RANGES[t] = true, r[4], {r[5], r[6]}
    if kind == "s" then T.SIGNED[t], SIGNED_OF_SIZE[size] = true, t
    else UNSIGNED_OF_SIZE[size] = t end
  end
end
for t in pairs(T.INTEGERS) do T.UNSIGNED_OF[t] = UNSIGNED_OF_SIZE[T.SIZES[t]] end
T.LIST = concat(T.NAMES, ", ", 1, #T.NAMES - 1) .. " or " .. T.NAMES[#T.NAMES]

local SIZES, FLOATS, SIGNED = T.SIZES, T.FLOATS, T.SIGNED

local RANGE_TEXT = {}
for t, r in pairs(T.RANGES) do
  RANGE_TEXT[t] = t == "ulong" and "0 to 2^64 - 1" or format("%d to %d", r[1], r[2])
end

-- The promotion of two tensor types (docs/API.md, "Type promotion"):
-- double beats float beats every integer; two integers of one signedness
-- give the wider; a signed and an unsigned give the signed one if it is
-- wider, else the signed type twice the unsigned's width (long at most).
function T.promote(a, b)
  if a == b then return a end
  if a == "double" or b == "double" then return "double" end
  if a == "float" or b == "float" then return "float" end
  local sa, sb = SIGNED[a] or false, SIGNED[b] or false
  if sa == sb then return SIZES[a] >= SIZES[b] and a or b end
  local s, u = a, b
  if sb then s, u = b, a end
  if SIZES[s] > SIZES[u] then return s end
  return SIGNED_OF_SIZE[SIZES[u] * 2] or "long"
end

-- A Lua integer takes the tensor's type; a Lua float makes an integer
-- tensor's result float.
function T.with_number(t, v)
  if mtype(v) == "float" and not FLOATS[t] then return "float" end
  return t
end

-- The floating type of a result from t: itself for float and double;
-- double for long and ulong; float for the other integers.
function T.floating(t)
  if FLOATS[t] then return t end
  if SIZES[t] == 8 then return "double" end
  return "float"
end

-- nil when the Lua number v is a value of type t, else the reason. The
-- rules of storing into arrays and buffers (docs/API.md, "Storing checks
-- every value"): integral floats count as integers; ulong takes integers
-- from 0 and floats from 2^63 up to below 2^64 (the binding of a kernel's
-- ulong argument converts those); nothing negative fits an unsigned type.
function T.fits(t, v)
  if FLOATS[t] then return nil end
  local i = H.integer(v)
  if not i then
    if mtype(v) == "float" and v == floor(v) then
      if t == "ulong" and v >= 2.0^63 and v < 2.0^64 then return nil end
      return format("%s does not fit %s (%s)", H.show(v), t, RANGE_TEXT[t])
    end
    return format("%s is not an integer (%s holds integers)", H.show(v), t)
  end
  local r = T.RANGES[t]
  if i < r[1] or (t ~= "ulong" and i > r[2]) then
    return format("%s does not fit %s (%s)", H.show(v), t, RANGE_TEXT[t])
  end
  return nil
end

-- t when it names a scalar type, else raises at the helper's caller
-- ("field 'acc'", "argument #2: option acc" for where).
function T.check_scalar(fn, where, t)
  if type(t) ~= "string" or not SIZES[t] then
    H.fail(fn, "%s: expected a scalar element type (char .. double), got %s", where,
           type(t) == "string" and "'" .. t .. "'" or H.typename(t))
  end
  return t
end

return T
