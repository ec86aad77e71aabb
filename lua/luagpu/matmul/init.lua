-- luagpu.matmul: C = A * B on a device, row-major, float or double.
--
--   local C, ev, events = matmul(A, B [, C] [, opts])
--
-- A is M x K, B is K x N, C is M x N: 2-D buffers, or 1-D buffers and views
-- with their sizes in opts {m =, n =, k =}. Without C a new M x N buffer is
-- made. opts: {variant =, params =, m =, n =, k =, wait =, queue =,
-- precision =, trans_a =, trans_b =, alpha =, beta =, batch =, event =}.
-- Returns C at once, the Event of the last kernel (ev:wait() returns
-- nothing) and the list of the Events of every command it enqueued, in
-- order; with event = false, C alone (no Event is made: the enqueue costs
-- less).
--
-- The driver: it checks the arguments (args.lua), asks its backends in
-- order (BACKENDS, below: wgmma, mma, gemv, fp32) whether they run the call
-- on its device (probe), takes the steps of the first that does, and runs
-- them (luagpu.core.steps). Steps that depend on nothing but the call and
-- matmul.params are remembered per A, B, C and options, so that the same
-- call again runs them at once, and a call into another C of the same
-- size, offset and device runs them rebound to it (call:with). Every program is built through
-- luagpu.core.programs, family "matmul" (matmul.programs_built).
--
--   matmul.plan(dev, m, n, k [, type [, variant [, params]]])
--   matmul.param_set(dev, name [, type])     matmul.source(variant)
--   matmul.path(dev [, precision [, type]])  matmul.params, matmul.variants
--   matmul.split_edges, matmul.programs_built

local gpu = require "luagpu"
local H = require "luagpu.core.check"
local PR = require "luagpu.core.programs"
local ST = require "luagpu.core.steps"
local P = require "luagpu.matmul.plan"
local ARGS = require "luagpu.matmul.args"
local T = require "luagpu.matmul.tc"
local X = require "luagpu.matmul.blas"
local F = require "luagpu.matmul.fp32"
local mma = require "luagpu.matmul.mma"
local wgmma = require "luagpu.matmul.wgmma"

local type, next, getmetatable, rawget = type, next, getmetatable, rawget
local setmetatable = setmetatable
local gpu_type = gpu.type
local format = string.format
local show = H.show

-- split_edges: false turns the core-and-edges split off (for comparisons).
local M = {split_edges = true}

-- The backends, in the order they are asked: each has probe(dev, c) ({ok
-- = true} where it runs call c on dev) and steps(c) (the steps of c, and
-- the plan they follow when they read matmul.params). fp32 runs every call.
local BACKENDS = {wgmma, mma, X, F}
-- Those whose steps are remembered (they read nothing that changes but
-- matmul.params, whose snapshot is kept with them). A product into another
-- C of the same size takes a remembered entry's steps rebound to it
-- (rebound, below).
local REMEMBERED = {[X] = true, [F] = true}

-- Per device (weak keys): the scratch buffers of the fp32 and BLAS kernels
-- (by type and name), and the last user of them.
local cache = ST.device_cache()

------------------------------------------------------------------ memo

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
                     k = "number", event = "boolean"}

-- The memo key of opts: "" for none; its values, exactly, when it is a
-- plain table of MEMO_FIELDS of their types (no wait, queue, variant, ...);
-- else nil (the call is not remembered).
-- Options tables made by M.internal_options: {m, n, k, trans_a, trans_b,
-- batch, key = their memo key, made once}. A script can reach such a table
-- (M.internal_options is a field like any), so the key serves only while
-- the fields it stands for hold those values (read as matmul reads them);
-- a table written since is one like any, and nothing is remembered under
-- the key of a table that holds more than those fields (remember).
local INTERNAL = setmetatable({}, {__mode = "k"})

local function memo_key(opts)
  if opts == nil then return "" end
  local known = INTERNAL[opts]
  if known then
    if opts.m == known[1] and opts.n == known[2] and opts.k == known[3] and
       opts.trans_a == known[4] and opts.trans_b == known[5] and opts.batch == known[6] and
       opts.event == false and opts.alpha == nil and opts.beta == nil then
      return known.key
    end
    INTERNAL[opts] = nil
  end
  if type(opts) ~= "table" or getmetatable(opts) ~= nil then return nil end
  for f, v in next, opts do
    if MEMO_FIELDS[f] ~= type(v) then return nil end
  end
  return format("%q %q %q %q %q %q %q %q %q", opts.trans_a, opts.trans_b, opts.alpha, opts.beta,
                opts.batch, opts.m, opts.n, opts.k, opts.event)
end

-- Whether a product with options opts may be remembered under its memo
-- key: any table but one of M.internal_options that holds more than it was
-- made with (a metatable, another field).
local function rememberable(opts)
  local known = INTERNAL[opts]
  if not known then return true end
  if getmetatable(opts) ~= nil then return false end
  local keys = 0
  for _ in next, opts do keys = keys + 1 end
  return keys == (known[6] == nil and 6 or 7)
end

-- For luagpu's own callers (x:mm, which keeps them): a new options table
-- {m =, n =, k =, trans_a =, trans_b =, batch =, event = false} of those
-- values (integers and booleans the caller checked; batch nil or an
-- integer), whose memo key is made now, once for the table's life.
function M.internal_options(m, n, k, ta, tb, batch)
  local mt = math.type
  if mt(m) ~= "integer" or mt(n) ~= "integer" or mt(k) ~= "integer" or
     type(ta) ~= "boolean" or type(tb) ~= "boolean" or
     (batch ~= nil and mt(batch) ~= "integer") then
    H.fail("matmul.internal_options", "expected integer sizes, two booleans and an " ..
           "integer batch or nil (for luagpu's own callers, which checked them)")
  end
  local o = {m = m, n = n, k = k, trans_a = ta, trans_b = tb, batch = batch, event = false}
  INTERNAL[o] = {m, n, k, ta, tb, batch, key = memo_key(o)}
  return o
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

-- Remembers steps for A, B, C and key; c: the call they were made for
-- (its root buffers say whether C can be rebound: rebound()).
local function remember(A, B, C, key, steps, params, c)
  local mb = memo[A]
  if not mb then mb = weak(); memo[A] = mb end
  local mc = mb[B]
  if not mc then mc = weak(); mb[B] = mc end
  local mk = mc[C]
  if not mk then mk = {}; mc[C] = mk end
  local r = {steps = steps, split = M.split_edges, params = params, dev = c.dev,
             one = #steps == 1 and steps.scratch == nil and steps[1] or nil,
             no_event = c.opts.event == false,
             -- what another C must match to take these steps (rebound)
             root = c.C, offC = c.offC, t = c.t, count = #C,
             rebind = c.C ~= c.A and c.C ~= c.B and c.A, rootB = c.B}
  mk[key] = r
  return r
end

-- Runs remembered entry r; returns what matmul returns.
local function run_remembered(r, C)
  local one = r.one
  if r.no_event then
    if one then one[1]:run(one[2].global, one[2].local_size, ST.NO_EVENT)
    else ST.run(r.steps, r.dev, nil, {}, true) end
    return C
  end
  if one then                           -- one kernel, nothing to order: run it
    local ev = one[1]:run(one[2].global, one[2].local_size)
    return C, ev, {ev}
  end
  local ev, events = ST.run(r.steps, r.dev, nil, {})
  return C, ev, events
end

-- For a C not remembered with A, B and key: the entry of another C of the
-- same type, size, offset and device, its steps rebound to C's root
-- (call:with), remembered for C. The checks, the backends' walk and the
-- binding of the other arguments are skipped: a product into a new output
-- of the pool each call (x:mm(y)) costs what a remembered one does. Nil
-- when none fits (the full path then checks everything).
local function rebound(A, B, C, key)
  local mb = memo[A]
  local mc = mb and mb[B]
  if not mc or gpu_type(C) ~= "Buffer" or gpu_type(A) ~= "Buffer" or gpu_type(B) ~= "Buffer" then
    return nil
  end
  local Cold, mk = next(mc)
  while Cold ~= nil do
    local r = mk[key]
    if r and r.rebind and r.split == M.split_edges then
      local root = C.root
      if root == r.rebind or root == r.rootB or C.type ~= r.t or #C ~= r.count
         or C.offset ~= r.offC or C.device ~= r.dev
         or not (r.params == nil or P.unchanged(r.params)) or not ST.scratch_current(r.steps) then
        return nil
      end
      local old, steps = r.root, {scratch = r.steps.scratch}
      for i, s in ipairs(r.steps) do steps[i] = {s[1]:with(old, root), s[2], s[3]} end
      local n = {}
      for f, v in next, r do n[f] = v end
      n.steps, n.root = steps, root
      n.one = #steps == 1 and steps.scratch == nil and steps[1] or nil
      local mn = mc[C]
      if not mn then mn = {}; mc[C] = mn end
      mn[key] = n
      return n
    end
    Cold, mk = next(mc, Cold)
  end
end

------------------------------------------------------------------ running

-- C of call c when no product is needed (M, N, K or the batch 0, or alpha
-- 0): C = beta * C, zeros for a beta of 0 (C is then not read).
local function nothing_to_multiply(c)
  local total = (c.batch or 1) * c.m * c.n
  if c.beta == 0 or total == 0 then
    local ev = c.out:fill(0, {wait = c.waits, queue = c.q})
    return c.out, ev, {ev}
  end
  local ev, events = ST.run({X.scale(c.entries, c, total, c.beta, c.C, c.offC)}, c.dev, c.q,
                            c.waits)
  return c.out, ev, events
end

-- The first backend whose probe takes call c.
local function backend_of(c)
  for i = 1, #BACKENDS do
    local b = BACKENDS[i]
    if b.probe(c.dev, c).ok then return b end
  end
end

local matmul_one
local split   -- luagpu.split, loaded when a call asks for several devices

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
    local r = memo_of(A, B, C, key) or rebound(A, B, C, key)
    if r then return run_remembered(r, C) end
  end
  local c = ARGS.check_call(A, B, C, opts)
  c.entries, c.split_edges = ST.device_entries(cache, c.dev), M.split_edges
  if c.m == 0 or c.n == 0 or c.k == 0 or c.batch == 0 or c.alpha == 0 then
    local out, ev, events = nothing_to_multiply(c)
    if c.opts.event == false then return out end
    return out, ev, events
  end
  local precision = c.opts.precision
  if precision and precision ~= "fp32" and not c.batch and c.t ~= "float" then
    H.fail("matmul", "option precision: %s is for float operands, got %s ones", precision, c.t)
  end
  local b = backend_of(c)
  -- a product that asked for the tensor cores on a device without them
  -- still checks their tiles (matmul_mma.params): a script's tiles err on
  -- every machine, not only on the GPU
  if REMEMBERED[b] and T.wants(c) then mma.tiles(c) end
  local steps, pl = b.steps(c)
  if key and REMEMBERED[b] and rememberable(opts) then
    remember(A, B, C, key, steps, pl and P.snapshot(c.dev, pl, c.t), c)
  end
  if c.opts.event == false then
    ST.run(steps, c.dev, c.q, c.waits, true)
    return c.out
  end
  local ev, events = ST.run(steps, c.dev, c.q, c.waits)
  return c.out, ev, events
end

------------------------------------------------------------------ the rest

-- M.path(dev [, precision [, type]]): which kernels a product of that
-- precision runs on dev (luagpu.matmul.mma).
M.path = mma.path

M.params = P.params
M.variants = P.variant_list

-- M.plan(dev, m, n, k [, type [, variant [, params]]]): how matmul would run
-- that product on dev (operands at offset 0): the plan of luagpu.matmul.plan
-- ({variant =, set =, params =, defines =, local_size =, options =, slices =,
-- slice_k =, edges =, ...}, edges {m0 =, n0 =} where a tile-aligned core
-- runs apart from thin edges). For scripts that report or tune.
function M.plan(dev, m, n, k, t, variant, override)
  local fn = "matmul.plan"
  H.check_object(fn, "argument #1", dev, "Device")
  m, n, k = ARGS.check_size(fn, "argument #2", m), ARGS.check_size(fn, "argument #3", n),
            ARGS.check_size(fn, "argument #4", k)
  t = ARGS.check_type(fn, 5, t)
  if variant ~= nil and not P.variants[variant] then
    H.fail(fn, "argument #6: expected %s, got %s", P.variant_words, show(variant))
  end
  if override ~= nil then override = ARGS.check_param_table(fn, "argument #7", override) end
  return P.plan(dev, m, n, k, t, {0, 0, 0}, variant, override, M.split_edges)
end

-- M.param_set(dev, name [, type]): the parameters of set name ("naive",
-- "tiled", "reg", "small", "smaller", "packed") for dev, after the device
-- entries and the double overrides (a new table).
function M.param_set(dev, name, t)
  local fn = "matmul.param_set"
  H.check_object(fn, "argument #1", dev, "Device")
  if not (P.variants[name] or name == "small" or name == "smaller") then
    H.fail(fn, "argument #2: expected \"naive\", \"tiled\", \"reg\", \"small\", " ..
           "\"smaller\" or \"packed\", got %s", show(name))
  end
  return P.param_set(dev, name, ARGS.check_type(fn, 3, t))
end

-- M.source(variant): the OpenCL C source matmul builds for variant (its
-- kernel files put together), to build with a plan's defines and options.
function M.source(variant)
  if not P.variants[variant] then
    H.fail("matmul.source", "argument #1: expected %s, got %s", P.variant_words, show(variant))
  end
  return P.source(variant)
end

setmetatable(M, {__call = function(_, ...) return matmul(...) end})
return PR.counter(M, "matmul")
