-- luagpu.tensor.reduce: sum prod mean min max argmin argmax any all, of a
-- whole tensor (a Lua value) or along one dim (a tensor; keepdim keeps the
-- dim with size 1). Internal to luagpu.tensor; kernels/tensor_reduce.cl.
--
-- The tensor is made contiguous and seen as [outer, L, inner]: a dim with
-- inner == 1 (the last one) is reduced by `rows` (a work-group per row,
-- or per part of a row), any other by `cols` (a work-item per column,
-- coalesced). When there are too few rows or columns to fill the device,
-- the dim is cut into parts reduced apart, and a second kernel folds the
-- parts. Whole sums, mins and maxes of non-empty tensors go through
-- luagpu.reduce; the others are one row of all the elements.
--
--   R.methods          the reductions by name (luagpu.tensor makes them
--                      methods; x:min(y) and x:max(y) with a tensor y are
--                      the elementwise ops)
--   R.cols4_waves      see below (benchmarks set it)
--   R.warp             false: a row's work-items combine through local
--                      memory even where warp shuffles (inline PTX) build
--   R.programs_built   the tensor programs built so far (core/programs)

local H = require "luagpu.core.check"
local P = require "luagpu.core.programs"
local PTX = require "luagpu.core.ptx"
local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"
local O = require "luagpu.tensor.object"
local X = require "luagpu.tensor.expr"
local E = require "luagpu.tensor.elementwise"

local type, pairs, tostring, pcall, unpack = type, pairs, tostring, pcall, table.unpack
local ipairs, rawget, getmetatable = ipairs, rawget, getmetatable
local format = string.format
local min, max, huge = math.min, math.max, math.huge
local fail, show = H.fail, H.show
local FLOATS, LIMITS, NAN, SIZES = TY.FLOATS, TY.LIMITS, TY.NAN, TY.SIZES
local empty, check, drop = O.empty, X.check, O.drop
local ceil_div, round_up, floor_pow2 = ST.ceil_div, ST.round_up, ST.floor_pow2

-- cols4_waves: column reductions read 4 columns per work-item (cols4)
-- where they can, with about this many groups per compute unit (false:
-- the one-column kernel, cols, everywhere).
local R = P.counter({cols4_waves = 4, methods = {}}, "tensor")

-- Floats: min and max skip NaNs (fmin, fmax), and give NaN when every
-- element is NaN: NaN is their neutral element. argmin and argmax skip
-- NaNs too (a number beats a NaN) and give the first position when every
-- element is NaN (NaNs are then the same value): x[argmin] is min.

local function arg_spec(t, cmp, limit)
  local spec = {acc = t, out = "long", ARG = true, FINAL = "((long)(i) + 1)", empty = true}
  if FLOATS[t] then
    spec.NEUTRAL = NAN[t]
    spec.BETTER = format("((a) %s (b) || (isnan(b) && !isnan(a)))", cmp)
    spec.SAME = "((a) == (b) || (isnan(a) && isnan(b)))"
  else
    spec.NEUTRAL = LIMITS[t][limit]
    spec.BETTER = format("((a) %s (b))", cmp)
    spec.SAME = "((a) == (b))"
  end
  return spec
end

-- The types whose whole mean is luagpu.reduce's sum over n: exact long
-- sums, and float summed in double. long and ulong sums would wrap: their
-- mean, as double's, accumulates in double (the kernel of the dims).
local MEAN_BY_SUM = {char = true, uchar = true, short = true, ushort = true, int = true,
                     uint = true, float = true}

-- The accumulator of sums and products of t.
local function sum_acc(t)
  if FLOATS[t] then return t end
  return t == "ulong" and "ulong" or "long"
end

-- Per reduction, from the element type: acc, out, and the defines.
local SPECS = {
  sum = function(t)
    local a = sum_acc(t)
    -- long sums wrap (computed as ulong: signed overflow is undefined)
    return {acc = a, out = a, NEUTRAL = "0",
            OP = a == "long" and "((long)((ulong)(a) + (ulong)(b)))" or "((a) + (b))"}
  end,
  prod = function(t)
    local a = sum_acc(t)
    return {acc = a, out = a, NEUTRAL = "1",
            OP = a == "long" and "((long)((ulong)(a) * (ulong)(b)))" or "((a) * (b))"}
  end,
  mean = function(t)
    local a = t == "float" and "float" or "double"
    return {acc = a, out = a, NEUTRAL = "0", OP = "((a) + (b))",
            FINAL = "((a) / (ACC)(n))"}
  end,
  min = function(t)
    if FLOATS[t] then return {acc = t, out = t, NEUTRAL = NAN[t], OP = "fmin(a, b)", empty = true} end
    return {acc = t, out = t, NEUTRAL = LIMITS[t][2], OP = "min(a, b)", empty = true}
  end,
  max = function(t)
    if FLOATS[t] then return {acc = t, out = t, NEUTRAL = NAN[t], OP = "fmax(a, b)", empty = true} end
    return {acc = t, out = t, NEUTRAL = LIMITS[t][1], OP = "max(a, b)", empty = true}
  end,
  argmin = function(t) return arg_spec(t, "<", 2) end,
  argmax = function(t) return arg_spec(t, ">", 1) end,
  any = function()
    return {acc = "uchar", out = "uchar", NEUTRAL = "0", OP = "((a) | (b))",
            MAP = "((uchar)((x) != 0))"}
  end,
  all = function()
    return {acc = "uchar", out = "uchar", NEUTRAL = "1", OP = "((a) & (b))",
            MAP = "((uchar)((x) != 0))"}
  end,
}

-- The spec of op over elements of type t, made once (its strings are
-- formatted: a call must not pay for them).
local spec_memo = {}
local function spec_of(op, t)
  local m = spec_memo[op]
  if not m then m = {}; spec_memo[op] = m end
  local s = m[t]
  if not s then s = SPECS[op](t); m[t] = s end
  return s
end

local cache = ST.device_cache()   -- device -> op -> type -> {prog, spec, sz, k, cu}
local dummies = ST.device_cache()

-- Per device class: LS work-items per group of a row's part, CX x CY a
-- group of columns (CY rows of CX columns), about waves groups per compute
-- unit for the rows (4 times that for columns); a script may give a class
-- a new table (bench/gpu/reduce_sweep.lua): the kernels are made again.
-- (gpu: bench/gpu/reduce_sweep.lua on an H100: columns in groups of 16 x
-- 16 took 0.7-0.95 of the time of 32 x 8 on 5 of 6 shapes, 1.05 on the
-- sixth; a row's group is smaller where the row is short, row_ls)
R.sizes = {gpu = {LS = 256, CX = 16, CY = 16, waves = 8},
           cpu = {LS = 64, CX = 16, CY = 4, waves = 4}}
local function sizes(dev)
  return R.sizes[dev.type == "cpu" and "cpu" or "gpu"]
end

local function check_sizes(fn, sz)
  local function field(name, pow2, hi)
    local v = type(sz) == "table" and sz[name]
    if math.type(v) ~= "integer" or v < 1 or v > hi or pow2 and v & (v - 1) ~= 0 then
      fail(fn, "reduce.sizes: %s: expected %s from 1 to %d, got %s", name,
           pow2 and "a power of two" or "an integer", hi, show(v))
    end
  end
  field("LS", true, 1024); field("CX", false, 1024); field("CY", true, 1024)
  field("waves", false, 1 << 20)
end

-- The work-items of a group reducing (part of) a row of L elements: about
-- each elements each (16; argmin and argmax, which compare and choose per
-- element, 64), from 32 up to the class's LS (the sweep: groups of 256 over
-- rows of 256 floats, 64 loads for 256 work-items, took 2.5-3x the time of
-- groups of 32 or 64; on an H200, argmax(2) of 4096^2 floats took 24.6 us in
-- groups of 64 against 29.8 in groups of 256, of 8192^2 69.2 against 79.4).
local ROW_ELEMENTS = {argmax = 64, argmin = 64}
-- Rows in groups of 32 where warps combine: WARP_ROWS rows a group, a warp
-- each (rows_warp).
local WARP_ROWS = 8
local function row_ls(most, L, op)
  return min(most, max(32, floor_pow2(max(1, L // (ROW_ELEMENTS[op] or 16)))))
end

-- R.warp = false: no warp shuffles (luagpu.core.ptx.warp_keyword), to
-- compare with the local-memory form.
R.warp = true

-- Whether op's kernels (spec) with rows in groups of ls combine by warp
-- shuffles on a device whose keyword is asm.
local function warps(asm, spec, ls)
  local bytes = SIZES[spec.acc]
  return asm and ls >= 32 and (bytes == 4 or bytes == 8)
end

-- The recipe (luagpu.core.programs) of op's kernels for t, with groups of
-- ls work-items for rows, combined by warp shuffles where asm (the
-- keyword) is given, ls a multiple of 32 and the accumulator 4 or 8 bytes.
local function recipe(spec, t, sz, ls, asm)
  local defines = {{"T", t}, {"ACC", spec.acc}, {"OUT", spec.out}, {"NEUTRAL", spec.NEUTRAL},
    {"MAP(x)", spec.MAP or "((ACC)(x))"}, {"FINAL(a, i, n)", spec.FINAL or "((OUT)(a))"},
    {"LS", ls}, {"CX", sz.CX}, {"CY", sz.CY}}
  local bytes = SIZES[spec.acc]
  if warps(asm, spec, ls) then
    defines[#defines + 1] = {"WARP_PTX", 1}
    defines[#defines + 1] = {"LG_ASM", asm}
    defines[#defines + 1] = {"ACC_BYTES", bytes}
  end
  -- (blocked folds for floating accumulators: kernels/tensor_reduce.cl)
  if (spec.acc == "float" or spec.acc == "double") and not spec.ARG then
    defines[#defines + 1] = {"FOLD_BLOCK", 64}
  end
  if spec.ARG then
    defines[#defines + 1] = {"ARG", ""}
    defines[#defines + 1] = {"BETTER(a, b)", spec.BETTER}
    defines[#defines + 1] = {"SAME(a, b)", spec.SAME}
  else
    defines[#defines + 1] = {"OP(a, b)", spec.OP}
  end
  return {family = "tensor", file = "tensor_reduce.cl", defines = defines}
end

-- The kernels of op for t on dev with rows in groups of ls (default: the
-- class's LS), with the spec and sizes they were made for.
local function program(fn, dev, op, t, ls)
  local e = cache[dev]
  if not e then e = {}; cache[dev] = e end
  local eo = e[op]
  if not eo then eo = {}; e[op] = eo end
  local sz = sizes(dev)
  local by = eo[t]
  if not by or by.sz ~= sz or by.warp ~= R.warp then by = {sz = sz, warp = R.warp}; eo[t] = by end
  ls = ls or sz.LS
  local p = by[ls]
  if p then return p end
  check_sizes(fn, sz)
  local spec = spec_of(op, t)
  local asm = PTX.warp_keyword(dev, R.warp)
  local ok, prog = pcall(P.get, dev, recipe(spec, t, sz, ls, asm))
  if not ok then fail(fn, "the %s kernels do not compile for %s: %s", op, t, tostring(prog)) end
  local wg = min(prog.rows.work_group_size, prog.cols.work_group_size,
                 prog.rows2.work_group_size, prog.cols2.work_group_size,
                 prog.cols4.work_group_size)
  if wg < ls or wg < sz.CX * sz.CY then
    fail(fn, "the %s kernels allow work-groups of %d on %s, they need %d", op, wg, dev.name,
         max(ls, sz.CX * sz.CY))
  end
  -- (the kernels and the device's compute units read once: each is a
  -- lookup through the C side)
  -- (rows_warp: a warp a row, WARP_ROWS warps a group)
  local rows_warp = ls == 32 and warps(asm, spec, ls) and prog.rows_warp
  if rows_warp and rows_warp.work_group_size < 32 * WARP_ROWS then rows_warp = nil end
  p = {prog = prog, spec = spec, sz = sz, LS = ls, cu = dev.compute_units,
       k = {rows = prog.rows, rows2 = prog.rows2, cols = prog.cols, cols2 = prog.cols2,
            cols4 = prog.cols4, rows_warp = rows_warp or nil}}
  by[ls] = p
  return p
end

-- A 1-element buffer of t on dev, bound where a kernel's output is unused.
local function dummy(dev, t)
  local d = dummies[dev]
  if not d then d = {}; dummies[dev] = d end
  if not d[t] then d[t] = dev:buffer(t, 1) end
  return d[t]
end

local NO_EVENT = ST.NO_EVENT
local mathtype = math.type

-- Per kernel, per output buffer (weak keys): the call bound last and its
-- arguments. Binding checks and converts every argument, which costs more
-- than the launch; a call is kept only when every buffer it holds is a
-- pool block or a dummy (it must not keep a script's buffer alive).
local kept = setmetatable({}, {__mode = "k"})


-- Runs kernel k over args (the output buffer args[out]), keeping the bound
-- call when keep says its buffers may be held.
-- Whether args binds as kept call c's did (ST.same_args' rule: the same
-- values, numbers of the same Lua type, zeros of the same sign; c.kinds
-- holds the math.type of each of c's arguments, learned once).
local function same_binding(c, args)
  local a, kinds, n = c.args, c.kinds, #args
  if #a ~= n then return false end
  for i = 1, n do
    local x, y = a[i], args[i]
    if x ~= y then return false end
    local kind = kinds[i]
    if kind and (mathtype(y) ~= kind or (y == 0 and 1 / x ~= 1 / y)) then return false end
  end
  return true
end

local function run(k, args, global, localsz, out, keep)
  local calls = kept[k]
  local c = calls and calls[args[out]]
  if c and same_binding(c, args) then return c.call:run(global, localsz, NO_EVENT) end
  local call = k(unpack(args))
  if keep then
    if not calls then calls = setmetatable({}, {__mode = "k"}); kept[k] = calls end
    local kinds = {}
    for i = 1, #args do kinds[i] = mathtype(args[i]) or false end
    calls[args[out]] = {args = args, call = call, kinds = kinds}
  end
  call:run(global, localsz, NO_EVENT)
end

local reduce_helper

-- Reduces contiguous x ([outer, L, inner]) into res (outer * inner
-- elements of the op's out type, a tensor just made). x was checked at
-- the method's entry (X.check), or luagpu made it from such a tensor (a
-- view, a contiguous copy): neither is checked again.
local function reduce_into(fn, op, x, outer, L, inner, res)
  local keep = x._st.pool ~= nil and res._st.pool ~= nil
  local dev, t = x._dev, x._type
  -- (CPUs keep one group size: no program a row length on PoCL)
  local p = program(fn, dev, op, t, inner == 1 and dev.type ~= "cpu" and
                                    row_ls(sizes(dev).LS, L, op) or nil)
  local spec, sz, ls = p.spec, p.sz, p.LS
  local acc, outbuf = spec.acc, res._st.buf
  local target = p.cu * sz.waves
  local dpart, didx, dres = dummy(dev, acc), dummy(dev, "long"), dummy(dev, spec.out)
  if inner == 1 then
    local nsplit = 1
    if outer < target then
      nsplit = max(1, min(ceil_div(target, outer), ceil_div(L, ls * 8)))
    end
    local chunk = ceil_div(L, nsplit)
    if nsplit > 1 then chunk = round_up(chunk, 4) end
    local vec = (L % 4 == 0 and x._off % 4 == 0) and 1 or 0
    if nsplit == 1 and p.k.rows_warp then
      run(p.k.rows_warp, {x._st.buf, x._off, L, outer, outbuf, vec},
          {ceil_div(outer, WARP_ROWS) * 32 * WARP_ROWS}, {32 * WARP_ROWS}, 5, keep)
      return
    end
    if nsplit == 1 then
      run(p.k.rows, {x._st.buf, x._off, L, chunk, 1, 1, L, dpart, didx, outbuf, vec},
          {outer * ls}, {ls}, 10, keep)
      return
    end
    local part = empty(fn, dev, acc, {outer * nsplit})
    local pidx = empty(fn, dev, "long", {outer * nsplit})
    run(p.k.rows, {x._st.buf, x._off, L, chunk, nsplit, 0, L, part._st.buf,
                      pidx._st.buf, dres, vec}, {outer * nsplit * ls}, {ls}, 8, keep)
    run(p.k.rows2, {part._st.buf, pidx._st.buf, 0, nsplit, nsplit, 1, 1, L, dpart, didx,
                       outbuf}, {outer * ls}, {ls}, 11, keep)
    drop(part); drop(pidx)
    return
  end
  if R.cols4_waves and inner % 4 == 0 and x._off % 4 == 0 then
    -- 4 columns per work-item: a group reads CX * 4 columns of its part
    -- (argmin and argmax: with their positions, in pidx)
    local gx = ceil_div(inner // 4, sz.CX)
    local groups = p.cu * R.cols4_waves
    local nsplit = 1
    if gx * outer < groups then
      nsplit = max(1, min(ceil_div(groups, gx * outer), ceil_div(L, sz.CY * 16)))
    end
    local chunk = ceil_div(L, nsplit)
    local global = {gx * sz.CX, outer * nsplit * sz.CY}
    local arg = spec.ARG
    if nsplit == 1 then
      if arg then
        run(p.k.cols4, {x._st.buf, x._off, L, inner, chunk, 1, 1, L, dpart, didx, outbuf},
            global, {sz.CX, sz.CY}, 11, keep)
      else
        run(p.k.cols4, {x._st.buf, x._off, L, inner, chunk, 1, 1, L, dpart, outbuf},
            global, {sz.CX, sz.CY}, 10, keep)
      end
      return
    end
    local part = empty(fn, dev, acc, {outer * nsplit * inner})
    local pidx = arg and empty(fn, dev, "long", {outer * nsplit * inner})
    if arg then
      run(p.k.cols4, {x._st.buf, x._off, L, inner, chunk, nsplit, 0, L, part._st.buf,
                      pidx._st.buf, dres}, global, {sz.CX, sz.CY}, 9, keep)
    else
      run(p.k.cols4, {x._st.buf, x._off, L, inner, chunk, nsplit, 0, L, part._st.buf, dres},
          global, {sz.CX, sz.CY}, 9, keep)
    end
    local gx1 = ceil_div(inner, sz.CX)
    run(p.k.cols2, {part._st.buf, arg and pidx._st.buf or didx, 0, nsplit, inner, nsplit, 1, 1,
                    L, dpart, didx, outbuf}, {gx1 * sz.CX, outer * sz.CY}, {sz.CX, sz.CY}, 12,
        keep)
    drop(part)
    if pidx then drop(pidx) end
    return
  end
  -- columns: 4 times as many groups as rows get, so that the last wave of
  -- groups, which leaves compute units idle, is a small part of the work
  local gx = ceil_div(inner, sz.CX)
  local nsplit = 1
  target = target * 4
  if gx * outer < target then
    nsplit = max(1, min(ceil_div(target, gx * outer), ceil_div(L, sz.CY * 16)))
  end
  local chunk = ceil_div(L, nsplit)
  local global = {gx * sz.CX, outer * nsplit * sz.CY}
  if nsplit == 1 then
    run(p.k.cols, {x._st.buf, x._off, L, inner, chunk, 1, 1, L, dpart, didx, outbuf},
        global, {sz.CX, sz.CY}, 11, keep)
    return
  end
  local part = empty(fn, dev, acc, {outer * nsplit * inner})
  local pidx = empty(fn, dev, "long", {outer * nsplit * inner})
  run(p.k.cols, {x._st.buf, x._off, L, inner, chunk, nsplit, 0, L, part._st.buf,
                    pidx._st.buf, dres}, global, {sz.CX, sz.CY}, 9, keep)
  run(p.k.cols2, {part._st.buf, pidx._st.buf, 0, nsplit, inner, nsplit, 1, 1, L, dpart,
                     didx, outbuf}, {gx * sz.CX, outer * sz.CY}, {sz.CX, sz.CY}, 12, keep)
  drop(part); drop(pidx)
end

local function empty_error(fn, op, what, why)
  fail(fn, "the %s of %s is undefined%s", op, what, why or "")
end

-- The whole-tensor reduction of x: a Lua value.
local function reduce_all(fn, op, x)
  local n = x._n
  local spec = spec_of(op, x._type)
  if n == 0 then
    if spec.empty then empty_error(fn, op, "an empty tensor") end
    if op == "mean" then return 0 / 0 end
    if op == "any" then return false elseif op == "all" then return true end
    return op == "prod" and (FLOATS[spec.out] and 1.0 or 1) or (FLOATS[spec.out] and 0.0 or 0)
  end
  local given = x
  if x._expr or not O.is_contiguous(x) then x = O.contiguous(fn, x) end
  if op == "sum" or op == "min" or op == "max" or (op == "mean" and MEAN_BY_SUM[x._type]) then
    reduce_helper = reduce_helper or require "luagpu.reduce"
    local b = O.elements_of(x)
    local v
    if op == "mean" then
      v = reduce_helper.sum(b, x._type == "float" and {acc = "double"} or nil) / n
      -- (a float tensor's mean is a float, as mean(dim)'s elements are: the
      -- double quotient rounded once)
      if x._type == "float" then v = string.unpack("f", string.pack("f", v)) end
    else
      v = reduce_helper[op](b)
    end
    if x ~= given then drop(x) end          -- a copy made here
    return v
  end
  local res = empty(fn, x._dev, spec.out, {1})
  reduce_into(fn, op, x, 1, n, 1, res)
  if x ~= given then drop(x) end
  local v = res:get()[1]
  drop(res)
  if op == "any" or op == "all" then return v ~= 0 end
  return v
end

-- The reduction of x along dim d: a tensor.
local function reduce_dim(fn, op, x, d, keepdim)
  local shape = x._shape
  local outer, L, inner = 1, shape[d], 1
  for i = 1, d - 1 do outer = outer * shape[i] end
  for i = d + 1, #shape do inner = inner * shape[i] end
  local spec = spec_of(op, x._type)
  local rshape = {}
  for i = 1, #shape do
    if i ~= d then rshape[#rshape + 1] = shape[i]
    elseif keepdim then rshape[#rshape + 1] = 1 end
  end
  -- an empty dim raises even when the result is empty (as NumPy)
  if L == 0 and spec.empty then
    empty_error(fn, op, "an empty dim", format(" (dim %d has size 0)", d))
  end
  local res = empty(fn, x._dev, spec.out, rshape)
  if res._n == 0 then return res end
  if L == 0 then
    return res:set(op == "prod" and 1 or op == "all" and 1 or op == "mean" and 0 / 0 or 0)
  end
  local given = x
  if x._expr or not O.is_contiguous(x) then x = O.contiguous(fn, x) end
  reduce_into(fn, op, x, outer, L, inner, res)
  if x ~= given then drop(x) end            -- a copy made here
  return res
end

-- The reduction of x along the dims of list (checked, distinct, sorted,
-- two or more): the kept dims first, the reduced ones after, contiguous
-- (a view when they are already so), reduced as one dim.
local function reduce_dims(fn, op, x, dims, keepdim)
  local nd, shape = #x._shape, x._shape
  local order, kept, seen, len = {}, {}, {}, 1
  for _, d in ipairs(dims) do seen[d] = true end
  for d = 1, nd do
    if not seen[d] then order[#order + 1] = d; kept[#kept + 1] = shape[d] end
  end
  for _, d in ipairs(dims) do order[#order + 1] = d; len = len * shape[d] end
  local moved = x:permute(order)
  local flat = {}
  for i, n in ipairs(kept) do flat[i] = n end
  flat[#flat + 1] = len
  local res = reduce_dim(fn, op, moved:reshape(flat), #flat, false)
  if not keepdim then return res end
  local back = {}
  for d = 1, nd do back[d] = seen[d] and 1 or shape[d] end
  return res:reshape(back)
end

local reduce_by_dims

-- v (a result: a Lua number or a tensor) as type t (the option type:
-- integers wrap as C converts, float rounds).
local function as_type(t, v)
  if type(v) ~= "number" then
    return v._type == t and v or v:astype(t):eval()
  end
  if t == "float" then return (string.unpack("f", string.pack("f", v))) end
  if FLOATS[t] then return v + 0.0 end
  local bits = TY.SIZES[t] * 8
  v = math.tointeger(v) or v
  if bits == 64 or math.type(v) ~= "integer" then return v end
  v = v % (1 << bits)
  if TY.SIGNED[t] and v >= 1 << (bits - 1) then v = v - (1 << bits) end
  return v
end

local R_ARG = {argmin = true, argmax = true}
local REDUCE_OPTIONS = H.option_names({"keepdim", "type"}, "option ")
local TYPED = {sum = true, prod = true, mean = true}

-- x:OP([dim_or_dims] [, keepdim_or_opts]): opts {keepdim =, type = (sum,
-- prod, mean: the type to accumulate in and give)}.
local function reduction(op)
  local fn = "tensor:" .. op
  return function(x, dim, opts, ...)
    check(fn, 0, x)
    O.no_more(fn, 3, ...)
    local keepdim, t = opts, nil
    if type(opts) == "table" then
      H.check_options(fn, 2, opts, REDUCE_OPTIONS)
      keepdim, t = rawget(opts, "keepdim"), rawget(opts, "type")
    end
    if keepdim ~= nil and type(keepdim) ~= "boolean" then
      fail(fn, "argument #2: keepdim: expected a boolean, got %s", show(keepdim))
    end
    O.check_keepdim(fn, dim, keepdim)
    if t ~= nil then
      if not TYPED[op] then
        fail(fn, "argument #2: option type is for sum, prod and mean, not %s", op)
      end
      O.check_type(fn, "argument #2: option type", t)
      O.check_device_type(fn, x._dev, t)
      if t ~= x._type then x = x:astype(t) end
    end
    if x._type == "double" then O.check_device_type(fn, x._dev, "double") end
    if (op == "mean") and x._type ~= "float" then O.check_device_type(fn, x._dev, "double") end
    if t ~= nil then return as_type(t, reduce_by_dims(fn, op, x, dim, keepdim)) end
    return reduce_by_dims(fn, op, x, dim, keepdim)
  end
end

-- The reduction of x by dim (nil: all, a number, or a list).
reduce_by_dims = function(fn, op, x, dim, keepdim)
    if dim == nil then return reduce_all(fn, op, x) end
    O.not_a_list(fn, 1, dim)
    if type(dim) == "table" and getmetatable(dim) == nil then
      local dims = O.check_dims(fn, 1, x, dim)
      if #dims == 1 then return reduce_dim(fn, op, x, dims[1], keepdim) end
      if R_ARG[op] then
        fail(fn, "argument #1: %s takes one dim (or none), got %d", op, #dims)
      end
      -- no dims (NumPy's axis=()): each element alone, typed as x:OP(d)
      -- types its results; a tensor of x's shape (0-d for a 0-d x)
      table.sort(dims)
      return reduce_dims(fn, op, x, dims, keepdim)
    end
    local d = O.check_dim(fn, "argument #1", x, dim)
    return reduce_dim(fn, op, x, d, keepdim)
end

local methods = R.methods
for op in pairs(SPECS) do methods[op] = reduction(op) end
local rmin, rmax, emin, emax = methods.min, methods.max, E.ops.min, E.ops.max
-- x:min(y) with a tensor y is elementwise; a number or nothing: the
-- reduction (a number is a dim). An object of another kind (a sharded
-- tensor) is neither: it raises as such, not as a bad dim.
local function other_object(fn, a)
  if type(a) == "table" and getmetatable(a) ~= nil and not O.is_tensor(a) then
    H.fail(fn, "argument #1: expected a dim, a list of dims or a tensor, got %s",
           H.typename(a))
  end
end
function methods.min(x, a, ...)
  if O.is_tensor(a) then
    O.no_more("tensor:min", 2, ...)
    return emin(x, a)
  end
  other_object("tensor:min", a)
  return rmin(x, a, ...)
end
function methods.max(x, a, ...)
  if O.is_tensor(a) then
    O.no_more("tensor:max", 2, ...)
    return emax(x, a)
  end
  other_object("tensor:max", a)
  return rmax(x, a, ...)
end

return R
