-- luagpu.tensor.stats: statistics and order statistics made of the other
-- tensor operations (internal to luagpu.tensor, which makes these its
-- methods): x:var, x:std, x:norm, x:median, x:topk, x:unique, x:bincount,
-- x:dot, and gpu.outer.
--
-- Each is a few fused elementwise kernels, reductions, sorts and gathers;
-- docs/API.md says what each costs.

local H = require "luagpu.core.check"
local TY = require "luagpu.core.types"
local O = require "luagpu.tensor.object"
local X = require "luagpu.tensor.expr"
local E = require "luagpu.tensor.elementwise"
local RW = require "luagpu.tensor.rows"
local TK = require "luagpu.tensor.topk"
local algo = require("luagpu.tensor.interop").algo

local type, ipairs, rawget = type, ipairs, rawget
local huge = math.huge
local fail, typename, show, integer = H.fail, H.typename, H.show, H.integer
local no_more = O.no_more
local check, check_dim, show_shape, is_tensor = X.check, O.check_dim, O.show_shape, O.is_tensor
local FLOATS, INTEGERS = TY.FLOATS, TY.INTEGERS

local M = {methods = {}}
local methods = M.methods

-- x in a floating type (integers in double).
local function floating(fn, x)
  if FLOATS[x._type] then return x end
  O.check_device_type(fn, x._dev, "double")
  return x:astype("double")
end

-- The dims argument (argument #arg, default 1): nil (all), a dim or a
-- list; returns the reduction's dim argument as given (checked by the
-- reduction) and how many elements each result covers.
local function covered(fn, x, dim, arg)
  if dim == nil then return nil, x._n end
  local n = 1
  for _, d in ipairs(O.check_dim_or_dims(fn, arg or 1, x, dim)) do n = n * x._shape[d] end
  return dim, n
end

------------------------------------------------------------------ spread

-- Whether dim d of x is its last of a size other than 1 (the rows kernel
-- then reads x's rows in place where x is contiguous).
local function last_of(x, d)
  if math.type(d) ~= "integer" then return false end
  local nd = #x._shape
  if d < 0 then d = d + nd + 1 end
  if d < 1 or d > nd then return false end
  for i = d + 1, nd do if x._shape[i] ~= 1 then return false end end
  return true
end

local VAR_OPTIONS = H.option_names({"correction", "keepdim"}, "option ")

-- x:var([dim_or_dims] [, {correction = 1, keepdim = false}]): the
-- variance, sum((x - mean)^2) / (n - correction) (correction 1: the
-- sample variance, PyTorch's default; 0: NumPy's). Two passes: the mean,
-- then the squared deviations (one kernel of both along a single last dim:
-- luagpu.tensor.rows). Integers in double. A Lua number without a
-- dim; NaN when n - correction <= 0.
local function spread(fn, x, dim, opts, std, ...)
  check(fn, 0, x)
  no_more(fn, 3, ...)
  -- x:var({correction = 0}): the options alone ({} is a list of no dims)
  if type(dim) == "table" and rawget(dim, 1) == nil and next(dim) ~= nil and opts == nil then
    dim, opts = nil, dim
  end
  local o = H.check_options(fn, 2, opts, VAR_OPTIONS)
  local c = o.correction == nil and 1 or o.correction
  if type(c) ~= "number" or c ~= c or c < 0 then
    fail(fn, "argument #2: option correction: expected a number >= 0, got %s", show(o.correction))
  end
  if o.keepdim ~= nil and type(o.keepdim) ~= "boolean" then
    fail(fn, "argument #2: option keepdim: expected a boolean, got %s", show(o.keepdim))
  end
  O.check_keepdim(fn, dim, o.keepdim)
  local xf = floating(fn, x)
  local d, n = covered(fn, x, dim)
  local div = n - c
  if d == nil then
    if n == 0 then return 0 / 0 end
    local m = xf:mean()
    local dev = xf - m
    local s = (dev * dev):sum()
    local v = div > 0 and s / div or 0 / 0
    return std and math.sqrt(v) or v
  end
  if type(d) ~= "table" and last_of(x, d) and x._n > 0 then
    -- one dim, the last that is not 1: one kernel of both passes
    return RW.spread(fn, xf, check_dim(fn, "argument #1", x, d), div, o.keepdim == true, std)
  end
  local m = xf:mean(d, {keepdim = true})
  local dev = xf - m
  local s = (dev * dev):sum(d, {keepdim = o.keepdim == true})
  local v = div > 0 and s / div or s * (0 / 0)
  return (std and v:sqrt() or v):eval()
end

function methods.var(x, dim, opts, ...) return spread("tensor:var", x, dim, opts, false, ...) end

-- x:std(...): the square root of x:var(...).
function methods.std(x, dim, opts, ...) return spread("tensor:std", x, dim, opts, true, ...) end

-- x:norm([p] [, dim_or_dims]): (sum |x|^p)^(1/p) (p default 2; math.huge:
-- max |x|, -math.huge: min |x|; 0: the count of elements not 0), over all
-- elements (a Lua number) or along dims (a tensor). Integers in double.
function methods.norm(x, p, dim, ...)
  local fn = "tensor:norm"
  check(fn, 0, x)
  no_more(fn, 3, ...)
  if p == nil then p = 2 end
  if type(p) ~= "number" or p ~= p then
    fail(fn, "argument #1: expected a number p (or math.huge), got %s", show(p))
  end
  local _, n = covered(fn, x, dim, 2)          -- (x:norm(p, dim): dim is argument #2)
  local a = floating(fn, x):abs()
  if (p == huge or p == -huge) and n == 0 then
    fail(fn, "the norm of order %s of %s is undefined (the %s of no elements)", show(p),
         dim == nil and "an empty tensor" or "an empty dim", p > 0 and "max" or "min")
  end
  if p == huge then return a:max(dim) end
  if p == -huge then return a:min(dim) end
  if p == 0 then
    local r = a:ne(0):sum(dim)
    return type(r) == "number" and r + 0.0 or r:astype(a._type):eval()
  end
  local r
  if p == 1 then r = a:sum(dim)
  elseif p == 2 then r = (a * a):sum(dim)
  else r = (a ^ p):sum(dim) end
  if p == 1 then return r end
  if type(r) == "number" then return r ^ (1 / p) end
  return p == 2 and r:sqrt():eval() or (r ^ (1 / p)):eval()
end

------------------------------------------------------------------ order

-- The dim argument (argument #arg) of median and topk: given, or the last.
local dim_of = O.check_one_dim_at

-- x:median([dim]): the lower median (of an even count, the smaller of the
-- two middle elements, as PyTorch's; NumPy averages them): without dim, a
-- Lua number over every element; along dim, the values and their 1-based
-- positions (two tensors). A NaN makes the median NaN, as in NumPy and
-- PyTorch (along dim: the row's first NaN, and its position). By a sort
-- (argsort along dim), where NaN sorts last.
function methods.median(x, dim, ...)
  local fn = "tensor:median"
  check(fn, 0, x)
  no_more(fn, 2, ...)
  if dim == nil then
    if x._n == 0 then
      -- NaN for floats, as NumPy's and PyTorch's; integers hold no NaN
      if FLOATS[x._type] then return 0 / 0 end
      fail(fn, "the median of an empty %s tensor is undefined (it holds no NaN)", x._type)
    end
    algo(fn, "sort", x._dev)      -- (dev's algo.classes checked under fn: so below)
    O.check_room(fn, x)
    local s = x:flatten():sort()
    if FLOATS[x._type] then
      local last = s[x._n]
      if last ~= last then return last end
    end
    return s[(x._n + 1) // 2]
  end
  local d = dim_of(fn, 1, x, dim)
  local L = x._shape[d]
  if L == 0 then fail(fn, "the median of an empty dim is undefined (dim %d has size 0)", d) end
  algo(fn, "argsort", x._dev)
  O.check_room(fn, x, "long")
  local order, mid = x:argsort(d), (L + 1) // 2
  local pos
  if FLOATS[x._type] then
    -- where a row holds NaNs, its first NaN in sorted order: after its
    -- numbers
    local numbers = x:eq(x):sum(d, {keepdim = true})
    pos = order:gather(d, E.where(numbers:lt(L), numbers + 1, mid))
  else
    pos = order:slice(d, mid, mid)
  end
  return x:gather(d, pos):squeeze(d), pos:squeeze(d)
end

local TOPK_OPTIONS = H.option_names({"largest"}, "option ")

-- x:topk(k [, dim] [, {largest = true}]): the k largest (largest =
-- false: smallest) elements along dim (default: the last), in order, and
-- their 1-based positions: two tensors with k in dim. Ties keep their
-- order; NaN counts as the largest (it sorts last). By a radix select
-- (luagpu.tensor.topk: k up to 1024 and at most half the dim), else by a
-- sort along dim.
function methods.topk(x, k, dim, opts, ...)
  local fn = "tensor:topk"
  check(fn, 0, x)
  no_more(fn, 4, ...)
  if type(dim) == "table" and opts == nil and rawget(dim, 1) == nil then dim, opts = nil, dim end
  local d = dim_of(fn, 2, x, dim)
  local o = H.check_options(fn, 3, opts, TOPK_OPTIONS)
  if o.largest ~= nil and type(o.largest) ~= "boolean" then
    fail(fn, "argument #3: option largest: expected a boolean, got %s", show(o.largest))
  end
  local n = integer(k)
  local L = x._shape[d]
  if not n or n < 0 or n > L then
    fail(fn, "argument #1: expected k from 0 to %d (the size of dim %d), got %s", L, d, show(k))
  end
  local v, p = TK.topk(fn, x, d, n, o.largest ~= false)
  if v then return v, p end
  algo(fn, "argsort", x._dev)
  O.check_room(fn, x, "long")
  local pos = x:argsort(d, {descending = o.largest ~= false}):slice(d, 1, n)
  return x:gather(d, pos), pos:contiguous()
end

-- x:unique(): the distinct values of x, ascending (NaNs as one, last), and
-- how many times each occurs (long): two 1-D tensors. By a sort, then
-- luagpu.algo.compact's runs: the tiled selection of where each run of
-- equal values starts (a count per tile, their scan, one kernel moving
-- each run's first value and place), one kernel writing the runs'
-- lengths, and the count read (before the selection for large x, after
-- its kernels for others: then the results are the first elements of
-- blocks made for n).
function methods.unique(x, ...)
  local fn = "tensor:unique"
  check(fn, 0, x)
  no_more(fn, 1, ...)
  local n = x._n
  if n == 0 then
    return O.empty(fn, x._dev, x._type, {0}), O.empty(fn, x._dev, "long", {0})
  end
  local dev = x._dev
  algo(fn, "sort", dev)
  O.check_room(fn, x)
  -- (a 1-D x as it is: flatten's view would be a new tensor, checked in full)
  local s = (#x._shape == 1 and x or x:flatten()):sort()
  local values, counts, at
  local A = require "luagpu.algo.compact"
  local c = A.runs(fn, s._type, s._st.buf, s._off, n, dev, function(room)
    values = O.empty(fn, dev, s._type, {room})
    counts = O.empty(fn, dev, "long", {room})
    at = O.empty(fn, dev, "long", {room})
    return values._st.buf, values._off, counts._st.buf, counts._off, at._st.buf, at._off
  end)
  O.drop(at); O.drop(s)
  if values._n ~= c then
    -- made for n: the first c elements of their blocks, as torch.unique's
    -- (narrowed in place, before any check saw them: each still the only
    -- tensor over its block, which x:release() gives back)
    for _, r in ipairs({values, counts}) do
      r._st.n, r._shape, r._n = c, {c}, c      -- (n: what x.buffer gives)
    end
  end
  return values, counts
end

-- x:bincount([bins]): how many times each value 0, 1, ... occurs in x (a
-- 1-D tensor of integers >= 0): a long tensor of max(bins, max(x) + 1)
-- elements (as PyTorch's minlength). By algo.histogram's integer keys.
function methods.bincount(x, bins, ...)
  local fn = "tensor:bincount"
  check(fn, 0, x)
  no_more(fn, 2, ...)
  if #x._shape ~= 1 or not INTEGERS[x._type] then
    fail(fn, "expected a 1-D tensor of integers, got %s of %s", show_shape(x._shape), x._type)
  end
  local least = bins == nil and 0 or integer(bins)
  if not least or least < 0 then
    fail(fn, "argument #1: expected a number of bins >= 0, got %s", show(bins))
  end
  if least > (1 << 31) - 1 then
    fail(fn, "argument #1: %d bins are too many (at most 2147483647)", least)
  end
  local nb = least
  if x._n > 0 then
    if not O.is_contiguous(x) then O.check_room(fn, x) end   -- (min and max copy it)
    local lo, hi = x:min(), x:max()
    -- (a ulong past 2^63 comes as a negative Lua integer)
    if x._type == "ulong" and hi < 0 then
      fail(fn, "the values reach %s: too many bins", string.format("%u", hi))
    end
    if lo < 0 then fail(fn, "expected values >= 0, got %d", lo) end
    if hi >= (1 << 31) - 1 then fail(fn, "the values reach %d: too many bins", hi) end
    nb = math.max(nb, hi + 1)
  end
  O.check_alloc(fn, x._dev, "long", {nb}, nb)
  if nb == 0 or x._n == 0 then return O.empty(fn, x._dev, "long", {nb}):set(0) end
  local A = algo(fn, "histogram", x._dev)
  local c = O.contiguous(fn, x)            -- (held: its block must outlive the launch)
  local counts = A.histogram(O.elements_of(c), {bins = nb})
  return require("luagpu.tensor.create").new_tensor(x._dev, "uint", {nb}, counts)
    :astype("long"):eval()
end

------------------------------------------------------------------ products

-- x:dot(y): the sum of the products of two 1-D tensors of one length (a
-- Lua number; types promoted).
function methods.dot(x, y, ...)
  local fn = "tensor:dot"
  check(fn, 0, x)
  no_more(fn, 2, ...)
  if not is_tensor(y) then fail(fn, "argument #1: expected a tensor, got %s", typename(y)) end
  check(fn, 1, y)
  O.check_same_device(fn, 1, y, x._dev)
  if #x._shape ~= 1 or #y._shape ~= 1 or x._n ~= y._n then
    fail(fn, "expected two 1-D tensors of one length, got shapes %s and %s",
         show_shape(x._shape), show_shape(y._shape))
  end
  -- integers below 64 bits multiply in sum's accumulator (long), so that
  -- no product wraps where the sum would not (uchar 200 * 2 was 144)
  local t = TY.promote(x._type, y._type)
  if INTEGERS[t] and t ~= "long" and t ~= "ulong" then
    return (x:astype("long") * y:astype("long")):sum()
  end
  return (x * y):sum()
end

-- gpu.outer(a, b): the matrix a[i] * b[j] of two 1-D tensors (one fused
-- kernel; types promoted).
function M.outer(a, b, ...)
  local fn = "gpu.outer"
  no_more(fn, 3, ...)
  local args = {a, b}
  for i = 1, 2 do            -- (not ipairs: it stopped at a nil a or b, unchecked)
    local v = args[i]
    if not is_tensor(v) then fail(fn, "argument #%d: expected a tensor, got %s", i, typename(v)) end
    check(fn, i, v)
    if #v._shape ~= 1 then
      fail(fn, "argument #%d: expected a 1-D tensor, got shape %s", i, show_shape(v._shape))
    end
  end
  O.check_same_device(fn, 2, b, a._dev)
  return (a:reshape{a._n, 1} * b:reshape{1, b._n}):eval()
end

return M
