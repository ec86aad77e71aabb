-- bench/gpu/red_probe.lua: device time of reductions along a dim (medians
-- of 31 calls): argmax along 1 and 2 of 4096^2 floats, sum along 1 and 2
-- and max along 1 of 8192^2. Run an old build beside the new in one lease
-- to compare kernels of kernels/tensor_reduce.cl.
--   build/luagpu bench/gpu/red_probe.lua
local gpu = require "luagpu"
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local dev = gpu.device(os.getenv("LUAGPU_DEVICE"))
local M = dev:rand("float", {4096, 4096}, 3):eval()
local B = dev:rand("float", {8192, 8192}, 4):eval()
local ops = {argmax1 = function() return M:argmax(1) end, argmax2 = function() return M:argmax(2) end,
  sum1 = function() return B:sum(1) end, sum2 = function() return B:sum(2) end, max1 = function() return B:max(1) end}
for _, name in ipairs{"argmax1", "argmax2", "sum1", "sum2", "max1"} do
  local f = ops[name]
  for _ = 1, 5 do f() end
  dev:finish()
  print(("%-8s device %.1f us"):format(name, bench.median_busy_us(gpu, dev, 31, f)))
end
