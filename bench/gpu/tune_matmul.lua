-- bench/gpu/tune_matmul.lua: a parameter sweep for luagpu.matmul on one
-- device; prints the best parameters per size and the entry to add to the
-- parameter table in lua/luagpu/matmul/params.lua (matmul.params), so the
-- next GPU is tuned the same way.
--
--   build/luagpu bench/gpu/tune_matmul.lua [options]
--     --device SPEC     as gpu.device(SPEC) (default: the first GPU)
--     --variant V       reg (default; GPUs) or packed (CPUs)
--     --size N          the size the sweep runs at (default 4096)
--     --small N         also tune the `small` set at N x N (default 1024; 0: no)
--     --verify LIST     sizes the winner is timed at afterwards, comma-separated,
--                       MxNxK or N (default 4096,8192,4095,4097,8191,2048,1024)
--     --budget S        seconds the sweep may take (default 240)
--     --reps R          timed calls per point (default 10, median)
--     --out FILE        also write the table entry there
--     --type T          float (default) or double
--     --start TABLE     the parameters to start from, as a Lua table
--                       (default: what matmul.params holds for the device)
--
-- The sweep is a coordinate descent: from the current parameters it tries
-- every value of one parameter (tile shape, BK, DB, vector widths, padding,
-- unrolling, build options) keeping the best, then the next parameter, for
-- two passes or until the budget is spent. Each point is built once, run
-- twice to warm up, then timed R times by OpenCL profiling (from the start
-- of the call's first kernel to the end of its last; the median). Before it is timed, each point's result is
-- compared with the "tiled" kernel's on sampled rows: a wrong point is
-- reported and skipped. Lines:
--   POINT  tflops  ms  params         every point
--   BEST   size  tflops  params       the winners
--   MATMUL size tflops                the winner at each --verify size
-- then the Lua entry for matmul.params.
local gpu = rawget(_G, "gpu") or require "luagpu"
local matmul = require "luagpu.matmul"
local bench = dofile((arg and arg[0] or "bench/gpu/"):match("^(.-)[^/]*$") .. "../common.lua")
local dims, median = bench.dims, bench.median

local opt = {device = nil, variant = "reg", size = 4096, small = 1024, budget = 240, reps = 10,
             verify = "4096,8192,4095,4097,8191,2048,1024", type = "float"}
do
  local i, a = 1, arg or {}
  while i <= #a do
    local k = a[i]:match("^%-%-(%w+)$")
    if not k or opt[k] == nil and k ~= "device" and k ~= "out" and k ~= "start" then
      error("unknown argument " .. a[i] .. " (see the comment at the top)")
    end
    local v = a[i + 1]
    opt[k] = tonumber(v) or v
    i = i + 2
  end
end

local dev = gpu.device(opt.device or (#gpu.devices("gpu") > 0 and "gpu" or nil))
local t = opt.type
local esize = t == "double" and 8 or 4
print(("tune_matmul: %s (%s, %s, %d compute units, %d KiB local memory)"):format(dev.name,
      dev.platform, dev.driver_version, dev.compute_units, dev.local_mem_size // 1024))
local nv = false
for _, e in ipairs(dev.extensions) do
  if e == "cl_nv_compiler_options" then nv = true end
end

-- Operands big enough for every size, filled on the device.
local maxe = {a = 0, b = 0, c = 0}
local verify = {}
for s in tostring(opt.verify):gmatch("[^,]+") do verify[#verify + 1] = s end
for _, s in ipairs({tostring(opt.size), tostring(opt.small), table.unpack(verify)}) do
  local m, n, k = dims(s)
  if m and m > 0 then
    maxe.a, maxe.b, maxe.c = math.max(maxe.a, m * k), math.max(maxe.b, k * n),
                             math.max(maxe.c, m * n)
  end
end
local fill = bench.filler(dev, t, -1)
local Abuf, Bbuf = dev:buffer(t, maxe.a), dev:buffer(t, maxe.b)
local Cbuf, Rbuf = dev:buffer(t, maxe.c), dev:buffer(t, maxe.c)
fill(Abuf, 1):wait()
fill(Bbuf, 2):wait()

-- Operand views of an m x n x k product (1-D views, sizes in opts).
local function operands(m, n, k)
  return Abuf:sub(1, m * k), Bbuf:sub(1, k * n), Cbuf:sub(1, m * n), Rbuf:sub(1, m * n)
end

-- The tiled kernel is the reference: first checked against Lua on a
-- small ragged product, then run once per size into Rbuf.
do
  local m, n, k = 67, 45, 33
  local A, B, _, R = operands(m, n, k)
  local _, ev = matmul(A, B, R, {m = m, n = n, k = k, variant = "tiled"})
  ev:wait()
  local a, b, r = A:get(), B:get(), R:get()
  for i = 0, m - 1 do
    for j = 0, n - 1 do
      local want, scale = 0, 0
      for x = 0, k - 1 do
        local p = a[i * k + x + 1] * b[x * n + j + 1]
        want, scale = want + p, scale + math.abs(p)
      end
      assert(math.abs(r[i * n + j + 1] - want) <= 1e-5 * math.max(scale, 1e-30),
             ("the tiled reference is wrong at %d,%d"):format(i + 1, j + 1))
    end
  end
end
local ref_for = nil
local function reference(m, n, k)
  local key = m .. "x" .. n .. "x" .. k
  if ref_for == key then return end
  local A, B, _, R = operands(m, n, k)
  local _, ev = matmul(A, B, R, {m = m, n = n, k = k, variant = "tiled"})
  ev:wait()
  ref_for = key
end

-- Largest difference between C and the reference over sampled rows,
-- relative to the reference's largest magnitude there.
local function compare(m, n)
  local worst, scale = 0, 0
  for _, i in ipairs{1, 2, (m + 1) // 2, m - 1, m} do
    if i >= 1 and i <= m then
      local c = Cbuf:sub((i - 1) * n + 1, i * n):get()
      local r = Rbuf:sub((i - 1) * n + 1, i * n):get()
      for j = 1, n do
        worst = math.max(worst, math.abs(c[j] - r[j]))
        scale = math.max(scale, math.abs(r[j]))
      end
    end
  end
  return worst / math.max(scale, 1e-30)
end

local function key_of(p)
  local keys = {}
  for k, v in pairs(p) do
    keys[#keys + 1] = type(v) == "string" and ("%s = %q"):format(k, v) or k .. " = " .. tostring(v)
  end
  table.sort(keys)
  return "{" .. table.concat(keys, ", ") .. "}"
end

-- Times variant with params p at m x n x k: TFLOP/s and ms (median), or
-- nil and a message.
local function measure(variant, p, m, n, k, reps)
  local A, B, C = operands(m, n, k)
  local o = {m = m, n = n, k = k, variant = variant, params = p}
  local ok, err = pcall(function()
    for _ = 1, 2 do
      local _, ev = matmul(A, B, C, o)
      ev:wait()
    end
  end)
  if not ok then return nil, tostring(err):gsub("\n.*", "") end
  reference(m, n, k)
  local e = compare(m, n)
  if not (e < 1e-4) then return nil, ("wrong result (relative error %.2g)"):format(e) end
  local times = {}
  for i = 1, reps do
    local _, _, events = matmul(A, B, C, o)
    times[i] = bench.span_ns(events) * 1e-9
  end
  local s = median(times)
  return 2.0 * m * n * k / s * 1e-12, s * 1e3
end

local tried = {}
local function try(variant, p, m, n, k)
  local key = variant .. key_of(p) .. m .. "x" .. n .. "x" .. k
  if tried[key] then return tried[key] end
  local tf, ms = measure(variant, p, m, n, k, opt.reps)
  if tf then
    print(("POINT %8.2f TFLOP/s %9.3f ms %s %s"):format(tf, ms, variant, key_of(p)))
  else
    print(("POINT    error %s %s: %s"):format(variant, key_of(p), ms))
    tf = -1
  end
  io.stdout:flush()
  tried[key] = tf
  return tf
end

local function copy(p, changes)
  local q = {}
  for k, v in pairs(p) do q[k] = v end
  for k, v in pairs(changes or {}) do
    if v == false then q[k] = nil else q[k] = v end
  end
  return q
end

-- The values each coordinate takes (tables of changes), for the reg kernel.
local function reg_axes()
  local opts = {{options = false}}
  if nv then
    opts[#opts + 1] = {options = "-cl-nv-maxrregcount=128"}
    opts[#opts + 1] = {options = "-cl-nv-maxrregcount=168"}
  end
  return {
    {name = "shape", values = {
      {BM = 128, BN = 128, TM = 8, TN = 8}, {BM = 128, BN = 128, TM = 8, TN = 16},
      {BM = 128, BN = 128, TM = 16, TN = 8}, {BM = 128, BN = 256, TM = 8, TN = 16},
      {BM = 256, BN = 128, TM = 16, TN = 8}, {BM = 128, BN = 64, TM = 8, TN = 8},
      {BM = 64, BN = 128, TM = 8, TN = 8}, {BM = 64, BN = 64, TM = 8, TN = 8},
      {BM = 64, BN = 64, TM = 4, TN = 4}, {BM = 128, BN = 128, TM = 4, TN = 8},
      {BM = 256, BN = 128, TM = 8, TN = 8}, {BM = 128, BN = 256, TM = 8, TN = 8}}},
    {name = "BK", values = {{BK = 8}, {BK = 16}, {BK = 32}}},
    {name = "DB", values = {{DB = 0}, {DB = 1}, {DB = 2}}},
    {name = "vectors", values = {
      {VWM = 4, VWN = 4}, {VWM = 2, VWN = 4}, {VWM = 4, VWN = 2}, {VWM = 1, VWN = 4},
      {VWM = 4, VWN = 8}, {VWM = 8, VWN = 4}, {VWM = 2, VWN = 2}, {VWM = 8, VWN = 8}}},
    {name = "loads", values = {{VLA = 4, VLB = 4}, {VLA = 2, VLB = 4}, {VLA = 4, VLB = 8},
                               {VLA = 1, VLB = 4}}},
    {name = "PADA", values = {{PADA = 0}, {PADA = 1}, {PADA = 2}, {PADA = 4}, {PADA = 8}}},
    {name = "PADB", values = {{PADB = 0}, {PADB = 4}}},
    {name = "unroll", values = {{unroll = false}, {unroll = 4}, {unroll = 8}}},
    {name = "options", values = opts},
  }
end

local function packed_axes()
  return {
    {name = "shape", values = {{TM = 8, TN = 32}, {TM = 12, TN = 32}, {TM = 14, TN = 32},
                               {TM = 6, TN = 64}, {TM = 16, TN = 16}, {TM = 4, TN = 64}}},
    {name = "group", values = {{lx = 1, ly = 1}, {lx = 2, ly = 2}, {lx = 4, ly = 1},
                               {lx = 1, ly = 4}, {lx = 8, ly = 2}}},
    {name = "fma", values = {{fma = true}, {fma = false}}},
  }
end

-- Coordinate descent from start at m x n x k within the time budget.
local function sweep(variant, start, m, n, k, deadline)
  local best, best_tf = start, try(variant, start, m, n, k)
  local axes = variant == "reg" and reg_axes() or packed_axes()
  for pass = 1, 2 do
    local improved = false
    for _, axis in ipairs(axes) do
      for _, change in ipairs(axis.values) do
        if gpu.now() > deadline then
          print(("sweep: budget spent (pass %d, at %s)"):format(pass, axis.name))
          return best, best_tf
        end
        local p = copy(best, change)
        local tf = try(variant, p, m, n, k)
        if tf > best_tf * 1.005 then best, best_tf, improved = p, tf, true end
      end
    end
    if not improved then break end
  end
  return best, best_tf
end

local variant = opt.variant
local base = matmul.param_set(dev, variant, t)
if opt.start then base = assert(load("return " .. opt.start, "--start", "t", {}))() end
local t0 = gpu.now()
local small_budget = opt.small > 0 and opt.budget * 0.2 or 0
local best, best_tf = sweep(variant, base, opt.size, opt.size, opt.size,
                            t0 + opt.budget - small_budget)
print(("BEST %d %.2f TFLOP/s %s"):format(opt.size, best_tf, key_of(best)))

local small, small_tf
if opt.small > 0 and variant == "reg" then
  local sbase = matmul.param_set(dev, "small", t)
  if next(sbase) == nil then sbase = copy(best) end
  small, small_tf = sweep(variant, sbase, opt.small, opt.small, opt.small, t0 + opt.budget)
  local big_tf = try(variant, best, opt.small, opt.small, opt.small)
  print(("BEST %d %.2f TFLOP/s %s (the large set gives %.2f)"):format(opt.small, small_tf,
        key_of(small), big_tf))
end

-- On NVIDIA: registers and local memory of the winners from their build
-- logs (-cl-nv-verbose), and from those how many of their work-groups fit
-- on one compute unit (65536 registers, 2048 work-items and about 228 KiB
-- of shared memory each): groups_per_cu, which lets matmul split K when
-- the last wave of work-groups would run nearly empty.
local function ptxas(pl, label)
  local prog = dev:build(matmul.source("reg"),
                         {defines = pl.defines, options = pl.options .. " -cl-nv-verbose"})
  local part = prog.log:match("entry function 'matmul_reg'.-\n(.-)\n[^\n]*Compile time") or ""
  local regs = tonumber(part:match("Used (%d+) registers"))
  local smem = tonumber(part:match("(%d+) bytes smem")) or 0
  local spills = part:match("(%d+ bytes spill stores, %d+ bytes spill loads)") or "?"
  print(("PTXAS %s: %s registers, %d bytes of local memory, %s"):format(label,
        tostring(regs), smem, spills))
  return regs, smem
end

local function occupancy(p, name)
  local pl = matmul.plan(dev, opt.size, opt.size, opt.size, t, variant, p)
  local regs, smem = ptxas(pl, name .. " winner")
  if not regs then return nil end
  local nt = pl.local_size[1] * pl.local_size[2]
  local occ = math.min(65536 // (regs * nt), 2048 // nt, (228 * 1024) // math.max(smem + 1024, 1))
  print(("%s: %d work-items a group: %d group(s) per compute unit"):format(name, nt, occ))
  return occ >= 1 and occ or nil
end
if nv and variant == "reg" then
  best.groups_per_cu = occupancy(best, "large")
  if small then small.groups_per_cu = occupancy(small, "small") end
end

-- The winner at each verify size (the small set where matmul would use it),
-- as matmul picks the split of K, and without a split where it splits.
for _, s in ipairs(verify) do
  local m, n, k = dims(s)
  local p = best
  if small and m and math.ceil(m / best.BM) * math.ceil(n / best.BN) < dev.compute_units then
    p = small
  end
  local pl = matmul.plan(dev, m, n, k, t, variant, p)
  if nv and variant == "reg" and (m % p.BM ~= 0 or n % p.BN ~= 0 or k % p.BK ~= 0) then
    ptxas(pl, "at " .. s)
  end
  local tf, ms = measure(variant, p, m, n, k, opt.reps)
  if tf then
    print(("MATMUL %s %.2f TFLOP/s %.3f ms (%s set, %d slice(s) of K)"):format(s, tf, ms,
          p == small and "small" or "large", pl.slices or 1))
  else
    print(("MATMUL %s error: %s"):format(s, ms))
  end
  if (pl.slices or 1) > 1 then
    local tf1, ms1 = measure(variant, copy(p, {splitk = 1}), m, n, k, opt.reps)
    print(("MATMUL %s %.2f TFLOP/s %.3f ms without splitting K"):format(s, tf1 or -1, ms1 or -1))
  end
end

-- The entry for matmul.params.
local lines = {("  [%q] = {   -- %s, %s; bench/gpu/tune_matmul.lua, %.1f TFLOP/s at %d")
               :format(dev.name, dev.platform, dev.driver_version, best_tf, opt.size)}
local function entry(name, p)
  local q = copy(p)
  q.double = nil
  lines[#lines + 1] = ("    %s = %s,"):format(name, key_of(q))
end
entry(variant, best)
if small then entry("small", small) end
lines[#lines + 1] = "  },"
local text = table.concat(lines, "\n")
print("entry for matmul.params (lua/luagpu/matmul/params.lua):")
print(text)
if opt.out then
  local f = assert(io.open(opt.out, "w"))
  f:write(text, "\n")
  f:close()
end
