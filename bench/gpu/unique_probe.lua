-- bench/gpu/unique_probe.lua: per-command device times of u20:unique() (median of 9 traced calls)
local gpu = require "luagpu"
local dev = gpu.device(os.getenv("LUAGPU_DEVICE"))
dev:set_profiling(true)
local u20 = (dev:rand("float", {1 << 20}, 25) * 1000):floor():astype("int"):eval()
for _ = 1, 3 do local v = u20:unique() end
dev:finish()
local per = {}
for r = 1, 9 do
  gpu.trace(true)
  local v = u20:unique(); dev:finish()
  for i, c in ipairs(gpu.trace(false)) do
    if c.start then per[i] = per[i] or {c.name or c.kind}; per[i][#per[i] + 1] = (c["end"] - c.start) / 1e3 end
  end
end
local tot = 0
for _, p in ipairs(per) do
  local name = table.remove(p, 1); table.sort(p)
  local m = p[(#p + 1) // 2]
  tot = tot + m
  io.write(("%s %.1f  "):format(name, m))
end
print(("\ntotal %.1f us; pool made %d"):format(tot, dev:memory().made))
