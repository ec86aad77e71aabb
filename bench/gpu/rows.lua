-- bench/gpu/rows.lua: the row operations of issue 30 beside PyTorch on the
-- same card (bench/gpu/rows_torch.py, run first, its `BASELINE key us`
-- lines in the file TORCH): x:softmax(2), x:log_softmax(2), x:logsumexp(2)
-- on 8192^2 and 4096^2 floats, x:sort(2) and x:argsort(2) on 4096 x 1024,
-- 65536 x 64 and 64 x 65536 floats.
--
--   python3 bench/gpu/rows_torch.py full > rows_torch.txt
--   build/luagpu bench/gpu/rows.lua rows_torch.txt [full|small] [REPS] [sweep]
--
-- With "sweep", after the table: the device time of each op under other
-- settings (softmax: luagpu.tensor.rows' sizes LS and ITEMS; sorts:
-- algo.classes' sort_rows_local and sort_rows_group), one `SWEEP` line each,
-- to tune the defaults on the card.
--
-- SIZES "small" takes small shapes (it runs on PoCL in seconds, to know
-- the script works). For each op: luagpu's wall clock from the call until
-- the result is in hand (the op, then dev:finish()), median of REPS after 3
-- warm-up calls, written as users write it; luagpu's device time (the busy
-- time of the commands one call enqueues, from gpu.trace's timestamps) and
-- its bytes (one read and one write of the tensor; logsumexp one read) per
-- device second; torch's wall clock and CUDA-event time; the ratios
-- luagpu / torch (above 1: luagpu is slower) and which is ahead.
local gpu = rawget(_G, "gpu") or require "luagpu"

local torch_file = arg and arg[1]
local sizes = arg and arg[2] or "full"
local reps = tonumber(arg and arg[3]) or 20
local sweep = arg and arg[4] == "sweep"
local dev = gpu.device()
local now = gpu.now
dev:set_profiling(true)

-- the shapes of bench/gpu/rows_torch.py (keep the two lists the same)
local SHAPES = ({
  full = {softmax = {{8192, 8192}, {4096, 4096}}, sort = {{4096, 1024}, {65536, 64}, {64, 65536}}},
  small = {softmax = {{256, 512}, {64, 3000}}, sort = {{64, 1024}, {512, 64}, {2, 65536}}},
})[sizes] or error("sizes: expected full or small, got " .. tostring(sizes))

local baseline = {}
if torch_file and torch_file ~= "" and torch_file ~= "-" then
  for line in io.lines(torch_file) do
    local k, v = line:match("^BASELINE (%S+) (%S+)")
    if k then baseline[k] = tonumber(v) end
    if line:match("^# torch") then print(line) end
  end
end

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) // 2] or (t[n // 2] + t[n // 2 + 1]) / 2
end

local function wall(f)
  for _ = 1, 3 do f() end
  dev:finish()
  local t = {}
  for r = 1, reps do
    local t0 = now()
    local res = f()
    dev:finish()
    t[r] = now() - t0
    res = nil   -- luacheck: ignore (dropped, as a user's would be)
  end
  return median(t) * 1e6
end

-- The device's busy time (us) of the commands one call of f enqueues, and
-- their count.
local function device_time(f)
  f(); dev:finish()
  gpu.trace(true)
  f(); dev:finish()
  local rec = gpu.trace(false)
  local spans = {}
  for _, c in ipairs(rec) do
    if c.start and c["end"] then spans[#spans + 1] = {c.start, c["end"]} end
  end
  table.sort(spans, function(a, b) return a[1] < b[1] end)
  local busy, till = 0, -math.huge
  for _, s in ipairs(spans) do          -- the union of the spans
    local a, b = math.max(s[1], till), s[2]
    if b > a then busy = busy + (b - a) end
    if b > till then till = b end
  end
  return busy / 1e3, #spans
end

local rows = {}
for i, s in ipairs(SHAPES.softmax) do
  local x = dev:randn("float", s, i)
  local tag = ("%dx%d"):format(s[1], s[2])
  local bytes = 4 * s[1] * s[2]
  rows[#rows + 1] = {"softmax_" .. tag, function() return x:softmax(2) end, 2 * bytes}
  rows[#rows + 1] = {"log_softmax_" .. tag, function() return x:log_softmax(2) end, 2 * bytes}
  rows[#rows + 1] = {"logsumexp_" .. tag, function() return x:logsumexp(2) end, bytes}
end
for i, s in ipairs(SHAPES.sort) do
  local x = dev:rand("float", s, 10 + i)
  local tag = ("%dx%d"):format(s[1], s[2])
  local bytes = 4 * s[1] * s[2]
  -- luagpu's sort is stable: beside torch.sort and torch.sort(stable=True)
  rows[#rows + 1] = {"sort_" .. tag, function() return x:sort(2) end, 2 * bytes,
                     alt = "sort_stable_" .. tag}
  rows[#rows + 1] = {"argsort_" .. tag, function() return x:argsort(2) end, 3 * bytes}
end

local function ratio(a, b)
  if not (a and b) then return "-", "" end
  return ("%.2f"):format(a / b), a <= b and "luagpu ahead" or "torch ahead"
end

print(("device: %s (%s sizes, %d reps)"):format(dev.name, sizes, reps))
print(("%-22s %11s %11s %5s %8s %11s %11s %8s %8s  %s"):format("op", "lg wall us", "lg dev us",
      "cmds", "GB/s", "torch wall", "torch dev", "wall x", "dev x", "which way (wall)"))
for _, r in ipairs(rows) do
  local key, f, bytes = r[1], r[2], r[3]
  local ok, w = pcall(wall, f)
  if not ok then
    print(("%-22s failed: %s"):format(key, tostring(w):match("[^\n]*")))
  else
    local d, cmds = device_time(f)
    local bw, bd = baseline[key], baseline[key .. ".device"]
    local rw, way = ratio(w, bw)
    local rd = ratio(d, bd)
    print(("%-22s %11.1f %11.1f %5d %8.1f %11s %11s %8s %8s  %s"):format(key, w, d, cmds,
          bytes / (d * 1e3), bw and ("%.1f"):format(bw) or "-", bd and ("%.1f"):format(bd) or "-",
          rw, rd, way))
    if r.alt and baseline[r.alt] then
      local aw, away = ratio(w, baseline[r.alt])
      print(("%-22s %11s %11s %5s %8s %11.1f %11s %8s %8s  %s"):format("  vs stable=True", "", "",
            "", "", baseline[r.alt], baseline[r.alt .. ".device"] and
            ("%.1f"):format(baseline[r.alt .. ".device"]) or "-", aw,
            ratio(d, baseline[r.alt .. ".device"]), away))
    end
    print(("LUAGPU %s wall %.1f device %.1f"):format(key, w, d))
  end
end

if sweep then
  local RW = require "luagpu.tensor.rows"
  local algo = require "luagpu.algo"
  local sz = RW.sizes[dev.type == "cpu" and "cpu" or "gpu"]
  local cls = algo.classes[algo.classes[dev.type] and dev.type or "gpu"]
  local LS0, ITEMS0, MIN0 = sz.LS, sz.ITEMS, sz.MIN_ITEMS
  local local0, group0 = cls.sort_rows_local, cls.sort_rows_group
  for _, r in ipairs(rows) do
    local key, f = r[1], r[2]
    local sort = key:match("sort")
    for _, a in ipairs(sort and {64, 128, 256, 512, 1024} or {128, 256, 512, 1024}) do
      for _, b in ipairs(sort and {512, 1024, 2048, 4096} or {2, 4, 8, 16}) do
        if sort then cls.sort_rows_local, cls.sort_rows_group = a, b
        else sz.LS, sz.ITEMS, sz.MIN_ITEMS = a, b, math.min(MIN0, b) end
        local ok, d = pcall(device_time, f)
        print(("SWEEP %s %s=%d %s=%d device %s"):format(key, sort and "sort_rows_local" or "LS", a,
              sort and "sort_rows_group" or "ITEMS", b,
              ok and ("%.1f"):format(d) or ("failed: " .. tostring(d):match("[^\n]*"))))
      end
    end
    sz.LS, sz.ITEMS, sz.MIN_ITEMS = LS0, ITEMS0, MIN0
    cls.sort_rows_local, cls.sort_rows_group = local0, group0
  end
end
