-- bench/gpu/algo.lua: luagpu.algo on a GPU beside PyTorch (issue 14's bar):
-- an exclusive scan of 2^28 ints against the device's copy bandwidth and
-- torch.cumsum, a radix sort of 2^26 uint keys and a key-value sort against
-- torch.sort. Baselines come from bench/gpu/algo_torch.py, run before in
-- the same session, whose output file is the first argument.
--
--   python3 bench/gpu/algo_torch.py > torch.txt
--   build/luagpu bench/gpu/algo.lua torch.txt [RUNS [LOG2N_SCAN [LOG2N_SORT [SWEEP]]]]
--
-- Times are the device's (OpenCL profiling), medians of RUNS after warm-up:
-- the copy kernel and the scan are timed from the start of their first
-- command to the end of their last (the bandwidth row: the device's own
-- time) and from a marker enqueued just before the call (the rows against PyTorch, whose CUDA events bracket
-- the call the same way: the host's time to enqueue counts where the device
-- waits for it); a sort is timed from such a marker to the end of its last
-- command, so gaps between its commands count. SWEEP ("scan", "sort" or any other value for
-- both) also times the scan and the sort under other class settings, to
-- choose the defaults.
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local gpu = rawget(_G, "gpu") or require "luagpu"
local algo = require "luagpu.algo"
local reduce = require "luagpu.reduce"

local torch_file = arg and arg[1]
local runs = tonumber(arg and arg[2]) or 15
local log2_scan = tonumber(arg and arg[3]) or 28
local log2_sort = tonumber(arg and arg[4]) or 26
local sweep = arg and arg[5]
local dev = gpu.device()
local q = dev:default_queue()
local median = bench.median

local baseline = {}
if torch_file and io.open(torch_file) then
  for line in io.lines(torch_file) do
    local key, value = line:match("^BASELINE (%S+) (%S+)")
    if key then baseline[key] = tonumber(value) end
  end
end

local prog = dev:build[[
__kernel void copy4(__global const int *a, __global int *b) {
  size_t i = get_global_id(0);
  vstore4(vload4(i, a), i, b);
}
__kernel void small(__global int *a) {
  uint h = (uint)get_global_id(0) * 2654435761u;
  h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15;
  a[get_global_id(0)] = (int)(h & 3u);
}
__kernel void keys(__global uint *a, uint seed) {
  uint h = (uint)get_global_id(0) * 2654435761u ^ seed;
  h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
  a[get_global_id(0)] = h;
}
__kernel void iota(__global uint *a) { a[get_global_id(0)] = (uint)get_global_id(0); }]]

local function say(key, value, unit) print(("LUAGPU %s %.4f %s"):format(key, value, unit)) end

-- The median device time (s) of runs calls of f, which returns the Event of
-- its last command: from a marker enqueued before it to that end (so the
-- host's time to enqueue counts where the device waits for it), and, in
-- calls of their own, from the start of its first command to the end of its
-- last (from a trace: the device's own time).
local function device_time(f)
  local t, k = {}, {}
  for r = -2, runs do
    dev:finish()
    local m = q:marker()
    local ev = f()
    ev:wait()
    local own = bench.traced_span_ns(gpu, f)
    if r >= 1 then
      t[r] = (ev:profile()["end"] - m:profile()["end"]) * 1e-9
      k[r] = own * 1e-9
    end
  end
  return median(t), median(k)
end

------------------------------------------------------------------ scan
local n = 1 << log2_scan
local x, y = dev:buffer("int", n), dev:buffer("int", n)
prog.small(x):run({n}):wait()
local copy = prog.copy4(x, y)
local copy_s, copy_k = device_time(function() return copy:run({n // 4}) end)
local copy_gbs, copy_kgbs = 8 * n / copy_s / 1e9, 8 * n / copy_k / 1e9
say("copy_gbs", copy_gbs, "GB/s")
say("copy_kernel_gbs", copy_kgbs, "GB/s")

-- right before fast: an exclusive scan of the values checked against the
-- inclusive one (incl - x == excl, by a two-input reduction), and the sum
-- (values 0 .. 3: below 2^31 for n up to 2^29)
local inc = dev:buffer("int", n)
local wrong = reduce.new{type = "int", map = "(long)(x != y)", op = "a + b", neutral = "0",
                         acc = "long", inputs = 2}
local diff = dev:buffer("int", n)
local sub = dev:build[[
__kernel void sub(__global const int *a, __global const int *b, __global int *c) {
  size_t i = get_global_id(0); c[i] = a[i] - b[i];
}]].sub
local total = reduce.sum(x)
local cls = algo.classes.gpu
local scan_bad = 0
for _, path in ipairs {{false, false}, {true, false}, {true, true}} do
  local lookback = path[1]
  cls.scan_ptx = path[2]
  local bad, last = -1, -1
  local ok, err = pcall(function()
    algo.scan(x, {out = inc, lookback = lookback})
    algo.scan(x, {exclusive = true, out = y, lookback = lookback})
    sub(inc, x, diff):run({n}):wait()
    bad = wrong(diff, y)
    last = inc:sub(n, n):get()[1]
  end)
  if not ok then print("scan failed:", err) end
  print(("check lookback=%s ptx=%s: %d differ, last %d, sum %d"):format(lookback, path[2], bad,
        last, total))
  if not (bad == 0 and last == total) then scan_bad = scan_bad + 1 end
end
cls.scan_ptx = true
print("inline PTX scan on this device:", require("luagpu.core.ptx").keyword(dev))

-- the number of elements wrong in an exclusive and an inclusive scan of x
-- (-1: it failed)
local function scan_errors()
  local ok, bad = pcall(function()
    algo.scan(x, {out = inc})
    algo.scan(x, {exclusive = true, out = y})
    sub(inc, x, diff):run({n}):wait()
    return wrong(diff, y) + (inc:sub(n, n):get()[1] == total and 0 or 1)
  end)
  return ok and bad or -1
end

local function time_scan()
  return device_time(function() return select(2, algo.scan(x, {exclusive = true, out = y})) end)
end
-- tiles numbered by an atomic ticket or by group id, taking turns (a
-- check of each before its times)
local default_ticket = cls.scan_ptx_ticket
for round = 1, 3 do
  for _, ticket in ipairs {true, false} do
    cls.scan_ptx_ticket = ticket
    print(("ticket=%s: %d elements wrong"):format(ticket, scan_errors()))
    local s, k = time_scan()
    say(("order_%s_round%d_gbs"):format(ticket and "ticket" or "group", round), 8 * n / s / 1e9,
        "GB/s")
    say(("order_%s_round%d_kernel_gbs"):format(ticket and "ticket" or "group", round),
        8 * n / k / 1e9, "GB/s")
  end
end
cls.scan_ptx_ticket = default_ticket
local copy_again = device_time(function() return copy:run({n // 4}) end)
say("copy_again_gbs", 8 * n / copy_again / 1e9, "GB/s")
local scan_s, scan_k = time_scan()
say("scan_ms", scan_s * 1e3, "ms")
say("scan_gbs", 8 * n / scan_s / 1e9, "GB/s")
say("scan_kernel_gbs", 8 * n / scan_k / 1e9, "GB/s")
if sweep and sweep ~= "sort" then
  local keep = {cls.scan_local, cls.scan_items, cls.scan_ptx_items}
  cls.scan_ptx = false
  for _, c in ipairs {{256, 32}} do
    cls.scan_local, cls.scan_items = c[1], c[2]
    local ok, s = pcall(time_scan)
    if ok then say(("sweep_scan_L%d_I%d_gbs"):format(c[1], c[2]), 8 * n / s / 1e9, "GB/s")
    else print("sweep scan", c[1], c[2], s) end
  end
  cls.scan_ptx = true
  cls.scan_local, cls.scan_items = keep[1], keep[2]
  for _, c in ipairs {{128, 64}, {128, 128}, {256, 32}, {256, 64}, {256, 128}, {512, 32},
                      {512, 64}, {1024, 32}} do
    cls.scan_local, cls.scan_ptx_items = c[1], c[2]
    local ok, s = pcall(time_scan)
    if ok then
      say(("sweep_scan_ptx_L%d_I%d_gbs"):format(c[1], c[2]), 8 * n / s / 1e9, "GB/s")
      print(("  %d elements wrong"):format(scan_errors()))
    else print("sweep scan ptx", c[1], c[2], s) end
  end
  cls.scan_local, cls.scan_ptx_items = keep[1], keep[3]
  local ok, s = pcall(function()
    return device_time(function() return select(2, algo.scan(x, {exclusive = true, out = y,
                                                                  lookback = false})) end)
  end)
  if ok then say("sweep_scan_threepass_gbs", 8 * n / s / 1e9, "GB/s") end
end
diff:release(); inc:release()
x:release(); y:release()

------------------------------------------------------------------ sort
local m = 1 << log2_sort
local keys, work = dev:buffer("uint", m), dev:buffer("uint", m)
local vals, vwork = dev:buffer("uint", m), dev:buffer("uint", m)
prog.keys(keys, 7):run({m}):wait()
prog.iota(vals):run({m}):wait()

local descents = reduce.new{type = "uint", map = "(long)(x > y)", op = "a + b", neutral = "0",
                            acc = "long", inputs = 2}
keys:copy_to(work):wait()
vals:copy_to(vwork):wait()
algo.sort(work, {values = vwork})
assert(descents(work:sub(1, m - 1), work:sub(2, m)) == 0, "sort: the keys are not in order")
assert(reduce.sum(vwork) == m * (m - 1) // 2, "sort: the values are not a permutation")

local function time_sort(with_values)
  return device_time(function()
    keys:copy_to(work)
    if with_values then vals:copy_to(vwork) end
    local m0 = q:marker()
    local _, ev = algo.sort(work, with_values and {values = vwork} or nil)
    return ev, m0
  end)
end
-- the copies back to the unsorted keys are not part of the sort: time from
-- the marker after them
device_time = function(f)
  local t = {}
  for r = -2, runs do
    dev:finish()
    local ev, m0 = f()
    ev:wait()
    if r >= 1 then t[r] = (ev:profile()["end"] - m0:profile()["end"]) * 1e-9 end
  end
  return median(t)
end
local sort_s = time_sort(false)
say("sort_ms", sort_s * 1e3, "ms")
local kv_s = time_sort(true)
say("sort_kv_ms", kv_s * 1e3, "ms")
-- where a sort's time goes: device time per kernel, summed over one sort
-- (from a trace)
gpu.trace(true)
keys:copy_to(work)
algo.sort(work)
local parts = {}
for _, c in ipairs(gpu.trace(false)) do
  if c.start and c.kind ~= "copy" then parts[c.name] = (parts[c.name] or 0) + c["end"] - c.start end
end
for name, ns in pairs(parts) do say("sort_part_" .. name .. "_ms", ns * 1e-6, "ms") end
if sweep and sweep ~= "scan" then
  local keep = {cls.sort_local, cls.sort_items, cls.sort_ptx, cls.sort_ptx_local,
                cls.sort_ptx_items}
  for _, c in ipairs {{32, 64, false}, {128, 8, true}, {128, 16, true}, {256, 4, true},
                      {256, 8, true}, {256, 12, true}, {256, 16, true}} do
    cls.sort_ptx = c[3]
    if c[3] then cls.sort_ptx_local, cls.sort_ptx_items = c[1], c[2]
    else cls.sort_local, cls.sort_items = c[1], c[2] end
    local ok, s = pcall(time_sort, false)
    local ok2, s2 = pcall(time_sort, true)
    if ok and ok2 then
      local name = ("L%d_I%d_%s"):format(c[1], c[2], c[3] and "ptx" or "portable")
      say("sweep_sort_" .. name .. "_ms", s * 1e3, "ms")
      say("sweep_sort_kv_" .. name .. "_ms", s2 * 1e3, "ms")
      keys:copy_to(work):wait()
      vals:copy_to(vwork):wait()
      algo.sort(work, {values = vwork})
      print(("  %d keys out of order, values sum right: %s"):format(
            descents(work:sub(1, m - 1), work:sub(2, m)), reduce.sum(vwork) == m * (m - 1) // 2))
    else print("sweep sort", c[1], c[2], c[3], s, s2) end
  end
  cls.sort_local, cls.sort_items, cls.sort_ptx, cls.sort_ptx_local, cls.sort_ptx_items =
    table.unpack(keep, 1, 5)
end

------------------------------------------------------------------ table
local function ratio(a, b) return (a and b) and ("%.2f"):format(a / b) or "-" end
print(("\nluagpu.algo on %s, medians of %d runs; baselines from %s"):format(dev.name, runs,
      torch_file or "(none)"))
print(("%-44s %12s %12s %8s"):format("", "baseline", "luagpu", "ratio"))
local scan_gbs, scan_kgbs = 8 * n / scan_s / 1e9, 8 * n / scan_k / 1e9
print(("%-44s %12.1f %12.1f %8s"):format(("exclusive scan 2^%d int vs copy kernel, GB/s"):format(log2_scan),
      copy_kgbs, scan_kgbs, ratio(scan_kgbs, copy_kgbs)))
print(("%-44s %12.1f %12.1f %8s"):format("  the same from a marker before each, GB/s",
      copy_gbs, scan_gbs, ratio(scan_gbs, copy_gbs)))
if baseline.copy_gbs then
  print(("%-44s %12.1f %12.1f %8s"):format("exclusive scan vs torch copy_, GB/s", baseline.copy_gbs,
        scan_gbs, ratio(scan_gbs, baseline.copy_gbs)))
end
print(("%-44s %12s %12.3f %8s"):format("exclusive scan vs torch.cumsum int32, ms",
      baseline.cumsum_ms and ("%.3f"):format(baseline.cumsum_ms) or "-", scan_s * 1e3,
      ratio(baseline.cumsum_ms, scan_s * 1e3)))
print(("%-44s %12s %12.3f %8s"):format(("sort 2^%d uint keys vs torch.sort, ms"):format(log2_sort),
      baseline.sort_ms and ("%.3f"):format(baseline.sort_ms) or "-", sort_s * 1e3,
      ratio(baseline.sort_ms, sort_s * 1e3)))
print(("%-44s %12s %12.3f %8s"):format("key-value sort vs torch.sort + gather, ms",
      baseline.sort_kv_ms and ("%.3f"):format(baseline.sort_kv_ms) or "-", kv_s * 1e3,
      ratio(baseline.sort_kv_ms, kv_s * 1e3)))
print("(ratio: speed relative to the baseline; above 1 is faster)")
print(("scan paths failing the check: %d"):format(scan_bad))
