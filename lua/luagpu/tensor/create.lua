-- luagpu.tensor.create: dev:tensor's work and the other constructors
-- that need no random numbers (internal to luagpu.tensor).
--
--   C.new_tensor(dev, type, shape [, init])   a new tensor of type and shape
--       on dev: zeros, a number in every element, the values of a (nested)
--       table or a host array, or a view over a Buffer (docs/API.md,
--       "Tensors"); checks every argument as device:tensor's
--   C.device_methods   dev:zeros, dev:ones, dev:full, dev:eye, dev:linspace
--   C.methods          x:zeros_like, x:ones_like, x:full_like
--
-- Every result is a new contiguous tensor in a block of the pool
-- (luagpu.core.pool), written whole by one fill or one generated kernel.

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local memory = require "luagpu.core.pool"
local TY = require "luagpu.core.types"
local NO_EVENT = require("luagpu.core.steps").NO_EVENT   -- (enqueue without an Event)
local O = require "luagpu.tensor.object"
local X = require "luagpu.tensor.expr"
local G = require "luagpu.tensor.codegen"

local type, tostring, rawget, rawlen, pcall, ipairs = type, tostring, rawget, rawlen, pcall, ipairs
local floor, mathtype, next = math.floor, math.type, next
local fail, typename, show, integer = H.fail, H.typename, H.show, H.integer
local show_shape, check_type = O.show_shape, O.check_type

local C = {device_methods = {}, methods = {}}

-- Checks that table t (at: its name in messages) holds only its n values:
-- another key ({1, 2, pinned = true}) would be dropped unseen.
local function only_values(fn, t, n, at)
  O.check_entries(fn, "argument #3", t, n, at .. " holds only values")
end

-- Flattens a nested table (read raw) of the given shape into flat, checking
-- every level's length.
local function flatten(fn, t, shape, level, flat, at)
  local n = rawlen(t)
  if n ~= shape[level] then
    fail(fn, "argument #3: %s has %d entries, the shape %s needs %d", at, n,
         show_shape(shape), shape[level])
  end
  only_values(fn, t, n, at)
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

-- (see the header)
function C.new_tensor(dev, t, shape, init)
  local fn = "device:tensor"
  check_type(fn, "argument #1", t)
  O.check_device_type(fn, dev, t)
  -- (a released one was "expected ... a buffer, got luagpu.Buffer")
  local live, released = H.class_of(init)
  if released then fail(fn, "argument #3: attempt to use a released %s", live:lower()) end
  if init ~= nil and gpu.type(init) == "Buffer" and shape == nil then
    shape = #init
  end
  local list, n = O.check_shape(fn, "argument #2", shape)
  O.check_alloc(fn, dev, t, list, n)
  local cls = gpu.type(init)
  if cls == "Buffer" then
    if init.type ~= t then
      fail(fn, "argument #3: expected a buffer of %s, got one of %s", t, init.type)
    end
    if init.device ~= dev then
      fail(fn, "argument #3: the buffer is on another device (%s)", init.device.name)
    end
    -- (an empty shape takes any buffer: no Buffer has 0 elements, so the
    -- buffer of an empty tensor, its pool block, has some)
    if #init ~= n and n > 0 then
      fail(fn, "argument #3: the shape %s needs %d elements, the buffer has %d",
           show_shape(list), n, #init)
    end
    return O.view(memory.shared(init), t, list, O.contiguous_strides(list), init.offset)
  elseif cls ~= nil and cls ~= "Array" then
    fail(fn, "argument #3: expected a number, a table, a host array or a buffer, got %s",
         typename(init))
  end
  local x = O.empty(fn, dev, t, list)
  if init == nil then
    if n > 0 then x._st.buf:sub(1, n):fill(0, NO_EVENT) end
  elseif type(init) == "number" then
    -- the rules of scalar operands (x:set(v), x + v) and of tables alike
    local why = TY.fits(t, init)
    if why then fail(fn, "argument #3: %s", why) end
    if n > 0 then
      local ok, e = pcall(x._st.buf.fill, x._st.buf:sub(1, n), init)
      if not ok then fail(fn, "argument #3: %s", tostring(e):gsub("^.-: .-: ", "")) end
    end
  elseif cls == "Array" then
    -- (an empty shape takes any buffer: no Buffer has 0 elements, so the
    -- buffer of an empty tensor, its pool block, has some)
    if #init ~= n and n > 0 then
      fail(fn, "argument #3: the shape %s needs %d values, the host array has %d",
           show_shape(list), n, #init)
    end
    if init.type ~= t then
      -- (a value that does not fit t: named as this call's argument)
      local ok, c = pcall(init.copy, init, t)
      if not ok then fail(fn, "argument #3: %s", (tostring(c):gsub("^.-luagpu: array:copy: ", ""))) end
      init = c
    end
    write_values(fn, x, init)
  elseif type(init) == "table" then
    local flat
    if rawlen(init) == n and (n == 0 or type(rawget(init, 1)) ~= "table") then
      only_values(fn, init, n, "the table")
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

------------------------------------------------------------------ filled

-- Checks the device, type (argument #1) and shape (argument #2) of device
-- constructor fn; returns the shape's list and count.
local function check_new(fn, dev, t, shape)
  H.check_object(fn, "self", dev, "Device")
  check_type(fn, "argument #1", t)
  O.check_device_type(fn, dev, t)
  local list, n = O.check_shape(fn, "argument #2", shape)
  O.check_alloc(fn, dev, t, list, n)
  return list, n
end

-- A new tensor of t and shape list (n elements) on dev with v (a number,
-- argument #arg, checked here) in every element.
local function filled(fn, dev, t, list, n, v, arg)
  if type(v) ~= "number" then
    fail(fn, "argument #%d: expected a number, got %s", arg, typename(v))
  end
  local why = TY.fits(t, v)
  if why then fail(fn, "argument #%d: %s", arg, why) end
  local x = O.empty(fn, dev, t, list)
  if n > 0 then
    local buf = x._st.buf
    if #buf ~= n then buf = buf:sub(1, n) end
    local ok, e = pcall(buf.fill, buf, v)
    if not ok then fail(fn, "argument #%d: %s", arg, tostring(e):gsub("^.-: .-: ", "")) end
  end
  return x
end

local DM = C.device_methods

-- O.no_more for a call whose argument shape came before the extra ones:
-- dev:zeros("float", 2, 3) names the table a shape of several dims is.
local function no_more_after_shape(fn, n, shape, ...)
  if type(shape) == "number" and type((...)) == "number" then
    fail(fn, "argument #%d: expected no more arguments, got number (a shape of several " ..
         "dims is one table: {%s, %s, ...})", n, show(shape), show((...)))
  end
  O.no_more(fn, n, ...)
end

-- dev:zeros(t, shape), dev:ones(t, shape), dev:full(t, shape, v)
function DM.zeros(dev, t, shape, ...)
  local fn = "device:zeros"
  no_more_after_shape(fn, 3, shape, ...)
  local list, n = check_new(fn, dev, t, shape)
  return filled(fn, dev, t, list, n, 0, 3)
end

function DM.ones(dev, t, shape, ...)
  local fn = "device:ones"
  no_more_after_shape(fn, 3, shape, ...)
  local list, n = check_new(fn, dev, t, shape)
  return filled(fn, dev, t, list, n, 1, 3)
end

function DM.full(dev, t, shape, v, ...)
  local fn = "device:full"
  O.no_more(fn, 4, ...)
  local list, n = check_new(fn, dev, t, shape)
  return filled(fn, dev, t, list, n, v, 3)
end

-- x:zeros_like([t]), x:ones_like([t]), x:full_like(v [, t]): x's shape
-- (and type, unless t is given) on x's device; x may be lazy (it is not
-- evaluated).
local function like(fn, x, v, varg, t, ...)
  X.check(fn, 0, x, true)
  O.no_more(fn, varg + 2, ...)
  if t == nil then t = x._type else check_type(fn, "argument #" .. varg + 1, t) end
  local dev = x._dev
  O.check_device_type(fn, dev, t)
  local list = {}
  for i, d in ipairs(x._shape) do list[i] = d end
  O.check_alloc(fn, dev, t, list, x._n)
  return filled(fn, dev, t, list, x._n, v, varg)
end

function C.methods.zeros_like(x, t, ...) return like("tensor:zeros_like", x, 0, 0, t, ...) end
function C.methods.ones_like(x, t, ...) return like("tensor:ones_like", x, 1, 0, t, ...) end
function C.methods.full_like(x, v, t, ...) return like("tensor:full_like", x, v, 1, t, ...) end

------------------------------------------------------------------ eye, linspace

local function scalar(v, t) return {kind = "scalar", value = v, type = t, shape = {}, size = 1} end
local function op(name, args, ct, t, shape)
  local size = 1
  for i = 1, #args do size = size + args[i].size end
  return {kind = "op", op = name, args = args, ct = ct, type = t or ct, shape = shape,
          size = size}
end

-- A count (argument #arg of fn): an integer >= 0.
local function check_count(fn, arg, what, v)
  local n = integer(v)
  if not n or n < 0 then
    fail(fn, "argument #%d: %s: expected an integer >= 0, got %s", arg, what, show(v))
  end
  return n
end

-- dev:eye(t, n [, m]): the n x m matrix (m defaults to n) with ones on the
-- diagonal: one kernel, element i (0-based, row-major) is 1 where
-- i % (m + 1) == 0 and i < min(n, m) * (m + 1).
function DM.eye(dev, t, n, m, ...)
  local fn = "device:eye"
  H.check_object(fn, "self", dev, "Device")
  O.no_more(fn, 4, ...)
  check_type(fn, "argument #1", t)
  O.check_device_type(fn, dev, t)
  n = check_count(fn, 2, "rows", n)
  m = m == nil and n or check_count(fn, 3, "columns", m)
  local list, count = O.check_shape(fn, "arguments #2 and #3", {n, m})
  O.check_alloc(fn, dev, t, list, count)
  local x = O.empty(fn, dev, t, list)
  local index = {kind = "index", type = "long", shape = list, size = 1}
  local pos = op("mod", {index, scalar(m + 1, "long")}, "long", nil, list)
  local diag = op("logical_and", {op("eq", {pos, scalar(0, "long")}, "long", "uchar", list),
                                  op("lt", {index, scalar((n < m and n or m) * (m + 1), "long")},
                                     "long", "uchar", list)}, "uchar", nil, list)
  G.run(fn, op("cast", {diag}, nil, t, list), x)
  return x
end

-- dev:linspace(t, first, last, count): count values from first to last,
-- both included (count 1: first), as NumPy's linspace: first + i * step,
-- step = (last - first) / (count - 1), the last one last exactly; computed
-- in double (float without fp64), floored for integer types (as NumPy 2).
function DM.linspace(dev, t, first, last, count, ...)
  local fn = "device:linspace"
  H.check_object(fn, "self", dev, "Device")
  O.no_more(fn, 5, ...)
  check_type(fn, "argument #1", t)
  O.check_device_type(fn, dev, t)
  local bounds = {first, last}
  for i = 1, 2 do
    local v = bounds[i]
    if type(v) ~= "number" or v ~= v or v == 1 / 0 or v == -1 / 0 then
      fail(fn, "argument #%d: expected a finite number, got %s", i + 1, show(v))
    end
    if not TY.FLOATS[t] then
      local why = TY.fits(t, floor(v))
      if why then fail(fn, "argument #%d: %s", i + 1, why) end
    end
  end
  local n = check_count(fn, 4, "count", count)
  local list, _ = O.check_shape(fn, "argument #4", {n})
  O.check_alloc(fn, dev, t, list, n)
  -- (integers subtracted as integers, exact, unless that wraps: maxint - minint)
  local delta = last - first
  if math.type(delta) == "integer" and (last >= first) == (delta >= 0) then delta = delta + 0.0
  else delta = (last + 0.0) - (first + 0.0) end
  if delta ~= delta or delta == 1 / 0 or delta == -1 / 0 then
    fail(fn, "argument #3: last - first overflows (%s - %s)", show(last), show(first))
  end
  local x = O.empty(fn, dev, t, list)
  if n == 0 then return x end
  local ct = dev.fp64 and "double" or "float"
  local step = n > 1 and delta / (n - 1) or 0.0
  local index = {kind = "index", type = ct, shape = list, size = 1}
  local e = op("add", {scalar(first + 0.0, ct), op("mul", {index, scalar(step, ct)}, ct, nil,
                                                        list)}, ct, nil, list)
  if n > 1 then
    e = op("where", {op("eq", {index, scalar(n - 1.0, ct)}, ct, "uchar", list),
                     scalar(last + 0.0, ct), e}, ct, nil, list)
  end
  if not TY.FLOATS[t] then e = op("floor", {e}, ct, nil, list) end
  if t ~= ct then e = op("cast", {e}, nil, t, list) end
  G.run(fn, e, x)
  return x
end

return C
