-- bench/tensor.lua: luagpu.tensor against hand-written kernels on any
-- device (PoCL in CI; bench/gpu/tensor.lua adds PyTorch on the GPU).
--
--   build/luagpu bench/tensor.lua [LOG2N [REPS]]
--
-- Medians over REPS batches of 10 operations, wall clock to dev:finish():
--   chain   z = (a*x + b):exp()*0.5 - y (one fused kernel) vs the same
--           chain written as one kernel by hand, and vs the chain run
--           eagerly (tensor.lazy = false: 5 kernels, 4 temporaries)
--   add     x + y vs a hand-written copy kernel z[i] = x[i]: GB/s counted
--           as the bytes each moves (12 and 8 per element)
local bench = dofile((arg and arg[0] or "bench/"):match("^(.-)[^/]*$") .. "common.lua")
local gpu = rawget(_G, "gpu") or require "luagpu"
local tensor = require "luagpu.tensor"

local log2n = tonumber(arg and arg[1]) or 22
local reps = tonumber(arg and arg[2]) or 9
local n = 1 << log2n
local dev = gpu.device()
local now, median = gpu.now, bench.median
print(tostring(dev))

local function per_call(f)
  for _ = 1, 20 do f() end
  dev:finish()
  local t = {}
  for r = 1, reps do
    local t0 = now()
    for _ = 1, 10 do f() end
    dev:finish()
    t[r] = (now() - t0) / 10
  end
  return median(t)
end

local hand = dev:build([[
kernel void chain(global const float* restrict x, global const float* restrict y,
                  global float* restrict z, float a, float b, uint n) {
  uint i = get_global_id(0);
  if (i < n) z[i] = exp(a * x[i] + b) * 0.5f - y[i];
}
kernel void copy(global const float* restrict x, global float* restrict z, uint n) {
  uint i = get_global_id(0);
  if (i < n) z[i] = x[i];
}]])
local hx, hy, hz = dev:rand("float", {n}, 1).buffer, dev:rand("float", {n}, 2).buffer, dev:buffer("float", n)
local x, y = dev:rand("float", {n}, 1), dev:rand("float", {n}, 2)
local global, NOEV = {(n + 255) // 256 * 256}, {event = false}
local chain_call, copy_call = hand.chain(hx, hy, hz, 2.0, 0.5, n), hand.copy(hx, hz, n)

local function chain() return ((x * 2.0 + 0.5):exp() * 0.5 - y):eval() end
local fused = per_call(chain)
local by_hand = per_call(function() chain_call:run(global, {256}, NOEV) end)
tensor.lazy = false
local eager = per_call(chain)
tensor.lazy = true
local add = per_call(function() return (x + y):eval() end)
local copy = per_call(function() copy_call:run(global, {256}, NOEV) end)

print(("%-34s %10s %10s %8s"):format("2^" .. log2n .. " floats", "luagpu", "baseline", "ratio"))
print(("%-34s %8.3f ms %8.3f ms %8.2f"):format("fused chain vs hand kernel", fused * 1e3, by_hand * 1e3, by_hand / fused))
print(("%-34s %8.3f ms %8.3f ms %8.2f"):format("fused chain vs eager (5 kernels)", fused * 1e3, eager * 1e3, eager / fused))
print(("%-34s %6.1f GB/s %6.1f GB/s %8.2f"):format("x + y vs copy kernel", 12 * n / add / 1e9,
      8 * n / copy / 1e9, (12 * n / add) / (8 * n / copy)))
