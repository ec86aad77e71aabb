-- bench/gpu/profiling_probe.lua: what the default queue's profiling costs a
-- command that asks for no event, by the command's size. For each size,
-- `copy_to` and a copying kernel, then finish; the median of REPS calls,
-- microseconds, with the default queue's profiling on and off taking turns
-- (ROUNDS times) in one process; then some tensor ops the same way.
--   build/luagpu bench/gpu/profiling_probe.lua [REPS [ROUNDS]]
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local gpu = rawget(_G, "gpu") or require "luagpu"
local reps = tonumber(arg and arg[1]) or 101
local rounds = tonumber(arg and arg[2]) or 2
local dev = gpu.device()
local median = bench.median
print("device: " .. dev.name)

-- microseconds, the median of reps calls of f, each to the end of its work
local function timed(f)
  for _ = 1, 3 do f() end
  dev:finish()
  return median(bench.walls(reps, function() f(); dev:finish() end)) * 1e6
end

local NO = {event = false}
local kcopy = dev:build([[__kernel void kcopy(__global float *d, __global const float *s) {
  size_t i = get_global_id(0) * 4; vstore4(vload4(0, s + i), 0, d + i); }]]).kcopy
local rows = {}
for _, mib in ipairs{0.0625, 1, 4, 16, 64, 256} do
  local n = math.floor(mib * 2^20 / 4)
  local src, dst = dev:buffer("float", n), dev:buffer("float", n)
  rows[#rows + 1] = {("copy_to %g MiB"):format(mib), function() src:copy_to(dst, NO) end}
  rows[#rows + 1] = {("copy kernel %g MiB"):format(mib),
                     function() kcopy(dst, src):run({n // 4}, {256}, NO) end}
end
local S = dev:tensor("float", {4096, 4096}, 1)
local R = dev:tensor("long", {4096}, 1)
for i = 1, 4096 do R[i] = (i * 37) % 4096 + 1 end
local x, y = dev:tensor("float", {2^24}, 1), dev:tensor("float", {2^24}, 2)
local M = dev:tensor("float", {8192, 8192}, 1)
rows[#rows + 1] = {"S:index_select(1, R) 4096^2", function() return S:index_select(1, R) end}
rows[#rows + 1] = {"(x + y):eval() 2^24", function() return (x + y):eval() end}
rows[#rows + 1] = {"M:sum(1) 8192^2", function() return M:sum(1) end}
rows[#rows + 1] = {"x:cumsum() 2^24", function() return x:cumsum() end}

print(("%-32s %12s %12s %8s"):format("command", "profiling on", "off", "on/off"))
local on, off = {}, {}
for r = 1, rounds do
  for i, row in ipairs(rows) do
    dev:set_profiling(true);  on[i] = on[i] or {};  table.insert(on[i], timed(row[2]))
    dev:set_profiling(false); off[i] = off[i] or {}; table.insert(off[i], timed(row[2]))
  end
end
for i, row in ipairs(rows) do
  local a, b = median(on[i]), median(off[i])
  print(("%-32s %12.1f %12.1f %8.2f"):format(row[1], a, b, a / b))
end
