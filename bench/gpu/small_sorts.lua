-- bench/gpu/small_sorts.lua: wall time (to the result in hand: medians of
-- 50, after dev:finish) and device time of the calls' commands of sorts,
-- argsorts and unique of 2^20 and 2^24 keys: random floats, ints below
-- 1000, full-range ints, longs below 70000 (which leave out trivial
-- passes). Prints the lines of bench/gpu/small_sorts_torch.py beside:
--   python3 bench/gpu/small_sorts_torch.py > t.txt
--   build/luagpu bench/gpu/small_sorts.lua t.txt
-- ONLY=pattern runs the rows whose names match (a Lua pattern); CLASS="name=value
-- ..." sets algo.classes settings for the run (bench/common.lua).
local gpu = require "luagpu"
local dev = gpu.device(os.getenv("LUAGPU_DEVICE"))
local torch = {}
if arg and arg[1] then
  for line in io.lines(arg[1]) do
    local name, wall = line:match("^torch (%S+)%s+wall%s+([%d.]+)")
    if name then torch[name] = tonumber(wall) end
  end
end
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local median = bench.median
-- (SKIP_FROM=n: algo.classes.gpu.sort_skip_from for the run)
if os.getenv("SKIP_FROM") then
  require("luagpu.algo").classes.gpu.sort_skip_from = math.tointeger(tonumber(os.getenv("SKIP_FROM")))
  print("sort_skip_from " .. os.getenv("SKIP_FROM"))
end
bench.class_settings(dev)   -- ($CLASS: bench/common.lua)
local only = os.getenv("ONLY")      -- (a Lua pattern: the rows whose names match)
local x20 = dev:rand("float", {1 << 20}, 1):eval()
local u20 = (dev:rand("float", {1 << 20}, 2) * 1000):floor():astype("int"):eval()
local f20 = (dev:rand("float", {1 << 20}, 3) * 2 ^ 31):floor():astype("int"):eval()
local u22 = (dev:rand("float", {1 << 22}, 7) * 1000):floor():astype("int"):eval()
local f22 = (dev:rand("float", {1 << 22}, 8) * 2 ^ 31):floor():astype("int"):eval()
local x24 = dev:rand("float", {1 << 24}, 4):eval()
local u24 = (dev:rand("float", {1 << 24}, 5) * 1000):floor():astype("int"):eval()
local l24 = (dev:rand("double", {1 << 24}, 6) * 70000):floor():astype("long"):eval()
local function t(name, f)
  if only and not name:match(only) then return end
  for _ = 1, 5 do local _ = f() end
  dev:finish()
  local ws = {}
  for i = 1, 50 do
    local t0 = gpu.now()
    local r = f()
    dev:finish()
    ws[i] = (gpu.now() - t0) * 1e6
    r = nil
  end
  dev:set_profiling(true)
  local ds = {}
  for i = 1, 9 do ds[i] = bench.busy_us(gpu, dev, f) end
  dev:set_profiling(false)
  local w, tw = median(ws), torch[name]
  print(("%-22s wall %8.1f us  device %8.1f us  torch wall %8s  lg/torch %s"):format(
    name, w, median(ds), tw and ("%.1f"):format(tw) or "-", tw and ("%.2f"):format(w / tw) or "-"))
end
print("device: " .. dev.name .. " (ratio: luagpu wall / torch wall, below 1 faster)")
t("sort_2^20", function() return x20:sort() end)
t("argsort_2^20", function() return x20:argsort() end)
t("unique_2^20", function() return u20:unique() end)
t("sort_int<1000_2^20", function() return u20:sort() end)
t("argsort_int<1000_2^20", function() return u20:argsort() end)
t("argsort_int_2^20", function() return f20:argsort() end)
t("unique_2^22", function() return u22:unique() end)
t("sort_int<1000_2^22", function() return u22:sort() end)
t("argsort_int_2^22", function() return f22:argsort() end)
t("sort_2^24", function() return x24:sort() end)
t("argsort_2^24", function() return x24:argsort() end)
t("sort_int<1000_2^24", function() return u24:sort() end)
t("argsort_int<1000_2^24", function() return u24:argsort() end)
t("sort_long<70000_2^24", function() return l24:sort() end)
