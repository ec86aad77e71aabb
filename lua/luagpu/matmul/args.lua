-- luagpu.matmul.args: the checks of luagpu.matmul's arguments (internal to
-- it): operands, options, and the sizes M, N, K and the batch they give.
--
--   A.check_call(A, B, C, opts)           the checked call (see there)
--   A.check_size(fn, what, v)             a size, an integer
--   A.check_type(fn, arg, t)              "float" (default) or "double"
--   A.check_param_table(fn, what, params) a copy of a parameter table
--
-- Errors name "matmul" (H.fail raises at the script's line).

local H = require "luagpu.core.check"
local CM = require "luagpu.matmul.common"
local P = require "luagpu.matmul.plan"

local type, next, ipairs = type, next, ipairs
local format = string.format
local integer, show, typename, to_buffer = H.integer, H.show, H.typename, H.to_buffer

-- Whether v is a tensor (gpu.type says so without loading luagpu.tensor).
local gpu_type = require("luagpu").type
local function is_tensor(v) return type(v) == "table" and gpu_type(v) == "Tensor" end

local FN = "matmul"
local function fail(fmt, ...) H.fail(FN, fmt, ...) end

local SIZES, VARIANTS, VARIANT_WORDS = CM.SIZES, P.variants, P.variant_words
local MAX_SIZE = CM.MAX_SIZE
local NAMES = {"A", "B", "C"}
local DIMS = {{"m", "k"}, {"k", "n"}, {"m", "n"}}
local OPTIONS = H.option_names({"variant", "params", "m", "n", "k", "wait", "queue", "precision",
                                "trans_a", "trans_b", "alpha", "beta", "batch", "event"},
                               "option ")
local PRECISIONS = {fp32 = true, tf32 = true, ["3xtf32"] = true}
local PARAM_NAMES = H.option_names(CM.PARAM_NAMES)

------------------------------------------------------------------ checks

-- Checks a size (what names it in messages: "option m"); returns it as an
-- integer.
local function check_size(fn, what, v)
  local i = integer(v)
  if not (i and i >= 0) then H.fail(fn, "%s: expected an integer >= 0, got %s", what, show(v)) end
  if i > MAX_SIZE then
    H.fail(fn, "%s: %d is too large (sizes must be below 2^31)", what, i)
  end
  return i
end

-- Checks argument #arg to be a live buffer of float or double; returns its
-- type, its root buffer and its offset (elements) in the root.
local function check_operand(arg, b)
  local t, root, offset = H.check_buffer(FN, arg, b)
  if not SIZES[t] then
    fail("argument #%d: expected a buffer of float or double, got one of %s", arg, t)
  end
  return t, root, offset
end

-- A table of parameters (what: where it came from, in messages) as a new
-- table, its names checked; the variant that uses them checks the values.
local function check_param_table(fn, what, params)
  if type(params) ~= "table" then
    H.fail(fn, "%s: expected a table, got %s", what, typename(params))
  end
  H.check_keys(fn, what .. ": ", params, PARAM_NAMES, "parameter")
  local p = {}
  for k, v in next, params do p[k] = v end
  return p
end

-- Checks opts, argument #arg; returns its values, checked, in a new table
-- (sizes integers, wait a new list, params a new table).
local function check_opts(arg, opts)
  local o = H.check_options(FN, arg, opts, OPTIONS)
  for _, d in ipairs{"m", "n", "k"} do
    if o[d] ~= nil then o[d] = check_size(FN, format("argument #%d: option %s", arg, d), o[d]) end
  end
  if o.variant ~= nil and not VARIANTS[o.variant] then
    fail("argument #%d: option variant: expected %s, got %s", arg, VARIANT_WORDS, show(o.variant))
  end
  if o.params ~= nil then
    o.params = check_param_table(FN, format("argument #%d: option params", arg), o.params)
  end
  if o.precision ~= nil and not PRECISIONS[o.precision] then
    fail("argument #%d: option precision: expected \"fp32\", \"tf32\" or \"3xtf32\", got %s",
         arg, show(o.precision))
  end
  for _, f in ipairs{"trans_a", "trans_b", "event"} do
    if o[f] ~= nil and type(o[f]) ~= "boolean" then
      fail("argument #%d: option %s: expected a boolean, got %s", arg, f, show(o[f]))
    end
  end
  for _, f in ipairs{"alpha", "beta"} do
    if o[f] ~= nil and type(o[f]) ~= "number" then
      fail("argument #%d: option %s: expected a number, got %s", arg, f, show(o[f]))
    end
  end
  if o.batch ~= nil then
    o.batch = check_size(FN, format("argument #%d: option batch", arg), o.batch)
  end
  return o
end

-- Argument #arg of fn: an element type, "float" (the default) or "double".
local function check_type(fn, arg, t)
  if t == nil then return "float" end
  if not SIZES[t] then
    H.fail(fn, "argument #%d: expected \"float\" or \"double\", got %s", arg, show(t))
  end
  return t
end

------------------------------------------------------------------ sizes

-- Records size d (m, n or k) as v, learnt from argument #arg (what: how, in
-- messages); raises when it disagrees with what is known.
local function settle(known, d, v, arg, what)
  if v > MAX_SIZE then
    fail("argument #%d: %s: too large (sizes must be below 2^31)", arg, what)
  elseif known.size[d] == nil then
    known.size[d], known.said[d] = v, what
  elseif known.size[d] ~= v then
    fail("argument #%d: %s, but %s", arg, what, known.said[d])
  end
end

local function matrices(n) return n == 1 and "1 matrix" or n .. " matrices" end

-- The number of products of a batched call (opts.batch, or the first size
-- of the 3-D operands: those of A and B may be 1, one matrix shared by the
-- batch), and what said it; nil when the call is not batched.
local function batch_of(ops, opts)
  local nb = opts.batch
  local said = nb and format("option batch is %d", nb)
  for i = 1, 3 do
    local b = ops[i]
    if b and #b.shape == 3 then
      local count = b.shape[1]
      if count ~= 1 or i == 3 or nb == nil then
        if nb == nil then
          nb, said = count, format("%s holds %s", NAMES[i], matrices(count))
        elseif count ~= nb and not (count == 1 and i < 3) then
          fail("argument #%d: %s holds %s, but %s", i, NAMES[i], matrices(count), said)
        end
      end
    end
  end
  return nb, said
end

-- The sizes of a 2-D or 3-D operand i, from its shape (the last two: op(X)
-- has them swapped when X is transposed). A 3-D one counts its matrices.
local function sizes_from_shape(known, i, b)
  local shape = b.shape
  local nd = #shape
  if nd > 3 then
    fail("argument #%d: expected a 2-D or 3-D buffer (or a 1-D one with sizes in opts), got " ..
         "a %d-D one", i, nd)
  elseif nd >= 2 then
    local r, c = shape[nd - 1], shape[nd]
    if known.trans[i] then r, c = c, r end
    local name = known.names[i]
    settle(known, DIMS[i][1], r, i, format("%s has %d rows", name, r))
    settle(known, DIMS[i][2], c, i, format("%s has %d columns", name, c))
    known.count[i] = nd == 3 and shape[1] or 1
  end
end

-- The sizes of a 1-D operand i of n elements that one known size fixes. In
-- a batched call it holds a matrix per product, or (A, B) one shared by all
-- when both sizes are known and its length is one matrix's.
local function sizes_from_length(known, i, n)
  local size, said, nb = known.size, known.said, known.batch
  local r, c = DIMS[i][1], DIMS[i][2]
  local name = known.names[i]
  if size[r] and size[c] then
    local one = size[r] * size[c]
    if nb == nil then
      if one ~= n then
        fail("argument #%d: expected %d elements (%s is %d x %d), got %d", i, one, name,
             size[r], size[c], n)
      end
    elseif n == one * nb then
      known.count[i] = nb
    elseif n == one and i < 3 then
      known.count[i] = 1
    elseif i == 3 then
      fail("argument #%d: expected %d elements (%s of %d x %d, as %s), got %d", i, one * nb,
           matrices(nb), size[r], size[c], known.batch_said, n)
    else
      fail("argument #%d: expected %d elements (%s %s of %d x %d, as %s) or %d (one, shared " ..
           "by the batch), got %d", i, one * nb, matrices(nb), name, size[r], size[c],
           known.batch_said, one, n)
    end
    return
  end
  if nb then
    if nb == 0 then return end
    if n % nb ~= 0 then
      fail("argument #%d: %d elements do not make %s (%s)", i, n, matrices(nb), known.batch_said)
    end
    n = n // nb
  end
  if size[r] and size[r] > 0 then
    if n % size[r] ~= 0 then
      fail("argument #%d: %d elements do not make %d rows (%s)", i, n, size[r], said[r])
    end
    settle(known, c, n // size[r], i, format("%s has %d columns", name, n // size[r]))
  elseif size[c] and size[c] > 0 then
    if n % size[c] ~= 0 then
      fail("argument #%d: %d elements do not make rows of %d (%s)", i, n, size[c], said[c])
    end
    settle(known, r, n // size[c], i, format("%s has %d rows", name, n // size[c]))
  end
end

-- Works out M, N, K from the operands' shapes and opts.m/n/k (trans: {trans_a,
-- trans_b}); raises on any mismatch. ops[i] is the buffer of argument #i (C
-- may be nil). Returns m, n, k, the number of products (nil: not batched) and
-- how many matrices each operand holds ({A, B, C}: 1 or the batch).
local function sizes(ops, opts, trans, shapes)
  -- each operand as its shape and length: a tensor's shape where one was
  -- given (its buffer is a flat view of its elements)
  local given = ops
  ops = {}
  for i = 1, 3 do
    local b = given[i]
    if b then
      local n = #b
      ops[i] = setmetatable({shape = shapes[i] or b.shape}, {__len = function() return n end})
    end
  end
  local nb, bsaid = batch_of(ops, opts)
  local known = {size = {}, said = {}, trans = trans, count = {1, 1, nb or 1}, batch = nb,
                 batch_said = bsaid,
                 names = {trans[1] and "A^T" or "A", trans[2] and "B^T" or "B", "C"}}
  for _, d in ipairs{"m", "n", "k"} do
    if opts[d] then known.size[d], known.said[d] = opts[d], "option " .. d .. " is " .. opts[d] end
  end
  -- 2-D and 3-D operands first: their shapes say everything
  for i = 1, 3 do
    if ops[i] then sizes_from_shape(known, i, ops[i]) end
  end
  -- then 1-D operands (and views): their length fixes one size from the other
  for _ = 1, 2 do
    for i = 1, 3 do
      local b = ops[i]
      if b and #b.shape == 1 then sizes_from_length(known, i, #b) end
    end
  end
  if nb and ops[3] and known.count[3] ~= nb then     -- a 2-D C in a batched call
    fail("argument #3: C holds %s, but %s", matrices(known.count[3]), bsaid)
  end
  local size = known.size
  for i = 1, 3 do
    if ops[i] and not (size[DIMS[i][1]] and size[DIMS[i][2]]) then
      fail("argument #%d: a 1-D buffer needs its sizes: give opts.%s and opts.%s, or a " ..
           "2-D buffer", i, DIMS[i][1], DIMS[i][2])
    end
  end
  return size.m, size.n, size.k, nb, known.count
end

------------------------------------------------------------------ the call

-- Checks that the operands' devices share dev's platform and that dev has
-- doubles where t needs them.
local function check_device(dev, t, ops)
  for i, b in ipairs(ops) do
    local bd = b.device
    if bd ~= dev and bd.platform ~= dev.platform then
      fail("argument #%d: the buffer is on %s, not on %s's platform", i, bd.name, dev.name)
    end
  end
  if t == "double" and not dev.fp64 then
    fail("%s has no double precision (fp64)", dev.name)
  end
end

-- Checks that the given C shares no memory with A or B.
local function check_overlap(c, A, B, C)
  for i, r in ipairs{c.A, c.B} do
    local off, len = i == 1 and c.offA or c.offB, i == 1 and #A or #B
    if r == c.C and off < c.offC + #C and c.offC < off + len then
      fail("argument #3: C overlaps %s (they share memory)", NAMES[i])
    end
  end
end

-- Checks matmul's arguments; returns the call: {A, offA, B, offB, C, offC
-- (root buffers and element offsets), out (the C returned), m, n, k, t,
-- dev, q, waits, opts, trans_a, trans_b (booleans: A stored K x M, B N x K),
-- alpha, beta (numbers), batch (the number of products of a batched call
-- of more than one, else nil) and count ({A, B, C}: how many matrices each
-- holds, 1 or batch)}. Without C a new one is made ({M, N}, or {batch, M, N}
-- for a batched call).
local function check_call(A, B, C, opts)
  local optarg = 4
  -- tensors pass their buffers and their shapes
  local shapes = {}
  for i, v in ipairs{A, B, C} do
    if is_tensor(v) then shapes[i] = v.shape end
  end
  A, B = to_buffer(A, "matmul", "argument #1"), to_buffer(B, "matmul", "argument #2")
  local Cbuf = to_buffer(C, "matmul", "argument #3")
  if Cbuf ~= C then
    C = Cbuf
  elseif opts == nil and type(C) == "table" then
    C, opts, optarg = nil, C, 3
  end
  opts = check_opts(optarg, opts)
  local c = {opts = opts, q = opts.queue, waits = opts.wait}
  local t, tb, tc
  t, c.A, c.offA = check_operand(1, A)
  tb, c.B, c.offB = check_operand(2, B)
  if tb ~= t then fail("argument #2: expected a buffer of %s (as A), got one of %s", t, tb) end
  if C ~= nil then
    tc, c.C, c.offC = check_operand(3, C)
    if tc ~= t then fail("argument #3: expected a buffer of %s (as A), got one of %s", t, tc) end
  end
  c.trans_a, c.trans_b = opts.trans_a == true, opts.trans_b == true
  c.alpha, c.beta = opts.alpha or 1, opts.beta or 0
  local nb, count
  c.m, c.n, c.k, nb, count = sizes({A, B, C}, opts, {c.trans_a, c.trans_b}, shapes)
  if nb and opts.variant and opts.variant ~= "naive" and opts.variant ~= "reg" then
    fail("argument #%d: option variant: a batched product runs \"naive\" or \"reg\", got %s",
         optarg, show(opts.variant))
  end
  if c.beta ~= 0 and C == nil then
    fail("argument #%d: option beta: %s needs C (the third argument) to add to", optarg,
         show(c.beta))
  end
  c.t, c.dev = t, c.q and c.q.device or A.device
  check_device(c.dev, t, {A, B, C})
  if C ~= nil then
    check_overlap(c, A, B, C)
  else
    C = c.dev:buffer(t, nb and {nb, c.m, c.n} or {c.m, c.n})
    c.C, c.offC = C, 0
  end
  c.out = C
  if nb then
    c.batch, c.count = nb, count   -- batch 1: one product, in a 3-D C
    if nb == 1 then c.batch = nil end
  end
  return c
end

return {
  check_call = check_call,
  check_size = check_size,
  check_type = check_type,
  check_param_table = check_param_table,
}
