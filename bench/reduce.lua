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
local bench = dofile((arg and arg[0] or "bench/"):match("^(.-)[^/]*$") .. "common.lua")

local runs = tonumber(arg and arg[1]) or 15
local dev = gpu.device(arg and arg[2])
local log2n = tonumber(arg and arg[3]) or 24
local n = 1 << log2n

local prog = dev:build[[
__kernel void copy(__global const float *a, __global float *b) {
  size_t i = get_global_id(0);
  b[i] = a[i];
}
__kernel void copy4(__global const float4 *a, __global float4 *b) {
  size_t i = get_global_id(0);
  b[i] = a[i];
}]]

local x = dev:buffer("float", n)
bench.filler(dev, "float", 0)(x, 7):wait()
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

local times = {sum = {}, copy = {}, copy4 = {}}
for r = -2, runs do   -- rounds before 1 are warm-up
  local ev, passes = reduce.sum(x, {async = true})
  ev:wait()
  local tsum = bench.span_ns(passes)
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

-- label, ms, GB/s, and the ratio to the faster copy's GB/s
local function row(label, seconds, bytes) return {label, seconds * 1e3, bytes / seconds / 1e9} end
local rows = {
  row("copy kernel (float, 1 per work-item)", bench.median(times.copy), 8 * n),
  row("copy kernel (float4, 1 per work-item)", bench.median(times.copy4), 8 * n),
  row("reduce.sum", bench.median(times.sum), 4 * n),
}
local best = math.max(rows[1][3], rows[2][3])
for _, r in ipairs(rows) do r[4] = r[3] / best end

print(("reduce.sum of 2^%d floats on %s (%s), median of %d runs")
      :format(log2n, dev.name, dev.platform, runs))
bench.print_table("%-40s %10s %10s %14s", {"", "ms", "GB/s", "ratio to copy"},
                  "%-40s %10.3f %10.2f %14.2f", rows)
print(("sum %.9g, Lua %.9g, relative difference %.1e"):format(check, ref, rel))
