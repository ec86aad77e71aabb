-- luagpu.tensor.interop: tensors with the rest of luagpu (internal to
-- luagpu.tensor, which puts these in place).
--
--   I.metamethods.__tobuffer   a tensor as a Buffer (kernel arguments,
--                              reduce, matmul, algo)
--   I.methods                  x:mm and x:bmm (luagpu.matmul), x:to(dev), x:save (.npy),
--                              x:cumsum, x:cumprod, x:sort, x:argsort (luagpu.algo, when
--                              it is there)
--   I.load(path, dev [, t])    gpu.load's tensor form

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local TY = require "luagpu.core.types"
local O = require "luagpu.tensor.object"
local X = require "luagpu.tensor.expr"
local clone = require("luagpu.tensor.elementwise").clone
local new_tensor = require("luagpu.tensor.create").new_tensor

local type, ipairs, pcall, tostring, require = type, ipairs, pcall, tostring, require
local fail, typename, show = H.fail, H.typename, H.show

local show_shape, is_contiguous, elements_of = O.show_shape, O.is_contiguous, O.elements_of
local realize, check = X.realize, X.check

local I = {methods = {}, metamethods = {}}
local methods = I.methods

-- The Buffer of contiguous x: its storage's root, or a view of it when x
-- covers only part. The script may write it: x's storage is exposed.
local function buffer_of(fn, x, where)
  if x._expr then realize(x) end
  O.check_bounds(fn, x)
  if not is_contiguous(x) then
    fail(fn, "%sthe tensor is not contiguous: call :contiguous()",
         where and where .. ": " or "")
  end
  X.expose(x._st)
  if x._n == 0 then return x._dev:buffer(x._type, 0) end
  return elements_of(x)
end

-- (fn and where, when given, name the call and argument x was given to)
I.metamethods.__tobuffer = function(x, fn, where) return buffer_of(fn or "tensor", x, where) end

-- The Buffer of the elements of contiguous, non-empty x for luagpu's own
-- helpers (matmul, algo), which keep no reference the script can reach:
-- x's storage is not exposed, its block stays in the pool.
local function own_buffer(x)
  if x._expr then realize(x) end
  return elements_of(x)
end

---------------------------------------------------------------- mm

local matmul

-- The operand of x:mm for a 2-D or 3-D tensor x: a Buffer of its storage
-- and whether it holds x's matrices transposed. A view whose last two
-- dims have the strides of a contiguous layout's transpose (b:t(), or
-- x:transpose(2, 3) of a contiguous 3-D one) is passed as its base storage
-- with trans_a / trans_b: no copy. Any other layout is copied once: the
-- copy comes third, for the caller to hold until the product is enqueued
-- (the pool takes a dead tensor's block back at its next miss, and the
-- Buffer alone does not keep it: x:mm(y) of two such views multiplied y's
-- copy by itself).
local function mm_operand(x)
  if x._expr or is_contiguous(x) then return own_buffer(x), false end
  local shape, st, nd = x._shape, x._strides, #x._shape
  local r, c = shape[nd - 1], shape[nd]
  if (st[nd - 1] == 1 or r == 1) and (st[nd] == r or c == 1)
     and (nd == 2 or st[1] == r * c or shape[1] == 1) then
    return x._st.buf:sub(x._off + 1, x._off + x._n), true
  end
  local copy = x:contiguous()
  return own_buffer(copy), false, copy
end

-- The options of x:mm's products: one table per set of values, made by
-- matmul.internal_options (its memo key made once) and kept here, where
-- no script reaches it; at most MM_OPTIONS_KEPT (then the cache starts
-- again: a script of ever new shapes keeps no more).
local MM_OPTIONS_KEPT = 256
local mm_options_by, mm_options_count = {}, 0
local function level(t, k)
  local c = t[k]
  if c == nil then c = {}; t[k] = c end
  return c
end
local function mm_options(m, n, k, ta, tb, nb)
  local t = level(level(level(level(level(mm_options_by, m), n), k), ta), tb)
  local b = nb or false
  local o = t[b]
  if o then return o end
  o = matmul.internal_options(m, n, k, ta, tb, nb)
  if mm_options_count >= MM_OPTIONS_KEPT then
    mm_options_by, mm_options_count = {}, 0
  else
    t[b], mm_options_count = o, mm_options_count + 1
  end
  return o
end

-- x:mm(y): the matrix product of 2-D tensors of float (or double), or a
-- batch of them when either is 3-D ({b, m, k} x {b, k, n}, or one of them
-- 2-D or with b = 1: shared by the batch), through luagpu.matmul, in one
-- launch. Transposed views are read in place (mm_operand).
local function mm(fn, x, y, batched)
  check(fn, 0, x)
  check(fn, 1, y)
  O.check_same_device(fn, 1, y, x._dev)
  local xs, ys = x._shape, y._shape
  local nx, ny = #xs, #ys
  if batched and (nx ~= 3 or ny ~= 3) then
    fail(fn, "expected 3-D tensors, got shapes %s and %s", show_shape(xs), show_shape(ys))
  elseif nx < 2 or nx > 3 or ny < 2 or ny > 3 then
    fail(fn, "expected 2-D or 3-D tensors, got shapes %s and %s", show_shape(xs),
         show_shape(ys))
  end
  if (x._type ~= "float" and x._type ~= "double") or y._type ~= x._type then
    fail(fn, "expected two tensors of float (or two of double), got %s and %s", x._type,
         y._type)
  end
  local m, k, k2, n = xs[nx - 1], xs[nx], ys[ny - 1], ys[ny]
  if k ~= k2 then
    fail(fn, "shapes %s and %s do not multiply (dim %d of the first: %d vs dim %d of the " ..
         "second: %d)", show_shape(xs), show_shape(ys), nx, k, ny - 1, k2)
  end
  local bx, by = nx == 3 and xs[1] or nil, ny == 3 and ys[1] or nil
  if bx and by and bx ~= by and bx ~= 1 and by ~= 1 then
    fail(fn, "shapes %s and %s do not multiply (batches of %d and %d)", show_shape(xs),
         show_shape(ys), bx, by)
  end
  -- (the batch count: the one not 1, 0 too: a batch of 0 times one is 0)
  local nb = (bx or by) and ((bx == nil or bx == 1) and (by or 1) or bx)
  O.check_device_type(fn, x._dev, x._type)
  local out = O.empty(fn, x._dev, x._type, nb and {nb, m, n} or {m, n})
  if out._n == 0 then return out end
  if k == 0 then return out:set(0) end
  local a, ta, x_copy = mm_operand(x)
  local b, tb, y_copy = mm_operand(y)
  matmul = matmul or require "luagpu.matmul"
  matmul(a, b, own_buffer(out), mm_options(m, n, k, ta, tb, nb))
  if x_copy then O.drop(x_copy) end   -- (held until here; their blocks go back now)
  if y_copy then O.drop(y_copy) end
  return out
end

-- (a second argument raises: torch users pass options that do nothing
-- here, a precision among them; luagpu.matmul takes those)
local function no_options(fn, opts)
  if opts ~= nil then
    fail(fn, "argument #2: takes no options, got %s (for a precision or other options, " ..
         "call luagpu.matmul on the tensors)", H.typename(opts))
  end
end

function methods.mm(x, y, opts, ...)
  no_options("tensor:mm", opts)
  O.no_more("tensor:mm", 3, ...)
  return mm("tensor:mm", x, y, false)
end

-- x:bmm(y): as torch.bmm, both 3-D (a batch of 1 is shared).
function methods.bmm(x, y, opts, ...)
  no_options("tensor:bmm", opts)
  O.no_more("tensor:bmm", 3, ...)
  return mm("tensor:bmm", x, y, true)
end

---------------------------------------------------------------- devices

-- x:to(dev): a copy of x on device dev (x itself when it is on dev, as
-- torch's x.to does). Devices of one platform share a context: one copy
-- through the driver, after what x's device had enqueued (NVIDIA's OpenCL
-- goes through the host; docs/SCALING.md has the figures); another
-- platform's device gets x through a host array.
function methods.to(x, dev, ...)
  local fn = "tensor:to"
  check(fn, 0, x)
  O.no_more(fn, 2, ...)
  local cls, released = H.class_of(dev)
  if cls ~= "Device" or released then
    fail(fn, "argument #1: expected a luagpu.Device, got %s",
         released and "a released device" or typename(dev))
  end
  local from = x._dev
  if dev == from then return x end
  O.check_device_type(fn, dev, x._type)
  local src = x
  if src._expr or not is_contiguous(src) then src = clone(src) end
  O.check_bounds(fn, src)
  local shape = {}
  for i, d in ipairs(x._shape) do shape[i] = d end
  local out = O.empty(fn, dev, x._type, shape)
  if out._n == 0 then return out end
  if dev.platform == from.platform then
    -- (on dev's queue after what x's had enqueued; later commands on x's
    -- queue, a write of x among them, wait for the copy: its barrier)
    local fq = from:default_queue()
    local q, ready = dev:default_queue(), fq:marker()
    fq:flush()
    local copied = elements_of(src):copy_to(elements_of(out), {queue = q, wait = {ready}})
    q:flush()
    fq:barrier{wait = {copied}}
  else
    elements_of(out):write(src:get())
  end
  return out
end

---------------------------------------------------------------- .npy

function methods.save(x, path, ...)
  check("tensor:save", 0, x)
  O.no_more("tensor:save", 2, ...)
  if type(path) ~= "string" then
    fail("tensor:save", "argument #1: expected a path, got %s", typename(path))
  end
  local a = x:get()
  local ok, e = pcall(a.save, a, path, x._shape)   -- a 0-d tensor: shape ()
  if not ok then fail("tensor:save", "%s", tostring(e):gsub("^luagpu: array:save: ", "")) end
  return x
end

-- gpu.load(path, dev [, type]): the .npy file as a tensor on dev.
function I.load(path, dev, t, ...)
  local fn = "gpu.load"
  O.no_more(fn, 4, ...)
  if t ~= nil and type(t) == "string" and not TY.SIZES[t] and TY.SIZES[t:match("^%a+")] then
    fail(fn, "argument #3: tensors hold scalar elements (char .. double), got %s", t)
  end
  local ok, a, fshape = pcall(gpu.load, path, t)
  if not ok then fail(fn, "%s", tostring(a):gsub("^luagpu: gpu.load: ", "")) end
  if not TY.SIZES[a.type] then
    fail(fn, "%s: expected scalar elements, got %s", path, a.type)
  end
  -- a 0-d file gives a 0-d tensor (its host array has shape {1})
  return new_tensor(dev, a.type, #fshape == 0 and {} or a.shape, a)
end

---------------------------------------------------------------- algo

local algo_module     -- luagpu.algo once loaded
local algo_settings   -- luagpu.algo.base's reader of algo.classes

-- luagpu.algo, which must have function name, for tensor op fn; with dev,
-- the algo.classes settings of dev's class are checked here, so that a bad
-- one names fn, the script's call ("luagpu: tensor:sort:
-- algo.classes.gpu.sort_local: expected ..."), not the algo helper inside
-- (algo.sort), for an op that does more than call the helper. An op that
-- only calls a helper's prepared call (prepared, below) passes no dev: that
-- call checks them, under fn.
local function algo(fn, name, dev)
  local A = algo_module
  if not (A and type(A[name]) == "function") then
    local ok
    ok, A = pcall(require, "luagpu.algo")
    if not ok or type(A) ~= "table" or type(A[name]) ~= "function" then
      fail(fn, "not available: it needs luagpu.algo's %s, which this build does not have", name)
    end
    algo_module = A
    local base = require "luagpu.algo.base"
    algo_settings = base.device_class
  end
  if dev then algo_settings(fn, dev) end
  return A
end
I.algo = algo

-- The prepared call for tensors name (tensor_scan, tensor_sort, ...) of
-- luagpu.algo's module mod, for tensor op fn (luagpu.algo available).
local function prepared(fn, helper, mod, name)
  algo(fn, helper)
  return require(mod)[name]
end

local dim_last, check_dim_arg = O.dim_last, O.check_one_dim

-- x:cumsum([dim]) / x:cumprod([dim]): inclusive prefix sums (products)
-- along dim (default: the last), in x's type (integers wrap).
-- (luagpu.algo.scan's prepared call for tensors, which checks no options:
-- the tensors are checked here; dev's algo.classes in it, under fn)
local tensor_scan
local function cumulative(fn, op, x, dim, ...)
  check(fn, 0, x)
  O.no_more(fn, 2, ...)
  local d = check_dim_arg(fn, x, dim)
  tensor_scan = tensor_scan or prepared(fn, "scan", "luagpu.algo.scan", "tensor_scan")
  if x._n == 0 then return O.empty(fn, x._dev, x._type, x._shape) end
  local src, back = dim_last(fn, x, d)
  local out = O.empty(fn, x._dev, x._type, src._shape)
  tensor_scan(fn, op, src._type, src._st.buf, src._off, src._n, src._shape[#src._shape],
              out._st.buf, 0)
  return back and out:permute(back) or out
end

function methods.cumsum(x, dim, ...) return cumulative("tensor:cumsum", "sum", x, dim, ...) end
function methods.cumprod(x, dim, ...) return cumulative("tensor:cumprod", "prod", x, dim, ...) end

local SORT_OPTIONS = H.option_names({"descending"}, "option ")

local function sort_args(fn, x, dim, opts)
  -- (a list is dims, {1, 2}: refused as such, not as unknown options)
  if type(dim) == "table" and opts == nil and rawget(dim, 1) == nil then dim, opts = nil, dim end
  local d = check_dim_arg(fn, x, dim)
  local o = H.check_options(fn, 2, opts, SORT_OPTIONS)
  if o.descending ~= nil and type(o.descending) ~= "boolean" then
    fail(fn, "argument #2: option descending: expected a boolean, got %s", show(o.descending))
  end
  return d, o.descending or false
end

-- x:sort([dim] [, {descending = true}]): the values sorted along dim
-- (default: the last), a new tensor.
-- (luagpu.algo.sort's prepared call for tensors, as cumsum's: dev's
-- algo.classes checked in it, under fn)
local tensor_sort
function methods.sort(x, dim, opts, ...)
  local fn = "tensor:sort"
  check(fn, 0, x)
  O.no_more(fn, 3, ...)
  local d, desc = sort_args(fn, x, dim, opts)
  tensor_sort = tensor_sort or prepared(fn, "sort", "luagpu.algo.sort", "tensor_sort")
  if x._n == 0 then return O.empty(fn, x._dev, x._type, x._shape) end
  local src, back = dim_last(fn, x, d)         -- (a copy only where dim d is not last)
  local out = O.empty(fn, x._dev, x._type, src._shape)
  tensor_sort(fn, x._dev, src._type, src._st.buf, src._off, src._n, out._shape[#out._shape],
              desc, out._st.buf, 0)
  if src ~= x then O.drop(src) end
  return back and out:permute(back) or out
end

-- x:argsort([dim] [, {descending = true}]): the 1-based positions along
-- dim that sort x (stable), a long tensor (luagpu.algo.sort's prepared
-- call, as x:sort's).
local tensor_argsort
function methods.argsort(x, dim, opts, ...)
  local fn = "tensor:argsort"
  check(fn, 0, x)
  O.no_more(fn, 3, ...)
  local d, desc = sort_args(fn, x, dim, opts)
  tensor_argsort = tensor_argsort or prepared(fn, "argsort", "luagpu.algo.sort",
                                               "tensor_argsort")
  if x._n == 0 then return O.empty(fn, x._dev, "long", x._shape) end
  local src, back = dim_last(fn, x, d)
  local L = src._shape[#src._shape]
  local pos = O.empty(fn, x._dev, "long", src._shape)    -- a pool block, 1-based positions
  tensor_argsort(fn, x._dev, src._type, src._st.buf, src._off, src._n, L, desc, pos._st.buf, 0)
  if src ~= x then O.drop(src) end
  return back and pos:permute(back) or pos
end

return I
