-- luagpu.matmul.fp32: matmul's fp32 backend, the last of its list: the
-- fp32 (and fp64) kernels of the variants (plan.lua, variant_*.lua), with
-- the BLAS extras (blas.lua) around them for trans_a, trans_b, alpha, beta
-- and batches. It runs every call that reaches it.
--
--   F.probe(dev, c)     {ok = true}
--   F.steps(c)          the steps of call c, and the plan they follow
--   F.program(dev, pl)  the program of plan pl, built on first use
--
-- c is matmul's checked call (init.lua); c.entries its device's entries
-- (scratch buffers); c.split_edges matmul.split_edges.

local PR = require "luagpu.core.programs"
local ST = require "luagpu.core.steps"
local P = require "luagpu.matmul.plan"
local X = require "luagpu.matmul.blas"

local next = next

local F = {}

local YES = {ok = true}

function F.probe()
  return YES
end

function F.program(dev, pl)
  return PR.get(dev, P.recipe(pl))
end
local program = F.program

-- The plan of call c and its program. A plan whose kernels do not take its
-- work-groups (a core-and-edges plan whose edge kernels may not) is planned
-- again with the edges in the core's kernel.
local function plan_and_program(c)
  local off, o = {c.offA, c.offB, c.offC}, c.opts
  local pl = P.plan(c.dev, c.m, c.n, c.k, c.t, off, o.variant, o.params, c.split_edges)
  local prog = program(c.dev, pl)
  if not P.fits(pl, prog) then
    local override = {edge = 0}
    for f, v in next, o.params or {} do
      if f ~= "edge" then override[f] = v end
    end
    pl = P.plan(c.dev, c.m, c.n, c.k, c.t, off, o.variant, override, c.split_edges)
    prog = program(c.dev, pl)
  end
  return pl, prog
end

-- The steps of call c with trans_a, trans_b, alpha or beta, or batched,
-- and their plan: transposed operands copied into cached scratch buffers
-- (rows made columns, per matrix), the product into C (into scratch when
-- beta is not 0), then the epilogue (C = alpha * product + beta * C, or
-- C = alpha * C).
local function blas(c)
  local entries = c.entries
  local m, n, k, nb = c.m, c.n, c.k, c.batch
  local p = {}
  for f, v in next, c do p[f] = v end
  local pre, post, extra = {}, {}, {}
  local count = c.count or {1, 1, 1}
  p.sA = count[1] > 1 and m * k or 0
  p.sB = count[2] > 1 and k * n or 0
  p.sC = m * n
  if c.trans_a then
    local step, S, key = X.transpose(entries, c, "trans_a", k, m, c.A, c.offA, p.sA, count[1])
    pre[#pre + 1], p.A, p.offA, extra[key] = step, S, 0, S
  end
  if c.trans_b then
    local step, S, key = X.transpose(entries, c, "trans_b", n, k, c.B, c.offB, p.sB, count[2])
    pre[#pre + 1], p.B, p.offB, extra[key] = step, S, 0, S
  end
  local total = (nb or 1) * m * n
  if c.beta ~= 0 then
    local T = ST.scratch_buffer(entries, c.dev, "blas " .. c.t .. " product", c.t, total)
    extra["blas " .. c.t .. " product"] = T
    p.C, p.offC = T, 0
    post[1] = X.axpby(entries, c, total, T, c.C, c.offC)
  elseif c.alpha ~= 1 then
    post[1] = X.scale(entries, c, total, c.alpha, c.C, c.offC)
  end
  local pl, prog
  if nb then
    local o = c.opts
    pl = P.plan(c.dev, m, n, k, c.t, {p.offA, p.offB, p.offC}, o.variant, o.params, false, nb)
    prog = program(c.dev, pl)
  else
    pl, prog = plan_and_program(p)
  end
  local main = P.launcher(pl)(pl, prog, p)
  return X.compose(entries, pre, main, post, extra), pl
end

-- The steps of call c, and their plan (for the memo's snapshot of
-- matmul.params).
function F.steps(c)
  if c.batch or c.trans_a or c.trans_b or c.alpha ~= 1 or c.beta ~= 0 then return blas(c) end
  local pl, prog = plan_and_program(c)
  return P.launcher(pl)(pl, prog, c), pl
end

return F
