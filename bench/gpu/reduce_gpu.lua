-- bench/gpu/reduce_gpu.lua: reduce.sum over 2^20 and 2^28 floats on the GPU,
-- timed with OpenCL profiling, for bench/gpu/run.sh to set beside
-- torch.sum (bench/gpu/torch_baseline.py).
--
--   build/luagpu bench/gpu/reduce_gpu.lua [REPS] [DEVICE]
--
-- Each size: 5 warm-up reductions, then REPS (default 20) timed ones; the
-- time of one is from the start of its first kernel pass to the end of its
-- last (the 4-byte read of the result is not counted, as torch's timing
-- leaves the result on the device). Prints the medians as
--   LUAGPU sum_2^20_us 20.74 us
--   LUAGPU sum_2^20_gbs 202.3 GB/s
-- (the keys of torch_baseline.py's BASELINE lines), then a table with the
-- minimum, median and wall-clock time per blocking call. Also checks each
-- sum against one accumulated in double, and reports a plain float4 copy
-- kernel's bandwidth (bytes read and written) on the same device.
local gpu = rawget(_G, "gpu") or require "luagpu"
local reduce = require "luagpu.reduce"
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")

local reps = math.max(10, tonumber(arg and arg[1]) or 20)
local dev = gpu.device(arg and arg[2])

-- Random floats in [0, 1) made on the device (a hash of the index), and a
-- copy kernel for the bandwidth line.
local fill = bench.filler(dev, "float", 0)
local prog = dev:build[[
__kernel void copy4(__global const float4 *a, __global float4 *b) {
  size_t i = get_global_id(0);
  b[i] = a[i];
}]]

print(("reduce.sum on %s (%s, %d compute units), median of %d after warm-up")
      :format(dev.name, dev.platform, dev.compute_units, reps))
local rows = {}
for _, log2n in ipairs{20, 28} do
  local n = 1 << log2n
  local x = dev:buffer("float", n)
  fill(x, 12345 + log2n):wait()

  local got = reduce.sum(x)
  local ref = dev.fp64 and reduce.sum(x, {acc = "double"}) or got
  local rel = math.abs(got - ref) / ref
  assert(rel < 1e-5, ("sum of 2^%d: %.9g, in double %.9g"):format(log2n, got, ref))

  for _ = 1, 5 do reduce.sum(x) end
  local times = {}
  local npasses
  for i = 1, reps do
    local ev, passes = reduce.sum(x, {async = true})
    ev:wait()
    times[i] = bench.span_ns(passes) * 1e-3
    npasses = #passes
  end
  local walls = bench.walls(reps, function() reduce.sum(x) end)
  local mintime = math.min(table.unpack(times))
  local us = bench.median(times)
  print(("LUAGPU sum_2^%d_us %.2f us"):format(log2n, us))
  print(("LUAGPU sum_2^%d_gbs %.1f GB/s"):format(log2n, n * 4 / (us * 1e-6) / 1e9))
  rows[#rows + 1] = {log2n, npasses, mintime, us, n * 4 / (us * 1e-6) / 1e9,
                     bench.median(walls) * 1e6, rel}
  x:release()
end

-- plain copy bandwidth, 2^28 floats
do
  local n = 1 << 28
  local a, b = dev:buffer("float4", n // 4), dev:buffer("float4", n // 4)
  local call = prog.copy4(a, b)
  for _ = 1, 3 do call:run({n // 4}) end
  local times = {}
  for i = 1, reps do times[i] = call:run({n // 4}).duration * 1e-3 end
  local us = bench.median(times)
  print(("LUAGPU copy_gbs %.1f GB/s"):format(2 * n * 4 / (us * 1e-6) / 1e9))
  a:release(); b:release()
end

bench.print_table("%-10s %6s %10s %10s %10s %12s %10s",
                  {"n", "passes", "min us", "median us", "GB/s", "wall us/call", "rel err"},
                  "2^%-8d %6d %10.2f %10.2f %10.1f %12.2f %10.1e", rows)
