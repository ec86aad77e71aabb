-- luagpu.tensor.random: dev:rand and dev:randn (internal to luagpu.tensor;
-- kernels/tensor_random.cl, Philox-4x32-10).
--
--   R.rand(dev, type, shape [, seed])    uniform in [0, 1)
--   R.randn(dev, type, shape [, seed])   normal, mean 0, deviation 1
--
-- type is "float" or "double". A seed (an integer; its 64 bits are the
-- Philox key) gives the same numbers on every device and launch geometry:
-- element i depends only on the seed and i. Without a seed, each call
-- takes a new one from Lua's math.random.

local H = require "luagpu.core.check"
local P = require "luagpu.core.programs"
local ST = require "luagpu.core.steps"
local O = require "luagpu.tensor.object"

local tostring, pcall = tostring, pcall
local fail, show, integer = H.fail, H.show, H.integer

local R = {}

local LOCAL = 256
local RECIPE = {family = "tensor", file = "tensor_random.cl"}

local function program(fn, dev)
  local ok, prog = pcall(P.get, dev, RECIPE)
  if not ok then fail(fn, "the random kernels do not compile: %s", tostring(prog)) end
  return prog
end

local function generate(name, dev, t, shape, seed)
  local fn = "device:" .. name
  H.check_object(fn, "self", dev, "Device")
  O.check_type(fn, "argument #1", t)
  if t ~= "float" and t ~= "double" then
    fail(fn, "argument #1: expected \"float\" or \"double\", got %s", show(t))
  end
  O.check_device_type(fn, dev, t)
  local list, n = O.check_shape(fn, "argument #2", shape)
  O.check_alloc(fn, dev, t, list, n)
  local key
  if seed == nil then
    key = math.random(0, math.maxinteger)
  else
    key = integer(seed)
    if not key then fail(fn, "argument #3: seed: expected an integer, got %s", show(seed)) end
  end
  local x = O.empty(fn, dev, t, list)
  if n == 0 then return x end
  local per = t == "float" and 4 or 2
  local blocks = ST.ceil_div(n, per)
  local k = program(fn, dev)[name .. "_" .. t]
  local wg = k.work_group_size < LOCAL and k.work_group_size or LOCAL
  k(x._st.buf, n, key & 0xffffffff, (key >> 32) & 0xffffffff)
    :run({ST.round_up(blocks, wg)}, {wg}, ST.NO_EVENT)
  return x
end

function R.rand(dev, t, shape, seed) return generate("rand", dev, t, shape, seed) end
function R.randn(dev, t, shape, seed) return generate("randn", dev, t, shape, seed) end

return R
