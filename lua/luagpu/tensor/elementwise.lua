-- luagpu.tensor.elementwise: the elementwise methods and operators (one
-- per row of luagpu.tensor.ops), clamp, where, astype, map, set, clone and
-- dev:arange (internal to luagpu.tensor, which puts them in place).
--
--   E.methods          Tensor methods by name (add .. tanh, clamp, astype,
--                      map, set, clone)
--   E.metamethods      __add .. __unm, from the op table's meta fields
--   E.ops[name]        the elementwise function of every binary and unary
--                      op, methods or not (E.ops.min, E.ops.max: x:min(y))
--   E.where            gpu.where(mask, a, b)
--   E.clone(x)         a contiguous copy of x in a new storage
--   E.arange           dev:arange(type, ...)
--   E.loop_count(first, last, step)   how many times Lua's numeric for runs
--
-- Each operation checks its operands, builds an expression node
-- (luagpu.tensor.expr) and returns its result, lazy when allowed; kernels
-- come from luagpu.tensor.codegen.

local H = require "luagpu.core.check"
local TY = require "luagpu.core.types"
local O = require "luagpu.tensor.object"
local X = require "luagpu.tensor.expr"
local OPS = require "luagpu.tensor.ops"
local G = require "luagpu.tensor.codegen"
local new_tensor = require("luagpu.tensor.create").new_tensor
local TRANSPOSE = require "luagpu.tensor.transpose"

local type, ipairs, next, tostring, rawget, select = type, ipairs, next, tostring, rawget, select
local setmetatable = setmetatable
local mtype = math.type
local fail, typename, show = H.fail, H.typename, H.show
local SIZES, promote, floating, FLOATS = TY.SIZES, TY.promote, TY.floating, TY.FLOATS
local is_tensor, show_shape, TAG, no_more = O.is_tensor, O.show_shape, O.TAG, O.no_more
local leaf, node_of, realize, result, result_over = X.leaf, X.node_of, X.realize, X.result,
  X.result_over
local check, check_operand, combined_type, operand = X.check, X.check_operand, X.combined_type,
  X.operand
local broadcast, same_shape, device_of, positioned = X.broadcast, X.same_shape, X.device_of,
  X.positioned
local settings, WEAK_KEYS = X.settings, X.WEAK_KEYS

local E = {methods = {}, metamethods = {}, ops = {}}
local methods = E.methods

------------------------------------------------------------------ loop counts

local MAX_ELEMENTS = 1 << 53
local ult, floor, ceil = math.ult, math.floor, math.ceil

-- The unsigned quotient of the 64-bit words n and d (d ~= 0), as Lua's
-- integers hold them.
local function udiv(n, d)
  if d < 0 then return ult(n, d) and 0 or 1 end
  if n >= 0 then return n // d end
  local q = ((n >> 1) // d) << 1
  if not ult(n - q * d, d) then q = q + 1 end
  return q
end

-- The unsigned 64-bit word n in decimal.
local function udecimal(n)
  if n >= 0 then return tostring(n) end
  local q = udiv(n, 10)
  return tostring(q) .. tostring(n - q * 10)
end

-- How many times Lua's `for v = first, last, step` runs (numbers, no NaN,
-- step ~= 0): at most 2^53, else nil and the count in decimal. Integer
-- first and step make an integer loop (last floored, or ceiled when step
-- < 0, and clipped to the integers), counted as Lua counts it, in
-- unsigned words that cannot wrap; else the loop is of floats, its
-- elements first + (i - 1) * step not past last.
local function loop_count(first, last, step)
  if mtype(first) == "integer" and mtype(step) == "integer" then
    if mtype(last) ~= "integer" then
      local l = step > 0 and floor(last) or ceil(last)
      if mtype(l) ~= "integer" then          -- beyond the integers
        if (last > 0) == (step < 0) then return 0 end
        l = last > 0 and math.maxinteger or math.mininteger
      end
      last = l
    end
    if (step > 0 and first > last) or (step < 0 and first < last) then return 0 end
    local count = step > 0 and udiv(last - first, step) or udiv(first - last, -(step + 1) + 1)
    if count >= 0 and count < MAX_ELEMENTS then return count + 1 end
    return nil, count == -1 and "18446744073709551616" or udecimal(count + 1)
  end
  first, last, step = first + 0.0, last + 0.0, step + 0.0
  -- (last on the wrong side: none, also by an infinite step, where the
  -- count below is -0.0, not below 0)
  if (step > 0 and first > last) or (step < 0 and first < last) then return 0 end
  local count = (last - first) / step
  -- NaN: inf - inf, or inf / inf: a loop that never ends
  if count ~= count then return nil, "inf" end
  if count >= MAX_ELEMENTS then return nil, show(floor(count) + 1) end
  if count < 0 then return 0 end
  local n = floor(count) + 1
  while n > 0 and ((step > 0 and first + (n - 1) * step > last) or
                   (step < 0 and first + (n - 1) * step < last)) do n = n - 1 end
  -- (an element more only where it moves on from the one before: past
  -- 2^53 a step of 1 rounds away, and 2^62 to 2^62 by 1 gave 513 elements)
  while n < MAX_ELEMENTS do
    local v, before = first + n * step, first + (n - 1) * step
    if not ((step > 0 and v <= last and v > before) or (step < 0 and v >= last and v < before))
    then break end
    n = n + 1
  end
  return n
end
E.loop_count = loop_count

-- The ulong word (a Lua integer, wrapped from 2^63 as the kernels hold
-- it) of an integral number from 0 to below 2^64.
local function ulong_word(v)
  return math.tointeger(v) or math.tointeger(v - 2.0^64)
end

-- How many elements first + (i - 1) * step (first - (i - 1) * |step| for a
-- negative step) a ulong arange reaching 2^63 (first, last or step) has
-- not past last (floored, or ceiled stepping down, and clipped to ulong's
-- range), counted in ulong words as the kernel computes them; nil and the
-- count in decimal past 2^53.
local function ulong_count(first, last, step)
  if (step > 0 and last < first) or (step < 0 and last > first) then return 0 end
  local f, l = ulong_word(first), nil
  if step > 0 then
    l = last >= 2.0^64 and -1 or ulong_word(floor(last))
  else
    l = last < 0 and 0 or ulong_word(ceil(last))
  end
  local size = step > 0 and ulong_word(step) or -step
  local count = udiv(step > 0 and l - f or f - l, size)
  if count >= 0 and count < MAX_ELEMENTS then return count + 1 end
  return nil, count == -1 and "18446744073709551616" or udecimal(count + 1)
end

------------------------------------------------------------------ operators

local RELEASED, released = O.RELEASED, O.released
-- The shape of the number's node in an op of a tensor and a number: no
-- one reads it (the op's shape is the tensor's), so one table serves all.
local NO_DIMS = {}

-- The result of op name over tensor x and the Lua number v (argument
-- #varg: 1 when v comes first), as X.apply makes it: the same checks, in
-- its order, and the same node (its operands in its own list part).
-- (A released operand is named past the first, self's place, as
-- X.check_operand names it.)
local function with_scalar(fn, op, floatify, x, v, varg)
  local t = x._type
  if not SIZES[t] then check(fn, 3 - varg, x, true) end
  if x._st == RELEASED then released(fn, varg == 1 and 2 or nil) end
  -- (TY.with_number and TY.fits, inline where the type is floating)
  local ct = t
  if not FLOATS[t] then
    ct = TY.with_number(t, v)
    if floatify then ct = floating(ct) end
    local why = TY.fits(ct, v)
    if why then fail(fn, "argument #%d: %s", varg, why) end
  end
  local nx = x._expr or leaf(x, fn)
  if type(nx) ~= "table" then O.check_fields(fn, x) end   -- (it raises)
  if type(nx.shape) ~= "table" then   -- a shape a script wrote: apply's way, checked at launch
    return X.apply(fn, op, varg == 2 and {x, v} or {v, x}, ct)
  end
  local sv = {kind = "scalar", value = v, type = ct, shape = NO_DIMS, size = 1}
  local first, second = nx, sv
  if varg == 1 then first, second = sv, nx end
  local e = {first, second, kind = "op", op = op.name, args = false, ct = ct,
             type = op.result or ct, shape = nx.shape, size = nx.size + 2, fn = fn,
             _stores = false}
  e.args = e
  return result_over(x._dev, e, nx)
end

-- The function of binary op (a row of luagpu.tensor.ops): a(op)b for
-- tensors and numbers.
local function binary_op(op)
  local fn, name, floatify, rtype = "tensor:" .. op.name, op.name, op.floating, op.result
  return function(a, b)
    -- two tensors of one device: the same checks and node as apply's,
    -- without its lists
    local ka, kb = type(a), type(b)
    if ka == "table" and kb == "table" and rawget(a, TAG) and rawget(b, TAG) and
       a._dev == b._dev then
      local ta, tb = a._type, b._type
      if not SIZES[ta] then check(fn, 1, a, true) end
      if not SIZES[tb] then check(fn, 2, b, true) end
      if a._st == RELEASED or b._st == RELEASED then
        released(fn, a._st ~= RELEASED and 2 or nil)
      end
      local ct = ta == tb and ta or promote(ta, tb)
      if floatify then ct = floating(ct) end
      local ea, eb = a._expr, b._expr
      local na, nb = ea or leaf(a, fn), eb or leaf(b, fn)
      if type(na) ~= "table" then O.check_fields(fn, a) end   -- (they raise)
      if type(nb) ~= "table" then O.check_fields(fn, b) end
      local sa, sb = na.shape, nb.shape
      if type(sa) ~= "table" or type(sb) ~= "table" then O.bad(fn, "shape, strides or offset") end
      local shape = same_shape(sa, sb) and sa or broadcast(fn, sa, sb)
      local e = {na, nb, kind = "op", op = name, args = false, ct = ct, type = rtype or ct,
                 shape = shape, size = 1 + na.size + nb.size, fn = fn, _stores = false}
      e.args = e
      if ea or eb or not settings.lazy then return result(a._dev, e, fn) end
      -- two realized operands: result's rules, inline
      local st_a, st_b = a._st, b._st
      if type(st_a) ~= "table" then O.check_fields(fn, a) end   -- (they raise)
      if type(st_b) ~= "table" then O.check_fields(fn, b) end
      e._stores = st_a == st_b and {st_a} or {st_a, st_b}
      local x = O.lazy(a._dev, e)
      if st_a.exposed or st_b.exposed then return realize(x) end
      local r = st_a.readers
      if not r then r = setmetatable({}, WEAK_KEYS); st_a.readers = r end
      r[x] = true
      r = st_b.readers
      if not r then r = setmetatable({}, WEAK_KEYS); st_b.readers = r end
      r[x] = true
      return x
    end
    -- a tensor and a number (either order): apply's checks and node, inline
    if kb == "number" and ka == "table" and rawget(a, TAG) then
      return with_scalar(fn, op, floatify, a, b, 2)
    elseif ka == "number" and kb == "table" and rawget(b, TAG) then
      return with_scalar(fn, op, floatify, b, a, 1)
    end
    -- both checked by number: ipairs would stop at a nil
    check_operand(fn, 1, a)
    check_operand(fn, 2, b)
    local vals = {a, b}
    local ct = combined_type(vals)
    return X.apply(fn, op, vals, floatify and floating(ct) or ct)
  end
end

-- The function of unary op: op(x) for a tensor x.
local function unary_op(op)
  local fn, floatify = "tensor:" .. op.name, op.floating
  local name, rtype = op.name, op.result
  return function(x)
    if type(x) ~= "table" or not rawget(x, TAG) or not SIZES[x._type] then
      check(fn, 0, x, true)
    end
    if x._st == RELEASED then released(fn) end
    local ct = floatify and floating(x._type) or x._type
    local nx = x._expr or leaf(x, fn)
    if type(nx) ~= "table" then O.check_fields(fn, x) end   -- (it raises)
    if type(nx.shape) ~= "table" then return X.apply(fn, op, {x}, ct) end
    -- X.apply's node for one operand (its shape the operand's: a broadcast
    -- of one shape is itself)
    local e = {nx, kind = "op", op = name, args = false, ct = ct, type = rtype or ct,
               shape = nx.shape, size = nx.size + 1, fn = fn, _stores = false}
    e.args = e
    return result_over(x._dev, e, nx)
  end
end

-- Operand v (argument #arg) of a bitwise op as an integer operand: an integral Lua float
-- becomes the integer (as Lua's own & | ~ << >> take it); a tensor or
-- another value is left to the op's checks. Returns v and its type's
-- name for messages (nil for what the op's checks will refuse).
local function integer_operand(fn, arg, v)
  if type(v) == "number" then
    if mtype(v) == "float" then
      local i = math.tointeger(v)
      if not i then fail(fn, "argument #%d: %s has no integer representation", arg, show(v)) end
      return i, "integer"
    end
    return v, "integer"
  end
  if type(v) == "table" and rawget(v, TAG) and type(v._type) == "string" and SIZES[v._type] then
    return v, v._type
  end
  return v, nil
end

local INTEGER_BITS = {}
for t, size in next, SIZES do if not FLOATS[t] then INTEGER_BITS[t] = size * 8 end end

-- The function of op f (a row with integers = true) for integer operands
-- only: a float tensor or a float without an integer value raises, naming
-- the operands' types. A Lua number as a shift's count (x << n, x >> n)
-- needs not fit x's type: counts past the width are clipped to it, and a
-- negative count shifts the other way (the same results, see ops.lua).
local function integers_only(op, f)
  local fn, name = "tensor:" .. op.name, op.name
  if op.arity == 1 then
    return function(x)
      local _, t = integer_operand(fn, 0, x)
      if t and FLOATS[t] then
        fail(fn, "expected an integer tensor (char .. ulong), got %s", t)
      end
      return f(x)
    end
  end
  local shift = name == "lshift" or name == "rshift"
  return function(a, b)
    local ta, tb
    a, ta = integer_operand(fn, 1, a)
    b, tb = integer_operand(fn, 2, b)
    if not ta or not tb then return f(a, b) end      -- (raises: not an operand)
    if FLOATS[ta] or FLOATS[tb] then
      fail(fn, "expected integer operands (char .. ulong tensors or integers), got %s and %s",
           ta, tb)
    end
    local bits = shift and type(b) == "number" and INTEGER_BITS[ta]
    if bits then
      if b < 0 then
        b = b < -bits and bits or -b
        return E.ops[name == "lshift" and "rshift" or "lshift"](a, b)
      end
      if b > bits then b = bits end
    end
    return f(a, b)
  end
end

-- The method of op f (x:add(y), x:exp()): f, but any argument past the
-- op's operands raises (x:add(y, 3), x:add(y, nil, 3), x:exp(1)); nils
-- there are no arguments (x:add(y, nil) is x:add(y)). Operators call f
-- itself and pay nothing for the check; a method pays a count of its
-- extra arguments (one call of select) and a tail call.
local function method_of(op, f)
  local fn = "tensor:" .. op.name
  if op.arity == 1 then
    return function(x, ...)
      if select("#", ...) ~= 0 then no_more(fn, 1, ...) end
      return f(x)
    end
  end
  return function(a, b, ...)
    if select("#", ...) ~= 0 then no_more(fn, 2, ...) end
    return f(a, b)
  end
end

for _, op in ipairs(OPS.list) do
  local f
  if op.rule ~= "where" and op.rule ~= "cast" then
    f = op.arity == 2 and binary_op(op) or unary_op(op)
  end
  if f and op.integers then f = integers_only(op, f) end
  if f then
    E.ops[op.name] = f
    if op.method then
      local m = method_of(op, f)
      methods[op.name] = m
      for _, alias in ipairs(op.aliases) do methods[alias] = m end
    end
    if op.meta then E.metamethods[op.meta] = f end
  end
end

local emin, emax = E.ops.min, E.ops.max

-- x:clamp(lo, hi): max(x, lo) then min(.., hi); a nil bound is not
-- applied (x:clamp(lo) is a lower bound only, x:clamp(nil, hi) an upper
-- one), as PyTorch's clamp(min=, max=). A NaN of a floating x stays NaN
-- (NumPy's clip, PyTorch's clamp); a NaN bound is no bound (fmax, fmin).
function methods.clamp(x, lo, hi, ...)
  local fn = "tensor:clamp"
  check(fn, 0, x, true)
  no_more(fn, 3, ...)
  if lo == nil and hi == nil then
    fail(fn, "expected a lower bound (argument #1), an upper bound (argument #2) or both, " ..
         "got neither")
  end
  if lo ~= nil then check_operand(fn, 1, lo) end
  if hi ~= nil then check_operand(fn, 2, hi) end
  -- a number bound must fit the type it meets (x's; for hi, that of
  -- max(x, lo)), said here: max and min would name themselves and their
  -- own argument
  local function fits(arg, r, v)
    if type(v) == "number" then
      local why = TY.fits(TY.with_number(r._type, v), v)
      if why then fail(fn, "argument #%d: %s", arg, why) end
    end
  end
  -- a number bound an integer type cannot reach (a lower one below its
  -- least, an upper one above its greatest, as NumPy's clip of uint8 by
  -- -2) bounds nothing: not applied
  local function unreachable(r, v, low)
    if type(v) ~= "number" or v ~= v or FLOATS[r._type] then return false end
    local t = TY.with_number(r._type, v)
    local range = TY.RANGES[t]
    if FLOATS[t] or not range then return false end
    if low then return v < range[1] end
    return t ~= "ulong" and v > range[2]
  end
  local r = x
  if lo ~= nil and not unreachable(r, lo, true) then
    fits(1, r, lo)
    r = emax(r, lo)
  end
  if hi ~= nil and not unreachable(r, hi, false) then
    fits(2, r, hi)
    r = emin(r, hi)
  end
  if r == x then return x:clone() end   -- (a new tensor, as always)
  if FLOATS[x._type] then r = E.where(E.ops.isnan(x), x, r) end   -- (one fused kernel)
  return r
end

-- gpu.where(mask, a, b): a where mask is not 0, else b (broadcast).
function E.where(mask, a, b, ...)
  local fn = "gpu.where"
  no_more(fn, 4, ...)
  if not is_tensor(mask) then
    fail(fn, "argument #1: expected a tensor (a mask), got %s", typename(mask))
  end
  check_operand(fn, 1, mask)
  check_operand(fn, 2, a)
  check_operand(fn, 3, b)
  if not is_tensor(a) and not is_tensor(b) then
    local t = type(a) == "number" and mtype(a) == "float" or mtype(b) == "float"
    a = new_tensor(mask._dev, t and "float" or "long", {}, a)
  end
  local vals = {mask, a, b}
  local dev = device_of(fn, vals)
  local ct = combined_type{a, b}
  local m = node_of(mask)
  local na, nb = operand(fn, 2, a, ct), operand(fn, 3, b, ct)
  local shape = broadcast(fn, broadcast(fn, m.shape, na.shape), nb.shape)
  return result(dev, {kind = "op", op = "where", args = {m, na, nb}, ct = ct, type = ct,
                      shape = shape, size = 1 + m.size + na.size + nb.size}, fn)
end

function methods.astype(x, t, ...)
  local fn = "tensor:astype"
  check(fn, 0, x, true)
  no_more(fn, 2, ...)
  O.check_type(fn, "argument #1", t)
  O.check_device_type(fn, x._dev, t)
  local a = node_of(x)
  return result(x._dev, {kind = "op", op = "cast", args = {a}, type = t, shape = a.shape,
                         size = a.size + 1}, fn)
end

------------------------------------------------------------------ map

local RESERVED = {li = true}
for w in ([[auto break case char const continue default do double else enum extern float
  for goto if int long register return short signed sizeof static struct switch typedef union
  unsigned void volatile while inline restrict _Bool _Complex _Imaginary bool true false
  kernel __kernel global __global local __local constant __constant private __private
  generic __generic read_only write_only read_write half size_t ptrdiff_t intptr_t uintptr_t
  uchar ushort uint ulong image2d_t image3d_t sampler_t event_t asm __asm __asm__ typeof
  _Alignof _Alignas _Atomic _Generic _Noreturn _Static_assert _Thread_local _Pragma
  __pragma]]):gmatch("%S+") do
  RESERVED[w] = true
end

-- x:map(expr [, vars]): one kernel computing the OpenCL C expression
-- expr of x (named x) and vars (names -> numbers or tensors), in the
-- type they all promote to.
function methods.map(x, expr, vars, ...)
  local fn = "tensor:map"
  check(fn, 0, x, true)
  no_more(fn, 3, ...)
  if type(expr) ~= "string" then
    fail(fn, "argument #1: expected an OpenCL C expression, got %s", typename(expr))
  end
  H.check_expression(fn, "argument #1", expr)
  if vars ~= nil and type(vars) ~= "table" then
    fail(fn, "argument #2: expected a table of variables, got %s", typename(vars))
  end
  local names, vals = {"x"}, {x}
  if vars then
    local list = {}
    for k in next, vars do list[#list + 1] = k end
    for _, k in ipairs(list) do
      if type(k) ~= "string" or not k:match("^[%a_][%w_]*$") or RESERVED[k] or
         RESERVED[k:match("^(%a+)%d+$") or false] or k:match("^lg_") or k:match("^get_") then
        fail(fn, "argument #2: %s is not a usable variable name (an identifier, not a C or " ..
             "OpenCL C keyword or type name, not li, not starting with lg_ or get_: " ..
             "luagpu's generated code uses those)", show(k))
      end
      if k == "x" then fail(fn, "argument #2: 'x' names the tensor itself") end
    end
    table.sort(list)
    for _, k in ipairs(list) do
      local v = rawget(vars, k)
      check_operand(fn, 2, v)
      names[#names + 1], vals[#vals + 1] = k, v
    end
  end
  local dev = device_of(fn, vals)
  local ct = combined_type(vals)
  local args, shape, size = {}, {}, 1
  for i, v in ipairs(vals) do
    if type(v) == "number" then
      local why = TY.fits(ct, v)
      if why then fail(fn, "argument #2: %s: %s", names[i], why) end
    end
    args[i] = operand(fn, 2, v, ct)
    shape = broadcast(fn, shape, args[i].shape)
    size = size + args[i].size
  end
  return result(dev, {kind = "map", expr = expr, names = names, args = args, ct = ct,
                      type = ct, shape = shape, size = size}, fn)
end

------------------------------------------------------------------ set, clone

-- Whether tree e reads storage s.
local function reads(e, s)
  if e.kind == "leaf" then return e.x._st == s end
  if e.args then
    for _, a in ipairs(e.args) do if reads(a, s) then return true end end
  end
  return false
end

-- Whether shape a broadcasts to shape b (b unchanged).
local function broadcasts_to(a, b)
  local na, nb = #a, #b
  if na > nb then return false end
  for i = 1, na do
    local da = a[i]
    if da ~= 1 and da ~= b[i + nb - na] then return false end
  end
  return true
end

-- x:set(v): v (a number, or a tensor broadcast to x's shape) written into
-- x's elements (a view writes its base). v's type must promote to x's
-- (an int view takes int or narrower, not double: astype first).
function methods.set(x, v, ...)
  local fn = "tensor:set"
  check(fn, 0, x)
  no_more(fn, 2, ...)
  local e
  if type(v) == "number" then
    local why = TY.fits(x._type, v)
    if why then fail(fn, "argument #1: %s", why) end
    e = {kind = "scalar", value = v, type = x._type, shape = {}, size = 1}
  elseif is_tensor(v) then
    check(fn, 1, v, true)
    O.check_same_device(fn, 1, v, x._dev)
    if promote(x._type, v._type) ~= x._type then
      fail(fn, "argument #1: cannot write %s values into a %s tensor without a loss " ..
           "(%s and %s promote to %s): convert with :astype(%q)", v._type, x._type,
           x._type, v._type, promote(x._type, v._type), x._type)
    end
    if not broadcasts_to(v._shape, x._shape) then
      fail(fn, "argument #1: shape %s does not broadcast to %s", show_shape(v._shape),
           show_shape(x._shape))
    end
    e = positioned(x._dev, node_of(v), x._shape)
    if reads(e, x._st) then
      -- reading what is written: evaluate v apart first
      e = node_of(v._expr and realize(v) or v)
      if reads(e, x._st) then e = leaf(E.clone(v)) end
    end
    if e.type ~= x._type then
      e = {kind = "op", op = "cast", args = {e}, type = x._type, shape = e.shape,
           size = e.size + 1}
    end
  else
    fail(fn, "argument #1: expected a tensor or a number, got %s", typename(v))
  end
  X.flush_readers(x._st)
  G.run(fn, e, x)
  return x
end

-- A contiguous copy of x (which the caller checked) in a new storage, made
-- as fn's: a copy too large raises under fn's name.
function E.copy(fn, x)
  if x._expr then realize(x) end
  local out = O.empty(fn, x._dev, x._type, x._shape)
  -- (a view of swapped last dims, M:t(): by tiles, both sides coalesced)
  if not x._expr and out._n > 0 and TRANSPOSE.copy(fn, x, out) then return out end
  G.run(fn, leaf(x), out)
  return out
end
O.copy = E.copy

-- x (checked; a lazy x evaluated in its own storage) where it is
-- contiguous, else E.copy(fn, x).
function E.contiguous(fn, x)
  check(fn, 0, x)
  if O.is_contiguous(x) then return x end
  return E.copy(fn, x)
end
O.contiguous = E.contiguous

function E.clone(x, ...)
  local fn = "tensor:clone"
  check(fn, 0, x)
  no_more(fn, 1, ...)
  return E.copy(fn, x)
end
methods.clone = E.clone

------------------------------------------------------------------ arange

-- dev:arange(type, n): 1, 2, ..., n; dev:arange(type, first, last [, step]):
-- first, first + step, ... up to last, as `for v = first, last, step`.
function E.arange(dev, t, first, last, step, ...)
  local fn = "device:arange"
  H.check_object(fn, "self", dev, "Device")
  no_more(fn, 5, ...)
  O.check_type(fn, "argument #1", t)
  O.check_device_type(fn, dev, t)
  if last == nil then first, last = 1, first end
  step = step == nil and 1 or step
  local bounds = {first, last, step}
  for i = 1, 3 do
    local v = bounds[i]
    if type(v) ~= "number" or v ~= v then
      fail(fn, "argument #%d: expected a number, got %s", i + 1, show(v))
    end
  end
  if step == 0 then fail(fn, "argument #4: step must not be 0") end
  -- an unsigned type steps down by subtracting the step's size (NumPy's
  -- arange(5, 0, -2, dtype=uint8)), which must fit the type
  local down = step < 0 and TY.INTEGERS[t] and not TY.SIGNED[t]
  local why = TY.fits(t, first)
  if why then fail(fn, "argument #2: %s", why) end
  why = TY.fits(t, down and -step or step)
  if down and (why or -step < 0) then           -- (-mininteger wraps)
    fail(fn, "argument #4: step %s: %s steps down by its size, which does not fit (%s)",
         show(step), t, why or "2^63 is past a Lua integer")
  elseif why then
    fail(fn, "argument #4: %s", why)
  end
  -- an integer type's integral float first and step are integers (its
  -- elements are computed in the type: counted in doubles, 2^62 to 2^62
  -- gave 513 elements); a ulong range reaching 2^63 is counted in ulong
  -- words (Lua's loop stops at 2^63 - 1: 2^63 - 1 to 2^63 + 4096 gave 1)
  local n, many
  local f, s = first, step
  if TY.INTEGERS[t] then f, s = H.integer(first) or first, H.integer(step) or step end
  if t == "ulong" and (f >= 2^63 or last >= 2^63 or s >= 2^63) then
    n, many = ulong_count(f, last, s)
  else
    n, many = loop_count(f, last, s)
  end
  if not n then
    fail(fn, "%s to %s by %s: shape {%s} is too large (at most 2^53 elements)", show(first),
         show(last), show(step), many)
  end
  O.check_alloc(fn, dev, t, {n}, n)
  -- (one element is first: a step past float's range, inf in the kernel,
  -- made it 0 * inf = NaN)
  if n <= 1 then step, down = 1, false end
  local shape = {n}
  local e = {kind = "op", op = down and "sub" or "add", ct = t, type = t, shape = shape, size = 5,
    args = {
      {kind = "scalar", value = first, type = t, shape = {}, size = 1},
      {kind = "op", op = "mul", ct = t, type = t, shape = shape, size = 3, has_index = true,
       args = {{kind = "index", type = t, shape = shape, size = 1},
               {kind = "scalar", value = down and -step or step, type = t, shape = {},
                size = 1}}}}}
  return result(dev, e, fn)
end

return E
