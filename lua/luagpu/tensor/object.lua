-- luagpu.tensor.object: the Tensor type itself, which every other tensor
-- module requires (internal to luagpu.tensor).
--
--   O.MT, O.methods, O.fields     the metatable; the method table and the
--                                 field readers its __index answers from
--                                 (filled by luagpu.tensor, init.lua)
--   O.TAG                         the key marking a table as a tensor
--   O.is_tensor(v)
--   O.view(s, t, shape, strides, off)    a tensor over storage s
--   O.lazy(dev, e)                a lazy tensor of expression e
--   O.empty(fn, dev, t, shape)    a new contiguous tensor, contents undefined
--   O.drop(x)                     a temporary's block back to the pool now
--   O.stray_key(t, n)             a key of t other than 1..n, or nil
--   O.check_entries(fn, where, t, n, holds)   raises on such a key
--   O.no_more(fn, n, ...)         raises on an argument past a call's last
--   O.check_keepdim(fn, dim, keepdim)   raises on keepdim = true without a dim
--   O.check_dims(fn, arg, x, list)   a list of dims, checked
--   O.contiguous_strides, O.numel, O.show_shape, O.is_contiguous
--   O.elements_of(x)              the Buffer of realized x's elements
--   O.check_type, O.check_device_type, O.check_shape, O.check_alloc,
--   O.check_dim, O.check_same_device          argument checks
--   O.check_bounds(fn, x)         x's fields against its Buffer (launches)
--   O.bad(fn, why)                raises the "fields were changed" message
--   O.RELEASED, O.released(fn)    the storage of a released tensor; its error
--   O.MAX_DIMS, O.MAX_ELEMENTS
--
-- A Tensor is a Lua table: a typed view (shape, strides in elements, a
-- 0-based offset) over a storage (a root Buffer of its type, from the
-- device's pool or given by the user), or, for the result of elementwise
-- operations not yet needed, an expression (_expr) that is evaluated
-- (realized) into a new storage when its values are needed.

local H = require "luagpu.core.check"
local memory = require "luagpu.core.pool"
local TY = require "luagpu.core.types"

local type, ipairs, tostring, rawget, rawlen = type, ipairs, tostring, rawget, rawlen
local setmetatable, getmetatable = setmetatable, getmetatable
local format, concat = string.format, table.concat
local mathtype, mininteger = math.type, math.mininteger
local gpu_type = require("luagpu").type
local fail, typename, show, integer = H.fail, H.typename, H.show, H.integer
local SIZES = TY.SIZES

local O = {}

-- The storage of a released tensor (x:release): no buffer; every use of
-- the tensor raises "attempt to use a released tensor".
local RELEASED = {released = true}
O.RELEASED = RELEASED

-- Raises fn's "attempt to use a released tensor", naming argument #arg
-- where given (nil: self, or an operator's first operand, in self's place).
function O.released(fn, arg)
  if arg then fail(fn, "argument #%d: attempt to use a released tensor", arg) end
  fail(fn, "attempt to use a released tensor")
end

local TAG = {}
local methods, fields = {}, {}
-- __methods and __fields: where the REPL's Tab and help find the names (as
-- the C classes keep their methods in __methods)
local MT = {__name = "luagpu.Tensor", __methods = methods, __fields = fields}
O.TAG, O.methods, O.fields, O.MT = TAG, methods, fields, MT

local MAX_DIMS = 8
-- Largest element count: below 2^53, so counts stay exact everywhere.
local MAX_ELEMENTS = 1 << 53
O.MAX_DIMS, O.MAX_ELEMENTS = MAX_DIMS, MAX_ELEMENTS

-- x[i] and x[i] = v (luagpu.tensor.views sets them: O.index(x, i),
-- O.set_index(x, i, v)).
O.index, O.set_index = nil, nil
-- O.copy(fn, x): a contiguous copy of x in a new storage, made as fn's (a
-- copy too large raises under fn's name); O.contiguous(fn, x): x where it
-- is contiguous, else O.copy(fn, x). (luagpu.tensor.elementwise sets them.)
O.copy, O.contiguous = nil, nil

-- Names NumPy and PyTorch users try, and what luagpu calls them.
local ELSEWHERE = {matmul = "x:mm(y)", T = "x:t()", view = "x:reshape(shape)",
                   resize = "x:reshape(shape)", numel = "#x", size = "x.shape",
                   dim = "x.ndim", tolist = "x:totable()", numpy = "x:get()", cpu = "x:get()",
                   dtype = "x.type", copy = "x:clone()"}

-- x[k] for a table k: NumPy's a[i, j], a[mask] and a[idx] are other calls.
local function not_a_position(what, k)
  if O.is_tensor(k) then
    fail(what, "a tensor is no position: x:masked_select(mask) / x:masked_fill(mask, v) for " ..
         "a mask, x:take(idx) / x:put(idx, v) or x:index_select(dim, idx) for positions")
  end
  fail(what, "a table is no position: index one dim at a time (x[i][j]), or take views with " ..
       "x:select(dim, i) and x:slice(dim, first, last [, step])")
end

-- Methods, then fields, then a number: x[i]; any other key raises. (A
-- number is never a method's or a field's name: indexing costs method
-- and field lookups nothing.)
MT.__index = function(t, k)
  local m = methods[k]
  if m ~= nil then return m end
  local f = fields[k]
  if f then return f(t) end
  -- an internal field a script removed with rawset: nil here, and the
  -- launch check (O.check_bounds) names it
  if type(k) == "string" and k:byte(1) == 95 then return nil end
  if type(k) == "number" then return O.index(t, k) end
  if type(k) == "table" then not_a_position("tensor[i]", k) end
  local other = ELSEWHERE[k]
  fail("tensor", "no field or method %s%s", type(k) == "string" and "'" .. k .. "'" or show(k),
       other and " (in luagpu: " .. other .. ")" or H.did_you_mean(k, methods, fields))
end

MT.__newindex = function(t, k, v)
  if type(k) == "number" then return O.set_index(t, k, v) end
  if type(k) == "table" then not_a_position("tensor[i] =", k) end
  if type(k) == "string" and (fields[k] or methods[k]) then
    fail("tensor", "field '%s' is read-only", k)
  end
  fail("tensor", "cannot set %s: a tensor's fields are read-only, and it takes no new ones",
       type(k) == "string" and "'" .. k .. "'" or show(k))
end

-- Lua's < <= > >= must give a boolean, so they cannot compare elements:
-- they raise, naming the methods that do.
local function no_order()
  fail("tensor", "< <= > >= cannot compare tensors (Lua wants one boolean): use x:lt(y), " ..
       "x:le(y), x:gt(y), x:ge(y) (a uchar tensor; x:eq(y) for ==, which on tensors is " ..
       "Lua's identity)")
end
MT.__lt, MT.__le = no_order, no_order

MT.__len = function(t) return t._n end

-- pairs(x) walks what ipairs(x) walks (x[1], x[2], ...: a 1-D x's
-- elements, an n-D x's rows), as iterating a NumPy array or a torch
-- tensor does; the fields a tensor keeps in its table are not its contents.
-- A 0-d or released tensor gives nothing (ipairs raises there), so that
-- code walking any table (a formatter, a serializer) does not fail on one.
local ipairs = ipairs
local function nothing() return nil end
MT.__pairs = function(t)
  local shape = rawget(t, "_shape")
  if rawget(t, "_st") == RELEASED or type(shape) ~= "table" or rawlen(shape) == 0 then
    return nothing, t, nil
  end
  return ipairs(t)
end

-- (gpu.type's question: "released Tensor" after x:release())
MT.__released = function(t) return rawget(t, "_st") == RELEASED end

function O.is_tensor(v)
  return type(v) == "table" and rawget(v, TAG) == true
end

-- Row-major strides of shape: a table of its own for each tensor (luagpu
-- never writes one, but a script that writes one through x._strides must
-- change only x).
local function contiguous_strides(shape)
  if #shape == 1 then return {1} end
  local st, s = {}, 1
  for i = #shape, 1, -1 do
    st[i] = s
    s = s * shape[i]
  end
  return st
end
O.contiguous_strides = contiguous_strides

local function numel(shape)
  local n = 1
  for i = 1, #shape do n = n * shape[i] end
  return n
end
O.numel = numel

-- "{3, 4}" for messages.
local function show_shape(shape)
  return "{" .. concat(shape, ", ") .. "}"
end
O.show_shape = show_shape

-- A new tensor viewing storage s. Every field is present (_expr false),
-- so that reading one never reaches MT.__index. s.holders counts the
-- tensors ever made over s (x:release gives the block back only when it
-- is the one).
-- _leaf: its expression node once made (luagpu.tensor.expr).
local function view(s, t, shape, strides, off)
  s.holders = (s.holders or 0) + 1
  return setmetatable({[TAG] = true, _expr = false, _leaf = false, _st = s, _type = t,
                       _shape = shape, _strides = strides, _off = off, _n = numel(shape),
                       _dev = s.dev}, MT)
end
O.view = view

-- A new lazy tensor of expression e (luagpu.tensor.expr realizes it). Its
-- strides are false until then: it is row-major, and most lazy tensors
-- (an expression's temporaries) never need a table of them.
local due = memory.due
-- (n: its element count when the caller has it, else counted)
function O.lazy(dev, e, n)
  local shape = e.shape
  n = n or numel(shape)
  if due[dev] then memory.step_first(dev, e.type, n) end
  return setmetatable({[TAG] = true, _expr = e, _leaf = false, _st = false, _type = e.type,
                       _shape = shape, _strides = false, _off = 0, _n = n,
                       _dev = dev}, MT)
end

-- The element count of shape (integers >= 0), or nil where its sizes but
-- its 0s multiply past 2^53 (as O.check_shape counts them): a shape made
-- from checked ones may ({2^32, 2^32}, a product of {0, 2^32}'s transpose
-- by itself, whose count would wrap past 2^64 to 0).
local function count_of(shape)
  local n, span = 1, 1
  for i = 1, #shape do
    local d = shape[i]
    if d > 0 then
      if span > MAX_ELEMENTS // d then return nil end
      span = span * d
    end
    n = n * d
  end
  return n
end
O.count_of = count_of

-- A new contiguous tensor of type t and shape, its contents undefined.
function O.empty(fn, dev, t, shape)
  local n = count_of(shape)
  if not n then
    fail(fn, "the result's shape %s is too large (at most 2^53 elements)", show_shape(shape))
  end
  return view(memory.storage(fn, dev, t, n), t, shape, contiguous_strides(shape), 0)
end

-- Hands back now the block of x, a temporary an op made for itself (with
-- O.empty, a copy) and gave no one: the pool may give it to the device's
-- next op, which its queue runs after the commands that read x, as after
-- x's collection, without waiting for one. x is unusable after. (A block
-- with a view, a reader or a script's eyes on it is left to the collector.)
function O.drop(x)
  local s = x._st
  if type(s) == "table" and s.pool and s.holders == 1 and not s.readers and not s.exposed then
    memory.give_back(s)
    x._st, x._expr = RELEASED, false
  end
end

-- Whether x is row-major (lazy tensors are).
function O.is_contiguous(x)
  if x._expr then return true end
  local s, st = 1, x._strides
  local shape = x._shape
  for i = #shape, 1, -1 do
    if shape[i] ~= 1 and st[i] ~= s then return false end
    s = s * shape[i]
  end
  return true
end

-- The buffer or view of the elements of x (realized, contiguous, not
-- empty), without exposing its storage: the root, the storage's one view
-- of its own elements (made once, so that helpers keeping what they found
-- per buffer object find it again), or a new view.
function O.elements_of(x)
  local s = x._st
  local buf, n = s.buf, x._n
  if x._off == 0 and s.count == n then return buf end
  if x._off == 0 and s.n == n then
    s.view = s.view or buf:sub(1, n)
    return s.view
  end
  return buf:sub(x._off + 1, x._off + n)
end

------------------------------------------------------------------ checks

function O.check_type(fn, where, t)
  if type(t) ~= "string" or not SIZES[t] then
    fail(fn, "%s: expected an element type (%s), got %s", where, TY.LIST, show(t))
  end
  return t
end

-- Checks the type t to be usable on dev (double needs fp64).
function O.check_device_type(fn, dev, t)
  if t == "double" and not dev.fp64 then
    fail(fn, "%s has no double precision (fp64)", dev.name)
  end
end

-- A key of table t other than the positions 1..n (read raw), or nil: a
-- list of sizes or values with an option put among them. next() past the
-- last position finds none at once where they are the table's array part;
-- else every key is looked at.
function O.stray_key(t, n)
  if next(t, n > 0 and n or nil) == nil then return nil end
  for k in next, t do
    if mathtype(k) ~= "integer" or k < 1 or k > n then return k end
  end
  return nil
end

-- Raises where list t (where: its name, "argument #1") of n entries holds
-- another key ({1, 2, keepdim = true}: the option would do nothing, unseen);
-- holds says what it may hold ("a list of dims holds only dims").
function O.check_entries(fn, where, t, n, holds)
  local k = O.stray_key(t, n)
  if k ~= nil then
    fail(fn, "%s: %s, got the key %s (options go in a table of their own)", where, holds, show(k))
  end
end

-- Raises where keepdim = true comes without a dim (x:sum(nil, {keepdim =
-- true})): the whole reduction is a Lua number, which keeps no dims.
function O.check_keepdim(fn, dim, keepdim)
  if dim == nil and keepdim == true then
    fail(fn, "argument #2: keepdim needs a dim or a list of dims (without one the result " ..
         "is a Lua number)")
  end
end

-- Raises where a call got arguments past its last: ... are they, the first
-- argument #n (nils are passed over: x:sum(1, nil) is x:sum(1)). An options
-- table there ({keepdim = true} to an op that takes none) would do nothing.
function O.no_more(fn, n, ...)
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if v ~= nil then
      fail(fn, "argument #%d: expected no more arguments, got %s", n + i - 1, typename(v))
    end
  end
end

-- Checks a shape: a number (1-D) or a list of at most 8 integer sizes >= 0
-- (read raw) whose product fits; returns a new list and the count.
function O.check_shape(fn, where, shape)
  local list, n = {}, 1
  if type(shape) == "number" then
    list[1] = shape
  elseif type(shape) == "table" then
    n = rawlen(shape)
    if n > MAX_DIMS then
      fail(fn, "%s: %d dimensions are too many (at most %d)", where, n, MAX_DIMS)
    end
    for i = 1, n do list[i] = rawget(shape, i) end
    O.check_entries(fn, where, shape, n, "a shape holds only sizes")
  else
    fail(fn, "%s: expected a shape (a table of sizes), got %s", where, typename(shape))
  end
  -- span: the product of the sizes but 0s, at most 2^53 even where a 0
  -- makes the count 0 (as NumPy: an empty {0, 2^32, 2^32} is too big), so
  -- that no shape derived from it (its sum along dim 1, a transpose's
  -- product) overflows
  local count, span = 1, 1
  for i = 1, n do
    local d = list[i]
    local v = integer(d)
    if not v or v < 0 then
      fail(fn, "%s: size %d: expected an integer >= 0, got %s", where, i, d ~= d and "nan" or show(d))
    end
    list[i] = v
    if v > 0 then
      if span > MAX_ELEMENTS // v then
        local empty = false
        for k = 1, #list do if list[k] == 0 then empty = true end end
        fail(fn, "%s: shape %s is too large (at most 2^53 elements%s)", where, show_shape(list),
             empty and ", counting the sizes but its 0s" or "")
      end
      span = span * v
    end
    count = count * v
  end
  return list, count
end

-- Checks that n elements of t fit one allocation on dev (before allocating).
function O.check_alloc(fn, dev, t, shape, n)
  local bytes = n * SIZES[t]
  if bytes > dev.max_alloc_size then
    fail(fn, "shape %s of %s needs %d bytes, more than the device's max_alloc_size " ..
         "(%d bytes)", show_shape(shape), t, bytes, dev.max_alloc_size)
  end
end

-- What a value given for a list is, in a message: a table with a
-- metatable (not a tensor) is said to be one, since lists are read raw
-- from plain tables only; else H.typename.
function O.what(v)
  if type(v) == "table" and getmetatable(v) ~= nil and getmetatable(v) ~= MT then
    return "a table with a metatable (lists are read from plain tables)"
  end
  return typename(v)
end

-- Raises for a table with a metatable given where a dim or a list of
-- dims (argument #arg of fn) is taken.
function O.not_a_list(fn, arg, v)
  if type(v) == "table" and getmetatable(v) ~= nil and getmetatable(v) ~= MT then
    fail(fn, "argument #%d: expected an integer dim or a list of dims, got %s", arg, O.what(v))
  end
end

-- Checks that a tensor of x's shape and type t (x's when nil) fits one
-- buffer of x's device: for an op (fn) that makes one along the way (a
-- copy, a sort, positions), so that a view too large raises under fn's
-- name, not under the op it calls.
function O.check_room(fn, x, t)
  O.check_alloc(fn, x._dev, t or x._type, x._shape, x._n)
end

-- Checks dim (1-based, negative from the end) of x; returns it positive.
function O.check_dim(fn, where, x, dim, extra)
  local nd = #x._shape + (extra or 0)
  local d = integer(dim)
  if d and d < 0 then d = d + nd + 1 end
  if not d or d < 1 or d > nd then
    local k = type(dim)
    if k == "table" or k == "userdata" or k == "function" then
      fail(fn, "%s: expected an integer dim, got %s", where, typename(dim))
    end
    -- (1.5, nan, inf, nil, a string: not a dim at all, whatever the range;
    -- 2^63, integral, is one out of range)
    if not d and not (k == "number" and dim == math.floor(dim) and dim - dim == 0) then
      fail(fn, "%s: expected an integer dim, got %s", where, show(dim))
    end
    if nd == 0 then fail(fn, "%s: a 0-d tensor has no dims, got %s", where, show(dim)) end
    fail(fn, "%s: dim %s is out of range (1 to %d, or -%d to -1)", where, show(dim), nd, nd)
  end
  return d
end

-- A list of dims of x (argument #arg of fn, read raw): only its positions,
-- none twice; it may be empty (NumPy's axis=(): a reduction over no dims
-- is elementwise, a flip of none is x). Returns a new list of them
-- positive, in the order given, and the set of them.
function O.check_dims(fn, arg, x, list)
  local where = "argument #" .. arg
  local n = rawlen(list)
  O.check_entries(fn, where, list, n, "a list of dims holds only dims")
  local dims, seen = {}, {}
  for i = 1, n do
    local d = O.check_dim(fn, where .. ": entry " .. i, x, rawget(list, i))
    if seen[d] then fail(fn, "%s: dim %d appears twice", where, d) end
    seen[d], dims[i] = true, d
  end
  return dims, seen
end

-- The dim argument of the ops along one dim (cumsum, sort, softmax, ...):
-- nil for the last; a list raises.
function O.check_one_dim(fn, x, dim)
  if #x._shape == 0 then fail(fn, "expected a tensor of at least 1 dim, got a 0-d one") end
  if dim == nil then return #x._shape end
  if type(dim) == "table" then
    fail(fn, "argument #1: expected an integer dim, got a table (several dims at once are " ..
         "not supported yet)")
  end
  return O.check_dim(fn, "argument #1", x, dim)
end

-- x with dim d moved last, contiguous, and the permutation that moves it
-- back (nil when d is last). With copy, always a new tensor of its own
-- (to be written); else possibly x or a view of x's storage (when the
-- moved layout is already contiguous: {n, 1} along 1, b:t() along 1). A
-- copy is fn's (a copy too large names fn).
function O.dim_last(fn, x, d, copy)
  local nd = #x._shape
  local moved, back = x, nil
  if d ~= nd then
    local order = {}
    back = {}
    for i = 1, nd do if i ~= d then order[#order + 1] = i end end
    order[nd] = d
    for i, o in ipairs(order) do back[o] = i end
    moved = x:permute(order)
  end
  if copy then return O.copy(fn, moved), back end
  return O.contiguous(fn, moved), back
end

function O.check_same_device(fn, arg, x, dev)
  if x._dev ~= dev then
    fail(fn, "argument #%d: the tensors are on different devices (%s and %s)", arg,
         H.device_label(dev), H.device_label(x._dev))
  end
end

------------------------------------------------------------------ bounds

local function bad(fn, why)
  fail(fn, "the tensor's fields were changed (%s): no kernel runs over it", why)
end
O.bad = bad

-- The kinds of the fields an op reads before any launch checks them (a
-- script's rawset of a boolean there raised Lua's own errors deep in the
-- helpers): the storage a table (a lazy tensor: the expression), the
-- shape a table, the leaf node false, nil or a table, the device a
-- userdata. Their values are
-- checked where they are used (O.check_bounds, the launch).
function O.check_fields(fn, x)
  local e, l = x._expr, x._leaf
  if e then                           -- lazy: no storage yet (its count makes one)
    if type(e) ~= "table" then bad(fn, "its expression") end
    local n, shape = x._n, x._shape
    if mathtype(n) ~= "integer" or n < 0 or n > MAX_ELEMENTS or type(shape) ~= "table" then
      bad(fn, type(shape) == "table" and "count" or "shape, strides or offset")
    end
    local c = 1
    for i = 1, #shape do c = c * (mathtype(shape[i]) == "integer" and shape[i] or -1) end
    if c ~= n then bad(fn, "count") end
  else
    local s = x._st
    if type(s) ~= "table" then bad(fn, "no storage") end
    if s == RELEASED then O.released(fn) end
  end
  if type(x._shape) ~= "table" then bad(fn, "shape, strides or offset") end
  if l and (type(l) ~= "table" or l.x ~= x) then bad(fn, "its leaf node") end
  if type(x._dev) ~= "userdata" then bad(fn, "device") end
end

-- What a Buffer is, by the Buffer itself (its length, type and device come
-- from the C object, which no script can change), learned once per buffer:
-- CAP[buf] = {length, type, device}.
local CAP = setmetatable({}, {__mode = "k"})
local released = require("luagpu").released

-- Whether v is a live Buffer (a storage's view of its elements), learned
-- once per view in CAP (its own length, type and device).
local function is_view(v)
  if gpu_type(v) ~= "Buffer" then return false end
  CAP[v] = {#v, v.type, v.device}
  return true
end

-- The layouts check_bounds passed, per tensor (weak keys): a list {s,
-- buf, view (false: none), shape, strides, off, n, t, dev, nd, cap, then
-- the shape's nd values, then the strides'} (a list: no hashed keys to
-- make for the record every new result gets). A later check of the same
-- tensor whose fields (read again, every one) equal these passes without
-- the arithmetic and the type tests; any difference makes the full check
-- run again.
local PASSED = setmetatable({}, {__mode = "k"})
-- (the record's positions; one declaration each, so that Lua folds them)
local R_S <const> = 1
local R_BUF <const> = 2
local R_VIEW <const> = 3
local R_SHAPE <const> = 4
local R_STRIDES <const> = 5
local R_OFF <const> = 6
local R_N <const> = 7
local R_T <const> = 8
local R_DEV <const> = 9
local R_ND <const> = 10
local R_CAP <const> = 11          -- then the shape's nd values, then the strides'
local full_check

-- Checks realized tensor x (fn's) against its storage's Buffer before a
-- kernel or a copy uses it: x's fields live in a Lua table a script can
-- write with rawset, so every position its shape, strides and offset reach
-- must lie in the Buffer, and its type, count and device must be the
-- Buffer's. Every launch over a tensor calls this (O(ndim), no allocation
-- but the first time a tensor or a Buffer is met). Returns the Buffer's
-- element count.
function O.check_bounds(fn, x)
  local c = PASSED[x]
  if c == nil or getmetatable(x) ~= MT then return full_check(fn, x) end
  -- the same fields as last time? (==, on tables, may run a script's
  -- __eq: what decides is what s holds, read raw, and the values in shape
  -- and strides, which have no metatable when they match, so that their
  -- __len and __index cannot answer differently later)
  local s, shape, st, nd = x._st, x._shape, x._strides, c[R_ND]
  if s ~= c[R_S] or x._off ~= c[R_OFF] or x._n ~= c[R_N] or x._type ~= c[R_T]
     or x._dev ~= c[R_DEV] or shape ~= c[R_SHAPE] or st ~= c[R_STRIDES]
     or getmetatable(shape) ~= nil or getmetatable(st) ~= nil or #shape ~= nd or #st ~= nd then
    return full_check(fn, x)
  end
  for i = 1, nd do
    if shape[i] ~= c[R_CAP + i] or st[i] ~= c[R_CAP + nd + i] then return full_check(fn, x) end
  end
  local buf, bview = rawget(s, "buf"), rawget(s, "view")
  if buf ~= c[R_BUF] or (bview or false) ~= c[R_VIEW] then return full_check(fn, x) end
  if released(buf) or bview and released(bview) then
    fail(fn, "the tensor's buffer was released")
  end
  return c[R_CAP]
end

-- The element count of the Buffer under x, a tensor this call checked
-- (X.check at its entry: O.check_bounds) or made from checked ones (a
-- view, a result): its Buffer's count, known since that check, without
-- checking x's fields again. Any other tensor is checked now.
function O.cap(fn, x)
  local known = CAP[rawget(x._st, "buf")]
  if known then return known[1] end
  return O.check_bounds(fn, x)
end

function full_check(fn, x)
  PASSED[x] = nil
  -- with luagpu's metatable, a field missing from x reads nil, as it will
  -- at launch; the shape and strides tables must have none (no __index or
  -- __len that could answer differently later); the storage is read raw
  if getmetatable(x) ~= MT then bad(fn, "metatable") end
  local s = x._st
  if s == RELEASED then O.released(fn) end
  if type(s) ~= "table" then bad(fn, "no storage") end
  if rawget(s, "gone") then
    fail(fn, "the tensor was collected (a finalizer brought it back): its memory is gone")
  end
  local buf = rawget(s, "buf")
  local known = CAP[buf]
  if known then                       -- a Buffer met before: is it still live?
    if released(buf) then fail(fn, "the tensor's buffer was released") end
  else
    local kind = gpu_type(buf)
    if kind ~= "Buffer" then
      -- x.buffer handed out, then released
      if kind == "released Buffer" then fail(fn, "the tensor's buffer was released") end
      bad(fn, "its storage holds no buffer")
    end
    known = {#buf, buf.type, buf.device}
    CAP[buf] = known
  end
  -- x.buffer is the view of a pool block's elements when the block is larger
  local bview = rawget(s, "view")
  if bview and (CAP[bview] and released(bview) or not CAP[bview] and not is_view(bview)) then
    fail(fn, "the tensor's buffer was released")
  end
  local cap = known[1]
  local t = x._type
  if known[2] ~= t then
    bad(fn, format("type %s over a buffer of %s", tostring(t), known[2]))
  end
  if known[3] ~= x._dev then bad(fn, "device is not its buffer's") end
  local shape, st, off = x._shape, x._strides, x._off
  if type(shape) ~= "table" or type(st) ~= "table" or getmetatable(shape) ~= nil or
     getmetatable(st) ~= nil or mathtype(off) ~= "integer" or off < 0 then
    bad(fn, "shape, strides or offset")
  end
  local nd = #shape
  if nd > MAX_DIMS or #st ~= nd then bad(fn, "shape or strides") end
  -- last and first: the highest and lowest element reached (a negative
  -- stride walks down from the offset: a reversed view)
  local n, last, first, over, under = 1, off, off, false, false
  for i = 1, nd do
    local d, k = shape[i], st[i]
    if mathtype(d) ~= "integer" or mathtype(k) ~= "integer" or d < 0 then
      bad(fn, "shape or strides")
    end
    if d > 1 then
      if n > MAX_ELEMENTS // d then bad(fn, "shape") end
      n = n * d
      if k > 0 and not over then
        if d - 1 > (cap - 1 - last) // k then over = true else last = last + (d - 1) * k end
      elseif k < 0 and not under then
        if k == mininteger or d - 1 > first // -k then under = true
        else first = first + (d - 1) * k end
      end
    elseif d == 0 then
      n = 0
    end
  end
  if x._n ~= n then bad(fn, "count") end
  if n > 0 and (over or last >= cap) then
    bad(fn, format("its elements reach past its buffer of %d", cap))
  end
  if n > 0 and under then bad(fn, "its elements reach before its buffer's first") end
  -- (in the order of the R_ positions)
  local c = {s, buf, bview or false, shape, st, off, n, t, x._dev, nd, cap}
  for i = 1, nd do c[R_CAP + i], c[R_CAP + nd + i] = shape[i], st[i] end
  PASSED[x] = c
  return cap
end

-- O.positions(n): the positions along a dim of size n, for a message:
-- "(1 to n, or -n to -1)", or "(the dim has size 0)".
function O.positions(n)
  if n == 0 then return "(the dim has size 0)" end
  return ("(1 to %d, or -%d to -1)"):format(n, n)
end

-- Argument #arg of fn: a dim of x, or a list of them (a table without a
-- metatable, checked by O.check_dims). Returns a new list of them positive.
function O.check_dim_or_dims(fn, arg, x, dims)
  if type(dims) == "table" and getmetatable(dims) == nil then
    return (O.check_dims(fn, arg, x, dims))
  end
  O.not_a_list(fn, arg, dims)
  return {O.check_dim(fn, "argument #" .. arg, x, dims)}
end

-- Argument #arg of fn, the dim of an op along one dim (median, topk): nil
-- for the last; a list raises (O.check_one_dim for argument #1).
function O.check_one_dim_at(fn, arg, x, dim)
  if #x._shape == 0 then fail(fn, "expected a tensor of at least 1 dim, got a 0-d one") end
  if dim == nil then return #x._shape end
  if type(dim) == "table" then
    fail(fn, "argument #%d: expected an integer dim, got a table (several dims at once are " ..
         "not supported yet)", arg)
  end
  return O.check_dim(fn, "argument #" .. arg, x, dim)
end

return O
