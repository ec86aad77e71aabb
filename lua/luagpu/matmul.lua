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
-- luagpu.matmul_plan for a plan (kernels, defines, launch sizes), builds the
-- plan's program once per device, element type, parameters and edge case,
-- and hands both to the launcher of the plan (LAUNCHERS, below).

local gpu = require "luagpu"
local H = require "luagpu.helper"
local P = require "luagpu.matmul_plan"

local type, pairs, next, ipairs, tostring = type, pairs, next, ipairs, tostring
local getmetatable, rawget = getmetatable, rawget
local setmetatable = setmetatable
local gpu_type = gpu.type
local format, concat, sort = string.format, table.concat, table.sort
local integer, show, typename, to_buffer = H.integer, H.show, H.typename, H.to_buffer

-- split_edges: false turns the core-and-edges split off (for comparisons).
local M = {programs_built = 0, split_edges = true}

local FN = "matmul"
local function fail(fmt, ...) H.fail(FN, fmt, ...) end

local SIZES, VARIANTS, VARIANT_WORDS = P.sizes, P.variants, P.variant_words
local MAX_SIZE = P.max_size
local NAMES = {"A", "B", "C"}
local DIMS = {{"m", "k"}, {"k", "n"}, {"m", "n"}}
local OPTIONS = H.option_names({"variant", "params", "m", "n", "k", "wait", "queue"}, "option ")
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

-- The sizes of a 2-D operand i, from its shape.
local function sizes_from_shape(known, i, b)
  local shape = b.shape
  if #shape > 2 then
    fail("argument #%d: expected a 2-D buffer (or a 1-D one with sizes in opts), got a " ..
         "%d-D one", i, #shape)
  elseif #shape == 2 then
    settle(known, DIMS[i][1], shape[1], i, format("%s has %d rows", NAMES[i], shape[1]))
    settle(known, DIMS[i][2], shape[2], i, format("%s has %d columns", NAMES[i], shape[2]))
  end
end

-- The size of a 1-D operand i of n elements that one known size fixes.
local function sizes_from_length(known, i, n)
  local size, said = known.size, known.said
  local r, c = DIMS[i][1], DIMS[i][2]
  if size[r] and size[c] then
    if size[r] * size[c] ~= n then
      fail("argument #%d: expected %d elements (%s is %d x %d), got %d", i,
           size[r] * size[c], NAMES[i], size[r], size[c], n)
    end
  elseif size[r] and size[r] > 0 then
    if n % size[r] ~= 0 then
      fail("argument #%d: %d elements do not make %d rows (%s)", i, n, size[r], said[r])
    end
    settle(known, c, n // size[r], i, format("%s has %d columns", NAMES[i], n // size[r]))
  elseif size[c] and size[c] > 0 then
    if n % size[c] ~= 0 then
      fail("argument #%d: %d elements do not make rows of %d (%s)", i, n, size[c], said[c])
    end
    settle(known, r, n // size[c], i, format("%s has %d rows", NAMES[i], n // size[c]))
  end
end

-- Works out M, N, K from the operands' shapes and opts.m/n/k; raises on
-- any mismatch. ops[i] is the buffer of argument #i (C may be nil).
local function sizes(ops, opts)
  local known = {size = {}, said = {}}
  for _, d in ipairs{"m", "n", "k"} do
    if opts[d] then known.size[d], known.said[d] = opts[d], "option " .. d .. " is " .. opts[d] end
  end
  -- 2-D operands first: their shapes say everything
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
  local size = known.size
  for i = 1, 3 do
    if ops[i] and not (size[DIMS[i][1]] and size[DIMS[i][2]]) then
      fail("argument #%d: a 1-D buffer needs its sizes: give opts.%s and opts.%s, or a " ..
           "2-D buffer", i, DIMS[i][1], DIMS[i][2])
    end
  end
  return size.m, size.n, size.k
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
-- dev, q, waits, opts}. Without C a new one is made.
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
  c.m, c.n, c.k = sizes({A, B, C}, opts)
  c.t, c.dev = t, c.q and c.q.device or A.device
  check_device(c.dev, t, {A, B, C})
  if C ~= nil then
    check_overlap(c, A, B, C)
  else
    C = c.dev:buffer(t, {c.m, c.n})
    c.C, c.offC = C, 0
  end
  c.out = C
  return c
end

------------------------------------------------------------------ programs

-- Per device (weak keys): programs by key, scratch buffers by type and
-- slot, and the last user of the scratch buffers.
local cache = H.device_cache()

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
  local entries = H.device_entries(cache, dev)
  local key = "program " .. pl.variant .. " " .. define_string(pl.defines) .. " " .. pl.options
  local prog = entries[key]
  if not prog then
    prog = dev:build(P.source(pl.variant), {defines = pl.defines, options = pl.options})
    M.programs_built = M.programs_built + 1
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
-- their Events: H.after). Each step follows the one before but for the
-- packing kernels, so that the last Event ends them all. The list's
-- scratch, when the kernels use cached scratch buffers: {entries =, [key] =
-- buffer} (their last user is kept in entries).
local LAUNCHERS = {}

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
  local entries = H.device_entries(cache, c.dev)
  local buffers = {entries = entries}
  for name, count in pairs(pl.scratch) do
    local key = "scratch " .. c.t .. " " .. name
    buffers[key] = H.scratch_buffer(entries, c.dev, key, c.t, count)
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

-- Whether the scratch buffers of steps are still the cached ones (a larger
-- product may have replaced them since).
local function scratch_current(steps)
  local sc = steps.scratch
  if sc == nil then return true end
  local entries = sc.entries
  for key, b in next, sc do
    if key ~= "entries" and entries[key] ~= b then return false end
  end
  return true
end

-- Enqueues steps on q (nil: dev's default queue), the first after the
-- Events in waits (a list it may append to); returns the last Event and
-- the list of all of them (only the last where H.events_wanted says the
-- others need none).
local function enqueue(steps, dev, q, waits)
  local sc = steps.scratch
  if sc then H.wait_for_last_user(sc.entries, q, dev, waits) end
  local events, ordered = {}, H.in_order(q)
  local last = #steps
  if last > 1 and not H.events_wanted(q, dev) then   -- only the last step's Event
    for i = 1, last - 1 do
      local o = {queue = q, event = false}
      if i == 1 then o.wait = waits end
      steps[i][1]:run(steps[i][2].global, steps[i][2].local_size, o)
    end
    local ev = steps[last][1]:run(steps[last][2].global, steps[last][2].local_size,
                                  q and {queue = q} or nil)
    if sc then H.set_last_user(sc.entries, ev, q, dev) end
    return ev, {ev}
  end
  for i = 1, last do
    local s = steps[i]
    local o
    if s[3] == nil then
      o = (q or waits[1]) and {wait = waits, queue = q} or nil  -- nil: call:run's fast path
    elseif ordered then
      o = q and {queue = q} or nil
    else
      local after = {}
      for j, d in ipairs(s[3]) do after[j] = events[d] end
      o = {wait = after, queue = q}
    end
    local launch = s[2]
    events[i] = s[1]:run(launch.global, launch.local_size, o)
  end
  local ev = events[#events]
  if sc then H.set_last_user(sc.entries, ev, q, dev) end
  return ev, events
end

------------------------------------------------------------------ matmul

-- The steps of products called without options, per A, B and C (weak keys
-- at each level: a step's Calls hold the buffers, and an entry goes with
-- any of them), with what they were made for: {steps, split_edges, params
-- snapshot, dev}.
local memo = setmetatable({}, {__mode = "k"})

local function weak() return setmetatable({}, {__mode = "k"}) end

-- The memo of A, B, C when it still holds: the three live, and neither
-- matmul.split_edges nor matmul.params changed since, nor the scratch.
local function memo_of(A, B, C)
  local mb = memo[A]
  local mc = mb and mb[B]
  local r = mc and mc[C]
  if r and r.split == M.split_edges and gpu_type(A) == "Buffer" and gpu_type(B) == "Buffer"
     and gpu_type(C) == "Buffer" and P.unchanged(r.params) and scratch_current(r.steps) then
    return r
  end
end

local function remember(A, B, C, steps, dev, pl, t)
  local mb = memo[A]
  if not mb then mb = weak(); memo[A] = mb end
  local mc = mb[B]
  if not mc then mc = weak(); mb[B] = mc end
  mc[C] = {steps = steps, split = M.split_edges, params = P.snapshot(dev, pl, t), dev = dev}
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
  if opts == nil and C ~= nil then
    local r = memo_of(A, B, C)
    if r then
      local ev, events = enqueue(r.steps, r.dev, nil, {})
      return C, ev, events
    end
  end
  local c = check_call(A, B, C, opts)
  if c.m == 0 or c.n == 0 or c.k == 0 then
    local ev = c.out:fill(0, {wait = c.waits, queue = c.q})
    return c.out, ev, {ev}
  end
  local pl, prog = plan_and_program(c)
  local steps = LAUNCHERS[pl.launcher](pl, prog, c)
  if opts == nil and C ~= nil and type(C) ~= "table" then remember(A, B, C, steps, c.dev, pl, c.t) end
  local ev, events = enqueue(steps, c.dev, c.q, c.waits)
  return c.out, ev, events
end

M.params = P.params
M.variants = {"naive", "tiled", "reg", "packed"}

-- M.plan(dev, m, n, k [, type [, variant [, params]]]): how matmul would run
-- that product on dev (operands at offset 0): the plan of luagpu.matmul_plan
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

return setmetatable(M, {__call = function(_, ...) return matmul(...) end})
