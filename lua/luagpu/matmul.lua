-- luagpu.matmul: C = A * B on a device, row-major, float or double.
--
--   local C, ev = matmul(A, B [, C] [, opts])
--
-- A is M x K, B is K x N, C is M x N: 2-D buffers, or 1-D buffers and views
-- with their sizes in opts {m =, n =, k =}. Without C a new M x N buffer is
-- made. opts: {variant =, params =, m =, n =, k =, wait =, queue =}. Returns
-- C at once, the Event of the last kernel (ev:wait() returns nothing) and the
-- list of the Events of every command it enqueued, in order.
--
-- Four kernels (kernels/matmul_*.cl): "naive" (one work-item per element),
-- "tiled" (the textbook local-memory tiles), "reg" (work-group tiles in
-- local memory and a register tile per work-item: GPUs) and "packed" (A and B
-- copied into panels that each work-item streams through with a register
-- tile and no barriers: CPUs). Their parameters live in one table,
-- matmul.params: per device class, then per device (by name), as found by
-- bench/gpu/tune_matmul.lua. Programs are built once per device, element
-- type, parameters and edge case, and kept while the device lives.

local gpu = require "luagpu"

local type, pairs, next, ipairs, tostring, error = type, pairs, next, ipairs, tostring, error
local rawlen, rawget = rawlen, rawget
local setmetatable = setmetatable
local format, concat, sort = string.format, table.concat, table.sort
local max, mtype, tointeger = math.max, math.type, math.tointeger
-- absent where a sandbox removed the debug library: errors then carry no position
local getinfo = debug and debug.getinfo

-- split_edges: false turns the core-and-edges split off (for comparisons).
local M = {programs_built = 0, split_edges = true}

local FN = "matmul"
local SIZES = {float = 4, double = 8}

-- Parameters per device class ("gpu", "cpu", "accelerator", "other") and per
-- device: a key that is not a class is matched against the device name
-- (case-insensitive substring; the longest match wins) and its fields
-- replace the class's, field by field within each variant. Within a
-- variant, a `double` table replaces fields for double precision. `auto`
-- picks the variant when opts.variant does not; `small` is the reg
-- parameters used when the large tiles would make fewer work-groups than
-- there are compute units; products of at most `tiny` (M*N*K) go naive.
--
--   naive:  lx, ly             work-group size
--   tiled:  TS                 tile size (TS x TS work-items)
--   reg:    BM BN BK           work-group tile;  TM TN  work-item tile
--           VWM VWN            local-memory vector widths;  VLA VLB  global
--           PADA PADB          local padding;  DB  0, 1, 2 (see matmul_reg.cl)
--           groups_per_cu      work-groups resident per compute unit (enables
--                              splitting K, see split_k);  splitk  forces it
--           edge               thin edges: when M and N are at most `edge` past
--                              multiples of BM and BN, the tile-aligned core
--                              runs alone and the edges in matmul_rows and
--                              matmul_cols (see edge_split); 0 or nil: never
--   packed: TM TN VW           register tile and vector width; lx ly group
--   all:    unroll             steps of the K loop unrolled (reg: of BK)
--           fma                fma() rather than mad() (CPUs)
--           options            extra build options
local PARAMS = {
  cpu = {
    auto = "packed", tiny = 32 * 32 * 32,
    naive = {lx = 16, ly = 4},
    tiled = {TS = 16},
    reg = {BM = 16, BN = 16, BK = 8, TM = 4, TN = 4, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
           PADA = 0, PADB = 0, DB = 0, fma = true},
    packed = {TM = 8, TN = 32, VW = 16, lx = 2, ly = 2, fma = true,
              double = {TN = 16, VW = 8}},
  },
  gpu = {
    auto = "reg", tiny = 16 * 16 * 16,
    naive = {lx = 16, ly = 16},
    tiled = {TS = 16},
    reg = {BM = 128, BN = 128, BK = 16, TM = 8, TN = 8, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
           PADA = 4, PADB = 0, DB = 1, edge = 8,
           double = {BM = 64, BN = 64, BK = 16, TM = 4, TN = 4, VWM = 2, VWN = 2,
                     VLA = 2, VLB = 2, PADA = 2, DB = 1}},
    small = {BM = 64, BN = 64, BK = 16, TM = 4, TN = 4, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
             PADA = 4, PADB = 0, DB = 1,
             double = {VWM = 2, VWN = 2, VLA = 2, VLB = 2, PADA = 2}},
    packed = {TM = 4, TN = 8, VW = 4, lx = 16, ly = 8, unroll = 1},
  },
}
-- Device entries, found by bench/gpu/tune_matmul.lua on each device
-- (groups_per_cu from the build log's register count; see docs/PERFORMANCE.md).
PARAMS["NVIDIA H200"] = {   -- NVIDIA CUDA, driver 580.159.04: 50.1 TFLOP/s at 4096
  reg = {BM = 128, BN = 256, BK = 16, TM = 8, TN = 16, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
         PADA = 4, PADB = 0, DB = 1, groups_per_cu = 1},
  small = {BM = 64, BN = 128, BK = 16, TM = 8, TN = 8, VWM = 4, VWN = 4, VLA = 4, VLB = 4,
           PADA = 4, PADB = 0, DB = 1, groups_per_cu = 3},
}
PARAMS.accelerator = PARAMS.gpu
PARAMS.other = PARAMS.gpu
local CLASSES = {gpu = true, cpu = true, accelerator = true, other = true}

local VARIANTS = {naive = true, tiled = true, reg = true, packed = true}
local FILES = {naive = "matmul_naive.cl", tiled = "matmul_tiled.cl", reg = "matmul_reg.cl",
               packed = "matmul_packed.cl"}

-- The bounds of what a script gives. Sizes: the kernels take M, N, K as
-- ints. Parameters: past these a kernel's loops unroll without end (TM =
-- 2^20 kept the compiler busy for hours) or its sizes overflow; the
-- device's work-group and local-memory limits are checked apart.
local MAX_SIZE = (1 << 31) - 1
local MAX_PARAM = {lx = 4096, ly = 4096, TS = 4096, BM = 1024, BN = 1024, BK = 1024,
                   TM = 64, TN = 64, PADA = 256, PADB = 256, unroll = 1024,
                   splitk = 64, groups_per_cu = 1024, edge = MAX_SIZE}
local MAX_ACCUMULATORS = 1024       -- TM x TN: the register tile of a work-item
local MAX_UNROLLED = 8192           -- K steps unrolled x TM x TN (PoCL builds it in 20 s)
local MAX_LOADS = 256               -- reg: vector loads per work-item per tile
local MAX_WAIT = 65535              -- one of the C side's 65536 is for the scratch wait

-- Every parameter's name (see PARAMS above), to check opts.params against.
local PARAM_NAMES = {"lx", "ly", "TS", "BM", "BN", "BK", "TM", "TN", "VWM", "VWN", "VLA",
                     "VLB", "PADA", "PADB", "DB", "groups_per_cu", "splitk", "edge", "VW",
                     "unroll", "fma", "options"}

------------------------------------------------------------------ checks

-- This file's chunk name: the frames that carry it are the helper's own.
local SOURCE = getinfo and getinfo(1, "S").source

-- The level, for the error() in fail, of the first function on the stack
-- that is not this module's: the user's line that called the helper (0, no
-- position, when there is none or no debug library).
local function caller_level()
  if not getinfo then return 0 end
  local level = 3                    -- 1: caller_level, 2: fail, 3: fail's caller
  while true do
    local info = getinfo(level, "S")
    if not info then return 0 end
    if info.source ~= SOURCE then return level - 1 end
    level = level + 1
  end
end

-- Raises "luagpu: FN: message" (fn: matmul.plan and matmul.param_set).
local function fail_in(fn, fmt, ...)
  error("luagpu: " .. fn .. ": " .. format(fmt, ...), caller_level())
end

local function fail(fmt, ...)
  fail_in(FN, fmt, ...)
end

-- The class of a luagpu object ("Buffer") and whether it was released;
-- nil for other values.
local function class_of(v)
  local t = gpu.type(v)
  if t == nil then return nil end
  local live = t:match("^released (.*)")
  return live or t, live ~= nil
end

-- The class of a luagpu object ("luagpu.Buffer", released or not); other
-- values: their Lua type.
local function typename(v)
  local t = class_of(v)
  return t and "luagpu." .. t or type(v)
end

-- v for a message: numbers and booleans as Lua writes them, strings quoted,
-- anything else by its type.
local function show(v)
  local t = type(v)
  if t == "number" or t == "boolean" then return tostring(v) end
  if t == "string" then return format("%q", v) end
  return typename(v)
end

-- v as an integer when it is a number with an integral value, else nil
-- (math.tointeger alone would also convert strings).
local function integer(v)
  return mtype(v) and tointeger(v)
end

-- Whether the luagpu object v was released.
local function released(v)
  local _, gone = class_of(v)
  return gone
end

-- Checks a size (what names it in messages: "option m"); returns it as an
-- integer.
local function check_size(fn, what, v)
  local i = integer(v)
  if not (i and i >= 0) then fail_in(fn, "%s: expected an integer >= 0, got %s", what, show(v)) end
  if i > MAX_SIZE then
    fail_in(fn, "%s: %d is too large (sizes must be below 2^31)", what, i)
  end
  return i
end

-- The table t[key] of the parameters (where: its name in messages), or an
-- empty one.
local function subtable(t, key, where)
  local v = t[key]
  if v == nil then return {} end
  if type(v) ~= "table" then fail("%s: expected a table, got %s", where, typename(v)) end
  return v
end

------------------------------------------------------------------ parameters

-- The variant tables of dev's class with those of the device entries that
-- match its name laid over them (longest key last, so it wins).
local function device_params(dev)
  local cname = PARAMS[dev.type] ~= nil and dev.type or "gpu"
  local cls = subtable(PARAMS, cname, "matmul.params." .. cname)
  local name, hits = dev.name:lower(), {}
  for key in pairs(PARAMS) do
    if not CLASSES[key] and type(key) == "string" and name:find(key:lower(), 1, true) then
      hits[#hits + 1] = key
    end
  end
  if #hits == 0 then return cls end
  sort(hits, function(a, b) return #a < #b end)
  local merged = {}
  for k, v in pairs(cls) do merged[k] = v end
  for _, key in ipairs(hits) do
    for k, v in pairs(subtable(PARAMS, key, format("matmul.params[%q]", key))) do
      local base = merged[k]
      if type(v) == "table" and type(base) == "table" then
        -- a variant table: the device's fields over the class's (their
        -- double tables likewise)
        local t = {}
        for f, x in pairs(base) do t[f] = x end
        for f, x in pairs(v) do t[f] = x end
        if type(base.double) == "table" and type(v.double) == "table" then
          t.double = {}
          for f, x in pairs(base.double) do t.double[f] = x end
          for f, x in pairs(v.double) do t.double[f] = x end
        end
        v = t
      end
      merged[k] = v
    end
  end
  return merged
end

-- The parameters of one variant for element type t: the table's, the
-- `double` overrides, then override (opts.params, checked), in a new table.
local function variant_params(set, variant, t, override)
  local p = {}
  local vt = subtable(set, variant, variant .. " parameters")
  for k, v in pairs(vt) do
    if k ~= "double" then p[k] = v end
  end
  if t == "double" and vt.double ~= nil then
    local dt = subtable(vt, "double", variant .. " parameters: double")
    -- the occupancy found for float does not hold for other tiles
    if dt.groups_per_cu == nil then p.groups_per_cu = nil end
    for k, v in pairs(dt) do p[k] = v end
  end
  for k, v in next, override or {} do p[k] = v end
  return p
end

local function need(cond, variant, fmt, ...)
  if not cond then fail("%s parameters: " .. fmt, variant, ...) end
end

-- p[name] as an integer from lo (default 1) to MAX_PARAM[name].
local function int_param(p, variant, name, lo)
  local v = p[name]
  local i = integer(v)
  lo = lo or 1
  need(i and i >= lo, variant, "%s: expected %s, got %s", name,
       lo == 1 and "a positive integer" or "an integer >= 0", show(v))
  need(i <= MAX_PARAM[name], variant, "%s: %d is too large (at most %d)", name, i,
       MAX_PARAM[name])
  return i
end

local WIDTHS = {[1] = true, [2] = true, [4] = true, [8] = true, [16] = true}

local function width_param(p, variant, name)
  local v = integer(p[name])
  need(WIDTHS[v], variant, "%s: expected a vector width (1, 2, 4, 8 or 16), got %s", name,
       show(p[name]))
  return v
end

-- Checks reg's knobs that are not build defines, and makes them integers
-- in p: groups_per_cu and splitk (nil or positive), edge (nil, false or >= 0).
local function check_reg_knobs(p)
  for _, k in ipairs{"groups_per_cu", "splitk"} do
    if p[k] ~= nil then p[k] = int_param(p, "reg", k) end
  end
  if p.edge then p.edge = int_param(p, "reg", "edge", 0) end
end

-- Checks the register tile d.TM x d.TN of reg and packed, and the K loop
-- unrolled over it (steps: unroll, else reg's BK).
local function check_unrolled(variant, d)
  local acc = d.TM * d.TN
  need(acc <= MAX_ACCUMULATORS, variant,
       "TM x TN = %d x %d = %d sums per work-item, at most %d", d.TM, d.TN, acc, MAX_ACCUMULATORS)
  local steps, what = d.UNROLLK, "unroll"
  if not steps then steps, what = variant == "reg" and d.BK or 1, "BK" end
  need(steps * acc <= MAX_UNROLLED, variant,
       "%s (%d) x TM (%d) x TN (%d) = %d multiply-adds unrolled, at most %d",
       what, steps, d.TM, d.TN, steps * acc, MAX_UNROLLED)
end

-- Checks the parameters of a variant against each other and the device;
-- returns the build defines, the work-group size and the local memory used.
-- Every integer is bounded first, so that no product below overflows.
local function check_params(variant, p, dev, size)
  local d, lsz, lmem = {}, nil, 0
  if p.unroll ~= nil then d.UNROLLK = int_param(p, variant, "unroll") end
  need(p.fma == nil or type(p.fma) == "boolean", variant, "fma: expected true or false, got %s",
       show(p.fma))
  if p.fma then d.FMA = 1 end
  need(p.options == nil or type(p.options) == "string", variant,
       "options: expected a string of build options, got %s", show(p.options))
  if variant == "naive" then
    lsz = {int_param(p, variant, "lx"), int_param(p, variant, "ly")}
  elseif variant == "tiled" then
    local ts = int_param(p, variant, "TS")
    d.TS, lsz, lmem = ts, {ts, ts}, (2 * ts * ts + ts) * size
  elseif variant == "reg" then
    for _, k in ipairs{"BM", "BN", "BK", "TM", "TN"} do d[k] = int_param(p, variant, k) end
    for _, k in ipairs{"VWM", "VWN", "VLA", "VLB"} do d[k] = width_param(p, variant, k) end
    for _, k in ipairs{"PADA", "PADB"} do
      if p[k] == nil then p[k] = 0 end
      d[k] = int_param(p, variant, k, 0)
    end
    d.DB = integer(p.DB or 0)
    need(d.DB == 0 or d.DB == 1 or d.DB == 2, variant, "DB: expected 0, 1 or 2, got %s",
         show(p.DB))
    check_reg_knobs(p)
    need(d.BM % d.TM == 0 and d.BN % d.TN == 0, variant,
         "BM (%d) and BN (%d) must be multiples of TM (%d) and TN (%d)", d.BM, d.BN, d.TM, d.TN)
    need(d.TM % d.VWM == 0 and d.TN % d.VWN == 0, variant,
         "TM (%d) and TN (%d) must be multiples of VWM (%d) and VWN (%d)",
         d.TM, d.TN, d.VWM, d.VWN)
    need((d.PADA % d.VWM == 0) and (d.PADB % d.VWN == 0), variant,
         "PADA (%d) and PADB (%d) must be multiples of VWM (%d) and VWN (%d)",
         d.PADA, d.PADB, d.VWM, d.VWN)
    check_unrolled(variant, d)
    local nt = (d.BM // d.TM) * (d.BN // d.TN)
    need(d.BK % d.VLA == 0 and (d.BM * d.BK) % (d.VLA * nt) == 0, variant,
         "the A tile (BM*BK = %d) must split into VLA-vectors (%d) over the %d work-items",
         d.BM * d.BK, d.VLA, nt)
    need(d.BN % d.VLB == 0 and (d.BK * d.BN) % (d.VLB * nt) == 0, variant,
         "the B tile (BK*BN = %d) must split into VLB-vectors (%d) over the %d work-items",
         d.BK * d.BN, d.VLB, nt)
    local na, nb = d.BM * d.BK // (d.VLA * nt), d.BK * d.BN // (d.VLB * nt)
    need(na <= MAX_LOADS and nb <= MAX_LOADS, variant,
         "the A and B tiles take %d and %d vector loads per work-item, at most %d",
         na, nb, MAX_LOADS)
    lsz = {d.BN // d.TN, d.BM // d.TM}
    lmem = (d.DB == 2 and 2 or 1) * d.BK * (d.BM + d.PADA + d.BN + d.PADB) * size
  else -- packed
    for _, k in ipairs{"TM", "TN"} do d[k] = int_param(p, variant, k) end
    d.VW = width_param(p, variant, "VW")
    need(d.TN % d.VW == 0, variant, "TN (%d) must be a multiple of VW (%d)", d.TN, d.VW)
    check_unrolled(variant, d)
    lsz = {int_param(p, variant, "lx"), int_param(p, variant, "ly")}
  end
  local wg, most = lsz[1] * lsz[2], dev.max_work_item_sizes
  need(wg <= dev.max_work_group_size, variant,
       "work-groups of %d x %d = %d work-items, the device allows %d",
       lsz[1], lsz[2], wg, dev.max_work_group_size)
  need(lsz[1] <= most[1] and lsz[2] <= most[2], variant,
       "work-groups of %d x %d, the device allows at most %d x %d", lsz[1], lsz[2],
       most[1], most[2])
  need(lmem <= dev.local_mem_size, variant,
       "the tiles need %d bytes of local memory, the device has %d", lmem, dev.local_mem_size)
  return d, lsz
end

------------------------------------------------------------------ programs

-- Built programs per device (weak keys: they go with the device) and key.
local programs = setmetatable({}, {__mode = "k"})
-- Packing buffers per device and element type, grown as needed.
local scratch = setmetatable({}, {__mode = "k"})

local function define_string(defines)
  local keys = {}
  for k in pairs(defines) do keys[#keys + 1] = k end
  sort(keys)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = k .. "=" .. tostring(defines[k]) end
  return concat(parts, " ")
end

-- The program for variant on dev with the given defines and options.
local function program(dev, variant, defines, options)
  local key = variant .. " " .. define_string(defines) .. " " .. options
  local per_dev = programs[dev]
  if not per_dev then
    per_dev = {}
    programs[dev] = per_dev
  end
  local prog = per_dev[key]
  if not prog then
    prog = dev:build(gpu.kernel_source(FILES[variant]), {defines = defines, options = options})
    M.programs_built = M.programs_built + 1
    per_dev[key] = prog
  end
  return prog
end

local function round_up(x, m)
  return (x + m - 1) // m * m
end

local function ceil_div(x, m)
  return (x + m - 1) // m
end

-- A buffer of at least n elements of t on dev for packing (slot 1 or 2).
local function scratch_buffer(dev, t, slot, n)
  local per_dev = scratch[dev]
  if not per_dev then
    per_dev = {}
    scratch[dev] = per_dev
  end
  local key = t .. slot
  local b = per_dev[key]
  if not b or #b < n then
    if b then b:release() end
    b = dev:buffer(t, max(n, 1))
    per_dev[key] = b
  end
  return b
end

------------------------------------------------------------------ arguments

-- Checks argument #arg to be a live buffer of float or double; returns its
-- type, its root buffer and its offset (elements) in the root.
local function check_operand(arg, b)
  if typename(b) ~= "luagpu.Buffer" then
    fail("argument #%d: expected a buffer, got %s", arg, typename(b))
  end
  if released(b) then
    fail("argument #%d: attempt to use a released buffer", arg)
  end
  local t = b.type
  if not SIZES[t] then
    fail("argument #%d: expected a buffer of float or double, got one of %s", arg, t)
  end
  local root = b
  while root.parent do root = root.parent end
  return t, root, b.offset
end

local OPTIONS = {"variant", "params", "m", "n", "k", "wait", "queue"}
local OPTION_SET, PARAM_SET = {}, {}
for _, k in ipairs(OPTIONS) do OPTION_SET[k] = true end
for _, k in ipairs(PARAM_NAMES) do PARAM_SET[k] = true end
local VARIANT_WORDS = '"naive", "tiled", "reg" or "packed"'

-- A table of parameters (what: where it came from, in messages) as a new
-- table, its names checked; the variant that uses them checks the values.
local function check_param_table(fn, what, params)
  if type(params) ~= "table" then
    fail_in(fn, "%s: expected a table, got %s", what, typename(params))
  end
  local p = {}
  for k, v in next, params do
    if not PARAM_SET[k] then
      fail_in(fn, "%s: unknown parameter '%s' (expected %s)", what, tostring(k),
              concat(PARAM_NAMES, ", "))
    end
    p[k] = v
  end
  return p
end

-- Checks ev, in the wait option of argument #arg (i: its place in the list).
local function check_event(arg, ev, i)
  local where = i and "wait[" .. i .. "]" or "wait"
  if typename(ev) ~= "luagpu.Event" then
    fail("argument #%d: option %s: expected a luagpu.Event, got %s", arg, where, typename(ev))
  end
  if released(ev) then
    fail("argument #%d: option %s: attempt to use a released event", arg, where)
  end
end

-- The wait option of argument #arg (nil, an Event or a list of Events) as
-- a new list, checked. A list is read raw, as the C side reads one: its
-- metatable's __len and __index are not called.
local function check_wait(arg, w)
  local list = {}
  if w == nil then return list end
  if type(w) ~= "table" then
    check_event(arg, w)
    list[1] = w
    return list
  end
  local n = rawlen(w)
  if n > MAX_WAIT then
    fail("argument #%d: option wait: %d events are too many (at most %d)", arg, n, MAX_WAIT)
  end
  for i = 1, n do
    local ev = rawget(w, i)
    check_event(arg, ev, i)
    list[i] = ev
  end
  return list
end

-- Checks opts, argument #arg; returns its values, checked, in a new table
-- (sizes integers, wait a new list, params a new table).
local function check_opts(arg, opts)
  if opts == nil then return {wait = {}} end
  if type(opts) ~= "table" then
    fail("argument #%d: expected an options table, got %s", arg, typename(opts))
  end
  for k in next, opts do
    if not OPTION_SET[k] then
      fail("argument #%d: unknown option '%s' (expected %s)", arg, tostring(k),
           concat(OPTIONS, ", "))
    end
  end
  local o = {wait = check_wait(arg, opts.wait), variant = opts.variant, queue = opts.queue}
  for _, d in ipairs{"m", "n", "k"} do
    local v = opts[d]
    if v ~= nil then o[d] = check_size(FN, format("argument #%d: option %s", arg, d), v) end
  end
  if o.variant ~= nil and not VARIANTS[o.variant] then
    fail("argument #%d: option variant: expected %s, got %s", arg, VARIANT_WORDS, show(o.variant))
  end
  local params = opts.params
  if params ~= nil then
    o.params = check_param_table(FN, format("argument #%d: option params", arg), params)
  end
  local q = o.queue
  if q ~= nil then
    if typename(q) ~= "luagpu.Queue" then
      fail("argument #%d: option queue: expected a luagpu.Queue, got %s", arg, typename(q))
    end
    if released(q) then
      fail("argument #%d: option queue: attempt to use a released queue", arg)
    end
  end
  return o
end

-- Checks argument #1 of fn (matmul.plan, matmul.param_set) to be a device.
local function check_device(fn, dev)
  if typename(dev) ~= "luagpu.Device" then
    fail_in(fn, "argument #1: expected a luagpu.Device, got %s", typename(dev))
  end
end

-- Argument #arg of fn: an element type, "float" (the default) or "double".
local function check_type(fn, arg, t)
  if t == nil then return "float" end
  if not SIZES[t] then
    fail_in(fn, "argument #%d: expected \"float\" or \"double\", got %s", arg, show(t))
  end
  return t
end

local NAMES = {"A", "B", "C"}
local DIMS = {{"m", "k"}, {"k", "n"}, {"m", "n"}}

-- Works out M, N, K from the operands' shapes and opts.m/n/k; raises on
-- any mismatch. ops[i] is the buffer of argument #i (C may be nil).
local function sizes(ops, opts)
  local size, said = {}, {}
  for _, d in ipairs{"m", "n", "k"} do
    if opts[d] then size[d], said[d] = opts[d], "option " .. d .. " is " .. opts[d] end
  end
  local function set(d, v, arg, what)
    if v > MAX_SIZE then
      fail("argument #%d: %s: too large (sizes must be below 2^31)", arg, what)
    elseif size[d] == nil then
      size[d], said[d] = v, what
    elseif size[d] ~= v then
      fail("argument #%d: %s, but %s", arg, what, said[d])
    end
  end
  -- 2-D operands first: their shapes say everything
  for i = 1, 3 do
    local b = ops[i]
    if b then
      local shape = b.shape
      if #shape > 2 then
        fail("argument #%d: expected a 2-D buffer (or a 1-D one with sizes in opts), got a " ..
             "%d-D one", i, #shape)
      elseif #shape == 2 then
        set(DIMS[i][1], shape[1], i, format("%s has %d rows", NAMES[i], shape[1]))
        set(DIMS[i][2], shape[2], i, format("%s has %d columns", NAMES[i], shape[2]))
      end
    end
  end
  -- then 1-D operands (and views): their length fixes one size from the other
  for _ = 1, 2 do
    for i = 1, 3 do
      local b = ops[i]
      if b and #b.shape == 1 then
        local r, c = DIMS[i][1], DIMS[i][2]
        local n = #b
        if size[r] and size[c] then
          if size[r] * size[c] ~= n then
            fail("argument #%d: expected %d elements (%s is %d x %d), got %d", i,
                 size[r] * size[c], NAMES[i], size[r], size[c], n)
          end
        elseif size[r] and size[r] > 0 then
          if n % size[r] ~= 0 then
            fail("argument #%d: %d elements do not make %d rows (%s)", i, n, size[r], said[r])
          end
          set(c, n // size[r], i, format("%s has %d columns", NAMES[i], n // size[r]))
        elseif size[c] and size[c] > 0 then
          if n % size[c] ~= 0 then
            fail("argument #%d: %d elements do not make rows of %d (%s)", i, n, size[c], said[c])
          end
          set(r, n // size[c], i, format("%s has %d rows", NAMES[i], n // size[c]))
        end
      end
    end
  end
  for i = 1, 3 do
    local b = ops[i]
    if b and not (size[DIMS[i][1]] and size[DIMS[i][2]]) then
      fail("argument #%d: a 1-D buffer needs its sizes: give opts.%s and opts.%s, or a " ..
           "2-D buffer", i, DIMS[i][1], DIMS[i][2])
    end
  end
  return size.m, size.n, size.k
end

------------------------------------------------------------------ matmul

-- The variant to run when opts.variant does not say: naive for tiny
-- products, else the class's choice.
local function pick_variant(set, m, n, k)
  local tiny, auto = set.tiny or 0, set.auto or "reg"
  local most = integer(tiny)
  if not (most and most >= 0) then
    fail("parameter tiny: expected an integer >= 0, got %s", show(tiny))
  end
  if not VARIANTS[auto] then
    fail("parameter auto: expected %s, got %s", VARIANT_WORDS, show(auto))
  end
  -- m * n * k <= tiny, without the product (which could overflow)
  if k == 0 or m * n <= most // k then return "naive" end
  return auto
end

-- How many slices of K the reg kernel splits an m x n x k product into,
-- and the length of each (a multiple of BK). The tiles are handed out to
-- the compute units in waves of groups_per_cu x compute units; when the
-- last wave would be mostly idle (M or N just past a multiple of the tile:
-- 4097 takes 5 waves where 4096 takes 4), cutting K into S slices makes
-- S times as many groups, S times shorter, so the waves fit better; the
-- slices are then added (matmul_sum), which costs a pass over S+1 copies of
-- C, weighed against the product at 12.5 flops per byte moved. Needs
-- groups_per_cu in the parameters (found by the tuning sweep); `splitk`
-- forces a count.
local function split_k(p, d, dev, m, n, k, size)
  local s = p.splitk
  if k == 0 then return 1, 0 end
  if s == nil then
    local occ = p.groups_per_cu
    -- only past a multiple of the tile: at 2048 on the H200 (small set, 3
    -- groups per compute unit) splitting was slower although the model
    -- favoured it; at 2047 and 4097 it was faster
    if not occ or (m % d.BM == 0 and n % d.BN == 0) then return 1, k end
    local slots = dev.compute_units * occ
    local w = ceil_div(m, d.BM) * ceil_div(n, d.BN)
    if w < slots then return 1, k end   -- less than a wave: the small set's job
    local best_cost = ceil_div(w, slots)
    s = 1
    for try = 2, 4 do
      local ks = round_up(ceil_div(k, try), d.BK)
      local sl = ceil_div(k, ks)
      if ks >= 16 * d.BK and sl > 1 then
        local cost = ceil_div(sl * w, slots) / sl + w / slots * (sl + 1) * size * 12.5 / (2 * k)
        if cost < best_cost * 0.97 then s, best_cost = sl, cost end
      end
    end
  end
  local ks = round_up(ceil_div(k, s), d.BK)
  return ceil_div(k, ks), ks
end

-- Whether an m x n product with reg's tiles d splits into a tile-aligned
-- core and thin edges (see matmul_rows in matmul_reg.cl): M and N at most
-- p.edge past multiples of BM and BN, the core at least a wave of work-
-- groups, and no forced split of K. Returns the core's rows and columns.
local function edge_split(p, d, dev, m, n)
  local edge = p.edge
  if not M.split_edges or not edge or edge == 0 or p.splitk then return nil end
  local em, en = m % d.BM, n % d.BN
  local m0, n0 = m - em, n - en
  if (em == 0 and en == 0) or em > edge or en > edge or m0 == 0 or n0 == 0
     or (m0 // d.BM) * (n0 // d.BN) < dev.compute_units
     or dev.max_work_group_size < 256 then
    return nil
  end
  return m0, n0
end

-- How an m x k by k x n product of t on dev runs, operands at the given
-- offsets: {variant, set (the name of the parameter table used), params,
-- defines, local_size, options}. variant and override: opts.variant and
-- opts.params (checked).
local function plan(dev, m, n, k, t, offA, offB, offC, variant, override)
  local set = device_params(dev)
  local forced = variant
  variant = variant or pick_variant(set, m, n, k)
  local pset = variant
  if variant == "reg" and not forced and set.small then
    local p = variant_params(set, "reg", t)
    local bm, bn = integer(p.BM), integer(p.BN)
    if bm and bn and bm > 0 and bn > 0
       and ceil_div(m, bm) * ceil_div(n, bn) < dev.compute_units then
      pset = "small"
    end
  end
  local p = variant_params(set, pset, t, override)
  local d, lsz = check_params(variant, p, dev, SIZES[t])
  d.REAL = t
  local slices, slice_k, edges = 1, k, nil
  if variant == "reg" then
    local m0, n0 = edge_split(p, d, dev, m, n)
    if m0 then
      -- the core: m0 x n0, not split (matmul_reg with M = m0 and N = n,
      -- as the row length of B and C, on a grid of n0 columns)
      edges = {m0 = m0, n0 = n0}
    else
      slices, slice_k = split_k(p, d, dev, m, n, k, SIZES[t])
    end
    local mc, nc = m0 or m, n0 or n
    if slices > 1 then d.SPLITK = 1 end
    if k % d.VLA == 0 and offA % d.VLA == 0 then d.ALIGNA = 1 end
    if n % d.VLB == 0 and offB % d.VLB == 0 then d.ALIGNB = 1 end
    d.VSC = (n % d.VWN == 0 and offC % d.VWN == 0) and 1 or 0
    if mc % d.BM == 0 and nc % d.BN == 0 and k % d.BK == 0 then d.EVEN = 1 end
    if k % d.BK ~= 0 then d.KTAIL = 1 end
  elseif variant == "packed" then
    d.VSC = (n % d.VW == 0 and offC % d.VW == 0) and 1 or 0
  end
  return {variant = variant, set = pset, params = p, defines = d, local_size = lsz,
          options = "-cl-mad-enable" .. (p.options and " " .. p.options or ""),
          slices = slices, slice_k = slice_k, edges = edges}
end

local function matmul(A, B, C, opts)
  local optarg = 4
  if opts == nil and type(C) == "table" then C, opts, optarg = nil, C, 3 end
  opts = check_opts(optarg, opts)
  local ta, rootA, offA = check_operand(1, A)
  local tb, rootB, offB = check_operand(2, B)
  if tb ~= ta then fail("argument #2: expected a buffer of %s (as A), got one of %s", ta, tb) end
  local rootC, offC
  if C ~= nil then
    local tc
    tc, rootC, offC = check_operand(3, C)
    if tc ~= ta then fail("argument #3: expected a buffer of %s (as A), got one of %s", ta, tc) end
  end
  local m, n, k = sizes({A, B, C}, opts)
  local t, q = ta, opts.queue
  local dev = q and q.device or A.device
  for i, b in ipairs{A, B, C} do
    local bd = b.device
    if bd ~= dev and bd.platform ~= dev.platform then
      fail("argument #%d: the buffer is on %s, not on %s's platform", i, bd.name, dev.name)
    end
  end
  if t == "double" and not dev.fp64 then
    fail("%s has no double precision (fp64)", dev.name)
  end
  if C ~= nil then
    for i, r in ipairs{rootA, rootB} do
      local off, len = i == 1 and offA or offB, i == 1 and #A or #B
      if r == rootC and off < offC + #C and offC < off + len then
        fail("argument #3: C overlaps %s (they share memory)", NAMES[i])
      end
    end
  else
    C = dev:buffer(t, {m, n})
    rootC, offC = C, 0
  end
  if m == 0 or n == 0 or k == 0 then
    local ev = C:fill(0, {wait = opts.wait, queue = q})
    return C, ev, {ev}
  end

  local pl = plan(dev, m, n, k, t, offA, offB, offC, opts.variant, opts.params)
  local prog = program(dev, pl.variant, pl.defines, pl.options)
  if pl.edges and (prog.matmul_rows.work_group_size < 256
                   or prog.matmul_cols.work_group_size < 256) then
    -- the edge kernels' work-groups do not fit: one kernel after all
    local override = {edge = 0}
    for f, v in next, opts.params or {} do
      if f ~= "edge" then override[f] = v end
    end
    pl = plan(dev, m, n, k, t, offA, offB, offC, opts.variant, override)
    prog = program(dev, pl.variant, pl.defines, pl.options)
  end
  local variant, d, lsz = pl.variant, pl.defines, pl.local_size
  local waits = opts.wait
  local run_opts = {wait = waits, queue = q}
  local ev
  if variant == "naive" or variant == "tiled" then
    local kern = variant == "naive" and prog.matmul_naive or prog.matmul_tiled
    ev = kern(m, n, k, rootA, offA, rootB, offB, rootC, offC)
      :run({round_up(n, lsz[1]), round_up(m, lsz[2])}, lsz, run_opts)
    return C, ev, {ev}
  end
  local inorder = q == nil or not q.out_of_order
  if pl.edges then
    -- the tile-aligned core, then the edge rows (all columns) and the edge
    -- columns (the core's rows), one after another (on an out-of-order
    -- queue each waits for the one before, so that ev ends them all)
    local m0, n0 = pl.edges.m0, pl.edges.n0
    local events = {}
    events[1] = prog.matmul_reg(m0, n, k, k, rootA, offA, rootB, offB, rootC, offC)
      :run({n0 // d.BN * lsz[1], m0 // d.BM * lsz[2]}, lsz, run_opts)
    if m > m0 then
      events[#events + 1] = prog.matmul_rows(m - m0, n, k, rootA, offA + m0 * k, k,
                                             rootB, offB, n, rootC, offC + m0 * n, n)
        :run({round_up(n, 16), ceil_div(m - m0, 4) * 16}, {16, 16},
             {wait = not inorder and {events[#events]} or nil, queue = q})
    end
    if n > n0 then
      events[#events + 1] = prog.matmul_cols(m0, n - n0, k, rootA, offA, k,
                                             rootB, offB + n0, n, rootC, offC + n0, n)
        :run({ceil_div(n - n0, 4) * 64, round_up(m0, 4)}, {64, 4},
             {wait = not inorder and {events[#events]} or nil, queue = q})
    end
    return C, events[#events], events
  end
  local grid = variant == "reg" and {ceil_div(n, d.BN) * lsz[1], ceil_div(m, d.BM) * lsz[2]}
  if variant == "reg" and pl.slices == 1 then
    ev = prog.matmul_reg(m, n, k, k, rootA, offA, rootB, offB, rootC, offC)
      :run(grid, lsz, run_opts)
    return C, ev, {ev}
  end
  -- reg with a split K and packed use the device's scratch buffers: wait
  -- for their last user when it ran on another queue (or out of order)
  local per_dev = scratch[dev]
  local last = per_dev and per_dev.last
  if last and (not inorder or per_dev.last_queue ~= (q or dev)) then
    waits[#waits + 1] = last
  end
  local events
  if variant == "reg" then -- split K: the slices into scratch, then their sum
    local slices, ks = pl.slices, pl.slice_k
    local P = scratch_buffer(dev, t, 3, slices * m * n)
    local e1 = prog.matmul_reg(m, n, k, ks, rootA, offA, rootB, offB, P, 0)
      :run({grid[1], grid[2], slices}, {lsz[1], lsz[2], 1}, run_opts)
    ev = prog.matmul_sum(slices, m * n, P, rootC, offC)
      :run({round_up(m * n, 256)}, {256}, {wait = not inorder and {e1} or nil, queue = q})
    events = {e1, ev}
  else -- packed: A and B into panels, then the product
    local pm, pn = ceil_div(m, d.TM), ceil_div(n, d.TN)
    local Ap = scratch_buffer(dev, t, 1, pm * d.TM * k)
    local Bp = scratch_buffer(dev, t, 2, pn * d.TN * k)
    local ea = prog.pack_a(m, k, rootA, offA, Ap):run({round_up(k, 16), pm}, {16, 1}, run_opts)
    local eb = prog.pack_b(k, n, rootB, offB, Bp):run({pn, round_up(k, 16)}, {1, 16}, run_opts)
    ev = prog.matmul_packed(m, n, k, Ap, Bp, rootC, offC)
      :run({round_up(pn, lsz[1]), round_up(pm, lsz[2])}, lsz,
           {wait = not inorder and {ea, eb} or nil, queue = q})
    events = {ea, eb, ev}
  end
  per_dev = scratch[dev]
  per_dev.last, per_dev.last_queue = ev, q or dev
  return C, ev, events
end

M.params = PARAMS
M.variants = {"naive", "tiled", "reg", "packed"}

-- M.plan(dev, m, n, k [, type [, variant [, params]]]): how matmul would run
-- that product on dev (operands at offset 0): {variant =, set =, params =,
-- defines =, local_size =, options =, slices =, slice_k =, edges =}, edges
-- {m0 =, n0 =} where a tile-aligned core runs apart from thin edges. For
-- scripts that report or tune.
function M.plan(dev, m, n, k, t, variant, override)
  local fn = "matmul.plan"
  check_device(fn, dev)
  m, n, k = check_size(fn, "argument #2", m), check_size(fn, "argument #3", n),
            check_size(fn, "argument #4", k)
  t = check_type(fn, 5, t)
  if variant ~= nil and not VARIANTS[variant] then
    fail_in(fn, "argument #6: expected %s, got %s", VARIANT_WORDS, show(variant))
  end
  if override ~= nil then override = check_param_table(fn, "argument #7", override) end
  return plan(dev, m, n, k, t, 0, 0, 0, variant, override)
end

-- M.param_set(dev, name [, type]): the parameters of set name ("naive",
-- "tiled", "reg", "small", "packed") for dev, after the device entries and
-- the double overrides (a new table).
function M.param_set(dev, name, t)
  local fn = "matmul.param_set"
  check_device(fn, dev)
  if not (VARIANTS[name] or name == "small") then
    fail_in(fn, "argument #2: expected \"naive\", \"tiled\", \"reg\", \"small\" or " ..
            "\"packed\", got %s", show(name))
  end
  return variant_params(device_params(dev), name, check_type(fn, 3, t))
end

return setmetatable(M, {__call = function(_, ...) return matmul(...) end})
