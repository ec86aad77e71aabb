-- luagpu.tensor.join: joining and splitting tensors, and the reshapes that
-- add or drop dims of size 1 (internal to luagpu.tensor, which makes these
-- its methods, gpu.cat and gpu.stack).
--
--   J.methods   x:squeeze([dim]), x:unsqueeze(dim), x:flatten(),
--               x:flip(dim_or_dims), x:roll(shift, dim), x:tril([k]),
--               x:triu([k]), x:repeat_tiles(reps), x:pad(widths [, value]),
--               x:split(size_or_sizes [, dim]), x:chunk(n [, dim])
--   J.cat(list [, dim]), J.stack(list [, dim])
--
-- squeeze, unsqueeze and the parts of split and chunk are views; flatten is
-- a view when the strides allow (x:reshape's rule); cat and stack write a
-- new tensor, one kernel per input (its slice of the result set from it).

local H = require "luagpu.core.check"
local TY = require "luagpu.core.types"
local ST = require "luagpu.core.steps"
local P = require "luagpu.core.programs"
local NO_EVENT = ST.NO_EVENT                  -- (enqueue without an Event)
local LOCAL = 256
local O = require "luagpu.tensor.object"
local X = require "luagpu.tensor.expr"
local E = require "luagpu.tensor.elementwise"

local type, ipairs, rawget, rawlen, getmetatable = type, ipairs, rawget, rawlen, getmetatable
local fail, typename, show, integer = H.fail, H.typename, H.show, H.integer
local check, check_dim, view, show_shape = X.check, O.check_dim, O.view, O.show_shape
local MAX_DIMS = O.MAX_DIMS

local J = {methods = {}}
local methods = J.methods

------------------------------------------------------------------ dims of size 1

-- x:squeeze([dim]): without dim, x without its dims of size 1; with dim,
-- without that dim when its size is 1, else x's shape (as PyTorch). A view.
function methods.squeeze(x, dim, ...)
  local fn = "tensor:squeeze"
  check(fn, 0, x)
  O.no_more(fn, 2, ...)
  local shape, strides = {}, {}
  local d = dim ~= nil and check_dim(fn, "argument #1", x, dim)
  for i, n in ipairs(x._shape) do
    if not (n == 1 and (not d or d == i)) then
      shape[#shape + 1], strides[#strides + 1] = n, x._strides[i]
    end
  end
  return view(x._st, x._type, shape, strides, x._off)
end

-- x:unsqueeze(dim): x with a dim of size 1 inserted at position dim (1 to
-- ndim + 1; -1 appends). A view.
function methods.unsqueeze(x, dim, ...)
  local fn = "tensor:unsqueeze"
  check(fn, 0, x)
  O.no_more(fn, 2, ...)
  local nd = #x._shape
  if nd >= MAX_DIMS then
    fail(fn, "the tensor has %d dims already (at most %d)", nd, MAX_DIMS)
  end
  local d = check_dim(fn, "argument #1", x, dim, 1)
  local shape, strides = {}, {}
  for i = 1, nd + 1 do
    if i == d then
      -- (any stride walks a dim of one element: that of the dim it precedes)
      shape[i], strides[i] = 1, i <= nd and x._strides[i] * x._shape[i] or 1
    else
      local j = i < d and i or i - 1
      shape[i], strides[i] = x._shape[j], x._strides[j]
    end
  end
  if d <= nd and x._shape[d] == 0 then strides[d] = 1 end
  return view(x._st, x._type, shape, strides, x._off)
end

-- x:flatten(): x as one dim (x:reshape{-1}: a view when the strides allow).
function methods.flatten(x, ...)
  check("tensor:flatten", 0, x)
  O.no_more("tensor:flatten", 1, ...)
  return x:reshape{-1}
end

------------------------------------------------------------------ reversing

-- x:flip(dim_or_dims): x with the elements of each dim given (a number or
-- a list) in reverse order. A view (negative strides, as NumPy's flip;
-- PyTorch's copies: x:flip(d):clone() for one).
function methods.flip(x, dims, ...)
  local fn = "tensor:flip"
  check(fn, 0, x)
  O.no_more(fn, 2, ...)
  local list = O.check_dim_or_dims(fn, 1, x, dims)
  local shape, strides, off = {}, {}, x._off
  for i, n in ipairs(x._shape) do shape[i], strides[i] = n, x._strides[i] end
  for _, d in ipairs(list) do
    if shape[d] > 1 then
      off = off + (shape[d] - 1) * strides[d]
      strides[d] = -strides[d]
    end
  end
  return view(x._st, x._type, shape, strides, off)
end

-- x:roll(shift, dim): x's elements along dim moved shift places on (as
-- NumPy and PyTorch: the last ones come round first). A new tensor: the
-- two parts each set into place.
function methods.roll(x, shift, dim, ...)
  local fn = "tensor:roll"
  check(fn, 0, x)
  O.no_more(fn, 3, ...)
  local k = integer(shift)
  if not k then fail(fn, "argument #1: expected an integer shift, got %s", show(shift)) end
  if dim == nil then
    -- no dim: the elements in row-major order rolled, the shape kept (as
    -- NumPy's and PyTorch's roll without an axis)
    if #x._shape == 0 then return x:clone() end
    local shape = {table.unpack(x._shape)}
    return x:reshape({x._n}):roll(k, 1):reshape(shape)
  end
  local d = check_dim(fn, "argument #2", x, dim)
  local len = x._shape[d]
  local out = O.empty(fn, x._dev, x._type, {table.unpack(x._shape)})
  if out._n == 0 then return out end
  k = k % len
  if k == 0 then return out:set(x) end
  out:slice(d, k + 1, len):set(x:slice(d, 1, len - k))
  out:slice(d, 1, k):set(x:slice(d, len - k + 1, len))
  return out
end

------------------------------------------------------------------ building

local function last_two(fn, x)
  local nd = #x._shape
  if nd < 2 then fail(fn, "expected a tensor of at least 2 dims, got %d", nd) end
  return x._shape[nd - 1], x._shape[nd]
end

-- x:tril([k]) / x:triu([k]): the elements of each matrix (the last two
-- dims) on and below (tril) or on and above (triu) diagonal k (0 the main
-- one, > 0 above it), zeros elsewhere. A new tensor, one kernel with the
-- positions' comparison fused (two small aranges made first).
local function triangle(fn, x, k, below, ...)
  check(fn, 0, x)
  O.no_more(fn, 2, ...)
  local d = k == nil and 0 or integer(k)
  if not d then fail(fn, "argument #1: expected an integer diagonal, got %s", show(k)) end
  local rows, cols = last_two(fn, x)
  local dev = x._dev
  local r = E.arange(dev, "long", math.max(rows, 1)):reshape{math.max(rows, 1), 1}
  local c = E.arange(dev, "long", math.max(cols, 1)):reshape{1, math.max(cols, 1)}
  if rows == 0 or cols == 0 then return x:clone() end
  local diff = c - r
  local mask = below and diff:le(d) or diff:ge(d)
  return E.where(mask, x, 0):astype(x._type):eval()
end

function methods.tril(x, k, ...) return triangle("tensor:tril", x, k, true, ...) end
function methods.triu(x, k, ...) return triangle("tensor:triu", x, k, false, ...) end

-- x:repeat_tiles(reps): x repeated reps[i] times along dim i (NumPy's
-- tile: a list shorter than x's dims repeats its last dims, a longer one
-- adds leading dims). A new tensor: per dim repeated, one copy of an
-- expanded view ({outer, 1, rest} expanded to {outer, reps[i], rest}).
function methods.repeat_tiles(x, reps, ...)
  local fn = "tensor:repeat_tiles"
  check(fn, 0, x)
  O.no_more(fn, 2, ...)
  if type(reps) == "number" then reps = {reps} end
  if type(reps) ~= "table" or getmetatable(reps) ~= nil then
    fail(fn, "argument #1: expected a list of repetitions, got %s", O.what(reps))
  end
  local nr, nd = rawlen(reps), #x._shape
  O.check_entries(fn, "argument #1", reps, nr, "a list of repetitions holds only counts")
  local D = math.max(nr, nd)
  if D > MAX_DIMS then fail(fn, "argument #1: %d dims are too many (at most %d)", D, MAX_DIMS) end
  local counts, total = {}, x._n
  for i = 1, nr do
    local r = integer(rawget(reps, i))
    if not r or r < 0 then
      fail(fn, "argument #1: entry %d: expected an integer >= 0, got %s", i, show(rawget(reps, i)))
    end
    if r > 0 and total > O.MAX_ELEMENTS // r then
      fail(fn, "argument #1: the result would have more than 2^53 elements")
    end
    total = total * r
    counts[D - nr + i] = r
  end
  for i = 1, D - nr do counts[i] = 1 end
  -- the result's shape, each size checked (a result without elements too:
  -- {0}:repeat_tiles(2^62) would be a dim of 0, {0, 4}'s {1, 2^62} one past 2^63)
  local shape = {}
  for i = 1, D do
    local n, r = x._shape[i - (D - nd)] or 1, counts[i]
    if r > 0 and n > O.MAX_ELEMENTS // r then
      fail(fn, "argument #1: dim %d of the result would be longer than 2^53", i)
    end
    shape[i] = n * r
  end
  if total == 0 then return O.empty(fn, x._dev, x._type, shape) end
  local y = x
  for _ = 1, D - nd do y = y:unsqueeze(1) end
  for i = 1, D do
    local r = counts[i]
    if r ~= 1 then
      -- y as {outer, 1, rest} (rest: dims i..D), its middle repeated r times
      local ys = y._shape
      local outer, rest = 1, 1
      for j = 1, i - 1 do outer = outer * ys[j] end
      for j = i, D do rest = rest * ys[j] end
      local merged = {table.unpack(ys)}
      merged[i] = r * ys[i]
      y = y:reshape{outer, 1, rest}:expand{outer, r, rest}:contiguous():reshape(merged)
    end
  end
  if y == x then y = x:clone() end
  return y
end

-- x:pad(widths [, value]): x with value (default 0) around it: widths is
-- a number (every dim, both sides) or one {before, after} per dim. A new
-- tensor: filled, then x set into the middle.
function methods.pad(x, widths, value, ...)
  local fn = "tensor:pad"
  check(fn, 0, x)
  O.no_more(fn, 3, ...)
  local nd = #x._shape
  local pairs_ = {}
  if type(widths) == "number" then
    local w = integer(widths)
    if not w or w < 0 or w > O.MAX_ELEMENTS then
      fail(fn, "argument #1: expected a width >= 0 or a list of {before, after}, got %s",
           show(widths))
    end
    for i = 1, nd do pairs_[i] = {w, w} end
  elseif type(widths) == "table" and getmetatable(widths) == nil then
    if rawlen(widths) ~= nd then
      fail(fn, "argument #1: expected %d pairs {before, after} (one per dim), got %d", nd,
           rawlen(widths))
    end
    O.check_entries(fn, "argument #1", widths, nd, "a list of widths holds only pairs")
    for i = 1, nd do
      local p = rawget(widths, i)
      local b = type(p) == "table" and integer(rawget(p, 1))
      local a = type(p) == "table" and integer(rawget(p, 2))
      if not (b and a and b >= 0 and a >= 0 and b <= O.MAX_ELEMENTS and a <= O.MAX_ELEMENTS) then
        fail(fn, "argument #1: entry %d: expected {before, after}, integers >= 0, got %s", i,
             type(p) == "table" and "{" .. show(rawget(p, 1)) .. ", " .. show(rawget(p, 2)) .. "}"
             or show(p))
      end
      O.check_entries(fn, "argument #1: entry " .. i, p, 2, "a pair holds only {before, after}")
      pairs_[i] = {b, a}
    end
  else
    fail(fn, "argument #1: expected a width >= 0 or a list of {before, after}, got %s",
         O.what(widths))
  end
  local v = value == nil and 0 or value
  if type(v) ~= "number" then fail(fn, "argument #2: expected a number, got %s", typename(value)) end
  local why = TY.fits(x._type, v)
  if why then fail(fn, "argument #2: %s", why) end
  local shape, total = {}, 1
  for i, n in ipairs(x._shape) do
    shape[i] = n + pairs_[i][1] + pairs_[i][2]
    if shape[i] > 0 and total > O.MAX_ELEMENTS // shape[i] then
      fail(fn, "the result would have more than 2^53 elements")
    end
    total = total * shape[i]
  end
  local out = O.empty(fn, x._dev, x._type, shape)
  if out._n == 0 then return out end
  out:set(v)
  if x._n > 0 then
    local inner = out
    for i = 1, nd do inner = inner:slice(i, pairs_[i][1] + 1, pairs_[i][1] + x._shape[i]) end
    inner:set(x)
  end
  return out
end

------------------------------------------------------------------ splitting

-- The parts of x along dim d of the given sizes, as slice views.
local function parts(x, d, sizes)
  local list, first = {}, 1
  for i, n in ipairs(sizes) do
    list[i] = x:slice(d, first, first + n - 1)
    first = first + n
  end
  return list
end

-- x:split(size [, dim]): parts of size elements along dim (default 1), the
-- last smaller when they do not divide it; x:split({n1, n2, ...} [, dim]):
-- The dim (argument #2) of split, chunk and cat over x: given, or 1; a
-- 0-d x has none to default to (said so: the script gave no argument #2).
local function dim_or_first(fn, x, dim, what)
  if dim == nil and #x._shape == 0 then
    fail(fn, "a 0-d tensor has no dim to %s", what)
  end
  return check_dim(fn, "argument #2", x, dim == nil and 1 or dim)
end

-- parts of those sizes, which must add up to the dim's. A list of views.
function methods.split(x, size, dim, ...)
  local fn = "tensor:split"
  check(fn, 0, x)
  O.no_more(fn, 3, ...)
  local d = dim_or_first(fn, x, dim, "split along")
  local len = x._shape[d]
  local sizes = {}
  if type(size) == "table" and getmetatable(size) == nil then
    O.check_entries(fn, "argument #1", size, rawlen(size), "a list of sizes holds only sizes")
    local total = 0          -- (a float once past 2^63 - 1: it must not wrap to len)
    for i = 1, rawlen(size) do
      local n = integer(rawget(size, i))
      if not n or n < 0 then
        fail(fn, "argument #1: size %d: expected an integer >= 0, got %s", i,
             show(rawget(size, i)))
      end
      sizes[i] = n
      if math.type(total) == "integer" and total <= math.maxinteger - n then total = total + n
      else total = total + (n + 0.0) end
    end
    if total ~= len then
      fail(fn, "argument #1: the sizes add up to %s, dim %d has %d", math.type(total) ==
           "integer" and total or ("%.0f"):format(total), d, len)
    end
  else
    local n = integer(size)
    if not n or n < 1 then
      fail(fn, "argument #1: expected a part size >= 1 or a table of sizes, got %s",
           type(size) == "table" and O.what(size) or show(size))
    end
    for first = 1, len, n do sizes[#sizes + 1] = math.min(n, len - first + 1) end
    if len == 0 then sizes[1] = 0 end
  end
  return parts(x, d, sizes)
end

-- x:chunk(n [, dim]): x in n parts along dim (default 1) of ceil(len / n)
-- elements, the last smaller; fewer parts when there are not enough
-- elements (as PyTorch). A list of views.
function methods.chunk(x, n, dim, ...)
  local fn = "tensor:chunk"
  check(fn, 0, x)
  O.no_more(fn, 3, ...)
  local c = integer(n)
  if not c or c < 1 then fail(fn, "argument #1: expected a number of parts >= 1, got %s", show(n)) end
  local d = dim_or_first(fn, x, dim, "split along")
  local len = x._shape[d]
  return methods.split(x, math.max(1, (len + c - 1) // c), d)
end

------------------------------------------------------------------ joining

-- Checks list (argument #1 of fn): a non-empty plain list of tensors on
-- one device; returns them (realized) and their common type.
local function check_list(fn, list)
  if type(list) ~= "table" or getmetatable(list) ~= nil then
    fail(fn, "argument #1: expected a list of tensors, got %s", O.what(list))
  end
  local n = rawlen(list)
  if n == 0 then fail(fn, "argument #1: expected a list of tensors, got an empty one") end
  O.check_entries(fn, "argument #1", list, n, "a list of tensors holds only tensors")
  local xs, t = {}, nil
  for i = 1, n do
    local x = rawget(list, i)
    if not O.is_tensor(x) then
      fail(fn, "argument #1: item %d: expected a tensor, got %s", i, typename(x))
    end
    if rawget(x, "_st") == O.RELEASED then
      fail(fn, "argument #1: item %d: attempt to use a released tensor", i)
    end
    check(fn, 1, x)
    if i > 1 then O.check_same_device(fn, 1, x, xs[1]._dev) end
    t = t and TY.promote(t, x._type) or x._type
    xs[i] = x
  end
  return xs, t
end

local kernels = ST.device_cache()      -- dev -> type -> VEC -> lg_cat4

local function cat_kernel(fn, dev, t, vec)
  local c = kernels[dev]
  if not c then c = {}; kernels[dev] = c end
  local key = t .. vec
  local k = c[key]
  if k then return k end
  local ok, prog = pcall(P.get, dev, {family = "tensor", file = "tensor_join.cl",
                                      defines = {{"T", t}, {"VEC", vec}}})
  if not ok then fail(fn, "the join kernel does not compile for %s: %s", t, tostring(prog)) end
  k = prog.lg_cat4
  c[key] = k
  return k
end

-- Copies the inputs in run (at most four; run.at: where the first begins
-- in out, in elements; each of the others begins where the one before
-- ends) into contiguous out by one launch of lg_cat4 (four elements a
-- work-item where every part starts on a vector of 4), and empties run.
local function copy_run(fn, out, run)
  local bufs, offs, starts = {}, {}, {}
  local m, total = #run, 0
  local vec = (out._off + run.at) % 4 == 0
  for k = 1, m do
    local x = run[k]
    bufs[k], offs[k], starts[k] = x._st.buf, x._off, total
    vec = vec and x._off % 4 == 0 and total % 4 == 0
    total = total + x._n
    run[k] = nil
  end
  for k = m + 1, 4 do bufs[k], offs[k], starts[k] = bufs[1], 0, total end
  vec = vec and total % 4 == 0
  local k = cat_kernel(fn, out._dev, out._type, vec and 4 or 1)
  local items = vec and total // 4 or total
  k(out._st.buf, out._off + run.at, total, bufs[1], bufs[2], bufs[3], bufs[4], offs, starts)
    :run({ST.round_up(items, LOCAL)}, {LOCAL}, NO_EVENT)
end

-- gpu.cat(list [, dim]): the tensors of list joined along dim (default 1;
-- negative from the end): equal shapes but for that dim, their types
-- promoted. A new tensor; each input is one kernel writing its slice.
function J.cat(list, dim, ...)
  local fn = "gpu.cat"
  O.no_more(fn, 3, ...)
  local xs, t = check_list(fn, list)
  local first = xs[1]
  local d = dim_or_first(fn, first, dim, "join along (gpu.stack joins 0-d tensors)")
  local shape, total = {}, 0
  for i, x in ipairs(xs) do
    if #x._shape ~= #first._shape then
      fail(fn, "argument #1: item %d has %d dims, item 1 %d", i, #x._shape, #first._shape)
    end
    for k, n in ipairs(x._shape) do
      if k ~= d and n ~= first._shape[k] then
        fail(fn, "argument #1: item %d has shape %s, item 1 %s (they may differ in dim %d only)",
             i, show_shape(x._shape), show_shape(first._shape), d)
      end
    end
    total = total + x._shape[d]
  end
  for k, n in ipairs(first._shape) do shape[k] = k == d and total or n end
  local out = O.empty(fn, first._dev, t, shape)
  local outer, inner = 1, 1
  for k = 1, d - 1 do outer = outer * shape[k] end
  for k = d + 1, #shape do inner = inner * shape[k] end
  -- with no dim of more than one element before d, each input's part of
  -- out is one run of its elements: neighbouring contiguous inputs of
  -- out's type are copied by lg_cat4, four to a launch (else a kernel
  -- writes each slice)
  local run, at = {}, 1
  for _, x in ipairs(xs) do
    local n = x._shape[d]
    if n > 0 and out._n > 0 then
      if outer == 1 and x._type == t and O.is_contiguous(x) then
        if run[1] == nil then run.at = (at - 1) * inner end
        run[#run + 1] = x                   -- (x checked by check_list)
        if run[4] then copy_run(fn, out, run) end
      else
        if run[1] then copy_run(fn, out, run) end
        out:slice(d, at, at + n - 1):set(x)
      end
    end
    at = at + n
  end
  if run[1] then copy_run(fn, out, run) end
  return out
end

-- gpu.stack(list [, dim]): tensors of one shape joined along a new dim at
-- position dim (default 1; 1 to ndim + 1, negative from the end).
function J.stack(list, dim, ...)
  local fn = "gpu.stack"
  O.no_more(fn, 3, ...)
  local xs = check_list(fn, list)
  local first = xs[1]
  for i, x in ipairs(xs) do
    local a, b = x._shape, first._shape
    local same = #a == #b
    for k = 1, #a do same = same and a[k] == b[k] end
    if not same then
      fail(fn, "argument #1: item %d has shape %s, item 1 %s (stack needs one shape)", i,
           show_shape(a), show_shape(b))
    end
  end
  if #first._shape >= MAX_DIMS then
    fail(fn, "argument #1: the tensors have %d dims already (at most %d)", #first._shape,
         MAX_DIMS)
  end
  local d = check_dim(fn, "argument #2", first, dim == nil and 1 or dim, 1)
  local lifted = {}
  for i, x in ipairs(xs) do lifted[i] = x:unsqueeze(d) end
  return J.cat(lifted, d)
end

return J
