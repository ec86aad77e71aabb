-- bench/gpu/pool_costs.lua: what the tensor pool trades: making a device
-- buffer against a full Lua collection, and an op's wall clock while the
-- pool grows (its first calls, results dropped) against later calls.
--
--   build/luagpu bench/gpu/pool_costs.lua
local gpu = rawget(_G, "gpu") or require "luagpu"
local dev = gpu.device()
local now = gpu.now

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

local NO_INIT = {init = false}
for _, c in ipairs {{"long", 4096}, {"float", 64 * 256 * 256}, {"float", 1 << 26}} do
  local t = {}
  for r = 1, 50 do
    local t0 = now()
    local b = dev:buffer(c[1], c[2], NO_INIT)
    t[r] = (now() - t0) * 1e6
    b:release()
  end
  print(string.format("LUAGPU new_buffer_%s_%d %.1f us", c[1], c[2], median(t)))
end
local S = dev:rand("float", {4096, 4096}, 1)
local X, Y = dev:rand("float", {64, 256, 256}, 2), dev:rand("float", {64, 256, 256}, 3)
dev:finish()
local t = {}
for r = 1, 30 do
  local t0 = now()
  collectgarbage()
  t[r] = (now() - t0) * 1e6
end
print(string.format("LUAGPU full_collection %.1f us (heap %.0f KB)", median(t),
                    collectgarbage("count")))
for _, c in ipairs {{"argmax2_4096^2", function() return S:argmax(2) end},
                    {"bmm_64x256^3", function() return X:mm(Y) end}} do
  local m0 = dev:memory()
  local walls = {}
  for r = 1, 600 do
    local t0 = now()
    local res = c[2]()
    dev:finish()
    walls[r] = (now() - t0) * 1e6
    res = nil
  end
  local m1 = dev:memory()
  local function med(a, b)
    local s = {}
    for i = a, b do s[#s + 1] = walls[i] end
    return median(s)
  end
  print(string.format("LUAGPU %s calls 4-33 %.1f us, 301-600 %.1f us; made %d, collections %d",
                      c[1], med(4, 33), med(301, 600), m1.made - m0.made,
                      m1.collections - m0.collections))
end
