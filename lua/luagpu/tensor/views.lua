-- luagpu.tensor.views: views without copies (internal to luagpu.tensor,
-- which makes these its methods): V.slice (with step), V.select, x[i]
-- and x[i] = v (O.index, O.set_index),
-- V.permute, V.transpose, V.t, V.reshape (a view when the strides allow,
-- else a contiguous copy), V.expand, V.contiguous. A view shares its
-- storage and has its own shape, strides and offset; views of lazy tensors
-- realize them first.

local H = require "luagpu.core.check"
local O = require "luagpu.tensor.object"
local X = require "luagpu.tensor.expr"
local E = require "luagpu.tensor.elementwise"

local type, tostring, rawget, rawlen, unpack = type, tostring, rawget, rawlen, table.unpack
local concat = table.concat
local fail, typename, show, integer = H.fail, H.typename, H.show, H.integer
local view, numel, contiguous_strides, show_shape = O.view, O.numel, O.contiguous_strides,
  O.show_shape
local is_contiguous, check, check_dim = O.is_contiguous, X.check, O.check_dim
local MAX_DIMS, MAX_ELEMENTS = O.MAX_DIMS, O.MAX_ELEMENTS

local V = {}

local function copy_list(t) return {unpack(t)} end

-- A view of x with shape, strides and offset (x realized).
local function reshaped(x, shape, strides, off)
  return view(x._st, x._type, shape, strides, off)
end

-- x:slice(dim, first, last, step) for a step < 0: elements first, first +
-- step, ... down to last (first >= last; first = last - 1 gives an empty
-- dim), a view with a negative stride.
local function slice_down(fn, x, d, f, l, s, first, last)
  local size = x._shape[d]
  if f < 0 then f = f + size + 1 end
  if l < 0 then l = l + size + 1 end
  if l < 1 or f > size or l > f + 1 then
    fail(fn, "dim %d: a negative step walks down from first to last: expected 1 <= last <= " ..
         "first + 1 <= %d, got first = %s, last = %s (negative positions count from the end)",
         d, size + 1, show(first), show(last))
  end
  local shape, strides = copy_list(x._shape), copy_list(x._strides)
  local n = f >= l and (f - l) // -s + 1 or 0
  local off = x._off + (n > 0 and (f - 1) * strides[d] or 0)
  shape[d] = n
  if n > 1 then strides[d] = strides[d] * s end
  return reshaped(x, shape, strides, off)
end

function V.slice(x, dim, first, last, step, ...)
  local fn = "tensor:slice"
  check(fn, 0, x)
  O.no_more(fn, 5, ...)
  local d = check_dim(fn, "argument #1", x, dim)
  local size = x._shape[d]
  local s = integer(step == nil and 1 or step)
  local f = integer(first)
  local l = integer(last == nil and (s and s < 0 and 1 or -1) or last)
  if not f then fail(fn, "argument #2: expected an integer position, got %s", show(first)) end
  if not l then fail(fn, "argument #3: expected an integer position, got %s", show(last)) end
  if not s or s == 0 then
    fail(fn, "argument #4: step: expected a non-zero integer, got %s", show(step))
  end
  -- (a step past every size takes the first element alone; -mininteger
  -- overflows, so it is -maxinteger here)
  if s == math.mininteger then s = -math.maxinteger end
  if s < 0 then return slice_down(fn, x, d, f, l, s, first, last == nil and 1 or last) end
  if f < 0 then f = f + size + 1 end
  if l < 0 then l = l + size + 1 end
  if f < 1 or l > size or f > l + 1 then
    fail(fn, "dim %d: expected 1 <= first <= last + 1 <= %d, got first = %s, last = %s " ..
         "(negative positions count from the end)", d, size + 1 > 1 and size or 0,
         show(first), show(last == nil and -1 or last))
  end
  local shape, strides = copy_list(x._shape), copy_list(x._strides)
  local n = l >= f and (l - f) // s + 1 or 0
  local off = x._off + (n > 0 and (f - 1) * strides[d] or 0)
  -- a dim of one element (or none) keeps its stride: strides[d] * s may
  -- pass the integers for a huge step, and is never walked; with two or
  -- more elements s < size, so the product stays inside the buffer (check
  -- checked x's layout against it)
  shape[d] = n
  if n > 1 then strides[d] = strides[d] * s end
  return reshaped(x, shape, strides, off)
end

local positions = O.positions

-- x:select(dim, i) after its arguments' count was checked (x[i] has no
-- more: it comes here directly)
local function select_at(x, dim, i)
  local fn = "tensor:select"
  check(fn, 0, x)
  local d = check_dim(fn, "argument #1", x, dim)
  local size = x._shape[d]
  local p = integer(i)
  if p and p < 0 then p = p + size + 1 end
  if not p or p < 1 or p > size then
    fail(fn, "dim %d: position %s is out of range %s", d, show(i), positions(size))
  end
  local shape, strides = copy_list(x._shape), copy_list(x._strides)
  local off = x._off + (p - 1) * strides[d]
  table.remove(shape, d)
  table.remove(strides, d)
  return reshaped(x, shape, strides, off)
end

function V.select(x, dim, i, ...)
  O.no_more("tensor:select", 3, ...)
  return select_at(x, dim, i)
end

-- x[i]: the select of dim 1 at i (negative: from the end); for a 1-D x
-- the element itself (a number), as NumPy and PyTorch users expect.
local function index_view(fn, x, i)
  check(fn, 0, x)
  if #x._shape == 0 then
    fail(fn, "a 0-d tensor has no dim to index (x:item() gives its value)")
  end
  local p = integer(i)
  if not p then fail(fn, "expected an integer position, got %s", show(i)) end
  local size = x._shape[1]
  if p < 0 then p = p + size + 1 end
  if p < 1 or p > size then
    fail(fn, "position %s is out of range %s", show(i), positions(size))
  end
  return select_at(x, 1, p)
end

function O.index(x, i)
  -- x[#x + 1] is nil, as a host array's, so that ipairs(x) stops there
  local shape = x._shape
  local n = type(shape) == "table" and shape[1]
  if math.type(n) == "integer" and i == n + 1 and math.type(i) == "integer" then return nil end
  local v = index_view("tensor[i]", x, i)
  if #v._shape == 0 then return v:item() end
  return v
end

-- x[i] = v: v (a number, or a tensor broadcast to x[i]'s shape) written
-- into x's elements at i (tensor:set's rules).
function O.set_index(x, i, v)
  index_view("tensor[i] =", x, i):set(v)
end

function V.permute(x, order, ...)
  local fn = "tensor:permute"
  check(fn, 0, x)
  O.no_more(fn, 2, ...)
  local nd = #x._shape
  if type(order) ~= "table" then
    fail(fn, "argument #1: expected a table of dims, got %s", typename(order))
  end
  if rawlen(order) ~= nd then
    fail(fn, "argument #1: expected %d dims (a permutation of 1..%d), got %d", nd, nd,
         rawlen(order))
  end
  O.check_entries(fn, "argument #1", order, nd, "a permutation holds only dims")
  local seen, shape, strides = {}, {}, {}
  for i = 1, nd do
    local d = check_dim(fn, "argument #1: entry " .. i, x, rawget(order, i))
    if seen[d] then fail(fn, "argument #1: dim %d appears twice", d) end
    seen[d] = true
    shape[i], strides[i] = x._shape[d], x._strides[d]
  end
  return reshaped(x, shape, strides, x._off)
end

function V.transpose(x, d1, d2, ...)
  local fn = "tensor:transpose"
  check(fn, 0, x)
  O.no_more(fn, 3, ...)
  local a = check_dim(fn, "argument #1", x, d1)
  local b = check_dim(fn, "argument #2", x, d2)
  local shape, strides = copy_list(x._shape), copy_list(x._strides)
  shape[a], shape[b] = shape[b], shape[a]
  strides[a], strides[b] = strides[b], strides[a]
  return reshaped(x, shape, strides, x._off)
end

function V.t(x, ...)
  check("tensor:t", 0, x)
  O.no_more("tensor:t", 1, ...)
  local nd = #x._shape
  if nd > 2 then
    fail("tensor:t", "expected a tensor of at most 2 dims, got %d (use transpose or permute)", nd)
  end
  if nd < 2 then return x end
  return V.transpose(x, 1, 2)
end

-- The strides that view (shape, strides) as newshape, or nil when no view
-- can (as PyTorch's computeStride).
local function view_strides(shape, strides, newshape)
  local n = numel(shape)
  if n == 0 or #shape == 0 then return contiguous_strides(newshape) end
  local out = {}
  local view_d = #newshape
  local base = strides[#shape]
  local tensor_n, view_n = 1, 1
  for d = #shape, 1, -1 do
    tensor_n = tensor_n * shape[d]
    if d == 1 or (shape[d - 1] ~= 1 and strides[d - 1] ~= tensor_n * base) then
      while view_d >= 1 and (view_n < tensor_n or newshape[view_d] == 1) do
        out[view_d] = view_n * base
        view_n = view_n * newshape[view_d]
        view_d = view_d - 1
      end
      if view_n ~= tensor_n then return nil end
      if d > 1 then
        base = strides[d - 1]
        tensor_n, view_n = 1, 1
      end
    end
  end
  if view_d ~= 0 then return nil end
  return out
end

-- x:reshape{...}: a view when the strides allow (always for contiguous
-- tensors), else a contiguous copy. One size may be -1 (inferred).
function V.reshape(x, shape, ...)
  local fn = "tensor:reshape"
  check(fn, 0, x)
  O.no_more(fn, 2, ...)
  if type(shape) ~= "table" then
    fail(fn, "argument #1: expected a table of sizes, got %s", typename(shape))
  end
  local list, infer, known, span = {}, nil, 1, 1
  local n = rawlen(shape)
  if n > MAX_DIMS then fail(fn, "argument #1: %d dimensions are too many (at most %d)", n, MAX_DIMS) end
  O.check_entries(fn, "argument #1", shape, n, "a shape holds only sizes")
  for i = 1, n do
    local v = integer(rawget(shape, i))
    if v == -1 and not infer then
      infer = i
    elseif not v or v < 0 then
      fail(fn, "argument #1: size %d: expected an integer >= 0 (or one -1), got %s", i,
           show(rawget(shape, i)))
    else
      -- (the sizes but 0s multiply to at most 2^53, as O.check_shape has
      -- it: {2^62, 4} of an empty tensor once wrapped to 0 elements)
      if v > 0 and span > MAX_ELEMENTS // v then
        local shown = {}
        for k = 1, n do shown[k] = tostring(integer(rawget(shape, k)) or rawget(shape, k)) end
        fail(fn, "argument #1: shape %s is too large (at most 2^53 elements, counting the " ..
             "sizes but its 0s)", show_shape(shown))
      end
      if v > 0 then span = span * v end
      known = known * v
    end
    list[i] = v
  end
  if infer then
    if known == 0 or x._n % known ~= 0 then
      fail(fn, "cannot reshape %s (%d elements) into %s", show_shape(x._shape), x._n,
           show_shape(list))
    end
    list[infer] = x._n // known
  elseif known ~= x._n then
    fail(fn, "cannot reshape %s (%d elements) into %s (%d elements)", show_shape(x._shape),
         x._n, show_shape(list), known)
  end
  local st = view_strides(x._shape, x._strides, list)
  if st then return reshaped(x, list, st, x._off) end
  local c = x:contiguous()
  return reshaped(c, list, contiguous_strides(list), c._off)
end

-- x:expand{...}: size-1 dims repeated (stride 0), new leading dims; -1
-- keeps a size.
function V.expand(x, shape, ...)
  local fn = "tensor:expand"
  check(fn, 0, x)
  O.no_more(fn, 2, ...)
  if type(shape) ~= "table" then
    fail(fn, "argument #1: expected a table of sizes, got %s", typename(shape))
  end
  local n, nd = rawlen(shape), #x._shape
  if n < nd or n > MAX_DIMS then
    fail(fn, "argument #1: expected %d to %d sizes, got %d", nd, MAX_DIMS, n)
  end
  O.check_entries(fn, "argument #1", shape, n, "a shape holds only sizes")
  local out, st, want = {}, {}, {}
  for i = 1, n do want[i] = tostring(rawget(shape, i)) end
  for i = 1, n do
    local v = integer(rawget(shape, i))
    local j = i - (n - nd)
    if not v or v < -1 or (v == -1 and j < 1) then
      fail(fn, "argument #1: size %d: expected an integer >= 0, got %s", i, show(rawget(shape, i)))
    end
    if j < 1 then
      out[i], st[i] = v, 0
    else
      local have = x._shape[j]
      if v == -1 then v = have end
      if have == v then
        out[i], st[i] = v, x._strides[j]
      elseif have == 1 then
        out[i], st[i] = v, 0
      else
        fail(fn, "cannot expand %s to %s (dim %d: %d vs %d)", show_shape(x._shape),
             "{" .. concat(want, ", ") .. "}", i, have, v)
      end
    end
  end
  if not O.count_of(out) then
    fail(fn, "shape %s is too large (at most 2^53 elements)", show_shape(out))
  end
  return reshaped(x, out, st, x._off)
end

function V.contiguous(x, ...)
  local fn = "tensor:contiguous"
  check(fn, 0, x)
  O.no_more(fn, 1, ...)
  return E.contiguous(fn, x)
end

return V
