-- bench/gpu/tensor.lua: luagpu.tensor on the GPU against a hand-written
-- kernel and PyTorch eager (bench/gpu/tensor_torch.py, run first, its
-- `BASELINE key value unit` lines in a file given as TORCH).
--
--   build/luagpu bench/gpu/tensor.lua [TORCH [LOG2N [REPS]]]
--
-- Each figure is the median over REPS batches of BATCH operations, timed
-- on the wall clock from the first enqueue to dev:finish(), divided by
-- BATCH (so it is the device time for large tensors, and the cost of one
-- operation for small ones, as torch_baseline times them). Both sides
-- enqueue without waiting (PyTorch's eager ops are asynchronous too) and
-- wait once per batch; small_add_sync waits after each operation:
--   chain     z = (a*x + b):exp()*0.5 - y over 2^LOG2N floats (one fused
--             kernel), beside a hand-written kernel and torch eager
--   add       x + y over 2^LOG2N floats: GB/s (3 x 4 bytes per element)
--   small     x + y over 1024 floats: microseconds per operation
--   small_launch    a bound hand kernel on 1024 floats launched alone
--   small_add_sync  the same, dev:finish() after each (the latency)
--   sum1/sum2 x:sum(1), x:sum(2) of 8192 x 8192 floats (sum1 also with
--             other settings of luagpu.tensor.reduce.cols4_waves)
--   rand      dev:rand("float", {2^28})
-- and prints `LUAGPU key value unit` lines and a table of ratios.
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local gpu = rawget(_G, "gpu") or require "luagpu"

local torch_file = arg and arg[1]
local log2n = tonumber(arg and arg[2]) or 26
local reps = tonumber(arg and arg[3]) or 15
local dev = gpu.device()
local now, median = gpu.now, bench.median
local n = 1 << log2n
print("device: " .. tostring(dev))

-- Seconds per call of f: the median over reps batches of batch calls.
local function per_call(batch, f)
  for _ = 1, 2 * batch do f() end      -- warm: kernels built, the pool settled
  dev:finish()
  local t = {}
  for r = 1, reps do
    local t0 = now()
    for _ = 1, batch do f() end
    dev:finish()
    t[r] = (now() - t0) / batch
  end
  return median(t)
end

local results = {}
local function report(key, value, unit)
  results[key] = value
  print(("LUAGPU %s %.3f %s"):format(key, value, unit))
end

local x = dev:rand("float", {n}, 1)
local y = dev:rand("float", {n}, 2)

-- the fused chain, and the same by hand
local hand = dev:build([[
kernel void chain(global const float* restrict x, global const float* restrict y,
                  global float* restrict z, float a, float b, uint n) {
  uint i = get_global_id(0);
  if (i < n) z[i] = exp(a * x[i] + b) * 0.5f - y[i];
}
kernel void add(global const float* restrict x, global const float* restrict y,
                global float* restrict z, uint n) {
  uint i = get_global_id(0);
  if (i < n) z[i] = x[i] + y[i];
}]])
local zb = dev:buffer("float", n)
local bx, by = x.buffer, y.buffer
local chain_call = hand.chain(bx, by, zb, 2.0, 0.5, n)
local add_call = hand.add(bx, by, zb, n)
local NOEV = {event = false}
local global = {(n + 255) // 256 * 256}
x, y = dev:rand("float", {n}, 1), dev:rand("float", {n}, 2)   -- fresh: not exposed

report("chain_ms", per_call(10, function() return ((x * 2.0 + 0.5):exp() * 0.5 - y):eval() end) * 1e3, "ms")
report("chain_hand_ms", per_call(10, function() chain_call:run(global, {256}, NOEV) end) * 1e3, "ms")
local add_s = per_call(10, function() return (x + y):eval() end)
report("add_GBps", 12 * n / add_s / 1e9, "GB/s")
local hand_s = per_call(10, function() add_call:run(global, {256}, NOEV) end)
report("add_hand_GBps", 12 * n / hand_s / 1e9, "GB/s")

local sx, sy = dev:rand("float", {1024}, 3), dev:rand("float", {1024}, 4)
report("small_add_us", per_call(1000, function() return (sx + sy):eval() end) * 1e6, "us")
-- a bound hand-written kernel launched alone (no Event): the enqueue's share
local small_out = dev:buffer("float", 1024)
local small_call = hand.add(sx.buffer, sy.buffer, small_out, 1024)
report("small_launch_us", per_call(1000, function() small_call:run({1024}, {256}, NOEV) end) * 1e6, "us")
sx, sy = dev:rand("float", {1024}, 3), dev:rand("float", {1024}, 4)   -- fresh: not exposed
-- the same, each operation waited for (dev:finish() after each): its latency
report("small_add_sync_us", per_call(1000, function()
  local z = (sx + sy):eval()
  dev:finish()
  return z
end) * 1e6, "us")

local m = dev:rand("float", {8192, 8192}, 5)
-- column sums: 4 columns per work-item with cols4_waves groups per compute
-- unit (false: one column per work-item), the default last
local R = require "luagpu.tensor.reduce"
local default_waves = R.cols4_waves
for _, w in ipairs{false, 4, 8, 32, 64} do
  R.cols4_waves = w
  report("sum1_waves_" .. tostring(w) .. "_ms", per_call(10, function() return m:sum(1) end) * 1e3, "ms")
end
R.cols4_waves = default_waves
report("sum1_ms", per_call(10, function() return m:sum(1) end) * 1e3, "ms")
report("sum2_ms", per_call(10, function() return m:sum(2) end) * 1e3, "ms")
m = nil
x, y, zb = nil, nil, nil
collectgarbage()
report("rand_ms", per_call(5, function() return dev:rand("float", {1 << 28}) end) * 1e3, "ms")

-- beside PyTorch
local base = {}
if torch_file then
  local f = io.open(torch_file)
  if f then
    for line in f:lines() do
      local k, v = line:match("^BASELINE (%S+) (%S+)")
      if k then base[k] = tonumber(v) end
    end
    f:close()
  end
end
local rows = {
  {"chain 2^" .. log2n .. " (ms)", results.chain_ms, results.chain_hand_ms, "hand kernel", false},
  {"chain 2^" .. log2n .. " (ms)", results.chain_ms, base.chain_ms, "torch eager", false},
  {"x + y 2^" .. log2n .. " (GB/s)", results.add_GBps, results.add_hand_GBps, "hand kernel", true},
  {"x + y 2^" .. log2n .. " (GB/s)", results.add_GBps, base.add_GBps, "torch", true},
  {"x + y 1024 (us per op)", results.small_add_us, base.small_add_us, "torch eager", false},
  {"x + y 1024 (us per op)", results.small_add_us, results.small_launch_us, "bare launch", false},
  {"x + y 1024 waited (us)", results.small_add_sync_us, base.small_add_sync_us, "torch eager", false},
  {"x:sum(1) 8192^2 (ms)", results.sum1_ms, base.sum1_ms, "torch.sum(0)", false},
  {"x:sum(2) 8192^2 (ms)", results.sum2_ms, base.sum2_ms, "torch.sum(1)", false},
  {"rand float 2^28 (ms)", results.rand_ms, base.rand_ms, "torch.rand", false},
}
print(("%-26s %10s %10s  %-12s %s"):format("measure", "luagpu", "baseline", "baseline is", "ratio (>1: luagpu faster)"))
for _, r in ipairs(rows) do
  local ours, theirs = r[2], r[3]
  local ratio = theirs and ours and (r[5] and ours / theirs or theirs / ours)
  print(("%-26s %10.3f %10s  %-12s %s"):format(r[1], ours, theirs and ("%.3f"):format(theirs) or "-",
        r[4], ratio and ("%.2f"):format(ratio) or "-"))
end
