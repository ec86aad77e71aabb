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
local function parse(spec, n)
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

-- x (realized) with one dim per distinct letter of list (a repeated letter
-- gives the diagonal); returns the view and its letters. sizes records
-- each letter's size (checked against the others').
local function distinct(x, list, sizes, arg)
  if #list ~= #x._shape then
    fail(FN, "argument #%d: the subscripts name %d dims, the tensor has %d (shape %s)", arg,
         #list, #x._shape, show_shape(x._shape))
  end
  local shape, strides, names, at = {}, {}, {}, {}
  for i, c in ipairs(list) do
    local n = x._shape[i]
    if sizes[c] and sizes[c] ~= n then
      fail(FN, "argument #%d: %s has size %d here, %d elsewhere", arg, c, n, sizes[c])
    end
    sizes[c] = n
    if at[c] then
      strides[at[c]] = strides[at[c]] + x._strides[i]
    else
      names[#names + 1] = c
      at[c] = #names
      shape[#names], strides[#names] = n, x._strides[i]
    end
  end
  return O.view(x._st, x._type, shape, strides, x._off), names
end

local function index_of(list)
  local at = {}
  for i, c in ipairs(list) do at[c] = i end
  return at
end

-- x (letters names) with the letters in keep only: the others summed.
local function sum_others(x, names, keep)
  local dims, rest = {}, {}
  for i, c in ipairs(names) do
    if keep[c] then rest[#rest + 1] = c else dims[#dims + 1] = i end
  end
  if #dims == 0 then return x, names end
  return x:sum(dims), rest
end

-- x (letters names) permuted to order (every letter of names in it).
local function permuted(x, names, order)
  local at, p = index_of(names), {}
  for i, c in ipairs(order) do p[i] = at[c] end
  if #p == 0 then return x end
  return x:permute(p)
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

function M.einsum(spec, a, b)
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
  local sizes, keep_out = {}, {}
  for _, c in ipairs(out) do keep_out[c] = true end
  local xs, names = {}, {}
  for i = 1, n do xs[i], names[i] = distinct(ops[i], lists[i], sizes, i + 1) end
  if n == 1 then
    local x, nm = sum_others(xs[1], names[1], keep_out)
    return permuted(x, nm, out):contiguous()
  end
  -- letters each side keeps: the output's and the other side's
  local in_a, in_b = index_of(names[1]), index_of(names[2])
  local keep_a, keep_b = {}, {}
  for c in pairs(in_a) do if keep_out[c] or in_b[c] then keep_a[c] = true end end
  for c in pairs(in_b) do if keep_out[c] or in_a[c] then keep_b[c] = true end end
  local A, na = sum_others(xs[1], names[1], keep_a)
  local B, nb = sum_others(xs[2], names[2], keep_b)
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
  local t = TY.promote(A._type, B._type)
  if A._type ~= t then A = A:astype(t) end
  if B._type ~= t then B = B:astype(t) end
  local C, cn
  if FLOATS[t] then
    local sb, sa, sc, sbk = size_of(batch, sizes), size_of(own_a, sizes),
                            size_of(contract, sizes), size_of(own_b, sizes)
    local order_a, order_b = {}, {}
    for _, l in ipairs {batch, own_a, contract} do
      for _, c in ipairs(l) do order_a[#order_a + 1] = c end
    end
    for _, l in ipairs {batch, contract, own_b} do
      for _, c in ipairs(l) do order_b[#order_b + 1] = c end
    end
    local A3 = permuted(A, na, order_a):reshape{sb, sa, sc}
    local B3 = permuted(B, nb, order_b):reshape{sb, sc, sbk}
    C = A3:bmm(B3)
    cn = {}
    for _, l in ipairs {batch, own_a, own_b} do
      for _, c in ipairs(l) do cn[#cn + 1] = c end
    end
    C = C:reshape(shape_of(cn, sizes))
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
    cn = {}
    for _, l in ipairs {batch, own_a, own_b} do
      for _, c in ipairs(l) do cn[#cn + 1] = c end
    end
    if #contract > 0 then
      local dims = {}
      for i = #cn + 1, #all do dims[#dims + 1] = i end
      C = prod:sum(dims)
    else
      C = prod
    end
  end
  return permuted(C, cn, out):contiguous()
end

return M
