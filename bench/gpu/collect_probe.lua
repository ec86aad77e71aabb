-- bench/gpu/collect_probe.lua: what a full Lua collection costs in a loop
-- of large lazy results (issue 31: 2^30-float chains collect every call):
-- the Lua heap, one collection with the device idle, one while the chain's
-- kernel runs, and the chain's own host time to eval with and without the
-- pool's collections. Medians of REPS, microseconds.
--   build/luagpu bench/gpu/collect_probe.lua [REPS [LOG2N]]
-- (the pool's full collections timed: collectgarbage wrapped before
-- luagpu loads, which captures it)
local now, in_pool, pool_calls = nil, 0, 0
local real_collect = collectgarbage
collectgarbage = function(opt, ...)
  if opt ~= nil or now == nil then return real_collect(opt, ...) end
  local t0 = now()
  real_collect()
  in_pool, pool_calls = in_pool + (now() - t0), pool_calls + 1
end
local gpu = rawget(_G, "gpu") or require "luagpu"
now = gpu.now
local reps = tonumber(arg and arg[1]) or 15
local e = tonumber(arg and arg[2]) or 30
local dev = gpu.device()
local function median(t) table.sort(t); return t[(#t + 1) // 2] end
local n = 1 << e
local x, y = dev:rand("float", {n}, 1):eval(), dev:rand("float", {n}, 2):eval()
local function chain(a, b) return ((a * 1.5 + 0.25):exp() * 0.5 - b):eval() end
local z
for _ = 1, 3 do z = chain(x, y); dev:finish() end
print(("device: %s, 2^%d floats; Lua heap %.0f KB"):format(dev.name, e, collectgarbage("count")))
local function timed(name, f)
  local t = {}
  for r = 1, reps do t[r] = f() end
  print(("%-44s %10.1f us"):format(name, median(t) * 1e6))
end
timed("collectgarbage(), device idle", function()
  dev:finish()
  local t0 = now(); collectgarbage(); return now() - t0
end)
timed("collectgarbage(), the chain's kernel running", function()
  z = nil
  z = chain(x, y)
  local t0 = now(); collectgarbage(); local t = now() - t0
  dev:finish()
  return t
end)
timed("collectgarbage(\"step\", 0), kernel running", function()
  z = nil
  z = chain(x, y)
  local t0 = now(); collectgarbage("step", 0); local t = now() - t0
  dev:finish()
  return t
end)
local m0 = dev:memory()
in_pool, pool_calls = 0, 0
timed("eval of the chain (host), z kept across calls", function()
  local t0 = now(); z = chain(x, y); local t = now() - t0
  dev:finish()
  return t
end)
local m1 = dev:memory()
print(("  pool: %d collections (%.1f us each), %d new blocks in %d calls"):format(
      m1.collections - m0.collections, pool_calls > 0 and in_pool / pool_calls * 1e6 or 0,
      m1.made - m0.made, reps))
timed("eval of the chain (host), z released first", function()
  if z then z:release() end
  local t0 = now(); z = chain(x, y); local t = now() - t0
  dev:finish()
  return t
end)
