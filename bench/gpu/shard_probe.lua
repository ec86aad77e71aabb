-- bench/gpu/shard_probe.lua: where the time of a sharded op on two GPUs
-- goes: each shard's op alone on its device, and the two together step
-- by step (host time to each launch returned, then to each device done).
-- Wall clock, medians of REPS, microseconds.
--   build/luagpu bench/gpu/shard_probe.lua [REPS [LOG2N]]
local gpu = rawget(_G, "gpu") or require "luagpu"
local RD = require "luagpu.reduce"
local O = require "luagpu.tensor.object"
local reps = tonumber(arg and arg[1]) or 21
local e = tonumber(arg and arg[2]) or 28
local devs = gpu.devices("gpu")
if #devs < 2 then devs = gpu.devices() end
local d1, d2 = devs[1], devs[2]
local n = 1 << e
local x, y = d1:rand("float", {n}, 1):eval(), d1:rand("float", {n}, 2):eval()
local xs, ys = gpu.shard(x, {d1, d2}), gpu.shard(y, {d1, d2})
local x1, x2 = xs.shards[1], xs.shards[2]
local y1, y2 = ys.shards[1], ys.shards[2]
local b1, b2 = O.elements_of(x1), O.elements_of(x2)
local now = gpu.now
local function chain(a, b) return ((a * 1.5 + 0.25):exp() * 0.5 - b):eval() end
local function median(t) table.sort(t); return t[(#t + 1) // 2] end

-- f() returns a list of host times (seconds since its start) of its steps
local function probe(name, f)
  local keep
  for _ = 1, 3 do keep = f(); d1:finish(); d2:finish() end
  local cols = {}
  for r = 1, reps do
    keep = nil
    d1:finish(); d2:finish()
    local marks = f()
    for i, v in ipairs(marks) do cols[i] = cols[i] or {}; cols[i][r] = v end
  end
  local out = {}
  for i, c in ipairs(cols) do out[i] = ("%.1f"):format(median(c) * 1e6) end
  print(("%-34s %s"):format(name, table.concat(out, "  ")))
end

print(("device: %s x2, 2^%d floats (shards of 2^%d)"):format(d1.name, e, e - 1))
print("columns: host us at each step (medians)")
probe("chain one GPU: eval, finish", function()
  local t0 = now(); local z = chain(x, y); local t1 = now(); d1:finish()
  return {t1 - t0, now() - t0} end)
probe("chain shard 1 alone: eval, finish", function()
  local t0 = now(); local z = chain(x1, y1); local t1 = now(); d1:finish()
  return {t1 - t0, now() - t0} end)
probe("chain shard 2 alone: eval, finish", function()
  local t0 = now(); local z = chain(x2, y2); local t1 = now(); d2:finish()
  return {t1 - t0, now() - t0} end)
probe("chain both: ev1 ev2 fin1 fin2", function()
  local t0 = now(); local z1 = chain(x1, y1); local t1 = now(); local z2 = chain(x2, y2)
  local t2 = now(); d1:finish(); local t3 = now(); d2:finish()
  return {t1 - t0, t2 - t0, t3 - t0, now() - t0} end)
probe("chain both: ev2 ev1 fin2 fin1", function()
  local t0 = now(); local z2 = chain(x2, y2); local t1 = now(); local z1 = chain(x1, y1)
  local t2 = now(); d2:finish(); local t3 = now(); d1:finish()
  return {t1 - t0, t2 - t0, t3 - t0, now() - t0} end)
probe("chain sharded: eval, fin1, fin2", function()
  local t0 = now(); local z = chain(xs, ys); local t1 = now(); d1:finish()
  local t2 = now(); d2:finish()
  return {t1 - t0, t2 - t0, now() - t0} end)
probe("sum one GPU", function()
  local t0 = now(); local s = x:sum(); return {now() - t0} end)
probe("sum shard 1 alone / 2 alone", function()
  local t0 = now(); local s = x1:sum(); local t1 = now(); s = x2:sum()
  return {t1 - t0, now() - t1} end)
probe("sum async: rd1 rd2 w1 w2", function()
  local t0 = now(); local e1 = RD.sum(b1, {async = true}); local t1 = now()
  local e2 = RD.sum(b2, {async = true}); local t2 = now()
  local s = e1:wait(); local t3 = now(); s = s + e2:wait()
  return {t1 - t0, t2 - t0, t3 - t0, now() - t0} end)
probe("sum sharded", function()
  local t0 = now(); local s = xs:sum(); return {now() - t0} end)
probe("finish of an idle queue x2", function()
  local t0 = now(); d1:finish(); local t1 = now(); d2:finish()
  return {t1 - t0, now() - t1} end)
local X = require "luagpu.tensor.expr"
local function lazy(a, b) return (a * 1.5 + 0.25):exp() * 0.5 - b end
probe("chain sharded: nodes st r1 r2 f1 f2", function()
  local t0 = now(); local z = lazy(xs, ys); local t1 = now()
  local l = z.shards
  local s1, s2 = X.storage_for(l[1]), X.storage_for(l[2]); local t2 = now()
  X.realize(l[1], s1); local t3 = now(); X.realize(l[2], s2); local t4 = now()
  d1:finish(); local t5 = now(); d2:finish()
  return {t1 - t0, t2 - t0, t3 - t0, t4 - t0, t5 - t0, now() - t0} end)
probe("sum rows one GPU: call, finish", function()
  local M = x:reshape({1 << 14, n >> 14})
  local t0 = now(); local r = M:sum(2); local t1 = now(); d1:finish()
  return {t1 - t0, now() - t0} end)
probe("sum rows shards: c1 c2 f1 f2", function()
  local M1, M2 = x1:reshape({1 << 13, n >> 14}), x2:reshape({1 << 13, n >> 14})
  local t0 = now(); local r1 = M1:sum(2); local t1 = now(); local r2 = M2:sum(2)
  local t2 = now(); d1:finish(); local t3 = now(); d2:finish()
  return {t1 - t0, t2 - t0, t3 - t0, now() - t0} end)
probe("flush of an idle queue x2", function()
  local t0 = now(); d1:flush(); local t1 = now(); d2:flush()
  return {t1 - t0, now() - t1} end)
probe("sum launch: l1 l2 r1 r2 w1 w2", function()
  local t0 = now(); local g1 = RD.sum(b1, RD.LAUNCH); local t1 = now()
  local g2 = RD.sum(b2, RD.LAUNCH); local t2 = now()
  local e1 = g1(); local t3 = now(); local e2 = g2(); local t4 = now()
  local s = e1:wait(); local t5 = now(); s = s + e2:wait()
  return {t1 - t0, t2 - t0, t3 - t0, t4 - t0, t5 - t0, now() - t0} end)
probe("sum quiet: q1 q2 w1 w2", function()
  local t0 = now(); local e1 = RD.sum(b1, RD.QUIET); local t1 = now()
  local e2 = RD.sum(b2, RD.QUIET); local t2 = now()
  local s = e1:wait(); local t3 = now(); s = s + e2:wait()
  return {t1 - t0, t2 - t0, t3 - t0, now() - t0} end)
probe("sum one GPU buffer: sync", function()
  local bx = O.elements_of(x)
  local t0 = now(); local s = RD.sum(bx); return {now() - t0} end)
probe("sum one GPU buffer: quiet, wait", function()
  local bx = O.elements_of(x)
  local t0 = now(); local e = RD.sum(bx, RD.QUIET); local t1 = now(); local s = e:wait()
  return {t1 - t0, now() - t0} end)
probe("sum launch, one wait: l1 l2 r1 r2 w", function()
  local t0 = now(); local g1 = RD.sum(b1, RD.LAUNCH); local t1 = now()
  local g2 = RD.sum(b2, RD.LAUNCH); local t2 = now()
  local e1 = g1(); local t3 = now(); local e2 = g2(); local t4 = now()
  local s1, s2 = gpu.wait(e1, e2)
  return {t1 - t0, t2 - t0, t3 - t0, t4 - t0, now() - t0} end)
