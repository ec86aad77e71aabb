-- luagpu.matmul: C = A * B on a device, row-major, float or double.
--
--   local C, ev, events = matmul(A, B [, C] [, opts])
--
-- A is M x K, B is K x N, C is M x N: 2-D buffers, or 1-D buffers and views
-- with their sizes in opts {m =, n =, k =}. Without C a new M x N buffer is
-- made. opts: {variant =, params =, m =, n =, k =, wait =, queue =}. Returns
-- C at once, the Event of the last kernel (ev:wait() returns nothing) and the
-- list of the Events of every command it enqueued, in order.
--
-- Four variants (kernels/matmul_*.cl): "naive" (one work-item per element),
-- "tiled" (the textbook local-memory tiles), "reg" (work-group tiles in
-- local memory and a register tile per work-item: GPUs) and "packed" (A and B
-- copied into panels that each work-item streams through with a register
-- tile and no barriers: CPUs). Their parameters are matmul.params
-- (lua/luagpu/matmul_params.lua). A call checks its arguments here, asks
-- luagpu.matmul.plan for a plan (kernels, defines, launch sizes), builds the
-- plan's program once per device, element type, parameters and edge case,
-- and hands both to the launcher of the plan (LAUNCHERS, below).

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local ST = require "luagpu.core.steps"
local P = require "luagpu.matmul.plan"
local X = require "luagpu.matmul.blas"

local type, pairs, next, ipairs, tostring = type, pairs, next, ipairs, tostring
local getmetatable, rawget = getmetatable, rawget
local setmetatable = setmetatable
local gpu_type = gpu.type
local format, concat, sort = string.format, table.concat, table.sort
local integer, show, typename, to_buffer = H.integer, H.show, H.typename, H.to_buffer

-- split_edges: false turns the core-and-edges split off (for comparisons).
local M = {split_edges = true}
-- matmul.programs_built (read through the metatable, below): the builds of
-- the fp32 kernels here, of matmul_blas's and of matmul_mma's together
local built = 0

local FN = "matmul"
local function fail(fmt, ...) H.fail(FN, fmt, ...) end

local SIZES, VARIANTS, VARIANT_WORDS = P.sizes, P.variants, P.variant_words
local MAX_SIZE = P.max_size
local NAMES = {"A", "B", "C"}
local DIMS = {{"m", "k"}, {"k", "n"}, {"m", "n"}}
local OPTIONS = H.option_names({"variant", "params", "m", "n", "k", "wait", "queue", "precision",
                                "trans_a", "trans_b", "alpha", "beta", "batch"}, "option ")
local PRECISIONS = {fp32 = true, tf32 = true, ["3xtf32"] = true}
local PARAM_NAMES = H.option_names(P.param_names)

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
  for _, f in ipairs{"trans_a", "trans_b"} do
    if o[f] ~= nil and type(o[f]) ~= "boolean" then
      fail("argument #%d: option %s: expected a boolean, got %s", arg, f, show(o[f]))
    end
  end
  for _, f in ipairs{"alpha", "beta"} do
    if o[f] ~= nil and type(o[f]) ~= "number" then
      fail("argument #%d: option %s: expected a number, got %s", arg, f, show(o[f]))
    end
  end
  if o.batch ~= nil then o.batch = check_size(FN, format("argument #%d: option batch", arg), o.batch) end
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
local function sizes(ops, opts, trans)
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
  A, B = to_buffer(A), to_buffer(B)
  local Cbuf = to_buffer(C)
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
  c.m, c.n, c.k, nb, count = sizes({A, B, C}, opts, {c.trans_a, c.trans_b})
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

------------------------------------------------------------------ programs

-- Per device (weak keys): programs by key, scratch buffers by type and
-- slot, and the last user of the scratch buffers.
local cache = ST.device_cache()

local function define_string(defines)
  local keys = {}
  for k in pairs(defines) do keys[#keys + 1] = k end
  sort(keys)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = k .. "=" .. tostring(defines[k]) end
  return concat(parts, " ")
end

-- The program of plan pl on dev, built on first use.
local function program(dev, pl)
  local entries = ST.device_entries(cache, dev)
  local key = "program " .. pl.variant .. " " .. define_string(pl.defines) .. " " .. pl.options
  local prog = entries[key]
  if not prog then
    prog = dev:build(P.source(pl.variant), {defines = pl.defines, options = pl.options})
    built = built + 1
    entries[key] = prog
  end
  return prog
end

-- The plan of call c and its program. A core-and-edges plan whose edge
-- kernels' work-groups do not fit is planned again as one kernel.
local function plan_and_program(c)
  local off, o = {c.offA, c.offB, c.offC}, c.opts
  local pl = P.plan(c.dev, c.m, c.n, c.k, c.t, off, o.variant, o.params, M.split_edges)
  local prog = program(c.dev, pl)
  if pl.edges and not P.edge_groups_fit(prog) then
    local override = {edge = 0}
    for f, v in next, o.params or {} do
      if f ~= "edge" then override[f] = v end
    end
    pl = P.plan(c.dev, c.m, c.n, c.k, c.t, off, o.variant, override, M.split_edges)
    prog = program(c.dev, pl)
  end
  return pl, prog
end

------------------------------------------------------------------ launchers

-- Per plan.launcher: the steps of plan pl's kernels of prog for call c, in
-- the order they are enqueued: a list of {Call, launch ({global,
-- local_size}), after}, after nil for a step that follows only c.waits, or
-- the list of the steps it follows (on an out-of-order queue it waits for
-- their Events: ST.after). Each step follows the one before but for the
-- packing kernels, so that the last Event ends them all. The list's
-- scratch, when the kernels use cached scratch buffers: {entries =, [key] =
-- buffer} (their last user is kept in entries).
local LAUNCHERS = {}
local nothing_to_multiply, blas   -- below

-- naive and tiled: one kernel, one work-item per element of C.
function LAUNCHERS.naive(pl, prog, c)
  local kernel = prog["matmul_" .. pl.variant]
  return {{kernel(c.m, c.n, c.k, c.A, c.offA, c.B, c.offB, c.C, c.offC), pl.launches.main}}
end
LAUNCHERS.tiled = LAUNCHERS.naive

-- reg: one kernel over whole tiles (the tile guards handle the edges).
function LAUNCHERS.reg(pl, prog, c)
  return {{prog.matmul_reg(c.m, c.n, c.k, c.k, c.A, c.offA, c.B, c.offB, c.C, c.offC),
           pl.launches.main}}
end

-- reg with the edges apart: the tile-aligned core (rows 0..m0-1, columns
-- 0..n0-1 of C, guard-free), then the bottom rows (full width) and the
-- right columns of the core's rows, each by an edge kernel.
function LAUNCHERS.reg_edges(pl, prog, c)
  local L, m0, n0 = pl.launches, pl.edges.m0, pl.edges.n0
  local m, n, k = c.m, c.n, c.k
  local steps = {{prog.matmul_reg(m0, n, k, k, c.A, c.offA, c.B, c.offB, c.C, c.offC), L.main}}
  if L.rows then
    steps[#steps + 1] = {prog.matmul_rows(m - m0, n, k, c.A, c.offA + m0 * k, k,
                                          c.B, c.offB, n, c.C, c.offC + m0 * n, n),
                         L.rows, {#steps}}
  end
  if L.cols then
    steps[#steps + 1] = {prog.matmul_cols(m0, n - n0, k, c.A, c.offA, k,
                                          c.B, c.offB + n0, n, c.C, c.offC + n0, n),
                         L.cols, {#steps}}
  end
  return steps
end

-- The scratch buffers of pl for call c, cached per device and element
-- type, as a steps list's scratch.
local function scratch(pl, c)
  local entries = ST.device_entries(cache, c.dev)
  local buffers = {entries = entries}
  for name, count in pairs(pl.scratch) do
    local key = "scratch " .. c.t .. " " .. name
    buffers[key] = ST.scratch_buffer(entries, c.dev, key, c.t, count)
  end
  return buffers
end

-- reg with K split in slices: partial products into scratch, then summed.
function LAUNCHERS.reg_split(pl, prog, c)
  local sc = scratch(pl, c)
  local S = sc["scratch " .. c.t .. " slices"]
  return {{prog.matmul_reg(c.m, c.n, c.k, pl.slice_k, c.A, c.offA, c.B, c.offB, S, 0),
           pl.launches.main},
          {prog.matmul_sum(pl.slices, c.m * c.n, S, c.C, c.offC), pl.launches.sum, {1}},
          scratch = sc}
end

-- packed: A and B into panels (scratch), then the product of the panels.
function LAUNCHERS.packed(pl, prog, c)
  local sc = scratch(pl, c)
  local Ap, Bp, L = sc["scratch " .. c.t .. " a_panels"], sc["scratch " .. c.t .. " b_panels"],
                    pl.launches
  return {{prog.pack_a(c.m, c.k, c.A, c.offA, Ap), L.pack_a},
          {prog.pack_b(c.k, c.n, c.B, c.offB, Bp), L.pack_b},
          {prog.matmul_packed(c.m, c.n, c.k, Ap, Bp, c.C, c.offC), L.main, {1, 2}},
          scratch = sc}
end

------------------------------------------------------------------ matmul

-- The steps of products called without options, or with options of
-- MEMO_FIELDS only, per A, B and C (weak keys at each level: a step's Calls
-- hold the buffers, and an entry goes with any of them), then per memo key
-- (memo_key), with what they were made for: {steps, split_edges, params
-- snapshot (nil: the steps read no parameters), dev, one: the step when it
-- is the only one and uses no scratch buffer (run as it is: on the default
-- queue after nothing)}.
local memo = setmetatable({}, {__mode = "k"})

local function weak() return setmetatable({}, {__mode = "k"}) end

local MEMO_FIELDS = {trans_a = "boolean", trans_b = "boolean", alpha = "number",
                     beta = "number", batch = "number", m = "number", n = "number",
                     k = "number"}

-- The memo key of opts: "" for none; its values, exactly, when it is a
-- plain table of MEMO_FIELDS of their types (no wait, queue, variant, ...);
-- else nil (the call is not remembered).
local function memo_key(opts)
  if opts == nil then return "" end
  if type(opts) ~= "table" or getmetatable(opts) ~= nil then return nil end
  for f, v in next, opts do
    if MEMO_FIELDS[f] ~= type(v) then return nil end
  end
  return format("%q %q %q %q %q %q %q %q", opts.trans_a, opts.trans_b, opts.alpha, opts.beta,
                opts.batch, opts.m, opts.n, opts.k)
end

-- The memo of A, B, C and key when it still holds: the three live, and
-- neither matmul.split_edges nor matmul.params changed since, nor the scratch.
local function memo_of(A, B, C, key)
  local mb = memo[A]
  local mc = mb and mb[B]
  local mk = mc and mc[C]
  local r = mk and mk[key]
  if r and r.split == M.split_edges and gpu_type(A) == "Buffer" and gpu_type(B) == "Buffer"
     and gpu_type(C) == "Buffer" and (r.params == nil or P.unchanged(r.params))
     and ST.scratch_current(r.steps) then
    return r
  end
end

local function remember(A, B, C, key, steps, dev, pl, t)
  local mb = memo[A]
  if not mb then mb = weak(); memo[A] = mb end
  local mc = mb[B]
  if not mc then mc = weak(); mb[B] = mc end
  local mk = mc[C]
  if not mk then mk = {}; mc[C] = mk end
  mk[key] = {steps = steps, split = M.split_edges, params = pl and P.snapshot(dev, pl, t),
             dev = dev, one = #steps == 1 and steps.scratch == nil and steps[1] or nil}
end

------------------------------------------------------------------ BLAS

-- C of call c when no product is needed (M, N, K or the batch 0, or alpha
-- 0): C = beta * C, zeros for a beta of 0 (C is then not read).
function nothing_to_multiply(c)
  local total = (c.batch or 1) * c.m * c.n
  if c.beta == 0 or total == 0 then
    local ev = c.out:fill(0, {wait = c.waits, queue = c.q})
    return c.out, ev, {ev}
  end
  local entries = ST.device_entries(cache, c.dev)
  local ev, events = ST.run({X.scale(entries, c, total, c.beta, c.C, c.offC)}, c.dev, c.q,
                             c.waits)
  return c.out, ev, events
end

-- The launchers of batched plans: one launch for the batch, strides per
-- operand (0: one matrix shared by the batch).
function LAUNCHERS.naive_batch(pl, prog, c)
  return {{prog.matmul_naive(c.m, c.n, c.k, c.A, c.offA, c.B, c.offB, c.C, c.offC,
                             c.sA, c.sB, c.sC), pl.launches.main}}
end

function LAUNCHERS.reg_batch(pl, prog, c)
  return {{prog.matmul_reg(c.m, c.n, c.k, c.k, c.A, c.offA, c.B, c.offB, c.C, c.offC,
                           c.sA, c.sB, c.sC), pl.launches.main}}
end

-- The steps of call c with trans_a, trans_b, alpha or beta, or batched,
-- and their plan: transposed operands copied into cached scratch buffers
-- (rows made columns, per matrix), the product into C (into scratch when
-- beta is not 0), then the epilogue (C = alpha * product + beta * C, or
-- C = alpha * C).
function blas(c)
  local entries = ST.device_entries(cache, c.dev)
  local m, n, k, nb = c.m, c.n, c.k, c.batch
  local p = {}
  for f, v in next, c do p[f] = v end
  local pre, post, extra = {}, {}, {}
  local count = c.count or {1, 1, 1}
  p.sA = count[1] > 1 and m * k or 0
  p.sB = count[2] > 1 and k * n or 0
  p.sC = m * n
  if c.trans_a then
    local step, S, key = X.transpose(entries, c, "trans_a", k, m, c.A, c.offA, p.sA, count[1])
    pre[#pre + 1], p.A, p.offA, extra[key] = step, S, 0, S
  end
  if c.trans_b then
    local step, S, key = X.transpose(entries, c, "trans_b", n, k, c.B, c.offB, p.sB, count[2])
    pre[#pre + 1], p.B, p.offB, extra[key] = step, S, 0, S
  end
  local total = (nb or 1) * m * n
  if c.beta ~= 0 then
    local T = ST.scratch_buffer(entries, c.dev, "blas " .. c.t .. " product", c.t, total)
    extra["blas " .. c.t .. " product"] = T
    p.C, p.offC = T, 0
    post[1] = X.axpby(entries, c, total, T, c.C, c.offC)
  elseif c.alpha ~= 1 then
    post[1] = X.scale(entries, c, total, c.alpha, c.C, c.offC)
  end
  local pl, prog
  if nb then
    local o = c.opts
    pl = P.plan(c.dev, m, n, k, c.t, {p.offA, p.offB, p.offC}, o.variant, o.params, false, nb)
    prog = program(c.dev, pl)
  else
    pl, prog = plan_and_program(p)
  end
  local main = LAUNCHERS[pl.launcher](pl, prog, p)
  return X.compose(entries, pre, main, post, extra), pl
end

local matmul_one
local split   -- luagpu.split, loaded when a call asks for several devices
local mma     -- luagpu.matmul.mma, loaded when a call asks for tf32 or 3xtf32

local function matmul(A, B, C, opts)
  local lists = type(A) == "table" and getmetatable(A) == nil and rawget(A, 1) ~= nil
  if lists or type(opts) == "table" and rawget(opts, "devices") ~= nil
     or opts == nil and type(C) == "table" and getmetatable(C) == nil
        and rawget(C, "devices") ~= nil then
    split = split or require "luagpu.split"
    if lists then return split.matmul_list(matmul_one, A, B, C, opts) end
    if opts == nil then return split.matmul_devices(matmul_one, A, B, nil, C, 3) end
    return split.matmul_devices(matmul_one, A, B, C, opts, 4)
  end
  return matmul_one(A, B, C, opts)
end

matmul_one = function(A, B, C, opts)
  local key = C ~= nil and type(C) ~= "table" and memo_key(opts)
  if key then
    local r = memo_of(A, B, C, key)
    if r then
      local one = r.one
      if one then                           -- one kernel, nothing to order: run it
        local ev = one[1]:run(one[2].global, one[2].local_size)
        return C, ev, {ev}
      end
      local ev, events = ST.run(r.steps, r.dev, nil, {})
      return C, ev, events
    end
  end
  local c = check_call(A, B, C, opts)
  if c.m == 0 or c.n == 0 or c.k == 0 or c.batch == 0 or c.alpha == 0 then
    return nothing_to_multiply(c)
  end
  local steps, pl
  if c.batch then
    steps, pl = blas(c)
  else
    local precision = c.opts.precision
    if precision and precision ~= "fp32" then
      mma = mma or require "luagpu.matmul.mma"
      steps = mma.steps(c, precision)   -- nil: no tensor cores here, the fp32 kernels run
      if steps then
        local ev, events = ST.run(steps, c.dev, c.q, c.waits)
        return c.out, ev, events
      end
    end
    if (c.n == 1 or c.m == 1) and not (c.opts.variant or c.opts.params) then
      steps = X.gemv(ST.device_entries(cache, c.dev), c)
    elseif c.trans_a or c.trans_b or c.alpha ~= 1 or c.beta ~= 0 then
      steps, pl = blas(c)
    else
      local prog
      pl, prog = plan_and_program(c)
      steps = LAUNCHERS[pl.launcher](pl, prog, c)
    end
  end
  if key then remember(A, B, C, key, steps, c.dev, pl, c.t) end
  local ev, events = ST.run(steps, c.dev, c.q, c.waits)
  return c.out, ev, events
end

-- M.path(dev [, precision [, type]]): which kernels a product of that
-- precision runs on dev (luagpu.matmul.mma).
function M.path(dev, precision, t)
  mma = mma or require "luagpu.matmul.mma"
  return mma.path(dev, precision, t)
end

M.params = P.params
M.variants = {"naive", "tiled", "reg", "packed"}

-- M.plan(dev, m, n, k [, type [, variant [, params]]]): how matmul would run
-- that product on dev (operands at offset 0): the plan of luagpu.matmul.plan
-- ({variant =, set =, params =, defines =, local_size =, options =, slices =,
-- slice_k =, edges =, ...}, edges {m0 =, n0 =} where a tile-aligned core
-- runs apart from thin edges). For scripts that report or tune.
function M.plan(dev, m, n, k, t, variant, override)
  local fn = "matmul.plan"
  H.check_object(fn, "argument #1", dev, "Device")
  m, n, k = check_size(fn, "argument #2", m), check_size(fn, "argument #3", n),
            check_size(fn, "argument #4", k)
  t = check_type(fn, 5, t)
  if variant ~= nil and not VARIANTS[variant] then
    H.fail(fn, "argument #6: expected %s, got %s", VARIANT_WORDS, show(variant))
  end
  if override ~= nil then override = check_param_table(fn, "argument #7", override) end
  return P.plan(dev, m, n, k, t, {0, 0, 0}, variant, override, M.split_edges)
end

-- M.param_set(dev, name [, type]): the parameters of set name ("naive",
-- "tiled", "reg", "small", "smaller", "packed") for dev, after the device
-- entries and the double overrides (a new table).
function M.param_set(dev, name, t)
  local fn = "matmul.param_set"
  H.check_object(fn, "argument #1", dev, "Device")
  if not (VARIANTS[name] or name == "small" or name == "smaller") then
    H.fail(fn, "argument #2: expected \"naive\", \"tiled\", \"reg\", \"small\", " ..
           "\"smaller\" or \"packed\", got %s", show(name))
  end
  return P.param_set(dev, name, check_type(fn, 3, t))
end

-- M.source(variant): the OpenCL C source matmul builds for variant (its
-- kernel files put together), to build with a plan's defines and options.
function M.source(variant)
  if not VARIANTS[variant] then
    H.fail("matmul.source", "argument #1: expected %s, got %s", VARIANT_WORDS, show(variant))
  end
  return P.source(variant)
end

return setmetatable(M, {
  __call = function(_, ...) return matmul(...) end,
  __index = function(_, k)
    if k == "programs_built" then
      local m = package.loaded["luagpu.matmul.mma"]
      return built + X.programs_built + (type(m) == "table" and m.programs_built or 0)
    end
  end,
})
