-- luagpu.matmul.blas: the BLAS extras of luagpu.matmul (internal to it), as
-- steps for luagpu.core.steps ({Call, {global =, local_size =}, after}):
-- transposing copies for trans_a and trans_b, the alpha / beta epilogues
-- (kernels/matmul_blas.cl), matrix-vector products (kernels/matmul_gemv.cl)
-- and the putting together of these around a product's own steps. It is
-- also matmul's "gemv" backend (probe, steps: see init.lua).
--
--   X.transpose(entries, c, which, rows, cols, buf, off, stride, count)
--   X.scale(entries, c, n, s, buf, off)        X.axpby(entries, c, n, T, buf, off)
--   X.gemv(entries, c)                         X.compose(entries, pre, main, post, scratch)
--   X.probe(dev, c), X.steps(c)                the gemv backend
--   X.programs_built                           the builds of these kernels
--
-- entries: matmul's per-device entries (scratch buffers); c: matmul's
-- checked call. The programs are built through luagpu.core.programs, family
-- "matmul" (so matmul.programs_built counts them too).

local PR = require "luagpu.core.programs"
local ST = require "luagpu.core.steps"
local T = require "luagpu.matmul.params"

local next, ipairs, pairs = next, ipairs, pairs
local min, max = math.min, math.max

local X = {programs_built = 0}

local TB = T.blas                 -- the tuned numbers (params.lua)
local TT, TR, GROUP = TB.tt, TB.tr, TB.group

local round_up, ceil_div = ST.round_up, ST.ceil_div

local function launch(global, lsz) return {global = global, local_size = lsz} end

local FILES = {["matmul_blas.cl"] = {"matmul_blas.cl"},
               ["matmul_gemv.cl"] = {"matmul_common.cl", "matmul_gemv.cl"}}

-- The program of kernel file `file` (the gemv one behind matmul_common.cl)
-- for element type t with defines, built once per device (and counted in
-- X.programs_built as well as in matmul's).
local function program(dev, t, file, defines)
  local d = {REAL = t}
  for k, v in pairs(defines or {}) do d[k] = v end
  local before = PR.built("matmul")
  local prog = PR.get(dev, {family = "matmul", files = FILES[file], defines = d,
                            options = "-cl-mad-enable"})
  X.programs_built = X.programs_built + PR.built("matmul") - before
  return prog
end

-- A cached scratch buffer of n elements of c.t, named `name`; returns it
-- and its key (for a steps list's scratch).
local function scratch(entries, c, name, n)
  local key = "blas " .. c.t .. " " .. name
  return ST.scratch_buffer(entries, c.dev, key, c.t, n), key
end

-- The largest power of 2 at most GROUP and the device's work-group size.
local function group_size(dev)
  local g = GROUP
  while g > dev.max_work_group_size and g > 1 do g = g // 2 end
  return g
end

------------------------------------------------------------------ transposes

-- The step that copies `count` matrices (stride elements apart; 0: one) of
-- rows x cols at buf[off] into scratch `which` ("trans_a", "trans_b") as
-- cols x rows, one after another; returns the step, the scratch buffer and
-- its key.
function X.transpose(entries, c, which, rows, cols, buf, off, stride, count)
  local prog = program(c.dev, c.t, "matmul_blas.cl")
  local S, key = scratch(entries, c, which, count * rows * cols)
  local step = {prog.blas_transpose(rows, cols, buf, off, stride, S),
                launch({round_up(cols, TT), ceil_div(rows, TT) * TR, count}, {TT, TR, 1})}
  return step, S, key
end

------------------------------------------------------------------ epilogues

-- C[off .. off+n-1] *= s.
function X.scale(entries, c, n, s, buf, off)
  local prog = program(c.dev, c.t, "matmul_blas.cl")
  local g = group_size(c.dev)
  return {prog.blas_scale(n, s, buf, off), launch({round_up(n, g)}, {g})}
end

-- C[off + i] = c.alpha * T[i] + c.beta * C[off + i], i < n.
function X.axpby(entries, c, n, T, buf, off)
  local prog = program(c.dev, c.t, "matmul_blas.cl")
  local g = group_size(c.dev)
  return {prog.blas_axpby(n, c.alpha, T, c.beta, buf, off), launch({round_up(n, g)}, {g})}
end

------------------------------------------------------------------ gemv

-- The widest vector (4, 2, 1) that divides every value given.
local function width(...)
  for _, w in ipairs{4, 2} do
    local ok = true
    for _, v in ipairs{...} do
      if v % w ~= 0 then ok = false end
    end
    if ok then return w end
  end
  return 1
end

-- y = alpha * A x + beta * y, A rows x K row-major at offA.
local function gemv_n(entries, c, rows, K, Am, offA, x, offX)
  local vw = width(K, offA, offX)
  local kv, g = K // vw, group_size(c.dev)
  local lx = TB.gemv_cpu_lx
  if c.dev.type ~= "cpu" then
    for _, row in ipairs(TB.gemv_lx) do
      if kv >= row[1] then lx = row[2]; break end
    end
  end
  lx = min(lx, g)
  local ry = g // lx
  local prog = program(c.dev, c.t, "matmul_gemv.cl", {VW = vw, LX = lx, RY = ry})
  return {{prog.gemv_n(rows, K, Am, offA, x, offX, c.C, c.offC, c.alpha, c.beta),
           launch({lx, round_up(rows, ry)}, {lx, ry})}}
end

-- The steps that add S slices' partial sums (P, S x cols) into y.
local function gemv_sum_step(prog, c, cols, slices, P)
  local g = group_size(c.dev)
  return {prog.gemv_sum(cols, slices, P, c.C, c.offC, c.alpha, c.beta),
          launch({round_up(cols, g)}, {g}), {1}}
end

-- gemv_t for CPUs: slices of K (gemv_cpu_slices per compute unit), each
-- streaming along its rows into its partial sums (gemv_t_rows), then
-- gemv_sum (4096^2 floats on PoCL: 0.89x the copy kernel's bandwidth,
-- against 0.07x for gemv_t's work-items walking down columns).
local function gemv_t_rows(entries, c, cols, K, Am, offA, x, offX)
  local prog = program(c.dev, c.t, "matmul_gemv.cl", {VW = 1, TX = 1, TY = 1})
  local slices = max(1, min(K, TB.gemv_cpu_slices * c.dev.compute_units))
  local kc = ceil_div(K, slices)
  slices = ceil_div(K, kc)
  local P, key = scratch(entries, c, "gemv", slices * cols)
  local steps = {{prog.gemv_t_rows(cols, K, kc, Am, offA, x, offX, P), launch({slices}, {1})},
                 gemv_sum_step(prog, c, cols, slices, P)}
  steps.scratch = {entries = entries, [key] = P}
  return steps
end

-- y = alpha * A^T x + beta * y, A stored K x cols row-major at offA: K cut
-- into slices when the columns alone make too few work-groups, their partial
-- sums then added by gemv_sum.
local function gemv_t(entries, c, cols, K, Am, offA, x, offX)
  if c.dev.type == "cpu" then return gemv_t_rows(entries, c, cols, K, Am, offA, x, offX) end
  local vw = width(cols, offA)
  local g = group_size(c.dev)
  local ty = TB.gemv_ty
  local tx = max(g // ty, 1)
  local prog = program(c.dev, c.t, "matmul_gemv.cl", {VW = vw, TX = tx, TY = ty})
  local gx = ceil_div(cols, tx * vw)
  local slices = ceil_div(TB.gemv_groups * c.dev.compute_units, gx)
  slices = max(1, min(slices, K // (ty * TB.gemv_min_rows)))
  local kc = ceil_div(K, slices)
  slices = ceil_div(K, kc)
  local main = launch({gx * tx, slices * ty}, {tx, ty})
  if slices == 1 then
    return {{prog.gemv_t(cols, K, kc, Am, offA, x, offX, c.C, c.offC, c.alpha, c.beta, 1, c.C),
             main}}
  end
  local P, key = scratch(entries, c, "gemv", slices * cols)
  local steps = {{prog.gemv_t(cols, K, kc, Am, offA, x, offX, c.C, c.offC, c.alpha, c.beta,
                              0, P), main},
                 gemv_sum_step(prog, c, cols, slices, P)}
  steps.scratch = {entries = entries, [key] = P}
  return steps
end

-- The steps of call c as a matrix-vector product: c.n == 1 (B a vector,
-- A the matrix), else c.m == 1 (A a vector, B the matrix: C^T = op(B)^T A^T).
function X.gemv(entries, c)
  if c.n == 1 then
    if c.trans_a then return gemv_t(entries, c, c.m, c.k, c.A, c.offA, c.B, c.offB) end
    return gemv_n(entries, c, c.m, c.k, c.A, c.offA, c.B, c.offB)
  end
  if c.trans_b then return gemv_n(entries, c, c.n, c.k, c.B, c.offB, c.A, c.offA) end
  return gemv_t(entries, c, c.n, c.k, c.B, c.offB, c.A, c.offA)
end

------------------------------------------------------------------ the backend

-- Whether call c on dev is a matrix-vector product (M or N 1, not batched)
-- that the gemv kernels run: {ok = true}, else {ok = false, why =}. A
-- forced variant or parameters send it to the fp32 kernels.
local YES = {ok = true}
local NOT_GEMV = {ok = false, why = "not a matrix-vector product"}
local FORCED = {ok = false, why = "opts.variant or opts.params given"}

function X.probe(_, c)
  if c.batch or not (c.n == 1 or c.m == 1) then return NOT_GEMV end
  local o = c.opts
  if o.variant or o.params then return FORCED end
  return YES
end

-- The steps of call c on the gemv kernels (no plan: nothing of
-- matmul.params is read).
function X.steps(c)
  return X.gemv(c.entries, c), nil
end

------------------------------------------------------------------ putting together

-- One steps list: pre (steps that follow only the call's waits: the
-- transposes), then main (a launcher's steps; those that followed only the
-- waits now follow every pre step), then post (each after the one before,
-- the first after main's last, which ends main), with the scratch of main
-- and `scratch` ({key = buffer}).
function X.compose(entries, pre, main, post, extra)
  local steps, np = {}, #pre
  local first = {}
  for i, s in ipairs(pre) do
    steps[i] = s
    first[i] = i
  end
  for i, s in ipairs(main) do
    local after = s[3]
    if after then
      local shifted = {}
      for j, d in ipairs(after) do shifted[j] = d + np end
      after = shifted
    elseif np > 0 then
      after = first
    end
    steps[np + i] = {s[1], s[2], after}
  end
  for _, s in ipairs(post) do
    local last = #steps
    steps[last + 1] = {s[1], s[2], {last}}
  end
  local sc, any = {entries = entries}, false
  for k, b in next, main.scratch or {} do
    if k ~= "entries" then sc[k], any = b, true end
  end
  for k, b in next, extra do sc[k], any = b, true end
  if any then steps.scratch = sc end
  return steps
end

return X
