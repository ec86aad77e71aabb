-- bench/gpu/select_probe.lua: per-command device times (median of 9 traced
-- calls) of x:masked_select(x:gt(0.5)) and x:gt(0.5):nonzero() of 2^24
-- floats and u:unique() of 2^20 ints in 0..999:
--   build/luagpu bench/gpu/select_probe.lua
local gpu = require "luagpu"
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local dev = gpu.device(os.getenv("LUAGPU_DEVICE"))
dev:set_profiling(true)
local x24 = dev:rand("float", {1 << 24}, 24)
local m24 = x24:gt(0.5):eval()
local u20 = (dev:rand("float", {1 << 20}, 25) * 1000):floor():astype("int"):eval()

local function probe(name, f)
  for _ = 1, 3 do local _ = f() end
  dev:finish()
  local per = {}
  for _ = 1, 9 do
    gpu.trace(true)
    local _ = f(); dev:finish()
    for i, c in ipairs(gpu.trace(false)) do
      if c.start then
        per[i] = per[i] or {c.name or c.kind}
        per[i][#per[i] + 1] = (c["end"] - c.start) / 1e3
      end
    end
  end
  local tot, line = 0, {}
  for _, p in ipairs(per) do
    local cmd = table.remove(p, 1)
    local m = bench.median(p)
    tot = tot + m
    line[#line + 1] = ("%s %.1f"):format(cmd, m)
  end
  print(("%-24s total %6.1f us: %s"):format(name, tot, table.concat(line, ", ")))
end

probe("masked_select 2^24", function() return x24:masked_select(m24) end)
probe("masked_select lazy 2^24", function() return x24:masked_select(x24:gt(0.5)) end)
probe("nonzero 2^24", function() return m24:nonzero() end)
probe("unique 2^20", function() return u20:unique() end)
