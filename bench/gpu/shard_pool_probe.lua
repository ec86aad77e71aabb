-- bench/gpu/shard_pool_probe.lua: the pool behind a loop of large results.
-- For each size (2^LOG2 floats, in the order given: a script that moves from
-- one size to the next), a chain `((x*1.5+0.25):exp()*0.5-y):eval()` in a
-- loop on one GPU and sharded over two: the median wall clock of 21 calls,
-- and the new OpenCL buffers the pools made and the full collections they
-- ran during them (device 1, device 2).
--   build/luagpu bench/gpu/shard_pool_probe.lua [LOG2,LOG2,...]
local gpu = require "luagpu"
local devs = gpu.devices("gpu")
if #devs < 2 then devs = gpu.devices() end
assert(#devs >= 2, "two devices expected")
local d1, d2 = devs[1], devs[2]
local function chain(a, b) return ((a * 1.5 + 0.25):exp() * 0.5 - b):eval() end
local function median(t) table.sort(t); return t[(#t + 1) // 2] end
local order = arg[1] or "26,28,30"
for v in order:gmatch("%d+") do
  local e = tonumber(v)
  local n = 1 << e
  local x, y = d1:rand("float", {n}, 1):eval(), d1:rand("float", {n}, 2):eval()
  local xs, ys = gpu.shard(x, {d1, d2}), gpu.shard(y, {d1, d2})
  for _, case in ipairs{{"one", function() return chain(x, y) end}, {"two", function() return chain(xs, ys) end}} do
    for i = 1, 3 do local z = case[2]() end
    d1:finish(); d2:finish()
    local m1, m2 = d1:memory(), d2:memory()
    local ts = {}
    for i = 1, 21 do
      local t0 = gpu.now()
      local z = case[2](); d1:finish(); d2:finish()
      ts[i] = gpu.now() - t0
    end
    local n1, n2 = d1:memory(), d2:memory()
    print(("2^%d %s %.1f us  made %d %d  coll %d %d"):format(e, case[1], median(ts) * 1e6,
      n1.made - m1.made, n2.made - m2.made, n1.collections - m1.collections, n2.collections - m2.collections))
  end
  x:release(); y:release(); xs:release(); ys:release()
  collectgarbage()
end
