-- Ports of NumPy's own tests (numpy/core/tests: test_umath.py, test_numeric.py,
-- test_multiarray.py's sort, argsort, searchsorted, take and put,
-- test_einsum.py, test_shape_base.py; numpy/lib/tests: test_function_base.py,
-- test_arraysetops.py, test_nanfunctions.py, test_twodim_base.py,
-- test_arraypad.py, test_shape_base.py) to luagpu's names: their edge values
-- (NaN, infinities, -0.0, integer limits, division by 0, empty and size-1
-- inputs, offsets and shifts past the sizes) run through luagpu and are
-- compared with NumPy's results, computed by python3 in the same run. Where
-- luagpu deliberately differs (docs/API.md says so: 1-based positions, `round`
-- halves away from zero, integer `x // 0` and `x % 0` give 0, the lower
-- median, inclusive `arange`, `var`'s correction), the NumPy expression
-- states luagpu's rule in NumPy's terms.
local gpu = require "luagpu"
local numpy = require "algo_numpy"

local dev = gpu.device()
local nan, inf = 0 / 0, math.huge
local FP = dev.fp64 and "double" or "float"

-- NumPy's results as Lua source: one `[name] = value` per case, lists for
-- arrays (flattened), NaN and infinities as expressions, uint64 values of 2^63
-- and more as the negative integers luagpu reads them as.
local PY = [[
import sys, math, warnings
import numpy as np
warnings.simplefilter("ignore")
nan, inf = np.nan, np.inf
def lua(v):
    if isinstance(v, np.ndarray):
        return lua(v.item()) if v.ndim == 0 else "{" + ",".join(lua(e) for e in v.reshape(-1)) + "}"
    if isinstance(v, (list, tuple)): return "{" + ",".join(lua(e) for e in v) + "}"
    if isinstance(v, str): return repr(v)
    if isinstance(v, (bool, np.bool_)): return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        v = int(v)
        return str(v - 2**64 if v >= 2**63 else v)
    v = float(v)
    if math.isnan(v): return "(0/0)"
    if math.isinf(v): return "(1/0)" if v > 0 else "(-1/0)"
    if v == 0: return "(-0.0)" if math.copysign(1, v) < 0 else "0.0"
    return repr(v)
out = ["return {"]
for line in open(sys.argv[1]):
    name, expr = line.rstrip("\n").split("\t", 1)
    out.append("[%r] = %s," % (name, lua(eval(expr))))
out.append("}")
print("\n".join(out))
]]

local function flatten(t, out)
  out = out or {}
  for i = 1, #t do
    if type(t[i]) == "table" then flatten(t[i], out) else out[#out + 1] = t[i] end
  end
  return out
end

-- A host array or (nested) table as a flat list; anything else as it is.
local function plain(v)
  if gpu.type(v) == "Array" then
    local t = {}
    for i = 1, #v do t[i] = v[i] end
    return t
  end
  if gpu.type(v) == "Tensor" then return v.ndim == 0 and v:item() or flatten({v:totable()}) end
  if type(v) == "table" then
    local t = {}
    for i = 1, #v do
      local e = v[i]
      t[i] = (type(e) == "table" or gpu.type(e)) and plain(e) or e
    end
    return t
  end
  return v
end

-- nil when `got` (luagpu's) is `want` (NumPy's): NaN matches NaN, a zero's sign
-- counts when tol is 0, numbers within tol (relative, at least 1) otherwise;
-- else what differs.
local function differs(got, want, tol, path)
  if type(want) == "table" then
    if type(got) ~= "table" then return ("%s: got %s, NumPy a list"):format(path, tostring(got)) end
    local nested = false
    for i = 1, #want do nested = nested or type(want[i]) == "table" end
    if not nested then got = flatten(got) end
    if #got ~= #want then
      return ("%s: got %d elements, NumPy %d"):format(path, #got, #want)
    end
    for i = 1, #want do
      local e = differs(got[i], want[i], tol, path .. "[" .. i .. "]")
      if e then return e end
    end
    return nil
  end
  if type(want) ~= "number" then
    if got == want or (type(got) == "number" and (got ~= 0) == want) then return nil end
    return ("%s: got %s, NumPy %s"):format(path, tostring(got), tostring(want))
  end
  if type(got) ~= "number" then return ("%s: got %s, NumPy %.17g"):format(path, tostring(got), want) end
  if want ~= want or got ~= got then
    if want ~= want and got ~= got then return nil end
  elseif got == want then
    if want ~= 0 or tol > 0 or 1 / got == 1 / want then return nil end
  elseif tol > 0 and math.abs(got - want) <= tol * math.max(1, math.abs(want)) then
    return nil
  end
  return ("%s: got %.17g, NumPy %.17g"):format(path, got, want)
end

-- The cases, by family: {name, function giving luagpu's value, NumPy
-- expression, tolerance}.
local FAMILIES, ORDER = {}, {}
local function family(name)
  local list = {}
  FAMILIES[name] = list
  ORDER[#ORDER + 1] = name
  return function(case, fn, expr, tol) list[#list + 1] = {case, fn, expr, tol or 0} end
end

local function T(ty, v) return dev:tensor(ty, {#v}, v) end
local function A(ty, shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return dev:arange(ty, 0, n - 1):reshape(shape)
end
local function tuple(t) return "(" .. table.concat(t, ",") .. ",)" end
local NPT = {char = "np.int8", uchar = "np.uint8", short = "np.int16", ushort = "np.uint16",
             int = "np.int32", uint = "np.uint32", long = "np.int64", ulong = "np.uint64",
             float = "np.float32", double = "np.float64"}
local function np_list(v)
  local s = {}
  for i, x in ipairs(v) do
    s[i] = x ~= x and "nan" or x == inf and "inf" or x == -inf and "-inf"
      or (x == 0 and 1 / x < 0) and "-0.0" or ("%.17g"):format(x)
  end
  return "[" .. table.concat(s, ",") .. "]"
end
local function N(ty, v) return "np.array(" .. np_list(v) .. "," .. NPT[ty] .. ")" end
-- One floating type (double where the device has it) keeps the kernels this
-- file builds few: the float32 paths are tensor_math_spec's and the others'.
local function FLOATS() return {FP} end
local function TOL(ty) return ty == "double" and 1e-14 or 2e-6 end

-- test_umath.py: the unary functions at NaN, infinities, zeros of both signs,
-- +-1, halves, a subnormal-sized value (TestSpecialFloats, TestLog1p,
-- TestExpm1, TestSign, TestFloor/Ceil/Trunc, TestHypotSpecialValues,
-- TestArctan2SpecialValues, TestPower's special values)
do
  local add = family("test_umath: special values of the elementwise functions")
  local S = {nan, inf, -inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-30, 3.0}
  local NAMES = {abs = "abs", asinh = "arcsinh", atan = "arctan", asin = "arcsin", acos = "arccos",
                 acosh = "arccosh", atanh = "arctanh"}
  for _, ty in ipairs(FLOATS()) do
    for _, op in ipairs {"sqrt", "log", "floor", "trunc", "sign", "log1p", "expm1", "atanh"} do
      add(ty .. " " .. op, function() return T(ty, S)[op](T(ty, S)) end,
          "np." .. (NAMES[op] or op) .. "(" .. N(ty, S) .. ")", TOL(ty))
    end
    add(ty .. " neg", function() return -T(ty, S) end, "-" .. N(ty, S))
    local X = {-8, 0.0, -0.0, -0.0, 1, nan, 2, -2, inf, -inf, 0.5, -1, -1, 0.0}
    local Y = {1 / 3, -1, -1, -2, nan, 0, inf, inf, -1, 3, -inf, inf, 0.5, 0.0}
    add(ty .. " pow special values", function() return T(ty, X) ^ T(ty, Y) end,
        "np.power(" .. N(ty, X) .. "," .. N(ty, Y) .. ")", TOL(ty))
    local A2 = {0.0, -0.0, 0.0, -0.0, 1, -1, inf, inf, -inf, -inf, 1, -1, 1, -1, nan}
    local B2 = {0.0, 0.0, -0.0, -0.0, inf, inf, inf, -inf, inf, -inf, -inf, -inf, 0, -0.0, 1}
    add(ty .. " arctan2 special values", function() return T(ty, A2):atan2(T(ty, B2)) end,
        "np.arctan2(" .. N(ty, A2) .. "," .. N(ty, B2) .. ")", TOL(ty))
    local H1, H2 = {inf, nan, nan, -inf, 3, 0, -inf, 1e30}, {nan, inf, nan, 0, 4, -0.0, -inf, 1e30}
    add(ty .. " hypot special values", function() return T(ty, H1):hypot(T(ty, H2)) end,
        "np.hypot(" .. N(ty, H1) .. "," .. N(ty, H2) .. ")", TOL(ty))
    local tiny = {1e-20, -1e-20, 1e-10, -1e-30, -1, -2, -0.0}
    add(ty .. " log1p of tiny values", function() return T(ty, tiny):log1p() end,
        "np.log1p(" .. N(ty, tiny) .. ")", TOL(ty))
    local tiny2 = {1e-20, -1e-20, 1e-10, -1e-30, -inf, -0.0, 50}
    add(ty .. " expm1 of tiny values", function() return T(ty, tiny2):expm1() end,
        "np.expm1(" .. N(ty, tiny2) .. ")", TOL(ty))
    local M1 = {5, -5, 5, -5, 0.0, -0.0, 1, inf, -inf, nan, 7.5, 1, 1, -1e-20, 1e10}
    local M2 = {3, 3, -3, -3, 3, -3, 0, 2, 2, 1, inf, -inf, 0.1, 1, 3}
    local NM1, NM2 = N(ty, M1), N(ty, M2)
    add(ty .. " remainder (the divisor's sign)", function() return T(ty, M1) % T(ty, M2) end,
        "np.remainder(" .. NM1 .. "," .. NM2 .. ")")
    add(ty .. " floor_divide", function() return T(ty, M1) // T(ty, M2) end,
        "np.floor_divide(" .. NM1 .. "," .. NM2 .. ")")
    add(ty .. " fmod (the dividend's sign)", function() return T(ty, M1):fmod(T(ty, M2)) end,
        "np.fmod(" .. NM1 .. "," .. NM2 .. ")")
    add(ty .. " true_divide", function() return T(ty, M1) / T(ty, M2) end,
        "np.true_divide(" .. NM1 .. "," .. NM2 .. ")")
    add(ty .. " fmax (NaN loses)", function() return T(ty, M1):max(T(ty, M2)) end,
        "np.fmax(" .. NM1 .. "," .. NM2 .. ")")
    add(ty .. " fmin (NaN loses)", function() return T(ty, M1):min(T(ty, M2)) end,
        "np.fmin(" .. NM1 .. "," .. NM2 .. ")")
    local R = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.25, 3.7, -3.2, nan, inf, -0.0}
    add(ty .. " round: halves away from zero (luagpu's rule; NumPy's np.round takes them to even)",
        function() return T(ty, R):round() end,
        "np.where(np.isfinite(" .. N(ty, R) .. "), np.copysign(np.floor(np.abs(" .. N(ty, R) ..
        ") + 0.5), " .. N(ty, R) .. "), " .. N(ty, R) .. ")")
  end
end

-- test_umath.py TestRemainder, TestDivision, TestFloorDivide for integers:
-- signs of negative operands, the smallest values by -1, and (luagpu's rule)
-- 0 for a division by 0.
do
  local add = family("test_umath: integer floor_divide, remainder and fmod")
  local SIGNED = {7, -7, 7, -7, 0, 1, -1, 5, 6, 9}
  local SIGNED_D = {3, 3, -3, -3, 5, 7, 7, -5, -3, 0}
  local UNSIGNED = {7, 0, 255, 5, 6, 1, 2, 3, 9, 9}
  local UNSIGNED_D = {3, 5, 7, 2, 3, 1, 2, 8, 4, 0}
  for _, ty in ipairs {"char", "int", "ulong"} do
    local signed = not ty:match("^u")
    local x, y = signed and SIGNED or UNSIGNED, signed and SIGNED_D or UNSIGNED_D
    local NX, NY = N(ty, x), N(ty, y)
    local safe = "np.where(" .. NY .. " == 0, 1, " .. NY .. ")"
    add(ty .. " floor_divide", function() return T(ty, x) // T(ty, y) end,
        "np.where(" .. NY .. " == 0, 0, np.floor_divide(" .. NX .. "," .. safe .. "))")
    add(ty .. " remainder", function() return T(ty, x) % T(ty, y) end,
        "np.where(" .. NY .. " == 0, 0, np.remainder(" .. NX .. "," .. safe .. "))")
    add(ty .. " fmod", function() return T(ty, x):fmod(T(ty, y)) end,
        "np.where(" .. NY .. " == 0, 0, np.fmod(" .. NX .. "," .. safe .. "))")
    add(ty .. " sign", function() return T(ty, x):sign() end, "np.sign(" .. NX .. ")")
  end
  add("int8 min // -1 wraps", function() return T("char", {-128}) // T("char", {-1}) end,
      "np.floor_divide(np.array([-128], np.int8), np.array([-1], np.int8))")
  add("int32 min % -1 is 0", function() return T("int", {-2147483648}) % -1 end,
      "np.remainder(np.array([-2147483648], np.int32), np.int32(-1))")
  add("int64 min % 3", function() return T("long", {math.mininteger}) % 3 end,
      "np.remainder(np.array([-2**63], np.int64), np.int64(3))")
  add("uint64 from 2^63 // and %", function()
    local x = T("long", {-2048, math.mininteger + 5}):astype("ulong")
    local y = T("ulong", {7, 10})
    return {x // y, x % y, x:fmod(y)}
  end, "(lambda x, y: [x // y, x % y, np.fmod(x, y)])(np.array([2**64 - 2048, 2**63 + 5], np.uint64), np.array([7, 10], np.uint64))")
  add("uint32 // int32 in int64", function() return T("uint", {7, 4000000000}) // T("int", {-2, -3}) end,
      "np.array([7, 4000000000], np.uint32) // np.array([-2, -3], np.int32)")
  add("int32 % 2.5 in float", function() return T("int", {-7, 7}) % 2.5 end,
      "np.remainder(np.array([-7, 7], np.float32), np.float32(2.5))")
  add("int32 abs of the minimum wraps", function() return T("int", {-2147483648, -3}):abs() end,
      "np.abs(np.array([-2147483648, -3], np.int32))")
  for _, ty in ipairs {"char", "uint"} do
    local v = ty:match("^u") and {0, 1, 5, 100, 200} or {-128, -1, 0, 5, 100}
    add(ty .. " left_shift, right_shift, invert, multiply wrapping", function()
      local x = T(ty, v)
      return {x << 3, x >> 2, ~x, x * x}
    end, "(lambda x: [np.left_shift(x, 3).astype(x.dtype), np.right_shift(x, 2), np.invert(x), x * x])(" .. N(ty, v) .. ")")
  end
end

-- test_multiarray.py TestMethods.test_sort, test_argsort, test_searchsorted
-- (NaN last, -0.0 equal to 0.0, stable ties), test_nanfunctions.py's
-- nanmin/nanmax/nanargmin/nanargmax, test_numeric.py's clip with NaN.
do
  local add = family("test_multiarray and test_nanfunctions: sort, argsort, searchsorted, nan reductions, clip")
  local V = {3.0, nan, -0.0, 0.0, -inf, inf, 1.0, nan, -2.0, 3.0}
  for _, ty in ipairs(FLOATS()) do
    local NV = N(ty, V)
    local x = function() return T(ty, V) end
    add(ty .. " sort: NaN last", function() return x():sort() end, "np.sort(" .. NV .. ", kind='stable')")
    add(ty .. " argsort stable", function() return x():argsort() - 1 end, "np.argsort(" .. NV .. ", kind='stable')")
    add(ty .. " nanmax, nanmin, nanargmax, nanargmin", function()
      return {x():max(), x():min(), x():argmax() - 1, x():argmin() - 1}
    end, "(lambda a: [np.nanmax(a), np.nanmin(a), np.nanargmax(a), np.nanargmin(a)])(" .. NV .. ")")
    add(ty .. " nanmax along a dim, a row of NaNs", function()
      return dev:tensor(ty, {3, 2}, {nan, nan, 1, nan, -inf, 2}):max(2)
    end, "np.nanmax(" .. N(ty, {nan, nan, 1, nan, -inf, 2}) .. ".reshape(3, 2), axis=1)")
    add(ty .. " argmax ties: the first", function() return T(ty, {1, 3, 3, -0.0, 3}):argmax() - 1 end,
        "np.argmax([1, 3, 3, -0.0, 3])")
    add(ty .. " argmin of inf and -inf", function() return T(ty, {inf, inf, -inf, -inf}):argmin() - 1 end,
        "np.argmin([inf, inf, -inf, -inf])")
    local S, Q = {1, 2, 2, 2, 3, nan}, {0, 2, 2.5, 3, 4, nan, inf, -inf}
    add(ty .. " searchsorted left with ties and NaN", function()
      return gpu.searchsorted(T(ty, S), T(ty, Q)) - 1
    end, "np.searchsorted(" .. N(ty, S) .. "," .. N(ty, Q) .. ")")
    add(ty .. " searchsorted right with ties and NaN", function()
      return gpu.searchsorted(T(ty, S), T(ty, Q), {right = true}) - 1
    end, "np.searchsorted(" .. N(ty, S) .. "," .. N(ty, Q) .. ", side='right')")
    add(ty .. " searchsorted: -0.0 equals 0.0, inf and -inf", function()
      return {gpu.searchsorted(T(ty, {-0.0, 0.0, 1}), T(ty, {0.0, -0.0}), {right = true}) - 1,
              gpu.searchsorted(T(ty, {-inf, 0, inf, nan}), T(ty, {-inf, inf, nan}), {right = true}) - 1}
    end, "[np.searchsorted([-0.0, 0.0, 1], [0.0, -0.0], side='right'), " ..
         "np.searchsorted([-inf, 0, inf, nan], [-inf, inf, nan], side='right')]")
    add(ty .. " searchsorted into an empty array, of a 2-D array", function()
      return {gpu.searchsorted(dev:tensor(ty, {0}), T(ty, {1, 2})) - 1,
              gpu.searchsorted(T(ty, {1, 3, 5}), dev:tensor(ty, {2, 2}, {0, 3, 4, 6})) - 1}
    end, "[np.searchsorted(np.zeros(0), [1, 2]), np.searchsorted([1, 3, 5], [[0, 3], [4, 6]])]")
    add(ty .. " clip keeps NaN, one-sided bounds", function()
      return {x():clamp(-1, 2), x():clamp(0), x():clamp(nil, 0)}
    end, "[np.clip(" .. NV .. ", -1, 2), np.clip(" .. NV .. ", 0, None), np.clip(" .. NV .. ", None, 0)]")
    add(ty .. " clip with lo > hi gives hi", function() return T(ty, {1, 2, 3, 4}):clamp(3, 2) end,
        "np.clip(np.array([1., 2, 3, 4]), 3, 2)")
  end
  for _, ty in ipairs {"int", "ulong"} do
    local v = {3, 1, 2, 0, 5, 2, 1}
    add(ty .. " sort, argsort stable, searchsorted", function()
      local x = T(ty, v)
      return {x:sort(), x:argsort() - 1, gpu.searchsorted(x:sort(), T(ty, {0, 2, 5, 6})) - 1,
              gpu.searchsorted(x:sort(), T(ty, {0, 2, 5, 6}), {right = true}) - 1}
    end, "(lambda a: [np.sort(a), np.argsort(a, kind='stable'), np.searchsorted(np.sort(a), np.array([0, 2, 5, 6], a.dtype)), " ..
         "np.searchsorted(np.sort(a), np.array([0, 2, 5, 6], a.dtype), side='right')])(" .. N(ty, v) .. ")")
  end
  add("int64 extremes sort", function() return T("long", {math.maxinteger, math.mininteger, 0, -1}):sort() end,
      "np.sort(np.array([2**63 - 1, -2**63, 0, -1], np.int64))")
  add("uint64 from 2^63: sort, argmax, max", function()
    local x = T("long", {math.mininteger, 5, -2048, 0}):astype("ulong")
    return {x:sort(), x:argmax() - 1, x:max()}
  end, "(lambda a: [np.sort(a), np.argmax(a), np.max(a)])(np.array([2**63, 5, 2**64 - 2048, 0], np.uint64))")
  add("sort and argsort along dim 1", function()
    local x = dev:tensor("int", {3, 3}, {3, 1, 2, 1, 3, 3, 2, 2, 1})
    return {x:sort(1), x:argsort(1) - 1}
  end, "(lambda a: [np.sort(a, axis=0), np.argsort(a, axis=0, kind='stable')])(np.array([[3, 1, 2], [1, 3, 3], [2, 2, 1]]))")
  add("searchsorted int sorted, float values", function()
    return gpu.searchsorted(T("int", {1, 2, 3}), T(FP, {1.5, 2.0, 2.5})) - 1
  end, "np.searchsorted([1, 2, 3], [1.5, 2.0, 2.5])")
  add("searchsorted of a reversed view", function()
    return gpu.searchsorted(T(FP, {5, 3, 1}):flip(1), T(FP, {2, 4})) - 1
  end, "np.searchsorted([1, 3, 5], [2, 4])")
end

-- test_function_base.py (TestMedian, TestCumsum, TestCumprod, TestLinspace
-- in test_function_base of core), test_numeric.py's var/std with ddof,
-- linalg's norm orders.
do
  local add = family("test_function_base: median, cumsum, cumprod, var, std, norm, linspace, arange")
  for _, ty in ipairs(FLOATS()) do
    local V = {3.0, nan, -0.0, 0.0, -inf, inf, 1.0, nan, -2.0, 3.0}
    add(ty .. " median with a NaN is NaN; odd count; empty", function()
      return {T(ty, V):median(), T(ty, {5, 1, 4, 2, 3}):median(), dev:tensor(ty, {0}):median()}
    end, "[np.median(" .. N(ty, V) .. "), np.median([5, 1, 4, 2, 3]), np.median(np.zeros(0))]")
    add(ty .. " median of an even count: the lower middle (luagpu's rule)", function()
      return T(ty, {4, 1, 3, 2}):median()
    end, "np.sort([4, 1, 3, 2])[(4 - 1) // 2]")
    add(ty .. " cumsum with NaN and -0.0", function()
      return {T(ty, V):cumsum(), T(ty, {-0.0, -0.0, 1}):cumsum()}
    end, "[np.cumsum(" .. N(ty, V) .. "), np.cumsum(" .. N(ty, {-0.0, -0.0, 1}) .. ")]")
    add(ty .. " cumprod with inf and 0", function() return T(ty, {1, 2, -3, 0.5, inf, 0}):cumprod() end,
        "np.cumprod(" .. N(ty, {1, 2, -3, 0.5, inf, 0}) .. ")")
    add(ty .. " var and std with ddof 0, 1, 2", function()
      local x = T(ty, {1, 2, 4, 7})
      return {x:var(nil, {correction = 0}), x:var(), x:var(nil, {correction = 2}), x:std(),
              x:std(nil, {correction = 0})}
    end, "(lambda a: [np.var(a), np.var(a, ddof=1), np.var(a, ddof=2), np.std(a, ddof=1), np.std(a)])(np.array([1., 2, 4, 7]))", TOL(ty))
    add(ty .. " var of one element: 0 with ddof 0, NaN with ddof 1", function()
      return {T(ty, {5}):var(nil, {correction = 0}), T(ty, {5}):var()}
    end, "[np.var([5.0]), np.var([5.0], ddof=1)]")
    add(ty .. " var with NaN, with inf", function() return {T(ty, {1, nan, 3}):var(), T(ty, {1, inf, 3}):var()} end,
        "[np.var([1, nan, 3], ddof=1), np.var([1, inf, 3], ddof=1)]")
    add(ty .. " std along dims, keepdim", function()
      local x = dev:tensor(ty, {2, 3}, {1, 2, 3, 4, 6, 8})
      return {x:std(2, {correction = 0}), x:std(1), x:var(1, {keepdim = true, correction = 0})}
    end, "(lambda a: [np.std(a, axis=1), np.std(a, axis=0, ddof=1), np.var(a, axis=0, keepdims=True)])(np.array([[1., 2, 3], [4, 6, 8]]))", TOL(ty))
    add(ty .. " norm orders 2, 1, 0, inf, -inf, 3, 0.5, -1", function()
      local x = T(ty, {3, -4, 1})
      return {x:norm(), x:norm(1), T(ty, {3, -4, 0}):norm(0), x:norm(inf), x:norm(-inf), x:norm(3),
              x:norm(0.5), x:norm(-1), T(ty, {3, 0, 1}):norm(-1)}
    end, "(lambda a: [np.linalg.norm(a, o) for o in (2, 1)] + [np.linalg.norm([3., -4, 0], 0)] + " ..
         "[np.linalg.norm(a, o) for o in (inf, -inf, 3, 0.5, -1)] + [np.linalg.norm([3., 0, 1], -1)])(np.array([3., -4, 1]))", TOL(ty))
    add(ty .. " norm along a dim, of an empty vector", function()
      return {dev:tensor(ty, {2, 2}, {3, 4, 6, 8}):norm(2, 2), dev:tensor(ty, {0}):norm()}
    end, "[np.linalg.norm(np.array([[3., 4], [6, 8]]), axis=1), np.linalg.norm(np.zeros(0))]", TOL(ty))
    for _, c in ipairs {{0, 1, 1}, {5, 5, 3}, {1, 0, 6}, {0, 1, 0}, {0.1, 0.7, 7}} do
      local a, b, n = c[1], c[2], c[3]
      add(("%s linspace(%g, %g, %d)"):format(ty, a, b, n), function() return dev:linspace(ty, a, b, n) end,
          ("np.linspace(%.17g, %.17g, %d).astype(%s)"):format(a, b, n, NPT[ty]))
    end
  end
  add("linspace to an integer type: the floor (NumPy 2's rule)", function()
    return {dev:linspace("int", -1, 1, 4), dev:linspace("long", -10, 10, 4), dev:linspace("uchar", 0, 255, 4)}
  end, "[np.floor(np.linspace(-1, 1, 4)), np.floor(np.linspace(-10, 10, 4)), np.floor(np.linspace(0, 255, 4))]")
  for _, c in ipairs {{0, 1, 0.1}, {0, -1, -0.25}, {1, 1, 1}, {0, 0.3, 0.1}} do
    local a, b, s = c[1], c[2], c[3]
    add(("arange(%g, %g, %g): first + i * step not past last"):format(a, b, s),
        function() return dev:arange(FP, a, b, s) end,
        ("(lambda a, b, s: np.array([a + i * s for i in range(100) if (a + i * s <= b if s > 0 else a + i * s >= b)]))(%.17g, %.17g, %.17g)"):format(a, b, s))
  end
  add("arange of integers, negative step, unsigned", function()
    return {dev:arange("int", 10, 1, -3), dev:arange("uchar", 5, 0, -2), dev:arange("int", 1, 5.5)}
  end, "[np.arange(10, 0, -3), np.arange(5, 0, -2, dtype=np.uint8), np.arange(1, 6)]")
  for _, ty in ipairs {"uchar", "int"} do
    local v = {100, 100, 100}
    add(ty .. " cumsum and cumprod wrap in the type; sum in int64", function()
      local x = T(ty, v)
      return {x:cumsum(), x:cumprod(), x:sum(), T(ty, {1, 2, 4}):mean(), T(ty, {1, 2, 4}):var(nil, {correction = 0})}
    end, "(lambda a, b: [np.cumsum(a, dtype=a.dtype), np.cumprod(a, dtype=a.dtype), np.sum(a), np.mean(b), np.var(b)])(" ..
         N(ty, v) .. "," .. N(ty, {1, 2, 4}) .. ")", 1e-15)
  end
  add("cumsum and cumprod along dim 1, of a transposed view, empty", function()
    return {A("int", {3, 4}):cumsum(1), (A("int", {3, 4}) + 1):cumprod(1), A(FP, {3, 4}):t():cumsum(2),
            dev:tensor("int", {0}):cumsum()}
  end, "[np.cumsum(np.arange(12).reshape(3, 4), axis=0), np.cumprod(np.arange(1, 13).reshape(3, 4), axis=0), " ..
       "np.cumsum(np.arange(12.).reshape(3, 4).T, axis=1), np.zeros(0)]")
end

-- test_arraysetops.py TestUnique (NaNs as one, last; counts), test_numeric's
-- bincount with minlength.
do
  local add = family("test_arraysetops: unique with counts, bincount")
  local V = {3.0, nan, -0.0, 0.0, -inf, inf, 1.0, nan, -2.0, 3.0}
  for _, ty in ipairs(FLOATS()) do
    add(ty .. " unique: NaNs as one, last; counts", function()
      local u, c = T(ty, V):unique()
      return {u, c}
    end, "list(np.unique(" .. N(ty, V) .. ", return_counts=True))")
    add(ty .. " unique of all NaN, of empty, of a 2-D tensor", function()
      local u1, c1 = T(ty, {nan, nan, nan}):unique()
      local u2, c2 = dev:tensor(ty, {0}):unique()
      local u3, c3 = dev:tensor(ty, {2, 2}, {3, 1, 3, 2}):unique()
      return {u1, c1, #u2, #c2, u3, c3}
    end, "[[nan], [3], 0, 0] + list(np.unique(np.array([[3., 1], [3, 2]]), return_counts=True))")
  end
  for _, ty in ipairs {"uchar", "int"} do
    local v = {0, 1, 1, 3, 2, 1, 7}
    add(ty .. " unique with counts, bincount, minlength", function()
      local u, c = T(ty, {3, 1, 3, 0, 1, 3}):unique()
      return {u, c, T(ty, v):bincount(), T(ty, {0, 1, 1, 3}):bincount(10), T(ty, {0, 1, 1, 3}):bincount(2),
              dev:tensor(ty, {0}):bincount(3)}
    end, "list(np.unique(" .. N(ty, {3, 1, 3, 0, 1, 3}) .. ", return_counts=True)) + [np.bincount(" .. N("long", v) ..
         "), np.bincount([0, 1, 1, 3], minlength=10), np.bincount([0, 1, 1, 3], minlength=2), np.bincount(np.zeros(0, int), minlength=3)]")
  end
  add("uint64 unique from 2^63", function()
    return T("long", {math.mininteger, 5, math.mininteger, 0}):astype("ulong"):unique()
  end, "np.unique(np.array([2**63, 5, 2**63, 0], np.uint64))")
end

-- test_twodim_base.py (TestEye, TestTril/TestTriu on non-square and stacked
-- matrices with offsets past the sizes).
do
  local add = family("test_twodim_base: eye, tril, triu")
  add("eye(3, 5), eye(4, 2), eye(1), eye(0, 3)", function()
    return {dev:eye(FP, 3, 5), dev:eye("int", 4, 2), dev:eye(FP, 1), dev:eye(FP, 0, 3).shape}
  end, "[np.eye(3, 5), np.eye(4, 2), np.eye(1), [0, 3]]")
  for _, sh in ipairs {{3, 5}, {5, 3}} do
    local n = 1
    for _, s in ipairs(sh) do n = n * s end
    for _, k in ipairs {-3, 0, 2, 5} do
      add(("tril and triu of %s, k = %d"):format(tuple(sh), k), function()
        return {A("int", sh):tril(k), A("int", sh):triu(k)}
      end, ("(lambda a: [np.tril(a, %d), np.triu(a, %d)])(np.arange(%d).reshape%s)"):format(k, k, n, tuple(sh)))
    end
  end
  add("tril of a transposed view", function() return A("int", {3, 4}):t():tril(-1) end,
      "np.tril(np.arange(12).reshape(3, 4).T, -1)")
end

-- test_numeric.py TestRoll (negative shifts, shifts past the size, several
-- shapes, without an axis), np.flip.
do
  local add = family("test_numeric: roll, flip")
  for _, c in ipairs {{{10}, -13}, {{3, 4}, -5}, {{3, 4}, -1, 2}, {{2, 3, 4}, -7, 3},
                      {{5}, math.maxinteger}, {{5}, math.mininteger}} do
    local sh, shift, d = c[1], c[2], c[3]
    local n = 1
    for _, s in ipairs(sh) do n = n * s end
    add(("roll of %s by %d along %s"):format(tuple(sh), shift, tostring(d)),
        function() return A("int", sh):roll(shift, d) end,
        ("np.roll(np.arange(%d).reshape%s, %d%s)"):format(n, tuple(sh), shift,
          d and (", axis=%d"):format(d > 0 and d - 1 or d) or ""))
  end
  add("roll of a transposed view, of a flipped one", function()
    return {A("int", {3, 4}):t():roll(1, 1), A("int", {3, 4}):t():roll(-2), A("int", {2, 5}):flip(2):roll(2, 2)}
  end, "(lambda a: [np.roll(a.T, 1, axis=0), np.roll(a.T, -2), np.roll(np.flip(np.arange(10).reshape(2, 5), 1), 2, axis=1)])(np.arange(12).reshape(3, 4))")
  add("flip along 1, (1, 3), -1, all; flip then arithmetic", function()
    local x = A("int", {2, 3, 4})
    return {x:flip(1), x:flip({1, 3}), x:flip(-1), x:flip({1, 2, 3}), A("int", {2, 3}):flip(2) * 2 + A("int", {2, 3})}
  end, "(lambda a: [np.flip(a, 0), np.flip(a, (0, 2)), np.flip(a, -1), np.flip(a), np.flip(np.arange(6).reshape(2, 3), 1) * 2 + np.arange(6).reshape(2, 3)])(np.arange(24).reshape(2, 3, 4))")
end

-- lib/tests/test_shape_base.py (array_split, split, tile) and
-- core/tests/test_shape_base.py (concatenate, stack), test_arraypad.py's
-- constant mode.
do
  local add = family("test_shape_base and test_arraypad: split, chunk, tile, cat, stack, pad")
  local function parts(list)
    local r = {}
    for i, t in ipairs(list) do r[i] = t:totable() end
    return r
  end
  add("split 10 by 3, by sizes {2, 3, 5}; chunk 10 in 3; along dim 2", function()
    return {parts(A("int", {10}):split(3)), parts(A("int", {10}):split({2, 3, 5})), parts(A("int", {10}):chunk(3)),
            parts(A("int", {2, 5}):split(2, 2))}
  end, "[[list(x) for x in np.split(np.arange(10), [3, 6, 9])], [list(x) for x in np.split(np.arange(10), [2, 5])], " ..
       "[list(x) for x in np.split(np.arange(10), [4, 8])], [x.tolist() for x in np.split(np.arange(10).reshape(2, 5), [2, 4], axis=1)]]")
  add("chunk 6 in 4 gives 3 parts; split 3 by 5 gives one", function()
    return {#A("int", {6}):chunk(4), parts(A("int", {3}):split(5)), parts(A("int", {3}):chunk(5))}
  end, "[3, [[0, 1, 2]], [[0], [1], [2]]]")
  for _, c in ipairs {{{3}, {2}}, {{3}, {2, 2}}, {{2, 3}, {2}}, {{2, 3}, {1, 2}}, {{2, 3}, {2, 1, 2}}, {{2, 3}, {0}}} do
    local sh, reps = c[1], c[2]
    local n = 1
    for _, s in ipairs(sh) do n = n * s end
    add(("tile %s by %s"):format(tuple(sh), tuple(reps)), function() return A("int", sh):repeat_tiles(reps) end,
        ("np.tile(np.arange(%d).reshape%s, %s)"):format(n, tuple(sh), tuple(reps)))
  end
  add("tile a transposed view, a 0-d tensor, by ()", function()
    return {A("int", {2, 3}):t():repeat_tiles({2, 1}), dev:tensor("int", {}, 7):repeat_tiles({2, 2}),
            A("int", {3}):repeat_tiles({}), A("int", {2, 3}):repeat_tiles({0, 2}).shape}
  end, "[np.tile(np.arange(6).reshape(2, 3).T, (2, 1)), np.tile(np.array(7), (2, 2)), np.tile(np.arange(3), ()), [0, 6]]")
  add("concatenate along 1, 2, with an empty part; stack along a new last dim", function()
    local a = A("int", {2, 3})
    return {gpu.cat({a, A("int", {1, 3})}), gpu.cat({a, A("int", {2, 1})}, 2), gpu.cat({a, dev:tensor("int", {0, 3})}),
            gpu.stack({a, a * 2}, 3), gpu.stack({a, a * 2}, -1)}
  end, "(lambda a: [np.concatenate([a, np.arange(3).reshape(1, 3)]), np.concatenate([a, np.arange(2).reshape(2, 1)], axis=1), " ..
       "np.concatenate([a, np.zeros((0, 3), int)]), np.stack([a, 2 * a], axis=2), np.stack([a, 2 * a], axis=-1)])(np.arange(6).reshape(2, 3))")
  add("pad with constants: per dim, one width, zero widths, empty, NaN, a transposed view, 3-D", function()
    return {A("int", {2, 3}):pad({{1, 2}, {0, 1}}, 9), A("int", {3}):pad(2), A(FP, {2, 2}):pad({{0, 0}, {0, 0}}),
            dev:tensor("int", {0}):pad(2, 1), A(FP, {2}):pad({{1, 1}}, nan), A("int", {2, 3}):t():pad({{1, 0}, {0, 2}}, -1),
            A("int", {1, 2, 2}):pad(1)}
  end, "[np.pad(np.arange(6).reshape(2, 3), ((1, 2), (0, 1)), constant_values=9), np.pad(np.arange(3), 2), np.zeros((2, 2)) + np.arange(4).reshape(2, 2), " ..
       "np.pad(np.arange(0), 2, constant_values=1), np.pad(np.arange(2.), 1, constant_values=nan), " ..
       "np.pad(np.arange(6).reshape(2, 3).T, ((1, 0), (0, 2)), constant_values=-1), np.pad(np.arange(4).reshape(1, 2, 2), 1)]")
end

-- test_einsum.py: explicit and implicit outputs, traces and diagonals, sums,
-- transposes, outer and inner products, batches, integers wrapping.
do
  local add = family("test_einsum")
  local F = FP
  local SPECS = {
    {"ij,jk", {3, 4}, {4, 5}}, {"ii", {3, 3}}, {"ii->i", {3, 3}}, {"ij->j", {3, 4}}, {"ji", {3, 4}},
    {"bij,bjk->bik", {2, 3, 4}, {2, 4, 5}}, {"i,i", {3}, {3}}, {"iij->ij", {3, 3, 2}}, {"ab,bc->ca", {3, 4}, {4, 5}},
    {"ba,ac", {4, 3}, {3, 5}}, {"ii,i->i", {3, 3}, {3}}, {"ijk,jil->kl", {2, 3, 4}, {3, 2, 5}}, {"ij,jk->ik", {2, 0}, {0, 3}},
  }
  for _, s in ipairs(SPECS) do
    local spec, sa, sb = s[1], s[2], s[3]
    local function np_of(sh)
      local n = 1
      for _, v in ipairs(sh) do n = n * v end
      return ("np.arange(%d.).reshape%s"):format(n, tuple(sh))
    end
    add(("'%s' of %s%s"):format(spec, tuple(sa), sb and " and " .. tuple(sb) or ""), function()
      return sb and gpu.einsum(spec, A(F, sa), A(F, sb)) or gpu.einsum(spec, A(F, sa))
    end, ("np.einsum('%s', %s%s)"):format(spec, np_of(sa), sb and ", " .. np_of(sb) or ""))
  end
  add("'ii->i' of a transposed view; 'ij,jk->ik' of one", function()
    return {gpu.einsum("ii->i", A(F, {3, 3}):t()), gpu.einsum("ij,jk->ik", A(F, {4, 3}):t(), A(F, {4, 5}))}
  end, "[np.einsum('ii->i', np.arange(9.).reshape(3, 3).T), np.einsum('ij,jk->ik', np.arange(12.).reshape(4, 3).T, np.arange(20.).reshape(4, 5))]")
  add("integers: int32 product, uint8 wraps", function()
    return {gpu.einsum("ij,jk->ik", A("int", {3, 4}), A("int", {4, 5})),
            gpu.einsum("i,i->", T("uchar", {200, 200}), T("uchar", {2, 1}))}
  end, "[np.einsum('ij,jk->ik', np.arange(12, dtype=np.int32).reshape(3, 4), np.arange(20, dtype=np.int32).reshape(4, 5)), " ..
       "np.einsum('i,i->', np.array([200, 200], np.uint8), np.array([2, 1], np.uint8))]")
end

-- test_numeric.py / test_multiarray.py: reductions along each dim, several
-- dims, keepdims; any/all with NaN and empty; argwhere, take, put,
-- take_along_axis, where, comparisons with NaN.
do
  local add = family("test_numeric and test_multiarray: reductions, indexing, where, comparisons")
  local V = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4}
  local NX = "np.array(" .. np_list(V) .. ").reshape(2, 3, 4)"
  local x = function() return dev:tensor(FP, {2, 3, 4}, V) end
  for _, op in ipairs {"sum", "max"} do
    add(op .. " along each dim, -1, (1, 3), keepdims, all", function()
      local r = {}
      for _, d in ipairs {1, 2, 3, -1} do r[#r + 1] = x()[op](x(), d) end
      r[#r + 1] = x()[op](x(), 2, true)
      r[#r + 1] = x()[op](x(), {1, 3})
      r[#r + 1] = x()[op](x(), {1, 2}, {keepdim = true})
      r[#r + 1] = x()[op](x())
      return r
    end, ("(lambda a: [np.%s(a, axis=d) for d in (0, 1, 2, -1)] + [np.%s(a, axis=1, keepdims=True), np.%s(a, axis=(0, 2)), " ..
          "np.%s(a, axis=(0, 1), keepdims=True), np.%s(a)])(%s)"):format(op, op, op, op, op, NX), 1e-12)
  end
  add("argmin and argmax along each dim and whole", function()
    local r = {}
    for _, d in ipairs {1, 2, 3} do r[#r + 1] = x():argmin(d) - 1; r[#r + 1] = x():argmax(d) - 1 end
    r[#r + 1] = x():argmin() - 1
    r[#r + 1] = x():argmax() - 1
    return r
  end, "(lambda a: sum([[np.argmin(a, axis=d), np.argmax(a, axis=d)] for d in range(3)], []) + [np.argmin(a), np.argmax(a)])(" .. NX .. ")")
  add("sum, prod, mean over an empty dim", function()
    return {dev:tensor(FP, {2, 0}):sum(2), dev:tensor("int", {2, 0}):prod(2), dev:tensor(FP, {2, 0}):mean(2),
            dev:tensor(FP, {0, 3}):sum(2)}
  end, "[np.sum(np.zeros((2, 0)), axis=1), np.prod(np.zeros((2, 0), int), axis=1), np.mean(np.zeros((2, 0)), axis=1), np.sum(np.zeros((0, 3)), axis=1)]")
  add("any and all: NaN is true, -0.0 false, empty", function()
    local m = dev:tensor("int", {2, 3}, {0, 0, 1, 0, 0, 0})
    return {m:any(), m:all(), m:any(2), m:all(1), T(FP, {nan, 0}):any(), T(FP, {nan}):all(), T(FP, {-0.0}):any(),
            dev:tensor(FP, {0}):any(), dev:tensor(FP, {0}):all()}
  end, "(lambda m: [m.any(), m.all(), m.any(1), m.all(0), np.any([nan, 0]), np.all([nan]), np.any([-0.0]), np.any([]), np.all([])])(np.array([[0, 0, 1], [0, 0, 0]]))")
  add("argwhere (nonzero) with NaN and -0.0", function()
    return {dev:tensor("int", {2, 3}, {0, 1, 0, 2, 0, 3}):nonzero() - 1, T(FP, {0, nan, -0.0, 1}):nonzero() - 1}
  end, "[np.argwhere(np.array([[0, 1, 0], [2, 0, 3]])), np.argwhere(np.array([0, nan, -0.0, 1]))]")
  add("boolean indexing (masked_select), broadcast mask", function()
    local a = A("int", {3, 4})
    return {a:masked_select(a:gt(4)), a:masked_select(T("uchar", {1, 0, 0, 1}))}
  end, "(lambda a: [a[a > 4], a[np.broadcast_to(np.array([1, 0, 0, 1], bool), (3, 4))]])(np.arange(12).reshape(3, 4))")
  add("take: negative positions, 2-D positions, a transposed source; along an axis", function()
    local a = A("int", {3, 4})
    return {a:take(T("long", {1, -1, 5, -12})), a:take(dev:tensor("long", {2, 2}, {1, 2, 3, 4})),
            a:t():take(T("long", {1, 2, 3, 4})), a:index_select(2, T("long", {4, 1, 1})), a:index_select(1, T("int", {-1, 1}))}
  end, "(lambda a: [np.take(a, [0, -1, 4, -12]), np.take(a, [[0, 1], [2, 3]]), np.take(a.T, [0, 1, 2, 3]), " ..
       "np.take(a, [3, 0, 0], axis=1), np.take(a, [-1, 0], axis=0)])(np.arange(12).reshape(3, 4))")
  add("put: negative positions, one value, into a transposed view", function()
    local a, b, c = A("int", {3, 4}), A("int", {3, 4}), A("int", {3, 4})
    a:put(T("long", {1, -1, 6}), T("int", {-5, -6, -7}))
    b:put(T("long", {2, 3}), 9)
    c:t():put(T("long", {1, 2}), T("int", {-1, -2}))
    return {a, b, c}
  end, "(lambda a, b, c: (np.put(a, [0, -1, 5], [-5, -6, -7]), np.put(b, [1, 2], 9), np.put(c.T, [0, 1], [-1, -2]), [a, b, c])[-1])" ..
       "(np.arange(12).reshape(3, 4), np.arange(12).reshape(3, 4), np.arange(12).reshape(3, 4))")
  add("take_along_axis (gather) along 2 and 1", function()
    local a = A("int", {3, 4})
    return {a:gather(2, dev:tensor("long", {3, 2}, {1, 4, 2, 2, 4, 1})), a:gather(1, dev:tensor("long", {1, 4}, {3, 1, 2, 3}))}
  end, "(lambda a: [np.take_along_axis(a, np.array([[0, 3], [1, 1], [3, 0]]), axis=1), np.take_along_axis(a, np.array([[2, 0, 1, 2]]), axis=0)])(np.arange(12).reshape(3, 4))")
  add("where: a number branch, broadcasting, a NaN condition is true", function()
    return {gpu.where(T("int", {1, 0, 1, 0}), T(FP, {1, 2, 3, 4}), -1),
            gpu.where(dev:tensor("uchar", {2, 1}, {1, 0}), A("int", {3}), A("int", {2, 3})),
            gpu.where(T(FP, {nan, 0, -0.0}), 1, 2)}
  end, "[np.where([1, 0, 1, 0], [1., 2, 3, 4], -1), np.where(np.array([[1], [0]], bool), np.arange(3), np.arange(6).reshape(2, 3)), np.where(np.array([nan, 0, -0.0]), 1, 2)]")
  add("comparisons with NaN and -0.0; isnan, isinf, isfinite; logical ops", function()
    local a, b = T(FP, {nan, 1, nan, -0.0}), T(FP, {nan, nan, 1, 0.0})
    local c, d = T(FP, {nan, 0, 2, -0.0}), T("int", {1, 1, 0, 0})
    local s = T(FP, {nan, inf, -inf, 0, -0.0})
    return {a:lt(b), a:le(b), a:eq(b), a:ne(b), a:gt(b), a:ge(b), s:isnan(), s:isinf(), s:isfinite(),
            c:logical_and(d), c:logical_or(d), c:logical_not()}
  end, "(lambda a, b, c, d, s: [a < b, a <= b, a == b, a != b, a > b, a >= b, np.isnan(s), np.isinf(s), np.isfinite(s), " ..
       "np.logical_and(c, d), np.logical_or(c, d), np.logical_not(c)])(np.array([nan, 1, nan, -0.0]), np.array([nan, nan, 1, 0.0]), " ..
       "np.array([nan, 0, 2, -0.0]), np.array([1, 1, 0, 0]), np.array([nan, inf, -inf, 0, -0.0]))")
  add("mixed-sign comparisons of int32 and uint32 (in int64)", function()
    local a, b = T("int", {-1, 5}), T("uint", {4294967295, 5})
    return {a:lt(b), a:eq(b), A("int", {4}):lt(1.5), A("int", {4}):eq(2.0)}
  end, "[np.array([-1, 5], np.int32) < np.array([4294967295, 5], np.uint32), np.array([-1, 5], np.int32) == np.array([4294967295, 5], np.uint32), " ..
       "np.arange(4) < 1.5, np.arange(4) == 2.0]")
  add("dot, of empty vectors; outer", function()
    return {T(FP, {1, 2, 3}):dot(T(FP, {4, -5, 6})), dev:tensor(FP, {0}):dot(dev:tensor(FP, {0})),
            gpu.outer(T("int", {1, 2}), T("int", {3, 4, 5}))}
  end, "[np.dot([1., 2, 3], [4, -5, 6]), np.dot(np.zeros(0), np.zeros(0)), np.outer([1, 2], [3, 4, 5])]")
end

describe("NumPy's own tests, ported", function()
  local want
  -- NumPy's results for every case, computed once.
  local function expected()
    if want then return want end
    local file = os.tmpname()
    local f = assert(io.open(file, "w"))
    for _, name in ipairs(ORDER) do
      for _, c in ipairs(FAMILIES[name]) do
        f:write(name, ": ", c[1], "\t", c[3], "\n")
      end
    end
    f:close()
    local ok, out = pcall(numpy.run, PY, file)
    os.remove(file)
    assert(ok, out)
    want = assert(load(out))()
    return want
  end

  for _, name in ipairs(ORDER) do
    it(name .. " (" .. #FAMILIES[name] .. " cases)", function()
      if not numpy.python() then
        pending("python3 with numpy not found: not checked against NumPy")
        return
      end
      local all = expected()
      local bad = {}
      for _, c in ipairs(FAMILIES[name]) do
        local key = name .. ": " .. c[1]
        local ok, got = pcall(c[2])
        local why
        if not ok then why = "luagpu raised: " .. tostring(got)
        elseif all[key] == nil then why = "NumPy gave nothing"
        else why = differs(plain(got), all[key], c[4], "") end
        if why then bad[#bad + 1] = c[1] .. why end
      end
      assert(#bad == 0, table.concat(bad, "\n"))
    end)
  end
end)
