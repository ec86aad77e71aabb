-- bench/reduce.lua: reduce.sum of 2^24 floats against the bandwidth of a
-- plain copy kernel on the same device, measured in the same run.
--
--   build/luagpu bench/reduce.lua [RUNS] [DEVICE] [LOG2N]
--
-- RUNS (default 15) rounds, each timing one reduction and each copy kernel
-- once, interleaved so that load on the machine hits all alike; every figure
-- is the median over the rounds, after warm-up. Times are the device's
-- (OpenCL profiling): a reduction from the start of its first pass to the
-- end of its last; the 4-byte read of the result is not counted. GB/s count
-- the bytes each moves: the sum reads 4n bytes, a copy reads and writes 4n
-- each. The ratio is the sum's GB/s over the faster copy's; the target on
-- PoCL is at least 0.8.
local gpu = rawget(_G, "gpu") or require "luagpu"
local reduce = require "luagpu.reduce"

local runs = tonumber(arg and arg[1]) or 15
local dev = gpu.device(arg and arg[2])
local log2n = tonumber(arg and arg[3]) or 24
local n = 1 << log2n

local prog = dev:build[[
__kernel void fill(__global float *x, uint seed) {
  uint i = get_global_id(0);
  uint h = i * 2654435761u ^ seed;
  h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
  x[i] = (float)(h >> 8) * (1.0f / 16777216.0f);
}
__kernel void copy(__global const float *a, __global float *b) {
  size_t i = get_global_id(0);
  b[i] = a[i];
}
__kernel void copy4(__global const float4 *a, __global float4 *b) {
  size_t i = get_global_id(0);
  b[i] = a[i];
}]]

local x = dev:buffer("float", n)
prog.fill(x, 7):run({n}):wait()
local y = dev:buffer("float", n)
local x4, y4 = dev:buffer("float4", n // 4), dev:buffer("float4", n // 4)
x:copy_to(y):wait()
local copy = prog.copy(x, y)
local copy4 = prog.copy4(x4, y4)

-- the sum must be right before it is fast
local check = reduce.sum(x)
local ref = 0
for i, v in ipairs(x:get():totable()) do ref = ref + v end
local rel = math.abs(check - ref) / ref
assert(rel < 1e-5, ("reduce.sum gave %.9g, Lua %.9g"):format(check, ref))

local function median(t)
  table.sort(t)
  local m = #t
  return m % 2 == 1 and t[(m + 1) // 2] or (t[m // 2] + t[m // 2 + 1]) / 2
end

local times = {sum = {}, copy = {}, copy4 = {}}
for r = -2, runs do   -- rounds before 1 are warm-up
  local ev, passes = reduce.sum(x, {async = true})
  ev:wait()
  local tsum = passes[#passes]:profile()["end"] - passes[1]:profile().start
  local tcopy = copy:run({n})
  tcopy:wait()
  local tcopy4 = copy4:run({n // 4})
  tcopy4:wait()
  if r >= 1 then
    times.sum[r] = tsum * 1e-9
    times.copy[r] = tcopy.duration * 1e-9
    times.copy4[r] = tcopy4.duration * 1e-9
  end
end

local rows = {
  {"copy kernel (float, 1 per work-item)", median(times.copy), 8 * n},
  {"copy kernel (float4, 1 per work-item)", median(times.copy4), 8 * n},
  {"reduce.sum", median(times.sum), 4 * n},
}
local best = 0
for i = 1, 2 do best = math.max(best, rows[i][3] / rows[i][2] / 1e9) end

print(("reduce.sum of 2^%d floats on %s (%s), median of %d runs")
      :format(log2n, dev.name, dev.platform, runs))
print(("%-40s %10s %10s %14s"):format("", "ms", "GB/s", "ratio to copy"))
for _, row in ipairs(rows) do
  local gbs = row[3] / row[2] / 1e9
  print(("%-40s %10.3f %10.2f %14.2f"):format(row[1], row[2] * 1e3, gbs, gbs / best))
end
print(("sum %.9g, Lua %.9g, relative difference %.1e"):format(check, ref, rel))
