-- luagpu.tensor_interop: tensors with the rest of luagpu (internal to
-- luagpu.tensor): __tobuffer (kernel arguments, reduce, matmul, algo),
-- x:mm (luagpu.matmul), x:save / gpu.load(path, dev) (.npy), and x:cumsum,
-- x:sort, x:argsort (luagpu.algo, when it is there).

local gpu = require "luagpu"
local H = require "luagpu.helper"

local type, ipairs, pcall, tostring, require = type, ipairs, pcall, tostring, require
local fail, typename, show = H.fail, H.typename, H.show

local I = {}

function I.install(C)
  local M, Tensor, MT = C.M, C.Tensor, C.MT
  local show_shape = C.show_shape

  -- The Buffer of contiguous x: its storage's root, or a view of it when x
  -- covers only part. The script may write it: x's storage is exposed.
  local function buffer_of(fn, x)
    if x._expr then C.realize(x) end
    if not Tensor.is_contiguous(x) then
      fail(fn, "the tensor is not contiguous: call :contiguous()")
    end
    C.expose(x._st)
    local s = x._st
    local buf, n = s.buf, x._n
    if n == 0 then return x._dev:buffer(x._type, 0) end
    if x._off == 0 and s.count == n then return buf end
    if x._off == 0 and s.n == n then          -- the storage's own elements: one view
      s.view = s.view or buf:sub(1, n)
      return s.view
    end
    return buf:sub(x._off + 1, x._off + n)
  end
  C.buffer_of = buffer_of

  MT.__tobuffer = function(x) return buffer_of("tensor", x) end

  ---------------------------------------------------------------- mm

  local matmul

  -- x:mm(y): the matrix product of 2-D tensors of float (or double), through
  -- luagpu.matmul. Operands that are not contiguous (a transposed view)
  -- are copied once with :contiguous() first: matmul takes row-major
  -- operands only.
  function Tensor.mm(x, y)
    local fn = "tensor:mm"
    C.check(fn, 0, x)
    C.check(fn, 1, y)
    C.check_same_device(fn, 1, y, x._dev)
    if #x._shape ~= 2 or #y._shape ~= 2 then
      fail(fn, "expected 2-D tensors, got shapes %s and %s", show_shape(x._shape),
           show_shape(y._shape))
    end
    if (x._type ~= "float" and x._type ~= "double") or y._type ~= x._type then
      fail(fn, "expected two tensors of float (or two of double), got %s and %s", x._type,
           y._type)
    end
    local m, k, k2, n = x._shape[1], x._shape[2], y._shape[1], y._shape[2]
    if k ~= k2 then
      fail(fn, "shapes %s and %s do not multiply (dim 2 of the first: %d vs dim 1 of the " ..
           "second: %d)", show_shape(x._shape), show_shape(y._shape), k, k2)
    end
    C.check_device_type(fn, x._dev, x._type)
    local out = C.empty(fn, x._dev, x._type, {m, n})
    if m * n == 0 then return out end
    if k == 0 then return out:set(0) end
    x, y = x:contiguous(), y:contiguous()
    matmul = matmul or require "luagpu.matmul"
    local a = x._st.buf:sub(x._off + 1, x._off + m * k)
    local b = y._st.buf:sub(y._off + 1, y._off + k * n)
    local c = out._st.buf:sub(1, m * n)
    matmul(a, b, c, {m = m, n = n, k = k})
    return out
  end

  ---------------------------------------------------------------- .npy

  function Tensor.save(x, path)
    C.check("tensor:save", 0, x)
    if type(path) ~= "string" then
      fail("tensor:save", "argument #1: expected a path, got %s", typename(path))
    end
    local a = x:get()
    local ok, e = pcall(a.save, a, path)
    if not ok then fail("tensor:save", "%s", tostring(e):gsub("^luagpu: array:save: ", "")) end
    return x
  end

  -- gpu.load(path, dev [, type]): the .npy file as a tensor on dev.
  function M.load(path, dev, t)
    local fn = "gpu.load"
    local ok, a = pcall(gpu.load, path, t)
    if not ok then fail(fn, "%s", tostring(a):gsub("^luagpu: gpu.load: ", "")) end
    if not H.SCALAR_SIZES[a.type] then
      fail(fn, "%s: expected scalar elements, got %s", path, a.type)
    end
    local shape = a.shape
    if #a == 1 and #shape == 1 and shape[1] == 1 then shape = {1} end
    return C.new_tensor(dev, a.type, shape, a)
  end

  ---------------------------------------------------------------- algo

  local function algo(fn, name)
    local ok, A = pcall(require, "luagpu.algo")
    if not ok or type(A) ~= "table" or type(A[name]) ~= "function" then
      fail(fn, "not available: it needs luagpu.algo's %s, which this build does not have", name)
    end
    return A
  end

  -- x with dim d moved last, contiguous (a copy when d is not last), and
  -- the permutation that moves it back.
  local function dim_last(x, d)
    local nd = #x._shape
    if d == nd then return x:contiguous(), nil end
    local order, back = {}, {}
    for i = 1, nd do if i ~= d then order[#order + 1] = i end end
    order[nd] = d
    for i, o in ipairs(order) do back[o] = i end
    return x:permute(order):contiguous(), back
  end

  local function check_dim_arg(fn, x, dim)
    if #x._shape == 0 then fail(fn, "expected a tensor of at least 1 dim, got a 0-d one") end
    if dim == nil then return #x._shape end
    return C.check_dim(fn, "argument #1", x, dim)
  end

  -- x:cumsum([dim]): inclusive prefix sums along dim (default: the last).
  function Tensor.cumsum(x, dim)
    local fn = "tensor:cumsum"
    C.check(fn, 0, x)
    local d = check_dim_arg(fn, x, dim)
    local A = algo(fn, "scan")
    local src, back = dim_last(x, d)
    local out = C.empty(fn, x._dev, x._type, src._shape)
    if x._n == 0 then return out end
    local L = src._shape[#src._shape]
    A.scan(buffer_of(fn, src), {row_length = L, out = buffer_of(fn, out)})
    return back and out:permute(back) or out
  end

  local SORT_OPTIONS = H.option_names({"descending"}, "option ")

  local function sort_args(fn, x, dim, opts)
    if type(dim) == "table" and opts == nil then dim, opts = nil, dim end
    local d = check_dim_arg(fn, x, dim)
    local o = H.check_options(fn, 2, opts, SORT_OPTIONS)
    if o.descending ~= nil and type(o.descending) ~= "boolean" then
      fail(fn, "argument #2: option descending: expected a boolean, got %s", show(o.descending))
    end
    return d, o.descending or false
  end

  -- x:sort([dim] [, {descending = true}]): the values sorted along dim
  -- (default: the last), a new tensor.
  function Tensor.sort(x, dim, opts)
    local fn = "tensor:sort"
    C.check(fn, 0, x)
    local d, desc = sort_args(fn, x, dim, opts)
    local A = algo(fn, "sort")
    local src, back = dim_last(x, d)
    local out = src == x and Tensor.clone(x) or src
    if x._n == 0 then return out end
    local L = out._shape[#out._shape]
    A.sort(buffer_of(fn, out), {row_length = L, descending = desc})
    return back and out:permute(back) or out
  end

  -- x:argsort([dim] [, {descending = true}]): the 1-based positions along
  -- dim that sort x (stable), a long tensor.
  function Tensor.argsort(x, dim, opts)
    local fn = "tensor:argsort"
    C.check(fn, 0, x)
    local d, desc = sort_args(fn, x, dim, opts)
    local A = algo(fn, "argsort")
    local src, back = dim_last(x, d)
    if x._n == 0 then return C.empty(fn, x._dev, "long", x._shape) end
    local L = src._shape[#src._shape]
    local idx = A.argsort(buffer_of(fn, src), {row_length = L, descending = desc, base = 1})
    local t = C.new_tensor(x._dev, idx.type, src._shape, idx)
    local pos = t:astype("long")          -- algo gives 1-based positions
    return back and pos:permute(back) or pos
  end
end

return I
