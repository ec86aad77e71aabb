-- bench/gpu/kernel_times.lua: where the device time of a few sort-based
-- ops goes, kernel by kernel (profiling times of one call after warm-up),
-- with the gaps between commands: a program for finding what to speed up.
--   build/luagpu bench/gpu/kernel_times.lua [E [both]]
-- E: the large size 2^E (default 24). both: every case twice, the radix
-- sort's passes of five kernels (algo.classes' sort_onesweep = false)
-- first, then one sweep a pass (true), in one run.
local gpu = rawget(_G, "gpu") or require "luagpu"
local algo = require "luagpu.algo"
local E = tonumber(arg and arg[1]) or 24          -- the large size: 2^E
local both = arg and arg[2] == "both"
local dev = gpu.device()
local cls = algo.classes[algo.classes[dev.type] and dev.type or "gpu"]
dev:set_profiling(true)
local u20 = (dev:rand("float", {1 << 20}, 25) * 1000):floor():astype("int"):eval()
local x24 = dev:rand("float", {1 << E}, 7):eval()
local x20 = dev:rand("float", {1 << 20}, 8):eval()
local S = dev:rand("float", {1 << (E // 2), 1 << (E // 2)}, 11):eval()
local cases = {
  {"unique_2^20", function() return u20:unique() end},
  {"sort_2^20", function() return x20:sort() end},
  {"argsort_2^20", function() return x20:argsort() end},
  {"argsort_2^" .. E, function() return x24:argsort() end},
  {"sort_2^" .. E, function() return x24:sort() end},
  {"topk100_2^" .. E, function() return x24:topk(100) end},
  {"topk16_rows_2^" .. E, function() return S:topk(16, 2) end},
}
local runs = {{"", cls.sort_onesweep}}
if both then runs = {{" [sort_onesweep=false]", false}, {" [sort_onesweep=true]", true}} end
local all = {}
for _, run in ipairs(runs) do
  for _, c in ipairs(cases) do all[#all + 1] = {c[1] .. run[1], c[2], run[2]} end
end
for _, c in ipairs(all) do
  cls.sort_onesweep = c[3]
  for _ = 1, 3 do c[2]() end
  dev:finish()
  gpu.trace(true)
  local t0 = gpu.now()
  local keep = c[2]()
  dev:finish()
  local wall = gpu.now() - t0
  local rec = gpu.trace(false)
  local first, last, busy = math.huge, -math.huge, 0
  for _, r in ipairs(rec) do
    if r.start then
      first, last = math.min(first, r.start), math.max(last, r["end"])
      busy = busy + (r["end"] - r.start)
    end
  end
  local lines = {}
  for _, r in ipairs(rec) do
    if r.start then
      lines[#lines + 1] = ("    %-22s %8.1f us  (starts at %8.1f us)"):format(r.name,
        (r["end"] - r.start) / 1e3, (r.start - first) / 1e3)
    end
  end
  print(("%s: wall %.1f us, %d commands, busy %.1f us, first start to last end %.1f us")
        :format(c[1], wall * 1e6, #rec, busy / 1e3, (last - first) / 1e3))
  for _, l in ipairs(lines) do print(l) end
end
