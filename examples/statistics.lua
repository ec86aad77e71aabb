-- examples/statistics.lua: statistics of a buffer with luagpu.reduce's
-- custom reductions (reduce.new: a map applied to each element, then an
-- associative op folding the mapped values).
--
--   build/luagpu examples/statistics.lua [N]
--
-- Mean and standard deviation (two reductions: sum, then sum of squared
-- deviations), the Euclidean norm, how many values pass a threshold, the
-- largest magnitude, and an index-weighted sum that uses the map's `i`.
-- Each is checked against the same statistic computed in Lua.
local gpu = rawget(_G, "gpu") or require "luagpu"
local reduce = require "luagpu.reduce"

local n = tonumber(arg and arg[1]) or 500000
local dev = gpu.device()
local acc = dev.fp64 and "double" or "float"   -- accumulate floats in double where we can
print(tostring(dev))

local host = gpu.array("float", n)
for i = 1, n do host[i] = (math.random() - 0.3) * 10 end
local x = dev:buffer("float", n)
x:write(host):wait()

-- reducers are made once and reused: each compiles on first use per device
local sum_sq = reduce.new{type = "float", acc = acc, map = "(ACC)x * x",
                          op = "a + b", neutral = "0"}
local above = reduce.new{type = "float", acc = "long", map = "x > 4.0f ? 1 : 0",
                         op = "a + b", neutral = "0"}
local max_abs = reduce.new{type = "float", map = "fabs(x)", op = "fmax(a, b)", neutral = "0"}
local weighted = reduce.new{type = "float", acc = acc, map = "(ACC)x * (ACC)i",
                            op = "a + b", neutral = "0"}

local mean = reduce.sum(x, {acc = dev.fp64 and "double" or nil}) / n
-- a reducer whose map holds the mean: a new program, so make it once per mean
local dev_sq = reduce.new{type = "float", acc = acc,
                          map = ("((ACC)x - %.17g) * ((ACC)x - %.17g)"):format(mean, mean),
                          op = "a + b", neutral = "0"}
local std = math.sqrt(dev_sq(x) / n)
local norm = math.sqrt(sum_sq(x))
local count = above(x)
local big = max_abs(x)
local w = weighted(x)

-- the same in Lua
local s, ss, c, m, ws = 0, 0, 0, 0, 0
for i = 1, n do
  local v = host[i]
  s = s + v
  ss = ss + v * v
  if v > 4 then c = c + 1 end
  m = math.max(m, math.abs(v))
  ws = ws + v * (i - 1)
end
local lmean = s / n
local var = 0
for i = 1, n do var = var + (host[i] - lmean) ^ 2 end
local lstd = math.sqrt(var / n)

local function row(name, got, want)
  local rel = math.abs(got - want) / math.max(math.abs(want), 1e-30)
  print(("%-22s %18.9g %18.9g %10.1e"):format(name, got, want, rel))
  assert(rel < 1e-5, name .. " is off")
end
print(("%-22s %18s %18s %10s"):format("", "device", "Lua", "rel. diff"))
row("mean", mean, lmean)
row("standard deviation", std, lstd)
row("norm", norm, math.sqrt(ss))
row("values above 4", count, c)
row("largest magnitude", big, m)
row("sum of x[i] * i", w, ws)
print("ok")
