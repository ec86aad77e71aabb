-- luagpu.matmul.mma: matmul's precisions "tf32" and "3xtf32" on NVIDIA's
-- tensor cores (kernels/matmul_mma.cl: inline-PTX mma.sync with TF32
-- operands, float sums).
--
-- One of matmul's backends (init.lua walks them: wgmma, mma, gemv, fp32):
--
--   M.probe(dev [, c])   {ok = true} where this backend runs call c on dev,
--                        else {ok = false, why =}; without c, whether dev
--                        has the path (once per device)
--   M.steps(c)           the steps of call c: pack_a, pack_b, matmul_mma
--   M.tiles(c)           the tiles of c's precision, checked (raises)
--   M.path(dev [, precision [, type]])      which kernels a product runs
--   M.params, M.emulated, M.build_options, M.local_bytes_of, M.programs_of
--
-- A device has the path when it is an NVIDIA GPU, the probe program (inline
-- PTX: cvt.rna.tf32.f32 and mma.sync) builds, and its 16 x 8 x 8 product
-- comes back right.

local H = require "luagpu.core.check"
local PR = require "luagpu.core.programs"
local ST = require "luagpu.core.steps"
local T = require "luagpu.matmul.tc"
local TP = require "luagpu.matmul.params"
local wgmma = require "luagpu.matmul.wgmma"   -- for path: Hopper's backend comes first

local tostring, ipairs, type, pcall = tostring, ipairs, type, pcall
local show, integer = H.show, H.integer

local M = {}

-- The tile parameters per precision (params.lua): scripts that tune may
-- change them, and every product checks them.
M.params = TP.mma

-- With emulated true, devices without tensor cores run the tensor-core
-- kernels too, every mma emulated from local memory (slow: for the specs,
-- which check the packing and the tiles on PoCL this way).
M.emulated = false

local PRECISIONS = {fp32 = true, tf32 = true, ["3xtf32"] = true}

------------------------------------------------------------------ the probe

-- Per device: {ok = true, keyword = "asm" | "__asm__"} or {ok = false, why =}.
local probed = ST.device_cache()
local EMULATED = {ok = true, emulated = true}

-- Runs the probe program prog on dev; returns nil or why it failed.
local function check_probe(dev, prog)
  local a, b, want = T.probe_data(16, 8, 8)
  local A = dev:buffer("float", 128, {host = a})
  local B = dev:buffer("float", 64, {host = b})
  local C = dev:buffer("float", 128)
  prog.mma_probe(A, B, C):run({32}, {32})
  return T.probe_mismatch(C:get(), want)
end

-- The device part of the probe: inline PTX builds with one of the two
-- keywords, and a small product comes back exact.
local function run_probe(dev)
  local err
  for _, kw in ipairs{"asm", "__asm__"} do
    local ok, prog = pcall(PR.get, dev, {family = "matmul", file = "mma_probe.cl",
                                         defines = {LG_ASM = kw}})
    if ok then
      local why = check_probe(dev, prog)
      return why and {ok = false, why = why} or {ok = true, keyword = kw}
    end
    err = err or tostring(prog)
  end
  return {ok = false, why = "the inline-PTX probe (mma.sync with TF32) did not build: " ..
                           (err:match("[^\n]*") or err)}
end

local function probe(dev) return T.probed(probed, dev, run_probe) end

-- M.probe(dev [, c]): see the header. With emulated on, a device without
-- the path runs it too ({ok = true, emulated = true}).
function M.probe(dev, c)
  if c and not T.wants(c) then return T.NOT_WANTED end
  local p = probe(dev)
  if c and not p.ok and M.emulated then return EMULATED end
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
  local what = precision == "3xtf32" and "3 TF32 products per step" or "TF32 operands"
  if wgmma.emulated then
    return precision .. ": the wgmma kernels, each wgmma emulated (matmul_wgmma.emulated)"
  end
  if wgmma.probe(dev).ok then return precision .. ": tensor cores (wgmma, " .. what .. ")" end
  local p = probe(dev)
  if p.ok then
    return precision .. ": tensor cores (mma.sync, " .. what .. ")"
  end
  if M.emulated then
    return precision .. ": the tensor-core kernels, each mma emulated (matmul_mma.emulated; " ..
           "no tensor-core path: " .. p.why .. ")"
  end
  return "fp32: matmul's float kernels (no tensor-core path: " .. p.why .. ")"
end

------------------------------------------------------------------ steps

-- Bytes of local memory of tiles v (matmul_mma.cl: each of its stages holds
-- a step of A and of B, twice for 3xTF32).
local function local_bytes_of(v, three)
  return v.stages * (three and 2 or 1) * 4 * (v.bm + v.bn) * v.bk
end
M.local_bytes_of = local_bytes_of

local function check_params(fn, precision, p, dev)
  if type(p) ~= "table" then
    H.fail(fn, "matmul_mma.params[%q]: expected a table, got %s", precision, H.typename(p))
  end
  local v = {}
  for _, name in ipairs{"bm", "bn", "bk", "wm", "wn", "stages"} do
    local x = integer(p[name])
    if not (x and x > 0 and x <= 4096) then
      H.fail(fn, "matmul_mma.params[%q].%s: expected an integer from 1 to 4096, got %s",
             precision, name, show(p[name]))
    end
    v[name] = x
  end
  if v.bm % v.wm ~= 0 or v.bn % v.wn ~= 0 or v.wm % 16 ~= 0 or v.wn % 16 ~= 0
     or v.bk % 8 ~= 0 or v.stages < 2 or v.stages > 4 then
    H.fail(fn, "matmul_mma.params[%q]: bm %d, bn %d, bk %d, wm %d, wn %d, stages %d do not " ..
           "make a tiling (wm | bm, wn | bn, 16 | wm, 16 | wn, 8 | bk, stages 2 to 4)",
           precision, v.bm, v.bn, v.bk, v.wm, v.wn, v.stages)
  end
  local nt = 32 * (v.bm // v.wm) * (v.bn // v.wn)
  if nt > dev.max_work_group_size then
    H.fail(fn, "matmul_mma.params[%q]: %d work-items per group, %s takes at most %d",
           precision, nt, dev.name, dev.max_work_group_size)
  end
  if (v.bm * v.bk // 4) % nt ~= 0 or (v.bn * v.bk // 4) % nt ~= 0 then
    H.fail(fn, "matmul_mma.params[%q]: the %d work-items of a group must copy whole float4s " ..
           "of a step (bm * bk / 4 = %d and bn * bk / 4 = %d)", precision, nt,
           v.bm * v.bk // 4, v.bn * v.bk // 4)
  end
  v.nt = nt
  local local_bytes = local_bytes_of(v, precision == "3xtf32")
  if local_bytes > dev.local_mem_size then
    H.fail(fn, "matmul_mma.params[%q]: the tiles need %d bytes of local memory, %s has %d",
           precision, local_bytes, dev.name, dev.local_mem_size)
  end
  v.trunc = p.trunc and true or false
  local r = p.maxrreg
  if r ~= nil and r ~= false then
    r = integer(r)
    if not (r and r >= 16 and r <= 255) then
      H.fail(fn, "matmul_mma.params[%q].maxrreg: expected false or an integer from 16 to 255, " ..
             "got %s", precision, show(p.maxrreg))
    end
  end
  v.maxrreg = r
  return v
end

-- Per device: the programs built (for programs_of), and the packed
-- operands' scratch buffers.
local programs = ST.device_cache()
local scratches = ST.device_cache()

local function program(dev, defines)
  local options = M.build_options or ""
  local bad = type(options) ~= "string" and show(options) or H.not_cl_option(options)
  if bad then
    H.fail("matmul", "matmul.mma.build_options: expected OpenCL compiler options (-cl-...), " ..
           "got %s", type(options) == "string" and show(bad) or bad)
  end
  if defines.MAXRREG then options = options .. " -cl-nv-maxrregcount=" .. defines.MAXRREG end
  local prog = PR.get(dev, {family = "matmul", file = "matmul_mma.cl", defines = defines,
                            options = options})
  T.record(programs, dev, T.key_of(defines), prog)
  return prog
end

-- M.tiles(c): the tiles of c's precision (M.params) checked against each
-- other and c.dev. matmul checks them also for a product that asked for
-- the tensor cores on a device without any, so that a script's tiles err on
-- every machine.
function M.tiles(c)
  local precision = c.opts.precision
  return check_params("matmul", precision, M.params[precision], c.dev)
end

-- The steps (as core/steps runs them) of call c ({A, offA, B, offB, C,
-- offC, m, n, k, dev, opts.precision, trans_a, trans_b, alpha, beta}) on
-- the tensor cores: pack_a and pack_b into scratch buffers, then
-- matmul_mma after both. M.probe(c.dev, c) said yes.
function M.steps(c)
  local m, n, k, beta = c.m, c.n, c.k, c.beta
  local v = M.tiles(c)
  local p = probe(c.dev)
  local three = c.opts.precision == "3xtf32"
  local defines = {BM = v.bm, BN = v.bn, BK = v.bk, WM = v.wm, WN = v.wn, STAGES = v.stages,
                   MAIN = 1}
  if p.ok then defines.LG_ASM = p.keyword else defines.LG_NO_PTX = 1 end
  if three then defines.THREE = 1 end
  if v.trunc then defines.TRUNC = 1 end
  if v.maxrreg then defines.MAXRREG = v.maxrreg end   -- a build option, in the key
  if beta ~= 0 then defines.BETA = 1 end
  if c.trans_a then defines.TRANS_A = 1 end
  if c.trans_b then defines.TRANS_B = 1 end
  local prog = program(c.dev, defines)
  local sc = {entries = ST.device_entries(scratches, c.dev)}
  local Ap, As, Bp, Bs, na, nb, ksteps = T.packed_operands(sc, c, v.bm, v.bn, v.bk, three)
  local lda = c.trans_a and m or k
  local ldb = c.trans_b and k or n
  local gx, gy = (n + v.bn - 1) // v.bn, (m + v.bm - 1) // v.bm
  return {{prog.pack_a(m, k, c.A, c.offA, lda, ksteps, Ap, As),
           {global = {na}, local_size = {T.pack_group(na)}}},
          {prog.pack_b(k, n, c.B, c.offB, ldb, ksteps, Bp, Bs),
           {global = {nb}, local_size = {T.pack_group(nb)}}},
          {prog.matmul_mma(m, n, ksteps, Ap, As, Bp, Bs, c.C, c.offC, c.alpha, beta),
           {global = {gx * v.nt, gy}, local_size = {v.nt, 1}}, {1, 2}},
          scratch = sc}
end

-- M.programs_of(dev): the programs built on dev so far, by define string
-- (for benchmarks that read their build logs).
function M.programs_of(dev)
  return T.programs_in(programs, dev)
end

return M
