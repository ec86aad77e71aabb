-- luagpu.tensor.random: random tensors (internal to luagpu.tensor;
-- kernels/tensor_random.cl, Philox-4x32-10).
--
--   R.rand(dev, type, shape [, seed])    uniform in [0, 1)
--   R.randn(dev, type, shape [, seed])   normal, mean 0, deviation 1
--   R.device_methods   dev:randint, dev:uniform, dev:normal, dev:randperm
--
-- rand, randn, uniform and normal take "float" or "double"; randint any
-- integer type. A seed (an integer; its 64 bits are the Philox key) gives
-- the same numbers on every device and launch geometry: element i depends
-- only on the seed and i. Without a seed, each call takes a new one from
-- Lua's math.random.

local H = require "luagpu.core.check"
local P = require "luagpu.core.programs"
local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"
local O = require "luagpu.tensor.object"
local algo = require("luagpu.tensor.interop").algo

local tostring, pcall, type = tostring, pcall, type
local mtype, tointeger = math.type, math.tointeger
local fail, show, integer = H.fail, H.show, H.integer

local R = {device_methods = {}}

local LOCAL = 256
local RECIPE = {family = "tensor", file = "tensor_random.cl"}
local FLT_MAX = 3.4028234663852886e38

local function program(fn, dev)
  local ok, prog = pcall(P.get, dev, RECIPE)
  if not ok then fail(fn, "the random kernels do not compile: %s", tostring(prog)) end
  return prog
end

-- The Philox key of seed (argument #arg): the seed's 64 bits, or a new one.
local function key_of(fn, arg, seed)
  if seed == nil then return math.random(0, math.maxinteger) end
  local key = integer(seed)
  if not key then fail(fn, "argument #%d: seed: expected an integer, got %s", arg, show(seed)) end
  return key
end

-- Checks the device and element type t (argument #1) of fn; floating: t
-- must be float or double, else an integer type.
local function check_type(fn, dev, t, floating)
  H.check_object(fn, "self", dev, "Device")
  O.check_type(fn, "argument #1", t)
  if floating and t ~= "float" and t ~= "double" then
    fail(fn, "argument #1: expected \"float\" or \"double\", got %s", show(t))
  elseif not floating and not TY.INTEGERS[t] then
    fail(fn, "argument #1: expected an integer type (char .. ulong), got %s", show(t))
  end
  O.check_device_type(fn, dev, t)
end

-- The checked shape (argument #arg) of a new tensor of t on dev: its list
-- and count.
local function shape_of(fn, dev, t, shape, arg)
  local list, n = O.check_shape(fn, "argument #" .. arg, shape)
  O.check_alloc(fn, dev, t, list, n)
  return list, n
end

-- A new tensor of t, shape list (n elements) filled by kernel NAME_t, per
-- work-item `per` elements, with the extra arguments a and b.
local function generate(fn, name, dev, t, list, n, key, per, a, b)
  local x = O.empty(fn, dev, t, list)
  if n == 0 then return x end
  local blocks = ST.ceil_div(n, per)
  local k = program(fn, dev)[name .. "_" .. t]
  local wg = k.work_group_size < LOCAL and k.work_group_size or LOCAL
  local lo, hi = key & 0xffffffff, (key >> 32) & 0xffffffff
  local call = a == nil and k(x._st.buf, n, lo, hi) or k(x._st.buf, n, lo, hi, a, b)
  call:run({ST.round_up(blocks, wg)}, {wg}, ST.NO_EVENT)
  return x
end

local function per_item(t) return t == "float" and 4 or 2 end

function R.rand(dev, t, shape, seed, ...)
  local fn = "device:rand"
  check_type(fn, dev, t, true)
  O.no_more(fn, 4, ...)
  local list, n = shape_of(fn, dev, t, shape, 2)
  return generate(fn, "rand", dev, t, list, n, key_of(fn, 3, seed), per_item(t))
end

function R.randn(dev, t, shape, seed, ...)
  local fn = "device:randn"
  check_type(fn, dev, t, true)
  O.no_more(fn, 4, ...)
  local list, n = shape_of(fn, dev, t, shape, 2)
  return generate(fn, "randn", dev, t, list, n, key_of(fn, 3, seed), per_item(t))
end

-- Checks a finite number (argument #arg, default when nil) that float t
-- can hold; returns it as a float.
local function finite(fn, arg, what, t, v, default)
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v or v == 1 / 0 or v == -1 / 0 then
    fail(fn, "argument #%d: %s: expected a finite number, got %s", arg, what, show(v))
  end
  if t == "float" and (v > FLT_MAX or v < -FLT_MAX) then
    fail(fn, "argument #%d: %s: %s is past float's range", arg, what, show(v))
  end
  return v + 0.0
end

local DM = R.device_methods

-- dev:uniform(t, shape, lo, hi [, seed]): uniform in [lo, hi) (lo + (hi -
-- lo) * u, which rounding may take to hi); lo <= hi, both finite.
function DM.uniform(dev, t, shape, lo, hi, seed, ...)
  local fn = "device:uniform"
  check_type(fn, dev, t, true)
  O.no_more(fn, 6, ...)
  local list, n = shape_of(fn, dev, t, shape, 2)
  if lo ~= nil and hi ~= nil and type(lo) == "number" and type(hi) == "number" and hi < lo then
    fail(fn, "argument #4: hi (%s) is less than lo (%s)", show(hi), show(lo))
  end
  lo = finite(fn, 3, "lo", t, lo, 0.0)
  hi = finite(fn, 4, "hi", t, hi, 1.0)
  if hi < lo then fail(fn, "argument #4: hi (%s) is less than lo (%s)", show(hi), show(lo)) end
  local span = hi - lo
  if span == 1 / 0 or (t == "float" and span > FLT_MAX) then
    fail(fn, "argument #4: hi - lo (%s - %s) is past %s's range", show(hi), show(lo), t)
  end
  return generate(fn, "uniform", dev, t, list, n, key_of(fn, 5, seed), per_item(t), lo, span)
end

-- dev:normal(t, shape, mean, std [, seed]): normal with that mean and
-- standard deviation (std >= 0), mean + std * z.
function DM.normal(dev, t, shape, mean, std, seed, ...)
  local fn = "device:normal"
  check_type(fn, dev, t, true)
  O.no_more(fn, 6, ...)
  local list, n = shape_of(fn, dev, t, shape, 2)
  if type(std) == "number" and std < 0 then
    fail(fn, "argument #4: std: expected a number >= 0, got %s", show(std))
  end
  mean = finite(fn, 3, "mean", t, mean, 0.0)
  std = finite(fn, 4, "std", t, std, 1.0)
  return generate(fn, "normal", dev, t, list, n, key_of(fn, 5, seed), per_item(t), mean, std)
end

-- A bound of randint (argument #arg) as a value of t: its 64-bit word (ulong
-- from 2^63 as the negative integer of the same bits).
local function bound(fn, arg, what, t, v)
  if type(v) ~= "number" then
    fail(fn, "argument #%d: %s: expected an integer, got %s", arg, what, show(v))
  end
  local why = TY.fits(t, v)
  if why then fail(fn, "argument #%d: %s: %s", arg, what, why) end
  local i = tointeger(v)
  if not i then i = tointeger(v - 2.0^64) end    -- ulong from 2^63 (fits said so)
  return i
end

-- The 64-bit word v as an unsigned decimal.
local function udecimal(v)
  if v >= 0 then return tostring(v) end
  local q = (v >> 1) // 5
  return tostring(q) .. tostring(v - q * 10)
end

-- dev:randint(t, lo, hi, shape [, seed]): integers lo..hi, both included,
-- uniform (each of the hi - lo + 1 values within 2^-64 of its share).
function DM.randint(dev, t, lo, hi, shape, seed, ...)
  local fn = "device:randint"
  check_type(fn, dev, t, false)
  O.no_more(fn, 6, ...)
  lo = bound(fn, 2, "lo", t, lo)
  hi = bound(fn, 3, "hi", t, hi)
  if (t == "ulong" and math.ult(hi, lo)) or (t ~= "ulong" and hi < lo) then
    local function word(v) return t == "ulong" and udecimal(v) or show(v) end
    fail(fn, "argument #3: hi (%s) is less than lo (%s)", word(hi), word(lo))
  end
  local list, n = shape_of(fn, dev, t, shape, 4)
  -- hi - lo + 1 as a 64-bit word: 0 is all 2^64 values
  return generate(fn, "randint", dev, t, list, n, key_of(fn, 5, seed), 2, lo, hi - lo + 1)
end

-- dev:randperm(n [, seed]): a long tensor holding 1..n in random order:
-- the positions that sort n random 64-bit keys (x:argsort, stable).
function DM.randperm(dev, n, seed, ...)
  local fn = "device:randperm"
  H.check_object(fn, "self", dev, "Device")
  O.no_more(fn, 3, ...)
  local count = integer(n)
  if not count or count < 0 then
    fail(fn, "argument #1: expected an integer >= 0, got %s", show(n))
  end
  local list = shape_of(fn, dev, "ulong", {count}, 1)
  local key = key_of(fn, 2, seed)
  if count == 0 then return O.empty(fn, dev, "long", list) end
  algo(fn, "argsort", dev)      -- (dev's algo.classes checked under fn: so below)
  local keys = generate(fn, "randint", dev, "ulong", list, count, key, 2, 0, 0)
  local perm = keys:argsort()
  keys:release()
  return perm
end

R.methods = {}

return R
