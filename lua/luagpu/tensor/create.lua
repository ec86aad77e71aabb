-- luagpu.tensor.create: dev:tensor's work (internal to luagpu.tensor).
--
--   C.new_tensor(dev, type, shape [, init])   a new tensor of type and shape
--       on dev: zeros, a number in every element, the values of a (nested)
--       table or a host array, or a view over a Buffer (docs/API.md,
--       "Tensors"); checks every argument as device:tensor's

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local memory = require "luagpu.core.pool"
local TY = require "luagpu.core.types"
local O = require "luagpu.tensor.object"

local type, tostring, rawget, rawlen, pcall = type, tostring, rawget, rawlen, pcall
local fail, typename = H.fail, H.typename
local show_shape, check_type = O.show_shape, O.check_type

local C = {}

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

-- (see the header)
function C.new_tensor(dev, t, shape, init)
  local fn = "device:tensor"
  check_type(fn, "argument #1", t)
  O.check_device_type(fn, dev, t)
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
    if #init ~= n then
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

return C
