-- luagpu.matmul.wgmma: matmul's precisions "tf32" and "3xtf32" on Hopper's
-- warpgroup tensor-core instructions (kernels/matmul_wgmma.cl:
-- wgmma.mma_async, PTX target sm_90a, operands from local memory).
--
-- NVIDIA's OpenCL compiler targets sm_90, which has no wgmma, but its
-- driver loads PTX for sm_90a as a program binary. So a program is built
-- twice: once from the source, whose wgmma instructions are PTX comments
-- naming their registers; then from that build's PTX, the comments
-- rewritten into the instructions and the target into sm_90a (patch below).
--
-- The first of matmul's backends (init.lua walks them: wgmma, mma, gemv,
-- fp32):
--
--   M.probe(dev [, c])   {ok = true} where this backend runs call c on dev,
--                        else {ok = false, why =}; without c, whether dev
--                        has the path (once per device)
--   M.steps(c)           the steps of call c: pack A, pack B, matmul_wgmma
--   M.patch(ptx, bn)     the PTX rewrite (below)
--   M.params, M.emulated, M.local_limit, M.local_bytes_of, M.programs_of
--
-- A device has this path when the probe (a 64 x 8 x 16 product of small
-- integers through the whole chain: build, patch, load, pack, wgmma) comes
-- back exact.

local H = require "luagpu.core.check"
local PR = require "luagpu.core.programs"
local ST = require "luagpu.core.steps"
local T = require "luagpu.matmul.tc"
local TP = require "luagpu.matmul.params"

local format, tostring, ipairs, type, pcall, error = string.format, tostring, ipairs, type,
                                                     pcall, error
local concat = table.concat
local show, integer = H.show, H.integer

local M = {}

-- The tile parameters per precision (params.lua).
M.params = TP.wgmma

-- Local memory a work-group of this path may take, in bytes. NVIDIA's
-- OpenCL reports 48 KB (CL_DEVICE_LOCAL_MEM_SIZE) but runs these programs
-- with up to the 227 KB an sm_90 work-group can have; the defaults take 80
-- (tf32) and 192 KB (3xtf32).
M.local_limit = 227 * 1024

-- With emulated true, any device runs these kernels, each wgmma emulated
-- from local memory (slow: for the specs on PoCL).
M.emulated = false

------------------------------------------------------------------ the PTX

-- The PTX text in a program's binary, or nil.
local function ptx_of(prog)
  local bin = prog.binary
  local at = bin:find(".version", 1, true)
  if not at then return nil end
  local ptx = bin:sub(at)
  local stop = ptx:find("\0", 1, true)
  return stop and ptx:sub(1, stop - 1) or ptx
end

-- M.patch(ptx, bn): the PTX with matmul_wgmma.cl's comments made wgmma
-- instructions (N = bn) and the target sm_90a; or nil and why not.
function M.patch(ptx, bn)
  if type(ptx) ~= "string" then
    H.fail("matmul_wgmma.patch", "argument #1: expected the PTX text, got %s", H.typename(ptx))
  end
  local n8 = integer(bn)
  if not (n8 and n8 >= 8 and n8 <= 256 and n8 % 8 == 0) then
    H.fail("matmul_wgmma.patch", "argument #2: expected N of the wgmma (8 to 256, a " ..
           "multiple of 8), got %s", show(bn))
  end
  local out, n = ptx:gsub("(%.target%s+sm_90)([,%s])", "%1a%2", 1)
  if n ~= 1 then
    return nil, "the driver's PTX is not for sm_90 (" ..
                (ptx:match("%.target%s+([%w_]+)") or "no .target") .. ")"
  end
  local mmas
  out, mmas = out:gsub("//LGWG_MMA([01]) (%b{}), ([%%%w_]+), ([%%%w_]+);",
    function(scale, d, a, b)
      return format("{\n.reg .pred lgp;\nsetp.ne.b32 lgp, %s, 0;\n" ..
                    "wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32 %s, %s, %s, lgp, 1, 1;\n}",
                    scale, bn, d, a, b)
    end)
  if mmas == 0 then return nil, "no wgmma in the PTX" end
  out = out:gsub("//LGWG_FENCE[^\n]*", "wgmma.fence.sync.aligned;")
  out = out:gsub("//LGWG_COMMIT[^\n]*", "wgmma.commit_group.sync.aligned;")
  out = out:gsub("//LGWG_WAIT([01])[^\n]*", "wgmma.wait_group.sync.aligned %1;")
  if out:find("//LGWG", 1, true) then return nil, "a wgmma comment the patch does not know" end
  return out
end

-- The operand lists of the comments, for bn / 2 accumulators a work-item:
-- WG_x_OUT for each register set x the kernel hands a wgmma (acc, d, d0,
-- d1; dd is d0 and d1, for a wait that completes either).
local function operand_lists(nacc)
  local list, outs = {}, {}
  for i = 0, nacc - 1 do list[#list + 1] = "%" .. i end
  local function out(name)
    local t = {}
    for i = 0, nacc - 1 do t[#t + 1] = format('"+f"(%s[%d])', name, i) end
    return concat(t, ", ")
  end
  for _, name in ipairs{"acc", "d", "d0", "d1"} do
    outs[#outs + 1] = format("#define WG_%s_OUT %s\n", name, out(name))
  end
  outs[#outs + 1] = format("#define WG_dd_OUT %s, %s\n", out("d0"), out("d1"))
  return format('#define WG_ACC_LIST "{%s}"\n%s#define WG_TAIL ", %%%d, %%%d;"\n#line 1\n',
                concat(list, ", "), concat(outs), nacc, nacc + 1)
end

------------------------------------------------------------------ programs

-- Per device: the programs built (for programs_of), and the packed
-- operands' scratch buffers.
local programs = ST.device_cache()
local scratches = ST.device_cache()

-- The program of defines (emulated: every wgmma from local memory, a plain
-- build), built on first use: on the GPU a build of the source, its PTX
-- patched (M.patch, N = defines.BN) and loaded as a binary.
local function program(dev, defines, emulated)
  local key = T.key_of(defines) .. (emulated and " emulated" or "")
  local r = {family = "matmul", file = "matmul_wgmma.cl", defines = defines}
  if emulated then
    defines.LG_NO_PTX = 1
  else
    local bn = defines.BN
    r.prefix = operand_lists(bn // 2)
    r.make = function(d, src)
      local ptx = ptx_of(d:build(src))
      if not ptx then error("no PTX in the program's binary", 0) end
      local patched, why = M.patch(ptx, bn)
      if not patched then error(why, 0) end
      return d:build_binary(patched)
    end
  end
  local prog = PR.get(dev, r)
  T.record(programs, dev, key, prog)
  return prog
end

------------------------------------------------------------------ parameters

local function local_bytes_of(v, three)
  return v.stages * (three and 2 or 1) * 4 * (64 * v.wgs + v.bn) * v.bk
         + (v.bulk and 16 * v.stages or 0)
end
M.local_bytes_of = local_bytes_of

local LIMITS = {bn = 256, bk = 256, wgs = 4, stages = 8, group = 1024}

local function check_params(fn, precision, p, dev, emulated)
  if type(p) ~= "table" then
    H.fail(fn, "matmul_wgmma.params[%q]: expected a table, got %s", precision, H.typename(p))
  end
  local v = {}
  for _, name in ipairs{"bn", "bk", "wgs", "stages"} do
    local x = integer(p[name])
    if not (x and x > 0 and x <= LIMITS[name]) then
      H.fail(fn, "matmul_wgmma.params[%q].%s: expected an integer from 1 to %d, got %s",
             precision, name, LIMITS[name], show(p[name]))
    end
    v[name] = x
  end
  local group = p.group == nil and 1 or integer(p.group)
  if not (group and group >= 1 and group <= LIMITS.group) then
    H.fail(fn, "matmul_wgmma.params[%q].group: expected an integer from 1 to %d or nil, got %s",
           precision, LIMITS.group, show(p.group))
  end
  v.group = group
  local wait = p.wait == nil and 0 or integer(p.wait)   -- (false is no 0)
  if wait ~= 0 and wait ~= 1 then
    H.fail(fn, "matmul_wgmma.params[%q].wait: expected 0 or 1, got %s", precision, show(p.wait))
  end
  v.wait = wait
  local bulk = p.bulk
  if bulk ~= nil and type(bulk) ~= "boolean" then
    H.fail(fn, "matmul_wgmma.params[%q].bulk: expected a boolean or nil, got %s", precision,
           show(bulk))
  end
  v.bulk = bulk and not emulated or nil
  if v.bn % 8 ~= 0 or v.bk % 8 ~= 0 or v.stages < 2 + wait then
    H.fail(fn, "matmul_wgmma.params[%q]: bn %d, bk %d, stages %d, wait %d do not make a " ..
           "tiling (8 | bn, 8 | bk, stages at least 2 + wait)", precision, v.bn, v.bk,
           v.stages, wait)
  end
  v.nt = 128 * v.wgs
  if v.nt > dev.max_work_group_size then
    H.fail(fn, "matmul_wgmma.params[%q]: %d work-items per group, %s takes at most %d",
           precision, v.nt, dev.name, dev.max_work_group_size)
  end
  local limit = emulated and dev.local_mem_size or M.local_limit
  local bytes = local_bytes_of(v, precision == "3xtf32")
  if bytes > limit then
    H.fail(fn, "matmul_wgmma.params[%q]: the tiles need %d bytes of local memory, %s has %d",
           precision, bytes, dev.name, limit)
  end
  return v
end

local function defines_of(v, three)
  return {BN = v.bn, BK = v.bk, WGS = v.wgs, STAGES = v.stages, WGWAIT = v.wait, MAIN = 1,
          THREE = three and 1 or nil, BULK = v.bulk and 1 or nil, GROUP_M = v.group or 1}
end

-- The enqueue steps of op(A) (m x k) times op(B) (k x n) into C with tiles
-- v on prog: pack A, pack B, then the product after both. sc holds the
-- packed copies (scratch buffers of dev).
local function product_steps(prog, v, three, sc, c, alpha, beta)
  local m, n, k = c.m, c.n, c.k
  local bm = 64 * v.wgs
  local Ap, As, Bp, Bs, na, nb, ksteps = T.packed_operands(sc, c, bm, v.bn, v.bk, three)
  -- op(A) rows along K unless A is stored transposed; op(B)^T's rows (B's
  -- columns) along K only when B is
  local lda = c.trans_a and m or k
  local ldb = c.trans_b and k or n
  local groups = {(n + v.bn - 1) // v.bn * v.nt, (m + bm - 1) // bm}
  -- the packs' launches: (2 R, K's chunks of 8, blocks of R rows)
  local k8 = ksteps * v.bk // 8
  return {{prog.pack(m, k, c.A, c.offA, lda, c.trans_a and 0 or 1, bm, ksteps, Ap, As),
           {global = {2 * bm, k8, na // (2 * bm * k8)},
            local_size = {T.pack_group(2 * bm), 1, 1}}},
          {prog.pack(n, k, c.B, c.offB, ldb, c.trans_b and 1 or 0, v.bn, ksteps, Bp, Bs),
           {global = {2 * v.bn, k8, nb // (2 * v.bn * k8)},
            local_size = {T.pack_group(2 * v.bn), 1, 1}}},
          {prog.matmul_wgmma(m, n, ksteps, Ap, As, Bp, Bs, c.C, c.offC, alpha, beta),
           {global = groups, local_size = {v.nt, 1}}, {1, 2}},
          scratch = sc}
end

------------------------------------------------------------------ the probe

local probed = ST.device_cache()
local PROBE = {bn = 8, bk = 8, wgs = 1, stages = 2, wait = 0, nt = 128}

-- Runs the probe's 64 x 8 x 16 product on dev; nil, or why it failed.
local function run_probe(dev)
  local m, n, k = 64, 8, 16
  local a, b, want = T.probe_data(m, n, k)
  local prog = program(dev, defines_of(PROBE, false), false)
  local C = dev:buffer("float", m * n)
  local c = {m = m, n = n, k = k, dev = dev, A = dev:buffer("float", m * k, {host = a}), offA = 0,
             B = dev:buffer("float", k * n, {host = b}), offB = 0, C = C, offC = 0}
  local sc = {entries = {}}
  for _, step in ipairs(product_steps(prog, PROBE, false, sc, c, 1, 0)) do
    step[1]:run(step[2].global, step[2].local_size)
  end
  local got = C:get()
  for _, name in ipairs{"a", "b"} do sc[name]:release() end
  return T.probe_mismatch(got, want)
end

-- Per device: {ok = true} or {ok = false, why =}.
local function probe(dev)
  return T.probed(probed, dev, function()
    local ok, why = pcall(run_probe, dev)
    if ok then return why and {ok = false, why = why} or {ok = true} end
    return {ok = false, why = "the wgmma probe did not run: " ..
                             (tostring(why):match("[^\n]*") or tostring(why))}
  end)
end

local EMULATED = {ok = true, emulated = true}

-- M.probe(dev [, c]): see the header. With emulated on, every device runs
-- the kernels, each wgmma emulated ({ok = true, emulated = true}).
function M.probe(dev, c)
  if c == nil then return probe(dev) end
  if not T.wants(c) then return T.NOT_WANTED end
  if M.emulated then return EMULATED end
  return probe(dev)
end

------------------------------------------------------------------ steps

-- M.steps(c): the steps of call c (M.probe(c.dev, c) said yes).
function M.steps(c)
  local emulated = M.emulated
  local precision = c.opts.precision
  local three = precision == "3xtf32"
  local v = check_params("matmul", precision, M.params[precision], c.dev, emulated)
  local defines = defines_of(v, three)
  if c.beta ~= 0 then defines.BETA = 1 end
  local prog = program(c.dev, defines, emulated)
  local sc = {entries = ST.device_entries(scratches, c.dev)}
  return product_steps(prog, v, three, sc, c, c.alpha, c.beta)
end

-- M.programs_of(dev): the programs built on dev so far, by define string.
function M.programs_of(dev)
  return T.programs_in(programs, dev)
end

return M
