-- bench/host_calls.lua: the host's own cost of one call of the array API's
-- ops at tiny sizes (the device's time is negligible there): Lua VM
-- instructions per call (a count hook of 1), C functions called per call,
-- and wall-clock microseconds per call (the median of REPS calls, each
-- timed up to its return, with dev:finish() after it outside the time).
-- A program, not a test; run it on PoCL to compare the host path before
-- and after a change.
--
--   build/luagpu bench/host_calls.lua [REPS [OP_PATTERN [profile]]]
--
-- Prints one line per op: name, instructions per call, C calls per call,
-- microseconds per call (the median), and their mean: the calls that ran
-- a step of the collector included, what a loop of them costs a call.
-- With "profile", each op's instructions per call by the function they
-- ran in (source:line where it is defined), and the C
-- calls in order with the instructions run before each (where the second
-- shard's launch comes, for the sharded ones).
--
-- $CLASS sets the device class's settings in luagpu.algo for the run
-- (bench/common.lua): CLASS="sort_onesweep=true sort_ptx=emulated
-- sort_rows_max=0" runs the sorts of u4096 (4096 keys) on PoCL as a GPU's.
--
-- The cases named shard_* run on a sharded tensor over two devices (on
-- PoCL: POCL_DEVICES="pthread pthread"); with one device they say so and
-- are skipped.
local bench = dofile((arg and arg[0] or "bench/"):match("^(.-)[^/]*$") .. "common.lua")
local gpu = rawget(_G, "gpu") or require "luagpu"

local reps = math.max(5, tonumber(arg and arg[1]) or 400)
local only = arg and arg[2]
local profile = arg and arg[3] == "profile"
local dev = gpu.device()
local devs = gpu.devices()
bench.class_settings(dev)

local S = dev:tensor("float", {8, 16}, 1)
local G = dev:tensor("long", {8, 16}, 3)
local R = dev:tensor("long", {4}, {1, 3, 5, 7})
local W = dev:tensor("float", {8, 64}, 1)               -- rows of 64: whole-row copies
local x = dev:tensor("float", {64}, 2)
local src = dev:tensor("float", {64}, 1)
local Pi = dev:tensor("long", {64}, 5)
local mask = x:gt(1.5):eval()
local a, b, c = dev:tensor("float", {16}, 1), dev:tensor("float", {16}, 2),
                dev:tensor("float", {16}, 3)
local M = dev:tensor("float", {16, 16}, 1)
local A, B = dev:tensor("float", {16, 16}, 1), dev:tensor("float", {16, 16}, 2)
local XB, YB = dev:tensor("float", {4, 8, 8}, 1), dev:tensor("float", {4, 8, 8}, 2)
local u = dev:tensor("float", {64}, (function()
  local t = {}
  for i = 1, 64 do t[i] = (i * 7) % 13 end
  return t
end)())
local u4096 = (dev:rand("float", {4096}, 3) * 1000):floor():astype("int"):eval()

-- sharded over the first two devices: 2 x 4096 floats, 2 x (32 x 64)
local xs, ys, Ms
if #devs >= 2 then
  local pair = {devs[1], devs[2]}
  xs = gpu.shard(devs[1]:tensor("float", {8192}, 0.5), pair)
  ys = gpu.shard(devs[1]:tensor("float", {8192}, 0.25), pair)
  Ms = gpu.shard(devs[1]:tensor("float", {64, 64}, 1), pair)
end

local cases = {
  -- issue 29's bar: a 4-node expression of small tensors built (not run)
  {"build4",        function() return (a * 1.5 + 0.25):exp() - b end},
  {"build5",        function() return (a * 1.5 + 0.25):exp() * 0.5 - b end},
  {"chain5_eval",   function() return ((a * 1.5 + 0.25):exp() * 0.5 - b):eval() end},
  {"gather2",       function() return S:gather(2, G) end},
  {"index_select1", function() return S:index_select(1, R) end},
  {"index_rows",    function() return W:index_select(1, R) end},
  {"scatter_add",   function() return x:scatter_add(1, Pi, src) end},
  {"masked_select", function() return x:masked_select(mask) end},
  {"cat3",          function() return gpu.cat{a, b, c} end},
  {"take",          function() return x:take(Pi) end},
  {"cumsum",        function() return x:cumsum() end},
  {"argmax2",       function() return S:argmax(2) end},
  {"sum1",          function() return M:sum(1) end},
  {"sum2",          function() return M:sum(2) end},
  {"sum_all",       function() return M:sum() end},
  {"mm",            function() return A:mm(B) end},
  {"bmm",           function() return XB:mm(YB) end},
  {"einsum_bmm",    function() return gpu.einsum("bij,bjk->bik", XB, YB) end},
  {"softmax2",      function() return W:softmax(2) end},
  {"argsort",       function() return u:argsort() end},
  {"unique",        function() return u:unique() end},
  {"unique4096",    function() return u4096:unique() end},
  {"argsort4096",   function() return u4096:argsort() end},
  -- sharded over two devices (issue 31: the host's time between launches)
  {"shard_build5",  function() return (xs * 1.5 + 0.25):exp() * 0.5 - ys end, 2},
  {"shard_chain5",  function() return ((xs * 1.5 + 0.25):exp() * 0.5 - ys):eval() end, 2},
  {"shard_sum",     function() return xs:sum() end, 2},
  {"shard_sum2",    function() return Ms:sum(2) end, 2},
  {"shard_sum1",    function() return Ms:sum(1) end, 2},
}

-- VM instructions and C calls of n calls of f, per call.
local function counts(f, n)
  local ins, ccalls = 0, 0
  local getinfo = debug.getinfo
  debug.sethook(function(ev)
    if ev == "count" then ins = ins + 1
    elseif getinfo(2, "S").what == "C" then ccalls = ccalls + 1 end
  end, "c", 1)
  for _ = 1, n do f() end
  debug.sethook()
  return ins / n, ccalls / n
end

-- Instructions per call of n calls of f by the function they ran in, and
-- the C calls of one more call in order, each with the instructions before
-- it; printed.
local function profile_of(f, n)
  local getinfo = debug.getinfo
  local by = {}
  debug.sethook(function()
    local i = getinfo(2, "S")
    local k = i.short_src .. ":" .. i.linedefined
    by[k] = (by[k] or 0) + 1
  end, "", 1)
  for _ = 1, n do f() end
  debug.sethook()
  local rows = {}
  for k, v in pairs(by) do rows[#rows + 1] = {k, v / n} end
  table.sort(rows, function(a, b) return a[2] > b[2] end)
  for _, r in ipairs(rows) do print(string.format("    %8.1f  %s", r[2], r[1])) end
  local ins, seq = 0, {}
  debug.sethook(function(ev)
    if ev == "count" then ins = ins + 1
    else
      local i = getinfo(2, "Sn")
      if i.what == "C" then seq[#seq + 1] = string.format("%d:%s", ins, i.name or "?") end
    end
  end, "c", 1)
  f()
  debug.sethook()
  print("    C calls (instructions before): " .. table.concat(seq, " "))
end

local function settle() for _, d in ipairs(devs) do d:finish() end end

print(string.format("%-14s %10s %8s %10s %10s", "op", "VM instr", "C calls", "us/call", "mean us"))
for _, case in ipairs(cases) do
  local name, f = case[1], case[2]
  if case[3] and #devs < case[3] then
    if not only or name:find(only) then
      print(string.format("%-14s needs %d devices (on PoCL: POCL_DEVICES=\"pthread pthread\")",
                          name, case[3]))
    end
  elseif not only or name:find(only) or only:find(name, 1, true) then
    for _ = 1, 20 do f(); settle() end              -- warm: programs, pools, caches
    collectgarbage()
    local ins, cc = counts(f, 20)
    settle()
    collectgarbage()
    local times = bench.enqueue_times(reps, f, settle)
    local sum = 0
    for i = 1, #times do sum = sum + times[i] end
    print(string.format("%-14s %10.0f %8.0f %10.1f %10.1f", name, ins, cc,
                        bench.median(times) * 1e6, sum / #times * 1e6))
    if profile then profile_of(f, 20); settle() end
  end
end
