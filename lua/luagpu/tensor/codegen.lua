-- luagpu.tensor.codegen: the one kernel an elementwise expression runs as
-- (internal to luagpu.tensor).
--
--   G.run(fn, expr, out)   evaluates expression expr (tensor_elementwise's
--                          nodes) into the realized tensor out (any layout)
--
-- The kernel is generated from the expression's structure and types and
-- the layout class, never from data: leaves (tensors), scalars (Lua
-- numbers) and offsets, strides and sizes are kernel arguments. Layouts
-- are simplified first (size-1 dims dropped, dims that every operand walks
-- contiguously merged), then run in one of three modes:
--   vec   every operand contiguous (or one broadcast element), offsets
--         multiples of 4: each work-item loads and stores 4-wide vectors
--   flat  the same with other offsets: one element per work-item
--   nd    any strides: the position is decomposed per dim (up to 8)
-- Indices are 32-bit when every buffer involved has fewer than 2^31
-- elements. Kernels are cached per device and key.

local H = require "luagpu.core.check"
local ST = require "luagpu.core.steps"
local TY = require "luagpu.core.types"

local format, concat = string.format, table.concat
local ipairs, pairs, tostring, pcall, unpack = ipairs, pairs, tostring, pcall, table.unpack
local setmetatable, getmetatable, type, rawget = setmetatable, getmetatable, type, rawget
local gpu_type = require("luagpu").type
local min, mathtype = math.min, math.type
local fail = H.fail
local FLOATS, SIGNED, UNSIGNED_OF = TY.FLOATS, TY.SIGNED, TY.UNSIGNED_OF

local G = {kernels_built = 0}

local VW = 4
local LOCAL = 256
local BIG = 1 << 31
local LANES = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"}

------------------------------------------------------------------ op code

-- Helper functions the ops need, by name: their source from the type.
local HELPERS = {
  mod = function(t)
    if FLOATS[t] then
      return format("inline %s lg_mod_%s(%s a, %s b) { %s r = fmod(a, b); " ..
                    "return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }", t, t, t, t, t)
    elseif SIGNED[t] then
      return format("inline %s lg_mod_%s(%s a, %s b) { if (b == 0 || b == -1) return 0; " ..
                    "%s r = a %% b; return (r != 0 && ((r < 0) != (b < 0))) ? (%s)(r + b) : r; }",
                    t, t, t, t, t, t)
    end
    return format("inline %s lg_mod_%s(%s a, %s b) { return b == 0 ? 0 : (%s)(a %% b); }",
                  t, t, t, t, t)
  end,
  idiv = function(t)
    if FLOATS[t] then
      return format("inline %s lg_idiv_%s(%s a, %s b) { return floor(a / b); }", t, t, t, t)
    elseif SIGNED[t] then
      return format("inline %s lg_idiv_%s(%s a, %s b) { if (b == 0) return 0; " ..
                    "if (b == -1) return (%s)(0 - (%s)a); %s q = a / b; " ..
                    "return (q * b != a && ((a < 0) != (b < 0))) ? (%s)(q - 1) : q; }",
                    t, t, t, t, t, UNSIGNED_OF[t], t, t)
    end
    return format("inline %s lg_idiv_%s(%s a, %s b) { return b == 0 ? 0 : (%s)(a / b); }",
                  t, t, t, t, t)
  end,
}

-- The type integer + - * of t compute in: unsigned, as wide as t and at
-- least as int (narrower operands are promoted to int, whose overflow is
-- undefined: ushort * ushort can pass INT_MAX), so results wrap as C's
-- unsigned arithmetic does and the cast back gives t's two's complement.
local WRAP = {char = "uint", uchar = "uint", short = "uint", ushort = "uint", int = "uint",
              uint = "uint", long = "ulong", ulong = "ulong"}
G.WRAP = WRAP

-- a op b (both of type t) for op + - *, wrapping for integers.
local function arith(t, op, a, b)
  local u = WRAP[t]
  if not u then return format("((%s)(%s %s %s))", t, a, op, b) end
  return format("((%s)((%s)(%s) %s (%s)(%s)))", t, u, a, op, u, b)
end

-- Binary ops: the C expression of a and b (both of type t).
local BINARY = {
  add = function(t, a, b) return arith(t, "+", a, b) end,
  sub = function(t, a, b) return arith(t, "-", a, b) end,
  mul = function(t, a, b) return arith(t, "*", a, b) end,
  div = function(_, a, b) return format("(%s / %s)", a, b) end,
  pow = function(_, a, b) return format("pow(%s, %s)", a, b) end,
  mod = function(t, a, b, need) need["mod_" .. t] = HELPERS.mod(t)
    return format("lg_mod_%s(%s, %s)", t, a, b) end,
  idiv = function(t, a, b, need) need["idiv_" .. t] = HELPERS.idiv(t)
    return format("lg_idiv_%s(%s, %s)", t, a, b) end,
  min = function(t, a, b) return format("%s(%s, %s)", FLOATS[t] and "fmin" or "min", a, b) end,
  max = function(t, a, b) return format("%s(%s, %s)", FLOATS[t] and "fmax" or "max", a, b) end,
  lt = function(_, a, b) return format("((uchar)(%s < %s))", a, b) end,
  le = function(_, a, b) return format("((uchar)(%s <= %s))", a, b) end,
  gt = function(_, a, b) return format("((uchar)(%s > %s))", a, b) end,
  ge = function(_, a, b) return format("((uchar)(%s >= %s))", a, b) end,
  eq = function(_, a, b) return format("((uchar)(%s == %s))", a, b) end,
  ne = function(_, a, b) return format("((uchar)(%s != %s))", a, b) end,
}
G.BINARY = BINARY

local UNARY = {
  neg = function(t, a)
    if FLOATS[t] then return format("(-%s)", a) end
    return format("((%s)(0 - (%s)(%s)))", t, WRAP[t], a)
  end,
  abs = function(t, a)
    if FLOATS[t] then return format("fabs(%s)", a) end
    if SIGNED[t] then
      local u = WRAP[t]
      return format("((%s)(%s < 0 ? 0 - (%s)(%s) : (%s)(%s)))", t, a, u, a, u, a)
    end
    return a
  end,
  floor = function(t, a) return FLOATS[t] and format("floor(%s)", a) or a end,
  ceil = function(t, a) return FLOATS[t] and format("ceil(%s)", a) or a end,
}
for _, f in ipairs{"sqrt", "exp", "log", "sin", "cos", "tanh"} do
  UNARY[f] = function(_, a) return format("%s(%s)", f, a) end
end
G.UNARY = UNARY

-- a (of type from) as type to: C casts, but floats to integers saturate
-- (NaN gives 0).
local function convert(a, from, to)
  if from == to then return a end
  if FLOATS[from] and not FLOATS[to] then return format("convert_%s_sat_rtz(%s)", to, a) end
  return format("((%s)(%s))", to, a)
end
G.convert = convert

------------------------------------------------------------------ walk

-- Collects the leaves (distinct tensors), scalars and the structure key of
-- expression e into w; returns its C code when w.gen (only on a cache
-- miss: the key alone finds a built kernel).
-- Key parts without number-to-string conversions: "L3", "S" by number.
local NUMS = {}
for i = 0, 64 do NUMS[i] = tostring(i) end
local function num(i) return NUMS[i] or tostring(i) end

-- The nodes are tables a script reaches (y._expr, x._leaf) and may write
-- after the operation that made them checked its operands, so every string
-- walk pastes into source is checked here, where the key is made (a node
-- that changed makes another key): types against the one type table, ops
-- against the op tables, map names as identifiers, map expressions as
-- H.check_expression does (each distinct string once).
local TYPES = TY.SIZES
local ARITY = {where = 3, cast = 1}
for op in pairs(BINARY) do ARITY[op] = 2 end
for op in pairs(UNARY) do ARITY[op] = 1 end
local MAX_WALK = 4096
local checked_expr = {}

local function bad(fn, why)
  fail(fn, "the tensor's fields were changed (%s): no kernel runs over it", why)
end
G.bad = bad

local function bad_node(w, what)
  bad(w.fn, "its expression's " .. what)
end

local function check_node(e, w)
  if type(e) ~= "table" or getmetatable(e) ~= nil then bad_node(w, "nodes") end
  w.count = w.count + 1
  if w.count > MAX_WALK then bad_node(w, "nodes") end
  if not TYPES[e.type] then bad_node(w, "types") end
  local kind = e.kind
  if kind == "leaf" then
    if getmetatable(e.x) ~= G.MT then bad_node(w, "operands") end
    return kind
  elseif kind == "scalar" then
    if type(e.value) ~= "number" then bad_node(w, "numbers") end
    return kind
  elseif kind == "index" then
    return kind
  end
  local ct, args = e.ct, e.args
  if (ct ~= nil and not TYPES[ct]) or type(args) ~= "table" or getmetatable(args) ~= nil then
    bad_node(w, "types or operands")
  end
  if kind == "op" then
    if ARITY[e.op] ~= #args then bad_node(w, "ops") end
  elseif kind == "map" then
    local expr, names = e.expr, e.names
    if not ct or type(names) ~= "table" or getmetatable(names) ~= nil or #names ~= #args or
       type(expr) ~= "string" then
      bad_node(w, "map")
    end
    for i = 1, #names do
      local name = names[i]
      if type(name) ~= "string" or not name:find("^[%a_][%w_]*$") then bad_node(w, "map") end
    end
    if not checked_expr[expr] then
      local ok = pcall(H.check_expression, w.fn, "", expr)
      if not ok then bad_node(w, "map") end
      checked_expr[expr] = true
    end
  else
    bad_node(w, "nodes")
  end
  return kind
end

local function walk(e, w)
  local kind = check_node(e, w)
  if kind == "leaf" then
    local k = w.leaf_index[e.x]
    if not k then
      k = #w.leaves + 1
      w.leaves[k] = e.x
      w.leaf_index[e.x] = k
    end
    local key = w.key
    key[#key + 1] = "L"
    key[#key + 1] = num(k)
    key[#key + 1] = e.type
    return w.gen and "v" .. k
  elseif kind == "scalar" then
    local k = #w.scalars + 1
    w.scalars[k] = e
    local key = w.key
    key[#key + 1] = "S"
    key[#key + 1] = e.type
    return w.gen and "s" .. k
  elseif kind == "index" then
    w.key[#w.key + 1] = "I" .. e.type
    return w.gen and format("((%s)li)", e.type)
  end
  local key = w.key
  key[#key + 1] = "("
  key[#key + 1] = kind == "map" and "map" or e.op
  key[#key + 1] = e.type
  key[#key + 1] = e.ct or ""
  local args, list = {}, e.args
  for i = 1, #list do
    local a = list[i]
    local code = walk(a, w)
    if code and e.ct and not (i == 1 and e.op == "where") then code = convert(code, a.type, e.ct) end
    args[i] = code
  end
  w.key[#w.key + 1] = ")"
  if kind == "map" then w.key[#w.key + 1] = "{" .. e.expr .. "|" .. concat(e.names, ",") .. "}" end
  if not w.gen then return nil end
  local code
  if kind == "map" then
    local k = #w.maps + 1
    local params = {}
    for i, name in ipairs(e.names) do params[i] = e.ct .. " " .. name end
    w.maps[k] = format("inline %s lg_map%d(%s) { return (%s)(%s); }", e.ct, k,
                       concat(params, ", "), e.ct, e.expr)
    code = format("lg_map%d(%s)", k, concat(args, ", "))
  elseif e.op == "where" then
    -- ?: promotes char and short to int: cast back
    code = format("((%s)((%s) != 0 ? %s : %s))", e.ct, args[1], args[2], args[3])
  elseif e.op == "cast" then
    code = convert(args[1], e.args[1].type, e.type)
  elseif BINARY[e.op] then
    code = BINARY[e.op](e.ct, args[1], args[2], w.need)
  else
    code = UNARY[e.op](e.ct, args[1])
  end
  return code
end

------------------------------------------------------------------ layout

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

local function vector8(list, nd)
  local v = {}
  for i = 1, 8 do v[i] = 0 end
  -- dims are stored last-first: s0 is the innermost
  for i = 1, nd do v[i] = list[nd - i + 1] end
  return v
end

------------------------------------------------------------------ source

local function source(w, mode, nd, idx, out_type)
  local lines = {}
  for _, h in pairs(w.need) do lines[#lines + 1] = h end
  for _, m in ipairs(w.maps) do lines[#lines + 1] = m end
  local fparams, kparams = {}, {}
  local args_of = {}          -- per leaf: the code of its value
  for k, x in ipairs(w.leaves) do fparams[#fparams + 1] = x._type .. " v" .. k end
  for k, s in ipairs(w.scalars) do fparams[#fparams + 1] = s.type .. " s" .. k end
  fparams[#fparams + 1] = idx .. " li"
  lines[#lines + 1] = format("inline %s lg_f(%s) { return %s; }", out_type,
                             concat(fparams, ", "), w.code)
  kparams[1] = format("global %s* restrict out, %s out_off", out_type, idx)
  if mode == "nd" then kparams[#kparams + 1] = idx .. "8 out_st, " .. idx .. "8 shape" end
  kparams[#kparams + 1] = idx .. " n"
  for k, x in ipairs(w.leaves) do
    kparams[#kparams + 1] = format("global const %s* restrict in%d, %s off%d", x._type, k, idx, k)
    if mode == "nd" then kparams[#kparams + 1] = format("%s8 st%d", idx, k) end
  end
  for k, s in ipairs(w.scalars) do kparams[#kparams + 1] = s.type .. " s" .. k end
  local body = {}
  local function call(values, at)
    local a = {}
    for k = 1, #w.leaves do a[k] = values[k] end
    for k = 1, #w.scalars do a[#a + 1] = "s" .. k end
    a[#a + 1] = at
    return format("lg_f(%s)", concat(a, ", "))
  end
  body[#body + 1] = format("  %s i = (%s)get_global_id(0);", idx, idx)
  if mode == "nd" then
    body[#body + 1] = "  if (i >= n) return;"
    body[#body + 1] = format("  %s r = i, c, o = out_off;", idx)
    local p = {}
    for k = 1, #w.leaves do
      body[#body + 1] = format("  %s p%d = off%d;", idx, k, k)
      p[k] = format("in%d[p%d]", k, k)
    end
    for d = 1, nd do
      local lane = LANES[d]
      if d < nd then
        body[#body + 1] = format("  c = r %% shape.%s; r /= shape.%s;", lane, lane)
      else
        body[#body + 1] = "  c = r;"
      end
      body[#body + 1] = format("  o += c * out_st.%s;", lane)
      for k = 1, #w.leaves do body[#body + 1] = format("  p%d += c * st%d.%s;", k, k, lane) end
    end
    body[#body + 1] = format("  out[o] = %s;", call(p, "i"))
  elseif mode == "flat" then
    body[#body + 1] = "  if (i >= n) return;"
    local p = {}
    for k = 1, #w.leaves do
      p[k] = w.strides[k] == 0 and format("in%d[off%d]", k, k) or format("in%d[off%d + i]", k, k)
    end
    body[#body + 1] = format("  out[out_off + i] = %s;", call(p, "i"))
  else
    body[#body + 1] = format("  %s b = i * %d;", idx, VW)
    body[#body + 1] = "  if (b >= n) return;"
    body[#body + 1] = format("  if (b + %d <= n) {", VW)
    for k, x in ipairs(w.leaves) do
      if w.strides[k] == 0 then
        body[#body + 1] = format("    %s u%d = in%d[off%d];", x._type, k, k, k)
      else
        body[#body + 1] = format("    %s%d u%d = ((global const %s%d*)(in%d + off%d))[i];",
                                 x._type, VW, k, x._type, VW, k, k)
      end
    end
    body[#body + 1] = format("    %s%d r;", out_type, VW)
    for j = 1, VW do
      local p = {}
      for k = 1, #w.leaves do
        p[k] = w.strides[k] == 0 and "u" .. k or format("u%d.%s", k, LANES[j])
      end
      body[#body + 1] = format("    r.%s = %s;", LANES[j], call(p, j == 1 and "b" or "b + " .. (j - 1)))
    end
    body[#body + 1] = format("    ((global %s%d*)(out + out_off))[i] = r;", out_type, VW)
    body[#body + 1] = "  } else {"
    local p = {}
    for k = 1, #w.leaves do
      p[k] = w.strides[k] == 0 and format("in%d[off%d]", k, k) or format("in%d[off%d + j]", k, k)
    end
    body[#body + 1] = format("    for (%s j = b; j < n; j++) out[out_off + j] = %s;", idx, call(p, "j"))
    body[#body + 1] = "  }"
  end
  lines[#lines + 1] = format("kernel void lg_ew(%s) {\n%s\n}", concat(kparams, ",\n    "),
                             concat(body, "\n"))
  return concat(lines, "\n")
end

------------------------------------------------------------------ bounds

-- What a Buffer is, by the Buffer itself (its length, type and device come
-- from the C object, which no script can change), learned once per buffer.
local CAP_N = setmetatable({}, {__mode = "k"})
local CAP_T = setmetatable({}, {__mode = "k"})
local CAP_D = setmetatable({}, {__mode = "k"})
local MAX_DIMS, MAX_ELEMENTS = 8, 1 << 53

-- Checks realized tensor x (fn's) against its storage's Buffer before a
-- kernel or a copy uses it: x's fields live in a Lua table a script can
-- write with rawset, so every position its shape, strides and offset reach
-- must lie in the Buffer, and its type, count and device must be the
-- Buffer's. Every launch over a tensor calls this (O(ndim), no allocation).
-- Returns the Buffer's element count.
function G.check_bounds(fn, x)
  -- with luagpu's metatable, a field missing from x reads nil, as it will
  -- at launch; the shape and strides tables must have none (no __index or
  -- __len that could answer differently later); the storage is read raw
  if getmetatable(x) ~= G.MT then bad(fn, "metatable") end
  local s = x._st
  if type(s) ~= "table" then bad(fn, "no storage") end
  local buf = rawget(s, "buf")
  local cap = CAP_N[buf]
  local kind = gpu_type(buf)
  if kind ~= "Buffer" then
    -- x.buffer handed out, then released
    if kind == "released Buffer" then fail(fn, "the tensor's buffer was released") end
    bad(fn, "its storage holds no buffer")
  end
  -- x.buffer is the view of a pool block's elements when the block is larger
  local view = rawget(s, "view")
  if view and gpu_type(view) ~= "Buffer" then fail(fn, "the tensor's buffer was released") end
  if not cap then
    cap = #buf
    CAP_N[buf], CAP_T[buf], CAP_D[buf] = cap, buf.type, buf.device
  end
  local t = x._type
  if CAP_T[buf] ~= t then
    bad(fn, format("type %s over a buffer of %s", tostring(t), CAP_T[buf]))
  end
  if CAP_D[buf] ~= x._dev then bad(fn, "device is not its buffer's") end
  local shape, st, off = x._shape, x._strides, x._off
  if type(shape) ~= "table" or type(st) ~= "table" or getmetatable(shape) ~= nil or
     getmetatable(st) ~= nil or mathtype(off) ~= "integer" or off < 0 then
    bad(fn, "shape, strides or offset")
  end
  local nd = #shape
  if nd > MAX_DIMS or #st ~= nd then bad(fn, "shape or strides") end
  local n, last, over = 1, off, false
  for i = 1, nd do
    local d, k = shape[i], st[i]
    if mathtype(d) ~= "integer" or mathtype(k) ~= "integer" or d < 0 or k < 0 then
      bad(fn, "shape or strides")
    end
    if d > 1 then
      if n > MAX_ELEMENTS // d then bad(fn, "shape") end
      n = n * d
      if k > 0 and not over then
        if d - 1 > (cap - 1 - last) // k then over = true else last = last + (d - 1) * k end
      end
    elseif d == 0 then
      n = 0
    end
  end
  if x._n ~= n then bad(fn, "count") end
  if n > 0 and (over or last >= cap) then
    bad(fn, format("its elements reach past its buffer of %d", cap))
  end
  return cap
end
local check_bounds = G.check_bounds

------------------------------------------------------------------ run

local cache = ST.device_cache()
local NO_EVENT = {event = false}
local GLOBAL = {0}

local function kernel_for(fn, dev, key, make_source)
  local entries = cache[dev]
  if not entries then entries = {}; cache[dev] = entries end
  local k = entries[key]
  if k then return k end
  local src = make_source()
  local ok, prog = pcall(dev.build, dev, src)
  if not ok then
    fail(fn, "the generated kernel does not compile on %s: %s\n%s", dev.name,
         tostring(prog), src)
  end
  G.kernels_built = G.kernels_built + 1
  k = prog.lg_ew
  local wg = min(LOCAL, k.work_group_size)
  entries[key] = {kernel = k, wg = wg, local_size = {wg}, calls = setmetatable({}, {__mode = "k"})}
  return entries[key]
end
G.kernel_for = kernel_for

-- Whether a kernel argument b binds as a did: the same value of the same
-- Lua number type, and for zeros the same sign (0.0 == -0.0, yet 1 / x
-- tells them apart); NaN is never the same (the call is made again).
local function same_value(a, b)
  return a == b and mathtype(a) == mathtype(b) and (a ~= 0 or 1 / a == 1 / b)
end

-- The bound call of entry's kernel with args: the one made last for the
-- same output buffer when its arguments are the same values (binding checks
-- and converts every argument: it costs more than the launch), else a new
-- one, kept when every buffer it holds is a pool block (a call must not
-- keep a script's buffer alive) and it has no vector arguments.
local function bound_call(entry, mode, out, leaves, args)
  local calls = entry.calls
  local outbuf = args[1]
  local c = calls[outbuf]
  if c then
    local old, same = c.args, #c.args == #args
    for i = 2, #args do
      if not same then break end
      if not same_value(old[i], args[i]) then same = false end
    end
    if same then return c.call end
  end
  local call = entry.kernel(unpack(args))
  local keep = mode ~= "nd" and out._st.pool ~= nil
  for _, x in ipairs(leaves) do
    if not x._st.pool then keep = false end
  end
  calls[outbuf] = keep and {args = args, call = call} or nil
  return call
end

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

local ONE, CONTIGUOUS = {1}, {{1}}

-- The walk's tables, reused from call to call (G.run does not nest) and
-- emptied after each, so they keep no tensor alive.
local W = {leaves = {}, leaf_index = {}, scalars = {}, key = {}, maps = {}, need = {}, count = 0}

local function clear_list(t)
  for i = #t, 1, -1 do t[i] = nil end
end

local function clear(w)
  clear_list(w.leaves)
  clear_list(w.scalars)
  clear_list(w.key)
  clear_list(w.maps)
  for k in pairs(w.leaf_index) do w.leaf_index[k] = nil end
  for k in pairs(w.need) do w.need[k] = nil end
  w.gen, w.code, w.strides, w.fn, w.count = nil, nil, nil, nil, 0
end

-- The fast path of G.run: an op over one or two operands that are leaves
-- (row-major, the result's shape) or scalars, into a row-major result of
-- the op's type, all below 2^31 elements. Its kernel key is found through
-- nested tables by the op, types, operand kinds and mode (no walk, no
-- string built), and its bound call is reused when the arguments match.
-- FAST[op][ct][type][sig1][sig2][mode] = the key G.run made the first time.
local FAST = {}
local LEAF_SIG, SCALAR_SIG, SAME_SIG = {}, {}, "="
for t in pairs(TY.SIZES) do LEAF_SIG[t] = "L" .. t; SCALAR_SIG[t] = "S" .. t end

local function fast_sig(fn, a, first, n, shape)
  if type(a) ~= "table" or getmetatable(a) ~= nil then return nil end
  local kind = a.kind
  if kind == "scalar" then return SCALAR_SIG[a.type] end
  if kind ~= "leaf" then return nil end
  local x = a.x
  if first and x == first then return SAME_SIG end
  -- (the index width follows the Buffer's own length, not the storage's
  -- count a script could rewrite)
  if check_bounds(fn, x) >= BIG or not plain(x, shape, n) then return nil end
  return LEAF_SIG[x._type]
end

-- The node table under t[k], made when missing.
local function sub(t, k)
  local v = t[k]
  if not v then v = {}; t[k] = v end
  return v
end

-- The nested FAST table for e into out and the mode, or nil when e does
-- not take the fast path.
local function fast_slot(fn, e, out, n, cap)
  -- a node a script changed is left to the walk (which raises); nodes and
  -- operand lists without metatables read the same here and in run_fast
  local args, ct = e.args, e.ct
  if e.kind ~= "op" or getmetatable(e) ~= nil or type(args) ~= "table" or
     getmetatable(args) ~= nil or ARITY[e.op] ~= #args or #args > 2 or e.op == "where" or
     e.op == "cast" or (ct ~= nil and not TYPES[ct]) or out._type ~= e.type or n >= BIG or
     cap >= BIG then
    return nil
  end
  local shape = out._shape
  if not plain(out, shape, n) then return nil end
  local a1, a2 = args[1], args[2]
  local s1 = fast_sig(fn, a1, nil, n, shape)
  if not s1 then return nil end
  local s2 = "-"
  if a2 then
    s2 = fast_sig(fn, a2, a1.kind == "leaf" and a1.x, n, shape)
    if not s2 then return nil end
  end
  local aligned = out._off % VW == 0
  if a1.kind == "leaf" and a1.x._off % VW ~= 0 then aligned = false end
  if a2 and a2.kind == "leaf" and a2.x._off % VW ~= 0 then aligned = false end
  local mode = (aligned and n >= VW) and "vec" or "flat"
  local t = FAST[e.op] or sub(FAST, e.op)
  ct = ct or ""
  t = t[ct] or sub(t, ct)
  t = t[e.type] or sub(t, e.type)
  t = t[s1] or sub(t, s1)
  return t[s2] or sub(t, s2), mode
end

local ARGS = {}

local function run_fast(fn, e, out, n, slot, mode)
  local key = slot[mode]
  if not key then return false end
  local dev = out._dev
  local entries = cache[dev]
  local entry = entries and entries[key]
  if not entry then return false end
  local args = ARGS
  local outbuf = out._st.buf
  args[1], args[2], args[3] = outbuf, out._off, n
  local m = 3
  local l1, l2
  local list = e.args
  for i = 1, #list do
    local a = list[i]
    if a.kind == "leaf" then
      local x = a.x
      if x ~= l1 then
        if l1 then l2 = x else l1 = x end
        args[m + 1], args[m + 2] = x._st.buf, x._off
        m = m + 2
      end
    end
  end
  local fixed = m           -- buffers and integers; then the scalars
  for i = 1, #list do
    local a = list[i]
    if a.kind == "scalar" then
      local v = a.value
      if type(v) ~= "number" then bad(fn, "its expression's numbers") end
      m = m + 1; args[m] = v
    end
  end
  for i = #args, m + 1, -1 do args[i] = nil end
  local call
  local c = entry.calls[outbuf]
  if c then
    local old = c.args
    if #old == m then
      call = c.call
      for i = 2, fixed do
        if old[i] ~= args[i] then call = nil; break end
      end
      for i = fixed + 1, call and m or 0 do
        if not same_value(old[i], args[i]) then call = nil; break end
      end
    end
  end
  if not call then
    local copy = {unpack(args, 1, m)}
    call = entry.kernel(unpack(copy))
    local keep = out._st.pool ~= nil and (not l1 or l1._st.pool ~= nil) and
                 (not l2 or l2._st.pool ~= nil)
    entry.calls[outbuf] = keep and {args = copy, call = call} or nil
  end
  for i = 1, m do args[i] = nil end
  local units = mode == "vec" and (n + VW - 1) // VW or n
  local wg = entry.wg
  GLOBAL[1] = (units + wg - 1) // wg * wg
  call:run(GLOBAL, entry.local_size, NO_EVENT)
  return true
end

function G.run(fn, e, out)
  local cap = check_bounds(fn, out)
  local n = out._n
  if n == 0 then return end
  local slot, slot_mode = fast_slot(fn, e, out, n, cap)
  if slot and run_fast(fn, e, out, n, slot, slot_mode) then return end
  local w = W
  clear(w)
  w.fn = fn
  walk(e, w)
  local big = n >= BIG or cap >= BIG
  for _, x in ipairs(w.leaves) do
    if check_bounds(fn, x) >= BIG then big = true end
  end
  local shape = out._shape
  local sshape, ssets
  local fast = plain(out, shape, n)
  for _, x in ipairs(w.leaves) do
    if not fast then break end
    fast = plain(x, shape, n)
  end
  if fast then
    -- every operand row-major with the result's shape: one flat dim
    sshape, ssets = ONE, CONTIGUOUS
    for k = 1, #w.leaves do ssets[k + 1] = ONE end
  else
    local sets = {out._strides}
    for k, x in ipairs(w.leaves) do sets[k + 1] = broadcast_strides(x, shape) end
    sshape, ssets = simplify(shape, sets)
  end
  local nd = #sshape
  local idx = big and "ulong" or "uint"
  local mode = "nd"
  w.strides = {}
  if nd == 1 and ssets[1][1] == 1 then
    mode = "flat"
    local aligned = out._off % VW == 0
    for k = 1, #w.leaves do
      local s = ssets[k + 1][1]
      if s ~= 0 and s ~= 1 then mode = "nd"; break end
      w.strides[k] = s
      if s == 1 and w.leaves[k]._off % VW ~= 0 then aligned = false end
    end
    if mode == "flat" and aligned and n >= VW then mode = "vec" end
  end
  local kt = w.key
  kt[#kt + 1] = "|"
  kt[#kt + 1] = mode
  kt[#kt + 1] = num(nd)
  kt[#kt + 1] = idx
  kt[#kt + 1] = out._type
  if mode ~= "nd" then
    for k = 1, #w.strides do kt[#kt + 1] = w.strides[k] == 0 and ",0" or ",1" end
  end
  local key = concat(kt)
  if slot and slot_mode == mode then slot[mode] = key end
  local dev = out._dev
  local entries = cache[dev]
  local entry = entries and entries[key]
  if not entry then
    entry = kernel_for(fn, dev, key, function()
      w.gen, w.key, w.count = true, {}, 0
      w.leaves, w.leaf_index, w.scalars = {}, {}, {}
      w.code = walk(e, w)
      return source(w, mode, nd, idx, out._type)
    end)
  end
  local args = {out._st.buf, out._off}
  if mode == "nd" then
    args[#args + 1] = vector8(ssets[1], nd)
    args[#args + 1] = vector8(sshape, nd)
  end
  args[#args + 1] = n
  for k, x in ipairs(w.leaves) do
    args[#args + 1] = x._st.buf
    args[#args + 1] = x._off
    if mode == "nd" then args[#args + 1] = vector8(ssets[k + 1], nd) end
  end
  for _, s in ipairs(w.scalars) do args[#args + 1] = s.value end
  local units = mode == "vec" and (n + VW - 1) // VW or n
  local wg = entry.wg
  local global = (units + wg - 1) // wg * wg
  GLOBAL[1] = global
  bound_call(entry, mode, out, w.leaves, args):run(GLOBAL, entry.local_size, NO_EVENT)
  if fast then for k = #ssets, 2, -1 do ssets[k] = nil end end
  clear(w)
end

return G
