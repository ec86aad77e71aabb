-- luagpu.matmul_mma: matmul's precisions "tf32" and "3xtf32" on NVIDIA's
-- tensor cores (kernels/matmul_mma.cl: inline-PTX mma.sync with TF32
-- operands, float sums).
--
-- matmul calls steps(c, precision) for a product of float operands that asks
-- for either precision; it returns the steps to enqueue, or nil where the
-- device has no tensor-core path (matmul then runs its fp32 kernels). A
-- device has one when it is an NVIDIA GPU, the probe program (inline PTX:
-- cvt.rna.tf32.f32 and mma.sync) builds, and its 16 x 8 x 8 product comes
-- back right. path(dev, precision) says which kernels a product runs.

local gpu = require "luagpu"
local H = require "luagpu.helper"

local format, tostring, ipairs, pairs, type = string.format, tostring, ipairs, pairs, type
local show, integer = H.show, H.integer

local M = {programs_built = 0}   -- the probe's builds and the kernels'

-- The tile parameters (matmul_mma.cl), per precision: work-group tile
-- bm x bn, step bk along K, warp tile wm x wn, stages (local buffers: 1 or
-- 2 filled through registers, 2 to 4 with async), async (cp.async copies
-- straight to local memory, where rows are 16-byte aligned; the register
-- path otherwise), trunc (split by cutting bits instead of rounding: faster
-- for tf32, about 2.7x its error), maxrreg (NVIDIA's register cap per
-- work-item, or false). Chosen by bench/gpu/mma.lua's sweep on an H200;
-- scripts that tune may change them, and every product checks them (a
-- product whose tiles need fewer buffers to fit, transposed ones, gets
-- fewer).
M.params = {
  tf32 = {bm = 128, bn = 128, bk = 16, wm = 64, wn = 64, stages = 3, trunc = false,
          maxrreg = false, async = true},
  ["3xtf32"] = {bm = 128, bn = 128, bk = 16, wm = 64, wn = 64, stages = 3, trunc = false,
                maxrreg = false, async = true},
}

local PRECISIONS = {fp32 = true, tf32 = true, ["3xtf32"] = true}

------------------------------------------------------------------ the probe

-- Per device: {ok = true, keyword = "asm" | "__asm__"} or {ok = false, why =}.
local probed = H.device_cache()

-- A 16 x 8 A and an 8 x 8 B of small integers (exact in TF32) and their
-- product, computed here.
local function probe_data()
  local a, b, c = {}, {}, {}
  for i = 1, 128 do a[i] = (i * 7) % 11 - 5 end
  for i = 1, 64 do b[i] = (i * 5) % 9 - 4 end
  for r = 0, 15 do
    for col = 0, 7 do
      local s = 0
      for k = 0, 7 do s = s + a[r * 8 + k + 1] * b[k * 8 + col + 1] end
      c[r * 8 + col + 1] = s
    end
  end
  return a, b, c
end

-- Runs the probe program prog on dev; returns nil or why it failed.
local function check_probe(dev, prog)
  local a, b, want = probe_data()
  local A = dev:buffer("float", 128, {host = a})
  local B = dev:buffer("float", 64, {host = b})
  local C = dev:buffer("float", 128)
  prog.mma_probe(A, B, C):run({32}, {32})
  local got = C:get()
  for i = 1, 128 do
    if got[i] ~= want[i] then
      return format("the probe's product is wrong (element %d: %s, expected %s)", i,
                    tostring(got[i]), tostring(want[i]))
    end
  end
end

local function probe(dev)
  local p = probed[dev]
  if p then return p end
  if dev.type ~= "gpu" or not tostring(dev.vendor):find("NVIDIA") then
    p = {ok = false, why = "not an NVIDIA GPU"}
  else
    local err
    for _, kw in ipairs{"asm", "__asm__"} do
      local ok, prog = pcall(dev.build, dev, gpu.kernel_source("matmul_mma.cl"),
                             {defines = {LG_ASM = kw}})
      if ok then M.programs_built = M.programs_built + 1 end
      if ok then
        local why = check_probe(dev, prog)
        p = why and {ok = false, why = why} or {ok = true, keyword = kw}
        break
      end
      err = err or tostring(prog)
    end
    p = p or {ok = false, why = "the inline-PTX probe (mma.sync with TF32) did not build: " ..
                                (err:match("[^\n]*") or err)}
  end
  probed[dev] = p
  return p
end

------------------------------------------------------------------ path

-- M.path(dev [, precision [, type]]): a line saying which kernels matmul
-- runs on dev for that precision (default "fp32") and element type
-- (default "float").
function M.path(dev, precision, t)
  local fn = "matmul.path"
  H.check_object(fn, "argument #1", dev, "Device")
  if precision == nil then precision = "fp32" end
  if not PRECISIONS[precision] then
    H.fail(fn, "argument #2: expected \"fp32\", \"tf32\" or \"3xtf32\", got %s", show(precision))
  end
  if t == nil then t = "float" end
  if t ~= "float" and t ~= "double" then
    H.fail(fn, "argument #3: expected \"float\" or \"double\", got %s", show(t))
  end
  if t == "double" then
    if precision ~= "fp32" then
      H.fail(fn, "argument #2: precision %s is for float operands, not double", precision)
    end
    return "fp64: matmul's double kernels"
  end
  if precision == "fp32" then return "fp32: matmul's float kernels" end
  local p = probe(dev)
  if p.ok then
    return precision .. ": tensor cores (mma.sync, " ..
           (precision == "3xtf32" and "3 TF32 products per step" or "TF32 operands") .. ")"
  end
  return "fp32: matmul's float kernels (no tensor-core path: " .. p.why .. ")"
end

------------------------------------------------------------------ steps

-- Bytes of local memory of tiles v with stages buffers (matmul_mma.cl's
-- layouts: A transposed or not, B likewise).
local function local_bytes_of(v, stages, trans_a, trans_b)
  local a = trans_a and v.bk * (v.bm + 4) or v.bm * (v.bk + (48 - v.bk % 32) % 32)
  local b = trans_b and v.bn * (v.bk + 4) or v.bk * v.bn
  return stages * 4 * (a + b)
end

local function check_params(fn, precision, p, dev)
  if type(p) ~= "table" then
    H.fail(fn, "matmul_mma.params[%q]: expected a table, got %s", precision, H.typename(p))
  end
  local v = {}
  for _, name in ipairs{"bm", "bn", "bk", "wm", "wn", "stages"} do
    local x = integer(p[name])
    if not (x and x > 0) then
      H.fail(fn, "matmul_mma.params[%q].%s: expected an integer > 0, got %s", precision, name,
             show(p[name]))
    end
    v[name] = x
  end
  local nt = 32 * (v.bm // v.wm) * (v.bn // v.wn)
  local local_bytes = local_bytes_of(v, v.stages, false, false)
  if v.bm % v.wm ~= 0 or v.bn % v.wn ~= 0 or v.wm % 16 ~= 0 or v.wn % 32 ~= 0
     or v.bk % 16 ~= 0 or (v.bm * v.bk // 4) % nt ~= 0 or (v.bn * v.bk // 4) % nt ~= 0
     or v.bm * v.bk < 4 * nt or v.bn * v.bk < 4 * nt
     or v.stages > (p.async and 4 or 2) or p.async and v.stages < 2 then
    H.fail(fn, "matmul_mma.params[%q]: bm %d, bn %d, bk %d, wm %d, wn %d, stages %d do not " ..
           "make a tiling (wm | bm, wn | bn, 16 | wm, 32 | wn, 16 | bk, stages 1 or 2 (2 to 4 " ..
           "with async), and the " ..
           "work-group's %d work-items load whole float4s of each tile)", precision, v.bm, v.bn,
           v.bk, v.wm, v.wn, v.stages, nt)
  end
  if nt > dev.max_work_group_size then
    H.fail(fn, "matmul_mma.params[%q]: %d work-items per group, %s takes at most %d",
           precision, nt, dev.name, dev.max_work_group_size)
  end
  if local_bytes > dev.local_mem_size then
    H.fail(fn, "matmul_mma.params[%q]: the tiles need %d bytes of local memory, %s has %d",
           precision, local_bytes, dev.name, dev.local_mem_size)
  end
  v.nt = nt
  v.trunc = p.trunc and true or false
  v.maxrreg = integer(p.maxrreg)
  v.async = p.async and true or false
  return v
end

-- Per device: programs by key.
local programs = H.device_cache()

local function program(dev, defines)
  local keys = {}
  for k, v in pairs(defines) do keys[#keys + 1] = k .. "=" .. tostring(v) end
  table.sort(keys)
  local key = table.concat(keys, " ")
  local entries = H.device_entries(programs, dev)
  local prog = entries[key]
  if not prog then
    local options = M.build_options or ""
    if defines.MAXRREG then options = options .. " -cl-nv-maxrregcount=" .. defines.MAXRREG end
    prog = dev:build(gpu.kernel_source("matmul_mma.cl"), {defines = defines, options = options})
    M.programs_built = M.programs_built + 1
    entries[key] = prog
  end
  return prog
end

local function check_number(what, v)
  if v == nil then return nil end
  if type(v) ~= "number" then
    H.fail("matmul", "option %s: expected a number, got %s", what, H.typename(v))
  end
  return v
end

-- The steps (as matmul's launchers make them) of call c ({A, offA, B, offB,
-- C, offC, m, n, k, t, dev, trans_a, trans_b, alpha, beta}) in precision
-- ("tf32" or "3xtf32") on the tensor cores; nil when c.dev has none.
function M.steps(c, precision)
  if c.t ~= "float" then
    H.fail("matmul", "option precision: %s is for float operands, got %s ones", precision, c.t)
  end
  local alpha = check_number("alpha", c.alpha) or 1
  local beta = check_number("beta", c.beta) or 0
  local v = check_params("matmul", precision, M.params[precision], c.dev)
  local p = probe(c.dev)
  if not p.ok then return nil end
  local m, n, k = c.m, c.n, c.k
  local defines = {LG_ASM = p.keyword, BM = v.bm, BN = v.bn, BK = v.bk, WM = v.wm, WN = v.wn}
  if precision == "3xtf32" then defines.THREE = 1 end
  if v.trunc then defines.TRUNC = 1 end
  if v.maxrreg then defines.MAXRREG = v.maxrreg end   -- a build option, in the key
  if beta ~= 0 then defines.BETA = 1 end
  -- float4 loads need each stored row's length and the offset in fours
  local a_row = c.trans_a and m or k
  local b_row = c.trans_b and k or n
  if c.trans_a then defines.TRANS_A = 1 end
  if c.trans_b then defines.TRANS_B = 1 end
  if a_row % 4 == 0 and c.offA % 4 == 0 then defines.VEC_A = 1 end
  if b_row % 4 == 0 and c.offB % 4 == 0 then defines.VEC_B = 1 end
  if n % 4 == 0 and c.offC % 4 == 0 then defines.VEC_C = 1 end
  -- as many local buffers as asked for and fit this layout (transposed
  -- tiles are larger); cp.async takes aligned rows and 2 buffers at least,
  -- the register path 1 or 2
  local fits = c.dev.local_mem_size
  local stages, async = v.stages, v.async and defines.VEC_A and defines.VEC_B
  if not async then stages = math.min(stages, 2) end
  while stages > 1 and local_bytes_of(v, stages, c.trans_a, c.trans_b) > fits do
    stages = stages - 1
  end
  if async and stages >= 2 then
    defines.ASYNC, defines.ASYNC_WAIT = 1, stages - 2
  end
  defines.STAGES = stages
  local prog = program(c.dev, defines)
  local call = prog.matmul_mma(m, n, k, c.A, c.offA, c.B, c.offB, c.C, c.offC, alpha, beta)
  local gx, gy = (n + v.bn - 1) // v.bn, (m + v.bm - 1) // v.bm
  return {{call, {global = {gx * v.nt, gy}, local_size = {v.nt, 1}}}}
end

-- M.programs_of(dev): the programs built on dev so far, by define string
-- (for benchmarks that read their build logs).
function M.programs_of(dev)
  local list = {}
  for k, v in pairs(H.device_entries(programs, dev)) do
    if type(k) == "string" then list[k] = v end
  end
  return list
end

return M
