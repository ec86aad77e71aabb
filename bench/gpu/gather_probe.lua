-- bench/gpu/gather_probe.lua: where the wall clock of a gather goes
-- (issue 32: S:gather(2, G) and S:index_select(1, R) of 4096^2 floats):
-- the call as a loop makes it (its last result dead but not collected),
-- the same with each result released at once (no pool miss), the pool's
-- new blocks and collections per call, a 16-byte read after the device is
-- idle, and a tiny kernel followed by a read or by a finish. Medians of
-- REPS, microseconds.
--   build/luagpu bench/gpu/gather_probe.lua [REPS [N]]
local gpu = rawget(_G, "gpu") or require "luagpu"
local reps = tonumber(arg and arg[1]) or 51
local n = tonumber(arg and arg[2]) or 4096
local dev = gpu.device()
local now = gpu.now
local function median(t) table.sort(t); return t[(#t + 1) // 2] end

local S = dev:rand("float", {n, n}, 1):eval()
local G = ((dev:rand("float", {n, n}, 23) * n):floor():astype("long") + 1):eval()
local R = ((dev:rand("float", {n}, 24) * n):floor():astype("long") + 1):eval()
local Gi = G:astype("int"):eval()

local function timed(name, f, after)
  for _ = 1, 3 do local r = f(); if after then after(r) end end
  dev:finish()
  local m0 = dev:memory()
  local t = {}
  for r = 1, reps do
    local t0 = now()
    local res = f()
    dev:finish()
    t[r] = now() - t0
    if after then after(res) end
    res = nil
  end
  local m1 = dev:memory()
  print(("%-40s %8.1f us   new blocks %.2f, collections %.2f a call"):format(name,
        median(t) * 1e6, (m1.made - m0.made) / reps, (m1.collections - m0.collections) / reps))
end
local function release(r) r:release() end

print(("device: %s, %dx%d floats"):format(dev.name, n, n))
timed("gather(2, G long)", function() return S:gather(2, G) end)
timed("gather(2, G long), released", function() return S:gather(2, G) end, release)
timed("gather(2, G int), released", function() return S:gather(2, Gi) end, release)
timed("index_select(1, R)", function() return S:index_select(1, R) end)
timed("index_select(1, R), released", function() return S:index_select(1, R) end, release)
timed("S:clone(), released", function() return S:clone() end, release)
-- other rows of tensor_vs_torch.lua, as a loop makes them and released
local x24 = dev:rand("float", {n * n}, 3):eval()
local P20 = ((dev:rand("float", {n * n}, 22) * (n * n // 16)):floor():astype("long") + 1):eval()
local zeros = dev:tensor("float", {n * n // 16})
local X, Y = dev:rand("float", {64, 256, 256}, 5):eval(), dev:rand("float", {64, 256, 256}, 6):eval()
local a, b = dev:rand("float", {1024}, 7):eval(), dev:rand("float", {1024}, 8):eval()
for _, row in ipairs{
  {"scatter_add", function() return zeros:scatter_add(1, P20, x24) end},
  {"masked_select", function() return x24:masked_select(x24:gt(0.5)) end},
  {"cat of 3", function() return gpu.cat({x24, x24, x24}) end},
  {"flip(2):contiguous()", function() return S:flip(2):contiguous() end},
  {"sum(1)", function() return S:sum(1) end},
  {"argmax(2)", function() return S:argmax(2) end},
  {"cumsum", function() return x24:cumsum() end},
  {"bmm 64x256^3", function() return X:mm(Y) end},
  {"chain of 1024", function() return ((a * 1.5 + 0.25):exp() * 0.5 - b):eval() end},
} do
  timed(row[1], row[2])
  timed(row[1] .. ", released", row[2], function(r) if r ~= zeros then r:release() end end)
end

local flag = dev:buffer("long", 2)
timed("16-byte get, device idle", function() return flag:get() end)
local k = dev:build([[__kernel void tiny(__global long *b) { if (get_global_id(0) == 0) b[1] = 0; }]]).tiny
timed("tiny kernel, finish", function() k(flag):run({64}, {64}); dev:finish() end)
timed("tiny kernel, 16-byte get", function() k(flag):run({64}, {64}); return flag:get() end)
timed("tiny kernel, read event wait", function() k(flag):run({64}, {64}); return flag:read():wait() end)

timed("tiny kernel, event wait", function() k(flag):run({64}, {64}):wait() end)
timed("tiny kernel, poll the event", function()
  local ev = k(flag):run({64}, {64})
  dev:flush()
  while ev.status ~= "complete" do end
end)
timed("tiny kernel, read event polled", function()
  k(flag):run({64}, {64})
  local ev = flag:read()
  dev:flush()
  while ev.status ~= "complete" do end
  return ev:wait()
end)
local sc = dev:scalar("long", 0)
timed("scalar get, device idle", function() return sc:get() end)
timed("tiny kernel, scalar get", function() k(sc):run({64}, {64}); return sc:get() end)
local pinned = dev:buffer("long", 2, {pinned = true})
local staged = pinned:map("read_write")
timed("16-byte get into a pinned array, idle", function() return flag:get(staged) end)
timed("tiny kernel, get into a pinned array", function() k(flag):run({64}, {64}); return flag:get(staged) end)
local hostarr = flag:get()
timed("16-byte get into a reused array, idle", function() return flag:get(hostarr) end)
timed("tiny kernel, finish, get into pinned", function() k(flag):run({64}, {64}); dev:finish(); return flag:get(staged) end)

-- what a pool miss costs: a new buffer (not zero-filled), and a sub-buffer
local ST = require "luagpu.core.steps"
for _, bytes in ipairs{4096, 1 << 20, 64 << 20} do
  local keep = {}
  timed(("new buffer of %d bytes"):format(bytes), function()
    keep[#keep + 1] = dev:buffer("float", bytes // 4, ST.NO_INIT) end)
  for _, b in ipairs(keep) do b:release() end
  local slab = dev:buffer("float", (bytes // 4) * 16, ST.NO_INIT)
  local k = 0
  keep = {}
  timed(("view of %d bytes"):format(bytes), function()
    k = k % 16
    keep[#keep + 1] = slab:sub(k * (bytes // 4) + 1, (k + 1) * (bytes // 4))
    k = k + 1 end)
  local tk = dev:build([[__kernel void touch(__global float *b) { if (get_global_id(0) == 0) b[0] = 1; }]]).touch
  timed(("view of %d bytes, first kernel on it (clCreateSubBuffer)"):format(bytes), function()
    k = k % 16
    local v = slab:sub(k * (bytes // 4) + 1, (k + 1) * (bytes // 4))
    keep[#keep + 1] = v
    tk(v):run({64}, {64})
    k = k + 1 end)
  local whole = dev:buffer("float", bytes // 4, ST.NO_INIT)
  timed(("a kernel on a buffer of %d bytes"):format(bytes), function() tk(whole):run({64}, {64}) end)
  keep = nil
  slab:release()
end
