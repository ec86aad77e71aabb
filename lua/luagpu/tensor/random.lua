-- luagpu.tensor.random: dev:rand and dev:randn (internal to luagpu.tensor;
-- kernels/tensor_random.cl, Philox-4x32-10).
--
--   dev:rand(type, shape [, seed])    uniform in [0, 1)
--   dev:randn(type, shape [, seed])   normal, mean 0, deviation 1
--
-- type is "float" or "double". A seed (an integer; its 64 bits are the
-- Philox key) gives the same numbers on every device and launch geometry:
-- element i depends only on the seed and i. Without a seed, each call
-- takes a new one from Lua's math.random.

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local ST = require "luagpu.core.steps"

local tostring, pcall = tostring, pcall
local fail, show, integer = H.fail, H.show, H.integer

local R = {}

local cache = ST.device_cache()
local LOCAL = 256

local function program(fn, dev)
  local p = cache[dev]
  if p then return p end
  local ok, prog = pcall(dev.build, dev, gpu.kernel_source("tensor_random.cl"))
  if not ok then fail(fn, "the random kernels do not compile: %s", tostring(prog)) end
  cache[dev] = prog
  return prog
end

function R.install(C)
  local DM = C.M.device_methods

  local function generate(name, dev, t, shape, seed)
    local fn = "device:" .. name
    H.check_object(fn, "self", dev, "Device")
    C.check_type(fn, "argument #1", t)
    if t ~= "float" and t ~= "double" then
      fail(fn, "argument #1: expected \"float\" or \"double\", got %s", show(t))
    end
    C.check_device_type(fn, dev, t)
    local list, n = C.check_shape(fn, "argument #2", shape)
    C.check_alloc(fn, dev, t, list, n)
    local key
    if seed == nil then
      key = math.random(0, math.maxinteger)
    else
      key = integer(seed)
      if not key then fail(fn, "argument #3: seed: expected an integer, got %s", show(seed)) end
    end
    local x = C.empty(fn, dev, t, list)
    if n == 0 then return x end
    local per = t == "float" and 4 or 2
    local blocks = (n + per - 1) // per
    local k = program(fn, dev)[name .. "_" .. t]
    local wg = k.work_group_size < LOCAL and k.work_group_size or LOCAL
    k(x._st.buf, n, key & 0xffffffff, (key >> 32) & 0xffffffff)
      :run({(blocks + wg - 1) // wg * wg}, {wg}, {event = false})
    return x
  end

  function DM.rand(dev, t, shape, seed) return generate("rand", dev, t, shape, seed) end
  function DM.randn(dev, t, shape, seed) return generate("randn", dev, t, shape, seed) end
end

return R
