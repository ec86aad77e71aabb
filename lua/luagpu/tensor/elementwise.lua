-- luagpu.tensor.elementwise: operators, math methods, comparisons, where,
-- astype, map, set, clone, arange, and lazy fusion (internal to
-- luagpu.tensor; kernels come from tensor_codegen.lua).
--
-- Expressions are trees of nodes: {kind = "leaf", x = a realized tensor},
-- {kind = "scalar", value =}, {kind = "index"} (a position, for arange),
-- {kind = "op", op =, args =, ct = the type the op computes in} and
-- {kind = "map", expr =, names =, args =}; every node has type and shape.
-- An elementwise operation returns a lazy tensor holding its tree, so a
-- chain runs as one kernel when its result is needed (realize).
--
-- Safety: a lazy tensor is registered with the storages of its leaves;
-- before any write through luagpu to a storage (x:set, algo outputs) the
-- lazy tensors reading it are realized, so results always equal eager
-- evaluation. A storage whose Buffer the script has seen (x.buffer,
-- a kernel argument, dev:tensor over a Buffer) may be written behind
-- luagpu's back, so operations reading it are evaluated at once. Trees of
-- more than MAX_NODES nodes are realized at once too.

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local TY = require "luagpu.core.types"
local G = require "luagpu.tensor.codegen"
local memory = require "luagpu.core.pool"
local SIZES = TY.SIZES

local type, ipairs, pairs, next, tostring, rawget, rawlen = type, ipairs, pairs, next, tostring, rawget, rawlen
local format, concat = string.format, table.concat
local setmetatable = setmetatable
local mtype = math.type
local fail, typename, show, integer = H.fail, H.typename, H.show, H.integer
local FLOATS = TY.FLOATS
local promote, floating = TY.promote, TY.floating

local E = {}

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
  local count = (last - first) / step
  -- NaN: inf - inf, or inf / inf: a loop that never ends
  if count ~= count then return nil, "inf" end
  if count >= MAX_ELEMENTS then return nil, show(floor(count) + 1) end
  if count < 0 then return 0 end
  local n = floor(count) + 1
  while n > 0 and ((step > 0 and first + (n - 1) * step > last) or
                   (step < 0 and first + (n - 1) * step < last)) do n = n - 1 end
  while n < MAX_ELEMENTS and ((step > 0 and first + n * step <= last) or
                              (step < 0 and first + n * step >= last)) do n = n + 1 end
  return n
end
E.loop_count = loop_count

local MAX_NODES = 48
local WEAK_KEYS = {__mode = "k"}

function E.install(C)
  local M, Tensor, MT = C.M, C.Tensor, C.MT
  local is_tensor, lazy, show_shape = C.is_tensor, C.lazy, C.show_shape

  -- M.lazy = false evaluates every operation at once (for comparisons).
  M.lazy = true

  ---------------------------------------------------------------- nodes

  -- The leaf node of realized x, made once (nodes are never written).
  local function leaf(x)
    local l = x._leaf
    if l then return l end
    l = {kind = "leaf", x = x, type = x._type, shape = x._shape, size = 1}
    x._leaf = l
    return l
  end

  -- The node of tensor x (its tree when lazy).
  local function node_of(x)
    return x._expr or leaf(x)
  end

  -- Takes lazy tensor x off the readers of tree e's storages.
  local function unregister(e, x)
    if e.kind == "leaf" then
      local r = e.x._st.readers
      if r then r[x] = nil end
    elseif e.args then
      local args = e.args
      for i = 1, #args do unregister(args[i], x) end
    end
  end

  -- Evaluates lazy tensor x into a new storage.
  local function realize(x)
    local e = x._expr
    if not e then return x end
    local fn = type(e) == "table" and type(e.fn) == "string" and e.fn or "tensor"
    -- (the tree is a script's to write: G.run checks it, its type first)
    if type(e) ~= "table" or not SIZES[e.type] then G.bad(fn, "its expression's types") end
    -- x (contiguous strides, offset 0) becomes the output: no other view
    x._st = memory.storage(fn, x._dev, e.type, x._n)
    G.run(fn, e, x)
    x._expr = false
    unregister(e, x)
    return x
  end
  C.realize = realize

  function C.flush_readers(s)
    if not s.readers then return end
    local list = {}
    for r in next, s.readers do list[#list + 1] = r end
    for _, r in ipairs(list) do realize(r) end
  end

  -- A tensor of tree e on dev: lazy when allowed, else realized now.
  local function same_shape(a, b)
    if #a ~= #b then return false end
    for i = 1, #a do if a[i] ~= b[i] then return false end end
    return true
  end

  -- Whether tree e reads a storage the script has seen.
  local function exposed_in(e)
    if e.kind == "leaf" then return e.x._st.exposed end
    local args = e.args
    if args then
      for i = 1, #args do if exposed_in(args[i]) then return true end end
    end
    return false
  end

  -- Adds lazy tensor x to the readers of tree e's storages.
  local function register(e, x)
    if e.kind == "leaf" then
      local s = e.x._st
      local r = s.readers
      if not r then r = setmetatable({}, WEAK_KEYS); s.readers = r end
      r[x] = true
    elseif e.args then
      local args = e.args
      for i = 1, #args do register(args[i], x) end
    end
  end

  -- Tree a as an operand of a result of shape: a tree that reads positions
  -- (arange) is realized first when the result broadcasts it, since a
  -- kernel's position is the result's; returns the node to use.
  local function positioned(dev, a, shape)
    if a.has_index and not same_shape(a.shape, shape) then
      return leaf(realize(lazy(dev, a)))
    end
    return a
  end

  -- A tensor of tree e on dev (made by fn): lazy when allowed, else
  -- realized now.
  local function result(dev, e, fn)
    e.fn = fn
    if e.args then
      for i, a in ipairs(e.args) do
        local p = positioned(dev, a, e.shape)
        if p ~= a then
          e.args[i] = p
          e.size = e.size - a.size + 1
        elseif a.has_index or a.kind == "index" then
          e.has_index = true
        end
      end
    end
    local x = lazy(dev, e)
    if not M.lazy or e.size > MAX_NODES or exposed_in(e) then return realize(x) end
    register(e, x)
    return x
  end
  C.result = result

  ---------------------------------------------------------------- shapes

  -- The broadcast of shapes a and b (NumPy's rule), or an error naming
  -- both and the dim (counted in the result).
  local function broadcast(fn, a, b)
    local na, nb = #a, #b
    local n = na > nb and na or nb
    local out = {}
    for i = 1, n do
      local da, db = a[i - (n - na)] or 1, b[i - (n - nb)] or 1
      if da == db or db == 1 then
        out[i] = da
      elseif da == 1 then
        out[i] = db
      else
        fail(fn, "shapes %s and %s do not broadcast (dim %d: %d vs %d)", show_shape(a),
             show_shape(b), i, da, db)
      end
    end
    return out
  end
  C.broadcast = broadcast

  ---------------------------------------------------------------- operands

  -- The device of the first tensor among the operands; others must match.
  local function device_of(fn, vals)
    local dev
    for i, v in ipairs(vals) do
      if is_tensor(v) then
        if not dev then dev = v._dev
        elseif v._dev ~= dev then C.check_same_device(fn, i, v, dev) end
      end
    end
    return dev
  end

  local function check_operand(fn, arg, v)
    if is_tensor(v) then
      -- a type a script wrote raises here, before the type rules see it
      if not SIZES[v._type] then C.check(fn, arg, v, true) end
      return
    end
    if type(v) ~= "number" then
      fail(fn, "argument #%d: expected a tensor or a number, got %s", arg, typename(v))
    end
  end

  -- The type operands combine to: promote over the tensors, then numbers.
  local function combined_type(vals)
    local t
    for _, v in ipairs(vals) do
      if is_tensor(v) then t = t and promote(t, v._type) or v._type end
    end
    for _, v in ipairs(vals) do
      if type(v) == "number" then t = TY.with_number(t, v) end
    end
    return t
  end

  -- The node of operand v (argument #arg) for an op computing in ct.
  local function operand(fn, arg, v, ct)
    if is_tensor(v) then return node_of(v) end
    local why = TY.fits(ct, v)
    if why then fail(fn, "argument #%d: %s", arg, why) end
    return {kind = "scalar", value = v, type = ct, shape = {}, size = 1}
  end

  -- Builds the op node over vals (tensors or numbers) and returns its
  -- result. rtype(ct) gives the result type; ct the compute type, when
  -- given; else from the operands.
  local function apply(fn, op, vals, rtype, ct)
    for i, v in ipairs(vals) do check_operand(fn, i, v) end
    local dev = device_of(fn, vals)
    ct = ct or combined_type(vals)
    local args, shape, size = {}, {}, 1
    for i, v in ipairs(vals) do
      local a = operand(fn, i, v, ct)
      args[i] = a
      shape = broadcast(fn, shape, a.shape)
      size = size + a.size
    end
    local e = {kind = "op", op = op, args = args, ct = ct, type = rtype and rtype(ct) or ct,
               shape = shape, size = size}
    return result(dev, e, fn)
  end
  C.apply = apply

  local function uchar() return "uchar" end

  ---------------------------------------------------------------- operators

  local TAG = C.TAG

  local function binary_method(name, rtype, floatify)
    local fn = "tensor:" .. name
    return function(a, b)
      -- two tensors of one device: the same checks and node as apply's,
      -- without its lists
      if type(a) == "table" and type(b) == "table" and rawget(a, TAG) and rawget(b, TAG) and
         a._dev == b._dev then
        local ta, tb = a._type, b._type
        if not SIZES[ta] then C.check(fn, 1, a, true) end
        if not SIZES[tb] then C.check(fn, 2, b, true) end
        local ct = ta == tb and ta or promote(ta, tb)
        if floatify then ct = floating(ct) end
        local ea, eb = a._expr, b._expr
        local na, nb = ea or leaf(a), eb or leaf(b)
        local sa, sb = na.shape, nb.shape
        local shape = same_shape(sa, sb) and sa or broadcast(fn, sa, sb)
        local e = {kind = "op", op = name, args = {na, nb}, ct = ct,
                   type = rtype and rtype(ct) or ct, shape = shape,
                   size = 1 + na.size + nb.size, fn = fn}
        if ea or eb or not M.lazy then return result(a._dev, e, fn) end
        -- two realized operands: result's rules, inline
        local st_a, st_b = a._st, b._st
        local x = lazy(a._dev, e)
        if st_a.exposed or st_b.exposed then return realize(x) end
        local r = st_a.readers
        if not r then r = setmetatable({}, WEAK_KEYS); st_a.readers = r end
        r[x] = true
        r = st_b.readers
        if not r then r = setmetatable({}, WEAK_KEYS); st_b.readers = r end
        r[x] = true
        return x
      end
      -- both checked by number: ipairs would stop at a nil
      check_operand(fn, 1, a)
      check_operand(fn, 2, b)
      local vals = {a, b}
      local ct = combined_type(vals)
      if floatify then ct = floating(ct) end
      return apply(fn, name, vals, rtype, ct)
    end
  end

  local ARITH = {add = "__add", sub = "__sub", mul = "__mul", div = "__div", mod = "__mod",
                 pow = "__pow", idiv = "__idiv"}
  for name, meta in pairs(ARITH) do
    local f = binary_method(name, nil, name == "div" or name == "pow")
    Tensor[name] = f
    MT[meta] = f
  end
  for _, name in ipairs{"lt", "le", "gt", "ge", "eq", "ne"} do
    Tensor[name] = binary_method(name, uchar)
  end

  local function unary_method(name, floatify)
    local fn = "tensor:" .. name
    return function(x)
      C.check(fn, 0, x, true)
      local ct = floatify and floating(x._type) or x._type
      return apply(fn, name, {x}, nil, ct)
    end
  end
  MT.__unm = unary_method("neg")
  Tensor.neg = MT.__unm
  for _, name in ipairs{"abs", "floor", "ceil"} do Tensor[name] = unary_method(name) end
  for _, name in ipairs{"sqrt", "exp", "log", "sin", "cos", "tanh"} do
    Tensor[name] = unary_method(name, true)
  end

  -- x:min(y) / x:max(y) elementwise; without y (or with a dim) the
  -- reductions of tensor_reduce.lua.
  local emin, emax = binary_method("min"), binary_method("max")
  C.elementwise_min, C.elementwise_max = emin, emax

  -- x:clamp(lo, hi): max(x, lo) then min(.., hi); a nil bound is not
  -- applied (x:clamp(lo) is a lower bound only, x:clamp(nil, hi) an upper
  -- one), as PyTorch's clamp(min=, max=).
  function Tensor.clamp(x, lo, hi)
    local fn = "tensor:clamp"
    C.check(fn, 0, x, true)
    if lo == nil and hi == nil then
      fail(fn, "expected a lower bound (argument #1), an upper bound (argument #2) or both, " ..
           "got neither")
    end
    if lo ~= nil then check_operand(fn, 1, lo) end
    if hi ~= nil then check_operand(fn, 2, hi) end
    if lo ~= nil then x = emax(x, lo) end
    if hi ~= nil then x = emin(x, hi) end
    return x
  end

  function Tensor.pow(x, y) return MT.__pow(x, y) end

  -- gpu.where(mask, a, b): a where mask is not 0, else b (broadcast).
  function M.where(mask, a, b)
    local fn = "gpu.where"
    if not is_tensor(mask) then
      fail(fn, "argument #1: expected a tensor (a mask), got %s", typename(mask))
    end
    check_operand(fn, 2, a)
    check_operand(fn, 3, b)
    if not is_tensor(a) and not is_tensor(b) then
      local t = type(a) == "number" and mtype(a) == "float" or mtype(b) == "float"
      a = C.new_tensor(mask._dev, t and "float" or "long", {}, a)
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

  function Tensor.astype(x, t)
    local fn = "tensor:astype"
    C.check(fn, 0, x, true)
    C.check_type(fn, "argument #1", t)
    C.check_device_type(fn, x._dev, t)
    local a = node_of(x)
    return result(x._dev, {kind = "op", op = "cast", args = {a}, type = t, shape = a.shape,
                           size = a.size + 1}, fn)
  end

  ---------------------------------------------------------------- map

  local RESERVED = {auto = true, break_ = true, case = true, char = true, const = true,
    continue = true, default = true, ["do"] = true, double = true, ["else"] = true,
    enum = true, extern = true, float = true, ["for"] = true, ["goto"] = true, ["if"] = true,
    int = true, long = true, register = true, ["return"] = true, short = true, signed = true,
    sizeof = true, static = true, struct = true, switch = true, typedef = true, union = true,
    unsigned = true, void = true, volatile = true, ["while"] = true, li = true}

  -- x:map(expr [, vars]): one kernel computing the OpenCL C expression
  -- expr of x (named x) and vars (names -> numbers or tensors), in the
  -- type they all promote to.
  function Tensor.map(x, expr, vars)
    local fn = "tensor:map"
    C.check(fn, 0, x, true)
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
           k:match("^lg_") or k:match("^get_") then
          fail(fn, "argument #2: %s is not a usable variable name (an identifier, not a C " ..
               "keyword, not starting with lg_)", show(k))
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

  ---------------------------------------------------------------- set, clone

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
  function Tensor.set(x, v)
    local fn = "tensor:set"
    C.check(fn, 0, x)
    local e
    if type(v) == "number" then
      local why = TY.fits(x._type, v)
      if why then fail(fn, "argument #1: %s", why) end
      e = {kind = "scalar", value = v, type = x._type, shape = {}, size = 1}
    elseif is_tensor(v) then
      C.check(fn, 1, v, true)
      C.check_same_device(fn, 1, v, x._dev)
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
        if reads(e, x._st) then e = leaf(Tensor.clone(v)) end
      end
      if e.type ~= x._type then
        e = {kind = "op", op = "cast", args = {e}, type = x._type, shape = e.shape,
             size = e.size + 1}
      end
    else
      fail(fn, "argument #1: expected a tensor or a number, got %s", typename(v))
    end
    C.flush_readers(x._st)
    G.run(fn, e, x)
    return x
  end

  -- A contiguous copy of x in a new storage.
  function Tensor.clone(x)
    local fn = "tensor:clone"
    C.check(fn, 0, x)
    local out = C.empty(fn, x._dev, x._type, x._shape)
    G.run(fn, leaf(x), out)
    return out
  end

  ---------------------------------------------------------------- arange

  -- dev:arange(type, n): 1, 2, ..., n; dev:arange(type, first, last [, step]):
  -- first, first + step, ... up to last, as `for v = first, last, step`.
  function M.device_methods.arange(dev, t, first, last, step)
    local fn = "device:arange"
    H.check_object(fn, "self", dev, "Device")
    C.check_type(fn, "argument #1", t)
    C.check_device_type(fn, dev, t)
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
    for i, v in ipairs{first, step} do
      local why = TY.fits(t, v)
      if why then fail(fn, "argument #%d: %s", i == 1 and 2 or 4, why) end
    end
    local n, many = loop_count(first, last, step)
    if not n then
      fail(fn, "%s to %s by %s: shape {%s} is too large (at most 2^53 elements)", show(first),
           show(last), show(step), many)
    end
    C.check_alloc(fn, dev, t, {n}, n)
    local shape = {n}
    local e = {kind = "op", op = "add", ct = t, type = t, shape = shape, size = 5, args = {
      {kind = "scalar", value = first, type = t, shape = {}, size = 1},
      {kind = "op", op = "mul", ct = t, type = t, shape = shape, size = 3, has_index = true, args = {
        {kind = "index", type = t, shape = shape, size = 1},
        {kind = "scalar", value = step, type = t, shape = {}, size = 1}}}}}
    return result(dev, e, fn)
  end
end

return E
