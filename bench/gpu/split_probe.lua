-- bench/gpu/split_probe.lua: where the time of reduce.sum over two GPUs goes
-- (all of it on one GPU, each half alone, both halves at once in either
-- order), wall clock, medians, one GPU and two taking turns.
--   build/luagpu bench/gpu/split_probe.lua [REPS [LOG2N]]
local gpu = rawget(_G, "gpu") or require "luagpu"
local reduce = require "luagpu.reduce"
local reps = tonumber(arg and arg[1]) or 21
local e = tonumber(arg and arg[2]) or 30
local devs = gpu.devices("gpu")
if #devs < 2 then devs = gpu.devices() end   -- a CPU device twice (PoCL), to try it
local d1, d2 = devs[1], devs[2]
local total = 1 << e
local b1, b2 = d1:buffer("float", total // 2), d2:buffer("float", total // 2)
b1:fill(1):wait(); b2:fill(1):wait()
local now = gpu.now
local whole = d1:buffer("float", total)
whole:fill(1):wait()
local cases = {
  {"GPU 1, all 2^LOG2N floats", function() return reduce.sum(whole) end},
  {"GPU 1 alone", function() return reduce.sum(b1) end},
  {"GPU 2 alone", function() return reduce.sum(b2) end},
  {"list {b1, b2}", function() return reduce.sum({b1, b2}) end},
  {"list {b2, b1}", function() return reduce.sum({b2, b1}) end},
  {"async b1, async b2, waits", function()
    local e1 = reduce.sum(b1, {async = true})
    local e2 = reduce.sum(b2, {async = true})
    return e1:wait() + e2:wait()
  end},
  {"kernels only: async both, finish both", function()
    reduce.sum(b1, {async = true}); reduce.sum(b2, {async = true})
    d1:finish(); d2:finish()
    return total
  end},
}
for _ = 1, 30 do reduce.sum({b1, b2}) end
local t = {}
for i = 1, #cases do t[i] = {} end
for r = 1, reps do
  for i, c in ipairs(cases) do
    local t0 = now()
    local s = c[2]()
    t[i][r] = now() - t0
    assert(s == total // 2 or s == total, c[1] .. ": wrong sum " .. tostring(s))
  end
end
local med = {}
for i, c in ipairs(cases) do
  table.sort(t[i])
  med[i] = t[i][(reps + 1) // 2]
  print(("%-40s %.3f ms (min %.3f)"):format(c[1]:gsub("LOG2N", e), med[i] * 1e3, t[i][1] * 1e3))
end
print(("speed-up of the list {b1, b2} over one GPU: %.2fx"):format(med[1] / med[4]))
