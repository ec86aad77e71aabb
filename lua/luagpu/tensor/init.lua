-- luagpu.tensor: device n-d arrays. This file puts the package together:
-- the methods, fields, metamethods and device methods of the Tensor type
-- (luagpu.tensor.object) from the modules that make them, plus reading
-- and printing. The parts:
--   object       the Tensor type, constructors, argument and bounds checks
--   create       dev:tensor, zeros, ones, full, eye, linspace, x:zeros_like...
--   ops          the elementwise op table (each op once)
--   expr         lazy tensors and their expressions
--   elementwise  operators, math methods, where, astype, map, set, clone,
--                arange
--   source, codegen   an expression's kernel and its cached launch plan
--   random       dev:rand, randn, randint, uniform, normal, randperm
--   views, reduce, rows (softmax, log_softmax, logsumexp),
--   interop (mm, .npy, algo, __tobuffer, to),
--   join (squeeze, unsqueeze, flatten, split, chunk, cat, stack, ...),
--   index (gather, scatter, take, put, masks, nonzero, searchsorted),
--   stats (var, std, norm, median, topk, unique, bincount, dot, outer),
--   einsum, shard (sharded tensors over several devices)
-- and the memory pool, luagpu.core.pool.
--
-- Exports: M.device_methods (dev:tensor, dev:arange, dev:rand, dev:randn,
-- dev:memory, dev:zeros and the other constructors of create and random:
-- registered on Device with gpu.extend when this module loads;
-- luagpu.autoload declares them, so that dev.tensor loads this module on
-- first lookup), M.where (gpu.where), M.cat, M.stack, M.outer,
-- M.searchsorted, M.einsum, M.shard, M.replicate (gpu.cat, gpu.stack,
-- gpu.outer, gpu.searchsorted, gpu.einsum, gpu.shard, gpu.replicate),
-- M.load (gpu.load(path, dev)),
-- M.is_tensor, M.MAX_DIMS, M.lazy (false: every operation evaluated at
-- once), M.reduce_programs().

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local memory = require "luagpu.core.pool"
local O = require "luagpu.tensor.object"
local X = require "luagpu.tensor.expr"
local E = require "luagpu.tensor.elementwise"
local V = require "luagpu.tensor.views"
local R = require "luagpu.tensor.reduce"
local RW = require "luagpu.tensor.rows"
local RND = require "luagpu.tensor.random"
local I = require "luagpu.tensor.interop"
local J = require "luagpu.tensor.join"
local IX = require "luagpu.tensor.index"
local ST = require "luagpu.tensor.stats"
local EIN = require "luagpu.tensor.einsum"
local SHD = require "luagpu.tensor.shard"
local CR = require "luagpu.tensor.create"
local new_tensor = CR.new_tensor

local ipairs, pairs, tostring, pcall, rawset = ipairs, pairs, tostring, pcall, rawset
local setmetatable = setmetatable
local format, concat, unpack = string.format, table.concat, table.unpack
local floor, huge, max, abs = math.floor, math.huge, math.max, math.abs
local fail, show_shape, contiguous_strides = H.fail, O.show_shape, O.contiguous_strides
local realize, check = X.realize, X.check

local Tensor, FIELDS, MT = O.methods, O.fields, O.MT

-- The module table; M.lazy is X.settings.lazy (read and written through
-- the metatable: M holds no field lazy).
local settings = X.settings
local M = setmetatable({}, {
  __index = function(_, k) if k == "lazy" then return settings.lazy end end,
  __newindex = function(t, k, v)
    if k == "lazy" then settings.lazy = v else rawset(t, k, v) end
  end,
})

------------------------------------------------------------------ assembly

-- Every method, metamethod and device method, each from the one module
-- that makes it.
for _, part in ipairs{E.methods, V, R.methods, RW.methods, I.methods, J.methods, IX.methods,
                      ST.methods, CR.methods, RND.methods} do
  for name, f in pairs(part) do Tensor[name] = f end
end
for _, part in ipairs{E.metamethods, I.metamethods} do
  for name, f in pairs(part) do MT[name] = f end
end
-- x:is_contiguous(): O.is_contiguous, its self and arguments checked (x.is_contiguous()
-- indexed nil inside object.lua)
function Tensor.is_contiguous(x, ...)
  if not O.is_tensor(x) then X.not_self("tensor:is_contiguous", x) end
  O.no_more("tensor:is_contiguous", 1, ...)
  return O.is_contiguous(x)
end
-- help(x) in the REPL: the fields and a line per method (luagpu.tensor.help)
MT.__help = function() return require("luagpu.tensor.help").class() end
Tensor.release = X.release
MT.__close = X.close

M.device_methods = {arange = E.arange, rand = RND.rand, randn = RND.randn}
local DM = M.device_methods
for _, part in ipairs{CR.device_methods, RND.device_methods} do
  for name, f in pairs(part) do DM[name] = f end
end

-- dev:tensor(type, shape [, init]) (see docs/API.md, "Tensors").
function DM.tensor(dev, t, shape, init, ...)
  H.check_object("device:tensor", "self", dev, "Device")
  O.no_more("device:tensor", 4, ...)
  return new_tensor(dev, t, shape, init)
end

function DM.memory(dev, ...)
  H.check_object("device:memory", "self", dev, "Device")
  O.no_more("device:memory", 1, ...)
  return memory.memory(dev)
end

-- dev:empty_cache(): the pool's free blocks of dev released now (PyTorch's
-- torch.cuda.empty_cache, CuPy's free_all_blocks); returns their bytes.
function DM.empty_cache(dev, ...)
  H.check_object("device:empty_cache", "self", dev, "Device")
  O.no_more("device:empty_cache", 1, ...)
  return memory.trim(dev)
end

gpu.extend("Device", DM)

M.where, M.load, M.cat, M.stack = E.where, I.load, J.cat, J.stack
M.outer, M.searchsorted, M.einsum = ST.outer, IX.searchsorted, EIN.einsum
M.shard, M.replicate, M.is_sharded = SHD.shard, SHD.replicate, SHD.is_sharded
function M.is_tensor(v) return O.is_tensor(v) end
M.MAX_DIMS = O.MAX_DIMS
function M.reduce_programs() return R.programs_built end

------------------------------------------------------------------ fields

FIELDS.shape = function(t) return {unpack(t._shape)} end
FIELDS.strides = function(t)
  -- (a lazy tensor, or one released while lazy, has no table of its own:
  -- it is row-major)
  local st = t._strides
  if t._expr or not st then return contiguous_strides(t._shape) end
  return {unpack(st)}
end
FIELDS.type = function(t) return t._type end
FIELDS.ndim = function(t) return #t._shape end
FIELDS.device = function(t) return t._dev end
-- The storage's root Buffer: handing it out makes later operations on the
-- tensor eager (the script may write it behind luagpu's back).
FIELDS.buffer = function(t)
  if t._expr then realize(t) end
  local s = t._st
  X.expose(s)
  if s.n and s.n > 0 and s.n < #s.buf then
    s.view = s.view or s.buf:sub(1, s.n)
    return s.view
  end
  return s.buf
end
FIELDS.offset = function(t)
  if t._expr then realize(t) end
  return t._off
end

------------------------------------------------------------------ reading

-- The values of contiguous x, a host array of x's shape (1 value for 0-d).
function Tensor.get(x, ...)
  check("tensor:get", 0, x)
  O.no_more("tensor:get", 1, ...)
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
function Tensor.totable(x, ...)
  check("tensor:totable", 0, x)
  O.no_more("tensor:totable", 1, ...)
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
function Tensor.item(x, ...)
  check("tensor:item", 0, x)
  O.no_more("tensor:item", 1, ...)
  if x._n ~= 1 then fail("tensor:item", "expected a tensor of 1 element, got %d", x._n) end
  return x:get()[1]
end

------------------------------------------------------------------ printing

local EDGE, SUMMARY = 3, 1000

-- Digits after the point that show v in scientific notation as %.6g
-- (float) or %.10g (double) would.
local function sci_digits(t, v)
  local s = format(t == "float" and "%.6e" or "%.10e", v)
  local mant = s:match("^-?%d%.(%d*)e")
  return #(mant:gsub("0+$", ""))
end

-- How the floats of vals show, as NumPy's print decides: in scientific
-- notation (the digits after the point that the most precise one needs)
-- when the largest finite magnitude reaches 1e8, the smallest nonzero one
-- is below 1e-4, or they are more than 1e3 apart; else nil (fixed).
local function float_notation(t, vals)
  local big, small = 0, huge
  for _, v in ipairs(vals) do
    local a = abs(v)
    if a == a and a ~= huge and a ~= 0 then
      if a > big then big = a end
      if a < small then small = a end
    end
  end
  if big == 0 or (big < 1e8 and small >= 1e-4 and big / small <= 1e3) then return nil end
  local digits = 0
  for _, v in ipairs(vals) do
    if v == v and abs(v) ~= huge then digits = max(digits, sci_digits(t, v)) end
  end
  return digits
end

-- One value of type t as the print shows it; sci: the digits of the
-- scientific notation (nil: fixed).
local function format_value(t, v, sci)
  if t == "float" or t == "double" then
    if v ~= v then return "nan" end
    if v == huge then return "inf" elseif v == -huge then return "-inf" end
    if sci then return format("%#." .. sci .. "e", v) end
    if v == 0 and 1 / v < 0 then return "-0." end
    if v == floor(v) and v > -1e15 and v < 1e15 then return format("%d.", v) end
    local s = format(t == "float" and "%.6g" or "%.10g", v)
    -- a value that rounds to an integer shows as one ("1." for 0.99999988)
    return s:find("[.e]") and s or s .. "."
  end
  if t == "ulong" and v < 0 then return format("%u", v) end
  return tostring(v)
end

-- What a summary of x shows (x of more than SUMMARY elements): each dim of
-- more than 2 * EDGE cut to its first and last EDGE, on the device (views
-- joined), so that only those come to the host; and the shape that has.
local function shown_part(x)
  local r, rshape = x, {}
  for d, n in ipairs(x._shape) do
    if n > 2 * EDGE then
      r = J.cat({r:slice(d, 1, EDGE), r:slice(d, n - EDGE + 1, n)}, d)
      rshape[d] = 2 * EDGE
    else
      rshape[d] = n
    end
  end
  return r, rshape
end

MT.__tostring = function(x)
  local head = format("luagpu.Tensor<%s>%s", x._type, show_shape(x._shape))
  if rawget(x, "_st") == O.RELEASED then return head .. " (released)" end
  local shape, t = x._shape, x._type
  -- (an empty tensor of many rows, {2^40, 0}, is elided too: its rows print)
  local elide = x._n > SUMMARY
  if not elide then
    local m = 1
    for _, n in ipairs(shape) do
      m = m * max(n, 1)
      if m > SUMMARY then elide = true; break end
    end
  end
  local ok, a, held = pcall(function()
    if not elide then return Tensor.get(x), shape end
    local r, rshape = shown_part(x)
    return Tensor.get(r), rshape
  end)
  if not ok then return head .. ": " .. tostring(a) end
  local vals = a:totable()
  local strs, width = {}, 0
  local sci = (t == "float" or t == "double") and float_notation(t, vals) or nil
  for i, v in ipairs(vals) do
    local s = format_value(t, v, sci)
    strs[i] = s
    if #s > width then width = #s end
  end
  if #shape == 0 then return head .. ": " .. (strs[1] or "") end
  local inner = contiguous_strides(held)     -- of the values that came to the host
  local function block(level, base, indent)
    local parts = {}
    local n = shape[level]
    local function item(i)
      -- element i of a cut dim is the held one EDGE from its end
      local h = (elide and n > 2 * EDGE and i > EDGE) and i - (n - 2 * EDGE) or i
      local at = base + (h - 1) * inner[level]
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
function Tensor.eval(x, ...)
  check("tensor:eval", 0, x)
  O.no_more("tensor:eval", 1, ...)
  return x
end

return M
