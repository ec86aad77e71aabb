-- luagpu.tensor.codegen: the one kernel an elementwise expression runs as,
-- through a launch plan cached per expression shape and layout (internal
-- to luagpu.tensor).
--
--   G.run(fn, expr, out)   evaluates expression expr (luagpu.tensor.expr's
--                          nodes) into the realized tensor out (any layout)
--   G.kernels_built        how many kernels G.run has built
--
-- Layouts are simplified first (size-1 dims dropped, dims that every
-- operand walks contiguously merged), then run in one of four modes:
--   vec   every operand contiguous (or one broadcast element), offsets
--         multiples of 4: each work-item loads and stores 4-wide vectors
--   flat  the same with other offsets: one element per work-item
--   rows  two dims left, out contiguous, rows a multiple of 4 long, each
--         operand read along a row by 1, 0 or -1 (M + row, M * col,
--         M:flip(2)): 4-wide vectors, one division per item
--   nd    any strides: the position is decomposed per dim (up to 8)
-- Indices are 32-bit when every buffer involved has fewer than 2^31
-- elements.
--
-- A launch plan is found by one walk of the expression down a tree of
-- tables per device (luagpu.tensor.source's key, then the layout's mode,
-- dims, index type, output type and per-operand strides): no string is
-- made and nothing is kept between calls but the plans. A plan holds the
-- kernel, its work-group size and, per output buffer, the call it bound
-- last, which is run again when the arguments are the same values.

local P = require "luagpu.core.programs"
local ST = require "luagpu.core.steps"
local O = require "luagpu.tensor.object"
local SRC = require "luagpu.tensor.source"

local ipairs, tostring, pcall, unpack = ipairs, tostring, pcall, table.unpack
local setmetatable = setmetatable
local min = math.min
local fail = require("luagpu.core.check").fail
local check_bounds, walk, child = O.check_bounds, SRC.walk, SRC.child
local round_up, ceil_div = ST.round_up, ST.ceil_div

local G = {kernels_built = 0}

local VW = 4
local LOCAL = 256
local BIG = 1 << 31
local NO_EVENT = ST.NO_EVENT
local ONE = {1}
local PLAN = {}                    -- the key of a tree node's plan
-- per mode: the kernel arguments before the leaves', and per leaf
local BASE = {vec = 3, flat = 3, rows = 4, nd = 5}
local PER = {vec = 2, flat = 2, rows = 3, nd = 3}
local VECTOR_MODE = {vec = true, rows = true}
local WEAK_KEYS = {__mode = "k"}

------------------------------------------------------------------ layout

-- Whether x is row-major with exactly shape (n elements).
local function plain(x, shape, n)
  local xs, st = x._shape, x._strides
  -- the common case: the same 1-D shape table (then x has n elements)
  if xs == shape and #xs == 1 then return st[1] == 1 or n == 1 end
  if x._n ~= n or #xs ~= #shape then return false end
  local s = 1
  for i = #xs, 1, -1 do
    if xs[i] ~= shape[i] then return false end
    if xs[i] ~= 1 and st[i] ~= s then return false end
    s = s * xs[i]
  end
  return true
end

-- The strides of tensor x broadcast to shape (right-aligned; stride 0
-- where x has size 1 or no dim).
local function broadcast_strides(x, shape)
  local xs, xst = x._shape, x._strides
  local shift = #shape - #xs
  local st = {}
  for i = 1, #shape do
    local j = i - shift
    st[i] = (j >= 1 and xs[j] == shape[i]) and xst[j] or 0
  end
  return st
end

-- Drops size-1 dims and merges dims that every stride set walks as one;
-- returns the new shape and stride sets.
local function simplify(shape, sets)
  local dims = {}
  for i = 1, #shape do if shape[i] ~= 1 then dims[#dims + 1] = i end end
  local out_shape, out_sets = {}, {}
  for s = 1, #sets do out_sets[s] = {} end
  for _, i in ipairs(dims) do
    local n = #out_shape
    local merge = n > 0
    if merge then
      for s = 1, #sets do
        if out_sets[s][n] ~= sets[s][i] * shape[i] then merge = false; break end
      end
    end
    if merge then
      out_shape[n] = out_shape[n] * shape[i]
      for s = 1, #sets do out_sets[s][n] = sets[s][i] end
    else
      out_shape[n + 1] = shape[i]
      for s = 1, #sets do out_sets[s][n + 1] = sets[s][i] end
    end
  end
  if #out_shape == 0 then
    out_shape[1] = 1
    for s = 1, #sets do out_sets[s][1] = 0 end
  end
  return out_shape, out_sets
end

-- The mode of a simplified 2-D layout: rows when out is contiguous, its
-- rows a multiple of VW long and aligned, and every leaf walks a row by 1
-- (aligned the same way), by -1 (a reversed row, x:flip: its VW elements
-- end on an aligned place, read as one vector and turned round) or by 0,
-- whatever its row stride; else nd.
local function rows_or_nd(out, leaves, sshape, ssets)
  local cols, ost = sshape[2], ssets[1]
  if cols % VW ~= 0 or ost[1] ~= cols or ost[2] ~= 1 or out._off % VW ~= 0 then return "nd" end
  for k = 1, #leaves do
    local st = ssets[k + 1]
    local inner = st[2]
    if inner == 1 then
      if st[1] % VW ~= 0 or leaves[k]._off % VW ~= 0 then return "nd" end
    elseif inner == -1 then
      if st[1] % VW ~= 0 or (leaves[k]._off + 1) % VW ~= 0 then return "nd" end
    elseif inner ~= 0 then
      return "nd"
    end
  end
  return "rows"
end

-- The simplified layout of out and leaves: the shape, the stride sets
-- (out's first, then one per leaf) and the mode (vec, flat, rows or nd). When
-- all are row-major with out's shape: ONE (one flat dim, every stride 1)
-- and no sets.
local function layout_of(out, leaves, n)
  local shape = out._shape
  local fast = plain(out, shape, n)
  local aligned = out._off % VW == 0
  for k = 1, #leaves do
    if not fast then break end
    local x = leaves[k]
    fast = plain(x, shape, n)
    if x._off % VW ~= 0 then aligned = false end
  end
  if fast then return ONE, nil, (aligned and n >= VW) and "vec" or "flat" end
  local sets = {out._strides}
  for k, x in ipairs(leaves) do sets[k + 1] = broadcast_strides(x, shape) end
  local sshape, ssets = simplify(shape, sets)
  if #sshape == 2 then return sshape, ssets, rows_or_nd(out, leaves, sshape, ssets) end
  if #sshape ~= 1 or ssets[1][1] ~= 1 then return sshape, ssets, "nd" end
  aligned = out._off % VW == 0
  local reversed = false
  for k = 1, #leaves do
    local s = ssets[k + 1][1]
    if s == -1 then reversed = true
    elseif s ~= 0 and s ~= 1 then return sshape, ssets, "nd" end
    if s == 1 and leaves[k]._off % VW ~= 0 then aligned = false end
  end
  if reversed then
    -- one row (a reversed operand read as rows mode reads one)
    local rshape, rsets = {1, sshape[1]}, {{sshape[1], 1}}
    for k = 1, #leaves do rsets[k + 1] = {0, ssets[k + 1][1]} end
    return rshape, rsets, rows_or_nd(out, leaves, rshape, rsets)
  end
  return sshape, ssets, (aligned and n >= VW) and "vec" or "flat"
end

-- The stride (0 or 1) of leaf k in a vec or flat layout; in rows, along
-- a row (0, 1 or -1).
local function flat_stride(ssets, k)
  if not ssets then return 1 end
  local st = ssets[k + 1]
  return st[#st]
end

local function vector8(list, nd)
  local v = {}
  for i = 1, 8 do v[i] = 0 end
  -- dims are stored last-first: s0 is the innermost
  for i = 1, nd do v[i] = list[nd - i + 1] end
  return v
end

------------------------------------------------------------------ plans

-- A new plan for expression e over leaves and scalars in layout, its
-- kernel built (or found) through luagpu.core.programs.
local function new_plan(fn, dev, e, leaves, scalars, layout)
  local src = SRC.source(e, leaves, scalars, layout)
  local before = P.built("tensor")
  local ok, prog = pcall(P.get, dev, {family = "tensor", source = src})
  if not ok then
    fail(fn, "the generated kernel does not compile on %s: %s\n%s", dev.name,
         tostring(prog), src)
  end
  if P.built("tensor") > before then G.kernels_built = G.kernels_built + 1 end
  local k = prog.lg_ew
  local wg = min(LOCAL, k.work_group_size)
  return {kernel = k, mode = layout.mode, wg = wg, local_size = {wg},
          calls = setmetatable({}, WEAK_KEYS)}
end

local same_value = ST.same_arg

-- Whether v (a vector8 argument bound before) holds list's nd values.
local function same_vec(v, list, nd)
  for i = 1, nd do
    if v[i] ~= list[nd - i + 1] then return false end
  end
  return true
end

-- The call plan bound last for output buffer outbuf when its arguments
-- are the same values as this launch's (out's offset, n, each leaf's
-- buffer and offset, the scalars; in nd mode also the shape and every
-- operand's strides), compared in place: binding checks and converts
-- every argument, which costs more than the launch.
local function kept_call(plan, outbuf, off, n, leaves, scalars, nd, sshape, ssets)
  local c = plan.calls[outbuf]
  if not c then return nil end
  local old = c.args
  local mode = plan.mode
  local nd_mode, rows_mode = mode == "nd", mode == "rows"
  local base, per = BASE[mode], PER[mode]
  if c.m ~= base + per * #leaves + #scalars or old[2] ~= off then return nil end
  if nd_mode then
    if c.nd ~= nd or old[5] ~= n or not same_vec(old[3], ssets[1], nd) or
       not same_vec(old[4], sshape, nd) then
      return nil
    end
  elseif old[3] ~= n or rows_mode and old[4] ~= sshape[2] then
    return nil
  end
  local m = base
  for k = 1, #leaves do
    local x = leaves[k]
    if old[m + 1] ~= x._st.buf or old[m + 2] ~= x._off then return nil end
    if nd_mode and not same_vec(old[m + 3], ssets[k + 1], nd) then return nil end
    if rows_mode and old[m + 3] ~= ssets[k + 1][1] then return nil end
    m = m + per
  end
  for k = 1, #scalars do
    if not same_value(old[m + k], scalars[k].value) then return nil end
  end
  return c
end

-- The arguments of plan's kernel for this launch: out, out_off, (nd:
-- out_st, shape), n, per leaf its buffer, offset (nd: strides), the
-- scalars; and their count.
local function arguments(out, n, leaves, scalars, mode, sshape, ssets)
  -- (preallocated: a small op's arguments fit without growing the table)
  local args = {out._st.buf, out._off, n, false, false, false, false, false}
  local m, nd = 3, #sshape
  local nd_mode, rows_mode = mode == "nd", mode == "rows"
  if nd_mode then
    args[3], args[4], args[5] = vector8(ssets[1], nd), vector8(sshape, nd), n
    m = 5
  elseif rows_mode then
    args[4], m = sshape[2], 4
  end
  for k = 1, #leaves do
    local x = leaves[k]
    args[m + 1], args[m + 2] = x._st.buf, x._off
    m = m + 2
    if nd_mode then m = m + 1; args[m] = vector8(ssets[k + 1], nd) end
    if rows_mode then m = m + 1; args[m] = ssets[k + 1][1] end
  end
  for k = 1, #scalars do m = m + 1; args[m] = scalars[k].value end
  return args, m
end

-- Binds plan's kernel to args[1 .. m] and runs it over n elements; the
-- call is kept for the next launch into the same buffer when every buffer
-- it holds is a pool block (a call must not keep a script's buffer alive).
local function bind_and_run(plan, out, leaves, args, m, n, nd)
  local call = plan.kernel(unpack(args, 1, m))
  local units = VECTOR_MODE[plan.mode] and ceil_div(n, VW) or n
  local global = {round_up(units, plan.wg)}
  local keep = out._st.pool ~= nil
  for k = 1, #leaves do
    if not leaves[k]._st.pool then keep = false end
  end
  plan.calls[args[1]] = keep and {args = args, m = m, call = call, global = global, nd = nd}
                        or nil
  call:run(global, plan.local_size, NO_EVENT)
end

local plans = ST.device_cache()    -- device -> the root of its tree of plans

function G.run(fn, e, out)
  local cap = check_bounds(fn, out)
  local n = out._n
  if n == 0 then return end
  local dev = out._dev
  local t = plans[dev]
  if not t then t = {}; plans[dev] = t end
  local leaves, scalars = {}, {}
  t = walk(e, t, leaves, scalars, fn, 0)
  local big = n >= BIG or cap >= BIG
  for k = 1, #leaves do
    if check_bounds(fn, leaves[k]) >= BIG then big = true end
  end
  local sshape, ssets, mode = layout_of(out, leaves, n)
  local nd, idx, out_type = #sshape, big and "ulong" or "uint", out._type
  t = t[mode] or child(t, mode)
  t = t[nd] or child(t, nd)
  t = t[idx] or child(t, idx)
  t = t[out_type] or child(t, out_type)
  local nd_mode = mode == "nd"
  if not nd_mode then
    for k = 1, #leaves do
      local s = flat_stride(ssets, k)
      t = t[s] or child(t, s)
    end
  end
  local plan = t[PLAN]
  if not plan then
    local strides = {}
    if not nd_mode then for k = 1, #leaves do strides[k] = flat_stride(ssets, k) end end
    plan = new_plan(fn, dev, e, leaves, scalars,
                    {mode = mode, nd = nd, idx = idx, out_type = out_type, strides = strides})
    t[PLAN] = plan
  end
  local c = kept_call(plan, out._st.buf, out._off, n, leaves, scalars, nd, sshape, ssets)
  if c then return c.call:run(c.global, plan.local_size, NO_EVENT) end
  local args, m = arguments(out, n, leaves, scalars, mode, sshape, ssets)
  bind_and_run(plan, out, leaves, args, m, n, nd)
end

return G
