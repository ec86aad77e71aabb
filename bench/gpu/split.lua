-- bench/gpu/split.lua: matmul and reduce.sum split over two GPUs of one
-- host (luagpu.split), against one GPU, wall clock, medians of REPS (of
-- 3 * REPS for the sums, one and two GPUs taking turns after a warm-up).
--
--   build/luagpu bench/gpu/split.lua [REPS [N [LOG2_SUM]]]
--
-- "operands on the devices": each GPU holds its own row block of A (and B,
-- C) and the list form runs both products at once; "end to end": from host
-- arrays A and B to C in a host array (one GPU: write, matmul, read; two:
-- opts.devices with host arrays); "from buffers of GPU 1": opts.devices
-- with A and B in buffers of the first GPU.
local gpu = rawget(_G, "gpu") or require "luagpu"
local matmul = require "luagpu.matmul"
local reduce = require "luagpu.reduce"

local reps = tonumber(arg and arg[1]) or 5
local n = tonumber(arg and arg[2]) or 8192
local e = tonumber(arg and arg[3]) or 30
local devs = gpu.devices("gpu")
assert(#devs >= 2, "two GPUs needed, found " .. #devs)
local d1, d2 = devs[1], devs[2]
local now = gpu.now

local function median(f)
  f()                                           -- warm-up: builds, first touch
  local t = {}
  for i = 1, reps do
    local t0 = now()
    f()
    t[i] = now() - t0
  end
  table.sort(t)
  return t[(#t + 1) // 2]
end

local function report(what, one, two)
  print(("| %s | %.2f ms | %.2f ms | %.2fx |"):format(what, one * 1e3, two * 1e3, one / two))
end

print(("two GPUs: %s and %s; medians of %d"):format(d1.name, d2.name, reps))
print("| measurement | one GPU | two GPUs | speed-up |")
print("| --- | --- | --- | --- |")

-- matmul, operands on the devices
local h = gpu.array("float", {shape = {n, n}}):fill(1)
local half = n // 2
local A = d1:buffer("float", {n, n}, {host = h})
local B = d1:buffer("float", {n, n}, {host = h})
local C = d1:buffer("float", {n, n})
local A1, A2 = d1:buffer("float", {half, n}), d2:buffer("float", {n - half, n})
local B2, C1, C2 = d2:buffer("float", {n, n}), d1:buffer("float", {half, n}), d2:buffer("float", {n - half, n})
A1:fill(1):wait(); A2:fill(1):wait(); B2:fill(1):wait()
local one = median(function() local _, ev = matmul(A, B, C); ev:wait() end)
local two = median(function() local _, ev = matmul({A1, A2}, {B, B2}, {C1, C2}); ev:wait() end)
report(("matmul %d, operands on the devices (%.1f / %.1f TFLOP/s)"):format(n,
       2 * n ^ 3 / one / 1e12, 2 * n ^ 3 / two / 1e12), one, two)
local got = C2:get()
assert(got[1] == n and got[#got] == n, "wrong product on the second GPU")

-- matmul end to end: host arrays in, host array out
local out = gpu.array("float", {shape = {n, n}})
one = median(function()
  A:write(h); B:write(h)
  local Cx = matmul(A, B)
  Cx:get(out)
end)
two = median(function()
  local _, ev = matmul(h, h, out, {devices = {d1, d2}})
  ev:wait()
end)
report(("matmul %d end to end from host arrays"):format(n), one, two)
assert(out[1] == n and out[#out] == n, "wrong product end to end")
two = median(function()
  A:write(h); B:write(h)
  local Cx = matmul(A, B, {devices = {d1, d2}})
  Cx:get(out)
end)
report(("matmul %d from buffers of GPU 1, devices ="):format(n), one, two)
assert(out[1] == n and out[#out] == n, "wrong product end to end")
A, B, C, A1, A2, B2, C1, C2 = nil
collectgarbage()

-- reduce.sum of 2^e floats
local total = 1 << e
local b = d1:buffer("float", total)
b:fill(1):wait()
local b1, b2 = d1:buffer("float", total // 2), d2:buffer("float", total - total // 2)
b1:fill(1):wait(); b2:fill(1):wait()
-- both GPUs busy for a while first (an idle GPU clocks down), then one and
-- two GPUs taking turns, so that both see the same clocks
for _ = 1, 50 do reduce.sum({b1, b2}) end
do
  local t1, t2 = {}, {}
  for i = 1, 3 * reps do
    local t0 = now()
    assert(reduce.sum(b) == total)
    t1[i] = now() - t0
    t0 = now()
    assert(reduce.sum({b1, b2}) == total)
    t2[i] = now() - t0
  end
  table.sort(t1)
  table.sort(t2)
  one, two = t1[(#t1 + 1) // 2], t2[(#t2 + 1) // 2]
end
report(("reduce.sum 2^%d floats, on the devices (%.0f / %.0f GB/s)"):format(e,
       total * 4 / one / 1e9, total * 4 / two / 1e9), one, two)
-- what one GPU takes for its half: the bound of the split
local half_one = median(function() assert(reduce.sum(b1) == total // 2) end)
print(("| reduce.sum 2^%d floats on one GPU (each GPU's share above) | %.2f ms | | |")
      :format(e - 1, half_one * 1e3))
two = median(function() assert(reduce.sum(b, {devices = {d1, d2}}) == total) end)
report(("reduce.sum 2^%d floats of one buffer, opts.devices"):format(e), one, two)
