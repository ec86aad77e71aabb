-- luagpu.tensor: device n-d arrays. This file holds the class, creation,
-- reading, printing and views; the rest is in tensor_elementwise.lua
-- (operators, fusion), tensor_reduce.lua, tensor_random.lua,
-- tensor_memory.lua (the pool) and tensor_interop.lua (mm, .npy, algo).
--
-- A Tensor is a Lua table: a typed view (shape, strides in elements, a
-- 0-based offset) over a storage (a root Buffer of its type, from the
-- device's pool or given by the user), or, for the result of elementwise
-- operations not yet needed, an expression (_expr) that is evaluated
-- (realized) into a new storage when its values are needed. Device methods
-- (dev:tensor, dev:arange, dev:rand, dev:randn, dev:memory) are taken from
-- M.device_methods by device.c on first use; gpu.where, gpu.load(path, dev)
-- by module.c.

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local memory = require "luagpu.core.pool"
local TY = require "luagpu.core.types"
-- C.check_bounds(fn, x): x's fields against its Buffer, before any launch
local check_bounds = require("luagpu.tensor.codegen").check_bounds

local type, ipairs, tostring, rawget, rawlen = type, ipairs, tostring, rawget, rawlen
local setmetatable, pcall = setmetatable, pcall
local format, concat, unpack = string.format, table.concat, table.unpack
local floor, huge = math.floor, math.huge
local fail, typename, show, integer = H.fail, H.typename, H.show, H.integer
local SIZES = TY.SIZES

local M = {}

-- The core shared with the other tensor files.
local C = {M = M, SIZES = SIZES}
local TAG = {}
C.TAG = TAG
local Tensor = {}           -- methods
C.Tensor = Tensor
local FIELDS = {}
local MT = {__name = "luagpu.Tensor"}
C.MT = MT
require("luagpu.tensor.codegen").MT = MT   -- what check_bounds knows tensors by

-- Methods, then fields; any other key raises (x[i] is not indexing yet).
MT.__index = function(t, k)
  local m = Tensor[k]
  if m ~= nil then return m end
  local f = FIELDS[k]
  if f then return f(t) end
  -- an internal field a script removed with rawset: nil here, and the
  -- launch check (tensor_codegen's check_bounds) names it
  if type(k) == "string" and k:byte(1) == 95 then return nil end
  if type(k) == "number" then
    fail("tensor", "x[%s]: indexing a tensor is not supported yet (use x:select(dim, i), " ..
         "x:slice(dim, first, last), x:item() or x:get())", show(k))
  end
  fail("tensor", "no field or method %s", type(k) == "string" and "'" .. k .. "'" or show(k))
end

MT.__newindex = function(_, k)
  fail("tensor", "field '%s' is read-only", tostring(k))
end

MT.__len = function(t) return t._n end

local MAX_DIMS = 8
C.MAX_DIMS = MAX_DIMS
-- Largest element count: below 2^53, so counts stay exact everywhere.
local MAX_ELEMENTS = 1 << 53
C.MAX_ELEMENTS = MAX_ELEMENTS

C.check_bounds = check_bounds

function C.is_tensor(v)
  return type(v) == "table" and rawget(v, TAG) == true
end
local is_tensor = C.is_tensor

-- Row-major strides of shape (strides tables are never written: 1-D
-- shapes share one).
local ONE = {1}
local function contiguous_strides(shape)
  if #shape == 1 then return ONE end
  local st, s = {}, 1
  for i = #shape, 1, -1 do
    st[i] = s
    s = s * shape[i]
  end
  return st
end
C.contiguous_strides = contiguous_strides

local function numel(shape)
  local n = 1
  for i = 1, #shape do n = n * shape[i] end
  return n
end
C.numel = numel

-- "{3, 4}" for messages.
local function show_shape(shape)
  return "{" .. concat(shape, ", ") .. "}"
end
C.show_shape = show_shape

-- A new tensor viewing storage s. Every field is present (_expr false),
-- so that reading one never reaches MT.__index.
-- _leaf: its expression node once made (tensor_elementwise.lua).
local function view(s, t, shape, strides, off)
  return setmetatable({[TAG] = true, _expr = false, _leaf = false, _st = s, _type = t,
                       _shape = shape, _strides = strides, _off = off, _n = numel(shape),
                       _dev = s.dev}, MT)
end
C.view = view

-- A new lazy tensor of expression e (C.realize evaluates it).
function C.lazy(dev, e)
  return setmetatable({[TAG] = true, _expr = e, _leaf = false, _st = false, _type = e.type,
                       _shape = e.shape, _strides = contiguous_strides(e.shape), _off = 0,
                       _n = numel(e.shape), _dev = dev}, MT)
end

-- A new contiguous tensor of type t and shape, its contents undefined.
function C.empty(fn, dev, t, shape)
  local n = numel(shape)
  return view(memory.storage(fn, dev, t, n), t, shape, contiguous_strides(shape), 0)
end

-- Checks x to be a tensor (argument #arg of fn); realized unless lazy_ok.
function C.check(fn, arg, x, lazy_ok)
  if not is_tensor(x) then
    fail(fn, "argument #%d: expected a tensor, got %s", arg, typename(x))
  end
  if not lazy_ok and x._expr then C.realize(x) end
  if not x._expr then
    check_bounds(fn, x)
  elseif not SIZES[x._type] then
    -- a lazy tensor's type a script changed (its tree is checked when run)
    require("luagpu.tensor.codegen").bad(fn, "type " .. tostring(x._type))
  end
  return x
end

------------------------------------------------------------------ checks

local TYPE_LIST = "char, uchar, short, ushort, int, uint, long, ulong, float or double"

function C.check_type(fn, where, t)
  if type(t) ~= "string" or not SIZES[t] then
    fail(fn, "%s: expected an element type (%s), got %s", where, TYPE_LIST, show(t))
  end
  return t
end
local check_type = C.check_type

-- Checks the type t to be usable on dev (double needs fp64).
function C.check_device_type(fn, dev, t)
  if t == "double" and not dev.fp64 then
    fail(fn, "%s has no double precision (fp64)", dev.name)
  end
end

-- Checks a shape: a number (1-D) or a list of at most 8 integer sizes >= 0
-- (read raw) whose product fits; returns a new list and the count.
function C.check_shape(fn, where, shape)
  local list = {}
  if type(shape) == "number" then
    list[1] = shape
  elseif type(shape) == "table" then
    local n = rawlen(shape)
    if n > MAX_DIMS then
      fail(fn, "%s: %d dimensions are too many (at most %d)", where, n, MAX_DIMS)
    end
    for i = 1, n do list[i] = rawget(shape, i) end
  else
    fail(fn, "%s: expected a shape (a table of sizes), got %s", where, typename(shape))
  end
  local count = 1
  for i, d in ipairs(list) do
    local v = integer(d)
    if not v or v < 0 then
      fail(fn, "%s: size %d: expected an integer >= 0, got %s", where, i, d ~= d and "nan" or show(d))
    end
    list[i] = v
    if v > 0 and count > MAX_ELEMENTS // v then
      fail(fn, "%s: shape %s is too large (at most 2^53 elements)", where, show_shape(list))
    end
    count = count * v
  end
  return list, count
end

-- Checks that n elements of t fit one allocation on dev (before allocating).
function C.check_alloc(fn, dev, t, shape, n)
  local bytes = n * SIZES[t]
  if bytes > dev.max_alloc_size then
    fail(fn, "shape %s of %s needs %d bytes, more than the device's max_alloc_size " ..
         "(%d bytes)", show_shape(shape), t, bytes, dev.max_alloc_size)
  end
end

-- Checks dim (1-based, negative from the end) of x; returns it positive.
function C.check_dim(fn, where, x, dim, extra)
  local nd = #x._shape + (extra or 0)
  local d = integer(dim)
  if d and d < 0 then d = d + nd + 1 end
  if not d or d < 1 or d > nd then
    if nd == 0 then fail(fn, "%s: a 0-d tensor has no dims, got %s", where, show(dim)) end
    fail(fn, "%s: dim %s is out of range (1 to %d, or -%d to -1)", where, show(dim), nd, nd)
  end
  return d
end

function C.check_same_device(fn, arg, x, dev)
  if x._dev ~= dev then
    fail(fn, "argument #%d: the tensors are on different devices (%s and %s)", arg,
         dev.name, x._dev.name)
  end
end

------------------------------------------------------------------ fields

FIELDS.shape = function(t) return {unpack(t._shape)} end
FIELDS.strides = function(t)
  if t._expr then return contiguous_strides(t._shape) end
  return {unpack(t._strides)}
end
FIELDS.type = function(t) return t._type end
FIELDS.ndim = function(t) return #t._shape end
FIELDS.device = function(t) return t._dev end
-- The storage's root Buffer: handing it out makes later operations on the
-- tensor eager (the script may write it behind luagpu's back).
FIELDS.buffer = function(t)
  if t._expr then C.realize(t) end
  local s = t._st
  C.expose(s)
  if s.n and s.n > 0 and s.n < #s.buf then
    s.view = s.view or s.buf:sub(1, s.n)
    return s.view
  end
  return s.buf
end
FIELDS.offset = function(t)
  if t._expr then C.realize(t) end
  return t._off
end

function Tensor.is_contiguous(x)
  if x._expr then return true end
  local s, st = 1, x._strides
  local shape = x._shape
  for i = #shape, 1, -1 do
    if shape[i] ~= 1 and st[i] ~= s then return false end
    s = s * shape[i]
  end
  return true
end
local is_contiguous = Tensor.is_contiguous

-- Marks storage s as seen by the script: lazy results reading it are
-- evaluated now, and later operations on it are not deferred.
function C.expose(s)
  if not s.exposed then
    C.flush_readers(s)
    s.exposed = true
    memory.expose(s)
  end
end

------------------------------------------------------------------ creation

-- Flattens a nested table (read raw) of the given shape into flat, checking
-- every level's length.
local function flatten(fn, t, shape, level, flat, at)
  local n = rawlen(t)
  if n ~= shape[level] then
    fail(fn, "argument #3: %s has %d entries, the shape %s needs %d", at, n,
         show_shape(shape), shape[level])
  end
  for i = 1, n do
    local v = rawget(t, i)
    if level == #shape then
      flat[#flat + 1] = v
    else
      if type(v) ~= "table" then
        fail(fn, "argument #3: %s[%d]: expected a table of %d values, got %s", at, i,
             shape[level + 1], typename(v))
      end
      flatten(fn, v, shape, level + 1, flat, at .. "[" .. i .. "]")
    end
  end
end

-- Writes a flat table or host array of n values into x (contiguous, fresh).
local function write_values(fn, x, src)
  local n = x._n
  if n == 0 then return end
  local b = x._st.buf:sub(x._off + 1, x._off + n)
  local ok, e = pcall(b.write, b, src)
  if not ok then
    e = tostring(e):gsub("^luagpu: [%w.:_]+: argument #1: ", "")
    fail(fn, "argument #3: %s", e)
  end
  b:get()  -- the write is done before src can go
end

local function new_tensor(dev, t, shape, init)
  local fn = "device:tensor"
  check_type(fn, "argument #1", t)
  C.check_device_type(fn, dev, t)
  if init ~= nil and gpu.type(init) == "Buffer" and shape == nil then
    shape = #init
  end
  local list, n = C.check_shape(fn, "argument #2", shape)
  C.check_alloc(fn, dev, t, list, n)
  local cls = gpu.type(init)
  if cls == "Buffer" then
    if init.type ~= t then
      fail(fn, "argument #3: expected a buffer of %s, got one of %s", t, init.type)
    end
    if init.device ~= dev then
      fail(fn, "argument #3: the buffer is on another device (%s)", init.device.name)
    end
    if #init ~= n then
      fail(fn, "argument #3: the shape %s needs %d elements, the buffer has %d",
           show_shape(list), n, #init)
    end
    return view(memory.shared(init), t, list, contiguous_strides(list), init.offset)
  elseif cls ~= nil and cls ~= "Array" then
    fail(fn, "argument #3: expected a number, a table, a host array or a buffer, got %s",
         typename(init))
  end
  local x = C.empty(fn, dev, t, list)
  if init == nil then
    if n > 0 then x._st.buf:sub(1, n):fill(0) end
  elseif type(init) == "number" then
    -- the rules of scalar operands (x:set(v), x + v) and of tables alike
    local why = TY.fits(t, init)
    if why then fail(fn, "argument #3: %s", why) end
    if n > 0 then
      local ok, e = pcall(x._st.buf.fill, x._st.buf:sub(1, n), init)
      if not ok then fail(fn, "argument #3: %s", tostring(e):gsub("^.-: .-: ", "")) end
    end
  elseif cls == "Array" then
    if #init ~= n then
      fail(fn, "argument #3: the shape %s needs %d values, the host array has %d",
           show_shape(list), n, #init)
    end
    if init.type ~= t then init = init:copy(t) end
    write_values(fn, x, init)
  elseif type(init) == "table" then
    local flat
    if rawlen(init) == n and (n == 0 or type(rawget(init, 1)) ~= "table") then
      flat = {}
      for i = 1, n do flat[i] = rawget(init, i) end
    elseif #list == 0 then
      fail(fn, "argument #3: expected 1 value for a 0-d tensor, got a table of %d",
           rawlen(init))
    else
      if type(rawget(init, 1)) ~= "table" and #list > 1 then
        fail(fn, "argument #3: expected %d values or a nested table of shape %s, got %d values",
             n, show_shape(list), rawlen(init))
      end
      flat = {}
      flatten(fn, init, list, 1, flat, "the table")
    end
    local ok, a = pcall(gpu.array, t, flat)
    if not ok then
      fail(fn, "argument #3: %s", (tostring(a):gsub("^.-luagpu: gpu.array: argument #2: ", "")))
    end
    write_values(fn, x, a)
  else
    fail(fn, "argument #3: expected a number, a table, a host array or a buffer, got %s",
         typename(init))
  end
  return x
end

M.device_methods = {}
local DM = M.device_methods

-- dev:tensor(type, shape [, init]) (see docs/API.md, "Tensors").
function DM.tensor(dev, t, shape, init)
  H.check_object("device:tensor", "self", dev, "Device")
  return new_tensor(dev, t, shape, init)
end

function DM.memory(dev)
  H.check_object("device:memory", "self", dev, "Device")
  return memory.memory(dev)
end

------------------------------------------------------------------ reading

-- The values of contiguous x, a host array of x's shape (1 value for 0-d).
function Tensor.get(x)
  C.check("tensor:get", 0, x)
  x = x:contiguous()
  local shape = x._shape
  local a
  if #shape == 0 then
    a = gpu.array(x._type, 1)
  else
    a = gpu.array(x._type, {shape = shape})
  end
  if x._n > 0 then x._st.buf:sub(x._off + 1, x._off + x._n):get(a) end
  return a
end

-- Nested tables of x's values (a number for a 0-d tensor).
function Tensor.totable(x)
  local a = Tensor.get(x)
  local flat = a:totable()
  local shape = x._shape
  if #shape == 0 then return flat[1] end
  local pos = 0
  local function build(level)
    local t = {}
    for i = 1, shape[level] do
      if level == #shape then
        pos = pos + 1
        t[i] = flat[pos]
      else
        t[i] = build(level + 1)
      end
    end
    return t
  end
  return build(1)
end

-- The one value of a tensor of one element.
function Tensor.item(x)
  C.check("tensor:item", 0, x)
  if x._n ~= 1 then fail("tensor:item", "expected a tensor of 1 element, got %d", x._n) end
  return x:get()[1]
end

------------------------------------------------------------------ printing

local EDGE, SUMMARY = 3, 1000

local function format_value(t, v)
  if t == "float" or t == "double" then
    if v ~= v then return "nan" end
    if v == huge then return "inf" elseif v == -huge then return "-inf" end
    if v == floor(v) and v > -1e15 and v < 1e15 then return format("%d.", v) end
    return format(t == "float" and "%.6g" or "%.10g", v)
  end
  if t == "ulong" and v < 0 then return format("%u", v) end
  return tostring(v)
end

MT.__tostring = function(x)
  local head = format("luagpu.Tensor<%s>%s", x._type, show_shape(x._shape))
  local ok, a = pcall(Tensor.get, x)
  if not ok then return head .. ": " .. tostring(a) end
  local vals = a:totable()
  local shape, t = x._shape, x._type
  local elide = x._n > SUMMARY
  local strs, width = {}, 0
  for i, v in ipairs(vals) do
    local s = format_value(t, v)
    strs[i] = s
    if #s > width then width = #s end
  end
  if #shape == 0 then return head .. ": " .. (strs[1] or "") end
  local inner = contiguous_strides(shape)
  local function block(level, base, indent)
    local parts = {}
    local n = shape[level]
    local function item(i)
      local at = base + (i - 1) * inner[level]
      if level == #shape then
        return format("%" .. width .. "s", strs[at + 1])
      end
      return block(level + 1, at, indent .. " ")
    end
    if elide and n > 2 * EDGE then
      for i = 1, EDGE do parts[#parts + 1] = item(i) end
      parts[#parts + 1] = "..."
      for i = n - EDGE + 1, n do parts[#parts + 1] = item(i) end
    else
      for i = 1, n do parts[#parts + 1] = item(i) end
    end
    if level == #shape then return "[" .. concat(parts, ", ") .. "]" end
    local sep = "," .. ("\n"):rep(#shape - level) .. indent .. " "
    return "[" .. concat(parts, sep) .. "]"
  end
  return head .. ":\n" .. block(1, 0, "")
end

-- A realized x (returns x); lazy results run their kernel now.
function Tensor.eval(x)
  C.check("tensor:eval", 0, x)
  return x
end

function M.is_tensor(v) return is_tensor(v) end
M.MAX_DIMS = MAX_DIMS

C.new_tensor = new_tensor

require("luagpu.tensor.views").install(C)
require("luagpu.tensor.elementwise").install(C)
require("luagpu.tensor.reduce").install(C)
require("luagpu.tensor.random").install(C)
require("luagpu.tensor.interop").install(C)

return M
