-- bench/gpu/sort_tiles.lua: the one-sweep radix sort's tile (algo.classes'
-- sort_ptx_local work-items x sort_ptx_items keys) swept: per tile, the
-- device time of each onesweep pass and of the whole sort / argsort of 2^E
-- floats (profiled, one call after warm-up), and a check that the 2^20
-- sort matches table.sort. A program for choosing the tile, not a test.
--   build/luagpu bench/gpu/sort_tiles.lua [E]
local gpu = rawget(_G, "gpu") or require "luagpu"
local algo = require "luagpu.algo"
local E = tonumber(arg and arg[1]) or 24
local dev = gpu.device()
local cls = algo.classes[algo.classes[dev.type] and dev.type or "gpu"]
dev:set_profiling(true)
local x = dev:rand("float", {1 << E}, 7):eval()
local small = dev:rand("float", {1 << 20}, 8):eval()
local want = small:get()
table.sort(want)

-- device time of f's commands (first start to last end) and the longest one
local function profile(f)
  for _ = 1, 3 do f() end
  dev:finish()
  gpu.trace(true)
  local keep = f()
  dev:finish()
  local rec = gpu.trace(false)
  local first, last, passes = math.huge, -math.huge, {}
  for _, r in ipairs(rec) do
    if r.start then
      first, last = math.min(first, r.start), math.max(last, r["end"])
      if r.name:find("onesweep", 1, true) then passes[#passes + 1] = (r["end"] - r.start) / 1e3 end
    end
  end
  local _ = keep
  local p = {}
  for i, t in ipairs(passes) do p[i] = ("%.0f"):format(t) end
  return (last - first) / 1e3, table.concat(p, " ")
end

print(("device: %s; sort and argsort of 2^%d floats, device us (onesweep passes)"):format(
      dev.name, E))
-- the tiles' local memory: the device's (0), then more (sm_90 runs up to
-- 227 KB a group where the driver reports 48)
for _, t in ipairs{{256, 8, 0}, {256, 12, 0}, {256, 24, 0}, {256, 16, 150000},
                   {256, 24, 150000}, {256, 32, 150000}, {256, 48, 150000},
                   {256, 64, 150000}, {128, 32, 150000}, {128, 64, 150000}} do
  local L, ipt, bytes = t[1], t[2], t[3]
  do
    cls.sort_ptx_local, cls.sort_ptx_items, cls.sort_ptx_local_bytes = L, ipt, bytes
    local ok, err = pcall(function()
      local got = small:sort():get()
      local bad = 0
      for i = 1, #want do if got[i] ~= want[i] then bad = bad + 1 end end
      local ts, ps = profile(function() return x:sort() end)
      local ta, pa = profile(function() return x:argsort() end)
      print(("L %3d items %2d local %6d: sort %7.1f (%s)  argsort %7.1f (%s)  %s"):format(L, ipt,
            bytes, ts, ps, ta, pa, bad == 0 and "checked" or ("WRONG " .. bad)))
    end)
    if not ok then print(("L %3d items %2d: %s"):format(L, ipt, tostring(err):sub(1, 200))) end
  end
end
