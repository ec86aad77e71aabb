-- luagpu.tensor.source: an elementwise expression's key and kernel source
-- (internal to luagpu.tensor; luagpu.tensor.codegen runs them).
--
--   S.walk(e, t, leaves, scalars, fn, count)   checks expression e, collects
--                          its distinct leaves (tensors) and its scalar nodes,
--                          and descends the key tree t by e's structure;
--                          returns the tree node reached and the node count
--   S.child(t, k)          the key tree node under t for k (made when missing)
--   S.source(e, leaves, scalars, layout)   the OpenCL C of the kernel lg_ew
--
-- Expressions are trees of nodes (luagpu.tensor.expr): {kind = "leaf", x =
-- a realized tensor}, {kind = "scalar", value =}, {kind = "index"},
-- {kind = "op", op = a name of luagpu.tensor.ops, args =, ct = the type the
-- op computes in} and {kind = "map", expr =, names =, args =, ct =}; every
-- node has type and shape. The source is made from the structure, the types
-- and the layout class, never from data: leaves, scalars, offsets, strides
-- and sizes are kernel arguments, so one key is one kernel.

local H = require "luagpu.core.check"
local TY = require "luagpu.core.types"
local O = require "luagpu.tensor.object"
local OPS = require "luagpu.tensor.ops"

local format, concat, sort = string.format, table.concat, table.sort
local ipairs, pairs, tostring, pcall = ipairs, pairs, tostring, pcall
local type, getmetatable = type, getmetatable
local convert, emit, BY_NAME = OPS.convert, OPS.emit, OPS.by_name
local TYPES = TY.SIZES
local FLOATS, fits = TY.FLOATS, TY.fits
local MT, bad = O.MT, O.bad

local S = {}

local VW = 4
local LANES = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"}
local SIGNED_OF = {uint = "int", ulong = "long"}

------------------------------------------------------------------ checks

-- The nodes are tables a script reaches (y._expr, x._leaf) and may write
-- after the operation that made them checked its operands, so every string
-- the source pastes is checked here, where the key is made (a node that
-- changed makes another key): types against the one type table, ops
-- against the op table, map names as identifiers, map expressions as
-- H.check_expression does (each distinct string once).
local MAX_WALK = 4096
local checked_expr = {}

local function bad_node(fn, what)
  bad(fn, "its expression's " .. what)
end

-- Checks node e, neither leaf nor scalar nor op (walk checks those
-- itself, the common nodes, in the same order): an index or a map.
local function check_other(e, fn, kind)
  if kind == "index" then return end
  local ct, args = e.ct, e.args
  if (ct ~= nil and not TYPES[ct]) or type(args) ~= "table" or getmetatable(args) ~= nil then
    bad_node(fn, "types or operands")
  end
  if kind ~= "map" then bad_node(fn, "nodes") end
  local expr, names = e.expr, e.names
  if not ct or type(names) ~= "table" or getmetatable(names) ~= nil or #names ~= #args or
     type(expr) ~= "string" then
    bad_node(fn, "map")
  end
  for i = 1, #names do
    local name = names[i]
    if type(name) ~= "string" or not name:find("^[%a_][%w_]*$") then bad_node(fn, "map") end
  end
  if not checked_expr[expr] then
    local ok = pcall(H.check_expression, fn, "", expr)
    if not ok then bad_node(fn, "map") end
    checked_expr[expr] = true
  end
end

------------------------------------------------------------------ key

local function child(t, k)
  local c = t[k]
  if c == nil then c = {}; t[k] = c end
  return c
end
S.child = child

-- The key is the path of tree nodes the walk descends, a prefix code of
-- the expression (each node's tokens say how many operands follow):
--   leaf    its leaf number, its type (and "!" .. the tensor's type should
--           the two differ)
--   scalar  "S", its type;  index  "I", its type
--   op      the op, its type, its compute type ("" for none), operands
--   map     "map", the expression, its compute type, the count of names,
--           the names, its type, its compute type, operands
-- No string is made for a key: a node's tokens are table lookups.
local function walk(e, t, leaves, scalars, fn, count)
  count = count + 1
  if type(e) ~= "table" or getmetatable(e) ~= nil or count > MAX_WALK then
    bad_node(fn, "nodes")
  end
  local et, kind = e.type, e.kind
  if not TYPES[et] then bad_node(fn, "types") end
  if kind == "leaf" then
    local x, nl = e.x, #leaves
    -- (raises the launch check's message: "metatable")
    if getmetatable(x) ~= MT then O.check_bounds(fn, x) end
    local k = nl + 1
    for i = 1, nl do if leaves[i] == x then k = i; break end end
    if k > nl then leaves[k] = x end
    t = t[k] or child(t, k)
    t = t[et] or child(t, et)
    if x._type ~= et then t = child(t, "!" .. tostring(x._type)) end
    return t, count
  elseif kind == "scalar" then
    local v = e.value
    -- (a value its type cannot hold: a script changed the node)
    if type(v) ~= "number" or not FLOATS[et] and fits(et, v) then bad_node(fn, "numbers") end
    scalars[#scalars + 1] = e
    t = t.S or child(t, "S")
    return t[et] or child(t, et), count
  end
  local ct, args = e.ct, e.args
  if kind == "op" then
    if (ct ~= nil and not TYPES[ct]) or type(args) ~= "table" or getmetatable(args) ~= nil then
      bad_node(fn, "types or operands")
    end
    local op = e.op
    local row = BY_NAME[op]
    if not row or row.arity ~= #args then bad_node(fn, "ops") end
    t = t[op] or child(t, op)
  else
    check_other(e, fn, kind)
    if kind == "index" then return child(child(t, "I"), et), count end
    local names = e.names
    t = child(child(child(child(t, "map"), e.expr), ct), #names)
    for i = 1, #names do t = child(t, names[i]) end
  end
  ct = ct or ""
  t = t[et] or child(t, et)
  t = t[ct] or child(t, ct)
  for i = 1, #args do t, count = walk(args[i], t, leaves, scalars, fn, count) end
  return t, count
end
S.walk = walk

------------------------------------------------------------------ source

-- The C expression of node e (w: leaves, the scalars met so far, maps and
-- helper functions needed).
local function code_of(e, w)
  local kind = e.kind
  if kind == "leaf" then
    local leaves = w.leaves
    for k = 1, #leaves do if leaves[k] == e.x then return "v" .. k end end
  elseif kind == "scalar" then
    w.ns = w.ns + 1
    return "s" .. w.ns
  elseif kind == "index" then
    return format("((%s)li)", e.type)
  end
  local row = kind == "op" and BY_NAME[e.op]
  local args, list, ct = {}, e.args, e.ct
  for i = 1, #list do
    local a = list[i]
    local code = code_of(a, w)
    -- (where's mask is read as is)
    if ct and not (i == 1 and row and row.rule == "where") then code = convert(code, a.type, ct) end
    args[i] = code
  end
  if kind == "map" then
    local k = #w.maps + 1
    local params = {}
    for i, name in ipairs(e.names) do params[i] = ct .. " " .. name end
    w.maps[k] = format("inline %s lg_map%d(%s) { return (%s)(%s); }", ct, k,
                       concat(params, ", "), ct, e.expr)
    return format("lg_map%d(%s)", k, concat(args, ", "))
  end
  return emit(row, ct, args, w.need, e)
end

-- The lines computing r, the VW results of an item from the loaded u<k>
-- (a vector, or one element where leaf k's stride is 0), element b first.
local function vector_result(add, indent, out_type, strides, nl, call)
  add("%s%s%d r;", indent, out_type, VW)
  for j = 1, VW do
    local p = {}
    for k = 1, nl do p[k] = strides[k] == 0 and "u" .. k or format("u%d.%s", k, LANES[j]) end
    add("%sr.%s = %s;", indent, LANES[j], call(p, j == 1 and "b" or "b + " .. (j - 1)))
  end
end

-- The kernel body of the layout's mode: nd (the position decomposed per
-- dim), flat (one element per work-item), vec (VW elements per item) or
-- rows (VW elements of one row per item, operands broadcast along rows or
-- columns, or read along a row backwards).
local function body_of(w, layout, call)
  local idx, nd, strides = layout.idx, layout.nd, layout.strides
  local nl = #w.leaves
  local body = {format("  %s i = (%s)get_global_id(0);", idx, idx)}
  local function add(...) body[#body + 1] = format(...) end
  if layout.mode == "nd" then
    add("  if (i >= n) return;")
    add("  %s r = i, c, o = out_off;", idx)
    local p = {}
    for k = 1, nl do
      add("  %s p%d = off%d;", idx, k, k)
      p[k] = format("in%d[p%d]", k, k)
    end
    for d = 1, nd do
      local lane = LANES[d]
      if d < nd then add("  c = r %% shape.%s; r /= shape.%s;", lane, lane) else add("  c = r;") end
      -- (strides are signed, negative for reversed views: converted to
      -- the unsigned index type, the sums wrap to the right place)
      add("  o += c * (%s)out_st.%s;", idx, lane)
      for k = 1, nl do add("  p%d += c * (%s)st%d.%s;", k, idx, k, lane) end
    end
    add("  out[o] = %s;", call(p, "i"))
  elseif layout.mode == "rows" then
    -- out contiguous {rows, cols}, cols a multiple of VW: the VW elements
    -- of an item lie in one row; leaf k walks its row by 1 (a vector) or
    -- 0 (one element), rows by its argument rs<k>
    local out_type = layout.out_type
    add("  %s b = i * %d;", idx, VW)
    add("  if (b >= n) return;")
    add("  %s row = b / cols, col = b - row * cols;", idx)
    for k, x in ipairs(w.leaves) do
      if strides[k] == 0 then
        add("  %s u%d = in%d[off%d + row * (%s)rs%d];", x._type, k, k, k, idx, k)
      elseif strides[k] == -1 then
        -- a reversed row: the vector ending at element col, turned round
        -- (unsigned sums: the place is never below 0 in a valid view)
        add("  %s%d u%d = (*(global const %s%d*)(in%d + (%s)((off%d + row * (%s)rs%d) - " ..
            "(col + %d)))).s3210;", x._type, VW, k, x._type, VW, k, idx, k, idx, k, VW - 1)
      else
        add("  %s%d u%d = *(global const %s%d*)(in%d + (%s)(off%d + row * (%s)rs%d + col));",
            x._type, VW, k, x._type, VW, k, idx, k, idx, k)
      end
    end
    vector_result(add, "  ", out_type, strides, nl, call)
    add("  *(global %s%d*)(out + out_off + b) = r;", out_type, VW)
  elseif layout.mode == "flat" then
    add("  if (i >= n) return;")
    local p = {}
    for k = 1, nl do
      p[k] = strides[k] == 0 and format("in%d[off%d]", k, k) or format("in%d[off%d + i]", k, k)
    end
    add("  out[out_off + i] = %s;", call(p, "i"))
  else
    local out_type = layout.out_type
    add("  %s b = i * %d;", idx, VW)
    add("  if (b >= n) return;")
    add("  if (b + %d <= n) {", VW)
    for k, x in ipairs(w.leaves) do
      if strides[k] == 0 then
        add("    %s u%d = in%d[off%d];", x._type, k, k, k)
      else
        add("    %s%d u%d = ((global const %s%d*)(in%d + off%d))[i];", x._type, VW, k, x._type,
            VW, k, k)
      end
    end
    vector_result(add, "    ", out_type, strides, nl, call)
    add("    ((global %s%d*)(out + out_off))[i] = r;", out_type, VW)
    add("  } else {")
    local p = {}
    for k = 1, nl do
      p[k] = strides[k] == 0 and format("in%d[off%d]", k, k) or format("in%d[off%d + j]", k, k)
    end
    add("    for (%s j = b; j < n; j++) out[out_off + j] = %s;", idx, call(p, "j"))
    add("  }")
  end
  return concat(body, "\n")
end

-- The source of expression e's kernel lg_ew for layout {mode =, nd =, idx =
-- (uint or ulong), out_type =, strides = per leaf 0 or 1 (vec, flat; rows:
-- along a row)}; leaves and scalars as walk collected them. Kernel
-- arguments: out, out_off, (nd: out_st, shape), n, (rows: cols), per leaf
-- in, off (nd: st; rows: rs, its row stride), the scalars.
function S.source(e, leaves, scalars, layout)
  local w = {leaves = leaves, ns = 0, maps = {}, need = {}}
  local code = code_of(e, w)
  local idx, out_type, nd_mode = layout.idx, layout.out_type, layout.mode == "nd"
  local lines = {}
  for name in pairs(w.need) do lines[#lines + 1] = name end
  sort(lines)
  for i, name in ipairs(lines) do lines[i] = w.need[name] end
  -- no a * b + c contracted into one rounding (fma): a fused expression
  -- rounds each op as the eager ops, one kernel each, and NumPy do
  -- (x * 10 - 1 of 0.1 is 0, not 5.55e-17; linspace's first + i * step)
  table.insert(lines, 1, "#pragma OPENCL FP_CONTRACT OFF")
  for _, m in ipairs(w.maps) do lines[#lines + 1] = m end
  local fparams, kparams = {}, {}
  for k, x in ipairs(leaves) do fparams[#fparams + 1] = x._type .. " v" .. k end
  for k, s in ipairs(scalars) do fparams[#fparams + 1] = s.type .. " s" .. k end
  fparams[#fparams + 1] = idx .. " li"
  lines[#lines + 1] = format("inline %s lg_f(%s) { return %s; }", out_type,
                             concat(fparams, ", "), code)
  kparams[1] = format("global %s* restrict out, %s out_off", out_type, idx)
  local sidx = SIGNED_OF[idx]         -- strides may be negative
  if nd_mode then kparams[#kparams + 1] = sidx .. "8 out_st, " .. idx .. "8 shape" end
  kparams[#kparams + 1] = idx .. " n"
  local rows_mode = layout.mode == "rows"
  if rows_mode then kparams[#kparams + 1] = idx .. " cols" end
  for k, x in ipairs(leaves) do
    kparams[#kparams + 1] = format("global const %s* restrict in%d, %s off%d", x._type, k, idx, k)
    if nd_mode then kparams[#kparams + 1] = format("%s8 st%d", sidx, k) end
    if rows_mode then kparams[#kparams + 1] = format("%s rs%d", sidx, k) end
  end
  for k, s in ipairs(scalars) do kparams[#kparams + 1] = s.type .. " s" .. k end
  local function call(values, at)
    local a = {}
    for k = 1, #leaves do a[k] = values[k] end
    for k = 1, #scalars do a[#a + 1] = "s" .. k end
    a[#a + 1] = at
    return format("lg_f(%s)", concat(a, ", "))
  end
  lines[#lines + 1] = format("kernel void lg_ew(%s) {\n%s\n}", concat(kparams, ",\n    "),
                             body_of(w, layout, call))
  return concat(lines, "\n")
end

return S
