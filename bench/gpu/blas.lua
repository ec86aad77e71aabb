-- bench/gpu/blas.lua: luagpu.matmul's BLAS extras on the GPU: matrix-vector
-- products against a plain copy kernel of the same bytes (measured in the
-- same run), and a batched product against torch.bmm (bench/gpu/blas_torch.py,
-- run first, its `BASELINE key value unit` lines in a file given as TORCH;
-- "-" for none).
--
--   build/luagpu bench/gpu/blas.lua [TORCH [N [BATCH [SIZE [REPS]]]]]
--   build/luagpu bench/gpu/blas.lua torch.txt              (H200: 16384, 64 x 256^3)
--   build/luagpu bench/gpu/blas.lua - 2048 8 64 5          (a CPU device, small)
--
--   copy      dst = src over N x N floats (float4 loads and stores): the
--             device's copy bandwidth, GB/s of bytes read and written
--   gemv      y = A x, A N x N float: GB/s of A (and x, y) read and written;
--             ratio against copy (the bar on the H200: 0.85)
--   gemv_t    y = A^T x (trans_a): the same
--   bmm       BATCH products of SIZE^3 float in one matmul call (3-D
--             buffers); ratio: torch.bmm's time over luagpu's (bar: 0.8)
--   bmm_loop  the same as BATCH calls on 2-D views (a Lua loop of launches)
--
-- Device times are medians over REPS of the profiled Events of one call
-- (first start to last end); wall times are medians over REPS batches of
-- 10 calls, from the first enqueue to dev:finish(), divided by 10. Prints
-- `LUAGPU key value unit` lines and a table.
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local gpu = rawget(_G, "gpu") or require "luagpu"
local matmul = require "luagpu.matmul"

local torch_file = arg and arg[1] or "-"
local N = math.tointeger(tonumber(arg and arg[2])) or 16384
local BATCH = math.tointeger(tonumber(arg and arg[3])) or 64
local SIZE = math.tointeger(tonumber(arg and arg[4])) or 256
local REPS = math.tointeger(tonumber(arg and arg[5])) or 20
local WALL_BATCH = 10
local dev = gpu.device()
local now, median = gpu.now, bench.median
print("device: " .. tostring(dev))
print(("gemv %d x %d float, bmm %d x %d^3 float, %d repetitions"):format(N, N, BATCH, SIZE, REPS))

local results = {}
local function report(key, value, unit)
  results[key] = value
  print(("LUAGPU %s %.3f %s"):format(key, value, unit))
end

-- The baselines of the torch file: key -> value.
local function read_baselines(path)
  local t = {}
  if path == "-" then return t end
  local f = io.open(path)
  if not f then
    print("no baseline file " .. path)
    return t
  end
  for line in f:lines() do
    local key, value = line:match("^BASELINE%s+(%S+)%s+(%S+)")
    if key then t[key] = tonumber(value) end
  end
  f:close()
  return t
end

-- Medians of f's device time (ns, from the Events it returns) and of its
-- wall time (s per call, in batches of WALL_BATCH).
local function measure(f)
  for _ = 1, 3 do f() end
  dev:finish()
  local device = {}
  for r = 1, REPS do
    local events = f()
    events[#events]:wait()
    device[r] = bench.span_ns(events)
  end
  local wall = {}
  for r = 1, REPS do
    local t0 = now()
    for _ = 1, WALL_BATCH do f() end
    dev:finish()
    wall[r] = (now() - t0) / WALL_BATCH
  end
  return median(device), median(wall)
end

local fill = bench.filler(dev, "float", -1)

------------------------------------------------------------------ bandwidth

local nn = N * N
local A = dev:buffer("float", {N, N})
fill(A, 1)
local x = dev:buffer("float", N)
fill(x, 2)
local y = dev:buffer("float", {N, 1})
local dst = dev:buffer("float", nn)
local copy = dev:build([[
__kernel void copy4(__global const float *restrict src, __global float *restrict dst,
                    const ulong n) {
  const size_t i = get_global_id(0);
  if (i < n) ((__global float4 *)dst)[i] = ((const __global float4 *)src)[i];
}]]).copy4(A, dst, nn // 4)
local copy_global = {(nn // 4 + 255) // 256 * 256}
local copy_ns, copy_wall = measure(function() return {copy:run(copy_global, {256})} end)
local copy_gbps = 2 * 4 * nn / copy_ns
report("copy_GBps", copy_gbps, "GB/s")
report("copy_wall_GBps", 2 * 4 * nn / copy_wall / 1e9, "GB/s")

local gemv_bytes = 4 * (nn + 2 * N)
for _, case in ipairs{{"gemv", false}, {"gemv_t", true}} do
  local key, trans = case[1], case[2]
  local opts = {trans_a = trans}
  local ns, wall = measure(function()
    local _, _, events = matmul(A, x, y, opts)
    return events
  end)
  report(key .. "_GBps", gemv_bytes / ns, "GB/s")
  report(key .. "_wall_GBps", gemv_bytes / wall / 1e9, "GB/s")
  report(key .. "_vs_copy", gemv_bytes / ns / copy_gbps, "x")
end
-- check: y = A^T x against y = A x of a transposed copy is not needed; the
-- specs check both. Here one element against the host.
do
  local _, ev = matmul(A, x, y)
  ev:wait()
  local row = A:sub(1, N):get()
  local xv = x:get()
  local s = 0
  for i = 1, N do s = s + row[i] * xv[i] end
  print(("check: y[1] = %.6g, host %.6g"):format(y:get()[1], s))
end
A:release()
dst:release()

------------------------------------------------------------------ batched

local S = SIZE
local BA = dev:buffer("float", {BATCH, S, S})
local BB = dev:buffer("float", {BATCH, S, S})
local BC = dev:buffer("float", {BATCH, S, S})
fill(BA, 3)
fill(BB, 4)
local bmm_ns, bmm_wall = measure(function()
  local _, _, events = matmul(BA, BB, BC)
  return events
end)
report("bmm_us", bmm_ns / 1e3, "us")
report("bmm_wall_us", bmm_wall * 1e6, "us")
report("bmm_TFLOPs", 2 * BATCH * S * S * S / bmm_ns / 1e3, "TFLOP/s")

-- the same as a Lua loop of launches on views
local views = {}
for z = 1, BATCH do
  local first = (z - 1) * S * S + 1
  views[z] = {BA:sub(first, first + S * S - 1), BB:sub(first, first + S * S - 1),
              BC:sub(first, first + S * S - 1)}
end
local loop_opts = {m = S, n = S, k = S}
local loop_ns, loop_wall = measure(function()
  local first, last
  for z = 1, BATCH do
    local v = views[z]
    local _, _, events = matmul(v[1], v[2], v[3], loop_opts)
    first = first or events[1]
    last = events[#events]
  end
  return {first, last}
end)
report("bmm_loop_us", loop_ns / 1e3, "us")
report("bmm_loop_wall_us", loop_wall * 1e6, "us")

------------------------------------------------------------------ table

local base = read_baselines(torch_file)
local function ratio(a, b) return (a and b) and ("%.2f"):format(a / b) or "-" end
local function num(v, fmt) return v and (fmt or "%.1f"):format(v) or "-" end
print()
print("| measure | luagpu | baseline | ratio | bar |")
print("| --- | --- | --- | --- | --- |")
print(("| copy GB/s (device) | %s | | | |"):format(num(copy_gbps)))
for _, key in ipairs{"gemv", "gemv_t"} do
  local g = results[key .. "_GBps"]
  print(("| %s GB/s (device), against the copy | %s | %s | %s | 0.85 |"):format(key, num(g),
        num(copy_gbps), ratio(g, copy_gbps)))
  local tk = base[key .. "_GBps"]
  if tk then
    print(("| %s GB/s, against torch.mv | %s | %s | %s | |"):format(key, num(g), num(tk),
          ratio(g, tk)))
  end
end
local tb = base.bmm_us
print(("| bmm %d x %d^3 us (device), torch.bmm / luagpu | %s | %s | %s | 0.8 |"):format(
      BATCH, S, num(results.bmm_us), num(tb), ratio(tb, results.bmm_us)))
print(("| bmm wall us per call, torch.bmm / luagpu | %s | %s | %s | |"):format(
      num(results.bmm_wall_us), num(base.bmm_wall_us), ratio(base.bmm_wall_us,
      results.bmm_wall_us)))
print(("| bmm as a loop of %d calls, us (device / wall) | %s / %s | | | |"):format(BATCH,
      num(results.bmm_loop_us), num(results.bmm_loop_wall_us)))
