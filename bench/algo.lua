-- bench/algo.lua: luagpu.algo on any device (PoCL in CI): an exclusive scan
-- of 2^LOG2N ints against the bandwidth of a plain copy kernel, and a radix
-- sort of as many uint keys, measured in the same run.
--
--   build/luagpu bench/algo.lua [RUNS] [DEVICE] [LOG2N]
--
-- RUNS (default 9) rounds, each timing the copy, the scan (twice) and the
-- sort once, interleaved; figures are medians over the rounds after warm-up.
-- Times are the device's (OpenCL profiling): the copy kernel's own, the
-- scan's from the start of its first command to the end of its last (a
-- trace) and, for the row below it and the sort, from a marker enqueued just
-- before the call (so the host's time to enqueue the commands counts where
-- the device waits for it). GB/s count one read and one write of the
-- n elements for both the copy and the scan (what they must move at least);
-- the ratio is the scan's over the copy's. The target on PoCL is 0.5.
local gpu = rawget(_G, "gpu") or require "luagpu"
local algo = require "luagpu.algo"
local bench = dofile((arg and arg[0] or "bench/"):match("^(.-)[^/]*$") .. "common.lua")

local runs = tonumber(arg and arg[1]) or 9
local dev = gpu.device(arg and arg[2] ~= "" and arg[2] or nil)
local log2n = tonumber(arg and arg[3]) or 22
local n = 1 << log2n

local prog = dev:build[[
__kernel void copy4(__global const int *a, __global int *b) {
  size_t i = get_global_id(0);
  vstore4(vload4(i, a), i, b);
}
__kernel void ones(__global int *a) { a[get_global_id(0)] = 1; }
__kernel void keys(__global uint *a) {
  uint h = (uint)get_global_id(0) * 2654435761u;
  h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15;
  a[get_global_id(0)] = h;
}]]

local x, y = dev:buffer("int", n), dev:buffer("int", n)
prog.ones(x):run({n}):wait()
local copy = prog.copy4(x, y)

-- the scan must be right before it is fast: 1s give 0, 1, 2, ...
local out = algo.scan(x, {exclusive = true, out = y})
local got = out:get()
for _, i in ipairs {1, 2, n // 2, n} do
  assert(got[i] == i - 1, ("scan: element %d is %d, expected %d"):format(i, got[i], i - 1))
end

local keys, sorted = dev:buffer("uint", n), dev:buffer("uint", n)
prog.keys(keys):run({n}):wait()

local times = {copy = {}, scan = {}, scan_span = {}, sort = {}}
for r = -1, runs do   -- rounds before 1 are warm-up
  local tc = copy:run({n // 4}); tc:wait()
  local t0 = dev:default_queue():marker()
  local _, ev = algo.scan(x, {exclusive = true, out = y}); ev:wait()
  local ts = (ev:profile()["end"] - t0:profile()["end"])
  local tss = bench.traced_span_ns(gpu, function()
    return select(2, algo.scan(x, {exclusive = true, out = y}))
  end)
  keys:copy_to(sorted):wait()
  local t1 = dev:default_queue():marker()
  local sort_ev = algo.sort and select(2, algo.sort(sorted))
  if sort_ev then sort_ev:wait() end
  if r >= 1 then
    times.copy[r] = tc.duration * 1e-9
    times.scan[r] = ts * 1e-9
    times.scan_span[r] = tss * 1e-9
    times.sort[r] = sort_ev and (sort_ev:profile()["end"] - t1:profile()["end"]) * 1e-9 or 0
  end
end

local copy_s, scan_s = bench.median(times.copy), bench.median(times.scan)
local span_s = bench.median(times.scan_span)
local rows = {
  {"copy kernel (int4)", copy_s * 1e3, 8 * n / copy_s / 1e9, 1},
  {"algo.scan exclusive int", span_s * 1e3, 8 * n / span_s / 1e9, copy_s / span_s},
  {"  the same from a marker", scan_s * 1e3, 8 * n / scan_s / 1e9, copy_s / scan_s},
}
print(("luagpu.algo on 2^%d elements, %s (%s), median of %d runs")
      :format(log2n, dev.name, dev.platform, runs))
bench.print_table("%-32s %10s %10s %14s", {"", "ms", "GB/s", "ratio to copy"},
                  "%-32s %10.3f %10.2f %14.2f", rows)
if algo.sort then
  local sort_s = bench.median(times.sort)
  print(("algo.sort of 2^%d uint keys: %.3f ms, %.1f Mkeys/s"):format(log2n, sort_s * 1e3,
        n / sort_s / 1e6))
end
