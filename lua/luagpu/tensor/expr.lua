-- luagpu.tensor.expr: lazy tensors and their expressions (internal to
-- luagpu.tensor).
--
--   X.settings.lazy        false: every operation is evaluated at once
--                          (luagpu.tensor's M.lazy reads and writes it)
--   X.leaf(x), X.node_of(x)        the expression node of a tensor
--   X.realize(x)           evaluates lazy x into a new storage (returns x)
--   X.check(fn, arg, x, lazy_ok)   checks x to be a tensor, realized unless
--                          lazy_ok, its fields sound; returns x
--   X.release(x)           x:release()
--   X.close(x)             __close: x:release() without its checks
--   X.expose(s), X.flush_readers(s)  storage s seen by the script; the lazy
--                          tensors reading s evaluated
--   X.result(dev, e, fn)   the tensor of new expression e: lazy or realized
--   X.positioned(dev, a, shape)     a node whose positions are the result's
--   X.broadcast(fn, a, b)  NumPy's broadcast of two shapes
--   X.same_shape(a, b)
--   X.check_operand, X.device_of, X.combined_type, X.operand, X.apply
--                          operands of elementwise operations
--
-- Expressions are trees of nodes: {kind = "leaf", x = a realized tensor},
-- {kind = "scalar", value =}, {kind = "index"} (a position, for arange),
-- {kind = "op", op =, args =, ct = the type the op computes in} and
-- {kind = "map", expr =, names =, args =}; every node has type and shape.
-- The op nodes the operators make hold their operands in their own list
-- part ({a, b, kind = "op", args = itself}): a node is one table, not two
-- (an expression's build makes fewer tables for the collector). Readers go
-- through e.args either way.
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

local H = require "luagpu.core.check"
local TY = require "luagpu.core.types"
local NO_EVENT = require("luagpu.core.steps").NO_EVENT   -- (enqueue without an Event)
local memory = require "luagpu.core.pool"
local O = require "luagpu.tensor.object"
local G = require "luagpu.tensor.codegen"

local type, ipairs, next, tostring, setmetatable, rawget = type, ipairs, next, tostring,
  setmetatable, rawget
local getmetatable, mtype = getmetatable, math.type
local fail, typename = H.fail, H.typename
local SIZES, promote = TY.SIZES, TY.promote
local is_tensor, lazy, show_shape = O.is_tensor, O.lazy, O.show_shape

local X = {}

local settings = {lazy = true}
X.settings = settings

local MAX_NODES = 48
local WEAK_KEYS = {__mode = "k"}
X.WEAK_KEYS = WEAK_KEYS

------------------------------------------------------------------ nodes

-- Whether shape (a realized tensor's, which a script may have changed with
-- rawset) can be counted: a list of integers >= 0 counting at most 2^53.
-- (Not a plain table, it goes on: the ops take X.apply's way, whose launch
-- check names it; one that counts but disagrees with another field is
-- named there too.)
local count_of = O.count_of
local function plain_shape(shape)
  if type(shape) ~= "table" or getmetatable(shape) ~= nil then return true end
  for i = 1, #shape do
    local d = shape[i]
    if mtype(d) ~= "integer" or d < 0 then return false end
  end
  return count_of(shape) ~= nil
end

-- The leaf node of realized x, made once (nodes are never written); its
-- shape checked then, so that every node made from it counts (fn's
-- message: a shape a script wrote raised Lua's own errors, or hung the
-- pool on a count past 2^64).
local function leaf(x, fn)
  local l = x._leaf
  if l then
    if type(l) ~= "table" then O.check_fields(fn or "tensor", x) end   -- (it raises)
    return l
  end
  local shape = x._shape
  if not plain_shape(shape) then O.bad(fn or "tensor", "shape") end
  l = {kind = "leaf", x = x, type = x._type, shape = shape, size = 1, _stores = false}
  x._leaf = l
  return l
end
X.leaf = leaf

-- The node of tensor x (its tree when lazy).
local function node_of(x)
  return x._expr or leaf(x)
end
X.node_of = node_of

-- The storages the leaves of tree e read, each once: a list kept in the
-- node (e._stores), made from its operands' lists, so a chain of n nodes
-- costs O(leaves) per node, not a walk of its whole tree. (A node's
-- operands are not changed after it is made, but by retarget, which drops
-- the lists on its way.) A leaf node's is its tensor's storage, read anew.
local function stores_of(e)
  local kind = e.kind
  local list = e._stores
  if kind == "leaf" then
    -- (kept while its tensor's storage is the one it names)
    local st = e.x._st
    if list and list[1] == st then return list end
    if type(st) ~= "table" then O.check_fields("tensor", e.x) end   -- (it raises)
    list = {st}
    e._stores = list
    return list
  end
  if list then return list end
  local args = e.args
  local n = args and #args
  if n == 1 then
    list = stores_of(args[1])         -- exp(x): its operand's list, shared
  elseif n == 2 then
    -- x * 2: x's list, shared; x - y: x's, then y's storages not in it
    local a, b = args[1], args[2]
    local la = (a.kind == "leaf" or a.args) and stores_of(a)
    local lb = (b.kind == "leaf" or b.args) and stores_of(b)
    if not lb then list = la
    elseif not la then list = lb
    else
      list = {}
      local m = #la
      for i = 1, m do list[i] = la[i] end
      for j = 1, #lb do
        local st, k = lb[j], 1
        while k <= m and list[k] ~= st do k = k + 1 end
        if k > m then m = m + 1; list[m] = st end
      end
    end
  elseif args then
    -- one operand with storages (x * 2): its list, shared
    local first, many
    for i = 1, #args do
      local k = args[i].kind
      if k == "leaf" or args[i].args then
        if first then many = true; break end
        first = i
      end
    end
    if first and not many then
      list = stores_of(args[first])
    else
      list = {}
      for i = first or 1, first and #args or 0 do
        local sub = stores_of(args[i])
        for j = 1, #sub do
          local st, k = sub[j], 1
          while list[k] ~= nil and list[k] ~= st do k = k + 1 end
          list[k] = st
        end
      end
    end
  end
  list = list or {}
  e._stores = list
  return list
end

-- Takes lazy tensor x off the readers of tree e's storages.
local function unregister(e, x)
  local list = stores_of(e)
  for i = 1, #list do
    local r = list[i].readers
    if r then r[x] = nil end
  end
end

-- The row-major strides of shape, or false where shape is not a list of
-- integers (a lazy tensor's a script wrote: the launch check names it).
local function row_major(shape)
  if type(shape) ~= "table" or getmetatable(shape) ~= nil then return false end
  local n = #shape
  if n == 1 then return mtype(shape[1]) == "integer" and {1} end
  local st, s = {}, 1
  for i = n, 1, -1 do
    local d = shape[i]
    if mtype(d) ~= "integer" then return false end
    st[i] = s
    s = s * d
  end
  return st
end

-- Evaluates lazy tensor x into a new storage (s when given: one taken
-- from the pool for it by X.storage_for).
local function realize(x, s)
  local e = x._expr
  if not e then return x end
  local fn = type(e) == "table" and type(e.fn) == "string" and e.fn or "tensor"
  -- (the tree is a script's to write: G.run checks it, its type first)
  if type(e) ~= "table" or not SIZES[e.type] then O.bad(fn, "its expression's types") end
  -- (what the storage is made from: a script's rawset raised Lua's errors)
  local n = x._n
  if mtype(n) ~= "integer" or n < 0 then O.bad(fn, "count") end
  if type(x._dev) ~= "userdata" then O.bad(fn, "device") end
  if type(x._shape) ~= "table" then O.bad(fn, "shape, strides or offset") end
  -- x (row-major, offset 0) becomes the output: no other view
  s = s or memory.storage(fn, x._dev, e.type, x._n)
  s.holders = 1
  x._st = s
  x._strides = row_major(x._shape)
  G.run(fn, e, x)
  -- (x stays among the readers of e's storages, realized: a write there
  -- drops it, flush_readers, without a walk of the tree now)
  x._expr = false
  return x
end
X.realize = realize

-- The storage lazy x will be evaluated into (X.realize(x, s)), taken from
-- the pool now, or nil (x realized, or its tree not one to trust: realize
-- raises then). A sharded eval takes every shard's first, so that a
-- collection the pool runs comes before the first launch, not between two.
function X.storage_for(x)
  local e = x._expr
  if type(e) ~= "table" or not SIZES[e.type] then return nil end
  return memory.storage(type(e.fn) == "string" and e.fn or "tensor", x._dev, e.type, x._n)
end

-- Raises for a method of fn ("tensor:sum") called on x, not a tensor: most
-- often x.sum() written for x:sum().
function X.not_self(fn, x)
  local name = fn:match(":([%w_]+)$") or "method"
  if getmetatable(x) == O.MT then       -- (a table a script gave the tensors' metatable)
    fail(fn, "self: expected a tensor, got a table with the tensors' metatable (only " ..
         "luagpu makes tensors: dev:tensor, dev:zeros, ...)")
  end
  fail(fn, "self: expected a tensor, got %s (call methods with a colon: x:%s(...))",
       typename(x), name)
end

local function check_self(x)
  if not is_tensor(x) then X.not_self("tensor:release", x) end
end

-- x:release() (also __close): x is unusable from now on. A lazy x stops
-- reading its inputs; a realized one hands its block back to the pool now
-- when it is the only tensor ever made over it, else the block waits for
-- the collector as before; lazy tensors reading it are evaluated first.
-- __close is X.close: Lua passes it a second value (the error that
-- closes the scope, or nil), which is no argument past release's last.
function X.close(x)
  check_self(x)
  local s, e = x._st, x._expr
  if s == O.RELEASED then return end
  if e then
    unregister(e, x)
  elseif type(s) == "table" then
    X.flush_readers(s)        -- lazy results reading x's elements keep what they read
    if s.pool and s.holders == 1 then memory.give_back(s) end
  end
  x._expr, x._st = false, O.RELEASED
end

function X.release(x, ...)
  check_self(x)
  O.no_more("tensor:release", 1, ...)
  X.close(x)
end

-- Points the leaves of tree e that read storage s at their twins over
-- snap (twins: leaf tensor -> the leaf node of a tensor of the same view
-- of snap, made once). Trees share subtrees: a shared one is done once,
-- its leaves no longer read s the second time.
local function retarget(e, s, snap, twins)
  local args = e.args
  if not args then return end
  e._stores = nil                       -- its leaves change: made again when asked
  for i = 1, #args do
    local a = args[i]
    if a.kind == "leaf" then
      local x = a.x
      if x._st == s then
        local twin = twins[x]
        if not twin then
          twin = leaf(O.view(snap, x._type, x._shape, x._strides, x._off))
          twins[x] = twin
        end
        args[i] = twin
      end
    else
      retarget(a, s, snap, twins)
    end
  end
end

-- Before storage s is written: the lazy tensors reading it keep the values
-- they were made from, by reading a snapshot of s instead: one copy, not
-- one kernel each, and a reader never used again costs nothing more. Most
-- readers are the dead temporaries of an expression the collector has not
-- found yet; how many it has found by now must not change what runs (one
-- reader evaluated at once made `out:set(e); a:set(out)` run a kernel more
-- whenever the collector had found all but one of e's temporaries).
function X.flush_readers(s)
  local readers = s.readers
  if not readers then return end
  local list = {}
  for r in next, readers do
    if r._expr then list[#list + 1] = r else readers[r] = nil end
  end
  if #list == 0 then return end
  local buf, n = s.buf, s.count
  local snap = memory.storage("tensor", s.dev, buf.type, n)
  buf:copy_to(snap.count == n and snap.buf or snap.buf:sub(1, n), NO_EVENT)
  local twins, snap_readers = {}, setmetatable({}, WEAK_KEYS)
  snap.readers = snap_readers
  for _, r in ipairs(list) do
    retarget(r._expr, s, snap, twins)
    readers[r] = nil
    snap_readers[r] = true
  end
end

-- Marks storage s as seen by the script: lazy results reading it are
-- evaluated now, and later operations on it are not deferred.
function X.expose(s)
  if not s.exposed then
    X.flush_readers(s)
    s.exposed = true
    memory.expose(s)
  end
end

-- Checks x to be a tensor (argument #arg of fn); realized unless lazy_ok.
-- A realized x's fields are checked against its Buffer (O.check_bounds);
-- one realized here was, by the launch that realized it.
function X.check(fn, arg, x, lazy_ok)
  if not is_tensor(x) then
    if arg == 0 then X.not_self(fn, x) end
    fail(fn, "argument #%d: expected a tensor, got %s", arg, typename(x))
  end
  if not x._expr then
    -- (a released argument is named; self's message names the call alone)
    if arg ~= 0 and rawget(x, "_st") == O.RELEASED then O.released(fn, arg) end
    O.check_bounds(fn, x)
  elseif not lazy_ok then
    O.check_fields(fn, x)
    realize(x)
  elseif not SIZES[x._type] then
    -- a lazy tensor's type a script changed (its tree is checked when run)
    O.bad(fn, "type " .. tostring(x._type))
  end
  return x
end

local function same_shape(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end
X.same_shape = same_shape

-- Tree a as an operand of a result of shape: a tree that reads positions
-- (arange) is realized first when the result broadcasts it, since a
-- kernel's position is the result's; returns the node to use.
local function positioned(dev, a, shape)
  if a.has_index and not same_shape(a.shape, shape) then
    return leaf(realize(lazy(dev, a)))
  end
  return a
end
X.positioned = positioned

-- Lazy x registered as a reader of the storages of list (its tree's),
-- unless one is exposed: then x is realized now. Returns x.
local function registered(x, list)
  for i = 1, #list do
    if list[i].exposed then return realize(x) end
  end
  for i = 1, #list do
    local s = list[i]
    local r = s.readers
    if not r then r = setmetatable({}, WEAK_KEYS); s.readers = r end
    r[x] = true
  end
  return x
end

-- A tensor of tree e on dev (made by fn): lazy when allowed, else
-- realized now.
function X.result(dev, e, fn)
  e.fn = fn
  local args = e.args
  if args then
    for i = 1, #args do
      local a = args[i]
      if a.has_index or a.kind == "index" then
        local p = positioned(dev, a, e.shape)
        if p ~= a then
          args[i] = p
          e.size = e.size - a.size + 1
        else
          e.has_index = true
        end
      end
    end
  end
  local x = lazy(dev, e)
  if not settings.lazy or e.size > MAX_NODES then return realize(x) end
  return registered(x, stores_of(e))
end

-- Lazy r's op made again over a2 (and b2) in place of a (and b), its
-- operands (a number operand the same in both): the tensor of a node with
-- r's op, types and shape over their nodes (a number's node shared), on
-- a2's device, as the op would make it but without its checks; nil where
-- that is not known to be the same (r not one op node over exactly a's and
-- b's nodes, or a2, b2 not of a's, b's types and shapes). r comes from
-- the op just now, and the caller vouches for a2 and b2 as for a and b
-- (sharded tensors: one op on every shard, the first one checked).
-- (the caller's shapes have no metatable: == is raw, one table shared by
-- the shards' nodes needs no walk)
local RELEASED = O.RELEASED
local function same_as(v, old, arg)
  local a, b = v._shape, old._shape
  return arg == (old._expr or old._leaf) and v._type == old._type and
         v._st ~= RELEASED and (a == b or same_shape(a, b))
end

function X.again(r, a, b, a2, b2)
  local e = r._expr
  if not e or e.kind ~= "op" then return nil end
  local args = e.args
  local x, y, n = args[1], args[2], #args
  local dev
  if b == nil then                                  -- op(a)
    if n ~= 1 or not same_as(a2, a, x) then return nil end
    x, dev = a2._expr or leaf(a2), a2._dev
  elseif n ~= 2 then
    return nil
  elseif type(b) == "number" then                   -- a op number
    if y.kind ~= "scalar" or not same_as(a2, a, x) then return nil end
    x, dev = a2._expr or leaf(a2), a2._dev
  elseif type(a) == "number" then                   -- number op b
    if x.kind ~= "scalar" or not same_as(b2, b, y) then return nil end
    y, dev = b2._expr or leaf(b2), b2._dev
  else                                              -- a op b
    if not same_as(a2, a, x) or not same_as(b2, b, y) then return nil end
    x, y, dev = a2._expr or leaf(a2), b2._expr or leaf(b2), a2._dev
  end
  local size = 1 + x.size + (y and y.size or 0)
  local e2 = {x, y, kind = "op", op = e.op, args = false, ct = e.ct, type = e.type,
              shape = e.shape, size = size, fn = e.fn, _stores = false}
  e2.args = e2
  if y == nil or y.kind == "scalar" then return X.result_over(dev, e2, x, r._n) end
  if x.kind == "scalar" then return X.result_over(dev, e2, y, r._n) end
  if e.has_index or x.has_index or x.kind == "index" or y.has_index or y.kind == "index" then
    return X.result(dev, e2, e.fn)
  end
  -- X.result's work for a node without positions over both operands' storages
  local out = lazy(dev, e2, r._n)
  if not settings.lazy or size > MAX_NODES then return realize(out) end
  local list = stores_of(e2)
  e2._stores = list
  return registered(out, list)
end

-- X.result(dev, e, e.fn) for a node e whose one operand with storages is
-- the node a of the same shape (exp(x), x * 2, 2 - x; its other operands
-- scalars), n its element count: X.result's work without its walks (e's
-- storages are a's, shared). e.size is already counted.
function X.result_over(dev, e, a, n)
  if a.has_index or a.kind == "index" then return X.result(dev, e, e.fn) end
  local out = lazy(dev, e, n)
  if not settings.lazy or e.size > MAX_NODES then return realize(out) end
  local list = stores_of(a)
  e._stores = list
  return registered(out, list)
end

------------------------------------------------------------------ operands

-- The broadcast of shapes a and b (NumPy's rule), or an error naming
-- both and the dim (counted in the result).
function X.broadcast(fn, a, b)
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
local broadcast = X.broadcast

-- The device of the first tensor among the operands; others must match.
function X.device_of(fn, vals)
  local dev
  for i, v in ipairs(vals) do
    if is_tensor(v) then
      if not dev then dev = v._dev
      elseif v._dev ~= dev then O.check_same_device(fn, i, v, dev) end
    end
  end
  return dev
end

function X.check_operand(fn, arg, v)
  if is_tensor(v) then
    -- (a released operand past the first, self's place, is named: x + y said only
    -- "attempt to use a released tensor", whichever it was)
    if arg > 1 and rawget(v, "_st") == O.RELEASED then O.released(fn, arg) end
    -- a type a script wrote raises here, before the type rules see it
    if not SIZES[v._type] then X.check(fn, arg, v, true) end
    O.check_fields(fn, v)
    return
  end
  if type(v) ~= "number" then
    local what = typename(v)
    if what == "luagpu.ShardedTensor" then     -- (x + xs: the tensor's metamethod came first)
      fail(fn, "argument #%d: a sharded tensor with a tensor on one device: shard the tensor " ..
           "alike (gpu.shard) or replicate it (gpu.replicate), or put the sharded one on one " ..
           "device (xs:to(dev))", arg)
    end
    fail(fn, "argument #%d: expected a tensor or a number, got %s", arg, what)
  end
end

-- The type operands combine to: promote over the tensors, then numbers.
function X.combined_type(vals)
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
function X.operand(fn, arg, v, ct)
  if is_tensor(v) then return node_of(v) end
  local why = TY.fits(ct, v)
  if why then fail(fn, "argument #%d: %s", arg, why) end
  return {kind = "scalar", value = v, type = ct, shape = {}, size = 1}
end

-- Builds the node of op (a row of luagpu.tensor.ops) over vals (tensors or
-- numbers) and returns its result. The compute type is ct, when given;
-- else from the operands; the result type the op's fixed one, or ct.
function X.apply(fn, op, vals, ct)
  for i, v in ipairs(vals) do X.check_operand(fn, i, v) end
  local dev = X.device_of(fn, vals)
  ct = ct or X.combined_type(vals)
  local args, shape, size = {}, {}, 1
  for i, v in ipairs(vals) do
    local a = X.operand(fn, i, v, ct)
    args[i] = a
    shape = broadcast(fn, shape, a.shape)
    size = size + a.size
  end
  local e = {kind = "op", op = op.name, args = args, ct = ct, type = op.result or ct,
             shape = shape, size = size}
  return X.result(dev, e, fn)
end

return X
