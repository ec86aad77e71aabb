-- bench/gpu/onesweep_probe.lua: where the one-sweep radix sort's passes
-- spend their time (issue 30). Sorts 2^E floats with the sort kernels
-- built with extra defines (probe switches of kernels/sort.cl; their
-- results are wrong, only the times count) and prints each kernel's device
-- time, the median of REPS calls.
--   build/luagpu bench/gpu/onesweep_probe.lua [E [REPS [DEFINE ...]]]
-- DEFINE: LG_PROBE_NO_LOOKBACK (no wait for the tiles before: each tile's
-- keys written as if it were the first, so every tile writes the same
-- places); LG_PROBE_SPREAD (no wait either, but each tile's keys written
-- where they would go if every tile held the same counts: a scatter over
-- the whole output, as the sort's); LG_LB_SLEEP=NS (nanoseconds a look-back
-- sleeps between reads of a word not yet published); LG_MATCH_ANY (a
-- warp's lanes of one digit found by match.any.sync instead of ballots);
-- or SETTING=N, a
-- setting of the device's class in luagpu.algo (sort_ptx_items=16,
-- sort_ptx_local=128).
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local gpu = rawget(_G, "gpu") or require "luagpu"
local B = require "luagpu.algo.base"
local E = tonumber(arg and arg[1]) or 24
local reps = tonumber(arg and arg[2]) or 11
local dev = gpu.device()
local algo = require "luagpu.algo"
local cls = algo.classes[algo.classes[dev.type] and dev.type or "gpu"]
local extra, names = {}, {}
for i = 3, #arg do
  local k, v = arg[i]:match("^([%w_]+)=?(.*)$")
  if k:match("^[A-Z][A-Z0-9_]*$") then extra[#extra + 1] = {k, v ~= "" and v or 1}
  else cls[k] = tonumber(v) end
  names[#names + 1] = arg[i]
end
local build = B.build
B.build = function(fn, dev, defines, files, ...)
  if type(files) == "table" and files[2] == "sort.cl" then
    local d = {}
    for i, x in ipairs(defines) do d[i] = x end
    for _, x in ipairs(extra) do d[#d + 1] = x end
    defines = d
  end
  return build(fn, dev, defines, files, ...)
end
dev:set_profiling(true)
local x = dev:rand("float", {1 << E}, 7):eval()
local times, order = {}, {}
for r = 1, reps + 2 do
  dev:finish()
  gpu.trace(true)
  local s = x:sort()
  dev:finish()
  local rec = gpu.trace(false)
  if r > 2 then
    local seen = {}
    for _, c in ipairs(rec) do
      if c.start then
        seen[c.name] = (seen[c.name] or 0) + 1
        local key = c.name .. " #" .. seen[c.name]
        if not times[key] then times[key] = {}; order[#order + 1] = key end
        table.insert(times[key], (c["end"] - c.start) / 1e3)
      end
    end
  end
  s = nil
end
-- The sort and argsort of the patched kernels checked (probe switches that
-- write wrong places say "wrong", as they should): sorted, and the keys
-- the positions name are the sorted keys.
local function verdict()
  local n = 1 << E
  local s, p = x:sort(), x:argsort()
  local rises = (s:slice(1, 2, n) - s:slice(1, 1, n - 1)):min() >= 0
  local same = (x:take(p) - s):abs():max() == 0
  return (rises and same) and "right" or "wrong"
end
local median = bench.median
print(("%s, 2^%d floats: %s (results %s)"):format(dev.name, E, table.concat(names, " "),
                                                  verdict()))
local total = 0
for _, k in ipairs(order) do
  local m = median(times[k])
  total = total + m
  print(("  %-24s %8.1f us"):format(k, m))
end
print(("  %-24s %8.1f us"):format("sum", total))
