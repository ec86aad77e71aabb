-- luagpu.tensor.einsum: gpu.einsum(spec, a [, b]) (internal to
-- luagpu.tensor), NumPy's subscripts for one or two operands.
--
-- A letter repeated in one operand takes its diagonal (a view whose stride
-- is the sum of the letter's strides); letters of one operand alone that
-- the output lacks are summed first; then two float or double operands are
-- one batched product (x:bmm): batch letters (in both and the output),
-- contracted ones (in both, not the output), each side's own; integer
-- operands multiply broadcast and sum. The output is made contiguous in
-- the order asked.

local H = require "luagpu.core.check"
local TY = require "luagpu.core.types"
local O = require "luagpu.tensor.object"
local X = require "luagpu.tensor.expr"

local type, ipairs, pairs = type, ipairs, pairs
local concat = table.concat
local fail, typename, show = H.fail, H.typename, H.show
local check, is_tensor, show_shape = X.check, O.is_tensor, O.show_shape
local FLOATS = TY.FLOATS

local M = {}
local FN = "gpu.einsum"

-- The letters of subscript text s (argument #1's part), as a list.
local function letters(s, what)
  local list = {}
  for c in s:gmatch(".") do
    if not c:match("%a") then
      fail(FN, "argument #1: %s: expected letters, got %q (no ellipsis '...')", what, c)
    end
    list[#list + 1] = c
  end
  return list
end

-- Parses spec for n operands: their letter lists and the output's.
local function parse_new(spec, n)
  if type(spec) ~= "string" then
    fail(FN, "argument #1: expected subscripts such as \"ij,jk->ik\", got %s", typename(spec))
  end
  local s = spec:gsub("%s", "")
  local ins, out = s:match("^(.-)%->(.*)$")
  if not ins then ins = s end
  local parts = {}
  for p in (ins .. ","):gmatch("([^,]*),") do parts[#parts + 1] = p end
  if #parts ~= n then
    fail(FN, "argument #1: %q names %d operand%s, %d given", spec, #parts,
         #parts == 1 and "" or "s", n)
  end
  local lists, count = {}, {}
  for i, p in ipairs(parts) do
    lists[i] = letters(p, "operand " .. i)
    for _, c in ipairs(lists[i]) do count[c] = (count[c] or 0) + 1 end
  end
  local o
  if out then
    o = letters(out, "the output")
    local seen = {}
    for _, c in ipairs(o) do
      if seen[c] then fail(FN, "argument #1: the output names %s twice", c) end
      if not count[c] then fail(FN, "argument #1: the output's %s is in no operand", c) end
      seen[c] = true
    end
  else                                 -- NumPy's implicit output: letters met once, sorted
    o = {}
    for c, k in pairs(count) do if k == 1 then o[#o + 1] = c end end
    table.sort(o)
  end
  return lists, o
end

-- parse_new's answers by spec and n (lists never written), made again
-- past PARSED_MAX specs.
local parsed, nparsed, PARSED_MAX = {}, 0, 256
local function parse(spec, n)
  local e = parsed[spec]
  local r = e and e[n]
  if r then return r[1], r[2] end
  local lists, o = parse_new(spec, n)
  if not e then
    if nparsed >= PARSED_MAX then parsed, nparsed = {}, 0 end
    e = {}
    parsed[spec], nparsed = e, nparsed + 1
  end
  e[n] = {lists, o}
  return lists, o
end

-- x (realized) with one dim per distinct letter of list (a repeated letter
-- gives the diagonal); returns the view and its letters. sizes records
-- each letter's size (checked against the others').
-- With fresh_ok false and no letter repeated, x itself.
local function distinct(x, list, sizes, arg, fresh_ok)
  if #list ~= #x._shape then
    fail(FN, "argument #%d: the subscripts name %d dims, the tensor has %d (shape %s)", arg,
         #list, #x._shape, show_shape(x._shape))
  end
  local shape, strides, names, at = {}, {}, {}, {}
  local repeated = false
  for i, c in ipairs(list) do
    local n = x._shape[i]
    if sizes[c] and sizes[c] ~= n then
      fail(FN, "argument #%d: %s has size %d here, %d elsewhere", arg, c, n, sizes[c])
    end
    sizes[c] = n
    if at[c] then
      strides[at[c]] = strides[at[c]] + x._strides[i]
      repeated = true
    else
      names[#names + 1] = c
      at[c] = #names
      shape[#names], strides[#names] = n, x._strides[i]
    end
  end
  if not repeated and not fresh_ok then return x, names end
  return O.view(x._st, x._type, shape, strides, x._off), names
end

local function index_of(list)
  local at = {}
  for i, c in ipairs(list) do at[c] = i end
  return at
end

-- The options of einsum's sums where the operands' promoted type is t:
-- integers summed in t (as NumPy's einsum: the result keeps the operands'
-- promoted type, and its sums wrap there); floats as x:sum does.
local function sum_options(t)
  return not FLOATS[t] and {type = t} or nil
end

-- x (letters names) with the letters in keep only: the others summed.
local function sum_others(x, names, keep)
  local dims, rest = {}, {}
  for i, c in ipairs(names) do
    if keep[c] then rest[#rest + 1] = c else dims[#dims + 1] = i end
  end
  if #dims == 0 then return x, names end
  return x:sum(dims, sum_options(x._type)), rest
end

-- x (letters names) permuted to order (every letter of names in it); with
-- keep_identity, x itself when order is names' order.
local function permuted(x, names, order, keep_identity)
  local at, p, same = index_of(names), {}, true
  for i, c in ipairs(order) do
    p[i] = at[c]
    if p[i] ~= i then same = false end
  end
  if #p == 0 or same and keep_identity then return x end
  return x:permute(p)
end

-- x reshaped to shape, or x itself when it has that shape already.
local function reshaped(x, shape)
  local xs = x._shape
  if #xs == #shape then
    local same = true
    for i = 1, #shape do if xs[i] ~= shape[i] then same = false; break end end
    if same then return x end
  end
  return x:reshape(shape)
end

-- The size product of letters.
local function size_of(list, sizes)
  local n = 1
  for _, c in ipairs(list) do n = n * sizes[c] end
  return n
end

local function shape_of(list, sizes)
  local s = {}
  for i, c in ipairs(list) do s[i] = sizes[c] end
  return s
end

-- The distinct letters of list, in order of first appearance.
local function distinct_letters(list)
  local names, seen = {}, {}
  for _, c in ipairs(list) do
    if not seen[c] then seen[c] = true; names[#names + 1] = c end
  end
  return names
end

-- What two operands' subscripts (lists, out) ask, from the letters alone:
-- each side's distinct letters, those summed first (dims) and kept (n),
-- the batch, contracted and own letters, each side's order for the
-- product and its permutation (nil: the order it has), the product's
-- letters (cn) and the permutation to the output's (nil: the same).
-- Made once per parsed subscripts (weak keys: parse's lists).
local plans = setmetatable({}, {__mode = "k"})
local function plan_of(lists, out)
  local p = plans[lists]
  if p then return p end
  local keep_out = {}
  for _, c in ipairs(out) do keep_out[c] = true end
  local n1, n2 = distinct_letters(lists[1]), distinct_letters(lists[2])
  local in_a, in_b = index_of(n1), index_of(n2)
  local function kept(names, other)
    local dims, rest = {}, {}
    for i, c in ipairs(names) do
      if keep_out[c] or other[c] then rest[#rest + 1] = c else dims[#dims + 1] = i end
    end
    return dims, rest
  end
  local dims_a, na = kept(n1, in_b)
  local dims_b, nb = kept(n2, in_a)
  in_a, in_b = index_of(na), index_of(nb)
  local batch, contract, own_a, own_b = {}, {}, {}, {}
  for _, c in ipairs(na) do
    if in_b[c] then
      if keep_out[c] then batch[#batch + 1] = c else contract[#contract + 1] = c end
    else
      own_a[#own_a + 1] = c
    end
  end
  for _, c in ipairs(nb) do if not in_a[c] then own_b[#own_b + 1] = c end end
  local function joined(...)
    local all = {}
    for _, l in ipairs {...} do
      for _, c in ipairs(l) do all[#all + 1] = c end
    end
    return all
  end
  -- the permutation taking letters names to order; nil for none
  local function perm(names, order)
    local at, q, same = index_of(names), {}, true
    for i, c in ipairs(order) do
      q[i] = at[c]
      if q[i] ~= i then same = false end
    end
    if same then return nil end
    return q
  end
  local order_a, order_b = joined(batch, own_a, contract), joined(batch, contract, own_b)
  local cn = joined(batch, own_a, own_b)
  p = {n1 = n1, n2 = n2, dims_a = dims_a, na = na, dims_b = dims_b, nb = nb, batch = batch,
       contract = contract, own_a = own_a, own_b = own_b, order_a = order_a,
       order_b = order_b, perm_a = perm(na, order_a), perm_b = perm(nb, order_b), cn = cn,
       perm_c = perm(cn, out)}
  plans[lists] = p
  return p
end

function M.einsum(spec, a, b, ...)
  O.no_more(FN, 4, ...)
  local ops = {a, b}
  local n = b == nil and 1 or 2
  for i = 1, n do
    if not is_tensor(ops[i]) then
      fail(FN, "argument #%d: expected a tensor, got %s", i + 1, typename(ops[i]))
    end
    check(FN, i + 1, ops[i])
  end
  if n == 2 then O.check_same_device(FN, 3, b, a._dev) end
  local lists, out = parse(spec, n)
  local sizes = {}
  local xs, names = {}, {}
  -- (one operand: its result is a view of it, never the tensor itself)
  for i = 1, n do xs[i], names[i] = distinct(ops[i], lists[i], sizes, i + 1, n == 1) end
  if n == 1 then
    local keep_out = {}
    for _, c in ipairs(out) do keep_out[c] = true end
    local x, nm = sum_others(xs[1], names[1], keep_out)
    return permuted(x, nm, out):contiguous()
  end
  local p = plan_of(lists, out)
  local sums = sum_options(TY.promote(xs[1]._type, xs[2]._type))
  local A = #p.dims_a > 0 and xs[1]:sum(p.dims_a, sums) or xs[1]
  local B = #p.dims_b > 0 and xs[2]:sum(p.dims_b, sums) or xs[2]
  local na, nb = p.na, p.nb
  local batch, contract, own_a, own_b = p.batch, p.contract, p.own_a, p.own_b
  local t = TY.promote(A._type, B._type)
  if A._type ~= t then A = A:astype(t) end
  if B._type ~= t then B = B:astype(t) end
  local C, cn
  if FLOATS[t] then
    local sb, sa, sc, sbk = size_of(batch, sizes), size_of(own_a, sizes),
                            size_of(contract, sizes), size_of(own_b, sizes)
    if p.perm_a then A = A:permute(p.perm_a) end
    if p.perm_b then B = B:permute(p.perm_b) end
    C = reshaped(A, {sb, sa, sc}):bmm(reshaped(B, {sb, sc, sbk}))
    C = reshaped(C, shape_of(p.cn, sizes))
    -- (C is the product's own tensor: in the order asked, it is the result)
    if p.perm_c then C = C:permute(p.perm_c) end
    if O.is_contiguous(C) then return C end
    return C:contiguous()
  else
    -- integers: both broadcast over every letter, multiplied, contracted summed
    local all = {}
    for _, l in ipairs {batch, own_a, own_b, contract} do
      for _, c in ipairs(l) do all[#all + 1] = c end
    end
    local function spread(x, nm)
      local at, shape = index_of(nm), {}
      local present = {}
      for _, c in ipairs(all) do if at[c] then present[#present + 1] = c end end
      local v = permuted(x, nm, present)
      for i, c in ipairs(all) do shape[i] = at[c] and sizes[c] or 1 end
      return v:reshape(shape)
    end
    local prod = spread(A, na) * spread(B, nb)
    cn = p.cn
    if #contract > 0 then
      local dims = {}
      for i = #cn + 1, #all do dims[#dims + 1] = i end
      C = prod:sum(dims, sum_options(t))
    else
      C = prod
    end
  end
  return permuted(C, cn, out):contiguous()
end

return M
