-- bench/gpu/to_device.lua: several GPUs of one host. x:to(dev) of a tensor
-- on the first GPU to the second (wall clock until both devices are done,
-- and the bandwidth), and `devices =` calls on data that lives on the
-- first GPU against the same call without (they run there alone now).
-- Prints `LUAGPU key value unit` lines. Baseline: bench/gpu/to_device.py
-- (torch's x.to("cuda:1")) in the same lease.
--
--   build/luagpu bench/gpu/to_device.lua [REPS [DEVICE TYPE]]
local gpu = rawget(_G, "gpu") or require "luagpu"
local matmul = require "luagpu.matmul"
local reduce = require "luagpu.reduce"
local reps = tonumber(arg and arg[1]) or 10
local devs = gpu.devices(arg and arg[2] or "gpu")
assert(#devs >= 2, "two GPUs expected, got " .. #devs)
local d1, d2 = devs[1], devs[2]
local now = gpu.now

local function median(t) table.sort(t); return t[(#t + 1) // 2] end
local function wall(f)
  for _ = 1, 2 do f(); d1:finish(); d2:finish() end
  local t = {}
  for r = 1, reps do
    local t0 = now()
    f()
    d1:finish(); d2:finish()
    t[r] = now() - t0
  end
  return median(t)
end

-- (the copy, then a sum of it on the second GPU: a driver may move a
-- buffer only when a device first uses it; the sum's own time is given)
for _, n in ipairs {1 << 20, 1 << 24, 1 << 26} do
  local x = d1:rand("float", {n}, 1)
  local y2 = d2:rand("float", {n}, 1)
  local s = wall(function() return x:to(d2):sum() end)
  local own = wall(function() return y2:sum() end)
  print(string.format("LUAGPU to_%d %.1f us (%.1f of them the sum on GPU 2) %.2f GB/s", n,
                      s * 1e6, own * 1e6, n * 4 / (s - own) / 1e9))
end
local function matrix(seed)
  local m = d1:buffer("float", {4096, 4096})
  d1:rand("float", {4096 * 4096}, seed).buffer:copy_to(m):wait()
  return m
end
local A, B = matrix(2), matrix(3)
local one = wall(function() return matmul(A, B) end)
local split = wall(function() return matmul(A, B, {devices = devs}) end)
print(string.format("LUAGPU matmul_4096_one %.1f us", one * 1e6))
print(string.format("LUAGPU matmul_4096_devices %.1f us (ratio %.2f, above 1 slower)", split * 1e6,
                    split / one))
local b = d1:rand("float", {1 << 26}, 4).buffer
local r1 = wall(function() return reduce.sum(b) end)
local r2 = wall(function() return reduce.sum(b, {devices = devs}) end)
print(string.format("LUAGPU sum_2^26_one %.1f us", r1 * 1e6))
print(string.format("LUAGPU sum_2^26_devices %.1f us (ratio %.2f)", r2 * 1e6, r2 / r1))
