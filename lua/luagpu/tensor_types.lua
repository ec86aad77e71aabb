-- luagpu.tensor_types: element types of tensors, the promotion table, and
-- the checks of Lua numbers against a type (internal to luagpu.tensor).
--
--   T.promote(a, b)        the type two tensor types combine to
--   T.with_number(t, v)    the type a tensor of t and the number v combine to
--   T.floating(t)          the type of a float result from t (/, ^, sqrt...)
--   T.fits(t, v)           nil, or why v cannot be a value of t

local H = require "luagpu.helper"

local mtype, format, floor, pairs = math.type, string.format, math.floor, pairs

local T = {}

T.FLOATS = {float = true, double = true}
T.SIGNED = {char = true, short = true, int = true, long = true}
T.UNSIGNED_OF = {char = "uchar", short = "ushort", int = "uint", long = "ulong",
                 uchar = "uchar", ushort = "ushort", uint = "uint", ulong = "ulong"}
local SIGNED_OF_SIZE = {[1] = "char", [2] = "short", [4] = "int", [8] = "long"}
local SIZES = H.SCALAR_SIZES
local FLOATS, SIGNED = T.FLOATS, T.SIGNED

-- Integer ranges (for checks of Lua numbers).
T.RANGES = {
  char = {-128, 127}, uchar = {0, 255}, short = {-32768, 32767}, ushort = {0, 65535},
  int = {-2147483648, 2147483647}, uint = {0, 4294967295},
  long = {math.mininteger, math.maxinteger}, ulong = {0, math.maxinteger},
}

local RANGE_TEXT = {ulong = "0 to 2^64 - 1"}
for t, r in pairs(T.RANGES) do
  RANGE_TEXT[t] = RANGE_TEXT[t] or format("%d to %d", r[1], r[2])
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

return T
